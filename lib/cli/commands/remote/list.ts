/**
 * `ctxsnap remote list`: the remotes of this store.
 * @module
 */
import { remoteJson } from "../../json.ts";
import { type Command, openStore } from "../../command.ts";
import { config } from "../../_remote.ts";

/** The `remote list` command. */
export const remoteList: Command = {
  name: "remote list",
  usage: "remote [list]",
  examples: ["ctxsnap remote list --json"],
  options: {},
  args: [],
  async run(ctx) {
    const { listRemotes } = await config();
    const store = openStore(ctx, { readOnly: true });
    try {
      const remotes = listRemotes(store);
      ctx.out.result(
        { remotes: remotes.map(remoteJson) },
        () =>
          remotes.length === 0
            ? "No remotes (add one with `ctxsnap remote add NAME URL`)"
            : remotes.map((r) =>
              `${r.name}\t${r.url}${r.endpoint ? `  (endpoint ${r.endpoint})` : ""}`
            ).join("\n"),
      );
      return 0;
    } finally {
      store.close();
    }
  },
};
