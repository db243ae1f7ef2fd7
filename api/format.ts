/**
 * Format primitives (docs/FORMAT.md), for tools that read or check ctxsnap
 * files themselves: canonical JSON (JCS) and the strict parser, SHA-256 and
 * BLAKE3, signed envelopes and snapshot ids, Ed25519 public keys, and the
 * types of a snapshot body, its session slices and its trees.
 *
 * @example Recompute a snapshot id and check an envelope's signature
 * ```ts
 * import { createSnapshot, initStore, loadOrCreateIdentity } from "./snapshot.ts";
 * import { canonicalize, checkEnvelope, parseEnvelope, snapshotId } from "./format.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const { envelope } = await createSnapshot(store, me, { reason: "by hand" });
 * store.close();
 *
 * const text = canonicalize(envelope);
 * const parsed = parseEnvelope(text);
 * if (!(snapshotId(parsed.body) === parsed.id)) throw new Error("example failed");
 * const check = await checkEnvelope(parsed);
 * if (!(check.idMatches && check.signatureValid)) throw new Error("example failed");
 * ```
 * @module
 */
export {
  canonicalBytes,
  canonicalize,
  parseCanonical,
  parseJson,
} from "../lib/encoding/canonical_json.ts";
export { blake3Hex, sha256Hex } from "../lib/crypto/hash.ts";
export { checkEnvelope, parseEnvelope, snapshotId } from "../lib/format/envelope.ts";
export { SNAPSHOT_SCHEMA, SNAPSHOT_SCHEMA_V2 } from "../lib/format/body.ts";
export { keyIdOf, parsePublicKey, publicKeyToSpkiPem } from "../lib/crypto/ed25519.ts";
export type {
  FileEntry,
  SkippedEntry,
  SymlinkEntry,
  TreeEntry,
  TreeManifest,
} from "../lib/format/tree.ts";
export type {
  DirEntry,
  DirFileEntry,
  DirSkipped,
  DirSubtreeEntry,
  DirSymlinkEntry,
  DirTree,
} from "../lib/format/dir_tree.ts";
export type { CheckDirTreeOptions, DirTreeFacts } from "../lib/format/tree_object.ts";

// Types the signatures above mention.
export type { CanonicalOptions, JsonValue, ParseOptions } from "../lib/encoding/canonical_json.ts";
export type {
  GitAnchor,
  SnapshotBody,
  SnapshotContext,
  SnapshotCursors,
  SnapshotFacets,
  SnapshotSchema,
  WorkspaceRef,
} from "../lib/format/body.ts";
export type { Envelope, EnvelopeCheck, EnvelopeSignature } from "../lib/format/envelope.ts";
export type {
  LedgerItem,
  LedgerSlice,
  LineageItem,
  LineageSlice,
  RoiSlice,
  Slices,
} from "../lib/format/slices.ts";
