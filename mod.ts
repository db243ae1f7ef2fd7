/**
 * ctxsnap — a context time machine for agent and research workspaces.
 *
 * Capture what a workspace held and what the session knew into one
 * content-addressed, Ed25519-signed snapshot; keep snapshots on an
 * append-only, hash-chained timeline; restore three-way without destroying
 * work ctxsnap did not create; publish portable files that verify offline.
 *
 * ## The API by job
 *
 * This module is the facade for the five main jobs: create a snapshot
 * ({@linkcode createSnapshot}, or an agent's {@linkcode checkpoint}),
 * restore one ({@linkcode restoreSnapshot}, {@linkcode undo}), verify
 * ({@linkcode verifySnapshot}, {@linkcode verifyFile}), share
 * ({@linkcode publish}, {@linkcode importFile}) and record an agent
 * harness's hook event ({@linkcode parseClaudeCodeEvent} then
 * {@linkcode checkpoint}); with the stores and keys they need and every
 * error class. Each job has a fuller module of its own:
 *
 * | import                        | for                                                             |
 * | ----------------------------- | --------------------------------------------------------------- |
 * | `@ctxsnap/ctxsnap/snapshot`   | stores, create, list, names and branches, the log, diffs, sessions, forget, gc |
 * | `@ctxsnap/ctxsnap/restore`    | restore, switch, undo and redo, recover, materialize            |
 * | `@ctxsnap/ctxsnap/verify`     | verify snapshots and files, trusted keys                        |
 * | `@ctxsnap/ctxsnap/share`      | publish, inspect and import files; the Replay view              |
 * | `@ctxsnap/ctxsnap/remote`     | remotes: push, pull, clone                                      |
 * | `@ctxsnap/ctxsnap/agent`      | agent checkpoints, hook events, the incremental watch service   |
 * | `@ctxsnap/ctxsnap/format`     | canonical JSON, hashes, envelopes, keys, the stored types       |
 *
 * (From a checkout: `mod.ts`, `api/snapshot.ts`, … `api/format.ts`.) Results
 * use camelCase fields; the command line's `--json` documents keep their
 * snake_case shapes (docs/CLI.md). Everything else under `lib/` is internal
 * and may change without notice.
 *
 * Every error ctxsnap raises on purpose is a {@linkcode CtxsnapError}
 * subclass whose `code` maps to the command line's exit status
 * ({@linkcode exitCodeOf}); a refused restore is a
 * {@linkcode RestoreConflictError} carrying its plan.
 *
 * @example Capture, verify, restore and undo
 * ```ts
 * import {
 *   createSnapshot,
 *   initStore,
 *   Keyring,
 *   loadOrCreateIdentity,
 *   resolveRevision,
 *   restoreSnapshot,
 *   undo,
 *   verifySnapshot,
 * } from "./mod.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${workspace}/a.txt`, "v1\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const { id } = await createSnapshot(store, me, { reason: "v1" });
 * const report = await verifySnapshot(store, id, new Keyring([], me));
 * if (!(report.valid && report.trusted)) throw new Error("example failed");
 * await Deno.writeTextFile(`${workspace}/a.txt`, "v2\n");
 * await createSnapshot(store, me, { reason: "v2" });
 *
 * await restoreSnapshot(store, me, resolveRevision(store, "HEAD~1"));
 * if (!(await Deno.readTextFile(`${workspace}/a.txt`) === "v1\n")) throw new Error("example failed");
 * await undo(store, me);
 * if (!(await Deno.readTextFile(`${workspace}/a.txt`) === "v2\n")) throw new Error("example failed");
 * store.close();
 * await Deno.remove(workspace, { recursive: true });
 * ```
 *
 * @example Publish, verify offline, import elsewhere
 * ```ts
 * import { createSnapshot, importFile, initStore, Keyring, loadOrCreateIdentity, publish, verifyFile } from "./mod.ts";
 *
 * const alice = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const workspace = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${workspace}/notes.md`, "# shared\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const snap = await createSnapshot(store, alice, { reason: "review me" });
 * const file = (await publish(store, snap.id, { dir: await Deno.makeTempDir(), withWorkspace: true })).path;
 * store.close();
 *
 * const pinned = new Keyring([]);
 * pinned.add(alice.publicKey, "alice");
 * const checked = await verifyFile(file, pinned); // no store, no network
 * if (!(checked.format === "ctxsnap" && checked.report.trusted)) throw new Error("example failed");
 * const other = await Deno.makeTempDir();
 * const bob = initStore(`${other}/.ctxsnap`, other);
 * const imported = await importFile(bob, file, pinned);
 * if (!(imported.format === "ctxsnap" && imported.result.branch === `imported/${alice.keyId}`)) {
 *   throw new Error("example failed");
 * }
 * bob.close();
 * ```
 * @module
 */

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
export type { CtxsnapErrorOptions, IoErrorOptions } from "./lib/errors.ts";
export { MoveConflictError } from "./lib/workspace/overwrite.ts";
export { RestoreConflictError } from "./lib/workspace/move/restore.ts";
export { BundleFormatError } from "./lib/format/tar.ts";
export { IgnoreFileError } from "./lib/workspace/io/ignore.ts";
export { FileChangedError, UnreadableError } from "./lib/workspace/io/safe_read.ts";
export { TransientError } from "./lib/remote/backend.ts";

// Stores and keys.
export { initStore, openStore } from "./api/_store.ts";
export { Store } from "./lib/repository/store.ts";
export { configDir, loadOrCreateIdentity } from "./lib/keys/identity.ts";
export { Keyring } from "./lib/keys/keyring.ts";

// 1. Create (and 5. an agent's checkpoint, with its hook event).
export { createSnapshot } from "./lib/history/create.ts";
export { checkpoint } from "./lib/history/checkpoint.ts";
export { parseClaudeCodeEvent } from "./lib/history/agent.ts";
export { listSnapshots } from "./lib/history/summary.ts";
export { resolveRevision } from "./lib/history/names.ts";

// 2. Restore.
export { restoreSnapshot } from "./lib/workspace/move/restore.ts";
export { undo } from "./lib/workspace/move/undo.ts";

// 3. Verify.
export { verifySnapshot } from "./lib/history/verify.ts";
export { verifyAnyFile as verifyFile } from "./lib/share/verify_file.ts";

// 4. Share.
export { publishToFile as publish } from "./lib/share/publish.ts";
export { importAnyFile as importFile } from "./lib/share/import.ts";

// Types the signatures above mention.
export type { JsonValue } from "./lib/encoding/canonical_json.ts";
export type { ErrorCode } from "./lib/errors.ts";
export { SNAPSHOT_SCHEMA, SNAPSHOT_SCHEMA_V2 } from "./lib/format/body.ts";
export type {
  GitAnchor,
  SnapshotBody,
  SnapshotContext,
  SnapshotCursors,
  SnapshotFacets,
  SnapshotSchema,
  WorkspaceRef,
} from "./lib/format/body.ts";
export type { BundleVisitor } from "./lib/format/bundle.ts";
export type {
  DirEntry,
  DirFileEntry,
  DirSkipped,
  DirSubtreeEntry,
  DirSymlinkEntry,
  DirTree,
} from "./lib/format/dir_tree.ts";
export type { CheckDirTreeOptions, DirTreeFacts } from "./lib/format/tree_object.ts";
export type { Envelope, EnvelopeSignature, Signer } from "./lib/format/envelope.ts";
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
export type { AgentEvent, AgentEventKind, AgentOutcome } from "./lib/history/agent.ts";
export type { TranscriptMark, TranscriptRead } from "./lib/history/transcript.ts";
export type { CheckpointOptions } from "./lib/history/checkpoint.ts";
export type { ContextInput, CreateOptions, CreateResult } from "./lib/history/create.ts";
export type { ResolveOptions } from "./lib/history/names.ts";
export type { ListChange, SessionChange } from "./lib/history/session_state.ts";
export type { ListFilter, SnapshotSummary } from "./lib/history/summary.ts";
export type { SnapshotReport, TrustPolicy } from "./lib/history/verify.ts";
export type { Identity } from "./lib/keys/identity.ts";
export type { StoreOpenOptions } from "./lib/repository/store.ts";
export type { AnyImportResult, ImportOptions, ImportResult } from "./lib/share/import.ts";
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
export type { LeanCtxImportResult } from "./lib/share/leanctx_store.ts";
export type { PublishBelow, PublishOptions, PublishResult } from "./lib/share/publish.ts";
export type {
  AnyFileReport,
  FileReport,
  FileSnapshotReport,
  FileSource,
} from "./lib/share/verify_file.ts";
export type { CaptureOptions, CaptureResult, CaptureStats } from "./lib/workspace/capture.ts";
export type {
  GitPosition,
  Refusal,
  RestoreGitState,
  RestoreOptions,
  RestoreResult,
  SessionMode,
  SessionPlan,
} from "./lib/workspace/move/restore.ts";
export type {
  RevertedOperation,
  RevertGit,
  RevertOptions,
  RevertResult,
} from "./lib/workspace/move/undo.ts";
export type { Conflict, ConflictReason } from "./lib/workspace/overwrite.ts";
export type { MovePlan, PlannedWrite } from "./lib/workspace/plan.ts";
