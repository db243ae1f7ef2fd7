/**
 * Share: publish a snapshot as a portable file (one signed envelope, or a
 * bundle with its history and files), inspect a received file, import one
 * (a ctxsnap file or a lean-ctx snapshot file, recognised by content) onto a
 * quarantine branch, and show a store or a file as the Replay view (its
 * data, its HTML page, a local read-only server).
 *
 * One function imports a file, whatever its format: {@linkcode importFile}.
 *
 * @example Publish a bundle and import it into another store
 * ```ts
 * import { createSnapshot, initStore, loadOrCreateIdentity } from "./snapshot.ts";
 * import { Keyring } from "./verify.ts";
 * import { importFile, publish } from "./share.ts";
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
export { publishToFile as publish } from "../lib/share/publish.ts";
export { importAnyFile as importFile } from "../lib/share/import.ts";
export { contextChanges, inspectFile } from "../lib/share/inspect_file.ts";
export {
  TIMELINE_SCHEMA,
  timelineFromFile,
  timelineFromStore,
  TreeCache,
} from "../lib/view/model.ts";
export { renderPage } from "../lib/view/html.ts";
export { serveTimeline } from "../lib/view/serve.ts";

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
export type { Envelope, EnvelopeSignature } from "../lib/format/envelope.ts";
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
export type { Hunk } from "../lib/history/text_diff.ts";
export type { TrustPolicy } from "../lib/history/verify.ts";
export type { TreeDiff } from "../lib/repository/diff.ts";
export { Store } from "../lib/repository/store.ts";
export type { AnyImportResult, ImportOptions, ImportResult } from "../lib/share/import.ts";
export type { ContextChanges, InspectedStep, Inspection } from "../lib/share/inspect_file.ts";
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
} from "../lib/share/leanctx.ts";
export type { LeanCtxImportResult } from "../lib/share/leanctx_store.ts";
export type { PublishBelow, PublishOptions, PublishResult } from "../lib/share/publish.ts";
export type {
  AnyFileReport,
  FileReport,
  FileSnapshotReport,
  FileSource,
} from "../lib/share/verify_file.ts";
export type {
  BuildOptions,
  ConversationSource,
  FileDiff,
  StoreScope,
  TimelineData,
  ViewAgentEvent,
  ViewAgentSession,
  ViewBranch,
  ViewConversation,
  ViewEntry,
  ViewLimits,
  ViewMessage,
  ViewPrompt,
  ViewSigner,
  ViewSnapshot,
  ViewSnapshotAgent,
  ViewSource,
  ViewTree,
} from "../lib/view/model.ts";
export type { ServeOptions, TimelineServer } from "../lib/view/serve.ts";
