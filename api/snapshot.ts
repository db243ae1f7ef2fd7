/**
 * Snapshots: open or create a store, capture the workspace and the session
 * into a signed snapshot, list and show snapshots, name them (revisions,
 * branches), read the operations log, diff, edit the live session, forget
 * and collect garbage.
 *
 * Imported as `@ctxsnap/ctxsnap/snapshot` (the package's `./snapshot`
 * export), or by path or URL as `api/snapshot.ts` of a checkout.
 *
 * @example Capture, list, diff against the workspace as it is now
 * ```ts
 * import {
 *   captureWorkspace,
 *   createSnapshot,
 *   diffTrees,
 *   initStore,
 *   listSnapshots,
 *   loadOrCreateIdentity,
 * } from "./snapshot.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * const config = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${workspace}/a.txt`, "one\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const me = await loadOrCreateIdentity(config);
 * const snap = await createSnapshot(store, me, { reason: "before" });
 * if (!(listSnapshots(store)[0]?.id === snap.id)) throw new Error("example failed");
 * await Deno.writeTextFile(`${workspace}/b.txt`, "two\n");
 * const now = captureWorkspace(store, { persist: false }).tree;
 * const diff = diffTrees(store.getTree(snap.envelope.body.workspace!.tree), now);
 * if (!(diff.added.includes("b.txt"))) throw new Error("example failed");
 * store.close();
 * await Deno.remove(workspace, { recursive: true });
 * await Deno.remove(config, { recursive: true });
 * ```
 * @module
 */

// Stores and the signer.
export { initStore, openStore } from "./_store.ts";
export { Store } from "../lib/repository/store.ts";
export { locateStore } from "../lib/repository/locate.ts";
export { isRegistered } from "../lib/repository/trust.ts";
export { adoptStore } from "../lib/history/adopt.ts";
export { VERSION } from "../lib/version.ts";
export {
  configDir,
  importIdentity,
  loadIdentity,
  loadOrCreateIdentity,
} from "../lib/keys/identity.ts";

// Create, list, show.
export { captureWorkspace } from "../lib/workspace/capture.ts";
export { createSnapshot, validateContextInput } from "../lib/history/create.ts";
export { listSnapshots, summarize } from "../lib/history/summary.ts";
export { readEnvelope } from "../lib/history/timeline.ts";

// Names, branches, the operations log, forget and gc.
export { parseRevision, resolveRevision } from "../lib/history/names.ts";
export { currentSelection, listBranches, resolveSnapshotId } from "../lib/history/timeline.ts";
export { forkBranch } from "../lib/history/branch.ts";
export { listOperations } from "../lib/repository/operations.ts";
export { forgetImpact, forgetSnapshots, planForget } from "../lib/history/forget.ts";
export { collectGarbage } from "../lib/repository/gc.ts";
export { reachableObjects } from "../lib/repository/reach.ts";

// Diffs of trees, files and session states.
export { diffStoredTrees, diffTrees } from "../lib/repository/diff.ts";
export { fileChanges, PATCH_LIMITS, workspaceContent } from "../lib/view/patch.ts";
export { storeContent } from "../lib/view/model.ts";
export { diffText, formatUnified } from "../lib/history/text_diff.ts";

// The live session.
export {
  editSession,
  readSessionState,
  sessionChange,
  switchSession,
} from "../lib/history/session_state.ts";

// Types the signatures above mention.
export type { JsonValue } from "../lib/encoding/canonical_json.ts";
export { SNAPSHOT_SCHEMA, SNAPSHOT_SCHEMA_V2 } from "../lib/format/body.ts";
export type {
  GitAnchor,
  SnapshotBody,
  SnapshotContext,
  SnapshotCursors,
  SnapshotFacets,
  SnapshotSchema,
  WorkspaceRef,
} from "../lib/format/body.ts";
export type {
  DirEntry,
  DirFileEntry,
  DirSkipped,
  DirSubtreeEntry,
  DirSymlinkEntry,
  DirTree,
} from "../lib/format/dir_tree.ts";
export type { CheckDirTreeOptions, DirTreeFacts } from "../lib/format/tree_object.ts";
export type { Envelope, EnvelopeSignature, Signer } from "../lib/format/envelope.ts";
export type {
  LedgerItem,
  LedgerSlice,
  LineageItem,
  LineageSlice,
  RoiSlice,
  Slices,
} from "../lib/format/slices.ts";
export type {
  FileEntry,
  SkippedEntry,
  SymlinkEntry,
  TreeEntry,
  TreeManifest,
} from "../lib/format/tree.ts";
export type { Adoption, ExtraFile } from "../lib/history/adopt.ts";
export type { AgentOutcome } from "../lib/history/agent.ts";
export type { TranscriptMark, TranscriptRead } from "../lib/history/transcript.ts";
export type { ContextInput, CreateOptions, CreateResult } from "../lib/history/create.ts";
export type { ForgetResult, ForgetSelector, Unundoable } from "../lib/history/forget.ts";
export type { ResolveOptions, Revision, RevisionStep } from "../lib/history/names.ts";
export type { ListChange, SessionChange } from "../lib/history/session_state.ts";
export type { ListFilter, SnapshotSummary } from "../lib/history/summary.ts";
export type { Hunk, TextDiff, TextDiffOptions } from "../lib/history/text_diff.ts";
export type { BranchRow } from "../lib/history/timeline.ts";
export type { TrustPolicy } from "../lib/history/verify.ts";
export type { Identity, IdentityImport } from "../lib/keys/identity.ts";
export type { DiffOptions, StoredTreeDiff, TreeDiff } from "../lib/repository/diff.ts";
export type { GcResult } from "../lib/repository/gc.ts";
export type { LocateOptions } from "../lib/repository/locate.ts";
export type { Operation, OperationKind, OperationStatus } from "../lib/repository/operations.ts";
export type { ReachedObject, ReachOptions } from "../lib/repository/reach.ts";
export type { StoreOpenOptions } from "../lib/repository/store.ts";
export type { VacuumResult } from "../lib/repository/vacuum.ts";
export { TreeCache } from "../lib/view/model.ts";
export type { ContentSource, FileDiff, ViewLimits } from "../lib/view/model.ts";
export type { FileChange } from "../lib/view/patch.ts";
export type { CaptureOptions, CaptureResult, CaptureStats } from "../lib/workspace/capture.ts";
