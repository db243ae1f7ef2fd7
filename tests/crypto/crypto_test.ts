/**
 * Tests for `lib/crypto`: hashing (known answers, official BLAKE3 vectors,
 * streaming, `sha256sum`/`b3sum` interop), Ed25519 (RFC 8032 vectors on both
 * backends, cross-backend agreement on edge cases, `openssl` interop), the
 * identity key file and the trusted keys file.
 *
 * Run with `deno test --allow-read --allow-write --allow-env --allow-run tests/crypto/crypto_test.ts`.
 *
 * @module
 */
import { ed25519, ED25519_TORSION_SUBGROUP } from "@noble/curves/ed25519.js";
import { sha512 } from "@noble/hashes/sha2.js";
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertThrows } from "../_assert.ts";
import { concatBytes } from "../_util.ts";

const concat = (...parts: Uint8Array[]): Uint8Array => concatBytes(parts);
import {
  CanonicalJsonError,
  ConfigError,
  IntegrityError,
  NotFoundError,
  UsageError,
} from "../../lib/errors.ts";
import { fromHex, toHex } from "../../lib/encoding/hex.ts";
import { blake3Hex, createBlake3, createSha256, sha256Hex } from "../../lib/crypto/hash.ts";
import {
  defaultBackend,
  type Ed25519Backend,
  generateSeed,
  keyIdOf,
  parsePublicKey,
  pkcs8PemToSeed,
  publicKeyFromSeed,
  publicKeyToSpkiPem,
  resolveDefaultBackend,
  seedToPkcs8Pem,
  sign,
  spkiPemToPublicKey,
  verify,
} from "../../lib/crypto/ed25519.ts";
import {
  configDir,
  identityPath,
  loadIdentity,
  loadOrCreateIdentity,
} from "../../lib/keys/identity.ts";
import {
  Keyring,
  readTrustedKeys,
  type TrustedKey,
  trustedKeysPath,
  trustKey,
  untrustKey,
} from "../../lib/keys/keyring.ts";

const BACKENDS: Ed25519Backend[] = ["webcrypto", "noble"];
const encoder = new TextEncoder();
const VECTORS_DIR = new URL("../vectors/", import.meta.url);

// ---------------------------------------------------------------------------
// helpers

function hasTool(tool: string): boolean {
  try {
    return new Deno.Command("which", { args: [tool], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

const HAS_SHA256SUM = hasTool("sha256sum");
const HAS_B3SUM = hasTool("b3sum");
const HAS_OPENSSL = hasTool("openssl");

async function run(
  cmd: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const output = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

/** A small deterministic PRNG (xorshift32), so failures reproduce. */
function prng(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state;
  };
}

function randomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let offset = 0; offset < length; offset += 65536) {
    crypto.getRandomValues(out.subarray(offset, Math.min(length, offset + 65536)));
  }
  return out;
}

function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const out = new Uint8Array(bytes);
  out[bit >> 3] = out[bit >> 3]! ^ (1 << (bit & 7));
  return out;
}

function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, Deno.env.get(name)]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) Deno.env.delete(name);
      else Deno.env.set(name, value);
    }
  };
  apply(vars);
  try {
    return fn();
  } finally {
    apply(saved);
  }
}

async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "ctxsnap-crypto-test-" });
}

function modeOf(path: string): number {
  return Deno.statSync(path).mode! & 0o777;
}

interface Rfc8032Vector {
  name: string;
  secret_key: string;
  public_key: string;
  message: string;
  signature: string;
}

const RFC8032: Rfc8032Vector[] = JSON.parse(
  Deno.readTextFileSync(new URL("rfc8032_ed25519.json", VECTORS_DIR)),
).vectors;

interface Blake3Case {
  input_len: number;
  hash: string;
}

const BLAKE3_CASES: Blake3Case[] = JSON.parse(
  Deno.readTextFileSync(new URL("blake3.json", VECTORS_DIR)),
).cases;

function blake3Input(length: number): Uint8Array {
  const input = new Uint8Array(length);
  for (let i = 0; i < length; i++) input[i] = i % 251;
  return input;
}

// ---------------------------------------------------------------------------
// SHA-256

Deno.test("sha256Hex() matches the NIST known answers", () => {
  assertEquals(
    sha256Hex(""),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
  assertEquals(
    sha256Hex("abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
  assertEquals(
    sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
});

Deno.test("sha256Hex() hashes a string as its UTF-8 bytes", () => {
  assertEquals(sha256Hex("é€😀"), sha256Hex(encoder.encode("é€😀")));
  assertEquals(sha256Hex(new Uint8Array([0x61, 0x62, 0x63])), sha256Hex("abc"));
});

Deno.test("createSha256() gives the one-shot digest for any chunking", () => {
  const next = prng(256);
  for (const length of [0, 1, 63, 64, 65, 1000, 100_003]) {
    const data = randomBytes(length);
    const expected = sha256Hex(data);
    for (let round = 0; round < 5; round++) {
      const hasher = createSha256();
      let offset = 0;
      while (offset < length) {
        const size = 1 + (next() % Math.max(1, Math.min(length, 5000)));
        hasher.update(data.subarray(offset, offset + size));
        offset += size;
      }
      if (round === 0) hasher.update(new Uint8Array(0)); // empty chunks change nothing
      assertEquals(hasher.digestHex(), expected, `length ${length}, round ${round}`);
    }
  }
});

// ---------------------------------------------------------------------------
// BLAKE3

Deno.test("blake3Hex() matches every official BLAKE3 test vector", () => {
  assertEquals(BLAKE3_CASES.length, 22);
  for (const { input_len, hash } of BLAKE3_CASES) {
    assertEquals(blake3Hex(blake3Input(input_len)), hash.slice(0, 64), `input_len ${input_len}`);
  }
});

Deno.test("blake3Hex() output differs from another vector's expected hash", () => {
  for (let i = 0; i < BLAKE3_CASES.length; i++) {
    const current = BLAKE3_CASES[i]!;
    const other = BLAKE3_CASES[(i + 1) % BLAKE3_CASES.length]!;
    const actual = blake3Hex(blake3Input(current.input_len));
    assert(actual !== other.hash.slice(0, 64), `input_len ${current.input_len} matched the next`);
  }
});

Deno.test("createBlake3() gives the one-shot digest for any chunking", () => {
  const next = prng(3);
  for (const { input_len, hash } of BLAKE3_CASES) {
    const data = blake3Input(input_len);
    const hasher = createBlake3();
    let offset = 0;
    while (offset < input_len) {
      const size = 1 + (next() % 3000);
      hasher.update(data.subarray(offset, offset + size));
      offset += size;
    }
    assertEquals(hasher.digestHex(), hash.slice(0, 64), `input_len ${input_len}`);
  }
  assertEquals(blake3Hex("abc"), blake3Hex(encoder.encode("abc")));
});

// ---------------------------------------------------------------------------
// interop with coreutils sha256sum and b3sum

const INTEROP_SIZES = [0, 1, 1024 * 1024 + 7];

async function writeRandomFiles(dir: string): Promise<string[]> {
  const paths: string[] = [];
  for (const size of INTEROP_SIZES) {
    const path = join(dir, `random-${size}.bin`);
    await Deno.writeFile(path, randomBytes(size));
    paths.push(path);
  }
  return paths;
}

Deno.test({
  name: "sha256Hex() agrees with sha256sum on random files",
  ignore: !HAS_SHA256SUM,
  fn: async () => {
    const dir = await tempDir();
    for (const path of await writeRandomFiles(dir)) {
      const result = await run("sha256sum", [path]);
      assertEquals(result.code, 0, result.stderr);
      assertEquals(sha256Hex(await Deno.readFile(path)), result.stdout.split(" ")[0], path);
    }
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name: "blake3Hex() agrees with b3sum on random files",
  ignore: !HAS_B3SUM,
  fn: async () => {
    const dir = await tempDir();
    for (const path of await writeRandomFiles(dir)) {
      const result = await run("b3sum", ["--no-names", path]);
      assertEquals(result.code, 0, result.stderr);
      assertEquals(blake3Hex(await Deno.readFile(path)), result.stdout.trim(), path);
    }
    await Deno.remove(dir, { recursive: true });
  },
});

// ---------------------------------------------------------------------------
// Ed25519: RFC 8032 vectors

for (const backend of BACKENDS) {
  Deno.test(`${backend}: publicKeyFromSeed(), sign() and verify() reproduce RFC 8032 §7.1`, async () => {
    assertEquals(RFC8032.length, 5);
    for (const vector of RFC8032) {
      const seed = fromHex(vector.secret_key, 32);
      const message = fromHex(vector.message);
      const publicKey = await publicKeyFromSeed(seed, backend);
      assertEquals(toHex(publicKey), vector.public_key, vector.name);
      const signature = await sign(seed, message, backend);
      assertEquals(toHex(signature), vector.signature, vector.name);
      assert(
        await verify(fromHex(vector.public_key), message, fromHex(vector.signature), backend),
        vector.name,
      );
    }
  });

  Deno.test(`${backend}: verify() rejects each RFC 8032 vector with one bit flipped`, async () => {
    for (const vector of RFC8032) {
      const publicKey = fromHex(vector.public_key);
      const message = fromHex(vector.message);
      const signature = fromHex(vector.signature);
      // R, the low and high bytes of S (bit 511 makes S >= L), and bit 255 (R's sign bit).
      for (const bit of [0, 7, 255, 256, 300, 511]) {
        assert(
          !(await verify(publicKey, message, flipBit(signature, bit), backend)),
          `${vector.name}: signature bit ${bit}`,
        );
      }
      const otherMessage = message.length === 0 ? new Uint8Array([0]) : flipBit(message, 0);
      assert(!(await verify(publicKey, otherMessage, signature, backend)), `${vector.name}: msg`);
      const lastBit = message.length * 8 - 1;
      if (lastBit > 0) {
        assert(
          !(await verify(publicKey, flipBit(message, lastBit), signature, backend)),
          `${vector.name}: last message bit`,
        );
      }
      for (const bit of [0, 100, 255]) {
        assert(
          !(await verify(flipBit(publicKey, bit), message, signature, backend)),
          `${vector.name}: public key bit ${bit}`,
        );
      }
    }
  });

  Deno.test(`${backend}: verify() rejects a signature made over another message`, async () => {
    const seed = generateSeed();
    const publicKey = await publicKeyFromSeed(seed, backend);
    const signature = await sign(seed, encoder.encode("snapshot A"), backend);
    assert(await verify(publicKey, encoder.encode("snapshot A"), signature, backend));
    assert(!(await verify(publicKey, encoder.encode("snapshot B"), signature, backend)));
    const otherKey = await publicKeyFromSeed(generateSeed(), backend);
    assert(!(await verify(otherKey, encoder.encode("snapshot A"), signature, backend)));
  });

  Deno.test(`${backend}: verify() returns false, not throws, for inputs of the wrong length`, async () => {
    const seed = generateSeed();
    const publicKey = await publicKeyFromSeed(seed, backend);
    const message = encoder.encode("m");
    const signature = await sign(seed, message, backend);
    for (const length of [0, 31, 33, 64]) {
      const key = new Uint8Array(length);
      key.set(publicKey.subarray(0, Math.min(32, length)));
      assert(!(await verify(key, message, signature, backend)), `public key length ${length}`);
    }
    for (const length of [0, 32, 63, 65, 128]) {
      const sig = new Uint8Array(length);
      sig.set(signature.subarray(0, Math.min(64, length)));
      assert(!(await verify(publicKey, message, sig, backend)), `signature length ${length}`);
    }
  });
}

Deno.test("sign() refuses a seed that is not 32 bytes", async () => {
  for (const backend of BACKENDS) {
    await assertRejects(() => sign(new Uint8Array(31), new Uint8Array(0), backend), IntegrityError);
    await assertRejects(() => publicKeyFromSeed(new Uint8Array(33), backend), IntegrityError);
  }
});

Deno.test("signatures from one backend verify with the other", async () => {
  const next = prng(25519);
  for (let i = 0; i < 20; i++) {
    const seed = generateSeed();
    const message = randomBytes(next() % 2000);
    const [fromWebcrypto, fromNoble] = [
      await sign(seed, message, "webcrypto"),
      await sign(seed, message, "noble"),
    ];
    assertEquals(fromWebcrypto, fromNoble, "Ed25519 is deterministic");
    const [keyWebcrypto, keyNoble] = [
      await publicKeyFromSeed(seed, "webcrypto"),
      await publicKeyFromSeed(seed, "noble"),
    ];
    assertEquals(keyWebcrypto, keyNoble);
    assert(await verify(keyNoble, message, fromWebcrypto, "noble"));
    assert(await verify(keyWebcrypto, message, fromNoble, "webcrypto"));
  }
});

// ---------------------------------------------------------------------------
// Ed25519: edge cases both backends must agree on

const Point = ed25519.Point;
const L = Point.Fn.ORDER;
const P = 2n ** 255n - 19n;

function le(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

function toLe(value: bigint): Uint8Array {
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    out[i] = Number(value & 255n);
    value >>= 8n;
  }
  return out;
}

function challenge(r: Uint8Array, publicKey: Uint8Array, message: Uint8Array): bigint {
  return le(sha512(concat(r, publicKey, message))) % L;
}

/** Signs with a raw scalar `a` for a public key encoding `publicKey` (which may not be aB). */
function rawSign(a: bigint, publicKey: Uint8Array, message: Uint8Array, nonce: bigint) {
  const r = Point.BASE.multiply(nonce).toBytes();
  const k = challenge(r, publicKey, message);
  return { signature: concat(r, toLe((nonce + k * a) % L)), k };
}

interface EdgeCase {
  name: string;
  publicKey: Uint8Array;
  message: Uint8Array;
  signature: Uint8Array;
  expected: boolean;
}

function edgeCases(): EdgeCase[] {
  const cases: EdgeCase[] = [];
  const message = encoder.encode("edge");
  const a = 0x1234567890abcdef1234567890abcdefn;
  const publicKey = Point.BASE.multiply(a).toBytes();
  const valid = rawSign(a, publicKey, message, 987654321n).signature;
  const r = valid.subarray(0, 32);
  const s = le(valid.subarray(32));
  const torsion8 = Point.fromHex(ED25519_TORSION_SUBGROUP[3]!); // a point of order 8
  const identity = Point.ZERO.toBytes();
  const zero = new Uint8Array(32);
  const hex = (text: string) => fromHex(text, 32);

  cases.push({ name: "valid", publicKey, message, signature: valid, expected: true });
  cases.push({
    name: "S + L (non-canonical S)",
    publicKey,
    message,
    signature: concat(r, toLe(s + L)),
    expected: false,
  });
  cases.push({
    name: "S = L",
    publicKey,
    message,
    signature: concat(r, toLe(L)),
    expected: false,
  });
  cases.push({
    name: "S with the top bit set",
    publicKey,
    message,
    signature: flipBit(valid, 511),
    expected: false,
  });
  cases.push({
    name: "identity A, identity R, S = 0",
    publicKey: identity,
    message,
    signature: concat(identity, zero),
    expected: false,
  });
  cases.push({
    name: "non-canonical identity A (y = p + 1)",
    publicKey: toLe(P + 1n),
    message,
    signature: concat(identity, zero),
    expected: false,
  });
  cases.push({
    name: "negative-zero identity A",
    publicKey: hex("0100000000000000000000000000000000000000000000000000000000000080"),
    message,
    signature: concat(identity, zero),
    expected: false,
  });
  cases.push({
    name: "A encoded with y = p",
    publicKey: toLe(P),
    message,
    signature: concat(identity, zero),
    expected: false,
  });
  cases.push({
    name: "non-canonical identity R",
    publicKey,
    message,
    signature: concat(toLe(P + 1n), zero),
    expected: false,
  });
  // Every small-order A, with R = identity and S = 0: [S]B = R + [k]A holds when [k]A = O.
  for (const [i, encoding] of ED25519_TORSION_SUBGROUP.entries()) {
    const smallA = fromHex(encoding, 32);
    for (let counter = 0; counter < 64; counter++) {
      const m = encoder.encode(`small-order-${i}-${counter}`);
      const k = challenge(identity, smallA, m);
      if (Point.fromBytes(smallA).multiplyUnsafe(k).is0()) {
        cases.push({
          name: `small-order A #${i} where [k]A = O`,
          publicKey: smallA,
          message: m,
          signature: concat(identity, zero),
          expected: false,
        });
        break;
      }
    }
  }
  // Mixed-order A = aB + T: a cofactorless check accepts only when 8 divides k; both agree.
  const mixedA = Point.BASE.multiply(a).add(torsion8).toBytes();
  let sawDivisible = false;
  let sawOther = false;
  for (let counter = 0; counter < 200 && !(sawDivisible && sawOther); counter++) {
    const m = encoder.encode(`mixed-${counter}`);
    const { signature, k } = rawSign(a, mixedA, m, 1000n + BigInt(counter));
    const divisible = k % 8n === 0n;
    if (divisible ? sawDivisible : sawOther) continue;
    if (divisible) sawDivisible = true;
    else sawOther = true;
    cases.push({
      name: `mixed-order A, k ${divisible ? "≡" : "≢"} 0 mod 8`,
      publicKey: mixedA,
      message: m,
      signature,
      expected: divisible,
    });
  }
  // Mixed-order R = rB + T: valid under a cofactored check only.
  cases.push({
    name: "mixed-order R",
    publicKey,
    message,
    signature: concat(Point.fromBytes(r).add(torsion8).toBytes(), toLe(s)),
    expected: false,
  });
  // Small-order R with S = k·a: [8][S]B = [8]R + [8][k]A holds, the cofactorless check does not.
  {
    const smallR = torsion8.toBytes();
    const k = challenge(smallR, publicKey, message);
    cases.push({
      name: "small-order R",
      publicKey,
      message,
      signature: concat(smallR, toLe((k * a) % L)),
      expected: false,
    });
  }
  cases.push({
    name: "A off the curve",
    publicKey: hex("0200000000000000000000000000000000000000000000000000000000000000"),
    message,
    signature: valid,
    expected: false,
  });
  cases.push({
    name: "R off the curve",
    publicKey,
    message,
    signature: concat(
      hex("0200000000000000000000000000000000000000000000000000000000000000"),
      toLe(s),
    ),
    expected: false,
  });
  // A valid, non-small-order point with a small y, re-encoded as y + p.
  for (let y = 2n; y < 19n; y++) {
    try {
      const point = Point.fromBytes(toLe(y));
      if (point.isSmallOrder()) continue;
      cases.push({
        name: `non-canonical A (y = ${y} + p)`,
        publicKey: toLe(y + P),
        message,
        signature: valid,
        expected: false,
      });
      break;
    } catch {
      // not on the curve
    }
  }
  cases.push({
    name: "all-zero signature",
    publicKey,
    message,
    signature: new Uint8Array(64),
    expected: false,
  });
  cases.push({
    name: "all-ones signature",
    publicKey,
    message,
    signature: new Uint8Array(64).fill(255),
    expected: false,
  });
  return cases;
}

Deno.test("both backends agree on Ed25519 verification edge cases", async () => {
  const cases = edgeCases();
  assert(cases.length >= 25, `only ${cases.length} edge cases`);
  assert(cases.some((c) => c.name.includes("≡")) && cases.some((c) => c.name.includes("≢")));
  for (const c of cases) {
    const results: boolean[] = [];
    for (const backend of BACKENDS) {
      results.push(await verify(c.publicKey, c.message, c.signature, backend));
    }
    assertEquals(results, [c.expected, c.expected], c.name);
  }
});

Deno.test("both backends agree on random signatures with random corruptions", async () => {
  const next = prng(8032);
  for (let i = 0; i < 50; i++) {
    const seed = generateSeed();
    const message = randomBytes(next() % 100);
    const publicKey = await publicKeyFromSeed(seed);
    let signature = await sign(seed, message);
    let key = publicKey;
    if (i % 3 === 0) signature = flipBit(signature, next() % 512);
    if (i % 3 === 1) key = flipBit(publicKey, next() % 256);
    const webcrypto = await verify(key, message, signature, "webcrypto");
    const noble = await verify(key, message, signature, "noble");
    assertEquals(webcrypto, noble, `case ${i}`);
    assertEquals(webcrypto, i % 3 === 2, `case ${i}`);
  }
});

// ---------------------------------------------------------------------------
// Ed25519: backend selection

Deno.test("defaultBackend() prefers WebCrypto and honours CTXSNAP_ED25519", async () => {
  await withEnv({ CTXSNAP_ED25519: undefined }, async () => {
    assertEquals(await resolveDefaultBackend(), "webcrypto");
    assertEquals(defaultBackend(), "webcrypto");
  });
  withEnv({ CTXSNAP_ED25519: "noble" }, () => assertEquals(defaultBackend(), "noble"));
  withEnv({ CTXSNAP_ED25519: "webcrypto" }, () => assertEquals(defaultBackend(), "webcrypto"));
  withEnv({ CTXSNAP_ED25519: "openssl" }, () => {
    assertThrows(() => defaultBackend(), UsageError, '"openssl"');
  });
});

Deno.test("sign() with CTXSNAP_ED25519=noble gives the same signature", async () => {
  const seed = generateSeed();
  const message = encoder.encode("backend");
  const expected = await sign(seed, message, "webcrypto");
  const signature = await withEnv({ CTXSNAP_ED25519: "noble" }, () => sign(seed, message));
  assertEquals(signature, expected);
});

// ---------------------------------------------------------------------------
// Ed25519: keys and PEM

const TEST1 = RFC8032[0]!;

Deno.test("seedToPkcs8Pem() round-trips through pkcs8PemToSeed()", () => {
  const seed = fromHex(TEST1.secret_key, 32);
  const pem = seedToPkcs8Pem(seed);
  assert(pem.startsWith("-----BEGIN PRIVATE KEY-----\n"));
  assert(pem.endsWith("-----END PRIVATE KEY-----\n"));
  assertEquals(pkcs8PemToSeed(pem), seed);
  assertEquals(pkcs8PemToSeed(pem.replaceAll("\n", "\r\n")), seed, "CRLF line ends");
  assertEquals(pkcs8PemToSeed(`\n${pem}\n\n`), seed, "surrounding blank lines");
  for (let i = 0; i < 20; i++) {
    const random = generateSeed();
    assertEquals(pkcs8PemToSeed(seedToPkcs8Pem(random)), random);
  }
});

Deno.test("pkcs8PemToSeed() refuses anything but an RFC 8410 Ed25519 PKCS#8 key", () => {
  const seed = fromHex(TEST1.secret_key, 32);
  const pem = seedToPkcs8Pem(seed);
  const body = pem.split("\n")[1]!;
  const derPem = (der: Uint8Array) =>
    `-----BEGIN PRIVATE KEY-----\n${
      btoa(String.fromCharCode(...der))
    }\n-----END PRIVATE KEY-----\n`;
  const der = Uint8Array.from(atob(body), (c) => c.charCodeAt(0));
  const x25519 = new Uint8Array(der);
  x25519[11] = 0x6e; // OID 1.3.101.110 (X25519)
  // A PKCS#8 v2 (OneAsymmetricKey) with the public key attached: valid elsewhere, refused here.
  const v2 = concat(
    fromHex("3051020101300506032b657004220420"),
    seed,
    fromHex("812100"),
    fromHex(TEST1.public_key),
  );
  const malformed: Record<string, string> = {
    "empty": "",
    "garbage": "not a key",
    "wrong label": pem.replaceAll("PRIVATE KEY", "EC PRIVATE KEY"),
    "public key": publicKeyToSpkiPem(fromHex(TEST1.public_key)),
    "text before": `hello\n${pem}`,
    "text after": `${pem}trailer\n`,
    "two blocks": pem + pem,
    "no body": "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n",
    "blank line in body": pem.replace(body, `${body.slice(0, 32)}\n\n${body.slice(32)}`),
    "line over 64 characters": derPem(concat(der, der)),
    "bad base64": pem.replace(body, body.slice(0, -4) + "!!!!"),
    "X25519 key": derPem(x25519),
    "truncated": derPem(der.subarray(0, 40)),
    "trailing byte": derPem(concat(der, new Uint8Array([0]))),
    "PKCS#8 v2": derPem(v2),
  };
  for (const [name, text] of Object.entries(malformed)) {
    try {
      assertThrows(() => pkcs8PemToSeed(text), IntegrityError);
    } catch (error) {
      throw new Error(`${name}: ${(error as Error).message}`);
    }
  }
});

Deno.test("publicKeyToSpkiPem() round-trips through spkiPemToPublicKey()", async () => {
  const publicKey = await publicKeyFromSeed(generateSeed());
  const pem = publicKeyToSpkiPem(publicKey);
  assert(pem.startsWith("-----BEGIN PUBLIC KEY-----\n"));
  assertEquals(spkiPemToPublicKey(pem), publicKey);
  assertThrows(() => spkiPemToPublicKey(seedToPkcs8Pem(generateSeed())), IntegrityError);
  assertThrows(() => spkiPemToPublicKey(pem.replace("PUBLIC KEY-----\n", "PUBLIC KEY-----\n ")));
  // 44 DER bytes end in one "=": the two spare bits before it must be zero.
  const test1Pem = publicKeyToSpkiPem(fromHex(TEST1.public_key));
  assert(test1Pem.includes("URo=\n"));
  assertEquals(spkiPemToPublicKey(test1Pem), fromHex(TEST1.public_key));
  assertThrows(
    () => spkiPemToPublicKey(test1Pem.replace("URo=", "URp=")),
    IntegrityError,
    "non-canonical base64",
  );
  assertThrows(() => spkiPemToPublicKey(test1Pem.replace("URo=", "URo")), IntegrityError);
});

Deno.test("spkiPemToPublicKey() refuses small-order and off-curve keys", () => {
  const spki = (key: Uint8Array) => {
    const der = concat(fromHex("302a300506032b6570032100"), key);
    return `-----BEGIN PUBLIC KEY-----\n${
      btoa(String.fromCharCode(...der))
    }\n-----END PUBLIC KEY-----\n`;
  };
  assertEquals(spkiPemToPublicKey(spki(fromHex(TEST1.public_key))), fromHex(TEST1.public_key));
  for (const encoding of ED25519_TORSION_SUBGROUP) {
    assertThrows(() => spkiPemToPublicKey(spki(fromHex(encoding))), IntegrityError, encoding);
  }
  assertThrows(() => spkiPemToPublicKey(spki(toLe(2n))), IntegrityError, "not a valid Ed25519");
  assertThrows(() => publicKeyToSpkiPem(new Uint8Array(32)), IntegrityError);
});

Deno.test("keyIdOf() is the first 16 hex chars of SHA-256 of the raw public key", () => {
  const publicKey = fromHex(TEST1.public_key);
  assertEquals(keyIdOf(publicKey), sha256Hex(publicKey).slice(0, 16));
  assertEquals(keyIdOf(publicKey).length, 16);
  assertThrows(() => keyIdOf(new Uint8Array(31)), IntegrityError);
});

Deno.test("parsePublicKey() accepts lowercase hex or SPKI PEM and nothing else", () => {
  const publicKey = fromHex(TEST1.public_key);
  assertEquals(parsePublicKey(TEST1.public_key), publicKey);
  assertEquals(parsePublicKey(`  ${TEST1.public_key}\n`), publicKey);
  assertEquals(parsePublicKey(publicKeyToSpkiPem(publicKey)), publicKey);
  const refused = [
    "",
    TEST1.public_key.toUpperCase(),
    TEST1.public_key.slice(0, 62),
    TEST1.public_key + "00",
    `0x${TEST1.public_key}`,
    "0100000000000000000000000000000000000000000000000000000000000000", // identity
    toHex(toLe(2n)), // off the curve
    seedToPkcs8Pem(fromHex(TEST1.secret_key)),
  ];
  for (const text of refused) assertThrows(() => parsePublicKey(text), IntegrityError);
});

// ---------------------------------------------------------------------------
// openssl interop

Deno.test({
  name: "openssl reads seedToPkcs8Pem() keys and derives the same public key",
  ignore: !HAS_OPENSSL,
  fn: async () => {
    const dir = await tempDir();
    for (const seed of [fromHex(TEST1.secret_key, 32), generateSeed(), generateSeed()]) {
      const keyPath = join(dir, "key.pem");
      await Deno.writeTextFile(keyPath, seedToPkcs8Pem(seed), { mode: 0o600 });
      const result = await run("openssl", ["pkey", "-in", keyPath, "-pubout"]);
      assertEquals(result.code, 0, result.stderr);
      assertEquals(spkiPemToPublicKey(result.stdout), await publicKeyFromSeed(seed));
      assertEquals(result.stdout, publicKeyToSpkiPem(await publicKeyFromSeed(seed)));
    }
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name: "openssl verifies sign() signatures and rejects a flipped one",
  ignore: !HAS_OPENSSL,
  fn: async () => {
    const dir = await tempDir();
    const seed = generateSeed();
    const pubPath = join(dir, "pub.pem");
    await Deno.writeTextFile(pubPath, publicKeyToSpkiPem(await publicKeyFromSeed(seed)));
    const msgPath = join(dir, "msg");
    const sigPath = join(dir, "sig");
    // OpenSSL 3.0's pkeyutl cannot read an empty message, so sizes start at 1.
    for (const [i, size] of [1, 100, 4096, 100_000].entries()) {
      const message = randomBytes(size);
      await Deno.writeFile(msgPath, message);
      const backend = BACKENDS[i % 2]!;
      const signature = await sign(seed, message, backend);
      const verifyArgs = [
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        pubPath,
        "-rawin",
        "-in",
        msgPath,
        "-sigfile",
        sigPath,
      ];
      await Deno.writeFile(sigPath, signature);
      const good = await run("openssl", verifyArgs);
      assertEquals(good.code, 0, `${backend}, ${size} bytes: ${good.stdout}${good.stderr}`);
      await Deno.writeFile(sigPath, flipBit(signature, 3));
      const bad = await run("openssl", verifyArgs);
      assert(bad.code !== 0, `openssl accepted a flipped signature (${size} bytes)`);
    }
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test({
  name: "pkcs8PemToSeed() loads an `openssl genpkey` key, which signs as openssl does",
  ignore: !HAS_OPENSSL,
  fn: async () => {
    const dir = await tempDir();
    const keyPath = join(dir, "key.pem");
    const generated = await run("openssl", ["genpkey", "-algorithm", "ed25519", "-out", keyPath]);
    assertEquals(generated.code, 0, generated.stderr);
    const seed = pkcs8PemToSeed(await Deno.readTextFile(keyPath));
    const pub = await run("openssl", ["pkey", "-in", keyPath, "-pubout"]);
    assertEquals(spkiPemToPublicKey(pub.stdout), await publicKeyFromSeed(seed));
    const msgPath = join(dir, "msg");
    const sigPath = join(dir, "sig");
    const message = encoder.encode("ctxsnap-snapshot-v1:" + "ab".repeat(32));
    await Deno.writeFile(msgPath, message);
    const signed = await run("openssl", [
      "pkeyutl",
      "-sign",
      "-inkey",
      keyPath,
      "-rawin",
      "-in",
      msgPath,
      "-out",
      sigPath,
    ]);
    assertEquals(signed.code, 0, signed.stderr);
    const theirs = await Deno.readFile(sigPath);
    assertEquals(await sign(seed, message), theirs);
    for (const backend of BACKENDS) {
      assert(await verify(await publicKeyFromSeed(seed), message, theirs, backend), backend);
    }
    await Deno.remove(dir, { recursive: true });
  },
});

// ---------------------------------------------------------------------------
// identity

Deno.test("configDir() prefers CTXSNAP_CONFIG_DIR, then XDG_CONFIG_HOME, then HOME", () => {
  withEnv({ CTXSNAP_CONFIG_DIR: "/c", XDG_CONFIG_HOME: "/x", HOME: "/h" }, () => {
    assertEquals(configDir(), "/c");
  });
  withEnv({ CTXSNAP_CONFIG_DIR: undefined, XDG_CONFIG_HOME: "/x", HOME: "/h" }, () => {
    assertEquals(configDir(), "/x/ctxsnap");
  });
  withEnv({ CTXSNAP_CONFIG_DIR: "", XDG_CONFIG_HOME: "", HOME: "/h" }, () => {
    assertEquals(configDir(), "/h/.config/ctxsnap");
  });
  withEnv({ CTXSNAP_CONFIG_DIR: undefined, XDG_CONFIG_HOME: "relative", HOME: "/h" }, () => {
    assertEquals(configDir(), "/h/.config/ctxsnap");
  });
  withEnv({ CTXSNAP_CONFIG_DIR: undefined, XDG_CONFIG_HOME: undefined, HOME: undefined }, () => {
    assertThrows(() => configDir(), UsageError, "HOME");
  });
});

Deno.test("loadOrCreateIdentity() creates a 0600 key in a 0700 directory and reloads it", async () => {
  const root = await tempDir();
  const dir = join(root, "nested", "config");
  const created = await loadOrCreateIdentity(dir);
  assertEquals(created.path, identityPath(dir));
  assertEquals(modeOf(dir), 0o700);
  assertEquals(modeOf(created.path), 0o600);
  assertEquals(created.keyId, keyIdOf(created.publicKey));
  assertEquals(created.publicKeyHex, toHex(created.publicKey));
  assertEquals(await publicKeyFromSeed(created.seed), created.publicKey);
  const text = await Deno.readTextFile(created.path);
  assert(text.startsWith("-----BEGIN PRIVATE KEY-----\n"));
  const loaded = loadIdentity(dir);
  assertEquals(loaded, created);
  assertEquals(await loadOrCreateIdentity(dir), created);
  assertEquals([...Deno.readDirSync(dir)].map((entry) => entry.name), ["identity.pem"]);
  await Deno.remove(root, { recursive: true });
});

Deno.test("loadIdentity() throws NotFoundError with a hint when there is no key", async () => {
  const dir = await tempDir();
  const error = assertThrows(() => loadIdentity(dir), NotFoundError, "identity.pem");
  assert(error.hint?.includes("ctxsnap key show"), error.hint);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("loadIdentity() refuses a key file readable by group or others, hinting chmod", async () => {
  const dir = await tempDir();
  const { path } = await loadOrCreateIdentity(dir);
  for (const mode of [0o644, 0o640, 0o604, 0o660]) {
    await Deno.chmod(path, mode);
    const error = assertThrows(() => loadIdentity(dir), ConfigError, "group or others");
    assertEquals(error.hint, `chmod 600 ${path}`);
    await assertRejects(() => loadOrCreateIdentity(dir), ConfigError);
  }
  await Deno.chmod(path, 0o600);
  loadIdentity(dir);
  await Deno.chmod(path, 0o400);
  loadIdentity(dir); // read-only for the owner is fine
  await Deno.remove(dir, { recursive: true });
});

Deno.test("loadIdentity() refuses a malformed key file and never replaces it", async () => {
  const dir = await tempDir();
  const path = identityPath(dir);
  const contents = [
    "garbage\n",
    seedToPkcs8Pem(generateSeed()).replace("PRIVATE", "PUBLIC"),
    seedToPkcs8Pem(generateSeed()) + "extra\n",
    "",
  ];
  for (const text of contents) {
    await Deno.writeTextFile(path, text, { mode: 0o600 });
    await Deno.chmod(path, 0o600);
    assertThrows(() => loadIdentity(dir), ConfigError, "malformed");
    await assertRejects(() => loadOrCreateIdentity(dir), ConfigError, "malformed");
    assertEquals(await Deno.readTextFile(path), text, "the bad key is left for the user");
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("loadIdentity() refuses a symbolic link as the key file", async () => {
  const dir = await tempDir();
  const real = join(dir, "real.pem");
  await Deno.writeTextFile(real, seedToPkcs8Pem(generateSeed()), { mode: 0o600 });
  await Deno.symlink(real, identityPath(dir));
  assertThrows(() => loadIdentity(dir), ConfigError, "symbolic link");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("concurrent loadOrCreateIdentity() calls end with one shared key", async () => {
  const dir = join(await tempDir(), "config");
  const identities = await Promise.all(
    Array.from({ length: 8 }, () => loadOrCreateIdentity(dir)),
  );
  const onDisk = loadIdentity(dir);
  for (const identity of identities) assertEquals(identity, onDisk);
  assertEquals([...Deno.readDirSync(dir)].map((entry) => entry.name), ["identity.pem"]);
  await Deno.remove(join(dir, ".."), { recursive: true });
});

Deno.test("loadOrCreateIdentity() in racing processes ends with one shared key", async () => {
  const dir = join(await tempDir(), "config");
  const moduleUrl = new URL("../../lib/keys/identity.ts", import.meta.url).href;
  const script = `const { loadOrCreateIdentity } = await import(${JSON.stringify(moduleUrl)});
const identity = await loadOrCreateIdentity(${JSON.stringify(dir)});
await Deno.stdout.write(new TextEncoder().encode(identity.keyId));`;
  const outputs = await Promise.all(
    Array.from({ length: 4 }, () =>
      new Deno.Command(Deno.execPath(), {
        args: ["eval", "--quiet", script],
        cwd: new URL("../..", import.meta.url).pathname,
        stdout: "piped",
        stderr: "piped",
      }).output()),
  );
  const keyIds = outputs.map((output) => {
    assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
    return new TextDecoder().decode(output.stdout);
  });
  const expected = loadIdentity(dir).keyId;
  assertEquals(keyIds, [expected, expected, expected, expected]);
  assertEquals([...Deno.readDirSync(dir)].map((entry) => entry.name), ["identity.pem"]);
  await Deno.remove(join(dir, ".."), { recursive: true });
});

// ---------------------------------------------------------------------------
// keyring

async function publicKeyOf(fill: number): Promise<Uint8Array> {
  return await publicKeyFromSeed(new Uint8Array(32).fill(fill));
}

Deno.test("readTrustedKeys() returns [] when the file does not exist", async () => {
  const dir = await tempDir();
  assertEquals(readTrustedKeys(trustedKeysPath(dir)), []);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("trustKey(), readTrustedKeys() and untrustKey() round-trip", async () => {
  const dir = await tempDir();
  const path = trustedKeysPath(dir);
  const alice = await publicKeyOf(1);
  const bob = await publicKeyOf(2);
  const carol = await publicKeyOf(3);
  const a = trustKey(dir, alice, "alice");
  const b = trustKey(dir, bob);
  const c = trustKey(dir, carol, "carol");
  assertEquals(a, {
    keyId: keyIdOf(alice),
    publicKeyHex: toHex(alice),
    name: "alice",
    addedAt: a.addedAt,
  });
  assert(!Number.isNaN(Date.parse(a.addedAt)) && a.addedAt.endsWith("Z"));
  assertEquals(b.name, null);
  const expected = [a, b, c].sort((x, y) => x.keyId < y.keyId ? -1 : 1);
  assertEquals(readTrustedKeys(path), expected);

  // The file is the documented format, sorted by key_id.
  const document = JSON.parse(await Deno.readTextFile(path));
  assertEquals(document, {
    version: 1,
    keys: expected.map((key) => ({
      key_id: key.keyId,
      public_key: key.publicKeyHex,
      name: key.name,
      added_at: key.addedAt,
    })),
  });

  // Idempotent: same entry back, addedAt kept; a new name replaces the old one.
  assertEquals(trustKey(dir, alice), a);
  const renamed = trustKey(dir, bob, "bob");
  assertEquals(renamed, { ...b, name: "bob" });
  assertEquals(readTrustedKeys(path).length, 3);

  // Untrust by name, by unique prefix, by full key id.
  assertEquals(untrustKey(dir, "alice"), a);
  assertEquals(untrustKey(dir, c.keyId.slice(0, 6)), c);
  assertEquals(readTrustedKeys(path), [renamed]);
  assertEquals(untrustKey(dir, b.keyId), renamed);
  assertEquals(readTrustedKeys(path), []);
  assertEquals([...Deno.readDirSync(dir)].map((entry) => entry.name), ["trusted_keys.json"]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("untrustKey() refuses unknown keys, short prefixes and ambiguous prefixes", async () => {
  const dir = await tempDir();
  // Deterministically find two keys whose ids share their first 4 hex chars.
  const seen = new Map<string, Uint8Array>();
  let pair: [Uint8Array, Uint8Array] | undefined;
  for (let i = 1; !pair && i < 100_000; i++) {
    const seed = new Uint8Array(32);
    new DataView(seed.buffer).setUint32(0, i, true);
    const publicKey = await publicKeyFromSeed(seed);
    const prefix = keyIdOf(publicKey).slice(0, 4);
    const other = seen.get(prefix);
    if (other) pair = [other, publicKey];
    seen.set(prefix, publicKey);
  }
  assert(pair, "no 4-char key id collision found");
  const [first, second] = pair.map((publicKey) => trustKey(dir, publicKey)) as [
    TrustedKey,
    TrustedKey,
  ];
  const shared = first.keyId.slice(0, 4);
  assertThrows(() => untrustKey(dir, shared), UsageError, "ambiguous");
  assertThrows(() => untrustKey(dir, shared.slice(0, 3)), NotFoundError);
  assertThrows(() => untrustKey(dir, "ffffffffffffffff"), NotFoundError);
  assertThrows(() => untrustKey(dir, "nobody"), NotFoundError, '"nobody"');
  assertEquals(readTrustedKeys(trustedKeysPath(dir)).length, 2);
  // A longer prefix that tells them apart works.
  let length = 5;
  while (first.keyId.slice(0, length) === second.keyId.slice(0, length)) length++;
  assertEquals(untrustKey(dir, first.keyId.slice(0, length)), first);
  assertEquals(readTrustedKeys(trustedKeysPath(dir)), [second]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("trustKey() refuses a name held by another key, bad names and invalid keys", async () => {
  const dir = await tempDir();
  trustKey(dir, await publicKeyOf(1), "alice");
  const bob = await publicKeyOf(2);
  assertThrows(() => trustKey(dir, bob, "alice"), UsageError, "already used");
  assertThrows(() => trustKey(dir, bob, ""), UsageError, "empty");
  assertThrows(() => trustKey(dir, bob, " bob"), UsageError, "whitespace");
  assertThrows(() => trustKey(dir, bob, "b\nob"), UsageError, "control");
  assertThrows(() => trustKey(dir, new Uint8Array(32)), IntegrityError);
  assertThrows(() => trustKey(dir, fromHex(ED25519_TORSION_SUBGROUP[1]!)), IntegrityError);
  assertThrows(() => trustKey(dir, new Uint8Array(31)), UsageError);
  assertEquals(readTrustedKeys(trustedKeysPath(dir)).length, 1);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("readTrustedKeys() refuses a tampered file, naming it", async () => {
  const dir = await tempDir();
  const path = trustedKeysPath(dir);
  const alice = await publicKeyOf(1);
  const bob = await publicKeyOf(2);
  const entry = (publicKey: Uint8Array, extra: Record<string, unknown> = {}) => ({
    key_id: keyIdOf(publicKey),
    public_key: toHex(publicKey),
    name: null,
    added_at: "2026-01-02T03:04:05.678Z",
    ...extra,
  });
  const valid = { version: 1, keys: [entry(alice)] };
  await Deno.writeTextFile(path, JSON.stringify(valid));
  assertEquals(readTrustedKeys(path).length, 1);

  const tampered: Record<string, string> = {
    "key_id of another key": JSON.stringify({
      version: 1,
      keys: [entry(alice, { key_id: keyIdOf(bob) })],
    }),
    "public key swapped": JSON.stringify({
      version: 1,
      keys: [entry(alice, { public_key: toHex(bob) })],
    }),
    "unknown key field": JSON.stringify({ version: 1, keys: [entry(alice, { trusted: true })] }),
    "unknown top-level field": JSON.stringify({ ...valid, extra: 1 }),
    "version 2": JSON.stringify({ ...valid, version: 2 }),
    'version "1"': JSON.stringify({ ...valid, version: "1" }),
    "missing version": JSON.stringify({ keys: valid.keys }),
    "missing name": JSON.stringify({
      version: 1,
      keys: [{
        key_id: keyIdOf(alice),
        public_key: toHex(alice),
        added_at: "2026-01-02T03:04:05Z",
      }],
    }),
    "uppercase public key": JSON.stringify({
      version: 1,
      keys: [entry(alice, { public_key: toHex(alice).toUpperCase() })],
    }),
    "small-order public key": JSON.stringify({
      version: 1,
      keys: [{
        ...entry(alice),
        key_id: keyIdOf(fromHex(ED25519_TORSION_SUBGROUP[1]!)),
        public_key: ED25519_TORSION_SUBGROUP[1],
      }],
    }),
    "bad added_at": JSON.stringify({ version: 1, keys: [entry(alice, { added_at: "yesterday" })] }),
    "numeric name": JSON.stringify({ version: 1, keys: [entry(alice, { name: 7 })] }),
    "duplicate key": JSON.stringify({ version: 1, keys: [entry(alice), entry(alice)] }),
    "duplicate JSON member": `{"version":1,"version":1,"keys":[]}`,
    "keys not an array": JSON.stringify({ version: 1, keys: {} }),
    "not JSON": "{version: 1}",
    "top level array": "[]",
  };
  for (const [name, text] of Object.entries(tampered)) {
    await Deno.writeTextFile(path, text);
    const error = assertThrows(() => readTrustedKeys(path), ConfigError, path);
    assert(error.message.startsWith("Trusted keys file"), `${name}: ${error.message}`);
  }
  // The canonical JSON parser's own error is kept as the cause.
  await Deno.writeTextFile(path, tampered["duplicate JSON member"]!);
  const error = assertThrows(() => readTrustedKeys(path), ConfigError);
  assert(error.cause instanceof CanonicalJsonError);
  // A tampered file also stops trustKey() and untrustKey() rather than being overwritten.
  assertThrows(() => trustKey(dir, bob), ConfigError, path);
  assertThrows(() => untrustKey(dir, keyIdOf(alice)), ConfigError, path);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Keyring trusts listed keys, this machine's key and keys added for the run", async () => {
  const dir = await tempDir();
  const own = await loadOrCreateIdentity(dir);
  const alice = await publicKeyOf(1);
  const bob = await publicKeyOf(2);
  const carol = await publicKeyOf(3);
  trustKey(dir, alice, "alice");
  const keyring = new Keyring(readTrustedKeys(trustedKeysPath(dir)), own);
  assert(keyring.isTrusted(own.keyId));
  assertEquals(keyring.nameOf(own.keyId), "this machine");
  assert(keyring.isTrusted(keyIdOf(alice)));
  assertEquals(keyring.nameOf(keyIdOf(alice)), "alice");
  assert(!keyring.isTrusted(keyIdOf(bob)));
  assertEquals(keyring.nameOf(keyIdOf(bob)), null);
  keyring.add(bob, "bob");
  keyring.add(carol);
  assert(keyring.isTrusted(keyIdOf(bob)) && keyring.isTrusted(keyIdOf(carol)));
  assertEquals(keyring.nameOf(keyIdOf(bob)), "bob");
  assertEquals(keyring.nameOf(keyIdOf(carol)), null);
  assertEquals(readTrustedKeys(trustedKeysPath(dir)).length, 1, "add() writes nothing");
  assert(!new Keyring([]).isTrusted(own.keyId));
  assert(!new Keyring([], null).isTrusted(keyIdOf(alice)));
  assertThrows(() => keyring.add(new Uint8Array(32)), IntegrityError);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Keyring trusts a key id only together with the exact pinned public key", async () => {
  const pinned = await publicKeyFromSeed(generateSeed());
  const other = await publicKeyFromSeed(generateSeed());
  const keyring = new Keyring([]);
  keyring.add(pinned, "alice");
  const id = keyIdOf(pinned);
  assert(keyring.isTrusted(id, toHex(pinned)));
  // A key claiming alice's id (a 64-bit collision) is not alice.
  assert(!keyring.isTrusted(id, toHex(other)));
});

Deno.test("verify() refuses a small-order public key even where the verification equation holds", async () => {
  // A = the identity point (order 1): [S]B = R + [k]A holds for R = [r]B and S = r, for any
  // message, so only the small-order check on A refuses it.
  const identity = new Uint8Array(32);
  identity[0] = 1;
  const r = 0x1234_5678_9abc_def0_1234_5678_9abc_def0n;
  const R = ed25519.Point.BASE.multiply(r).toBytes();
  const S = new Uint8Array(32);
  let rest = r;
  for (let i = 0; i < 32; i++, rest >>= 8n) S[i] = Number(rest & 0xffn);
  const signature = concatBytes([R, S]);
  for (const backend of BACKENDS) {
    for (const message of [new Uint8Array(0), new TextEncoder().encode("anything at all")]) {
      assertEquals(await verify(identity, message, signature, backend), false, backend);
    }
  }
});
