/**
 * `pull`: downloads what this store lacks from a remote, verifies every byte
 * before anything lands, and puts others' snapshots on quarantine branches.
 *
 * For each signer and branch the remote lists, the newest ref record is read
 * and checked: its key must name the record exactly (signer, session,
 * branch, sequence number, hash), its signature must verify, and its signer
 * must be pinned (`--allow-untrusted` lets an unpinned signer's snapshots be
 * quarantined too; otherwise they are left out and reported, exit 3). A
 * record older than one this store already accepted from that remote is
 * stale (a remote rolling a ref back): it is reported and ignored, never
 * followed backwards. Then the chain of envelopes from the head down to a
 * snapshot this store has (each canonical, its id recomputed, its signature
 * verified, its signer trusted), their trees (hash, schema, reserved names,
 * workspace counts) and every blob the store lacks (decoded with its size as
 * the bound, then hashed) are fetched into a staging file. Objects are found
 * in the pack indexes first (read once, cached when the pull lands), then
 * under their own keys; a pack is fetched whole and checked against its key
 * when most of it is wanted, else as ranges of the wanted objects; packs
 * holding nothing this store lacks are never fetched. Nothing has landed
 * yet.
 *
 * A ref whose content fails any check, or that the remote cannot serve
 * whole, is refused (exit 1); the others land, in one transaction: objects,
 * snapshot rows (as imported), then every new snapshot is verified again
 * from the store exactly as `ctxsnap verify` does ({@linkcode verifySnapshot}),
 * and only then do the quarantine branches `<remote>/<key_id>/<branch>` of
 * the signer's session move. A failure anywhere rolls everything back. A
 * killed pull leaves the store as it was (the staging file is swept by gc);
 * a rerun starts again.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { trackingBranch } from "./pull.ts";
 * if (trackingBranch("origin", "0123456789abcdef", "main") !== "origin/0123456789abcdef/main") {
 *   throw new Error("tracking branch name");
 * }
 * ```
 * @module
 */
import * as fs from "node:fs";
import { CtxsnapError, IntegrityError, NotFoundError, quote, UntrustedError } from "../errors.ts";
import { createSha256, sha256Hex } from "../crypto/hash.ts";
import { assertResolved } from "../repository/operations.ts";
import { setBranchHead } from "../repository/branch_rows.ts";
import { beginChange, endChange } from "../history/oplog.ts";
import { COMPRESS_MIN_BYTES, INLINE_BLOB_MAX, packPays, type Store } from "../repository/store.ts";
import { treeTotals } from "../format/tree.ts";
import { MAX_TREE_DEPTH } from "../format/dir_tree.ts";
import { MAX_TREE_BYTES, parseTreeObject } from "../format/tree_object.ts";
import {
  checkEnvelope,
  type Envelope,
  envelopeBytes,
  MAX_ENVELOPE_BYTES,
  parseEnvelope,
} from "../format/envelope.ts";
import {
  ensureBranch,
  getBranch,
  hasSnapshot,
  insertSnapshot,
  readEnvelope,
} from "../history/timeline.ts";
import { type TrustPolicy, verifySnapshot } from "../history/verify.ts";
import { quarantineBranch } from "../share/import.ts";
import { type Backend, mapLimit, type ObjectInfo } from "./backend.ts";
import {
  checkMarker,
  decodeObject,
  DEFLATE_MAX_BYTES,
  MARKER_KEY,
  MAX_MARKER_BYTES,
  maxEncodedBytes,
  OBJECT_DEFLATE,
  OBJECT_RAW,
  objectKey,
  parseRefKey,
  type RefKey,
  snapshotKey,
} from "./layout.ts";
import {
  checkRefRecord,
  MAX_REF_BYTES,
  parseRefRecord,
  type RefRecord,
} from "../format/ref_record.ts";
import { CountingBackend, readRefState, writeRefState } from "./_state.ts";
import { Spool, type SpoolRange } from "./_spool.ts";
import { packKey } from "./pack.ts";
import {
  cacheIndexes,
  loadRemoteIndex,
  type PackedLocation,
  type RemoteIndex,
} from "./_remote_index.ts";

/** The local branch that tracks signer `keyId`'s `branch` on `remote`. */
export function trackingBranch(remote: string, keyId: string, branch: string): string {
  return `${remote}/${keyId}/${branch}`;
}

/** Options of {@linkcode pull}. */
export interface PullOptions {
  /** Quarantine snapshots of unpinned signers too (still fully verified). */
  allowUntrusted?: boolean;
  /** Pull this one snapshot (full id) and its history instead of the remote's refs. */
  snapshot?: string;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /** Progress: a phase and counts. */
  onProgress?: (phase: string, done: number, total: number) => void;
  /** Most bytes received in all (default {@linkcode PULL_MAX_BYTES}). */
  maxBytes?: number;
}

/**
 * The most a pull (or clone) receives in all, 256 GiB, and keeps of
 * envelopes in memory, 1 GiB: beyond either it stops (exit 1), nothing
 * landed. With the listing bounds (`LIST_BOUNDS`) and the history bound
 * (1,000,000 snapshots) no remote can make a pull run or grow without end.
 */
export const PULL_MAX_BYTES: number = 256 * 1024 ** 3;
/** Most envelope bytes a pull holds in memory. */
export const PULL_MAX_ENVELOPE_BYTES: number = 1024 ** 3;

/** A pack at most this large is fetched whole, however little of it is wanted. */
export const RANGE_MIN_PACK_BYTES: number = 256 * 1024;
/** The most a pull fetches ahead, in small packs, before it knows it needs them. */
export const PREFETCH_MAX_BYTES: number = 32 * 1024 * 1024;
/** Wanted objects at most this far apart in a pack are fetched in one range. */
export const RANGE_GAP_BYTES: number = 64 * 1024;

/** What became of one ref. */
export type PulledStatus = "updated" | "unchanged" | "stale" | "untrusted" | "refused";

/** One ref of the remote and what pull did with it. */
export interface PulledRef {
  /** Signer key id. */
  keyId: string;
  /** Session (from the record). */
  session: string;
  /** Branch on the signer's side. */
  branch: string;
  /** Sequence number of the record read (null when it could not be read). */
  seq: number | null;
  /** Head it names (null when it could not be read). */
  head: string | null;
  /** When the signer signed it (its clock), or null. */
  createdAt: string | null;
  /** The local quarantine branch (in `session`). */
  localBranch: string;
  /** Outcome. */
  status: PulledStatus;
  /** Why it was stale, untrusted or refused; null otherwise. */
  reason: string | null;
  /**
   * Whether the trust policy accepts the ref's signer (its record's full
   * public key is pinned). An unpinned signer's ref lands only with
   * `--allow-untrusted`, and `clone` never checks it out.
   */
  trusted: boolean;
}

/** What {@linkcode pull} did. */
export interface PullResult {
  /** The remote's location. */
  location: string;
  /** Whether the remote holds a ctxsnap layout at all. */
  initialized: boolean;
  /** Every ref seen. */
  refs: PulledRef[];
  /** Snapshots that landed, and those already here. */
  snapshots: { fetched: number; present: number };
  /** Objects that landed. */
  objects: { fetched: number };
  /** Bytes of objects received. */
  bytesReceived: number;
  /** Requests made. */
  requests: number;
  /** The `pull` operation recorded, or null when nothing landed. */
  operation: string | null;
  /** For a snapshot pull: the snapshot and the branch it landed on. */
  snapshot: { id: string; session: string; branch: string } | null;
}

/** A failure confined to one ref: it is refused, the others go on. */
class RefRefused extends Error {}

interface Staged {
  kind: "tree" | "blob";
  size: number;
  /** How the bytes are staged: raw, or DEFLATE accepted as the store would store it. */
  encoding: "raw" | "deflate";
  range: SpoolRange;
}

interface Plan {
  ref: PulledRef;
  record: RefRecord | null;
  recordHash: string | null;
  /** Envelopes to land, newest first. */
  chain: Envelope[];
  /** Objects to land. */
  objects: Set<string>;
}

/** Pulls from `backend` into `store`, naming local branches after `remoteName`. */
export async function pull(
  store: Store,
  inner: Backend,
  trust: TrustPolicy,
  remoteName: string,
  options: PullOptions = {},
): Promise<PullResult> {
  const backend = new CountingBackend(inner, options.maxBytes ?? PULL_MAX_BYTES);
  const allowUntrusted = options.allowUntrusted === true;
  const concurrency = options.concurrency ?? 8;
  const progress = options.onProgress ?? (() => {});
  const result: PullResult = {
    location: inner.location,
    initialized: false,
    refs: [],
    snapshots: { fetched: 0, present: 0 },
    objects: { fetched: 0 },
    bytesReceived: 0,
    requests: 0,
    operation: null,
    snapshot: null,
  };
  // The refs are listed while the marker is read (the listing is used only if it checks).
  const refListing = options.snapshot === undefined ? backend.list("refs/") : null;
  refListing?.catch(() => {});
  const marker = await backend.get(MARKER_KEY, MAX_MARKER_BYTES);
  if (marker === null) {
    if (options.snapshot !== undefined) {
      throw new NotFoundError(`The remote ${quote(inner.location)} holds no ctxsnap snapshots`);
    }
    return finish(result, backend);
  }
  checkMarker(marker, inner.location);
  result.initialized = true;

  const spool = new Spool(store);
  try {
    const envelopes = new Map<string, Envelope>(); // fetched and verified, by id
    let envelopeBytesHeld = 0;
    const staged = new Map<string, Staged>(); // verified objects, by id
    const plans: Plan[] = [];

    /** Fetches and checks one envelope; null when the remote has none. */
    const fetchEnvelope = async (id: string): Promise<Envelope | null> => {
      const known = envelopes.get(id);
      if (known !== undefined) return known;
      const bytes = await backend.get(snapshotKey(id), MAX_ENVELOPE_BYTES);
      if (bytes === null) return null;
      envelopeBytesHeld += bytes.byteLength;
      if (envelopeBytesHeld > PULL_MAX_ENVELOPE_BYTES) {
        throw new CtxsnapError(
          `The remote's snapshots take more than ${PULL_MAX_ENVELOPE_BYTES} bytes; nothing was kept`,
          "failure",
          { hint: "pull one snapshot at a time (`pull NAME ID`), or check the remote" },
        );
      }
      let envelope: Envelope;
      try {
        envelope = parseEnvelope(bytes);
      } catch (error) {
        throw new RefRefused(
          `snapshot ${id.slice(0, 12)} is malformed: ${(error as Error).message}`,
        );
      }
      const canonical = envelopeBytes(envelope);
      if (canonical.byteLength !== bytes.byteLength || !canonical.every((b, i) => b === bytes[i])) {
        throw new RefRefused(`snapshot ${id.slice(0, 12)} is not in canonical form`);
      }
      if (envelope.id !== id) {
        throw new RefRefused(
          `the remote returned snapshot ${envelope.id.slice(0, 12)} for ${id.slice(0, 12)}`,
        );
      }
      const check = await checkEnvelope(envelope);
      if (!check.idMatches) {
        throw new RefRefused(`snapshot ${id.slice(0, 12)} does not hash to its id`);
      }
      if (!check.signatureValid) {
        throw new RefRefused(`the signature of snapshot ${id.slice(0, 12)} does not verify`);
      }
      envelopes.set(id, envelope);
      return envelope;
    };

    /** What a staged tree object holds itself: its version, files, bytes, blobs and subtrees. */
    const treeInfo = new Map<string, {
      version: 1 | 2;
      empty: boolean;
      files: number;
      bytes: number;
      blobs: [string, number][];
      subtrees: string[];
    }>();

    /** The remote's pack indexes, read once, when an object is first needed. */
    let remoteIndex: Promise<RemoteIndex> | null = null;
    const located = async (id: string): Promise<PackedLocation | undefined> => {
      remoteIndex ??= loadRemoteIndex(backend, concurrency, store);
      return (await remoteIndex).byId.get(id);
    };
    /** Why an object is missing: the remote lacks it, or lacks it but for a refused index. */
    const lacks = async (what: string): Promise<string> => {
      const refused = remoteIndex === null ? [] : (await remoteIndex).refused;
      return refused.length === 0
        ? `the remote lacks ${what}`
        : `the remote lacks ${what} (pack index refused: ${refused[0]!.reason})`;
    };
    /** Packs fetched whole and verified, by id (a rejected promise keeps its refusal). */
    const packs = new Map<string, Promise<Uint8Array>>();
    const fetchPack = (where: PackedLocation): Promise<Uint8Array> => {
      let promise = packs.get(where.pack);
      if (promise === undefined) {
        promise = (async () => {
          const name = `pack ${where.pack.slice(0, 12)}`;
          const bytes = await backend.get(packKey(where.pack), where.packLength).catch((error) => {
            if (error instanceof IntegrityError) {
              throw new RefRefused(`${name}: ${error.message}`);
            }
            throw error;
          });
          if (bytes === null) throw new RefRefused(await lacks(name));
          if (bytes.byteLength !== where.packLength || sha256Hex(bytes) !== where.pack) {
            throw new RefRefused(`${name} is truncated or does not hash to its id`);
          }
          return bytes;
        })();
        promise.catch(() => {}); // awaited by every caller; never unhandled
        packs.set(where.pack, promise);
      }
      return promise;
    };
    /**
     * Starts reading the indexes, and fetching the small packs of indexes new
     * to this store that hold objects it lacks (up to PREFETCH_MAX_BYTES in
     * all), while the refs and envelopes are read: what an incremental pull
     * needs arrives in one round. Failures surface where the objects are used.
     */
    const prefetch = (): void => {
      remoteIndex ??= loadRemoteIndex(backend, concurrency, store);
      remoteIndex.then((index) => {
        let budget = PREFETCH_MAX_BYTES;
        for (const pack of index.fetched.keys()) {
          const { packLength, entries } = index.packs.get(pack)!;
          if (packLength > RANGE_MIN_PACK_BYTES || packLength > budget) continue;
          if (entries.every((entry) => store.hasObject(entry.id))) continue;
          budget -= packLength;
          fetchPack({ pack, packLength, entry: entries[0]! });
        }
      }).catch(() => {});
    };

    /** An object's encoded bytes from its verified pack, its kind checked against the index. */
    const packedObject = async (
      where: PackedLocation,
      kind: "blob" | "tree",
    ): Promise<Uint8Array> => {
      const { entry } = where;
      if (entry.kind !== kind) {
        throw new RefRefused(
          `pack ${where.pack.slice(0, 12)} files ${kind} ${
            entry.id.slice(0, 12)
          } as a ${entry.kind}`,
        );
      }
      const pack = await fetchPack(where);
      return pack.subarray(entry.offset, entry.offset + entry.length);
    };

    /** Fetches, checks and stages one tree object (false when the remote lacks it). */
    const fetchTree = async (id: string): Promise<boolean> => {
      const where = await located(id);
      const encoded = where !== undefined
        ? await packedObject(where, "tree")
        : await backend.get(objectKey(id), maxEncodedBytes(MAX_TREE_BYTES));
      if (encoded === null) return false;
      let bytes: Uint8Array;
      try {
        bytes = decodeObject(encoded, "tree", MAX_TREE_BYTES);
      } catch (error) {
        throw new RefRefused(`tree ${id.slice(0, 12)}: ${(error as Error).message}`);
      }
      if (where !== undefined && bytes.byteLength !== where.entry.size) {
        throw new RefRefused(
          `tree ${
            id.slice(0, 12)
          } has ${bytes.byteLength} bytes, its pack index says ${where.entry.size}`,
        );
      }
      if (sha256Hex(bytes) !== id) {
        throw new RefRefused(`tree ${id.slice(0, 12)} does not hash to its id`);
      }
      try {
        const tree = parseTreeObject(bytes);
        let files = 0;
        let total = 0;
        const blobs: [string, number][] = [];
        const subtrees: string[] = [];
        for (const entry of tree.entries) {
          if (entry.type === "file") {
            files += 1;
            total += entry.size;
            blobs.push([entry.blob, entry.size]);
          } else if (entry.type === "tree") subtrees.push(entry.tree);
        }
        treeInfo.set(id, {
          version: tree.version,
          empty: tree.entries.length === 0 && tree.skipped.length === 0,
          files,
          bytes: total,
          blobs,
          subtrees,
        });
      } catch (error) {
        throw new RefRefused(`tree ${id.slice(0, 12)} is invalid: ${(error as Error).message}`);
      }
      staged.set(id, {
        kind: "tree",
        size: bytes.byteLength,
        encoding: "raw",
        range: spool.append(bytes),
      });
      return true;
    };

    /** The staged trees `root` reaches (the store's own are complete there). */
    const reachedStaged = (root: string): string[] => {
      const out: string[] = [];
      const seen = new Set<string>();
      const stack = [root];
      while (stack.length > 0) {
        const id = stack.pop()!;
        const info = treeInfo.get(id);
        if (info === undefined || seen.has(id)) continue;
        seen.add(id);
        out.push(id);
        stack.push(...info.subtrees);
      }
      return out;
    };

    /** Totals of local trees (complete in the store), by id. */
    const localTotals = new Map<string, { files: number; bytes: number }>();
    /**
     * The files and bytes below staged tree `id`, checking its subtrees are
     * non-empty version 2 trees; adds the blobs the store lacks to `blobs`.
     */
    const stagedTotals = (
      id: string,
      memo: Map<string, { files: number; bytes: number }>,
      blobs: Map<string, number>,
    ): { files: number; bytes: number } => {
      const known = memo.get(id);
      if (known !== undefined) return known;
      const info = treeInfo.get(id)!;
      let files = info.files;
      let bytes = info.bytes;
      for (const [blob, size] of info.blobs) blobs.set(blob, size);
      for (const sub of info.subtrees) {
        const child = treeInfo.get(sub);
        let totals: { files: number; bytes: number };
        if (child === undefined) {
          totals = localTotals.get(sub) ?? treeTotals(store.getTree(sub));
          localTotals.set(sub, totals);
        } else {
          if (child.version !== 2) {
            throw new RefRefused(
              `tree ${id.slice(0, 12)} names a subtree that is not a version 2 tree`,
            );
          }
          if (child.empty) throw new RefRefused(`tree ${id.slice(0, 12)} names an empty subtree`);
          totals = stagedTotals(sub, memo, blobs);
        }
        files += totals.files;
        bytes += totals.bytes;
      }
      const out = { files, bytes };
      memo.set(id, out);
      return out;
    };

    /** Checks a blob's decoded bytes and stages them (keeping DEFLATE where the store would). */
    const stageBlob = (id: string, size: number, encoded: Uint8Array): void => {
      let bytes: Uint8Array;
      try {
        bytes = decodeObject(encoded, "blob", size);
      } catch (error) {
        throw new RefRefused(`blob ${id.slice(0, 12)}: ${(error as Error).message}`);
      }
      if (sha256Hex(bytes) !== id) {
        throw new RefRefused(`blob ${id.slice(0, 12)} does not hash to its id`);
      }
      // Keep the remote's DEFLATE form when the store would keep a compressed row anyway.
      const keepPacked = encoded[0] === OBJECT_DEFLATE && size <= INLINE_BLOB_MAX &&
        size >= COMPRESS_MIN_BYTES && packPays(size, encoded.byteLength - 1);
      staged.set(id, {
        kind: "blob",
        size,
        encoding: keepPacked ? "deflate" : "raw",
        range: spool.append(keepPacked ? encoded.subarray(1) : bytes),
      });
    };

    /** Fetches one pack's blobs of `wanted` (id, size), checks and stages each. */
    const fetchPackedBlobs = async (
      pack: string,
      wanted: [string, number, PackedLocation][],
    ): Promise<void> => {
      for (const [id, size, where] of wanted) {
        if (where.entry.size !== size) {
          throw new RefRefused(
            `pack ${pack.slice(0, 12)} gives blob ${
              id.slice(0, 12)
            } ${where.entry.size} bytes, its tree ${size}`,
          );
        }
      }
      const needed = wanted.filter(([id]) => !staged.has(id));
      const packLength = wanted[0]![2].packLength;
      const bytes = needed.reduce((n, [, , where]) => n + where.entry.length, 0);
      if (packs.has(pack) || bytes * 2 >= packLength || packLength <= RANGE_MIN_PACK_BYTES) {
        // Most of the pack is wanted (or it is small): one GET, the pack's hash checked.
        for (const [id, size, where] of needed) {
          if (staged.has(id)) continue;
          stageBlob(id, size, await packedObject(where, "blob"));
        }
        packs.delete(pack); // blobs are needed once: free the pack's memory
        return;
      }
      // A little of a large pack: ranged GETs of runs of wanted objects (gaps up to
      // RANGE_GAP_BYTES read through), each object then hashed against its id.
      const runs: [string, number, PackedLocation][][] = [];
      for (const item of [...needed].sort((a, b) => a[2].entry.offset - b[2].entry.offset)) {
        const run = runs.at(-1);
        const last = run?.at(-1)?.[2].entry;
        if (
          run !== undefined && last !== undefined &&
          item[2].entry.offset - (last.offset + last.length) <= RANGE_GAP_BYTES
        ) {
          run.push(item);
        } else runs.push([item]);
      }
      for (const run of runs) {
        const start = run[0]![2].entry.offset;
        const last = run.at(-1)![2].entry;
        const name = `pack ${pack.slice(0, 12)}`;
        const range = await backend.getRange(
          packKey(pack),
          start,
          last.offset + last.length - start,
        )
          .catch((error) => {
            if (error instanceof IntegrityError) {
              throw new RefRefused(`${name}: ${error.message}`);
            }
            throw error;
          });
        if (range === null) throw new RefRefused(await lacks(name));
        for (const [id, size, where] of run) {
          const at = where.entry.offset - start;
          stageBlob(id, size, range.subarray(at, at + where.entry.length));
        }
      }
    };

    /** Fetches, checks and stages one blob. */
    const fetchBlob = async (id: string, size: number): Promise<void> => {
      const key = objectKey(id);
      if (size > DEFLATE_MAX_BYTES) {
        // Large: streamed into the spool, raw only, hashed as it arrives.
        const hasher = createSha256();
        const sink = spool.reserve(size);
        let first = true;
        let total = 0;
        let found: boolean;
        try {
          found = await backend.getStream(key, size + 1, (chunk) => {
            let data = chunk;
            if (first) {
              first = false;
              if (data[0] !== OBJECT_RAW) {
                throw new RefRefused(`blob ${id.slice(0, 12)} is not stored raw`);
              }
              data = data.subarray(1);
            }
            hasher.update(data);
            total += data.byteLength;
            sink.write(data);
          });
        } catch (error) {
          if (error instanceof IntegrityError) {
            throw new RefRefused(`blob ${id.slice(0, 12)}: ${error.message}`);
          }
          throw error;
        }
        if (!found) {
          throw new RefRefused(`the remote lacks blob ${id.slice(0, 12)}`);
        }
        if (total !== size || hasher.digestHex() !== id) {
          throw new RefRefused(`blob ${id.slice(0, 12)} is truncated or does not hash to its id`);
        }
        staged.set(id, { kind: "blob", size, encoding: "raw", range: sink.end() });
        return;
      }
      const encoded = await backend.get(key, maxEncodedBytes(size)).catch((error) => {
        if (error instanceof IntegrityError) {
          throw new RefRefused(`blob ${id.slice(0, 12)}: ${error.message}`);
        }
        throw error;
      });
      if (encoded === null) throw new RefRefused(await lacks(`blob ${id.slice(0, 12)}`));
      stageBlob(id, size, encoded);
    };

    const failedObjects = new Map<string, string>();

    /** Resolves the chain from `head` and stages its content; throws RefRefused / UntrustedError. */
    const resolve = async (plan: Plan, head: string, signerKey: string | null): Promise<void> => {
      if (signerKey !== null) {
        // A ref names only its signer's snapshots, even one this store has already.
        const top = hasSnapshot(store, head)
          ? await readEnvelope(store, head)
          : await fetchEnvelope(head);
        if (top === null) throw new RefRefused(`the remote lacks snapshot ${head.slice(0, 12)}`);
        if (top.signature.public_key !== signerKey) {
          throw new RefRefused(
            `snapshot ${head.slice(0, 12)} is signed by another key than its ref`,
          );
        }
      }
      let cursor: string | null = head;
      const seen = new Set<string>();
      while (cursor !== null && !hasSnapshot(store, cursor) && !seen.has(cursor)) {
        seen.add(cursor);
        if (seen.size > 1_000_000) {
          throw new RefRefused("the history is longer than 1,000,000 snapshots");
        }
        const envelope = await fetchEnvelope(cursor);
        if (envelope === null) {
          if (cursor === head) {
            throw new RefRefused(`the remote lacks snapshot ${head.slice(0, 12)}`);
          }
          break; // the history pushed starts here (older snapshots were never sent)
        }
        const { key_id, public_key } = envelope.signature;
        if (!allowUntrusted && !trust.isTrusted(key_id, public_key)) {
          throw new UntrustedError(
            `snapshot ${cursor.slice(0, 12)} is signed by unpinned key ${key_id}`,
          );
        }
        plan.chain.push(envelope);
        progress("fetching snapshots", plan.chain.length, plan.chain.length);
        cursor = envelope.body.parent;
      }
      // Trees the store lacks, fetched concurrently and checked, then the blobs they name.
      const wanted = new Set<string>();
      for (const envelope of plan.chain) {
        const ref = envelope.body.workspace;
        if (ref === null || store.hasObject(ref.tree)) continue;
        if (failedObjects.has(ref.tree)) throw new RefRefused(failedObjects.get(ref.tree)!);
        if (!staged.has(ref.tree)) wanted.add(ref.tree);
      }
      // Level by level: a directory tree names subtrees, fetched unless here or staged.
      let level = [...wanted].map((id) => ({ id, depth: 0 }));
      while (level.length > 0) {
        const next: { id: string; depth: number }[] = [];
        await mapLimit(level, concurrency, async ({ id, depth }) => {
          try {
            if (!(await fetchTree(id))) {
              throw new RefRefused(await lacks(`tree ${id.slice(0, 12)}`));
            }
          } catch (error) {
            if (error instanceof RefRefused) failedObjects.set(id, error.message);
            throw error;
          }
          for (const sub of treeInfo.get(id)!.subtrees) {
            if (store.hasObject(sub) || staged.has(sub) || wanted.has(sub)) continue;
            if (failedObjects.has(sub)) throw new RefRefused(failedObjects.get(sub)!);
            if (depth + 1 > MAX_TREE_DEPTH) {
              throw new RefRefused(
                `tree ${id.slice(0, 12)} nests directories deeper than ${MAX_TREE_DEPTH}`,
              );
            }
            wanted.add(sub);
            next.push({ id: sub, depth: depth + 1 });
          }
        });
        level = next;
      }
      const blobs = new Map<string, number>();
      const memo = new Map<string, { files: number; bytes: number }>();
      for (const envelope of plan.chain) {
        const ref = envelope.body.workspace;
        if (ref === null || store.hasObject(ref.tree)) continue;
        const named = new Map<string, number>();
        const info = stagedTotals(ref.tree, memo, named);
        if (info.files !== ref.files || info.bytes !== ref.bytes) {
          throw new RefRefused(
            `tree ${ref.tree.slice(0, 12)} disagrees with the counts snapshot ${
              envelope.id.slice(0, 12)
            } signed`,
          );
        }
        for (const id of reachedStaged(ref.tree)) plan.objects.add(id);
        for (const [id, size] of named) {
          if (store.hasObject(id)) continue;
          plan.objects.add(id);
          if (!staged.has(id)) blobs.set(id, size);
        }
      }
      for (const id of blobs.keys()) {
        if (failedObjects.has(id)) throw new RefRefused(failedObjects.get(id)!);
      }
      let done = 0;
      // Packed blobs by pack (each pack fetched once, whole), the others one key each.
      const byPack = new Map<string, [string, number, PackedLocation][]>();
      const list: [string, number][] = [];
      for (const [id, size] of blobs) {
        const where = await located(id);
        if (where === undefined) list.push([id, size]);
        else {
          const group = byPack.get(where.pack) ?? [];
          group.push([id, size, where]);
          byPack.set(where.pack, group);
        }
      }
      const total = blobs.size;
      await mapLimit([...byPack], Math.max(1, concurrency >> 1), async ([pack, wanted]) => {
        try {
          await fetchPackedBlobs(pack, wanted);
        } catch (error) {
          if (error instanceof RefRefused) {
            for (const [id] of wanted) failedObjects.set(id, error.message);
          }
          throw error;
        }
        done += wanted.length;
        progress("fetching objects", done, total);
      });
      await mapLimit(list, concurrency, async ([id, size]) => {
        try {
          await fetchBlob(id, size);
        } catch (error) {
          if (error instanceof RefRefused) failedObjects.set(id, error.message);
          throw error;
        }
        progress("fetching objects", ++done, total);
      });
    };

    const runPlan = async (plan: Plan, head: string, signerKey: string | null) => {
      try {
        await resolve(plan, head, signerKey);
        plan.ref.status = "updated";
        plans.push(plan);
      } catch (error) {
        // IntegrityError: a remote object over its bound, or unsafe in a shared directory.
        if (error instanceof RefRefused || error instanceof IntegrityError) {
          plan.ref.status = "refused";
          plan.ref.reason = error.message;
        } else if (error instanceof UntrustedError) {
          plan.ref.status = "untrusted";
          plan.ref.reason = error.message;
        } else throw error;
      }
    };

    if (options.snapshot !== undefined) {
      const id = options.snapshot;
      const ref: PulledRef = {
        keyId: "",
        session: "",
        branch: "",
        seq: null,
        head: id,
        createdAt: null,
        localBranch: "",
        status: "updated",
        reason: null,
        trusted: false,
      };
      const plan: Plan = { ref, record: null, recordHash: null, chain: [], objects: new Set() };
      if (hasSnapshot(store, id)) {
        throw new CtxsnapError(`Snapshot ${quote(id)} is in this store already`, "conflict");
      }
      prefetch();
      await runPlan(plan, id, null);
      const head = plan.chain[0];
      if (head !== undefined) {
        ref.keyId = head.signature.key_id;
        ref.session = head.body.session;
        ref.branch = head.body.branch;
        ref.localBranch = quarantineBranch(head.signature.key_id);
        ref.createdAt = head.body.created_at;
        ref.trusted = trust.isTrusted(head.signature.key_id, head.signature.public_key);
      }
      result.refs.push(ref);
    } else {
      // The indexes are listed while the ref records are read, once the listing
      // shows a pinned signer's record newer than the one this store accepted.
      const refs = await readRefs(
        store,
        backend,
        trust,
        remoteName,
        allowUntrusted,
        refListing!,
        () => {
          remoteIndex ??= loadRemoteIndex(backend, concurrency, store);
          remoteIndex.catch(() => {}); // awaited where an object is needed
        },
      );
      if (refs.some((ref) => ref.record !== null)) prefetch();
      for (const ref of refs) {
        result.refs.push(ref.ref);
        if (ref.record === null) continue;
        await runPlan(
          { ref: ref.ref, record: ref.record, recordHash: ref.hash, chain: [], objects: new Set() },
          ref.record.head,
          ref.record.public_key,
        );
      }
    }

    if (plans.length > 0) {
      // Indexes read are cached as the objects land (nothing is written otherwise).
      const index = remoteIndex === null ? null : await remoteIndex;
      await land(store, trust, remoteName, plans, staged, spool, result, allowUntrusted, index);
    }
    return finish(result, backend);
  } finally {
    spool.close();
  }
}

function finish(result: PullResult, backend: CountingBackend): PullResult {
  result.bytesReceived = backend.traffic.received;
  result.requests = backend.traffic.requests;
  return result;
}

interface ReadRef {
  ref: PulledRef;
  record: RefRecord | null;
  hash: string | null;
}

/**
 * Lists the remote's refs, reads and checks the newest record of each;
 * calls `onNewer` first when the listing shows a pinned signer's record newer
 * than the one this store accepted (so the caller can start reading indexes).
 */
async function readRefs(
  store: Store,
  backend: Backend,
  trust: TrustPolicy,
  remoteName: string,
  allowUntrusted: boolean,
  listing: Promise<ObjectInfo[]>,
  onNewer: () => void,
): Promise<ReadRef[]> {
  const newest = new Map<string, RefKey>();
  for (const info of await listing) {
    const key = parseRefKey(info.key);
    if (key === null) continue; // not a ref record: ignored
    const group = `${key.keyId}\0${key.session}\0${key.branch}`;
    const best = newest.get(group);
    if (
      best === undefined || key.seq > best.seq || (key.seq === best.seq && key.hash16 > best.hash16)
    ) {
      newest.set(group, key);
    }
  }
  const newer = [...newest.values()].some((key) => {
    if (!allowUntrusted && !trust.isTrusted(key.keyId)) return false;
    const state = readRefState(store, remoteName, key.keyId, key.session, key.branch);
    return state === null || key.seq > state.seq;
  });
  if (newer) onNewer();
  const out: ReadRef[] = [];
  for (const key of [...newest.values()].sort((a, b) => (a.key < b.key ? -1 : 1))) {
    const ref: PulledRef = {
      keyId: key.keyId,
      session: key.session,
      branch: key.branch,
      seq: key.seq,
      head: null,
      createdAt: null,
      localBranch: trackingBranch(remoteName, key.keyId, key.branch),
      status: "refused",
      reason: null,
      trusted: false,
    };
    const entry: ReadRef = { ref, record: null, hash: null };
    out.push(entry);
    if (!allowUntrusted && !trust.isTrusted(key.keyId)) {
      ref.status = "untrusted";
      ref.reason = `signer ${key.keyId} is not pinned`;
      continue;
    }
    const bytes = await backend.get(key.key, MAX_REF_BYTES).catch((error) => {
      if (error instanceof IntegrityError) return new Uint8Array(); // too large: refused below
      throw error;
    });
    if (bytes === null) {
      ref.reason = "the ref record it lists cannot be read";
      continue;
    }
    let record: RefRecord;
    try {
      record = parseRefRecord(bytes);
    } catch (error) {
      ref.reason = `the ref record is invalid: ${(error as Error).message}`;
      continue;
    }
    const hash = sha256Hex(bytes);
    if (
      record.key_id !== key.keyId || record.session !== key.session ||
      record.branch !== key.branch || record.seq !== key.seq || !hash.startsWith(key.hash16)
    ) {
      ref.reason = `the ref record does not match its key (it is signer ${record.key_id}'s ${
        quote(`${record.session}/${record.branch}`)
      } #${record.seq})`;
      continue;
    }
    if (!(await checkRefRecord(record))) {
      ref.reason = "the signature of the ref record does not verify";
      continue;
    }
    ref.head = record.head;
    ref.createdAt = record.created_at;
    ref.trusted = trust.isTrusted(record.key_id, record.public_key);
    if (!allowUntrusted && !trust.isTrusted(record.key_id, record.public_key)) {
      ref.status = "untrusted";
      ref.reason = `signer ${key.keyId} is not pinned (another key has its id)`;
      continue;
    }
    const state = readRefState(store, remoteName, key.keyId, key.session, key.branch);
    if (
      state !== null &&
      (record.seq < state.seq || (record.seq === state.seq && hash !== state.record))
    ) {
      ref.status = "stale";
      ref.reason =
        `the remote shows record #${record.seq}; this store already accepted #${state.seq}`;
      continue;
    }
    const local = getBranch(store, key.session, ref.localBranch);
    if (
      state !== null && record.seq === state.seq && local?.head === record.head &&
      hasSnapshot(store, record.head)
    ) {
      ref.status = "unchanged";
      continue;
    }
    entry.record = record;
    entry.hash = hash;
  }
  return out;
}

/** Lands every plan in one transaction, verifying each new snapshot from the store. */
async function land(
  store: Store,
  trust: TrustPolicy,
  remoteName: string,
  plans: Plan[],
  staged: Map<string, Staged>,
  spool: Spool,
  result: PullResult,
  allowUntrusted: boolean,
  index: RemoteIndex | null,
): Promise<void> {
  await store.transactionAsync("pull", async () => {
    if (index !== null) cacheIndexes(store, index);
    const inserted = new Set<string>();
    const landed: string[] = [];
    let present = 0;
    for (const plan of plans) {
      for (const id of plan.objects) {
        if (inserted.has(id) || store.hasObject(id)) continue;
        const item = staged.get(id);
        if (item === undefined) throw new IntegrityError(`Object ${quote(id)} was not staged`);
        landObject(store, spool, id, item);
        inserted.add(id);
      }
      for (const envelope of [...plan.chain].reverse()) {
        if (insertSnapshot(store, envelope, true)) landed.push(envelope.id);
        else if (hasSnapshot(store, envelope.id)) present++;
        else throw new IntegrityError(`Snapshot ${quote(envelope.id)} could not be recorded`);
      }
    }
    // The same check as `ctxsnap verify ID`, now reading from the store.
    const seen = new Map<string, boolean>();
    for (const id of landed) {
      // (A snapshot the remote had no tree for verifies as imported without content.)
      const report = await verifySnapshot(store, id, trust, seen);
      if (!report.valid) {
        throw new IntegrityError(
          `Snapshot ${quote(id)} does not verify after landing: ${report.problems.join("; ")}`,
        );
      }
      if (!report.trusted && !allowUntrusted) {
        throw new UntrustedError(`Snapshot ${quote(id)} is not signed by a pinned key`);
      }
    }
    const operationRefs: { key_id: string; session: string; branch: string; head: string }[] = [];
    // The branch moves are one undoable `pull` operation.
    const pending = beginChange(store, plans.map((p) => p.record?.session ?? p.ref.session));
    for (const plan of plans) {
      const ref = plan.ref;
      const head = plan.record?.head ?? ref.head!;
      const session = plan.record?.session ?? ref.session;
      assertResolved(store, session);
      ensureBranch(store, session, ref.localBranch);
      setBranchHead(store, session, ref.localBranch, head);
      if (plan.record !== null && plan.recordHash !== null) {
        writeRefState(
          store,
          remoteName,
          plan.record.key_id,
          plan.record.session,
          plan.record.branch,
          {
            seq: plan.record.seq,
            record: plan.recordHash,
            head,
          },
        );
      } else {
        result.snapshot = { id: head, session, branch: ref.localBranch };
      }
      operationRefs.push({ key_id: ref.keyId, session, branch: ref.localBranch, head });
    }
    result.operation = endChange(store, pending, {
      kind: "pull",
      plan: { remote: remoteName, refs: operationRefs, snapshots: landed, objects: inserted.size },
    }, { always: true });
    result.snapshots = { fetched: landed.length, present };
    result.objects = { fetched: inserted.size };
  });
}

function landObject(store: Store, spool: Spool, id: string, item: Staged): void {
  if (item.kind === "tree") {
    const bytes = spool.read(item.range);
    if (sha256Hex(bytes) !== id) throw new IntegrityError(`Staged tree ${quote(id)} changed`);
    parseTreeObject(bytes); // checked when staged; checked again as it lands
    store.putTreeBytes(id, bytes);
    return;
  }
  if (item.size > INLINE_BLOB_MAX) {
    const temp = store.tempPath();
    const fd = fs.openSync(
      temp,
      fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW,
      0o600,
    );
    try {
      spool.copyTo(item.range, fd);
      fs.fsyncSync(fd);
    } catch (error) {
      fs.closeSync(fd);
      fs.rmSync(temp, { force: true });
      throw error;
    }
    fs.closeSync(fd);
    store.adoptBlobFile(temp, id, item.size); // verified below by verifySnapshot
    return;
  }
  const bytes = spool.read(item.range);
  if (item.encoding === "deflate") store.putPackedBlob(id, item.size, "deflate", bytes);
  else store.putBlob(bytes, id);
}
