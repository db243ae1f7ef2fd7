/**
 * ctxsnap — a context time machine for agent and research workspaces.
 *
 * Capture what a workspace held and what the session knew into one
 * content-addressed, Ed25519-signed snapshot; keep snapshots on an
 * append-only, hash-chained timeline; verify them offline.
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
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Store, type StoreOpenOptions } from "./lib/store/store.ts";
import { registerStore } from "./lib/store/trust.ts";

export { CtxsnapError, EXIT_CODES, exitCodeOf } from "./lib/errors.ts";
export type { ErrorCode } from "./lib/errors.ts";
export {
  canonicalBytes,
  canonicalize,
  parseCanonical,
  parseJson,
} from "./lib/encoding/canonical_json.ts";
export type { JsonValue } from "./lib/encoding/canonical_json.ts";
export { blake3Hex, sha256Hex } from "./lib/crypto/hash.ts";
export { keyIdOf, publicKeyToSpkiPem } from "./lib/crypto/ed25519.ts";
export { configDir, loadIdentity, loadOrCreateIdentity } from "./lib/keys/identity.ts";
export type { Identity } from "./lib/keys/identity.ts";
export {
  Keyring,
  readTrustedKeys,
  trustedKeysPath,
  trustKey,
  untrustKey,
} from "./lib/keys/keyring.ts";
export { Store } from "./lib/store/store.ts";
export type { StoreOpenOptions } from "./lib/store/store.ts";
export { locateStore } from "./lib/store/locate.ts";
export { checkRegistered, isRegistered, registerStore } from "./lib/store/trust.ts";
export { adoptStore } from "./lib/snapshot/adopt.ts";
export type { Adoption } from "./lib/snapshot/adopt.ts";
export { captureWorkspace } from "./lib/store/capture.ts";
export type { CaptureOptions, CaptureResult, CaptureStats } from "./lib/store/capture.ts";
export { validateTree } from "./lib/store/tree.ts";
export type { TreeEntry, TreeManifest } from "./lib/store/tree.ts";
export { SNAPSHOT_SCHEMA, validateBody } from "./lib/snapshot/body.ts";
export type { SnapshotBody, SnapshotContext } from "./lib/snapshot/body.ts";
export { checkEnvelope, parseEnvelope, signBody, snapshotId } from "./lib/snapshot/envelope.ts";
export type { Envelope } from "./lib/snapshot/envelope.ts";
export { createSnapshot, validateContextInput } from "./lib/snapshot/create.ts";
export type { ContextInput, CreateOptions, CreateResult } from "./lib/snapshot/create.ts";
export {
  branchChain,
  currentSelection,
  listBranches,
  readEnvelope,
  resolveSnapshotId,
} from "./lib/snapshot/timeline.ts";
export { listSnapshots, summarize } from "./lib/snapshot/summary.ts";
export type { ListFilter, SnapshotSummary } from "./lib/snapshot/summary.ts";
export { parseRevision, parseTime, resolveRevision } from "./lib/snapshot/names.ts";
export type { ResolveOptions, Revision } from "./lib/snapshot/names.ts";
export {
  editSession,
  mergeContext,
  readSessionState,
  sessionChange,
  switchSession,
  updateSessionState,
} from "./lib/snapshot/session_state.ts";
export type { SessionChange } from "./lib/snapshot/session_state.ts";
export { readBaseline } from "./lib/store/baseline.ts";
export { verifyAll, verifySnapshot } from "./lib/snapshot/verify.ts";
export type { SnapshotReport, StoreReport, TrustPolicy } from "./lib/snapshot/verify.ts";
export { diffTrees } from "./lib/snapshot/diff.ts";
export type { TreeDiff } from "./lib/snapshot/diff.ts";
export {
  decodeText,
  diffLines,
  diffText,
  formatUnified,
  hunkHeader,
  isBinary,
} from "./lib/snapshot/text_diff.ts";
export type {
  DiffOp,
  Hunk,
  LineDiff,
  TextDiff,
  TextDiffOptions,
} from "./lib/snapshot/text_diff.ts";
export { gitAnchor } from "./lib/snapshot/git.ts";
export { VERSION } from "./lib/version.ts";
export { planMove } from "./lib/restore/plan.ts";
export type { MovePlan, PlanInput } from "./lib/restore/plan.ts";
export { decide, forceable } from "./lib/restore/policy.ts";
export type { ConflictReason, Decision } from "./lib/restore/policy.ts";
export { restoreSnapshot } from "./lib/restore/restore.ts";
export type { RestoreOptions, RestoreResult, SessionPlan } from "./lib/restore/restore.ts";
export { recover } from "./lib/restore/recover.ts";
export type { RecoverResult } from "./lib/restore/recover.ts";
export { switchTo } from "./lib/restore/switch.ts";
export type { SwitchOptions, SwitchResult } from "./lib/restore/switch.ts";
export { nextRedo, nextUndo, redo, undo } from "./lib/restore/undo.ts";
export type { RevertOptions, RevertResult } from "./lib/restore/undo.ts";
export { materialize } from "./lib/restore/materialize.ts";
export { forkBranch } from "./lib/snapshot/branch.ts";
export { forgetImpact, forgetSnapshots, planForget } from "./lib/snapshot/forget.ts";
export { collectGarbage } from "./lib/store/gc.ts";
export type { GcResult } from "./lib/store/gc.ts";
export { listOperations } from "./lib/store/operations.ts";
export { planPublish, publishToFile as publish, writePublished } from "./lib/share/publish.ts";
export type { PublishOptions, PublishResult } from "./lib/share/publish.ts";
export { verifyFile } from "./lib/share/verify_file.ts";
export type { FileReport } from "./lib/share/verify_file.ts";
export { importAnyFile, importFile } from "./lib/share/import.ts";
export type { AnyImportResult, ImportOptions, ImportResult } from "./lib/share/import.ts";
export { verifyAnyFile } from "./lib/share/verify_file.ts";
export type { AnyFileReport } from "./lib/share/verify_file.ts";
export {
  checkLeanCtxBytes,
  leanCtxFileText,
  leanCtxId,
  leanCtxVerdict,
  newLeanCtxSnapshot,
  signLeanCtx,
} from "./lib/share/leanctx.ts";
export type { LeanCtxCheck, LeanCtxSnapshot, LeanCtxVerdict } from "./lib/share/leanctx.ts";
export { importLeanCtx, readLeanCtx, resolveAnyId } from "./lib/share/leanctx_store.ts";
export { exportLeanCtx, leanCtxFromBody } from "./lib/share/leanctx_export.ts";
export { restoreLeanCtx } from "./lib/share/leanctx_restore.ts";
export { SNAPSHOT_SCHEMA_V2 } from "./lib/snapshot/body.ts";
export type { LedgerSlice, LineageSlice, RoiSlice, Slices } from "./lib/snapshot/slices.ts";
export { push } from "./lib/remote/push.ts";
export type { PushOptions, PushResult, PushTarget } from "./lib/remote/push.ts";
export { pull, trackingBranch } from "./lib/remote/pull.ts";
export type { PulledRef, PullOptions, PullResult } from "./lib/remote/pull.ts";
export { clone } from "./lib/remote/clone.ts";
export type { CloneOptions, CloneResult } from "./lib/remote/clone.ts";
export {
  addRemote,
  getRemote,
  listRemotes,
  openBackend,
  parseRemoteUrl,
  removeRemote,
} from "./lib/remote/remote_config.ts";
export type { RemoteConfig } from "./lib/remote/remote_config.ts";
export type { Backend, MultipartUpload, ObjectInfo } from "./lib/remote/backend.ts";
export { FileBackend } from "./lib/remote/file_backend.ts";
export { S3Backend } from "./lib/remote/s3_backend.ts";
export {
  storeContent,
  TIMELINE_SCHEMA,
  timelineFromFile,
  timelineFromStore,
} from "./lib/view/model.ts";
export type { StoreScope, TimelineData, ViewSnapshot } from "./lib/view/model.ts";
export { fileChanges, PATCH_LIMITS, workspaceContent } from "./lib/view/patch.ts";
export type { FileChange } from "./lib/view/patch.ts";
export { renderPage } from "./lib/view/html.ts";
export { serveTimeline } from "./lib/view/serve.ts";
export type { TimelineServer } from "./lib/view/serve.ts";

/**
 * Opens the store in `dir` (a `.ctxsnap` directory), after checking its
 * paths and schema; with `registry` (a config directory, as `configDir()`
 * returns) it must also be registered there as this user's.
 */
export function openStore(dir: string, options: StoreOpenOptions = {}): Store {
  return Store.open(dir, options);
}

/**
 * Creates (or reopens) a store in `dir` capturing the workspace at
 * `workspace`; with `registry` a store it creates is registered there.
 */
export function initStore(
  dir: string,
  workspace: string,
  options: { registry?: string } = {},
): Store {
  const created = !existsSync(join(dir, "index.db"));
  const store = Store.init(dir, workspace);
  if (created && options.registry !== undefined) {
    registerStore(options.registry, store.dir, "init");
  }
  return store;
}
