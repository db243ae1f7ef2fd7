/**
 * What a remote's pack indexes say: every index under `index/` read and
 * parsed strictly ({@linkcode parseIndex}), merged into one map from object id
 * to where its bytes are. An index that does not parse is left out and its
 * reason kept (a reader reports it when an object it needs is then missing);
 * where two indexes name one object, the first by key wins. Push uses it to
 * skip what the remote has, pull to find what it lacks.
 *
 * @module
 */
import { IntegrityError } from "../errors.ts";
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
}

/** Lists and reads every index of `backend`, `concurrency` at a time. */
export async function loadRemoteIndex(
  backend: Backend,
  concurrency: number,
): Promise<RemoteIndex> {
  const ids = (await backend.list("index/"))
    .map((info) => parseIndexKey(info.key))
    .filter((id): id is string => id !== null);
  const refused: RemoteIndex["refused"] = [];
  const parsed = await mapLimit(ids, concurrency, async (id) => {
    try {
      const bytes = await backend.get(indexKey(id), MAX_INDEX_BYTES);
      if (bytes === null) return null; // listed, then removed: nothing to use
      return parseIndex(bytes, id);
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
  return { byId, packs, refused };
}
