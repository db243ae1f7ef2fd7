/**
 * Ed25519 signatures (RFC 8032) with two interchangeable backends: WebCrypto
 * (preferred, native) and `@noble/curves` (pure TypeScript fallback), plus the
 * PKCS#8 / SPKI PEM encodings (RFC 8410) that `openssl` reads and writes.
 *
 * Both backends give the same answer for every input: verification first
 * applies one shared set of strict checks (exact lengths, canonical `S < L`,
 * canonical point encodings, no small-order public key or `R`), then both use
 * the cofactorless equation `[S]B = R + [k]A` with `R` compared by encoding.
 * `verify` returns `false` for anything that is not a valid signature; it never
 * throws on malformed input.
 *
 * @example
 * ```ts
 * import { generateSeed, keyIdOf, publicKeyFromSeed, sign, verify } from "./ed25519.ts";
 *
 * const seed = generateSeed();
 * const publicKey = await publicKeyFromSeed(seed);
 * const message = new TextEncoder().encode("hello");
 * const signature = await sign(seed, message);
 * if (!(await verify(publicKey, message, signature))) throw new Error("Example failed");
 * if (!(!(await verify(publicKey, new TextEncoder().encode("hullo"), signature)))) throw new Error("Example failed");
 * if (!(keyIdOf(publicKey).length === 16)) throw new Error("Example failed");
 * ```
 * @module
 */
import { ed25519 } from "npm:@noble/curves@2.4.0/ed25519.js";
import { sha512 } from "npm:@noble/hashes@2.4.0/sha2.js";
import { IntegrityError, quote, UsageError } from "../errors.ts";
import { getEnv } from "../runtime.ts";
import { fromHex, isHex, toHex } from "../encoding/hex.ts";
import { sha256Hex } from "./hash.ts";

/** Which implementation performs Ed25519 operations. */
export type Ed25519Backend = "webcrypto" | "noble";

/** Environment variable that forces a backend (`noble` or `webcrypto`). */
const BACKEND_ENV = "CTXSNAP_ED25519";

const SEED_BYTES = 32;
const PUBLIC_KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;

/** RFC 8410 PKCS#8 v1 prefix: SEQ { INT 0, SEQ { OID 1.3.101.112 }, OCTET STRING { OCTET STRING (32) } }. */
const PKCS8_PREFIX = new Uint8Array([
  0x30,
  0x2e,
  0x02,
  0x01,
  0x00,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x70,
  0x04,
  0x22,
  0x04,
  0x20,
]);
/** RFC 8410 SPKI prefix: SEQ { SEQ { OID 1.3.101.112 }, BIT STRING (0 unused bits, 32 bytes) }. */
const SPKI_PREFIX = new Uint8Array([
  0x30,
  0x2a,
  0x30,
  0x05,
  0x06,
  0x03,
  0x2b,
  0x65,
  0x70,
  0x03,
  0x21,
  0x00,
]);

/** The group order L = 2^252 + 27742317777372353535851937790883648493. */
const L = 2n ** 252n + 27742317777372353535851937790883648493n;
/** The field prime p = 2^255 - 19. */
const P = 2n ** 255n - 19n;

/**
 * Encodings of the eight small-order points, plus the two non-canonical
 * "negative zero x" encodings of the points whose x is zero. Canonicality
 * (y < p) is checked separately, which excludes the remaining aliases.
 */
const SMALL_ORDER_ENCODINGS: ReadonlySet<string> = new Set([
  "0100000000000000000000000000000000000000000000000000000000000000",
  "0100000000000000000000000000000000000000000000000000000000000080",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
  "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
  "0000000000000000000000000000000000000000000000000000000000000000",
  "0000000000000000000000000000000000000000000000000000000000000080",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
  "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
]);

/** RFC 8032 §7.1 TEST 1, used to check that the WebCrypto backend really works. */
const PROBE_SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const PROBE_SIGNATURE = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155" +
  "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";

let probed: Ed25519Backend | undefined;
let probing: Promise<Ed25519Backend> | undefined;

function subtle(): SubtleCrypto | undefined {
  return (globalThis.crypto as Crypto | undefined)?.subtle;
}

async function probeWebCrypto(): Promise<Ed25519Backend> {
  try {
    const api = subtle();
    if (!api) return "noble";
    const key = await api.importKey(
      "pkcs8",
      pkcs8Der(fromHex(PROBE_SEED, SEED_BYTES)),
      { name: "Ed25519" },
      false,
      ["sign"],
    );
    const signature = await api.sign({ name: "Ed25519" }, key, new Uint8Array(0));
    return toHex(new Uint8Array(signature)) === PROBE_SIGNATURE ? "webcrypto" : "noble";
  } catch {
    return "noble";
  }
}

function startProbe(): Promise<Ed25519Backend> {
  probing ??= probeWebCrypto().then((backend) => (probed = backend));
  return probing;
}

// Start probing as soon as the module loads, so `defaultBackend()` usually has an answer.
startProbe();

function envBackend(): Ed25519Backend | undefined {
  const value = getEnv(BACKEND_ENV);
  if (value === undefined || value === "") return undefined;
  if (value === "noble" || value === "webcrypto") return value;
  throw new UsageError(
    `${BACKEND_ENV} must be "noble" or "webcrypto", got ${quote(value)}`,
    { hint: `unset ${BACKEND_ENV} to pick the backend automatically` },
  );
}

/**
 * The backend used when none is given: `CTXSNAP_ED25519` (`noble` or
 * `webcrypto`) if set, else `"webcrypto"` when `crypto.subtle` supports
 * Ed25519 (probed once, at module load, and cached), else `"noble"`.
 *
 * The probe is asynchronous; until it has settled this returns `"noble"`,
 * which is always available. {@linkcode resolveDefaultBackend} waits for it.
 *
 * @example
 * ```ts
 * import { defaultBackend } from "./ed25519.ts";
 * if (!(["webcrypto", "noble"].includes(defaultBackend()))) throw new Error("Example failed");
 * ```
 */
export function defaultBackend(): Ed25519Backend {
  return envBackend() ?? probed ?? "noble";
}

/**
 * Like {@linkcode defaultBackend}, but waits for the WebCrypto probe to settle.
 *
 * @example
 * ```ts
 * import { resolveDefaultBackend } from "./ed25519.ts";
 * if (!(["webcrypto", "noble"].includes(await resolveDefaultBackend()))) throw new Error("Example failed");
 * ```
 */
export async function resolveDefaultBackend(): Promise<Ed25519Backend> {
  return envBackend() ?? await startProbe();
}

function checkBackend(backend: unknown): Ed25519Backend {
  if (backend === "webcrypto" || backend === "noble") return backend;
  throw new UsageError(`Unknown Ed25519 backend ${quote(backend)}`);
}

function checkSeed(seed: Uint8Array): void {
  if (!(seed instanceof Uint8Array) || seed.length !== SEED_BYTES) {
    throw new IntegrityError(
      `Ed25519 seed must be ${SEED_BYTES} bytes, got ${quote(seed?.length ?? typeof seed)}`,
    );
  }
}

/**
 * Returns 32 cryptographically random bytes: a fresh Ed25519 private key seed.
 *
 * @example
 * ```ts
 * import { generateSeed } from "./ed25519.ts";
 * if (!(generateSeed().length === 32)) throw new Error("Example failed");
 * ```
 */
export function generateSeed(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(SEED_BYTES));
}

function pkcs8Der(seed: Uint8Array): Uint8Array<ArrayBuffer> {
  const der = new Uint8Array(PKCS8_PREFIX.length + SEED_BYTES);
  der.set(PKCS8_PREFIX, 0);
  der.set(seed, PKCS8_PREFIX.length);
  return der;
}

function spkiDer(publicKey: Uint8Array): Uint8Array<ArrayBuffer> {
  const der = new Uint8Array(SPKI_PREFIX.length + PUBLIC_KEY_BYTES);
  der.set(SPKI_PREFIX, 0);
  der.set(publicKey, SPKI_PREFIX.length);
  return der;
}

function copy(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(bytes);
}

async function importSigningKey(seed: Uint8Array, extractable: boolean): Promise<CryptoKey> {
  return await subtle()!.importKey("pkcs8", pkcs8Der(seed), { name: "Ed25519" }, extractable, [
    "sign",
  ]);
}

function base64UrlToBytes(text: string): Uint8Array {
  const b64 = text.replaceAll("-", "+").replaceAll("_", "/");
  return base64ToBytes(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
}

/**
 * Derives the 32-byte public key of `seed`.
 *
 * @example
 * ```ts
 * import { publicKeyFromSeed } from "./ed25519.ts";
 * const publicKey = await publicKeyFromSeed(new Uint8Array(32), "noble");
 * if (!(publicKey.length === 32)) throw new Error("Example failed");
 * ```
 */
export async function publicKeyFromSeed(
  seed: Uint8Array,
  backend?: Ed25519Backend,
): Promise<Uint8Array> {
  checkSeed(seed);
  const chosen = checkBackend(backend ?? await resolveDefaultBackend());
  if (chosen === "noble") return ed25519.getPublicKey(copy(seed));
  const key = await importSigningKey(seed, true);
  const jwk = await subtle()!.exportKey("jwk", key);
  const publicKey = base64UrlToBytes(jwk.x ?? "");
  if (publicKey.length !== PUBLIC_KEY_BYTES) {
    throw new IntegrityError("WebCrypto returned an Ed25519 public key of the wrong length");
  }
  return publicKey;
}

/**
 * Signs `message` with the private key `seed`; returns the 64-byte signature.
 * Ed25519 signing is deterministic, so both backends return identical bytes.
 *
 * @example
 * ```ts
 * import { sign } from "./ed25519.ts";
 * const signature = await sign(new Uint8Array(32), new Uint8Array([1, 2, 3]));
 * if (!(signature.length === 64)) throw new Error("Example failed");
 * ```
 */
export async function sign(
  seed: Uint8Array,
  message: Uint8Array,
  backend?: Ed25519Backend,
): Promise<Uint8Array> {
  checkSeed(seed);
  const chosen = checkBackend(backend ?? await resolveDefaultBackend());
  if (chosen === "noble") return ed25519.sign(copy(message), copy(seed));
  const key = await importSigningKey(seed, false);
  return new Uint8Array(await subtle()!.sign({ name: "Ed25519" }, key, copy(message)));
}

function littleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

/** Whether a 32-byte point encoding has its y coordinate (sign bit cleared) below p. */
function isCanonicalPointEncoding(encoding: Uint8Array): boolean {
  const y = new Uint8Array(encoding);
  y[31] = y[31]! & 0x7f;
  return littleEndian(y) < P;
}

/**
 * The checks both backends share, so that they agree on every input: exact
 * lengths, `S < L`, canonical encodings of the public key and of `R`, and
 * neither of them a small-order point.
 */
function passesStrictChecks(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): boolean {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== PUBLIC_KEY_BYTES) return false;
  if (!(signature instanceof Uint8Array) || signature.length !== SIGNATURE_BYTES) return false;
  if (!(message instanceof Uint8Array)) return false;
  const r = signature.subarray(0, 32);
  if (littleEndian(signature.subarray(32)) >= L) return false;
  if (!isCanonicalPointEncoding(publicKey) || !isCanonicalPointEncoding(r)) return false;
  if (SMALL_ORDER_ENCODINGS.has(toHex(publicKey))) return false;
  if (SMALL_ORDER_ENCODINGS.has(toHex(r))) return false;
  return true;
}

/** Cofactorless RFC 8032 verification on `@noble/curves` points: `[S]B - [k]A` must encode to `R`. */
function nobleVerify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  let point;
  try {
    point = ed25519.Point.fromBytes(copy(publicKey), false);
  } catch {
    return false;
  }
  const r = signature.subarray(0, 32);
  const s = littleEndian(signature.subarray(32));
  const input = new Uint8Array(64 + message.length);
  input.set(r, 0);
  input.set(publicKey, 32);
  input.set(message, 64);
  const k = littleEndian(sha512(input)) % L;
  const expected = ed25519.Point.BASE.multiplyUnsafe(s).subtract(point.multiplyUnsafe(k));
  return toHex(expected.toBytes()) === toHex(r);
}

async function webcryptoVerify(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
): Promise<boolean> {
  try {
    const key = await subtle()!.importKey("raw", copy(publicKey), { name: "Ed25519" }, false, [
      "verify",
    ]);
    return await subtle()!.verify({ name: "Ed25519" }, key, copy(signature), copy(message));
  } catch {
    return false;
  }
}

/**
 * Whether `signature` is a valid Ed25519 signature of `message` by `publicKey`.
 * Returns `false`, never throws, for a wrong signature, wrong lengths, a
 * non-canonical `S` or point encoding, or a small-order or invalid key.
 *
 * @example
 * ```ts
 * import { publicKeyFromSeed, sign, verify } from "./ed25519.ts";
 * const seed = new Uint8Array(32).fill(7);
 * const message = new TextEncoder().encode("m");
 * const signature = await sign(seed, message);
 * if (!(await verify(await publicKeyFromSeed(seed), message, signature, "noble"))) throw new Error("Example failed");
 * if (!(!(await verify(new Uint8Array(32), message, signature)))) throw new Error("Example failed");
 * ```
 */
export async function verify(
  publicKey: Uint8Array,
  message: Uint8Array,
  signature: Uint8Array,
  backend?: Ed25519Backend,
): Promise<boolean> {
  const chosen = checkBackend(backend ?? await resolveDefaultBackend());
  if (!passesStrictChecks(publicKey, message, signature)) return false;
  if (chosen === "noble") return nobleVerify(publicKey, message, signature);
  return await webcryptoVerify(publicKey, message, signature);
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function base64ToBytes(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

function toPem(label: string, der: Uint8Array): string {
  const body = bytesToBase64(der).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${body.join("\n")}\n-----END ${label}-----\n`;
}

/**
 * Strictly decodes one PEM block with `label`: only surrounding whitespace is
 * tolerated, the body must be canonical padded base64 in lines of at most 64
 * characters (LF or CRLF).
 */
function fromPem(pem: string, label: string, what: string): Uint8Array {
  if (typeof pem !== "string") throw new IntegrityError(`${what} is not text`);
  const lines = pem.trim().split(/\r?\n/);
  const begin = `-----BEGIN ${label}-----`;
  const end = `-----END ${label}-----`;
  if (lines.length < 3 || lines[0] !== begin || lines[lines.length - 1] !== end) {
    throw new IntegrityError(`${what} is not a PEM "${label}" block: ${quote(pem)}`);
  }
  const body = lines.slice(1, -1);
  for (const line of body) {
    if (line.length === 0 || line.length > 64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(line)) {
      throw new IntegrityError(`${what} has an invalid base64 line ${quote(line)}`);
    }
  }
  const text = body.join("");
  let der: Uint8Array;
  try {
    der = base64ToBytes(text);
  } catch {
    throw new IntegrityError(`${what} has invalid base64 ${quote(text)}`);
  }
  if (bytesToBase64(der) !== text) {
    throw new IntegrityError(`${what} has non-canonical base64 ${quote(text)}`);
  }
  return der;
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

/**
 * Encodes `seed` as an RFC 8410 PKCS#8 PEM private key (what
 * `openssl genpkey -algorithm ed25519` writes).
 *
 * @example
 * ```ts
 * import { pkcs8PemToSeed, seedToPkcs8Pem } from "./ed25519.ts";
 * const seed = new Uint8Array(32).fill(1);
 * const pem = seedToPkcs8Pem(seed);
 * if (!(pem.startsWith("-----BEGIN PRIVATE KEY-----\n"))) throw new Error("Example failed");
 * if (!(pkcs8PemToSeed(pem).every((byte, i) => byte === seed[i]))) throw new Error("Example failed");
 * ```
 */
export function seedToPkcs8Pem(seed: Uint8Array): string {
  checkSeed(seed);
  return toPem("PRIVATE KEY", pkcs8Der(seed));
}

/**
 * Decodes an RFC 8410 PKCS#8 v1 PEM Ed25519 private key into its 32-byte seed.
 * Anything else (another algorithm, extra attributes, trailing data, bad
 * base64) is refused with an {@linkcode IntegrityError}.
 *
 * @example
 * ```ts
 * import { pkcs8PemToSeed } from "./ed25519.ts";
 * const pem = "-----BEGIN PRIVATE KEY-----\n" +
 *   "MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n" +
 *   "-----END PRIVATE KEY-----\n";
 * if (!(pkcs8PemToSeed(pem).length === 32)) throw new Error("Example failed");
 * ```
 */
export function pkcs8PemToSeed(pem: string): Uint8Array {
  const der = fromPem(pem, "PRIVATE KEY", "Private key");
  if (der.length !== PKCS8_PREFIX.length + SEED_BYTES || !startsWith(der, PKCS8_PREFIX)) {
    throw new IntegrityError(
      `Private key is not an RFC 8410 Ed25519 PKCS#8 key (DER ${quote(toHex(der))})`,
    );
  }
  return der.slice(PKCS8_PREFIX.length);
}

/** Whether `publicKey` is a canonical encoding of a point on the curve outside the small-order subgroup. */
function isUsablePublicKey(publicKey: Uint8Array): boolean {
  if (publicKey.length !== PUBLIC_KEY_BYTES || !isCanonicalPointEncoding(publicKey)) return false;
  if (SMALL_ORDER_ENCODINGS.has(toHex(publicKey))) return false;
  try {
    ed25519.Point.fromBytes(copy(publicKey), false);
    return true;
  } catch {
    return false;
  }
}

function checkPublicKey(publicKey: Uint8Array, source: string): Uint8Array {
  if (!(publicKey instanceof Uint8Array) || !isUsablePublicKey(publicKey)) {
    const shown = publicKey instanceof Uint8Array ? toHex(publicKey) : String(publicKey);
    throw new IntegrityError(`${source} is not a valid Ed25519 public key: ${quote(shown)}`);
  }
  return publicKey;
}

/**
 * Encodes a raw 32-byte public key as an RFC 8410 SPKI PEM public key.
 *
 * @example
 * ```ts
 * import { publicKeyFromSeed, publicKeyToSpkiPem, spkiPemToPublicKey } from "./ed25519.ts";
 * const publicKey = await publicKeyFromSeed(new Uint8Array(32).fill(2));
 * const pem = publicKeyToSpkiPem(publicKey);
 * if (!(pem.startsWith("-----BEGIN PUBLIC KEY-----\n"))) throw new Error("Example failed");
 * if (!(spkiPemToPublicKey(pem).every((byte, i) => byte === publicKey[i]))) throw new Error("Example failed");
 * ```
 */
export function publicKeyToSpkiPem(publicKey: Uint8Array): string {
  checkPublicKey(publicKey, "Public key");
  return toPem("PUBLIC KEY", spkiDer(publicKey));
}

/**
 * Decodes an RFC 8410 SPKI PEM Ed25519 public key into its raw 32 bytes;
 * {@linkcode IntegrityError} for anything else, including invalid points.
 *
 * @example
 * ```ts
 * import { spkiPemToPublicKey } from "./ed25519.ts";
 * const pem = "-----BEGIN PUBLIC KEY-----\n" +
 *   "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n" +
 *   "-----END PUBLIC KEY-----\n";
 * if (!(spkiPemToPublicKey(pem).length === 32)) throw new Error("Example failed");
 * ```
 */
export function spkiPemToPublicKey(pem: string): Uint8Array {
  const der = fromPem(pem, "PUBLIC KEY", "Public key");
  if (der.length !== SPKI_PREFIX.length + PUBLIC_KEY_BYTES || !startsWith(der, SPKI_PREFIX)) {
    throw new IntegrityError(
      `Public key is not an RFC 8410 Ed25519 SPKI key (DER ${quote(toHex(der))})`,
    );
  }
  return checkPublicKey(der.slice(SPKI_PREFIX.length), "Public key");
}

/**
 * The key id of a public key: the first 16 hex chars of SHA-256 over its raw 32 bytes.
 *
 * @example
 * ```ts
 * import { keyIdOf } from "./ed25519.ts";
 * if (!(keyIdOf(new Uint8Array(32)) === "66687aadf862bd77")) throw new Error("Example failed");
 * ```
 */
export function keyIdOf(publicKey: Uint8Array): string {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== PUBLIC_KEY_BYTES) {
    throw new IntegrityError(
      `Public key must be ${PUBLIC_KEY_BYTES} bytes, got ${quote(publicKey?.length)}`,
    );
  }
  return sha256Hex(publicKey).slice(0, 16);
}

/**
 * Parses a public key given as 64 lowercase hex chars or as SPKI PEM text
 * (surrounding whitespace ignored); {@linkcode IntegrityError} otherwise,
 * including for encodings of invalid or small-order points.
 *
 * @example
 * ```ts
 * import { parsePublicKey } from "./ed25519.ts";
 * const hex = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
 * if (!(parsePublicKey(hex).length === 32)) throw new Error("Example failed");
 * ```
 */
export function parsePublicKey(text: string): Uint8Array {
  if (typeof text !== "string") throw new IntegrityError("Public key is not text");
  const trimmed = text.trim();
  if (isHex(trimmed, PUBLIC_KEY_BYTES * 2)) {
    return checkPublicKey(fromHex(trimmed, PUBLIC_KEY_BYTES), "Public key");
  }
  if (trimmed.startsWith("-----BEGIN PUBLIC KEY-----")) return spkiPemToPublicKey(trimmed);
  // Never echo the text: it may be a private key given by mistake.
  const label = /^-----BEGIN ([A-Z0-9 ]{1,40})-----/.exec(trimmed)?.[1];
  throw new IntegrityError(
    `Public key must be 64 lowercase hex characters or an SPKI PEM block, got ${
      label !== undefined ? `a PEM block labelled ${quote(label)}` : `${trimmed.length} characters`
    }${label === "PRIVATE KEY" ? " (a private key: share `ctxsnap key export` instead)" : ""}`,
  );
}
