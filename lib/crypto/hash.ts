/**
 * Hashing: SHA-256 (object and tree ids) through `node:crypto`, and BLAKE3
 * (snapshot ids) through `@noble/hashes`. Both come one-shot and streaming,
 * always as lowercase hex.
 *
 * @example
 * ```ts
 * import { blake3Hex, createSha256, sha256Hex } from "./hash.ts";
 *
 * const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
 * if (sha256Hex("abc") !== abc) throw new Error("Example failed");
 * const hasher = createSha256();
 * hasher.update(new TextEncoder().encode("a"));
 * hasher.update(new TextEncoder().encode("bc"));
 * if (!(hasher.digestHex() === sha256Hex("abc"))) throw new Error("Example failed");
 * if (!(blake3Hex("").startsWith("af1349b9"))) throw new Error("Example failed");
 * ```
 * @module
 */
import type * as NodeCrypto from "node:crypto";
import { blake3 } from "npm:@noble/hashes@2.4.0/blake3.js";
import { sha256 } from "npm:@noble/hashes@2.4.0/sha2.js";
import { toHex } from "../encoding/hex.ts";
import { builtin } from "../runtime.ts";

/** Inputs up to this size are hashed in JavaScript: no native module to load. */
const SMALL_INPUT = 16 * 1024;
/**
 * At most this many bytes in all are hashed in JavaScript: beyond it loading
 * the native module costs less (a capture hashing its directory trees, each
 * up to tens of KiB, would otherwise spend about 1 ms of cold JavaScript on
 * each of the first 64).
 */
const SMALL_TOTAL = 64 * 1024;

let nodeCrypto: typeof NodeCrypto | undefined;

/**
 * `node:crypto`, loaded on first use: it takes 10–20 ms to load under Deno,
 * which an unchanged recapture (hashing only small manifests) never needs.
 */
function createHash(algorithm: "sha256"): NodeCrypto.Hash {
  nodeCrypto ??= builtin<typeof NodeCrypto>("node:crypto");
  return nodeCrypto.createHash(algorithm);
}

const encoder = new TextEncoder();

function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? encoder.encode(data) : data;
}

/** An incremental hash: feed chunks with `update`, then read the digest once. */
export interface Hasher {
  /** Adds `chunk` to the hashed input. */
  update(chunk: Uint8Array): void;
  /** Finishes the hash and returns it as lowercase hex; the hasher is then spent. */
  digestHex(): string;
}

/**
 * SHA-256 of `data` (a string is hashed as its UTF-8 bytes), as 64 lowercase hex chars.
 *
 * @example
 * ```ts
 * import { sha256Hex } from "./hash.ts";
 * if (!(sha256Hex("").startsWith("e3b0c442"))) throw new Error("Example failed");
 * ```
 */
export function sha256Hex(data: Uint8Array | string): string {
  const bytes = toBytes(data);
  // A few small inputs (a start-up path): JavaScript. Many, or large: native.
  if (
    bytes.byteLength <= SMALL_INPUT && nodeCrypto === undefined && ++smallHashes <= 64 &&
    (smallBytes += bytes.byteLength) <= SMALL_TOTAL
  ) {
    return toHex(sha256(bytes));
  }
  return createHash("sha256").update(bytes).digest("hex");
}

let smallHashes = 0;
let smallBytes = 0;

/**
 * Starts a streaming SHA-256.
 *
 * @example
 * ```ts
 * import { createSha256, sha256Hex } from "./hash.ts";
 * const hasher = createSha256();
 * hasher.update(new Uint8Array([1, 2]));
 * hasher.update(new Uint8Array([3]));
 * if (!(hasher.digestHex() === sha256Hex(new Uint8Array([1, 2, 3])))) throw new Error("Example failed");
 * ```
 */
export function createSha256(): Hasher {
  const hash = createHash("sha256");
  return {
    update(chunk: Uint8Array): void {
      hash.update(chunk);
    },
    digestHex(): string {
      return hash.digest("hex");
    },
  };
}

/**
 * BLAKE3 (32-byte output) of `data` (a string is hashed as its UTF-8 bytes), as lowercase hex.
 *
 * @example
 * ```ts
 * import { blake3Hex } from "./hash.ts";
 * if (!(blake3Hex("").length === 64)) throw new Error("Example failed");
 * ```
 */
export function blake3Hex(data: Uint8Array | string): string {
  return toHex(blake3(toBytes(data)));
}

/**
 * Starts a streaming BLAKE3 (32-byte output).
 *
 * @example
 * ```ts
 * import { blake3Hex, createBlake3 } from "./hash.ts";
 * const hasher = createBlake3();
 * hasher.update(new TextEncoder().encode("ab"));
 * hasher.update(new TextEncoder().encode("c"));
 * if (!(hasher.digestHex() === blake3Hex("abc"))) throw new Error("Example failed");
 * ```
 */
export function createBlake3(): Hasher {
  const hash = blake3.create();
  return {
    update(chunk: Uint8Array): void {
      hash.update(chunk);
    },
    digestHex(): string {
      return toHex(hash.digest());
    },
  };
}
