/**
 * Remotes: name an object store (`file://` directory or S3-compatible
 * bucket), push a store's snapshots to it, pull others' snapshots onto
 * tracking branches (verified before they land), clone a remote into a new
 * store. No lock is needed: objects are content-addressed and refs are
 * append-only signed records.
 *
 * @example Push to a directory remote and clone it elsewhere
 * ```ts
 * import { createSnapshot, initStore, loadOrCreateIdentity } from "./snapshot.ts";
 * import { Keyring } from "./verify.ts";
 * import { addRemote, clone, openBackend, push } from "./remote.ts";
 *
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const workspace = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${workspace}/a.txt`, "a\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const snap = await createSnapshot(store, me, { reason: "to share" });
 * const bucket = await Deno.makeTempDir();
 * const origin = addRemote(store, {
 *   name: "origin",
 *   url: `file://${bucket}`,
 *   endpoint: null,
 *   region: null,
 *   pathStyle: null,
 * });
 * await push(store, openBackend(origin), me, "origin", { kind: "current" });
 * store.close();
 *
 * const copy = `${await Deno.makeTempDir()}/copy`;
 * const cloned = await clone(`file://${bucket}`, copy, me, new Keyring([], me));
 * if (!(cloned.restored?.head === snap.id)) throw new Error("example failed");
 * ```
 * @module
 */
export { push } from "../lib/remote/push.ts";
export { pull } from "../lib/remote/pull.ts";
export { clone } from "../lib/remote/clone.ts";
export {
  addRemote,
  getRemote,
  listRemotes,
  openBackend,
  removeRemote,
} from "../lib/remote/remote_config.ts";
export { TransientError } from "../lib/remote/backend.ts";

// Types the signatures above mention.
export { CtxsnapError, RemoteError } from "../lib/errors.ts";
export type { ErrorCode } from "../lib/errors.ts";
export type {
  DirEntry,
  DirFileEntry,
  DirSkipped,
  DirSubtreeEntry,
  DirSymlinkEntry,
  DirTree,
} from "../lib/format/dir_tree.ts";
export type { CheckDirTreeOptions, DirTreeFacts } from "../lib/format/tree_object.ts";
export type { Signer } from "../lib/format/envelope.ts";
export type {
  FileEntry,
  SkippedEntry,
  SymlinkEntry,
  TreeEntry,
  TreeManifest,
} from "../lib/format/tree.ts";
export type { ListChange, SessionChange } from "../lib/history/session_state.ts";
export type { TrustPolicy } from "../lib/history/verify.ts";
export type { Identity } from "../lib/keys/identity.ts";
export type { Backend, MultipartUpload, ObjectInfo } from "../lib/remote/backend.ts";
export type { CloneOptions, CloneResult } from "../lib/remote/clone.ts";
export type { PulledRef, PulledStatus, PullOptions, PullResult } from "../lib/remote/pull.ts";
export type { PushedRef, PushOptions, PushResult, PushTarget } from "../lib/remote/push.ts";
export type { RemoteConfig } from "../lib/remote/remote_config.ts";
export { Store } from "../lib/repository/store.ts";
export type {
  GitPosition,
  Refusal,
  RestoreGitState,
  RestoreResult,
  SessionMode,
  SessionPlan,
} from "../lib/workspace/move/restore.ts";
export type { Conflict, ConflictReason } from "../lib/workspace/overwrite.ts";
export type { MovePlan, PlannedWrite } from "../lib/workspace/plan.ts";
