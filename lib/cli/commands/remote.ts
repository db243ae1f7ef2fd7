/**
 * `ctxsnap remote`, `push`, `pull`, `clone`: sharing snapshots through
 * S3-compatible object storage or a shared directory (lib/remote).
 * @module
 */
import { UsageError } from "../../errors.ts";
import type { Store } from "../../repository/store.ts";
import { getBranch, resolveSnapshotId, selection } from "../../history/timeline.ts";
import {
  type Command,
  type CommandContext,
  flag,
  identity,
  list,
  openStore,
  type Parsed,
  short,
  str,
  trustPolicy,
  userPath,
} from "../command.ts";
import { configDir } from "../../keys/identity.ts";
import type { PullResult } from "../../remote/pull.ts";
import type { RemoteConfig } from "../../remote/remote_config.ts";
import { pullJson, refJson, remoteJson } from "../json.ts";

// The remote layer loads only when one of these commands runs.
const config = () => import("../../remote/remote_config.ts");

const S3_OPTIONS = {
  endpoint: {
    type: "string" as const,
    arg: "URL",
    help: "S3 endpoint, http(s)://HOST[:PORT] (default: AWS_ENDPOINT_URL, else AWS)",
  },
  region: {
    type: "string" as const,
    arg: "R",
    help: "S3 region (default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1)",
  },
  "path-style": {
    type: "boolean" as const,
    help: "address ENDPOINT/BUCKET/KEY (default with --endpoint)",
  },
  "virtual-hosted": {
    type: "boolean" as const,
    help: "address BUCKET.ENDPOINT/KEY (default for AWS)",
  },
};

function pathStyle(parsed: Parsed): boolean | null {
  if (flag(parsed, "path-style") && flag(parsed, "virtual-hosted")) {
    throw new UsageError("use --path-style or --virtual-hosted, not both");
  }
  return flag(parsed, "path-style") ? true : flag(parsed, "virtual-hosted") ? false : null;
}

/** The `remote` command. */
export const remote: Command = {
  name: "remote",
  summary: "add, list or remove the remotes snapshots are pushed to and pulled from",
  usage: [
    "remote [list]",
    "remote add NAME URL [--endpoint URL] [--region R] [--path-style|--virtual-hosted]",
    "remote remove NAME",
  ].join("\n"),
  examples: [
    "ctxsnap remote add origin s3://team-bucket/ctx --endpoint https://s3.example.net",
    "ctxsnap remote add share file:///mnt/nfs/ctx",
    "ctxsnap remote list --json",
    "ctxsnap remote remove share",
  ],
  options: S3_OPTIONS,
  positionals: 3,
  async run(ctx, parsed) {
    const [sub = "list", name, url] = parsed.positionals;
    const { addRemote, checkRemoteName, listRemotes, removeRemote } = await config();
    const store = openStore(ctx, { readOnly: sub === "list" });
    try {
      switch (sub) {
        case "list": {
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
        }
        case "add": {
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
        }
        case "remove": {
          if (name === undefined) throw new UsageError("remote remove needs NAME");
          const removed = removeRemote(store, name);
          ctx.out.result(
            { ...remoteJson(removed), removed: true },
            () => `Removed remote ${removed.name} (nothing on the remote was touched)`,
          );
          return 0;
        }
        default:
          throw new UsageError(`Unknown remote subcommand ${JSON.stringify(sub)}`, {
            hint: "use list, add or remove",
          });
      }
    } finally {
      store.close();
    }
  },
};

/** Splits `[NAME] [REST]`: the first positional is the remote when one of that name exists. */
async function remoteAndRest(
  store: Store,
  positionals: string[],
): Promise<{ remote: RemoteConfig; rest: string | undefined }> {
  const { getRemote, listRemotes } = await config();
  const remotes = listRemotes(store);
  const [first, second] = positionals;
  if (first !== undefined && remotes.some((r) => r.name === first)) {
    return { remote: getRemote(store, first), rest: second };
  }
  if (second !== undefined) {
    // Two arguments: the first must be a remote.
    getRemote(store, first!);
  }
  const fallback = remotes.find((r) => r.name === "origin") ??
    (remotes.length === 1 ? remotes[0] : undefined);
  if (fallback === undefined) {
    throw new UsageError(
      remotes.length === 0 ? "No remote is configured" : "Name the remote (there is no origin)",
      { hint: "add one with `ctxsnap remote add origin URL`, or pass its NAME" },
    );
  }
  return { remote: fallback, rest: first };
}

function mib(bytes: number): string {
  return bytes < 1024 * 1024
    ? `${(bytes / 1024).toFixed(1)} KiB`
    : `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** The `push` command. */
export const push: Command = {
  name: "push",
  summary: "upload snapshots and a signed ref to a remote",
  usage: "push [NAME] [BRANCH|ID] [--all] [--session S]",
  examples: [
    "ctxsnap push                       # the current branch to origin",
    "ctxsnap push origin exp            # branch exp",
    "ctxsnap push --all --json          # every branch you signed",
    "ctxsnap push origin 3f2a9c         # one snapshot and its history, no ref",
  ],
  options: {
    all: { type: "boolean", help: "push every branch whose head this machine signed" },
    session: { type: "string", arg: "S", help: "session of BRANCH (default: current)" },
  },
  positionals: 2,
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

function pullLines(result: PullResult): string[] {
  const lines: string[] = [];
  if (!result.initialized) lines.push("  the remote is empty (nothing pushed yet)");
  for (const ref of result.refs) {
    const where = `${ref.session}/${ref.localBranch}`;
    switch (ref.status) {
      case "updated":
        lines.push(`  ${where} → ${short(ref.head)}`);
        break;
      case "unchanged":
        lines.push(`  ${where} up to date`);
        break;
      default:
        lines.push(
          `  ${ref.status.toUpperCase()} ${ref.keyId}'s ${ref.session}/${ref.branch}: ${ref.reason}`,
        );
    }
  }
  return lines;
}

/** Exit status of a pull: 1 when a ref was refused, 3 when one was left out as untrusted. */
function pullStatus(ctx: CommandContext, result: PullResult): number {
  const refused = result.refs.filter((r) => r.status === "refused");
  const untrusted = result.refs.filter((r) => r.status === "untrusted");
  const stale = result.refs.filter((r) => r.status === "stale");
  for (const ref of stale) {
    ctx.out.warn(
      `the remote rolled back ${ref.keyId}'s ${ref.session}/${ref.branch}: ${ref.reason}; kept the newer head`,
    );
  }
  if (refused.length > 0) {
    ctx.out.warn(`refused ${refused.length} ref(s) that did not verify; nothing of them landed`);
    return 1;
  }
  if (untrusted.length > 0) {
    ctx.out.warn(
      `left out ${untrusted.length} ref(s) of unpinned signers (${
        [...new Set(untrusted.map((r) => r.keyId))].join(", ")
      }); pin them with \`ctxsnap key trust\`, or pass --allow-untrusted to quarantine them`,
    );
    return 3;
  }
  return 0;
}

const TRUST_OPTIONS = {
  trust: {
    type: "string" as const,
    multiple: true,
    arg: "KEY",
    help: "also trust this public key for this run (hex, PEM text or PEM file); repeatable",
  },
  "allow-untrusted": {
    type: "boolean" as const,
    help: "quarantine snapshots of unpinned signers too (still fully verified)",
  },
};

/** The `pull` command. */
export const pull: Command = {
  name: "pull",
  summary: "download, verify and quarantine what a remote has that this store lacks",
  usage: "pull [NAME] [ID] [--trust KEY]... [--allow-untrusted]",
  examples: [
    "ctxsnap pull                       # every ref of origin, onto origin/<key id>/<branch>",
    "ctxsnap pull team --trust bob.pub.pem",
    "ctxsnap pull origin 3f2a9c81bd04…  # one snapshot by full id, onto imported/<key id>",
    "ctxsnap restore origin/5c1de0a977b3f812/main --dry-run",
  ],
  options: TRUST_OPTIONS,
  positionals: 2,
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
        await trustPolicy(list(parsed, "trust")),
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

/** The `clone` command. */
export const clone: Command = {
  name: "clone",
  summary: "create a workspace and store from a remote",
  usage:
    "clone URL DIR [--endpoint URL] [--region R] [--path-style|--virtual-hosted] [--branch B] [--signer KEY_ID] [--trust KEY]... [--allow-untrusted]",
  examples: [
    "ctxsnap clone s3://team-bucket/ctx review --endpoint https://s3.example.net --trust alice.pub.pem",
    "ctxsnap clone file:///mnt/nfs/ctx work --branch exp",
  ],
  options: {
    ...S3_OPTIONS,
    ...TRUST_OPTIONS,
    branch: {
      type: "string",
      arg: "B",
      help: "restore the newest ref of branch B (default: main, else any)",
    },
    signer: { type: "string", arg: "KEY_ID", help: "restore only a ref of this signer" },
  },
  positionals: 2,
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
      await trustPolicy(list(parsed, "trust")),
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
