/**
 * Verify: check a store's snapshots (ids, signatures, chain, objects) and
 * any snapshot file (a published snapshot, a bundle, or a lean-ctx file)
 * offline with no store; decide trust with a {@linkcode Keyring} of pinned
 * public keys, kept in the config directory (`trustKey`, `untrustKey`).
 *
 * One function verifies a file, whatever its format: {@linkcode verifyFile}
 * (`-` reads standard input).
 *
 * @example Verify a store's snapshot, then a published file, with pinned keys
 * ```ts
 * import { createSnapshot, initStore, loadOrCreateIdentity } from "./snapshot.ts";
 * import { publish } from "./share.ts";
 * import { Keyring, verifyFile, verifySnapshot } from "./verify.ts";
 *
 * const alice = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const workspace = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${workspace}/notes.md`, "# findings\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const { id } = await createSnapshot(store, alice, { reason: "first look" });
 * const report = await verifySnapshot(store, id, new Keyring([], alice));
 * if (!(report.valid && report.trusted)) throw new Error("example failed");
 * const file = (await publish(store, id, { dir: await Deno.makeTempDir() })).path;
 * store.close();
 *
 * const pinned = new Keyring([]);
 * pinned.add(alice.publicKey, "alice");
 * const checked = await verifyFile(file, pinned); // no store, no network
 * if (!(checked.format === "ctxsnap" && checked.report.valid && checked.report.trusted)) {
 *   throw new Error("example failed");
 * }
 * ```
 * @module
 */
export { verifyAll, verifySnapshot } from "../lib/history/verify.ts";
export { verifyAnyFile as verifyFile } from "../lib/share/verify_file.ts";
export {
  Keyring,
  readConfigTrustedKeys,
  readKeyFile,
  readTrustedKeys,
  trustKey,
  untrustKey,
} from "../lib/keys/keyring.ts";

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
export type { BundleVisitor } from "../lib/format/bundle.ts";
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
export type { SnapshotReport, StoreReport, TrustPolicy } from "../lib/history/verify.ts";
export type { TrustedKey } from "../lib/keys/keyring.ts";
export { Store } from "../lib/repository/store.ts";
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
export type {
  AnyFileReport,
  FileReport,
  FileSnapshotReport,
  FileSource,
} from "../lib/share/verify_file.ts";
