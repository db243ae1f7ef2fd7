/**
 * The remote layout (`ctxsnap.remote/v2`, FORMAT.md §13): which key holds
 * what, and how an object's bytes are encoded on the remote.
 *
 * ```
 * ctxsnap-remote.json                              {"format":"ctxsnap.remote/v2"} (or v1)
 * objects/<id[0:2]>/<id>                           a blob or tree: 1 encoding byte + payload
 * packs/<id[0:2]>/<id>, index/<id>                 a pack of small objects and its index (pack.ts)
 * snapshots/<id>.json                              a canonical snapshot envelope
 * refs/<key_id>/<session>@<branch>/<seq>-<h>.json  a signed ref record (ref_record.ts)
 * ```
 *
 * Everything but refs is immutable and content-addressed, so concurrent
 * writers never conflict: two writers of one key write the same content.
 * Ref records are append-only and per signer and branch, so no two signers
 * ever write the same key. No lock, no compare-and-swap.
 *
 * An object is one encoding byte, then the payload: `0x00` raw bytes, or
 * `0x01` raw DEFLATE (RFC 1951) of them, allowed only for objects of at most
 * {@linkcode DEFLATE_MAX_BYTES}. The object's id is the SHA-256 of the
 * decoded bytes; a reader decodes with the expected size as the bound and
 * checks size and hash before using a byte.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { decodeObject, encodeObject, objectKey, parseRefKey, refKey } from "./layout.ts";
 * const id = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
 * if (objectKey(id) !== `objects/58/${id}`) throw new Error("object key");
 * const bytes = new TextEncoder().encode("hello\n".repeat(300));
 * const decoded = decodeObject(encodeObject(bytes, 1), "blob", bytes.length);
 * if (decoded.length !== bytes.length) throw new Error("round trip");
 * const key = refKey("0123456789abcdef", "main", "exp/one", 7, "ab".repeat(32));
 * if (parseRefKey(key)?.branch !== "exp/one") throw new Error(key);
 * ```
 * @module
 */
import type * as NodeZlib from "node:zlib";
import { canonicalBytes, parseCanonical } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import { builtin } from "../runtime.ts";
import { isValidName } from "../format/body.ts";

/**
 * The layout version tag a push writes in `ctxsnap-remote.json`: v2 is v1
 * plus packs (`pack.ts`, FORMAT.md §13.8). A reader accepts both.
 */
export const REMOTE_FORMAT = "ctxsnap.remote/v2";
/** The layout before packs: one object per key only. */
export const REMOTE_FORMAT_V1 = "ctxsnap.remote/v1";
/** The key of the format marker. */
export const MARKER_KEY = "ctxsnap-remote.json";
/** Largest marker accepted. */
export const MAX_MARKER_BYTES = 4096;
/** Encoding byte: the payload is the object's bytes. */
export const OBJECT_RAW = 0;
/** Encoding byte: the payload is raw DEFLATE of the object's bytes. */
export const OBJECT_DEFLATE = 1;
/** Objects above this size are stored raw (and are uploaded in parts). */
export const DEFLATE_MAX_BYTES: number = 16 * 1024 * 1024;
/** Objects (encoded) above this size go up as multipart uploads. */
export const MULTIPART_THRESHOLD: number = 16 * 1024 * 1024;
/** The size of each part but the last. */
export const PART_SIZE: number = 8 * 1024 * 1024;

let zlibModule: typeof NodeZlib | undefined;
function zlib(): typeof NodeZlib {
  return zlibModule ??= builtin<typeof NodeZlib>("node:zlib");
}

/** The marker's bytes (of `format`, by default the current one). */
export function markerBytes(format: string = REMOTE_FORMAT): Uint8Array {
  return canonicalBytes({ format });
}

/** Checks a marker read from a remote; returns its layout version (1 or 2). */
export function checkMarker(bytes: Uint8Array, location: string): 1 | 2 {
  let format: unknown;
  try {
    const value = parseCanonical(bytes, { maxBytes: MAX_MARKER_BYTES }) as Record<string, unknown>;
    format = value?.format;
    if (Object.keys(value).length !== 1) format = undefined;
  } catch {
    format = undefined;
  }
  if (format !== REMOTE_FORMAT && format !== REMOTE_FORMAT_V1) {
    throw new IntegrityError(
      `The remote ${quote(location)} is not a ${REMOTE_FORMAT} remote (its ${MARKER_KEY} says ${
        quote(format)
      })`,
      { hint: "upgrade ctxsnap, or check the remote URL" },
    );
  }
  return format === REMOTE_FORMAT ? 2 : 1;
}

/** The key of a blob or tree. */
export function objectKey(id: string): string {
  return `objects/${id.slice(0, 2)}/${id}`;
}

/** The key of a snapshot envelope. */
export function snapshotKey(id: string): string {
  return `snapshots/${id}.json`;
}

/** The key prefix of every ref record of one signer and branch. */
export function refPrefix(keyId: string, session: string, branch: string): string {
  return `refs/${keyId}/${session}@${branch}/`;
}

/** The key of one ref record. */
export function refKey(
  keyId: string,
  session: string,
  branch: string,
  seq: number,
  recordHash: string,
): string {
  return `${refPrefix(keyId, session, branch)}${String(seq).padStart(16, "0")}-${
    recordHash.slice(0, 16)
  }.json`;
}

/** What a ref record's key says. */
export interface RefKey {
  /** The key as listed. */
  key: string;
  /** Signer key id. */
  keyId: string;
  /** Session. */
  session: string;
  /** Branch. */
  branch: string;
  /** Sequence number. */
  seq: number;
  /** First 16 hex of the record's SHA-256. */
  hash16: string;
}

const REF_KEY_RE = /^refs\/([0-9a-f]{16})\/([^@]+)@([^@]+)\/([0-9]{16})-([0-9a-f]{16})\.json$/;

/** Parses a listed ref key; null for anything that is not one (ignored by readers). */
export function parseRefKey(key: string): RefKey | null {
  const match = REF_KEY_RE.exec(key);
  if (match === null) return null;
  const [, keyId, session, branch, seq, hash16] = match;
  if (!isValidName(session!) || !isValidName(branch!)) return null;
  const n = Number(seq);
  if (!Number.isSafeInteger(n) || n < 1) return null;
  return { key, keyId: keyId!, session: session!, branch: branch!, seq: n, hash16: hash16! };
}

/** Whether a listed key names an object (`objects/ab/<64 hex>`); returns the id or null. */
export function parseObjectKey(key: string): string | null {
  const match = /^objects\/([0-9a-f]{2})\/([0-9a-f]{64})$/.exec(key);
  return match !== null && match[2]!.startsWith(match[1]!) ? match[2]! : null;
}

/**
 * Encodes an object: DEFLATE at `level` (1 for blobs, 6 for trees, as in the
 * store) when the object is at least 1 KiB, at most
 * {@linkcode DEFLATE_MAX_BYTES} and it saves at least an eighth; raw
 * otherwise, and always with level 0.
 */
export function encodeObject(bytes: Uint8Array, level: 0 | 1 | 6): Uint8Array {
  if (level > 0 && bytes.byteLength >= 1024 && bytes.byteLength <= DEFLATE_MAX_BYTES) {
    const packed = zlib().deflateRawSync(bytes, { level });
    if (packed.byteLength <= bytes.byteLength - (bytes.byteLength >> 3)) {
      return withTag(
        OBJECT_DEFLATE,
        new Uint8Array(packed.buffer, packed.byteOffset, packed.byteLength),
      );
    }
  }
  return withTag(OBJECT_RAW, bytes);
}

/** Prefixes `payload` with an encoding byte. */
export function withTag(tag: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.byteLength + 1);
  out[0] = tag;
  out.set(payload, 1);
  return out;
}

/** The largest encoded form accepted for an object of `size` decoded bytes. */
export function maxEncodedBytes(size: number): number {
  // Raw DEFLATE of incompressible data grows by 5 bytes per 64 KiB block at most.
  return size + 1 + 5 * (Math.floor(size / 16384) + 1) + 64;
}

/**
 * Decodes an object read from a remote: the encoding byte, then at most
 * `maxSize` decoded bytes (exactly `maxSize` for a blob, whose size the tree
 * states). The caller checks the hash.
 */
export function decodeObject(
  encoded: Uint8Array,
  kind: "blob" | "tree",
  maxSize: number,
): Uint8Array {
  const tag = encoded[0];
  const payload = encoded.subarray(1);
  let bytes: Uint8Array;
  if (tag === OBJECT_RAW) {
    bytes = payload;
  } else if (tag === OBJECT_DEFLATE) {
    if (maxSize > DEFLATE_MAX_BYTES && kind === "blob") {
      throw new IntegrityError(
        `A DEFLATE object larger than ${DEFLATE_MAX_BYTES} bytes is not allowed`,
      );
    }
    try {
      const out = zlib().inflateRawSync(payload, {
        maxOutputLength: Math.max(1, Math.min(maxSize, DEFLATE_MAX_BYTES)),
      });
      bytes = new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
    } catch (error) {
      throw new IntegrityError(`The object does not inflate (or inflates past ${maxSize} bytes)`, {
        cause: error,
      });
    }
  } else {
    throw new IntegrityError(`Unknown object encoding ${quote(tag)}`);
  }
  if (kind === "blob" ? bytes.byteLength !== maxSize : bytes.byteLength > maxSize) {
    throw new IntegrityError(
      `The object has ${bytes.byteLength} bytes, ${
        kind === "blob" ? "not" : "more than"
      } ${maxSize}`,
    );
  }
  return bytes;
}

/** Whether `id` is a 64-hex id. */
export function isId(id: unknown): id is string {
  return typeof id === "string" && isHex(id, 64);
}
