/**
 * `ctxsnap push`: uploads snapshots and a signed ref to a remote.
 * @module
 */
import { UsageError } from "../../errors.ts";
import { getBranch, resolveSnapshotId, selection } from "../../history/timeline.ts";
import { type Command, flag, identity, openStore, short, str } from "../command.ts";
import { config, mib, remoteAndRest } from "../_remote.ts";
import { SELECTION_FLAGS } from "../flags.ts";

/** The `push` command. */
export const push: Command = {
  name: "push",
  usage: "push [NAME] [BRANCH|ID] [--all] [--session S]",
  examples: [
    "ctxsnap push                       # the current branch to origin",
    "ctxsnap push origin exp            # branch exp",
    "ctxsnap push --all --json          # every branch you signed",
    "ctxsnap push origin 3f2a9c         # one snapshot and its history, no ref",
  ],
  options: {
    all: { ...SELECTION_FLAGS.all, help: "push every branch whose head this machine signed" },
    session: { ...SELECTION_FLAGS.session, help: "session of BRANCH (default: current)" },
  },
  args: [{ name: "NAME", help: "the remote (default: origin, or the only one)", optional: true }, {
    name: "BRANCH|ID",
    help: "a branch of the session, or one snapshot and its history (default: the current branch)",
    optional: true,
  }],
  async run(ctx, parsed) {
    const signer = await identity();
    const store = openStore(ctx);
    try {
      const { remote: chosen, rest } = await remoteAndRest(store, parsed.positionals);
      const { openBackend } = await config();
      const { push: pushRemote } = await import("../../remote/push.ts");
      if (rest !== undefined && flag(parsed, "all")) {
        throw new UsageError("use BRANCH, ID or --all, not several");
      }
      const session = str(parsed, "session");
      let target: Parameters<typeof pushRemote>[4];
      if (flag(parsed, "all")) target = { kind: "all" };
      else if (rest === undefined) {
        target = session === undefined
          ? { kind: "current" }
          : { kind: "branch", ...selection(store, session) };
      } else {
        const sel = selection(store, session, undefined);
        if (getBranch(store, sel.session, rest) !== null) {
          target = { kind: "branch", session: sel.session, branch: rest };
        } else if (/^[0-9a-fA-F]{4,64}$/.test(rest)) {
          target = { kind: "snapshot", id: resolveSnapshotId(store, rest) };
        } else {
          target = { kind: "branch", ...selection(store, session, rest) };
        }
      }
      const startedAt = new Date().toISOString();
      const result = await pushRemote(store, openBackend(chosen), signer, chosen.name, target, {
        onProgress: (phase, done, total) => ctx.out.progress(phase, done, total),
      });
      const finishedAt = new Date().toISOString();
      ctx.out.result(
        {
          remote: chosen.name,
          location: result.location,
          refs: result.refs,
          skipped: result.skipped,
          snapshot: target.kind === "snapshot" ? target.id : null,
          snapshots: result.snapshots,
          objects: result.objects,
          packs: result.packs,
          bytes_sent: result.bytesSent,
          requests: result.requests,
          started_at: startedAt,
          finished_at: finishedAt,
        },
        () => {
          const lines = [
            `Pushed to ${chosen.name} (${result.location}): ${result.snapshots.uploaded} snapshot(s), ` +
            `${result.objects.uploaded} object(s), ${mib(result.bytesSent)} sent`,
          ];
          for (const ref of result.refs) {
            lines.push(
              `  ${ref.session}/${ref.branch} → ${short(ref.head)}  (#${ref.seq}${
                ref.status === "unchanged" ? ", already there" : ""
              })`,
            );
          }
          if (target.kind === "snapshot") {
            lines.push(`  ${short(target.id)} uploaded without a ref: pull it with its full id`);
          }
          for (const s of result.skipped) {
            lines.push(`  skipped ${s.session}/${s.branch}: ${s.reason.replaceAll("_", " ")}`);
          }
          return lines.join("\n");
        },
      );
      return 0;
    } finally {
      store.close();
    }
  },
};
