/**
 * `ctxsnap recover`: finish or abort an interrupted restore, switch, undo or redo.
 * @module
 */
import { type Command, flag, identity, openStore, short, str } from "../command.ts";
import { esc } from "../output.ts";

/** The `recover` command. */
export const recover: Command = {
  name: "recover",
  summary: "finish an interrupted restore, switch, undo or redo, or --abort it",
  usage: "recover [--abort] [--force] [--session S]",
  examples: [
    "ctxsnap recover            # finish what was interrupted",
    "ctxsnap recover --abort    # return to the content before it",
  ],
  options: {
    abort: { type: "boolean", help: "return the workspace to its content before the operation" },
    force: { type: "boolean", help: "overwrite paths changed since the interruption" },
    session: { type: "string", arg: "S", help: "session (default: current, else any)" },
  },
  positionals: 0,
  async run(ctx, parsed) {
    const signer = await identity();
    const store = openStore(ctx);
    try {
      const { recover: recoverOperation } = await import("../../restore/recover.ts");
      const result = await recoverOperation(store, signer, {
        abort: flag(parsed, "abort"),
        force: flag(parsed, "force"),
        ...(str(parsed, "session") !== undefined ? { sessionName: str(parsed, "session")! } : {}),
      });
      ctx.out.result(result, () => {
        if (result.operation === null) return "Nothing to recover.";
        return result.status === "aborted"
          ? `Aborted ${result.kind} ${
            esc(result.operation)
          }: the workspace is back to its content before it.`
          : `Finished ${result.kind} ${esc(result.operation)}${
            result.snapshot ? `; recorded as ${esc(short(result.snapshot))}` : ""
          }.`;
      });
      return 0;
    } finally {
      store.close();
    }
  },
};
