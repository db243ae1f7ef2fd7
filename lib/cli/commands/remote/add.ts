/**
 * `ctxsnap remote add NAME URL`: names an S3 prefix or a shared directory
 * snapshots are pushed to and pulled from.
 * @module
 */
import { remoteJson } from "../../json.ts";
import { UsageError } from "../../../errors.ts";
import { type Command, openStore, str } from "../../command.ts";
import { config, pathStyle } from "../../_remote.ts";
import { S3_FLAGS } from "../../flags.ts";

/** The `remote add` command. */
export const remoteAdd: Command = {
  name: "remote add",
  usage: "remote add NAME URL [--endpoint URL] [--region R] [--path-style|--virtual-hosted]",
  examples: [
    "ctxsnap remote add origin s3://team-bucket/ctx --endpoint https://s3.example.net",
    "ctxsnap remote add share file:///mnt/nfs/ctx",
  ],
  options: S3_FLAGS,
  args: [{ name: "NAME", help: "the remote's name" }, {
    name: "URL",
    help: "s3://BUCKET[/PREFIX] or file:///DIR",
  }],
  async run(ctx, parsed) {
    const [name, url] = parsed.positionals;
    const { addRemote, checkRemoteName } = await config();
    const store = openStore(ctx);
    try {
      if (name === undefined || url === undefined) {
        throw new UsageError("remote add needs NAME and URL", {
          hint: "e.g. ctxsnap remote add origin s3://bucket/prefix",
        });
      }
      const added = addRemote(store, {
        name: checkRemoteName(name),
        url,
        endpoint: str(parsed, "endpoint") ?? null,
        region: str(parsed, "region") ?? null,
        pathStyle: pathStyle(parsed),
      });
      ctx.out.result(remoteJson(added), () => `Added remote ${added.name} → ${added.url}`);
      return 0;
    } finally {
      store.close();
    }
  },
};
