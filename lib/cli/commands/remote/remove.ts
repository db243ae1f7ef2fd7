/**
 * `ctxsnap remote remove NAME`: forgets a remote and what this store knew
 * of its refs; nothing on the remote is touched, tracking branches stay.
 * @module
 */
import { remoteJson } from "../../json.ts";
import { UsageError } from "../../../errors.ts";
import { type Command, openStore } from "../../command.ts";
import { config } from "../../_remote.ts";

/** The `remote remove` command. */
export const remoteRemove: Command = {
  name: "remote remove",
  usage: "remote remove NAME",
  examples: ["ctxsnap remote remove share"],
  options: {},
  args: [{ name: "NAME", help: "the remote to forget" }],
  async run(ctx, parsed) {
    const name = parsed.positionals[0];
    const { removeRemote } = await config();
    const store = openStore(ctx);
    try {
      if (name === undefined) throw new UsageError("remote remove needs NAME");
      const removed = removeRemote(store, name);
      ctx.out.result(
        { ...remoteJson(removed), removed: true },
        () => `Removed remote ${removed.name} (nothing on the remote was touched)`,
      );
      return 0;
    } finally {
      store.close();
    }
  },
};
