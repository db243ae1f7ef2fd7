/**
 * `ctxsnap diff`: what changed between two snapshots, or a snapshot and now:
 * files (names, `--stat`, `--patch`: unified text diffs computed as the
 * Replay view computes them, `lib/view/patch.ts`) and the session.
 * @module
 */
import { UsageError } from "../../errors.ts";
import { captureWorkspace } from "../../workspace/capture.ts";
import type { Store } from "../../repository/store.ts";
import type { TreeManifest } from "../../format/tree.ts";
import type { SnapshotContext } from "../../format/body.ts";
import { diffStoredTrees, diffTrees, type StoredTreeDiff } from "../../repository/diff.ts";
import { readSessionState, sessionChange } from "../../history/session_state.ts";
import { hunkHeader } from "../../history/text_diff.ts";
import { selection } from "../../history/timeline.ts";
import { ctxsnapFormat } from "../../share/formats/ctxsnap.ts";
import type { FileChange } from "../../view/patch.ts";
import { type Command, flag, openStore, short, str, type Target, target } from "../command.ts";
import { esc } from "../output.ts";
import { SELECTION_FLAGS } from "../flags.ts";

const EMPTY: TreeManifest = { version: 1, entries: [], skipped: [] };

/**
 * One side of the diff: its tree and session context, read verified by its
 * format (a lean-ctx snapshot records no workspace: its tree is null, as for
 * a ctxsnap snapshot that captured none, and its session slice is compared).
 */
async function sideOf(
  store: Store,
  side: Target,
): Promise<{ tree: string | null; context: SnapshotContext }> {
  const stored = await (side.kept ?? ctxsnapFormat).describe(store, side.id);
  return { tree: stored.tree, context: stored.context };
}

/** What a file change is when it has no line counts. */
function kindNote(change: FileChange): string | null {
  switch (change.kind) {
    case "binary":
      return "binary";
    case "too_large":
      return "too large to diff";
    case "unavailable":
      return "content not in this store";
    case "symlink":
      return `symlink ${esc(change.old_target ?? "-")} → ${esc(change.new_target ?? "-")}`;
    default:
      return change.added === 0 && change.removed === 0 && change.old_mode !== change.new_mode
        ? `mode ${octal(change.old_mode)} → ${octal(change.new_mode)}`
        : null;
  }
}

function octal(mode: number | null): string {
  return mode === null ? "-" : mode.toString(8);
}

/** `--stat`: one line per file, then the totals. */
function statLines(changes: FileChange[]): string[] {
  const width = Math.min(60, Math.max(0, ...changes.map((c) => esc(c.path).length)));
  const lines = changes.map((c) =>
    ` ${esc(c.path).padEnd(width)} | ${kindNote(c) ?? `+${c.added} -${c.removed}`}`
  );
  const added = changes.reduce((n, c) => n + c.added, 0);
  const removed = changes.reduce((n, c) => n + c.removed, 0);
  if (changes.length > 0) {
    lines.push(
      ` ${changes.length} file(s) changed, ${added} insertion(s)(+), ${removed} deletion(s)(-)`,
    );
  }
  return lines;
}

/** `--patch`: a unified diff per file (labels `a/PATH`, `b/PATH`, `/dev/null`). */
function patchLines(changes: FileChange[]): string[] {
  const lines: string[] = [];
  for (const c of changes) {
    const oldLabel = c.change === "added" ? "/dev/null" : `a/${esc(c.path)}`;
    const newLabel = c.change === "removed" ? "/dev/null" : `b/${esc(c.path)}`;
    lines.push(`diff --ctxsnap a/${esc(c.path)} b/${esc(c.path)}`);
    if (c.old_mode !== null && c.new_mode !== null && c.old_mode !== c.new_mode) {
      lines.push(`old mode ${octal(c.old_mode)}`, `new mode ${octal(c.new_mode)}`);
    }
    if (c.kind === "text") {
      if (c.hunks.length === 0) continue;
      lines.push(`--- ${oldLabel}`, `+++ ${newLabel}`);
      for (const hunk of c.hunks) lines.push(hunkHeader(hunk), ...hunk.lines.map(esc));
    } else if (c.kind === "binary") {
      lines.push(`Binary files ${oldLabel} and ${newLabel} differ`);
    } else {
      lines.push(`(${kindNote(c)})`);
    }
  }
  return lines;
}

/** The `diff` command. */
export const diff: Command = {
  name: "diff",
  usage: "diff [A] [B] [--stat | --patch] [--session S]",
  examples: [
    "ctxsnap diff HEAD              # the head against the workspace as it is now",
    "ctxsnap diff 3f2a9c 81bd04 --json",
    "ctxsnap diff HEAD~1 HEAD       # what the last snapshot changed, session included",
    "ctxsnap diff prompt:2 prompt:3 # what the agent did at prompt 2",
    "ctxsnap diff HEAD --stat       # lines added and removed per file",
    "ctxsnap diff HEAD~1 --patch    # unified text diffs (binary files marked)",
  ],
  options: {
    session: { ...SELECTION_FLAGS.session, help: "session whose HEAD and branches names mean" },
    stat: { type: "boolean", help: "lines added and removed per file (binary files marked)" },
    patch: { type: "boolean", help: "unified text diffs of the files (binary files marked)" },
  },
  args: [{ name: "A", help: "the snapshot to compare from (default HEAD)", optional: true }, {
    name: "B",
    help: "the snapshot to compare with (default: the workspace and live session now)",
    optional: true,
  }],
  async run(ctx, parsed) {
    const [a, b] = parsed.positionals;
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return await store.readAsync(async () => {
        const session = str(parsed, "session");
        const sideA = await target(ctx, store, a ?? "HEAD", { session });
        const sideB = b === undefined ? null : await target(ctx, store, b, { session });
        const idA = sideA.id;
        const idB = sideB?.id ?? null;
        const left = await sideOf(store, sideA);
        let trees: StoredTreeDiff;
        let rightContext: SnapshotContext;
        if (idB === null) {
          // Against the workspace: the disk is captured whole, so compare whole.
          const disk = captureWorkspace(store, { persist: false }).tree;
          const before = left.tree === null ? EMPTY : store.getTree(left.tree);
          trees = {
            diff: diffTrees(before, disk, { bIsDisk: true }),
            left: before,
            right: disk,
          };
          rightContext = readSessionState(store, selection(store, session).session);
        } else {
          // Two snapshots: equal subtrees are skipped, never read.
          const right = await sideOf(store, sideB!);
          trees = diffStoredTrees(store, left.tree, right.tree);
          rightContext = right.context;
        }
        const files = trees.diff;
        const sessionDiff = sessionChange(left.context, rightContext);
        const stat = flag(parsed, "stat");
        const patch = flag(parsed, "patch");
        if (stat && patch) throw new UsageError("--stat and --patch cannot be combined");
        let details: FileChange[] | null = null;
        if (stat || patch) {
          const { fileChanges, workspaceContent } = await import("../../view/patch.ts");
          const { storeContent } = await import("../../view/model.ts");
          details = fileChanges(
            trees.left,
            trees.right,
            storeContent(store),
            idB === null ? workspaceContent(store, trees.right) : storeContent(store),
            { bIsDisk: idB === null },
          );
          if (stat) { for (const change of details) change.hunks = []; }
        }
        const doc = {
          a: idA,
          b: idB ?? "workspace",
          ...files,
          ...(details === null ? {} : { files: details }),
          session: sessionDiff,
        };
        ctx.out.result(doc, () => {
          const lines = [`diff ${short(idA)} → ${idB === null ? "workspace" : short(idB)}`];
          if (details !== null) {
            lines.push(...(patch ? patchLines(details) : statLines(details)));
          } else {
            for (const path of files.added) lines.push(`A ${esc(path)}`);
            for (const path of files.changed) lines.push(`M ${esc(path)}`);
            for (const path of files.removed) lines.push(`D ${esc(path)}`);
          }
          const s = sessionDiff;
          if (s.task) {
            lines.push(
              `session task: ${esc(JSON.stringify(s.task.from))} → ${
                esc(JSON.stringify(s.task.to))
              }`,
            );
          }
          if (s.progress_pct) {
            lines.push(`session progress: ${s.progress_pct.from}% → ${s.progress_pct.to}%`);
          }
          for (const name of ["decisions", "findings", "knowledge", "files_touched"] as const) {
            for (const item of s[name].added) lines.push(`session ${name} + ${esc(item)}`);
            for (const item of s[name].removed) lines.push(`session ${name} - ${esc(item)}`);
          }
          const ext = s.extensions;
          for (const n of ext.added) lines.push(`session extension + ${esc(n)}`);
          for (const n of ext.changed) lines.push(`session extension ~ ${esc(n)}`);
          for (const n of ext.removed) lines.push(`session extension - ${esc(n)}`);
          if (lines.length === 1) lines.push("no differences");
          return lines.join("\n");
        });
        return 0;
      });
    } finally {
      store.close();
    }
  },
};
