/**
 * `ctxsnap init`: create a store for a workspace and this machine's identity.
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConflictError, quote, UsageError } from "../../encoding/errors.ts";
import { configDir } from "../../crypto/identity.ts";
import { DEFAULT_STORE_NAME, defaultStoreFor } from "../../store/locate.ts";
import { INDEX_FILE, Store } from "../../store/store.ts";
import { excludeStoreFromGit } from "../../snapshot/git_exclude.ts";
import { type Command, flag, identity, str } from "../command.ts";
import { esc } from "../output.ts";

/** The nearest store in a directory above `workspace`, or null. */
function enclosingStore(workspace: string): string | null {
  let dir = path.dirname(workspace);
  for (;;) {
    const candidate = path.join(dir, DEFAULT_STORE_NAME);
    if (fs.existsSync(path.join(candidate, INDEX_FILE))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** The `init` command. */
export const init: Command = {
  name: "init",
  summary: "create a store for this workspace",
  usage: "init [--workspace DIR] [--nested]",
  examples: [
    "ctxsnap init                               # store in ./.ctxsnap for the workspace here",
    "ctxsnap --store ~/stores/proj init --workspace .   # keep the store outside the workspace",
    "ctxsnap init --nested                      # a store of its own inside another store's workspace",
  ],
  options: {
    workspace: {
      type: "string",
      arg: "DIR",
      help: "workspace root (default: the current directory)",
    },
    nested: {
      type: "boolean",
      help: "create the store even inside a directory that another store captures",
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
    const outer = existed ? null : enclosingStore(workspace);
    if (outer !== null && !flag(parsed, "nested")) {
      throw new ConflictError(
        `${quote(workspace)} is inside the workspace of the store at ${quote(outer)}`,
        {
          hint: "run ctxsnap from there (it finds that store by walking up), or pass --nested " +
            "to give this directory a store of its own",
        },
      );
    }
    const store = Store.init(dir, workspace);
    const me = await identity();
    const gitExclude = excludeStoreFromGit(store.workspaceRoot, store.dir);
    const result = {
      store: store.dir,
      workspace: store.workspaceRoot,
      created: !existed,
      key_id: me.keyId,
      config_dir: configDir(),
      git_exclude: gitExclude,
    };
    store.close();
    ctx.out.result(result, () =>
      [
        `${existed ? "Reinitialized existing" : "Initialized"} ctxsnap store in ${
          esc(result.store)
        }`,
        `workspace  ${esc(result.workspace)}`,
        `signing key ${result.key_id} (${esc(path.join(result.config_dir, "identity.pem"))})`,
        ...(gitExclude === null ? [] : [`added the store to ${esc(gitExclude)}`]),
      ].join("\n"));
    return 0;
  },
};
