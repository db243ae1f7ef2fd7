/**
 * `push`: uploads snapshots to a remote in an order that keeps the remote
 * consistent at every instant, so a push killed anywhere leaves nothing a
 * reader could mistake for complete, and a rerun finishes the job:
 *
 * 1. objects (trees, blobs) that the remote lacks, each verified from the
 *    store before it leaves: small ones packed (`pack.ts`; trees in packs
 *    of their own unless the push is small, each pack before its index), large ones under
 *    their own keys, in parts;
 * 2. then the envelopes, oldest first (an envelope on the remote means its
 *    objects and its ancestors' are there);
 * 3. last, one signed ref record per branch (FORMAT.md §13).
 *
 * What the remote already has is found without listing everything: walking
 * each branch down from its head, the first snapshot the remote has (a HEAD
 * request) ends the walk; the objects of that snapshot's tree are known to
 * be there; of the others, whatever a pack index names is there (the
 * indexes are read once and cached in the store), and the rest are looked
 * for under `objects/` (a listing; HEAD probes of a few on a v1 remote).
 * So anything a teammate already pushed, packed or not, is never sent again.
 *
 * Only branches whose head this machine's key signed are pushed, and never a
 * quarantine branch (`imported/…`, `<remote>/…`). A snapshot whose tree this
 * store lacks (an envelope-only import) is refused: a remote only ever holds
 * whole snapshots.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { createSnapshot } from "../history/create.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * import { FileBackend } from "./file_backend.ts";
 * import { push } from "./push.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "a\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await createSnapshot(store, me, {});
 * const remote = await Deno.makeTempDir();
 * const result = await push(store, new FileBackend(remote), me, "origin", { kind: "current" });
 * if (result.refs[0]?.status !== "updated" || result.objects.uploaded !== 2) {
 *   throw new Error(JSON.stringify(result));
 * }
 * store.close();
 * ```
 * @module
 */
import type * as NodeZlib from "node:zlib";
import { BusyError, IntegrityError, NotFoundError, quote, UsageError } from "../errors.ts";
import { createSha256, sha256Hex } from "../crypto/hash.ts";
import { builtin } from "../runtime.ts";
import type { Store } from "../repository/store.ts";
import { reachableObjects } from "../repository/reach.ts";
import { type Envelope, envelopeBytes, type Signer } from "../format/envelope.ts";
import {
  branchChain,
  currentSelection,
  getBranch,
  isTrackingBranchName,
  listBranches,
  readEnvelope,
  readEnvelopeUnverified,
} from "../history/timeline.ts";
import { type Backend, mapLimit, type ObjectInfo } from "./backend.ts";
import {
  checkMarker,
  encodeObject,
  MARKER_KEY,
  markerBytes,
  MAX_MARKER_BYTES,
  MULTIPART_THRESHOLD,
  OBJECT_DEFLATE,
  OBJECT_RAW,
  objectKey,
  parseObjectKey,
  parseRefKey,
  PART_SIZE,
  refKey,
  refPrefix,
  REMOTE_FORMAT,
  REMOTE_FORMAT_V1,
  snapshotKey,
  withTag,
} from "./layout.ts";
import {
  checkRefRecord,
  MAX_REF_BYTES,
  parseRefRecord,
  signRefRecord,
} from "../format/ref_record.ts";
import { CountingBackend, readRefState, writeRefState } from "./_state.ts";
import { type FinishedPack, indexKey, PACK_OBJECT_MAX_BYTES, packKey, PackWriter } from "./pack.ts";
import { cacheIndexes, loadRemoteIndex, type RemoteIndex } from "./_remote_index.ts";

function emptyIndex(): RemoteIndex {
  return { byId: new Map(), packs: new Map(), refused: [], fetched: new Map() };
}

/** A push of at most this many raw bytes of objects puts trees and blobs in one pack. */
export const MIXED_PACK_MAX_BYTES: number = 256 * 1024;

/** Up to this many objects are probed one by one (HEAD); more, and `objects/` is listed. */
export const PROBE_LIMIT = 32;

/** What to push. */
export type PushTarget =
  | { kind: "current" }
  | { kind: "branch"; session: string; branch: string }
  | { kind: "all" }
  | { kind: "snapshot"; id: string };

/** Options of {@linkcode push}. */
export interface PushOptions {
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /** Progress: a phase and counts. */
  onProgress?: (phase: string, done: number, total: number) => void;
  /**
   * Write one object per key, as releases before packs did (the v1 layout;
   * a v1 marker on an empty remote). For compatibility tests; off by default.
   */
  loose?: boolean;
}

/** One ref written (or found up to date). */
export interface PushedRef {
  /** Session. */
  session: string;
  /** Branch. */
  branch: string;
  /** The head the remote now names. */
  head: string;
  /** The ref record's sequence number. */
  seq: number;
  /** `updated` (a new record) or `unchanged`. */
  status: "updated" | "unchanged";
}

/** What {@linkcode push} did. */
export interface PushResult {
  /** The remote's location. */
  location: string;
  /** Refs written or already current (none for a snapshot push). */
  refs: PushedRef[];
  /** Branches left out, with the reason. */
  skipped: { session: string; branch: string; reason: string }[];
  /** Snapshots uploaded, and those the remote had. */
  snapshots: { uploaded: number; present: number };
  /** Objects uploaded, and those the remote had. */
  objects: { uploaded: number; present: number };
  /** Packs uploaded (each with its index). */
  packs: number;
  /** Bytes of request bodies sent. */
  bytesSent: number;
  /** Requests made. */
  requests: number;
}

let zlibModule: typeof NodeZlib | undefined;
function zlib(): typeof NodeZlib {
  return zlibModule ??= builtin<typeof NodeZlib>("node:zlib");
}

/** Branch names never pushed: quarantine branches of imports and of remotes. */
function isQuarantine(branch: string): boolean {
  return branch.startsWith("imported/") || isTrackingBranchName(branch);
}

interface BranchPlan {
  session: string;
  branch: string;
  head: string;
  /** The listing of the remote's records of this branch, started early. */
  listing?: Promise<ObjectInfo[]>;
}

function selectBranches(
  store: Store,
  signer: Signer,
  target: PushTarget,
  skipped: PushResult["skipped"],
): BranchPlan[] {
  const ownHead = (head: string): boolean => {
    // Only picks branches: every envelope sent is read verified below.
    const envelope = readEnvelopeUnverified(store, head);
    return envelope.signature.public_key === signer.publicKeyHex;
  };
  if (target.kind === "all") {
    const plans: BranchPlan[] = [];
    for (const row of listBranches(store)) {
      if (row.head === null) continue;
      if (isQuarantine(row.name)) continue;
      if (!ownHead(row.head)) {
        skipped.push({ session: row.session, branch: row.name, reason: "signed_by_another_key" });
        continue;
      }
      plans.push({ session: row.session, branch: row.name, head: row.head });
    }
    return plans;
  }
  if (target.kind === "snapshot") return [];
  const { session, branch } = target.kind === "current" ? currentSelection(store) : target;
  const row = getBranch(store, session, branch);
  if (row === null || row.head === null) {
    throw new NotFoundError(`Branch ${quote(`${session}/${branch}`)} has no snapshot to push`, {
      hint: "create one with `ctxsnap create`",
    });
  }
  if (isQuarantine(branch)) {
    throw new UsageError(`Branch ${quote(branch)} is a quarantine branch and is not pushed`, {
      hint: "push your own branches; others' snapshots stay with their signers",
    });
  }
  if (!ownHead(row.head)) {
    throw new UsageError(
      `The head of branch ${quote(branch)} is not signed by this machine's key`,
      { hint: "push sends only snapshots you signed; `ctxsnap push ID` uploads one without a ref" },
    );
  }
  return [{ session, branch, head: row.head }];
}

/**
 * Makes sure the remote carries a layout marker, writing one on an empty
 * remote (v2, or v1 when `loose`); returns the layout it had (null: none).
 */
export async function ensureMarker(backend: Backend, loose = false): Promise<1 | 2 | null> {
  const marker = await backend.get(MARKER_KEY, MAX_MARKER_BYTES);
  if (marker === null) {
    await backend.put(MARKER_KEY, markerBytes(loose ? REMOTE_FORMAT_V1 : REMOTE_FORMAT));
    return null;
  }
  return checkMarker(marker, backend.location);
}

/**
 * Uploads `objects` in packs (trees apart from blobs unless small), each
 * object read and verified from the store as it is added; an object too
 * large to pack goes up under its own key. A pack goes up before its index,
 * so an index names only bytes that are there. Returns the packs written
 * (their bytes are let go: only ids and indexes are kept).
 */
async function uploadPacked(
  store: Store,
  backend: Backend,
  objects: NeededObject[],
  concurrency: number,
  guarded: <T>(id: string, fn: () => Promise<T> | T) => Promise<T>,
  done: () => void,
): Promise<FinishedPack[]> {
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | null = null;
  const start = (task: () => Promise<void>) => {
    const promise: Promise<void> = task().catch((error) => {
      failure ??= { error };
    }).finally(() => inFlight.delete(promise));
    inFlight.add(promise);
  };
  const settle = async (limit: number) => {
    while (inFlight.size > limit) await Promise.race(inFlight);
    if (failure !== null) throw (failure as { error: unknown }).error;
  };
  const packs: FinishedPack[] = [];
  const ship = (writer: PackWriter) => {
    if (writer.count === 0) return;
    const pack = writer.finish();
    const count = writer.count;
    packs.push(pack);
    start(async () => {
      await backend.put(packKey(pack.id), pack.bytes);
      await backend.put(indexKey(pack.id), pack.index);
      pack.bytes = new Uint8Array();
      for (let i = 0; i < count; i++) done();
    });
  };
  // A small push (an incremental one, typically) sends one pack of trees and blobs
  // together; a larger one keeps trees in packs of their own, so a reader that needs
  // only a little of the blobs can read every tree without them.
  const rawBytes = objects.reduce(
    (n, o) => n + (o.kind === "blob" ? o.size : store.objectSize(o.id) ?? 0),
    0,
  );
  const groups: ("tree" | "blob")[][] = rawBytes <= MIXED_PACK_MAX_BYTES
    ? [["tree", "blob"]]
    : [["tree"], ["blob"]];
  const treesFirst = [...objects].sort((a, b) =>
    a.kind === b.kind ? 0 : a.kind === "tree" ? -1 : 1
  );
  for (const kinds of groups) {
    let writer = new PackWriter();
    for (const object of treesFirst) {
      const kind = object.kind;
      if (!kinds.includes(kind)) continue;
      if (kind === "blob" && object.size > PACK_OBJECT_MAX_BYTES) {
        await settle(concurrency - 1);
        start(async () => {
          await guarded(object.id, () => uploadObject(store, backend, object));
          done();
        });
        continue;
      }
      const encoded = await guarded(object.id, () => encodedObject(store, object, true));
      if (encoded.byteLength > PACK_OBJECT_MAX_BYTES) {
        await settle(concurrency - 1);
        start(async () => {
          await guarded(object.id, () => uploadObject(store, backend, object));
          done();
        });
        continue;
      }
      writer.add(object.id, kind, object.size, encoded);
      if (writer.full()) {
        await settle(Math.max(1, concurrency >> 1) - 1);
        ship(writer);
        writer = new PackWriter();
      }
    }
    ship(writer);
  }
  await settle(0);
  return packs;
}

interface NeededObject {
  id: string;
  kind: "tree" | "blob";
  size: number;
}

/**
 * Reads an object from the store, verified, and encodes it for the remote. A
 * blob going into a pack is compressed at level 6 (about 30 % smaller than the
 * store's level 1 on source text, for a little CPU once); a loose one is sent
 * in its stored form.
 */
function encodedObject(store: Store, object: NeededObject, packed = false): Uint8Array {
  if (object.kind === "tree") {
    const { bytes } = store.getTreeObject(object.id); // re-hashed and validated
    object.size = bytes.byteLength;
    return encodeObject(bytes, 6);
  }
  const row = store.storedInlineBlob(object.id);
  if (row !== null) {
    // Inline: verify, then send the stored form (no second compression).
    const bytes = row.encoding === "raw" ? row.data : (() => {
      try {
        const out = zlib().inflateRawSync(row.data, { maxOutputLength: Math.max(1, row.size) });
        return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
      } catch (error) {
        throw new IntegrityError(`Blob ${quote(object.id)} is corrupt in the store`, {
          cause: error,
        });
      }
    })();
    if (bytes.byteLength !== row.size || sha256Hex(bytes) !== object.id) {
      throw new IntegrityError(`Blob ${quote(object.id)} is corrupt in the store`, {
        hint: "run `ctxsnap verify --all`",
      });
    }
    if (packed) return encodeObject(bytes, 6);
    return row.encoding === "deflate"
      ? withTag(OBJECT_DEFLATE, row.data)
      : withTag(OBJECT_RAW, bytes);
  }
  return encodeObject(store.readBlob(object.id), packed ? 6 : 1);
}

/**
 * Uploads a large blob (a legacy object file or a chunked blob) in parts,
 * hashing as it reads; aborts if it does not verify.
 */
async function uploadLargeBlob(
  store: Store,
  backend: Backend,
  object: NeededObject,
): Promise<void> {
  const upload = await backend.startMultipart(objectKey(object.id));
  const pieces = store.blobPieces(object.id);
  try {
    const hasher = createSha256();
    const partSize = Math.max(PART_SIZE, backend.minPartSize);
    let part = 1;
    let total = 0;
    let buffer = new Uint8Array(partSize);
    buffer[0] = OBJECT_RAW;
    let filled = 1;
    // The store checks the whole blob's hash before its last piece is done.
    for (let next = pieces.next(); !next.done; next = pieces.next()) {
      let piece = next.value;
      hasher.update(piece);
      total += piece.byteLength;
      if (total > object.size) break;
      while (piece.byteLength > 0) {
        const take = Math.min(piece.byteLength, buffer.byteLength - filled);
        buffer.set(piece.subarray(0, take), filled);
        filled += take;
        piece = piece.subarray(take);
        if (filled === buffer.byteLength) {
          await upload.putPart(part++, buffer);
          buffer = new Uint8Array(partSize);
          filled = 0;
        }
      }
    }
    // Checked before the last part goes up, so a corrupt blob never completes.
    if (total !== object.size || hasher.digestHex() !== object.id) {
      throw new IntegrityError(`Blob ${quote(object.id)} is corrupt in the store`, {
        hint: "run `ctxsnap verify --all`",
      });
    }
    if (filled > 0) await upload.putPart(part++, buffer.subarray(0, filled));
    await upload.complete();
  } catch (error) {
    await upload.abort().catch(() => {});
    throw error;
  } finally {
    pieces.return();
  }
}

async function uploadObject(store: Store, backend: Backend, object: NeededObject): Promise<void> {
  const size = object.kind === "blob" ? store.objectSize(object.id) : null;
  if (object.kind === "blob" && size !== null && size > MULTIPART_THRESHOLD) {
    if (store.storedInlineBlob(object.id) === null) {
      await uploadLargeBlob(store, backend, { ...object, size });
      return;
    }
  }
  const encoded = encodedObject(store, object);
  if (encoded.byteLength > MULTIPART_THRESHOLD) {
    const upload = await backend.startMultipart(objectKey(object.id));
    try {
      const partSize = Math.max(PART_SIZE, backend.minPartSize);
      let part = 1;
      for (let at = 0; at < encoded.byteLength; at += partSize) {
        await upload.putPart(part++, encoded.subarray(at, at + partSize));
      }
      await upload.complete();
    } catch (error) {
      await upload.abort().catch(() => {});
      throw error;
    }
    return;
  }
  await backend.put(objectKey(object.id), encoded);
}

/**
 * The objects a snapshot's workspace needs that `seen` does not hold yet (its
 * trees and blobs; a subtree in `seen` is not descended), added to `seen`.
 * Null when its root tree is not here.
 */
function objectsOf(store: Store, envelope: Envelope, seen: Set<string>): NeededObject[] | null {
  const ref = envelope.body.workspace;
  if (ref === null) return [];
  if (!store.hasObject(ref.tree)) return null; // an envelope-only import: no content here
  const out: NeededObject[] = [];
  for (const object of reachableObjects(store, [ref.tree], { seen })) {
    out.push({ id: object.id, kind: object.kind, size: object.kind === "blob" ? object.size : 0 });
  }
  return out;
}

/**
 * Adds to `known` the subtrees and blobs that tree `next` shares with tree
 * `base` at the same paths, descending only into directories that differ
 * (O(changed paths), not O(files)). A flat (version 1) tree on either side
 * adds nothing: its objects are then looked up like any other.
 */
function knownShared(store: Store, base: string, next: string, known: Set<string>): void {
  if (base === next) {
    known.add(next);
    return;
  }
  const a = store.getTreeObject(base).tree;
  const b = store.getTreeObject(next).tree;
  if (a.version !== 2 || b.version !== 2) return;
  const before = new Map(a.entries.map((entry) => [entry.name, entry]));
  for (const entry of b.entries) {
    const old = before.get(entry.name);
    if (old === undefined) continue;
    if (entry.type === "tree" && old.type === "tree") {
      if (entry.tree === old.tree) known.add(entry.tree);
      else knownShared(store, old.tree, entry.tree, known);
    } else if (entry.type === "file" && old.type === "file" && entry.blob === old.blob) {
      known.add(entry.blob);
    }
  }
}

/** Pushes `target` to `backend`, signing ref records with `signer`. */
export async function push(
  store: Store,
  inner: Backend,
  signer: Signer,
  remoteName: string,
  target: PushTarget,
  options: PushOptions = {},
): Promise<PushResult> {
  const backend = new CountingBackend(inner);
  const concurrency = options.concurrency ?? 8;
  const loose = options.loose === true;
  let packs = 0;
  let remoteIndex: RemoteIndex | null = null;
  const progress = options.onProgress ?? (() => {});
  const skipped: PushResult["skipped"] = [];
  // What to send and the objects themselves are read from one committed
  // state of the store (DESIGN.md §3.4); the refs are written after.
  const { branches, toSend, envelopes, present, needed, missing } = await store.readAsync(
    async () => {
      const branches = selectBranches(store, signer, target, skipped);
      const heads = target.kind === "snapshot" ? [target.id] : branches.map((b) => b.head);
      // Reads that do not depend on each other go out together: the marker, the ref
      // listings (for step 3, read-only) and the walk below.
      const marker = ensureMarker(backend, loose);
      marker.catch(() => {});
      for (const plan of branches) {
        plan.listing = backend.list(refPrefix(signer.keyId, plan.session, plan.branch));
        plan.listing.catch(() => {});
      }

      // 1. Which snapshots the remote lacks: walk down each chain to the first it has.
      const onRemote = new Set<string>();
      const toSend: string[] = [];
      const sending = new Set<string>();
      const bases: string[] = [];
      let present = 0;
      for (const head of heads) {
        const chain = target.kind === "snapshot" ? chainFrom(store, head) : branchChain(
          store,
          branches.find((b) => b.head === head)!.session,
          branches.find((b) => b.head === head)!.branch,
        );
        const segment: string[] = [];
        // Probed two at a time (a new head and its parent, the usual case, in one round).
        walk: for (let at = 0; at < chain.length;) {
          const batch: string[] = [];
          for (const id of chain.slice(at, at + 2)) {
            if (onRemote.has(id) || sending.has(id)) break;
            batch.push(id);
          }
          const found = await Promise.all(
            batch.map(async (id) => (await backend.head(snapshotKey(id))) !== null),
          );
          for (const [i, id] of batch.entries()) {
            if (found[i]) {
              onRemote.add(id);
              bases.push(id);
              present++;
              break walk;
            }
            segment.push(id);
          }
          if (batch.length < 2) break; // the chain ends, or reaches what is being sent
          at += batch.length;
        }
        for (const id of segment.reverse()) {
          sending.add(id);
          toSend.push(id);
        }
      }

      // 2. Which objects they need that the remote lacks.
      const envelopes = new Map<string, Envelope>();
      for (const id of toSend) envelopes.set(id, await readEnvelope(store, id));
      const known = new Set<string>();
      // What the bases hold is on the remote: the parts of their trees that the snapshots
      // sent share with them are known, found by walking both trees only where they differ.
      for (const base of bases) {
        const baseTree = (await readEnvelope(store, base)).body.workspace?.tree;
        if (baseTree === undefined || !store.hasObject(baseTree)) continue;
        for (const id of toSend) {
          const tree = envelopes.get(id)!.body.workspace?.tree;
          if (tree !== undefined && store.hasObject(tree)) {
            knownShared(store, baseTree, tree, known);
          }
        }
      }
      const needed = new Map<string, NeededObject>();
      for (const id of toSend) {
        // `known` grows with what is enumerated: each object is needed once.
        const objects = objectsOf(store, envelopes.get(id)!, known);
        if (objects === null) {
          throw new NotFoundError(
            `Snapshot ${
              quote(id)
            } has no workspace content in this store, so it cannot be pushed whole`,
            {
              hint:
                "it was imported as an envelope only; import its bundle first, or push another branch",
            },
          );
        }
        for (const object of objects) {
          needed.set(object.id, object);
        }
      }
      const candidates = [...needed.values()];
      let missing = candidates;
      const layout = await marker;
      // One object per key: what a v1 remote holds, and large objects anywhere. Listed
      // while the indexes are read, unless a few HEAD probes on a v1 remote do.
      const probe = layout === 1 && candidates.length <= PROBE_LIMIT;
      const looseKeys = candidates.length > 0 && layout !== null && !probe
        ? backend.list("objects/")
        : null;
      looseKeys?.catch(() => {});
      if (!loose && candidates.length > 0) {
        remoteIndex = await loadRemoteIndex(backend, concurrency, store);
        missing = missing.filter((object) => !remoteIndex!.byId.has(object.id));
      }
      if (missing.length > 0 && layout !== null) {
        if (probe) {
          const found = await mapLimit(
            missing,
            concurrency,
            async (object) => (await backend.head(objectKey(object.id))) !== null,
          );
          missing = missing.filter((_, i) => !found[i]);
        } else {
          const listed = new Set<string>();
          for (const info of await looseKeys!) {
            const id = parseObjectKey(info.key);
            if (id !== null) listed.add(id);
          }
          missing = missing.filter((object) => !listed.has(object.id));
        }
      }

      // 3. Objects, then envelopes oldest first, then refs: each step only names what is there.
      const guarded = async <T>(id: string, fn: () => Promise<T> | T): Promise<T> => {
        try {
          return await fn();
        } catch (error) {
          if (error instanceof IntegrityError && store.objectGone(id)) {
            throw new BusyError(
              `The store changed during push: object ${
                quote(id)
              } was removed by a concurrent forget and gc`,
              { hint: "run the push again; it sends what the store holds now", cause: error },
            );
          }
          throw error;
        }
      };
      let uploaded = 0;
      const done = () => progress("uploading objects", ++uploaded, missing.length);
      if (loose) {
        await mapLimit(missing, concurrency, async (object) => {
          await guarded(object.id, () => uploadObject(store, backend, object));
          done();
        });
      } else {
        if (layout === 1) await backend.put(MARKER_KEY, markerBytes()); // now v2: packs too
        const written = await uploadPacked(store, backend, missing, concurrency, guarded, done);
        packs = written.length;
        for (const pack of written) (remoteIndex ??= emptyIndex()).fetched.set(pack.id, pack.index);
      }
      return { branches, toSend, envelopes, present, needed, missing };
    },
  );
  await backend.flush();
  // Indexes read or written are cached (they only locate bytes), so the next push skips them.
  if (remoteIndex !== null && (remoteIndex as RemoteIndex).fetched.size > 0) {
    store.transaction("push", () => cacheIndexes(store, remoteIndex!));
  }
  let sent = 0;
  for (const id of toSend) {
    await backend.put(snapshotKey(id), envelopeBytes(envelopes.get(id)!));
    progress("uploading snapshots", ++sent, toSend.length);
  }
  await backend.flush();
  const refs: PushedRef[] = [];
  for (const plan of branches) refs.push(await writeRef(store, backend, signer, remoteName, plan));
  await backend.flush();
  return {
    location: inner.location,
    refs,
    skipped,
    snapshots: { uploaded: toSend.length, present },
    objects: { uploaded: missing.length, present: needed.size - missing.length },
    packs,
    bytesSent: backend.traffic.sent,
    requests: backend.traffic.requests,
  };
}

/** The chain from `id` down through present parents (newest first). */
function chainFrom(store: Store, id: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  let cursor: string | null = id;
  while (cursor !== null && !seen.has(cursor)) {
    seen.add(cursor);
    let envelope: Envelope;
    try {
      // Parent links only: the envelopes sent are read verified.
      envelope = readEnvelopeUnverified(store, cursor);
    } catch (error) {
      if (error instanceof NotFoundError) break;
      throw error;
    }
    out.push(cursor);
    cursor = envelope.body.parent;
  }
  return out;
}

/**
 * Writes the next ref record of a branch, unless the remote's newest valid
 * record already names the head (and is not older than what this store wrote).
 */
async function writeRef(
  store: Store,
  backend: Backend,
  signer: Signer,
  remoteName: string,
  plan: BranchPlan,
): Promise<PushedRef> {
  const { session, branch, head } = plan;
  const listed = (await (plan.listing ?? backend.list(refPrefix(signer.keyId, session, branch))))
    .map((info) => parseRefKey(info.key))
    .filter((key) =>
      key !== null && key.keyId === signer.keyId && key.session === session && key.branch === branch
    )
    .sort((a, b) => b!.seq - a!.seq || (a!.hash16 < b!.hash16 ? 1 : -1));
  const local = readRefState(store, remoteName, signer.keyId, session, branch);
  // The newest record that verifies (a few tries: junk under our prefix is ignored). When
  // it is the record this store wrote last, its content is known: no need to read it.
  let remote: { seq: number; hash: string; head: string } | null = null;
  const newest = listed[0];
  if (
    local !== null && newest !== undefined && newest!.seq === local.seq &&
    local.record.startsWith(newest!.hash16)
  ) {
    remote = { seq: local.seq, hash: local.record, head: local.head };
  }
  for (const key of remote === null ? listed.slice(0, 8) : []) {
    const bytes = await backend.get(key!.key, MAX_REF_BYTES);
    if (bytes === null) continue;
    try {
      const record = parseRefRecord(bytes);
      const hash = sha256Hex(bytes);
      if (
        record.public_key === signer.publicKeyHex && record.session === session &&
        record.branch === branch && record.seq === key!.seq && hash.startsWith(key!.hash16) &&
        await checkRefRecord(record)
      ) {
        remote = { seq: record.seq, hash, head: record.head };
        break;
      }
    } catch {
      // Not a record of ours: ignored.
    }
  }
  if (remote !== null && remote.head === head && remote.seq >= (local?.seq ?? 0)) {
    store.transaction(
      "push",
      () =>
        writeRefState(store, remoteName, signer.keyId, session, branch, {
          seq: remote!.seq,
          record: remote!.hash,
          head,
        }),
    );
    return { session, branch, head, seq: remote.seq, status: "unchanged" };
  }
  const last = (local?.seq ?? 0) >= (remote?.seq ?? 0)
    ? (local === null ? null : { seq: local.seq, hash: local.record })
    : { seq: remote!.seq, hash: remote!.hash };
  const signed = await signRefRecord(signer, {
    session,
    branch,
    seq: (last?.seq ?? 0) + 1,
    previous: last?.hash ?? null,
    head,
    created_at: new Date().toISOString(),
  });
  await backend.put(
    refKey(signer.keyId, session, branch, signed.record.seq, signed.hash),
    signed.bytes,
  );
  store.transaction("push", () =>
    writeRefState(store, remoteName, signer.keyId, session, branch, {
      seq: signed.record.seq,
      record: signed.hash,
      head,
    }));
  return { session, branch, head, seq: signed.record.seq, status: "updated" };
}
