/**
 * The files two trees differ in, each with its text diff: what
 * `ctxsnap diff --stat` and `diff --patch` show. The line diffs are the
 * Replay view's ({@linkcode fileDiff} over `lib/history/text_diff.ts`), so
 * the command line and the page compute them the same way; only the limits
 * differ (a patch is not cut into a page budget).
 *
 * Content comes from a {@linkcode ContentSource}: the store's blobs
 * ({@linkcode storeContent}), and for the workspace as it is now the files
 * on disk ({@linkcode workspaceContent}): each read without following a
 * symlink, through the workspace's real path, and used only when its bytes
 * still hash to the id the capture recorded. Secrets and ignored files are
 * never in a captured tree, so they are never shown.
 *
 * @example
 * ```ts
 * import { fileChanges } from "./patch.ts";
 * const bytes = new Map([["1".repeat(64), new TextEncoder().encode("a\nb\n")], ["2".repeat(64), new TextEncoder().encode("a\nB\n")]]);
 * const source = { tree: () => null, blob: (id: string) => bytes.get(id) ?? null };
 * const file = (blob: string) => ({ path: "x.txt", type: "file" as const, blob: blob.repeat(64), size: 4, mode: 0o644 });
 * const [change] = fileChanges(
 *   { version: 1, entries: [file("1")], skipped: [] },
 *   { version: 1, entries: [file("2")], skipped: [] },
 *   source,
 *   source,
 * );
 * if (!(change?.change === "changed" && change.added === 1 && change.removed === 1)) throw new Error("diffed");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { readRegularNoFollow, statInfoOf } from "../workspace/io/safe_read.ts";
import type { Store } from "../repository/store.ts";
import type { TreeEntry, TreeManifest } from "../format/tree.ts";
import { diffTrees } from "../repository/diff.ts";
import type { Hunk } from "../history/text_diff.ts";
import {
  type ContentSource,
  DEFAULT_LIMITS,
  type FileDiff,
  fileDiff,
  storeContent,
  type ViewLimits,
} from "./model.ts";

/** Limits of a patch: whole diffs of files up to 16 MiB a side. */
export const PATCH_LIMITS: Readonly<ViewLimits> = Object.freeze({
  ...DEFAULT_LIMITS,
  max_diff_input_bytes: 16 * 1024 * 1024,
  max_diff_lines: Number.MAX_SAFE_INTEGER,
  diff_budget_bytes: Number.MAX_SAFE_INTEGER,
});

/** One file that differs between two trees. */
export interface FileChange {
  /** Path. */
  path: string;
  /** `added`, `changed` or `removed`. */
  change: "added" | "changed" | "removed";
  /**
   * `text` (hunks computed), `binary`, `too_large`, `unavailable` (content
   * not in this store: an envelope-only import) or `symlink` (either side
   * is one: see the targets).
   */
  kind: FileDiff["status"] | "symlink";
  /** Lines added (text only). */
  added: number;
  /** Lines removed (text only). */
  removed: number;
  /** The old file's permission bits, or null (missing, or a symlink). */
  old_mode: number | null;
  /** The new file's permission bits, or null. */
  new_mode: number | null;
  /** The old symlink's target, or null. */
  old_target: string | null;
  /** The new symlink's target, or null. */
  new_target: string | null;
  /** Unified hunks (text only). */
  hunks: Hunk[];
  /** False when the diff search hit its cost bound (a correct diff, maybe not the shortest). */
  exact: boolean;
}

function side(entry: TreeEntry | undefined): { id: string; size: number } | null {
  return entry?.type === "file" ? { id: entry.blob, size: entry.size } : null;
}

/**
 * The files `a` and `b` differ in (as {@linkcode diffTrees} lists them; with
 * `bIsDisk`, modes compare as a restore leaves them), each with its diff,
 * reading old content from `aContent` and new content from `bContent`.
 */
export function fileChanges(
  a: TreeManifest,
  b: TreeManifest,
  aContent: ContentSource,
  bContent: ContentSource,
  options: { bIsDisk?: boolean; limits?: ViewLimits } = {},
): FileChange[] {
  const names = diffTrees(a, b, { bIsDisk: options.bIsDisk === true });
  const left = new Map(a.entries.map((e) => [e.path, e]));
  const right = new Map(b.entries.map((e) => [e.path, e]));
  const limits = options.limits ?? PATCH_LIMITS;
  // Old content from one source, new from the other, in one ContentSource.
  const both = (oldId: string | null): ContentSource => ({
    tree: () => null,
    blob: (id) => (id === oldId ? aContent.blob(id) : bContent.blob(id)),
  });
  const out: FileChange[] = [];
  const paths: [string, FileChange["change"]][] = [
    ...names.added.map((p) => [p, "added"] as [string, FileChange["change"]]),
    ...names.changed.map((p) => [p, "changed"] as [string, FileChange["change"]]),
    ...names.removed.map((p) => [p, "removed"] as [string, FileChange["change"]]),
  ];
  paths.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  for (const [rel, change] of paths) {
    const before = left.get(rel);
    const after = right.get(rel);
    const item: FileChange = {
      path: rel,
      change,
      kind: "symlink",
      added: 0,
      removed: 0,
      old_mode: before?.type === "file" ? before.mode & 0o7777 : null,
      new_mode: after?.type === "file" ? after.mode & 0o7777 : null,
      old_target: before?.type === "symlink" ? before.target : null,
      new_target: after?.type === "symlink" ? after.target : null,
      hunks: [],
      exact: true,
    };
    if (before?.type !== "symlink" && after?.type !== "symlink") {
      const oldSide = side(before);
      const newSide = side(after);
      const diff = oldSide !== null && newSide !== null && oldSide.id === newSide.id
        ? { status: "text" as const, added: 0, removed: 0, hunks: [], exact: true } // mode only
        : fileDiff(both(oldSide?.id ?? null), oldSide, newSide, limits);
      item.kind = diff.status;
      item.added = diff.added;
      item.removed = diff.removed;
      item.hunks = diff.hunks;
      item.exact = diff.exact;
    }
    out.push(item);
  }
  return out;
}

/**
 * The content of the workspace files a capture recorded in `disk` (taken
 * just now, nothing stored): store blobs where the store has them, else the
 * file at the entry's path, read without following a symlink and through
 * the workspace's real path, returned only when it still hashes to the
 * recorded blob (null otherwise: it changed since the capture).
 */
export function workspaceContent(store: Store, disk: TreeManifest): ContentSource {
  const fromStore = storeContent(store);
  const byBlob = new Map<string, TreeEntry & { type: "file" }>();
  for (const entry of disk.entries) if (entry.type === "file") byBlob.set(entry.blob, entry);
  let real: string | null = null;
  return {
    tree: () => null,
    blob(id) {
      const stored = store.hasObject(id) ? fromStore.blob(id) : null;
      if (stored !== null) return stored;
      const entry = byBlob.get(id);
      if (entry === undefined) return null;
      try {
        real ??= fs.realpathSync(store.workspaceRoot);
        const abs = path.join(real, entry.path);
        const read = readRegularNoFollow(abs, statInfoOf(fs.lstatSync(abs)), {
          maxBytes: entry.size,
          keepBytesUpTo: entry.size,
          expectedRealPath: abs,
        });
        return read.sha256 === id ? read.data : null;
      } catch {
        return null; // gone, replaced or changed since the capture
      }
    },
  };
}
