/**
 * `ctxsnap pull`: downloads, verifies and quarantines what a remote has
 * that this store lacks.
 * @module
 */
import { pullJson } from "../json.ts";
import { UsageError } from "../../errors.ts";
import { type Command, flag, identity, list, openStore, trustPolicy } from "../command.ts";
import { config, mib, pullLines, pullStatus, remoteAndRest } from "../_remote.ts";
import { keysFile, TRUST_FLAGS, UNTRUSTED_FLAGS } from "../flags.ts";

/** The `pull` command. */
export const pull: Command = {
  name: "pull",
  usage: "pull [NAME] [ID] [--trust KEY]... [--trusted-keys FILE] [--allow-untrusted]",
  examples: [
    "ctxsnap pull                       # every ref of origin, onto origin/<key id>/<branch>",
    "ctxsnap pull team --trust bob.pub.pem",
    "ctxsnap pull origin 3f2a9c81bd04…  # one snapshot by full id, onto imported/<key id>",
    "ctxsnap restore origin/5c1de0a977b3f812/main --dry-run",
  ],
  options: { ...TRUST_FLAGS, ...UNTRUSTED_FLAGS },
  args: [{ name: "NAME", help: "the remote (default: origin, or the only one)", optional: true }, {
    name: "ID",
    help: "one snapshot by full 64-hex id (default: every ref)",
    optional: true,
  }],
  async run(ctx, parsed) {
    await identity(); // pulls are recorded by a store that has an owner key
    const store = openStore(ctx);
    try {
      const { remote: chosen, rest } = await remoteAndRest(store, parsed.positionals);
      if (rest !== undefined && !/^[0-9a-f]{64}$/.test(rest)) {
        throw new UsageError(`pull takes a full 64-hex snapshot id, not ${JSON.stringify(rest)}`, {
          hint: "the remote cannot resolve prefixes; copy the id from `ctxsnap push --json`",
        });
      }
      const { openBackend } = await config();
      const { pull: pullRemote } = await import("../../remote/pull.ts");
      const startedAt = new Date().toISOString();
      const result = await pullRemote(
        store,
        openBackend(chosen),
        await trustPolicy(list(parsed, "trust"), keysFile(parsed)),
        chosen.name,
        {
          ...(flag(parsed, "allow-untrusted") ? { allowUntrusted: true } : {}),
          ...(rest !== undefined ? { snapshot: rest } : {}),
          onProgress: (phase, done, total) => ctx.out.progress(phase, done, total),
        },
      );
      ctx.out.result(pullJson(chosen.name, result, startedAt), () =>
        [
          `Pulled from ${chosen.name} (${result.location}): ${result.snapshots.fetched} snapshot(s), ` +
          `${result.objects.fetched} object(s), ${mib(result.bytesReceived)} received`,
          ...pullLines(result),
        ].join("\n"));
      return pullStatus(ctx, result);
    } finally {
      store.close();
    }
  },
};
