/**
 * What a remote's pack indexes say: every index under `index/` read and
 * parsed strictly ({@linkcode parseIndex}), merged into one map from object id
 * to where its bytes are. An index that does not parse is left out and its
 * reason kept (a reader reports it when an object it needs is then missing);
 * where two indexes name one object, the first by key wins. Push uses it to
 * skip what the remote has, pull to find what it lacks.
 *
 * Indexes read before are taken from the store's cache (`meta` rows
 * `pack-index:<pack id>`, FORMAT.md §13.7) instead of the remote, so a
 * command reads only the indexes that are new to it; a cached index is parsed
 * again like a fetched one. The cache only locates bytes: every object is
 * still hashed against its id, every pack against its key.
 *
 * @module
 */
import { IntegrityError } from "../errors.ts";
import { fromHex, isHex, toHex } from "../encoding/hex.ts";
import type { Store } from "../repository/store.ts";
import { type Backend, mapLimit } from "./backend.ts";
import {
  indexKey,
  MAX_INDEX_BYTES,
  type PackEntry,
  type PackIndex,
  parseIndex,
  parseIndexKey,
} from "./pack.ts";

/** Where one packed object is. */
export interface PackedLocation {
  /** The pack's id. */
  pack: string;
  /** The pack's length. */
  packLength: number;
  /** The entry. */
  entry: PackEntry;
}

/** Every readable index of a remote. */
export interface RemoteIndex {
  /** Packed objects by id. */
  byId: Map<string, PackedLocation>;
  /** Indexes read, by pack id. */
  packs: Map<string, PackIndex>;
  /** Indexes left out, with the reason. */
  refused: { key: string; reason: string }[];
  /** Indexes fetched from the remote (not from the cache) that parsed, to cache. */
  fetched: Map<string, Uint8Array>;
}

const CACHE_PREFIX = "pack-index:";

/** A cached index of `pack`, or null (also for a row that is not hex). */
function cached(store: Store | null, pack: string): Uint8Array | null {
  const text = store?.getMeta(`${CACHE_PREFIX}${pack}`) ?? null;
  return text !== null && isHex(text) ? fromHex(text) : null;
}

/** Caches the indexes `index` fetched (call inside a write transaction). */
export function cacheIndexes(store: Store, index: RemoteIndex): void {
  for (const [pack, bytes] of index.fetched) store.setMeta(`${CACHE_PREFIX}${pack}`, toHex(bytes));
}

/**
 * Lists and reads every index of `backend`, `concurrency` at a time, taking
 * those `store` has cached from the cache.
 */
export async function loadRemoteIndex(
  backend: Backend,
  concurrency: number,
  store: Store | null = null,
): Promise<RemoteIndex> {
  const ids = (await backend.list("index/"))
    .map((info) => parseIndexKey(info.key))
    .filter((id): id is string => id !== null);
  const refused: RemoteIndex["refused"] = [];
  const fetched = new Map<string, Uint8Array>();
  const parsed = await mapLimit(ids, concurrency, async (id) => {
    const local = cached(store, id);
    if (local !== null) {
      try {
        return parseIndex(local, id);
      } catch {
        // A bad cache row: read the remote's.
      }
    }
    try {
      const bytes = await backend.get(indexKey(id), MAX_INDEX_BYTES);
      if (bytes === null) return null; // listed, then removed: nothing to use
      const index = parseIndex(bytes, id);
      fetched.set(id, bytes);
      return index;
    } catch (error) {
      if (!(error instanceof IntegrityError)) throw error;
      refused.push({ key: indexKey(id), reason: error.message });
      return null;
    }
  });
  const byId = new Map<string, PackedLocation>();
  const packs = new Map<string, PackIndex>();
  for (const index of parsed) {
    if (index === null) continue;
    packs.set(index.pack, index);
    for (const entry of index.entries) {
      if (!byId.has(entry.id)) {
        byId.set(entry.id, { pack: index.pack, packLength: index.packLength, entry });
      }
    }
  }
  return { byId, packs, refused, fetched };
}
