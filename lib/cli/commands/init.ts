/**
 * `ctxsnap init`: create a store for a workspace and this machine's identity.
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { UsageError } from "../../encoding/errors.ts";
import { configDir } from "../../crypto/identity.ts";
import { defaultStoreFor } from "../../store/locate.ts";
import { Store } from "../../store/store.ts";
import { type Command, identity, str } from "../command.ts";
import { esc } from "../output.ts";

/** The `init` command. */
export const init: Command = {
  name: "init",
  summary: "create a store for this workspace",
  usage: "init [--workspace DIR]",
  examples: [
    "ctxsnap init                               # store in ./.ctxsnap for the workspace here",
    "ctxsnap --store ~/stores/proj init --workspace .   # keep the store outside the workspace",
  ],
  options: {
    workspace: {
      type: "string",
      arg: "DIR",
      help: "workspace root (default: the current directory)",
    },
  },
  positionals: 0,
  async run(ctx, parsed) {
    const workspace = path.resolve(ctx.cwd, str(parsed, "workspace") ?? ".");
    if (!fs.existsSync(workspace) || !fs.statSync(workspace).isDirectory()) {
      throw new UsageError(`Workspace ${JSON.stringify(workspace)} is not a directory`);
    }
    const dir = ctx.store === undefined && str(parsed, "workspace") !== undefined
      ? path.join(workspace, ".ctxsnap")
      : defaultStoreFor(ctx.cwd, ctx.store);
    const existed = fs.existsSync(path.join(dir, "index.db"));
    const store = Store.init(dir, workspace);
    const me = await identity();
    const result = {
      store: store.dir,
      workspace: store.workspaceRoot,
      created: !existed,
      key_id: me.keyId,
      config_dir: configDir(),
    };
    store.close();
    ctx.out.result(result, () =>
      [
        `${existed ? "Reinitialized existing" : "Initialized"} ctxsnap store in ${
          esc(result.store)
        }`,
        `workspace  ${esc(result.workspace)}`,
        `signing key ${result.key_id} (${esc(path.join(result.config_dir, "identity.pem"))})`,
      ].join("\n"));
    return 0;
  },
};
