/**
 * Ref records (`ctxsnap.ref/v1`, FORMAT.md §13.4): the signed statement
 * "signer K's branch B of session S is at snapshot H", numbered `seq` per
 * signer and branch and linked to the record it follows by `previous`. They
 * are append-only (a new record is a new key, never an overwrite), so no two
 * writers ever contend for a key and a remote needs no compare-and-swap.
 *
 * The record is canonical JSON; its `signature` is Ed25519 over
 * `ctxsnap-ref-v1:` + the SHA-256 hex of the canonical record without the
 * `signature` member. Its hash (SHA-256 of the whole canonical record) names
 * it on the remote and is what the next record's `previous` holds.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { checkRefRecord, parseRefRecord, signRefRecord } from "./ref_record.ts";
 * import { generateSeed, keyIdOf, publicKeyFromSeed } from "../crypto/ed25519.ts";
 * import { toHex } from "../encoding/hex.ts";
 * const seed = generateSeed();
 * const publicKey = await publicKeyFromSeed(seed);
 * const signer = { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
 * const signed = await signRefRecord(signer, {
 *   session: "main", branch: "main", seq: 1, previous: null, head: "ab".repeat(32),
 *   created_at: "2026-01-01T00:00:00.000Z",
 * });
 * const record = parseRefRecord(signed.bytes);
 * if (!(await checkRefRecord(record))) throw new Error("signature does not verify");
 * ```
 * @module
 */
import { canonicalBytes, parseCanonical } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { fromHex, isHex, toHex } from "../encoding/hex.ts";
import { sha256Hex } from "../crypto/hash.ts";
import { keyIdOf, sign, verify } from "../crypto/ed25519.ts";
import { isValidName } from "./body.ts";
import type { Signer } from "./envelope.ts";

/** The record format tag. */
export const REF_FORMAT = "ctxsnap.ref/v1";
/** Domain-separation prefix of the signed message. */
export const REF_SIGNING_PREFIX = "ctxsnap-ref-v1:";
/** Largest record accepted. */
export const MAX_REF_BYTES = 8192;

/** A ref record. */
export interface RefRecord {
  /** Always {@linkcode REF_FORMAT}. */
  format: typeof REF_FORMAT;
  /** Signer key id (16 hex). */
  key_id: string;
  /** Signer public key (64 hex). */
  public_key: string;
  /** Session name. */
  session: string;
  /** Branch name. */
  branch: string;
  /** 1, 2, … per signer, session and branch. */
  seq: number;
  /** SHA-256 hex of the record this one follows, or null for seq 1. */
  previous: string | null;
  /** Snapshot id the branch is at. */
  head: string;
  /** When it was signed (the signer's clock). */
  created_at: string;
  /** Ed25519 signature, 128 hex. */
  signature: string;
}

/** The unsigned fields a signer fills in. */
export type RefFields = Pick<
  RefRecord,
  "session" | "branch" | "seq" | "previous" | "head" | "created_at"
>;

const FIELDS = [
  "format",
  "key_id",
  "public_key",
  "session",
  "branch",
  "seq",
  "previous",
  "head",
  "created_at",
  "signature",
];

function fail(message: string): never {
  throw new IntegrityError(`Invalid ref record: ${message}`);
}

function unsignedBytes(record: Omit<RefRecord, "signature"> & { signature?: string }): Uint8Array {
  const { signature: _ignored, ...rest } = record;
  return canonicalBytes(rest);
}

/** The exact bytes a record's signature covers. */
export function refSigningMessage(record: Omit<RefRecord, "signature">): Uint8Array {
  return new TextEncoder().encode(REF_SIGNING_PREFIX + sha256Hex(unsignedBytes(record)));
}

/** A signed record: the value, its canonical bytes and its hash. */
export interface SignedRef {
  /** The record. */
  record: RefRecord;
  /** Its canonical bytes (what is stored). */
  bytes: Uint8Array;
  /** SHA-256 hex of `bytes`. */
  hash: string;
}

/** Signs a new record. */
export async function signRefRecord(signer: Signer, fields: RefFields): Promise<SignedRef> {
  const unsigned = {
    format: REF_FORMAT,
    key_id: signer.keyId,
    public_key: signer.publicKeyHex,
    ...fields,
  } as const;
  const signature = toHex(await sign(signer.seed, refSigningMessage(unsigned)));
  const record = validateRefRecord({ ...unsigned, signature });
  const bytes = canonicalBytes(record);
  return { record, bytes, hash: sha256Hex(bytes) };
}

/** Validates an untrusted record value (shape only; see {@linkcode checkRefRecord}). */
export function validateRefRecord(value: unknown): RefRecord {
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail("not an object");
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) if (!FIELDS.includes(key)) fail(`unknown field ${quote(key)}`);
  for (const key of FIELDS) if (!(key in o)) fail(`missing field ${quote(key)}`);
  if (o.format !== REF_FORMAT) fail(`format ${quote(o.format)} is not ${REF_FORMAT}`);
  if (typeof o.public_key !== "string" || !isHex(o.public_key, 64)) fail("bad public_key");
  if (typeof o.key_id !== "string" || o.key_id !== keyIdOf(fromHex(o.public_key, 32))) {
    fail(`key_id ${quote(o.key_id)} does not match its public key`);
  }
  if (typeof o.session !== "string" || !isValidName(o.session)) fail("bad session name");
  if (typeof o.branch !== "string" || !isValidName(o.branch)) fail("bad branch name");
  if (!Number.isSafeInteger(o.seq) || (o.seq as number) < 1) fail("seq is not a positive integer");
  if (
    o.seq === 1 ? o.previous !== null : typeof o.previous !== "string" || !isHex(o.previous, 64)
  ) {
    fail("previous must be null for seq 1 and a 64-hex hash after");
  }
  if (typeof o.head !== "string" || !isHex(o.head, 64)) fail("head is not a 64-hex snapshot id");
  if (
    typeof o.created_at !== "string" || o.created_at.length > 32 ||
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(o.created_at) ||
    Number.isNaN(Date.parse(o.created_at)) || new Date(o.created_at).toISOString() !== o.created_at
  ) {
    fail("created_at is not an ISO 8601 UTC time with milliseconds");
  }
  if (typeof o.signature !== "string" || !isHex(o.signature, 128)) fail("bad signature");
  return o as unknown as RefRecord;
}

/** Parses a record read from a remote: canonical JSON, bounded, then validated. */
export function parseRefRecord(bytes: Uint8Array): RefRecord {
  return validateRefRecord(parseCanonical(bytes, { maxBytes: MAX_REF_BYTES }));
}

/** Whether the record's signature verifies under its own public key. */
export async function checkRefRecord(record: RefRecord): Promise<boolean> {
  return await verify(
    fromHex(record.public_key, 32),
    refSigningMessage(record),
    fromHex(record.signature, 64),
  );
}
