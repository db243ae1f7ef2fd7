/**
 * ctxsnap — a context time machine for agent and research workspaces.
 *
 * Capture what a workspace held and what the session knew into one
 * content-addressed, Ed25519-signed snapshot; keep snapshots on an
 * append-only, hash-chained timeline; verify them offline.
 *
 * ## What is exported
 *
 * The exports are grouped as a harness or tool uses them: errors; stores;
 * creating and showing snapshots; names; diffs; sessions; restore, switch,
 * undo and recovery; verification; publishing, importing and verifying
 * files; lean-ctx files; remotes; keys; the Replay view; and, last, the
 * format primitives (canonical JSON, hashes, signed envelopes) for tools
 * that read or check ctxsnap files themselves. Every type a signature
 * mentions is exported too. Everything else under `lib/` is internal and may
 * change without notice.
 *
 * Every error ctxsnap raises on purpose is a {@linkcode CtxsnapError}
 * subclass whose `code` maps to the command line's exit status
 * ({@linkcode exitCodeOf}); a refused restore is a
 * {@linkcode RestoreConflictError} carrying its plan.
 *
 * @example Capture, list and verify
 * ```ts
 * import { createSnapshot, listSnapshots, loadOrCreateIdentity, openStore, initStore, verifySnapshot, Keyring } from "./mod.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * const config = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${workspace}/notes.md`, "# findings\n");
 * initStore(`${workspace}/.ctxsnap`, workspace).close();
 *
 * const store = openStore(`${workspace}/.ctxsnap`);
 * const me = await loadOrCreateIdentity(config);
 * const { id } = await createSnapshot(store, me, { reason: "first look" });
 * if (!(listSnapshots(store, {})[0]?.id === id)) throw new Error("example failed");
 *
 * const report = await verifySnapshot(store, id, new Keyring([], me));
 * if (!(report.valid && report.trusted)) throw new Error("example failed");
 * store.close();
 * await Deno.remove(workspace, { recursive: true });
 * await Deno.remove(config, { recursive: true });
 * ```
 *
 * @example Diff a snapshot against the workspace as it is now
 * ```ts
 * import { captureWorkspace, createSnapshot, diffTrees, initStore, loadOrCreateIdentity } from "./mod.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * const config = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${workspace}/a.txt`, "one\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const snap = await createSnapshot(store, await loadOrCreateIdentity(config), { reason: "before" });
 * await Deno.writeTextFile(`${workspace}/b.txt`, "two\n");
 * const now = captureWorkspace(store, { persist: false }).tree;
 * const diff = diffTrees(store.getTree(snap.envelope.body.workspace!.tree), now);
 * if (!(diff.added.includes("b.txt"))) throw new Error("example failed");
 * store.close();
 * await Deno.remove(workspace, { recursive: true });
 * await Deno.remove(config, { recursive: true });
 * ```
 * @example Restore an earlier snapshot three-way, then undo it
 * ```ts
 * import { createSnapshot, initStore, loadOrCreateIdentity, resolveRevision, restoreSnapshot, undo } from "./mod.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${workspace}/a.txt`, "v1\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * await createSnapshot(store, me, { reason: "v1" });
 * await Deno.writeTextFile(`${workspace}/a.txt`, "v2\n");
 * await createSnapshot(store, me, { reason: "v2" });
 *
 * const v1 = resolveRevision(store, "HEAD~1");
 * const dry = await restoreSnapshot(store, me, v1, { dryRun: true });
 * if (!(dry.plan?.writes[0]?.path === "a.txt" && dry.plan.conflicts.length === 0)) throw new Error("example failed");
 * await restoreSnapshot(store, me, v1);
 * if (!(await Deno.readTextFile(`${workspace}/a.txt`) === "v1\n")) throw new Error("example failed");
 * await undo(store, me); // the restore, reverted from the operations log
 * if (!(await Deno.readTextFile(`${workspace}/a.txt`) === "v2\n")) throw new Error("example failed");
 * store.close();
 * ```
 *
 * @example A restore that would overwrite unsaved work is refused, with its plan
 * ```ts
 * import { createSnapshot, initStore, loadOrCreateIdentity, resolveRevision, RestoreConflictError, restoreSnapshot } from "./mod.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${workspace}/a.txt`, "v1\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * await createSnapshot(store, me, { reason: "v1" });
 * await Deno.writeTextFile(`${workspace}/a.txt`, "v2\n");
 * await createSnapshot(store, me, { reason: "v2" });
 * await Deno.writeTextFile(`${workspace}/a.txt`, "mine, not in any snapshot\n");
 *
 * try {
 *   await restoreSnapshot(store, me, resolveRevision(store, "HEAD~1"));
 *   throw new Error("example failed: the restore was not refused");
 * } catch (error) {
 *   if (!(error instanceof RestoreConflictError)) throw error;
 *   if (!(error.plan.conflicts[0]?.path === "a.txt" && error.code === "conflict")) throw new Error("example failed");
 * }
 * if (!(await Deno.readTextFile(`${workspace}/a.txt`) === "mine, not in any snapshot\n")) throw new Error("example failed");
 * store.close();
 * ```
 *
 * @example Publish a bundle, verify it offline, import it into another store
 * ```ts
 * import { createSnapshot, importFile, initStore, Keyring, loadOrCreateIdentity, publish, verifyFile } from "./mod.ts";
 *
 * const alice = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const workspace = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${workspace}/notes.md`, "# shared\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const snap = await createSnapshot(store, alice, { reason: "review me" });
 * const out = await Deno.makeTempDir();
 * const file = (await publish(store, snap.id, { dir: out, withWorkspace: true })).path;
 * store.close();
 *
 * const pinned = new Keyring([]);
 * pinned.add(alice.publicKey, "alice");
 * const report = await verifyFile(file, pinned); // no store, no network
 * if (!(report.valid && report.trusted)) throw new Error("example failed");
 *
 * const other = await Deno.makeTempDir();
 * const bob = initStore(`${other}/.ctxsnap`, other);
 * const imported = await importFile(bob, file, pinned);
 * if (!(imported.branch === `imported/${alice.keyId}`)) throw new Error("example failed");
 * bob.close();
 * ```
 * @module
 */
import type { Store, StoreOpenOptions } from "./lib/repository/store.ts";
import { initWorkspace, openStoreAt } from "./lib/app/workspace.ts";

// ---------------------------------------------------------------------------
// Errors: every class, the exit-status table, and the mapping to it.

export {
  BusyError,
  CanonicalJsonError,
  ConfigError,
  ConflictError,
  CtxsnapError,
  EXIT_CODES,
  EXIT_MEANINGS,
  exitCodeOf,
  IntegrityError,
  IoError,
  NoStoreError,
  NotFoundError,
  PathError,
  RemoteError,
  SignatureError,
  StoreTrustError,
  UntrustedError,
  UsageError,
} from "./lib/errors.ts";
export type { CtxsnapErrorOptions, ErrorCode, IoErrorOptions } from "./lib/errors.ts";
export { MoveConflictError } from "./lib/workspace/overwrite.ts";
export type { Conflict, ConflictReason } from "./lib/workspace/overwrite.ts";
export { RestoreConflictError } from "./lib/workspace/move/restore.ts";
export { BundleFormatError } from "./lib/format/tar.ts";
export { IgnoreFileError } from "./lib/workspace/io/ignore.ts";
export { FileChangedError, UnreadableError } from "./lib/workspace/io/safe_read.ts";
export { TransientError } from "./lib/remote/backend.ts";

// ---------------------------------------------------------------------------
// Stores: open, create, find, adopt ({@linkcode openStore} and
// {@linkcode initStore} are defined at the end of this module).

export { Store } from "./lib/repository/store.ts";
export type { StoreOpenOptions } from "./lib/repository/store.ts";
export { locateStore } from "./lib/repository/locate.ts";
export type { LocateOptions } from "./lib/repository/locate.ts";
export { isRegistered } from "./lib/repository/trust.ts";
export { adoptStore } from "./lib/history/adopt.ts";
export type { Adoption, ExtraFile } from "./lib/history/adopt.ts";
export { VERSION } from "./lib/version.ts";

// ---------------------------------------------------------------------------
// Snapshots: capture, create, list, show, and what they contain.

export { captureWorkspace } from "./lib/workspace/capture.ts";
export type { CaptureOptions, CaptureResult, CaptureStats } from "./lib/workspace/capture.ts";
export { createSnapshot, validateContextInput } from "./lib/history/create.ts";
export type { ContextInput, CreateOptions, CreateResult } from "./lib/history/create.ts";
export type { AgentOutcome } from "./lib/history/agent.ts";
export type { TranscriptMark, TranscriptRead } from "./lib/history/transcript.ts";
export { listSnapshots, summarize } from "./lib/history/summary.ts";
export type { ListFilter, SnapshotSummary } from "./lib/history/summary.ts";
export { readEnvelope } from "./lib/history/timeline.ts";
export type { Envelope, EnvelopeSignature, Signer } from "./lib/format/envelope.ts";
export type {
  GitAnchor,
  SnapshotBody,
  SnapshotContext,
  SnapshotCursors,
  SnapshotFacets,
  SnapshotSchema,
  WorkspaceRef,
} from "./lib/format/body.ts";
export type {
  LedgerItem,
  LedgerSlice,
  LineageItem,
  LineageSlice,
  RoiSlice,
  Slices,
} from "./lib/format/slices.ts";
export type {
  FileEntry,
  SkippedEntry,
  SymlinkEntry,
  TreeEntry,
  TreeManifest,
} from "./lib/format/tree.ts";
export type {
  DirEntry,
  DirFileEntry,
  DirSkipped,
  DirSubtreeEntry,
  DirSymlinkEntry,
  DirTree,
} from "./lib/format/dir_tree.ts";
export { reachableObjects } from "./lib/repository/reach.ts";
export type { ReachedObject, ReachOptions } from "./lib/repository/reach.ts";

// ---------------------------------------------------------------------------
// Names, branches and the operations log.

export { parseRevision, resolveRevision } from "./lib/history/names.ts";
export type { ResolveOptions, Revision, RevisionStep } from "./lib/history/names.ts";
export { currentSelection, listBranches, resolveSnapshotId } from "./lib/history/timeline.ts";
export type { BranchRow } from "./lib/history/timeline.ts";
export { forkBranch } from "./lib/history/branch.ts";
export { listOperations } from "./lib/repository/operations.ts";
export type { Operation, OperationKind, OperationStatus } from "./lib/repository/operations.ts";
export { forgetImpact, forgetSnapshots, planForget } from "./lib/history/forget.ts";
export type { ForgetResult, ForgetSelector, Unundoable } from "./lib/history/forget.ts";
export { collectGarbage } from "./lib/repository/gc.ts";
export type { GcResult } from "./lib/repository/gc.ts";
export type { VacuumResult } from "./lib/repository/vacuum.ts";

// ---------------------------------------------------------------------------
// Diffs: of trees, of files (with line diffs), of session states.

export { diffStoredTrees, diffTrees } from "./lib/repository/diff.ts";
export type { DiffOptions, StoredTreeDiff, TreeDiff } from "./lib/repository/diff.ts";
export { fileChanges, PATCH_LIMITS, workspaceContent } from "./lib/view/patch.ts";
export type { FileChange } from "./lib/view/patch.ts";
export { storeContent } from "./lib/view/model.ts";
export type { ContentSource, FileDiff, ViewLimits } from "./lib/view/model.ts";
export { diffText, formatUnified } from "./lib/history/text_diff.ts";
export type { Hunk, TextDiff, TextDiffOptions } from "./lib/history/text_diff.ts";

// ---------------------------------------------------------------------------
// Sessions: read the live state, edit or replace it (undoably), switch.

export {
  editSession,
  readSessionState,
  sessionChange,
  switchSession,
} from "./lib/history/session_state.ts";
export type { ListChange, SessionChange } from "./lib/history/session_state.ts";

// ---------------------------------------------------------------------------
// Restore: plan (dry run) and apply, switch, undo and redo, recover.

export { restoreSnapshot } from "./lib/workspace/move/restore.ts";
export type {
  GitPosition,
  Refusal,
  RestoreGitState,
  RestoreOptions,
  RestoreResult,
  SessionMode,
  SessionPlan,
} from "./lib/workspace/move/restore.ts";
export type { MovePlan, PlannedWrite } from "./lib/workspace/plan.ts";
export { switchTo } from "./lib/workspace/move/switch.ts";
export type { SwitchOptions, SwitchResult } from "./lib/workspace/move/switch.ts";
export { nextRedo, nextUndo, redo, undo } from "./lib/workspace/move/undo.ts";
export type { RevertedOperation, RevertOptions, RevertResult } from "./lib/workspace/move/undo.ts";
export { recover } from "./lib/workspace/move/recover.ts";
export type { RecoverOptions, RecoverResult } from "./lib/workspace/move/recover.ts";
export { materialize } from "./lib/workspace/move/materialize.ts";
export type { MaterializeResult } from "./lib/workspace/move/materialize.ts";
export { readBaseline } from "./lib/repository/baseline.ts";

// ---------------------------------------------------------------------------
// Verification of a store's snapshots.

export { verifyAll, verifySnapshot } from "./lib/history/verify.ts";
export type { SnapshotReport, StoreReport, TrustPolicy } from "./lib/history/verify.ts";

// ---------------------------------------------------------------------------
// Files: publish, verify offline (no store), import.

export { publishToFile as publish } from "./lib/share/publish.ts";
export type { PublishBelow, PublishOptions, PublishResult } from "./lib/share/publish.ts";
export { verifyAnyFile, verifyFile, verifyStream } from "./lib/share/verify_file.ts";
export type {
  AnyFileReport,
  FileReport,
  FileSnapshotReport,
  FileSource,
} from "./lib/share/verify_file.ts";
export type { BundleVisitor } from "./lib/format/bundle.ts";
export { contextChanges, inspectFile } from "./lib/share/inspect_file.ts";
export type { ContextChanges, InspectedStep, Inspection } from "./lib/share/inspect_file.ts";
export { importAnyFile, importFile } from "./lib/share/import.ts";
export type { AnyImportResult, ImportOptions, ImportResult } from "./lib/share/import.ts";

// ---------------------------------------------------------------------------
// lean-ctx files: check and import (verifyAnyFile and importAnyFile take them too).

export { checkLeanCtxBytes, leanCtxVerdict } from "./lib/share/leanctx.ts";
export type {
  LeanCtxCheck,
  LeanCtxGit,
  LeanCtxLedger,
  LeanCtxLedgerItem,
  LeanCtxLineage,
  LeanCtxLineageItem,
  LeanCtxProject,
  LeanCtxRoi,
  LeanCtxSession,
  LeanCtxSignature,
  LeanCtxSnapshot,
  LeanCtxVerdict,
} from "./lib/share/leanctx.ts";
export { importLeanCtx } from "./lib/share/leanctx_store.ts";
export type { LeanCtxImportResult } from "./lib/share/leanctx_store.ts";

// ---------------------------------------------------------------------------
// Remotes: push, pull, clone, and the remotes a store knows.

export { push } from "./lib/remote/push.ts";
export type { PushedRef, PushOptions, PushResult, PushTarget } from "./lib/remote/push.ts";
export { pull } from "./lib/remote/pull.ts";
export type { PulledRef, PulledStatus, PullOptions, PullResult } from "./lib/remote/pull.ts";
export { clone } from "./lib/remote/clone.ts";
export type { CloneOptions, CloneResult } from "./lib/remote/clone.ts";
export {
  addRemote,
  getRemote,
  listRemotes,
  openBackend,
  removeRemote,
} from "./lib/remote/remote_config.ts";
export type { RemoteConfig } from "./lib/remote/remote_config.ts";
export type { Backend, MultipartUpload, ObjectInfo } from "./lib/remote/backend.ts";

// ---------------------------------------------------------------------------
// Keys: this machine's identity, and the keys it trusts.

export {
  configDir,
  importIdentity,
  loadIdentity,
  loadOrCreateIdentity,
} from "./lib/keys/identity.ts";
export type { Identity, IdentityImport } from "./lib/keys/identity.ts";
export {
  Keyring,
  readConfigTrustedKeys,
  readKeyFile,
  readTrustedKeys,
  trustKey,
  untrustKey,
} from "./lib/keys/keyring.ts";
export type { TrustedKey } from "./lib/keys/keyring.ts";
export { keyIdOf, parsePublicKey, publicKeyToSpkiPem } from "./lib/crypto/ed25519.ts";

// ---------------------------------------------------------------------------
// The Replay view: the timeline data model, its HTML page, a local server.

export {
  TIMELINE_SCHEMA,
  timelineFromFile,
  timelineFromStore,
  TreeCache,
} from "./lib/view/model.ts";
export type {
  BuildOptions,
  ConversationSource,
  StoreScope,
  TimelineData,
  ViewAgentEvent,
  ViewAgentSession,
  ViewBranch,
  ViewConversation,
  ViewEntry,
  ViewMessage,
  ViewPrompt,
  ViewSigner,
  ViewSnapshot,
  ViewSnapshotAgent,
  ViewSource,
  ViewTree,
} from "./lib/view/model.ts";
export { renderPage } from "./lib/view/html.ts";
export { serveTimeline } from "./lib/view/serve.ts";
export type { ServeOptions, TimelineServer } from "./lib/view/serve.ts";

// ---------------------------------------------------------------------------
// Format primitives (docs/FORMAT.md), for tools that read or check ctxsnap
// files themselves: canonical JSON, hashes, signed envelopes (Ed25519 keys: see Keys).

export {
  canonicalBytes,
  canonicalize,
  parseCanonical,
  parseJson,
} from "./lib/encoding/canonical_json.ts";
export type { CanonicalOptions, JsonValue, ParseOptions } from "./lib/encoding/canonical_json.ts";
export { blake3Hex, sha256Hex } from "./lib/crypto/hash.ts";
export { checkEnvelope, parseEnvelope, snapshotId } from "./lib/format/envelope.ts";
export type { EnvelopeCheck } from "./lib/format/envelope.ts";
export { SNAPSHOT_SCHEMA, SNAPSHOT_SCHEMA_V2 } from "./lib/format/body.ts";

// ---------------------------------------------------------------------------
// Opening and creating stores.

/**
 * Opens the store in `dir` (a `.ctxsnap` directory), after checking its
 * paths and schema; with `registry` (a config directory, as `configDir()`
 * returns) it must also be registered there as this user's. The rules are
 * the ones the command line follows (`lib/app/workspace.ts`).
 */
export function openStore(dir: string, options: StoreOpenOptions = {}): Store {
  return openStoreAt(dir, options);
}

/**
 * Creates (or reopens) a store in `dir` capturing the workspace at
 * `workspace`, by the rules `ctxsnap init` follows: a workspace inside the
 * workspace of a store in a parent directory is refused
 * ({@linkcode ConflictError}) unless `nested`; the store is kept out of git
 * (`.git/info/exclude`); with `registry` a store it creates is registered
 * there, and an existing one is reopened only if registered
 * ({@linkcode StoreTrustError} otherwise).
 */
export function initStore(
  dir: string,
  workspace: string,
  options: { registry?: string; nested?: boolean } = {},
): Store {
  return initWorkspace(dir, workspace, options).store;
}
