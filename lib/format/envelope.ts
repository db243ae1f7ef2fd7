/**
 * Signed snapshot envelopes: `{"id","body","signature"}`.
 *
 * The id is the BLAKE3 hex of the body's canonical JSON; the signature is
 * Ed25519 over the ASCII string `ctxsnap-snapshot-v1:` + id (domain
 * separation). {@linkcode parseEnvelope} treats its input as hostile.
 *
 * @example
 * ```ts
 * import { signBody, checkEnvelope } from "./envelope.ts";
 * import { emptyContext, emptyCursors, emptyFacets, SNAPSHOT_SCHEMA } from "./body.ts";
 * import { generateSeed, publicKeyFromSeed, keyIdOf } from "../crypto/ed25519.ts";
 * import { toHex } from "../encoding/hex.ts";
 * const seed = generateSeed();
 * const publicKey = await publicKeyFromSeed(seed);
 * const signer = { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
 * const envelope = await signBody({
 *   schema: SNAPSHOT_SCHEMA, created_at: "2026-01-01T00:00:00.000Z", parent: null,
 *   session: "main", branch: "main", reason: "demo", source: null, git: null, workspace: null,
 *   context: emptyContext(), cursors: emptyCursors(), facets: emptyFacets(),
 *   tool: { name: "ctxsnap", version: "0.1.0" },
 * }, signer);
 * if (!((await checkEnvelope(envelope)).signatureValid)) throw new Error("Example failed");
 * ```
 * @module
 */
import { canonicalBytes, parseJson } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { fromHex, isHex, toHex } from "../encoding/hex.ts";
import { blake3Hex } from "../crypto/hash.ts";
import { keyIdOf, sign, verify } from "../crypto/ed25519.ts";
import { MAX_BODY_BYTES, type SnapshotBody, validateBody } from "./body.ts";

/** Domain-separation prefix of the signed message. */
export const SIGNING_PREFIX = "ctxsnap-snapshot-v1:";
/** Largest envelope accepted, in bytes (body cap plus room for pretty-printing). */
export const MAX_ENVELOPE_BYTES: number = 4 * MAX_BODY_BYTES;

/** The signature block of an envelope. */
export interface EnvelopeSignature {
  /** Always `ed25519`. */
  alg: "ed25519";
  /** First 16 hex of SHA-256 of the raw public key. */
  key_id: string;
  /** Raw 32-byte public key, hex. */
  public_key: string;
  /** 64-byte signature, hex. */
  value: string;
}

/** A signed snapshot. */
export interface Envelope {
  /** BLAKE3 hex of the canonical body. */
  id: string;
  /** The body. */
  body: SnapshotBody;
  /** The signature. */
  signature: EnvelopeSignature;
}

/** A key able to sign. */
export interface Signer {
  /** 32-byte Ed25519 seed. */
  seed: Uint8Array;
  /** Raw public key. */
  publicKey: Uint8Array;
  /** Raw public key, hex. */
  publicKeyHex: string;
  /** Key id. */
  keyId: string;
}

/** The id of a body: BLAKE3 hex of its canonical JSON. */
export function snapshotId(body: SnapshotBody): string {
  return blake3Hex(canonicalBytes(body));
}

/** The exact bytes an envelope's signature covers. */
export function signingMessage(id: string): Uint8Array {
  return new TextEncoder().encode(SIGNING_PREFIX + id);
}

/** Validates `body`, computes its id and signs it. */
export async function signBody(body: SnapshotBody, signer: Signer): Promise<Envelope> {
  const valid = validateBody(body);
  const id = snapshotId(valid);
  const signature = await sign(signer.seed, signingMessage(id));
  return {
    id,
    body: valid,
    signature: {
      alg: "ed25519",
      key_id: signer.keyId,
      public_key: signer.publicKeyHex,
      value: toHex(signature),
    },
  };
}

function fail(message: string): never {
  throw new IntegrityError(`Invalid snapshot envelope: ${message}`);
}

/**
 * Validates the shape of an untrusted envelope value: exact fields, a valid
 * body, a 64-hex id, a well-formed signature block whose key id matches its
 * public key. Does not check the id or the signature: see {@linkcode checkEnvelope}.
 */
export function validateEnvelope(value: unknown): Envelope {
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail("not an object");
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!["id", "body", "signature"].includes(key)) fail(`unknown field ${quote(key)}`);
  }
  if (typeof o.id !== "string" || !isHex(o.id, 64)) fail("id is not a 64-hex BLAKE3 id");
  const s = o.signature;
  if (s === null || typeof s !== "object" || Array.isArray(s)) fail("signature is not an object");
  const sig = s as Record<string, unknown>;
  for (const key of Object.keys(sig)) {
    if (!["alg", "key_id", "public_key", "value"].includes(key)) {
      fail(`signature has unknown field ${quote(key)}`);
    }
  }
  if (sig.alg !== "ed25519") fail(`signature algorithm ${quote(sig.alg)} is not supported`);
  if (typeof sig.public_key !== "string" || !isHex(sig.public_key, 64)) {
    fail("signature.public_key is not 32 bytes of hex");
  }
  if (typeof sig.value !== "string" || !isHex(sig.value, 128)) {
    fail("signature.value is not 64 bytes of hex");
  }
  if (typeof sig.key_id !== "string" || sig.key_id !== keyIdOf(fromHex(sig.public_key, 32))) {
    fail(`signature.key_id ${quote(sig.key_id)} does not match its public key`);
  }
  return {
    id: o.id,
    body: validateBody(o.body),
    signature: {
      alg: "ed25519",
      key_id: sig.key_id,
      public_key: sig.public_key,
      value: sig.value,
    },
  };
}

/** Strictly parses (duplicate keys, floats, size) and validates an envelope. */
export function parseEnvelope(input: string | Uint8Array): Envelope {
  return validateEnvelope(parseJson(input, { maxBytes: MAX_ENVELOPE_BYTES }));
}

/** The canonical bytes of an envelope, as stored in the index. */
export function envelopeBytes(envelope: Envelope): Uint8Array {
  return canonicalBytes(envelope);
}

/** What {@linkcode checkEnvelope} found. */
export interface EnvelopeCheck {
  /** The id recomputed from the body. */
  computedId: string;
  /** Whether the envelope's id equals the recomputed id. */
  idMatches: boolean;
  /** Whether the signature verifies over the envelope's id. */
  signatureValid: boolean;
}

/** Recomputes the id and checks the signature. Never throws for a bad signature. */
export async function checkEnvelope(envelope: Envelope): Promise<EnvelopeCheck> {
  const computedId = snapshotId(envelope.body);
  const signatureValid = await verify(
    fromHex(envelope.signature.public_key, 32),
    signingMessage(envelope.id),
    fromHex(envelope.signature.value, 64),
  );
  return { computedId, idMatches: computedId === envelope.id, signatureValid };
}
