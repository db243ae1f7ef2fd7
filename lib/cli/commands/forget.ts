/**
 * `ctxsnap forget`: remove snapshots from the store (recorded in the log).
 * @module
 */
import { UsageError } from "../../errors.ts";
import { forgetImpact, forgetSnapshots, planForget } from "../../history/forget.ts";
import { selection } from "../../history/timeline.ts";
import { planRetention, readRetention } from "../../history/retention.ts";
import { type Command, flag, intOption, openStore, short, str, target } from "../command.ts";
import { esc } from "../output.ts";
import { MOVE_FLAGS, SELECTION_FLAGS } from "../flags.ts";

/** The `forget` command. */
export const forget: Command = {
  name: "forget",
  usage:
    "forget ID... [--dry-run]\nforget --branch B [--dry-run]\nforget --keep-last N [--dry-run]\nforget --policy [--dry-run]",
  examples: [
    "ctxsnap forget --keep-last 20 --dry-run",
    "ctxsnap forget --branch experiment && ctxsnap gc",
    "ctxsnap forget --policy --dry-run",
  ],
  options: {
    branch: { ...SELECTION_FLAGS.branch, help: "forget every snapshot of branch B and the branch" },
    "keep-last": {
      type: "string",
      arg: "N",
      help: "keep the newest N snapshots of the current branch",
    },
    policy: {
      type: "boolean",
      help: "apply the store's retention policy (<store>/retention) to every branch",
    },
    "dry-run": { ...MOVE_FLAGS["dry-run"], help: "list what would be forgotten" },
    session: { ...SELECTION_FLAGS.session, help: "session (default: current)" },
  },
  args: [{
    name: "ID",
    help: "a snapshot to forget (or select with --branch, --keep-last or --policy)",
    optional: true,
    repeat: true,
  }],
  async run(ctx, parsed) {
    const branch = str(parsed, "branch");
    const keepLast = intOption(parsed, "keep-last", 0, 1_000_000_000);
    const policy = flag(parsed, "policy");
    const modes = [
      parsed.positionals.length > 0,
      branch !== undefined,
      keepLast !== undefined,
      policy,
    ].filter(Boolean).length;
    if (modes !== 1) {
      throw new UsageError(
        "forget takes IDs, or --branch B, or --keep-last N, or --policy (exactly one)",
      );
    }
    const store = openStore(ctx);
    try {
      if (policy && str(parsed, "session") !== undefined) {
        throw new UsageError("forget --policy applies to every session; drop --session");
      }
      const plan = policy ? planRetention(store, readRetention(store.dir)) : null;
      const session = selection(store, str(parsed, "session")).session;
      // An id may name a snapshot kept as itself (lean-ctx): forgotten like any.
      const named: string[] = [];
      for (const p of parsed.positionals) named.push((await target(ctx, store, p, { session })).id);
      const ids = plan !== null
        ? plan.drop
        : parsed.positionals.length > 0
        ? named
        : planForget(store, {
          session,
          ...(branch !== undefined ? { branch } : {}),
          ...(keepLast !== undefined ? { keepLast } : {}),
        });
      const deleted = branch !== undefined ? { session, branch } : null;
      const cutText = (cut: { id: string; kind: string }[]) =>
        `${cut.length} operation(s) can no longer be undone: ${
          cut.slice(0, 10).map((u) => `${u.id} (${u.kind})`).join(", ")
        }${cut.length > 10 ? ", …" : ""}`;
      if (flag(parsed, "dry-run")) {
        const unundoable = forgetImpact(store, ids, deleted);
        ctx.out.result(
          {
            dry_run: true,
            forget: ids,
            branch: branch ?? null,
            unundoable,
            ...(plan !== null ? { kept: plan.kept } : {}),
          },
          () =>
            ids.length === 0 ? "Nothing to forget." : [
              ...ids.map((id) => `would forget ${short(id)}`),
              `${ids.length} snapshot(s)` + (plan === null
                ? ""
                : `; keeping ${
                  Object.entries(plan.kept).filter(([, n]) => n > 0).map(([why, n]) =>
                    `${n} (${why})`
                  ).join(", ")
                }`),
              ...(unundoable.length > 0 ? [`and then ${cutText(unundoable)}`] : []),
            ].join("\n"),
        );
        return 0;
      }
      if (ids.length === 0 && plan !== null) {
        ctx.out.result(
          { operation: null, forgotten: [], branches: [], unundoable: [] },
          () => "Nothing to forget: the retention policy keeps every snapshot.",
        );
        return 0;
      }
      const result = forgetSnapshots(store, ids, deleted !== null ? { deleteBranch: deleted } : {});
      if (result.unundoable.length > 0) ctx.out.warn(cutText(result.unundoable));
      ctx.out.result(
        result,
        () =>
          `Forgot ${result.forgotten.length} snapshot(s)${
            result.branches.length ? ` and branch ${esc(result.branches.join(", "))}` : ""
          } (${esc(result.operation)}). Run \`ctxsnap gc\` to free space.`,
      );
      return 0;
    } finally {
      store.close();
    }
  },
};
