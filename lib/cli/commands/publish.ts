/**
 * `ctxsnap publish`: write a snapshot (or a bundle with its workspace) to a portable file.
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { UsageError } from "../../errors.ts";
import { checkOverwrite } from "../_overwrite.ts";
import { isTerminal } from "../../runtime.ts";
import type { ResolvedId } from "../../share/leanctx_store.ts";
import type { PublishBelow } from "../../share/publish.ts";
import type { Store } from "../../repository/store.ts";
import {
  type Command,
  type CommandContext,
  flag,
  identity,
  intOption,
  openStore,
  short,
  str,
  target as resolveTarget,
  userPath,
} from "../command.ts";

function real(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** Whether `dir` is the workspace root or below it (where the next capture would store a file). */
function insideWorkspace(store: Store, dir: string): boolean {
  const relative = path.relative(real(store.workspaceRoot), real(dir));
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/**
 * Where a file goes: `--out FILE`; `--out DIR` (an existing directory, or a
 * path ending in `/`) for the default name there; without `--out` the
 * current directory, unless it is inside the workspace: then the store's
 * `published/` directory, so the next capture never picks the file up.
 */
function destination(store: Store, cwd: string, out: string | undefined): {
  file?: string;
  dir?: string;
  below?: PublishBelow;
} {
  if (out === undefined) {
    if (!insideWorkspace(store, cwd)) return { dir: cwd };
    // Inside the store: created without following a symlink (a planted
    // `published` link cannot send the file elsewhere).
    return { below: { root: store.dir, dir: "published", replace: true } };
  }
  const given = userPath(out);
  if (out.endsWith("/")) {
    fs.mkdirSync(given, { recursive: true });
    return { dir: given };
  }
  try {
    if (fs.statSync(given).isDirectory()) return { dir: given };
  } catch {
    // Not there yet: a file name.
  }
  return { file: given };
}

/** `publish --format lean-ctx`: the lean-ctx file, signed with this machine's key when needed. */
async function publishLeanCtx(
  ctx: CommandContext,
  store: Store,
  target: ResolvedId,
  out: string | undefined,
  force: boolean,
): Promise<number> {
  const { exportLeanCtx } = await import("../../share/leanctx_export.ts");
  const { writeFileAtomic } = await import("../../workspace/io/atomic.ts");
  const made = await exportLeanCtx(store, await identity(), target);
  if (out === "-") {
    ctx.out.raw(made.text);
    return 0;
  }
  const where = destination(store, ctx.cwd, out);
  let file: string;
  if (where.below !== undefined) {
    const { SafeWriter } = await import("../../workspace/io/safe_write.ts");
    const rel = `${where.below.dir}/${made.fileName}`;
    const writer = new SafeWriter(where.below.root);
    try {
      writer.writeFile(rel, 0o644, (write) => write(new TextEncoder().encode(made.text)));
      writer.flush();
    } finally {
      writer.close();
    }
    file = path.join(where.below.root, rel);
  } else {
    file = where.file ?? path.join(where.dir!, made.fileName);
    checkOverwrite(file, "lean-ctx", { force });
    writeFileAtomic(file, made.text, { mode: 0o644 });
  }
  const sig = made.snapshot.signature!;
  const { keyIdOf } = await import("../../crypto/ed25519.ts");
  const { fromHex } = await import("../../encoding/hex.ts");
  const keyId = keyIdOf(fromHex(sig.public_key, 32));
  ctx.out.result(
    {
      path: file,
      format: "lean-ctx",
      kind: "lean-ctx",
      id: made.snapshot.snapshot_id,
      source: target.id,
      source_format: target.format,
      bytes: new TextEncoder().encode(made.text).length,
      signer: { public_key: sig.public_key, key_id: keyId },
      signed_now: made.signedNow,
    },
    () =>
      `Wrote ${file}\n  lean-ctx snapshot ${short(made.snapshot.snapshot_id)} (from ${
        target.format === "lean-ctx" ? "lean-ctx" : "ctxsnap"
      } ${short(target.id)}), ${made.signedNow ? "signed by" : "keeps its signature by"} ${keyId}`,
  );
  return 0;
}
import { esc } from "../output.ts";
import { MOVE_FLAGS } from "../flags.ts";

/** The `publish` command. */
export const publish: Command = {
  name: "publish",
  usage:
    "publish REVISION [--out FILE|DIR|-] [--with-workspace] [--history N|all] [--force]\npublish REVISION --format lean-ctx [--out FILE|DIR|-]",
  examples: [
    "ctxsnap publish 3f2a                      # 3f2a….ctxsnapshot.json: the signed envelope, no file content",
    "ctxsnap publish HEAD --with-workspace --out /tmp/   # /tmp/<id12>.ctxbundle: envelope, tree and every file",
    "ctxsnap publish 3f2a --with-workspace --out - | ssh host ctxsnap import -",
    "ctxsnap publish 3f2a --format lean-ctx   # <lean-ctx id12>.ctxsnapshot.json for `lean-ctx snapshot import`",
  ],
  options: {
    out: {
      type: "string",
      arg: "FILE|DIR|-",
      help:
        "output file, directory, or - for stdout (default: here, or .ctxsnap/published/ inside the workspace)",
    },
    "with-workspace": { type: "boolean", help: "include the workspace files (a bundle)" },
    force: {
      ...MOVE_FLAGS.force,
      help: "replace an existing file that is not a published file of the same kind",
    },
    history: {
      type: "string",
      arg: "N|all",
      help: "include N ancestors, or all of them (a bundle)",
    },
    format: {
      type: "string",
      arg: "FORMAT",
      help:
        "ctxsnap (default) or lean-ctx: a lean-ctx CONTEXT_SNAPSHOT_V1 file signed with your key",
    },
  },
  renamed: { all: "--history all" },
  args: [{ name: "REVISION", help: "the snapshot to publish" }],
  async run(ctx, parsed) {
    const prefix = parsed.positionals[0];
    if (prefix === undefined) throw new UsageError("publish needs a snapshot (an id, HEAD, …)");
    const all = str(parsed, "history") === "all";
    const n = all ? undefined : intOption(parsed, "history", 0, 1_000_000);
    const history = all ? "all" as const : n ?? 0;
    const { planPublish, publishToFile, writePublished } = await import(
      "../../share/publish.ts"
    );
    const format = str(parsed, "format");
    if (format !== undefined && format !== "ctxsnap" && format !== "lean-ctx") {
      throw new UsageError(`--format takes ctxsnap or lean-ctx, not ${JSON.stringify(format)}`);
    }
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return await store.readAsync(async () => {
        const target = await resolveTarget(ctx, store, prefix);
        if (format === "lean-ctx" || (format === undefined && target.format === "lean-ctx")) {
          if (flag(parsed, "with-workspace") || str(parsed, "history") !== undefined) {
            throw new UsageError(
              "A lean-ctx file holds one snapshot and no workspace: --with-workspace and --history do not apply",
            );
          }
          return await publishLeanCtx(
            ctx,
            store,
            target,
            str(parsed, "out"),
            flag(parsed, "force"),
          );
        }
        if (target.format === "lean-ctx") {
          throw new UsageError(`${short(target.id)} is a lean-ctx snapshot`, {
            hint: "publish it as itself with --format lean-ctx",
          });
        }
        const id = target.id;
        const options = { withWorkspace: flag(parsed, "with-workspace"), history };
        const out = str(parsed, "out");
        if (out === "-") {
          const plan = await planPublish(store, id, options);
          if (plan.kind === "bundle" && isTerminal(1)) {
            throw new UsageError("Refusing to write a binary bundle to a terminal", {
              hint: "redirect stdout to a file or a pipe, or use --out FILE",
            });
          }
          writePublished(store, plan, (chunk) => ctx.out.raw(chunk));
          return 0;
        }
        const result = await publishToFile(store, id, {
          ...options,
          ...destination(store, ctx.cwd, out),
          beforeWrite: (file, kind) => checkOverwrite(file, kind, { force: flag(parsed, "force") }),
        });
        ctx.out.result(
          result,
          () =>
            `Wrote ${esc(result.path)}\n  ${result.kind}, ${result.snapshots.length} snapshot(s)` +
            (result.kind === "bundle" ? `, ${result.blobs} file contents` : ", no file content") +
            `, ${result.bytes} bytes; primary ${short(id)}`,
        );
        return 0;
      });
    } finally {
      store.close();
    }
  },
};
