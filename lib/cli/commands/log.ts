/**
 * `ctxsnap log`: the operations log.
 * @module
 */
import { listOperations } from "../../store/operations.ts";
import { type Command, flag, intOption, openStore, short } from "../command.ts";
import { selection } from "../../snapshot/timeline.ts";
import { esc } from "../output.ts";

/** The `log` command. */
export const log: Command = {
  name: "log",
  summary: "show the operations log: restores, forks, forgets, gc, imports",
  usage: "log [--all] [--limit N]",
  examples: ["ctxsnap log", "ctxsnap log --all --json"],
  options: {
    all: {
      type: "boolean",
      help: "every session (default: current session and store-wide operations)",
    },
    limit: { type: "string", arg: "N", help: "at most N entries" },
  },
  positionals: 0,
  run(ctx, parsed) {
    const store = openStore(ctx, { readOnly: true });
    try {
      const limit = intOption(parsed, "limit", 1, 1_000_000);
      const ops = listOperations(store, {
        ...(flag(parsed, "all") ? {} : { session: selection(store).session }),
        ...(limit === undefined ? {} : { limit }),
      });
      ctx.out.result(
        { operations: ops },
        () =>
          ops.length === 0 ? "No operations yet." : ops.map((op) =>
            [
              new Date(op.created_at).toISOString().replace("T", " ").slice(0, 19),
              esc(op.id),
              esc(op.kind).padEnd(8),
              esc(op.status).padEnd(8),
              op.session ? `${esc(op.session)}/${esc(op.branch ?? "-")}` : "store",
              op.target ? `→ ${esc(short(op.target))}` : "",
              op.error ? `error: ${esc(op.error)}` : "",
            ].filter((s) => s !== "").join("  ")
          ).join("\n"),
      );
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
