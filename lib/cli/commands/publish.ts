/**
 * `ctxsnap publish`: write a snapshot (or a bundle with its workspace) to a portable file.
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { UsageError } from "../../errors.ts";
import { checkOverwrite } from "../_overwrite.ts";
import { isTerminal } from "../../runtime.ts";
import type { KeptFormat } from "../../share/formats/format.ts";
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
  type Target,
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

/**
 * `publish --format F` for a format kept as itself (lean-ctx): the file its
 * format exports, signed with this machine's key when needed.
 */
async function publishKept(
  ctx: CommandContext,
  store: Store,
  format: KeptFormat,
  target: Target,
  out: string | undefined,
  force: boolean,
): Promise<number> {
  const { writeFileAtomic } = await import("../../workspace/io/atomic.ts");
  const made = await format.export(store, await identity(), target);
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
    checkOverwrite(file, format.name, { force });
    writeFileAtomic(file, made.text, { mode: 0o644 });
  }
  ctx.out.result(
    {
      path: file,
      format: format.name,
      kind: format.name,
      id: made.id,
      source: target.id,
      source_format: target.format,
      bytes: new TextEncoder().encode(made.text).length,
      signer: made.signer,
      signed_now: made.signedNow,
    },
    () =>
      `Wrote ${file}\n  ${format.name} snapshot ${short(made.id)} (from ${target.format} ${
        short(target.id)
      }), ${made.signedNow ? "signed by" : "keeps its signature by"} ${made.signer.key_id}`,
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
      help: "replace an existing file that is not this snapshot's published file of the same kind",
    },
    history: {
      type: "string",
      arg: "N|all",
      help: "include N ancestors, or all of them (a bundle)",
    },
    "with-conversation": {
      type: "boolean",
      help:
        "also write FILE.conversation.jsonl: the agents' conversation slices, secrets redacted (default: transcripts stay here)",
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
    // The format to write: ctxsnap's own, or one kept as itself (lean-ctx).
    const { keptFormatNamed, keptFormatNames } = await import("../../share/formats/registry.ts");
    const formats = ["ctxsnap", ...keptFormatNames()];
    if (format !== undefined && !formats.includes(format)) {
      throw new UsageError(
        `--format takes ${formats.join(" or ")}, not ${JSON.stringify(format)}`,
      );
    }
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return await store.readAsync(async () => {
        const target = await resolveTarget(ctx, store, prefix);
        const writing = format ?? target.format;
        if (writing !== "ctxsnap") {
          const kept = await keptFormatNamed(writing);
          if (flag(parsed, "with-workspace") || str(parsed, "history") !== undefined) {
            throw new UsageError(
              `A ${kept.name} file holds one snapshot and no workspace: --with-workspace and --history do not apply`,
            );
          }
          return await publishKept(
            ctx,
            store,
            kept,
            target,
            str(parsed, "out"),
            flag(parsed, "force"),
          );
        }
        if (target.kept !== null) {
          throw new UsageError(`${short(target.id)} is a ${target.format} snapshot`, {
            hint: `publish it as itself with --format ${target.format}`,
          });
        }
        const id = target.id;
        const options = { withWorkspace: flag(parsed, "with-workspace"), history };
        const out = str(parsed, "out");
        if (out === "-") {
          if (flag(parsed, "with-conversation")) {
            throw new UsageError("--with-conversation writes a file next to the published one", {
              hint: "use --out FILE or --out DIR",
            });
          }
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
          beforeWrite: (file, kind) =>
            checkOverwrite(file, kind, { force: flag(parsed, "force"), snapshot: id }),
        });
        const conversation = flag(parsed, "with-conversation")
          ? await writeConversation(store, result.path, result.snapshots, flag(parsed, "force"))
          : null;
        ctx.out.result(
          conversation === null ? result : { ...result, conversation },
          () =>
            `Wrote ${esc(result.path)}\n  ${result.kind}, ${result.snapshots.length} snapshot(s)` +
            (result.kind === "bundle" ? `, ${result.blobs} file contents` : ", no file content") +
            `, ${result.bytes} bytes; primary ${short(id)}` +
            (conversation === null
              ? ""
              : `\nWrote ${
                esc(conversation.path)
              }\n  ${conversation.items} conversation item(s), ${conversation.redacted} secret(s) redacted; not signed`),
        );
        return 0;
      });
    } finally {
      store.close();
    }
  },
};

/**
 * Writes `<published>.conversation.jsonl`: the conversation slices of the
 * published snapshots, secrets redacted (lib/integrations/agents/conversation.ts).
 * Created exclusively unless `force`; mode 0600.
 */
async function writeConversation(
  store: ReturnType<typeof openStore>,
  published: string,
  ids: string[],
  force: boolean,
): Promise<{ path: string; items: number; redacted: number }> {
  const { conversationExport } = await import("../../integrations/agents/conversation.ts");
  const { rmSync, writeFileSync } = await import("node:fs");
  const exported = conversationExport(store, ids);
  const path = `${published}.conversation.jsonl`;
  // Never written through a link: with --force an old file (or link) is removed first.
  if (force) rmSync(path, { force: true });
  writeFileSync(path, exported.text, { flag: "wx", mode: 0o600 });
  return { path, items: exported.items, redacted: exported.redacted };
}
