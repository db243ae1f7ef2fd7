/**
 * `ctxsnap init`: create a store for a workspace and this machine's identity,
 * or adopt an existing store this user did not create here.
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { NoStoreError, UsageError } from "../../errors.ts";
import { configDir } from "../../keys/identity.ts";
import { defaultStoreFor } from "../../repository/locate.ts";
import { initWorkspace } from "../../app/workspace.ts";
import { type Command, flag, identity, list, str, trustPolicy } from "../command.ts";
import { esc } from "../output.ts";
import { MOVE_FLAGS } from "../flags.ts";
import { adoptionJson } from "../json.ts";

/** The `init` command. */
export const init: Command = {
  name: "init",
  usage: "init [--workspace DIR] [--nested] [--adopt [--dry-run] [--keep NAME]...]",
  examples: [
    "ctxsnap init                               # store in ./.ctxsnap for the workspace here",
    "ctxsnap --store ~/stores/proj init --workspace .   # keep the store outside the workspace",
    "ctxsnap init --adopt --dry-run             # check and describe a store found here (cloned, copied)",
    "ctxsnap init --adopt                       # then make it yours",
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
    adopt: {
      type: "boolean",
      help:
        "use an existing store you did not create here (cloned, copied, moved), after checking it",
    },
    "dry-run": {
      ...MOVE_FLAGS["dry-run"],
      help: "with --adopt: check and describe the store, change nothing",
    },
    keep: {
      type: "string",
      multiple: true,
      arg: "NAME",
      help:
        "with --adopt: keep the store's allow-secrets, daemon.conf, published/ files, retention or transcripts (refused otherwise)",
    },
  },
  args: [],
  async run(ctx, parsed) {
    const workspace = path.resolve(ctx.cwd, str(parsed, "workspace") ?? ".");
    if (!fs.existsSync(workspace) || !fs.statSync(workspace).isDirectory()) {
      throw new UsageError(`Workspace ${JSON.stringify(workspace)} is not a directory`);
    }
    const adopt = flag(parsed, "adopt");
    const dryRun = flag(parsed, "dry-run");
    if (dryRun && !adopt) throw new UsageError("--dry-run goes with --adopt");
    if (list(parsed, "keep").length > 0 && !adopt) throw new UsageError("--keep goes with --adopt");
    const dir = ctx.store === undefined && str(parsed, "workspace") !== undefined
      ? path.join(workspace, ".ctxsnap")
      : defaultStoreFor(ctx.cwd, ctx.store);
    const registry = configDir();
    const existed = fs.existsSync(path.join(dir, "index.db"));
    if (adopt) {
      if (!existed) {
        throw new NoStoreError(`No store at ${JSON.stringify(dir)} to adopt`, {
          hint: "run `ctxsnap init` to create one",
        });
      }
      const me = await identity();
      const { adoptStore } = await import("../../history/adopt.ts");
      // A watch process of this user serving the store keeps its run/ files.
      const { askWatch } = await import("../../integrations/watch/client.ts");
      const runInUse = await askWatch(path.resolve(dir), "status", null, { timeoutMs: 10_000 })
        .then((answer) => answer !== null, () => false);
      const adoption = await adoptStore(dir, workspace, registry, await trustPolicy([]), {
        dryRun,
        keep: list(parsed, "keep"),
        runInUse,
      });
      const result = {
        store: adoption.store,
        workspace: adoption.workspace,
        created: false,
        adopted: adoption.adopted,
        already_registered: adoption.alreadyRegistered,
        dry_run: dryRun,
        key_id: me.keyId,
        config_dir: registry,
        snapshots: adoption.snapshots,
        ...adoptionJson(adoption),
      };
      ctx.out.result(result, () => {
        const lines = [
          result.already_registered
            ? `The store in ${result.store} is already yours (created or adopted here); every check passed`
            : `${
              dryRun ? "Would adopt" : "Adopted"
            } the store in ${result.store} (every check passed)`,
          `workspace   ${result.workspace}`,
          `snapshots   ${result.snapshots}, all intact and validly signed`,
        ];
        if (adoption.untrustedSigners.length > 0) {
          lines.push(`untrusted   signers ${adoption.untrustedSigners.join(", ")}`);
        }
        if (adoption.unresolvedOperations.length > 0) {
          lines.push(
            `unresolved  ${adoption.unresolvedOperations.join(", ")} (run \`ctxsnap recover\`)`,
          );
        }
        if (adoption.sessionsWithLiveState.length > 0) {
          lines.push(
            `live state  session(s) ${
              adoption.sessionsWithLiveState.join(", ")
            }: the next create signs it as yours (ctxsnap session show)`,
          );
        }
        for (const file of adoption.extraFiles) {
          lines.push(
            `extra file  ${esc(file.path)}: ${
              file.action === "refused"
                ? `refused unless kept (--keep ${esc(file.path.split("/")[0]!)})`
                : file.action
            }`,
          );
        }
        if (adoption.allowSecrets !== null) {
          lines.push(
            `allow list  re-includes ${
              adoption.allowSecrets.length === 0
                ? "nothing"
                : adoption.allowSecrets.map(esc).join(", ")
            } in every capture`,
          );
        }
        if (dryRun && !result.already_registered) {
          lines.push("nothing changed; run `ctxsnap init --adopt` to use it");
        } else if (dryRun) {
          lines.push("nothing changed; nothing to adopt");
        }
        return lines.join("\n");
      });
      return 0;
    }
    const { store, gitExclude } = initWorkspace(dir, workspace, {
      registry,
      nested: flag(parsed, "nested"),
    });
    let me;
    try {
      me = await identity();
    } catch (error) {
      store.close();
      throw error;
    }
    const result = {
      store: store.dir,
      workspace: store.workspaceRoot,
      created: !existed,
      adopted: false,
      dry_run: false,
      key_id: me.keyId,
      config_dir: registry,
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
