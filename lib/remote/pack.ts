/**
 * Packs and pack indexes of a remote (`ctxsnap.remote/v2`, FORMAT.md §13.8):
 * many small objects travel in one pack file, described by one index, so a
 * push makes a few requests instead of one per object.
 *
 * ```
 * packs/<id[0:2]>/<id>   a pack: encoded objects (§13.2) back to back; id = SHA-256 of the pack
 * index/<id>             its index (binary, below); id = the pack's id
 * ```
 *
 * An index is a header (`ctxpack1`, the pack's id, the pack's length, the
 * entry count) and fixed 45-byte entries sorted by object id: id, kind,
 * offset, length and decoded size. {@linkcode parseIndex} refuses anything
 * but an exact index: entries out of order or repeated, ranges that overlap,
 * leave a gap or run past the pack, sizes over their bound. Nothing in an
 * index is trusted beyond locating bytes: a reader still decodes every
 * object with its size as the bound and checks its SHA-256 against its id
 * before using a byte, and checks a whole pack's SHA-256 against its key.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { encodeObject } from "./layout.ts";
 * import { PackWriter, parseIndex } from "./pack.ts";
 * const writer = new PackWriter();
 * const bytes = new TextEncoder().encode("hello\n");
 * const id = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
 * writer.add(id, "blob", bytes.length, encodeObject(bytes, 0));
 * const pack = writer.finish();
 * const index = parseIndex(pack.index, pack.id);
 * if (index.entries[0]?.offset !== 0 || index.entries[0]?.length !== 7) throw new Error("index");
 * ```
 * @module
 */
import { IntegrityError, quote } from "../errors.ts";
import { sha256Hex } from "../crypto/hash.ts";
import { fromHex, toHex } from "../encoding/hex.ts";
import { MAX_TREE_BYTES } from "../format/tree_object.ts";
import { DEFLATE_MAX_BYTES, maxEncodedBytes } from "./layout.ts";

/** The first 8 bytes of every index: ASCII `ctxpack1`. */
export const INDEX_MAGIC: Uint8Array = new TextEncoder().encode("ctxpack1");
/** Bytes of the index header: magic, pack id, pack length, entry count. */
export const INDEX_HEADER_BYTES = 48;
/** Bytes of one index entry: id, kind, offset, length, size. */
export const INDEX_ENTRY_BYTES = 45;
/** A writer closes a pack once it reaches this many bytes. */
export const PACK_TARGET_BYTES: number = 16 * 1024 * 1024;
/** Objects whose encoded form is larger than this are not packed (one key each, §13.2). */
export const PACK_OBJECT_MAX_BYTES: number = 4 * 1024 * 1024;
/** The largest pack a reader accepts. */
export const MAX_PACK_BYTES: number = 64 * 1024 * 1024;
/** The most entries an index may have. */
export const MAX_PACK_ENTRIES = 65_536;
/** The largest index a reader accepts. */
export const MAX_INDEX_BYTES: number = INDEX_HEADER_BYTES + INDEX_ENTRY_BYTES * MAX_PACK_ENTRIES;

/** One object in a pack. */
export interface PackEntry {
  /** The object's id (SHA-256 of its decoded bytes). */
  id: string;
  /** Blob or tree. */
  kind: "blob" | "tree";
  /** Where its encoded form starts in the pack. */
  offset: number;
  /** Bytes of its encoded form. */
  length: number;
  /** Bytes once decoded. */
  size: number;
}

/** A parsed index. */
export interface PackIndex {
  /** The pack's id (SHA-256 of its bytes). */
  pack: string;
  /** The pack's length in bytes. */
  packLength: number;
  /** Entries, by id. */
  entries: PackEntry[];
}

/** The key of a pack. */
export function packKey(id: string): string {
  return `packs/${id.slice(0, 2)}/${id}`;
}

/** The key of a pack's index. */
export function indexKey(id: string): string {
  return `index/${id}`;
}

/** The pack id of a listed index key, or null for anything else (ignored by readers). */
export function parseIndexKey(key: string): string | null {
  const match = /^index\/([0-9a-f]{64})$/.exec(key);
  return match === null ? null : match[1]!;
}

function refuse(pack: string, why: string): never {
  throw new IntegrityError(`The index of pack ${quote(pack.slice(0, 12))} ${why}`, {
    check: "pack_index",
  });
}

/** Encodes an index (entries in any order; they are sorted by id). */
export function encodeIndex(index: PackIndex): Uint8Array {
  const entries = [...index.entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const out = new Uint8Array(INDEX_HEADER_BYTES + INDEX_ENTRY_BYTES * entries.length);
  const view = new DataView(out.buffer);
  out.set(INDEX_MAGIC, 0);
  out.set(fromHex(index.pack, 32), 8);
  view.setUint32(40, index.packLength);
  view.setUint32(44, entries.length);
  let at = INDEX_HEADER_BYTES;
  for (const entry of entries) {
    out.set(fromHex(entry.id, 32), at);
    out[at + 32] = entry.kind === "tree" ? 1 : 0;
    view.setUint32(at + 33, entry.offset);
    view.setUint32(at + 37, entry.length);
    view.setUint32(at + 41, entry.size);
    at += INDEX_ENTRY_BYTES;
  }
  return out;
}

/**
 * Parses the index stored under `index/<pack>`, refusing (IntegrityError)
 * anything but an exact one (FORMAT.md §13.8).
 */
export function parseIndex(bytes: Uint8Array, pack: string): PackIndex {
  if (bytes.byteLength > MAX_INDEX_BYTES) refuse(pack, `is larger than ${MAX_INDEX_BYTES} bytes`);
  if (bytes.byteLength < INDEX_HEADER_BYTES || !INDEX_MAGIC.every((b, i) => bytes[i] === b)) {
    refuse(pack, "is not a ctxpack1 index");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (toHex(bytes.subarray(8, 40)) !== pack) refuse(pack, "names another pack");
  const packLength = view.getUint32(40);
  const count = view.getUint32(44);
  if (packLength > MAX_PACK_BYTES) {
    refuse(pack, `says the pack has more than ${MAX_PACK_BYTES} bytes`);
  }
  if (count < 1 || count > MAX_PACK_ENTRIES) refuse(pack, `has ${count} entries`);
  if (bytes.byteLength !== INDEX_HEADER_BYTES + INDEX_ENTRY_BYTES * count) {
    refuse(
      pack,
      `has ${bytes.byteLength} bytes, not ${INDEX_HEADER_BYTES + INDEX_ENTRY_BYTES * count}`,
    );
  }
  const entries: PackEntry[] = [];
  let previous = "";
  for (let i = 0, at = INDEX_HEADER_BYTES; i < count; i++, at += INDEX_ENTRY_BYTES) {
    const id = toHex(bytes.subarray(at, at + 32));
    if (id <= previous) refuse(pack, "lists its objects out of order or twice");
    previous = id;
    const tag = bytes[at + 32];
    if (tag !== 0 && tag !== 1) refuse(pack, `gives object ${quote(id.slice(0, 12))} kind ${tag}`);
    const kind = tag === 1 ? "tree" : "blob";
    const offset = view.getUint32(at + 33);
    const length = view.getUint32(at + 37);
    const size = view.getUint32(at + 41);
    const bound = kind === "tree" ? MAX_TREE_BYTES : DEFLATE_MAX_BYTES;
    if (size > bound || length < 1 || length > maxEncodedBytes(size)) {
      refuse(pack, `gives object ${quote(id.slice(0, 12))} an oversize range or size`);
    }
    if (offset + length > packLength) {
      refuse(pack, `places object ${quote(id.slice(0, 12))} past the end of the pack`);
    }
    entries.push({ id, kind, offset, length, size });
  }
  // The ranges tile the pack exactly: no overlap, no gap, nothing unindexed.
  const byOffset = [...entries].sort((a, b) => a.offset - b.offset);
  let end = 0;
  for (const entry of byOffset) {
    if (entry.offset !== end) {
      refuse(
        pack,
        entry.offset < end ? "has overlapping ranges" : "leaves bytes of the pack unindexed",
      );
    }
    end = entry.offset + entry.length;
  }
  if (end !== packLength) refuse(pack, "leaves bytes of the pack unindexed");
  return { pack, packLength, entries };
}

/** A finished pack: its id, bytes and index. */
export interface FinishedPack {
  /** SHA-256 of `bytes`. */
  id: string;
  /** The pack (a writer may let it go once it is uploaded). */
  bytes: Uint8Array;
  /** Its index's bytes. */
  index: Uint8Array;
  /** The entries. */
  entries: PackEntry[];
}

/** Builds one pack from encoded objects (each verified by the caller before it is added). */
export class PackWriter {
  private readonly parts: Uint8Array[] = [];
  private readonly entries: PackEntry[] = [];
  private readonly ids = new Set<string>();
  private length = 0;

  /** Bytes so far. */
  get byteLength(): number {
    return this.length;
  }

  /** Objects so far. */
  get count(): number {
    return this.entries.length;
  }

  /** Whether the pack should be closed before another object is added. */
  full(): boolean {
    return this.length >= PACK_TARGET_BYTES || this.entries.length >= MAX_PACK_ENTRIES;
  }

  /** Appends an encoded object (a repeated id is skipped). */
  add(id: string, kind: "blob" | "tree", size: number, encoded: Uint8Array): void {
    if (this.ids.has(id)) return;
    this.ids.add(id);
    this.entries.push({ id, kind, offset: this.length, length: encoded.byteLength, size });
    this.parts.push(encoded);
    this.length += encoded.byteLength;
  }

  /** The pack and its index. */
  finish(): FinishedPack {
    const bytes = new Uint8Array(this.length);
    let at = 0;
    for (const part of this.parts) {
      bytes.set(part, at);
      at += part.byteLength;
    }
    const id = sha256Hex(bytes);
    const index = encodeIndex({ pack: id, packLength: bytes.byteLength, entries: this.entries });
    return { id, bytes, index, entries: this.entries };
  }
}
