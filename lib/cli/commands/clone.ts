/**
 * `ctxsnap clone URL DIR`: creates a workspace and store from a remote.
 * @module
 */
import { pullJson, refJson, remoteJson } from "../json.ts";
import { UsageError } from "../../errors.ts";
import { configDir } from "../../keys/identity.ts";
import {
  type Command,
  flag,
  identity,
  list,
  short,
  str,
  trustPolicy,
  userPath,
} from "../command.ts";
import { pathStyle, pullLines, pullStatus } from "../_remote.ts";
import { keysFile, S3_FLAGS, SELECTION_FLAGS, TRUST_FLAGS, UNTRUSTED_FLAGS } from "../flags.ts";

/** The `clone` command. */
export const clone: Command = {
  name: "clone",
  usage:
    "clone URL DIR [--endpoint URL] [--region R] [--path-style|--virtual-hosted] [--branch B] [--signer KEY_ID] [--trust KEY]... [--trusted-keys FILE] [--allow-untrusted]",
  examples: [
    "ctxsnap clone s3://team-bucket/ctx review --endpoint https://s3.example.net --trust alice.pub.pem",
    "ctxsnap clone file:///mnt/nfs/ctx work --branch exp",
  ],
  options: {
    ...S3_FLAGS,
    ...TRUST_FLAGS,
    ...UNTRUSTED_FLAGS,
    branch: {
      ...SELECTION_FLAGS.branch,
      help: "restore the newest ref of branch B (default: main, else any)",
    },
    signer: { type: "string", arg: "KEY_ID", help: "restore only a ref of this signer" },
  },
  args: [{ name: "URL", help: "s3://BUCKET[/PREFIX] or file:///DIR" }, {
    name: "DIR",
    help: "the new workspace (must not exist, or be empty)",
  }],
  async run(ctx, parsed) {
    const [url, dir] = parsed.positionals;
    if (url === undefined || dir === undefined) throw new UsageError("clone needs URL and DIR");
    if (ctx.store !== undefined) {
      throw new UsageError("clone makes its store in DIR/.ctxsnap; --store does not apply");
    }
    const signer = await identity();
    const { clone: cloneRemote } = await import("../../remote/clone.ts");
    const startedAt = new Date().toISOString();
    const branch = str(parsed, "branch");
    const signerId = str(parsed, "signer");
    const result = await cloneRemote(
      url,
      userPath(dir),
      signer,
      await trustPolicy(list(parsed, "trust"), keysFile(parsed)),
      {
        endpoint: str(parsed, "endpoint") ?? null,
        region: str(parsed, "region") ?? null,
        pathStyle: pathStyle(parsed),
        ...(flag(parsed, "allow-untrusted") ? { allowUntrusted: true } : {}),
        ...(branch !== undefined ? { branch } : {}),
        ...(signerId !== undefined ? { signer: signerId.toLowerCase() } : {}),
        onProgress: (phase, done, total) => ctx.out.progress(phase, done, total),
        registry: configDir(),
      },
    );
    ctx.out.result(
      {
        workspace: result.workspace,
        store: result.store,
        remote: remoteJson(result.remote),
        pull: pullJson(result.remote.name, result.pull, startedAt),
        restored: result.restored === null ? null : refJson(result.restored),
        snapshot: result.restore?.snapshot ?? null,
        files: result.restore?.plan?.writes.length ?? 0,
      },
      () =>
        [
          `Cloned ${result.remote.url} into ${result.workspace}`,
          ...pullLines(result.pull),
          result.restored === null
            ? "  nothing restored: no ref to check out (the workspace is empty)"
            : `  restored ${
              short(result.restored.head)
            } (${result.restored.keyId}'s ${result.restored.session}/${result.restored.branch}): ${
              result.restore?.plan?.writes.length ?? 0
            } file(s)`,
        ].join("\n"),
    );
    // Refs of unpinned signers landed (--allow-untrusted) but are never checked out.
    const quarantined = result.pull.refs.filter((r) =>
      !r.trusted && r.head !== null && (r.status === "updated" || r.status === "unchanged")
    );
    if (result.restored === null && quarantined.length > 0) {
      ctx.out.warn(
        `did not check out ${quarantined.length} ref(s) of unpinned signers (${
          [...new Set(quarantined.map((r) => r.keyId))].join(", ")
        }); they are quarantined on their tracking branches: review one with \`ctxsnap show ID\`, ` +
          "then `ctxsnap restore ID`, or pin its signer with `ctxsnap key trust`",
      );
      return Math.max(pullStatus(ctx, result.pull), 3);
    }
    if (result.restored === null) ctx.out.warn("the remote had no ref to restore");
    return pullStatus(ctx, result.pull);
  },
};
