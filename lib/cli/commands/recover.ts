/**
 * `ctxsnap recover`: finish or abort an interrupted restore, switch, undo or redo.
 * @module
 */
import { UsageError } from "../../errors.ts";
import { type Command, flag, identity, openStore, short, str } from "../command.ts";
import { esc } from "../output.ts";
import { MOVE_FLAGS, SELECTION_FLAGS } from "../flags.ts";

/** The `recover` command. */
export const recover: Command = {
  name: "recover",
  usage: "recover [--abort | --discard] [--force] [--session S]",
  examples: [
    "ctxsnap recover            # finish what was interrupted",
    "ctxsnap recover --abort    # return to the content before it",
    "ctxsnap recover --discard  # close an operation whose plan is refused, changing no file",
  ],
  options: {
    abort: { type: "boolean", help: "return the workspace to its content before the operation" },
    discard: {
      type: "boolean",
      help: "close the operation as aborted without reading its plan or changing any file",
    },
    force: { ...MOVE_FLAGS.force, help: "overwrite paths changed since the interruption" },
    session: { ...SELECTION_FLAGS.session, help: "session (default: current, else any)" },
  },
  args: [],
  async run(ctx, parsed) {
    const signer = await identity();
    const store = openStore(ctx);
    try {
      const { recover: recoverOperation } = await import("../../workspace/move/recover.ts");
      if (flag(parsed, "abort") && flag(parsed, "discard")) {
        throw new UsageError("--abort and --discard cannot be combined", {
          hint: "--discard closes the operation without touching the workspace",
        });
      }
      const result = await recoverOperation(store, signer, {
        abort: flag(parsed, "abort"),
        discard: flag(parsed, "discard"),
        force: flag(parsed, "force"),
        ...(str(parsed, "session") !== undefined ? { sessionName: str(parsed, "session")! } : {}),
      });
      ctx.out.result(result, () => {
        if (result.operation === null) return "Nothing to recover.";
        if (result.discarded) {
          return `Discarded ${
            esc(result.operation)
          }: it is closed as aborted; no file was changed.`;
        }
        return result.status === "aborted"
          ? `Aborted ${esc(result.kind ?? "")} ${
            esc(result.operation)
          }: the workspace is back to its content before it.`
          : `Finished ${esc(result.kind ?? "")} ${esc(result.operation)}${
            result.snapshot ? `; recorded as ${esc(short(result.snapshot))}` : ""
          }.`;
      });
      return 0;
    } finally {
      store.close();
    }
  },
};
