/**
 * What a received file recorded, read without a store: a published snapshot
 * or a bundle is verified in one pass ({@linkcode verifyAnyFile}) while its
 * trees and small file contents are kept, then each snapshot becomes a step
 * with the context it added (decisions, findings, knowledge, task) and the
 * files it changed against the step before. Nothing is written.
 *
 * @example
 * ```ts
 * import { contextChanges } from "./inspect_file.ts";
 * const before = { task: "a", progress_pct: 0, decisions: ["x"], files_touched: [], findings: [], knowledge: [], extensions: {} };
 * const after = { ...before, decisions: ["x", "y"] };
 * if (contextChanges(before, after).decisions[0] !== "y") throw new Error("added");
 * ```
 * @module
 */
import type { SnapshotContext } from "../format/body.ts";
import { diffTrees, type TreeDiff } from "../repository/diff.ts";
import type { Envelope } from "../format/envelope.ts";
import type { TrustPolicy } from "../history/verify.ts";
import type { TreeManifest } from "../format/tree.ts";
import type { DirTree } from "../format/dir_tree.ts";
import { expandDirTree } from "../format/tree_object.ts";
import { NotFoundError, quote } from "../errors.ts";
import { type AnyFileReport, type FileSource, verifyAnyFile } from "./verify_file.ts";

/** Largest file content kept for `--patch`, in bytes. */
export const MAX_PATCH_BLOB_BYTES = 1024 * 1024;
/** Largest total content kept for `--patch`, in bytes. */
export const MAX_PATCH_TOTAL_BYTES = 64 * 1024 * 1024;

/** What one step added to the session context. */
export interface ContextChanges {
  /** The task, when it changed. */
  task: string | null;
  /** The progress, when it changed. */
  progress_pct: number | null;
  /** Decisions added. */
  decisions: string[];
  /** Findings added. */
  findings: string[];
  /** Knowledge added. */
  knowledge: string[];
  /** Files touched added. */
  files_touched: string[];
}

/** One snapshot of the file, oldest first. */
export interface InspectedStep {
  /** The verified envelope. */
  envelope: Envelope;
  /** Context added since the previous step (all of it for the first). */
  context: ContextChanges;
  /** Files changed since the previous step's tree, or null without trees. */
  files: TreeDiff | null;
}

/** What {@linkcode inspectFile} found. */
export interface Inspection {
  /** The verification report (ctxsnap or lean-ctx). */
  report: AnyFileReport;
  /** Trees by id (bundles with workspace only). */
  trees: Map<string, TreeManifest>;
  /** Small file contents by blob id (with `keepContent`). */
  blobs: Map<string, Uint8Array>;
  /** Each snapshot, oldest first, with what it changed. */
  steps: InspectedStep[];
}

/** The context `after` added to `before` (`before` null: everything). */
export function contextChanges(
  before: SnapshotContext | null,
  after: SnapshotContext,
): ContextChanges {
  const added = (a: string[] | undefined, b: string[]) => {
    const had = new Set(a ?? []);
    return b.filter((x) => !had.has(x));
  };
  return {
    task: before === null || before.task !== after.task ? after.task : null,
    progress_pct: before === null || before.progress_pct !== after.progress_pct
      ? after.progress_pct
      : null,
    decisions: added(before?.decisions, after.decisions),
    findings: added(before?.findings, after.findings),
    knowledge: added(before?.knowledge, after.knowledge),
    files_touched: added(before?.files_touched, after.files_touched),
  };
}

/**
 * Verifies `source` and returns what it recorded. Throws like
 * {@linkcode verifyAnyFile} (an `IntegrityError` for anything tampered);
 * the caller decides what an invalid signature or untrusted signer means.
 */
export async function inspectFile(
  source: FileSource,
  trust: TrustPolicy,
  options: { keepContent?: boolean } = {},
): Promise<Inspection> {
  // Tree objects of either version as the reader verified them; `trees` holds each snapshot's
  // workspace expanded to its flat manifest.
  const objects = new Map<string, TreeManifest | DirTree>();
  const trees = new Map<string, TreeManifest>();
  const flat = (id: string): TreeManifest | undefined => {
    const known = trees.get(id);
    if (known !== undefined) return known;
    const object = objects.get(id);
    if (object === undefined) return undefined;
    const tree = object.version === 1 ? object : expandDirTree(id, object, (sub) => {
      const child = objects.get(sub);
      if (child === undefined) throw new NotFoundError(`The file has no tree ${quote(sub)}`);
      return child;
    });
    trees.set(id, tree);
    return tree;
  };
  const blobs = new Map<string, Uint8Array>();
  let kept = 0;
  const report = await verifyAnyFile(source, trust, {
    tree: (id, tree) => void objects.set(id, tree),
    blobStart: (id, size) => {
      if (!options.keepContent || size > MAX_PATCH_BLOB_BYTES) return null;
      if (kept + size > MAX_PATCH_TOTAL_BYTES) return null;
      kept += size;
      const bytes = new Uint8Array(size);
      let at = 0;
      blobs.set(id, bytes);
      return (chunk) => {
        bytes.set(chunk, at);
        at += chunk.length;
      };
    },
  });
  const steps: InspectedStep[] = [];
  if (report.format === "ctxsnap") {
    let previous: Envelope | null = null;
    for (const envelope of report.report.envelopes) {
      const tree = envelope.body.workspace === null
        ? undefined
        : flat(envelope.body.workspace.tree);
      const before = previous?.body.workspace == null
        ? undefined
        : flat(previous.body.workspace.tree);
      steps.push({
        envelope,
        context: contextChanges(previous?.body.context ?? null, envelope.body.context),
        files: tree === undefined
          ? null
          : diffTrees(before ?? { version: 1, entries: [], skipped: [] }, tree),
      });
      previous = envelope;
    }
  }
  return { report, trees, blobs, steps };
}
