/**
 * Fuzzing: property-based tests with fast-check
 * for canonical JSON, path rules, tree manifests, envelopes and the bundle
 * reader, plus the committed hostile corpus in `tests/fixtures/hostile/`.
 *
 * The invariant everywhere: a reader given hostile input returns a value that
 * satisfies its documented invariants or throws a {@linkcode CtxsnapError};
 * nothing else escapes, nothing hangs.
 *
 * Run counts are bounded so the file stays well under a minute on two cores.
 * For a longer local run: `CTXSNAP_FUZZ_RUNS=20000 deno test -A tests/format/fuzz_test.ts`
 * (every property then uses that many runs). A failure prints fast-check's
 * `seed` and `path`; replay it with `CTXSNAP_FUZZ_SEED=<seed>` (and the same
 * run count).
 *
 * @module
 */
import fc from "fast-check";
import {
  canonicalBytes,
  canonicalize,
  type JsonValue,
  parseCanonical,
  parseJson,
} from "../../lib/encoding/canonical_json.ts";
import { CanonicalJsonError, CtxsnapError, PathError } from "../../lib/errors.ts";
import { toHex } from "../../lib/encoding/hex.ts";
import { keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import {
  checkEntryPaths,
  isSafeRelativePath,
  MAX_PATH_BYTES,
  normalizeRelativePath,
} from "../../lib/workspace/io/path.ts";
import {
  compareSkipped,
  MAX_NAME_LENGTH,
  treeBytes,
  type TreeManifest,
  validateTree,
} from "../../lib/format/tree.ts";
import {
  emptyContext,
  emptyCursors,
  emptyFacets,
  SNAPSHOT_SCHEMA,
  type SnapshotBody,
} from "../../lib/format/body.ts";
import {
  checkEnvelope,
  type Envelope,
  parseEnvelope,
  signBody,
  type Signer,
  validateEnvelope,
} from "../../lib/format/envelope.ts";
import type { TrustPolicy } from "../../lib/history/verify.ts";
import { type BundleSummary, readBundle } from "../../lib/format/bundle.ts";
import { TarWriter } from "../../lib/format/tar.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { planPublish, publishedSnapshotText, writePublished } from "../../lib/share/publish.ts";
import { verifyStream } from "../../lib/share/verify_file.ts";
import { Store } from "../../lib/repository/store.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { assert, assertEquals, AssertionError } from "../_assert.ts";
import { concatBytes } from "../_util.ts";

const concat = (...parts: Uint8Array[]): Uint8Array => concatBytes(parts);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no --allow-env: defaults
  }
}

const RUNS_OVERRIDE = Number(env("CTXSNAP_FUZZ_RUNS") ?? NaN);
const SEED_OVERRIDE = Number(env("CTXSNAP_FUZZ_SEED") ?? NaN);

/** fast-check parameters: `numRuns` runs unless CTXSNAP_FUZZ_RUNS overrides it. */
function params<T>(numRuns: number): fc.Parameters<T> {
  return {
    numRuns: Number.isSafeInteger(RUNS_OVERRIDE) && RUNS_OVERRIDE > 0 ? RUNS_OVERRIDE : numRuns,
    ...(Number.isSafeInteger(SEED_OVERRIDE) ? { seed: SEED_OVERRIDE } : {}),
  };
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}\n${error.stack ?? ""}`;
  return `non-Error ${Deno.inspect(error)}`;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: CtxsnapError };

/** Runs `fn`; a CtxsnapError is an outcome, anything else fails the property. */
function typed<T>(fn: () => T, what: string): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    if (error instanceof CtxsnapError) return { ok: false, error };
    throw new AssertionError(`${what}: an untyped error escaped: ${describe(error)}`);
  }
}

async function typedAsync<T>(fn: () => Promise<T>, what: string): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    if (error instanceof CtxsnapError) return { ok: false, error };
    throw new AssertionError(`${what}: an untyped error escaped: ${describe(error)}`);
  }
}

/** Like {@linkcode typed} but only `CanonicalJsonError` is an acceptable refusal. */
function typedJson<T>(fn: () => T, what: string): Outcome<T> {
  const result = typed(fn, what);
  if (!result.ok && !(result.error instanceof CanonicalJsonError)) {
    throw new AssertionError(`${what}: expected CanonicalJsonError, got ${describe(result.error)}`);
  }
  return result;
}

class ReadBudgetExceeded extends Error {
  override name = "ReadBudgetExceeded";
}

/**
 * A `readChunk` over `bytes` that hands out at most `chunk` bytes per call
 * (short reads exercise the reader's refills) and throws if it is called far
 * more often than the input can justify or for longer than `ms`: a reader
 * that loops after the end of input fails instead of hanging the suite.
 */
function memReader(
  bytes: Uint8Array,
  chunk = 1 << 20,
  ms = 20_000,
): (buffer: Uint8Array) => number {
  let pos = 0;
  let calls = 0;
  const budget = Math.ceil(bytes.length / Math.max(1, chunk)) + bytes.length / 512 + 64;
  const start = performance.now();
  return (buffer) => {
    if (++calls > budget) {
      throw new ReadBudgetExceeded(`readChunk called ${calls} times for ${bytes.length} bytes`);
    }
    if (performance.now() - start > ms) {
      throw new ReadBudgetExceeded(`reading took more than ${ms} ms`);
    }
    const n = Math.min(buffer.length, bytes.length - pos, chunk);
    buffer.set(bytes.subarray(pos, pos + n));
    pos += n;
    return n;
  };
}

const TRUST_ALL: TrustPolicy = { isTrusted: () => true, nameOf: () => "fuzz" };

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function utf8Length(text: string): number {
  return encoder.encode(text).length;
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

const HEX = "0123456789abcdef";
const hex64 = fc.string({ unit: fc.constantFrom(...HEX), minLength: 64, maxLength: 64 });

/** Any UTF-16 code unit, so lone surrogates appear. */
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
const utf16String = fc.string({ unit: anyUnit, maxLength: 12 });

const hostileStrings = [
  "",
  "file",
  "symlink",
  "ed25519",
  "none",
  ".",
  "..",
  "/",
  "../x",
  "/etc/passwd",
  "a//b",
  "a\\b",
  "a\0b",
  "\ud800",
  "x\udc00",
  "main",
  "ctxsnap.snapshot/v1",
  "ctxsnap.snapshot/v2",
  "2026-02-30T00:00:00.000Z",
  "__proto__",
  "constructor",
  "A".repeat(70),
  "f".repeat(64),
  "F".repeat(64),
  "0".repeat(128),
];

const scalarish: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -5, max: 5000 }),
  fc.maxSafeInteger(),
  fc.constantFrom(2 ** 53, -0, 0.5, 1.5, 1e21, NaN, Infinity, -1, 0o7777, 0o10000, 101),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: "binary", maxLength: 6 }),
  utf16String,
  fc.constantFrom(...hostileStrings),
  hex64,
  fc.constant(undefined),
);

const keyArb = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom(
    "path",
    "type",
    "blob",
    "size",
    "mode",
    "target",
    "version",
    "entries",
    "skipped",
    "reason",
    "id",
    "body",
    "signature",
    "alg",
    "key_id",
    "public_key",
    "value",
    "__proto__",
    "constructor",
    "toString",
    "\ud800",
  ),
);

const { anyish } = fc.letrec((tie) => ({
  anyish: fc.oneof(
    { depthSize: "small", maxDepth: 3 },
    scalarish,
    fc.array(tie("anyish"), { maxLength: 3 }),
    fc.dictionary(keyArb, tie("anyish"), { maxKeys: 3 }),
  ),
}));

const { json } = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.maxSafeInteger(),
    fc.string({ unit: "binary", maxLength: 8 }),
    fc.array(tie("json"), { maxLength: 4 }),
    fc.dictionary(fc.string({ unit: "binary", maxLength: 5 }), tie("json"), { maxKeys: 4 }),
  ),
}));

// ---------------------------------------------------------------------------
// Value-level mutations of a JSON-ish document
// ---------------------------------------------------------------------------

type Op = "replace" | "delete" | "add" | "retype" | "duplicate" | "swap" | "string";
interface Mutation {
  at: number;
  op: Op;
  payload: unknown;
  key: string;
  other: number;
  char: string;
}

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  op: fc.constantFrom<Op>("replace", "delete", "add", "retype", "duplicate", "swap", "string"),
  payload: anyish,
  key: keyArb,
  other: fc.nat(),
  char: fc.oneof(anyUnit, fc.constantFrom("/", ".", "\0", "\\", "\ud800", "A", "0", " ", "é")),
});

interface Location {
  parent: Record<string, unknown> | unknown[] | null;
  key: string | number;
  value: unknown;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function locations(
  value: unknown,
  parent: Location["parent"],
  key: string | number,
  out: Location[],
) {
  out.push({ parent, key, value });
  if (Array.isArray(value)) value.forEach((v, i) => locations(v, value, i, out));
  else if (isPlainObject(value)) {
    for (const k of Object.keys(value)) locations(value[k], value, k, out);
  }
  return out;
}

/** Sets an own data property, even `__proto__`. */
function defineOwn(target: Record<string, unknown> | unknown[], key: string | number, v: unknown) {
  Object.defineProperty(target, key, {
    value: v,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

function copy<T>(value: T): T {
  return structuredClone(value);
}

/** Applies one mutation to `root` (which it may modify) and returns the new root. */
function mutate(root: unknown, m: Mutation): unknown {
  const locs = locations(root, null, "", []);
  const loc = locs[m.at % locs.length]!;
  const set = (v: unknown) => {
    if (loc.parent === null) root = v;
    else defineOwn(loc.parent, loc.key, v);
  };
  const payload = copy(m.payload);
  const value = loc.value;
  switch (m.op) {
    case "replace":
      set(payload);
      break;
    case "delete":
      if (loc.parent === null) root = undefined;
      else if (Array.isArray(loc.parent)) loc.parent.splice(loc.key as number, 1);
      else delete loc.parent[loc.key as string];
      break;
    case "add":
      if (Array.isArray(value)) value.splice(m.other % (value.length + 1), 0, payload);
      else if (isPlainObject(value)) defineOwn(value, m.key, payload);
      else set([value, payload]);
      break;
    case "retype":
      if (typeof value === "string") set(value.length % 2 ? Number(value) : value.length);
      else if (typeof value === "number") set(m.other % 2 ? String(value) : value + 0.5);
      else if (typeof value === "boolean") set(m.other % 2 ? String(value) : Number(value));
      else if (value === null) set(m.other % 2 ? "null" : 0);
      else if (Array.isArray(value)) set(Object.fromEntries(value.map((v, i) => [String(i), v])));
      else if (isPlainObject(value)) {
        set(m.other % 2 ? Object.values(value) : JSON.stringify(value));
      } else set(null);
      break;
    case "duplicate":
      if (Array.isArray(loc.parent)) loc.parent.splice(loc.key as number, 0, copy(value));
      else if (loc.parent !== null) defineOwn(loc.parent, m.key, copy(value));
      else set([value, copy(value)]);
      break;
    case "swap":
      if (Array.isArray(loc.parent) && loc.parent.length > 1) {
        const list = loc.parent;
        const j = m.other % list.length;
        [list[loc.key as number], list[j]] = [list[j], list[loc.key as number]];
      } else if (Array.isArray(value) && value.length > 1) {
        value.reverse();
      } else set(payload);
      break;
    case "string":
      if (typeof value === "string") {
        const at = m.other % (value.length + 1);
        const how = m.other % 3;
        set(
          how === 0
            ? value.slice(0, at) + m.char + value.slice(at)
            : how === 1
            ? value.slice(0, at) + m.char + value.slice(at + 1)
            : value.slice(0, at) + value.slice(at + 1),
        );
      } else set(payload);
      break;
  }
  return root;
}

// ---------------------------------------------------------------------------
// Byte-level mutations of a text or binary document
// ---------------------------------------------------------------------------

const TOKENS = [
  "{",
  "}",
  "[",
  "]",
  '"',
  ":",
  ",",
  " ",
  "\n",
  "0",
  "1",
  "-",
  ".",
  "e",
  "E",
  "+",
  "9007199254740993",
  "1.0",
  "true",
  "false",
  "null",
  "\\",
  "\\u",
  "\\ud800",
  "\\u0000",
  '"a"',
  '"a":1',
  "\ufeff",
  "\u00a0",
  "\u2028",
  "é",
  "\u{1f602}",
];

type ByteEdit =
  | { kind: "set"; at: number; byte: number }
  | { kind: "flip"; at: number; mask: number }
  | { kind: "insert"; at: number; bytes: Uint8Array }
  | { kind: "delete"; at: number; count: number }
  | { kind: "dup"; at: number; count: number; to: number };

const insertBytes = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 8 }),
  fc.constantFrom(...TOKENS).map((t) => encoder.encode(t)),
);

const byteEditArb: fc.Arbitrary<ByteEdit> = fc.oneof(
  fc.record({ kind: fc.constant("set" as const), at: fc.nat(), byte: fc.nat(255) }),
  fc.record({
    kind: fc.constant("flip" as const),
    at: fc.nat(),
    mask: fc.integer({ min: 1, max: 255 }),
  }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), bytes: insertBytes }),
  fc.record({
    kind: fc.constant("delete" as const),
    at: fc.nat(),
    count: fc.integer({ min: 1, max: 16 }),
  }),
  fc.record({
    kind: fc.constant("dup" as const),
    at: fc.nat(),
    count: fc.integer({ min: 1, max: 32 }),
    to: fc.nat(),
  }),
);

function applyByteEdit(bytes: Uint8Array, e: ByteEdit): Uint8Array {
  const len = bytes.length;
  switch (e.kind) {
    case "set": {
      if (len === 0) return bytes;
      const out = bytes.slice();
      out[e.at % len] = e.byte;
      return out;
    }
    case "flip": {
      if (len === 0) return bytes;
      const out = bytes.slice();
      out[e.at % len]! ^= e.mask;
      return out;
    }
    case "insert": {
      const at = e.at % (len + 1);
      return concat(bytes.subarray(0, at), e.bytes, bytes.subarray(at));
    }
    case "delete": {
      if (len === 0) return bytes;
      const at = e.at % len;
      return concat(bytes.subarray(0, at), bytes.subarray(at + e.count));
    }
    case "dup": {
      if (len === 0) return bytes;
      const at = e.at % len;
      const slice = bytes.slice(at, at + e.count);
      const to = e.to % (len + 1);
      return concat(bytes.subarray(0, to), slice, bytes.subarray(to));
    }
  }
}

const byteEdits = fc.array(byteEditArb, { minLength: 1, maxLength: 4 });

// ===========================================================================
// 1. Canonical JSON (what tests/encoding/encoding_test.ts does not already cover)
// ===========================================================================

Deno.test("fuzz json: random bytes give a value or a CanonicalJsonError", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.uint8Array({ maxLength: 64 }),
        fc.array(fc.constantFrom(...TOKENS), { maxLength: 24 }).map((t) =>
          encoder.encode(t.join(""))
        ),
      ),
      (bytes) => {
        for (const parse of [parseJson, parseCanonical]) {
          const result = typedJson(() => parse(bytes), parse.name);
          if (result.ok) {
            // Whatever is accepted re-serializes and parses back to itself.
            const text = canonicalize(result.value);
            assertEquals(parseCanonical(text), result.value);
          }
        }
      },
    ),
    params(2000),
  );
});

Deno.test("fuzz json: random UTF-16 strings (lone surrogates included) give a value or a CanonicalJsonError", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ unit: anyUnit, maxLength: 40 }),
        fc.array(fc.oneof(fc.constantFrom(...TOKENS), anyUnit), { maxLength: 24 }).map((t) =>
          t.join("")
        ),
      ),
      (text) => {
        const lenient = typedJson(() => parseJson(text), "parseJson");
        const strict = typedJson(() => parseCanonical(text), "parseCanonical");
        if (!text.isWellFormed()) {
          assert(
            !lenient.ok && !strict.ok,
            `a lone surrogate was accepted in ${JSON.stringify(text)}`,
          );
        }
        if (strict.ok) {
          // The canonical parser accepts exactly the fixed points of canonicalize.
          assert(lenient.ok, "parseCanonical accepted what parseJson refused");
          assertEquals(canonicalize(strict.value), text);
        }
        if (lenient.ok) {
          const canonical = canonicalize(lenient.value);
          assertEquals(parseCanonical(canonical), lenient.value);
          if (!strict.ok) {
            assert(
              strict.error.message.includes("is not in canonical form"),
              strict.error.message,
            );
          }
          // Byte and string input agree.
          assertEquals(parseJson(encoder.encode(text)), lenient.value);
        }
      },
    ),
    params(2000),
  );
});

Deno.test("fuzz json: insertions, deletions and duplicated slices of canonical documents are refused or are fixed points", () => {
  fc.assert(
    fc.property(json, byteEdits, (value, edits) => {
      const original = canonicalBytes(value);
      let bytes: Uint8Array = original;
      for (const e of edits) bytes = applyByteEdit(bytes, e);
      const strict = typedJson(() => parseCanonical(bytes), "parseCanonical");
      const lenient = typedJson(() => parseJson(bytes), "parseJson");
      if (strict.ok) {
        assert(lenient.ok, "parseCanonical accepted what parseJson refused");
        assertEquals(canonicalBytes(strict.value), bytes, "accepted non-canonical bytes");
        if (equalBytes(bytes, original)) assertEquals(strict.value, value);
      }
      if (lenient.ok) assertEquals(parseCanonical(canonicalBytes(lenient.value)), lenient.value);
    }),
    params(1500),
  );
});

Deno.test("fuzz json: finite doubles round-trip with integersOnly false and are refused by default unless safe integers", () => {
  const double = fc.double({ noNaN: true, noDefaultInfinity: true });
  const { doc } = fc.letrec((tie) => ({
    doc: fc.oneof(
      { depthSize: "small" },
      double,
      fc.maxSafeInteger(),
      fc.string({ maxLength: 4 }),
      fc.array(tie("doc"), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 4 }), tie("doc"), { maxKeys: 4 }),
    ),
  }));
  const hasNonInteger = (v: unknown): boolean =>
    typeof v === "number"
      ? !Number.isSafeInteger(v)
      : Array.isArray(v)
      ? v.some(hasNonInteger)
      : isPlainObject(v)
      ? Object.values(v).some(hasNonInteger)
      : false;
  fc.assert(
    fc.property(doc, (value) => {
      const text = canonicalize(value, { integersOnly: false });
      const back = parseCanonical(text, { integersOnly: false });
      assertEquals(back, value); // 0 and -0 compare equal; -0 is written "0"
      assertEquals(canonicalize(back, { integersOnly: false }), text);
      const strict = typedJson(() => parseJson(text), "parseJson integersOnly");
      assertEquals(strict.ok, !hasNonInteger(value), `integersOnly verdict for ${text}`);
    }),
    params(1000),
  );
});

Deno.test("fuzz json: maxDepth and maxBytes are enforced exactly (model check)", () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom("[", "{"), { minLength: 1, maxLength: 90 }),
      fc.integer({ min: 0, max: 100 }),
      fc.boolean(),
      (opens, maxDepth, asBytes) => {
        let text = "0";
        for (let i = opens.length - 1; i >= 0; i--) {
          text = opens[i] === "[" ? `[${text}]` : `{"k":${text}}`;
        }
        const input = asBytes ? encoder.encode(text) : text;
        const result = typedJson(() => parseJson(input, { maxDepth }), "parseJson depth");
        assertEquals(result.ok, opens.length <= maxDepth, `depth ${opens.length} vs ${maxDepth}`);
      },
    ),
    params(500),
  );
  fc.assert(
    fc.property(json, fc.integer({ min: -8, max: 8 }), fc.boolean(), (value, delta, asBytes) => {
      const bytes = canonicalBytes(value);
      const maxBytes = Math.max(0, bytes.length + delta);
      const input = asBytes ? bytes : decoder.decode(bytes);
      const result = typedJson(() => parseCanonical(input, { maxBytes }), "parseCanonical size");
      assertEquals(result.ok, bytes.length <= maxBytes, `${bytes.length} bytes vs ${maxBytes}`);
    }),
    params(500),
  );
});

Deno.test("fuzz json: very deep and very wide hostile nesting is refused without a stack overflow", () => {
  for (const depth of [65, 1_000, 100_000, 1_000_000]) {
    for (
      const text of [
        "[".repeat(depth),
        '{"a":'.repeat(depth),
        "[".repeat(depth) + "]".repeat(depth),
      ]
    ) {
      const result = typedJson(() => parseJson(text), `depth ${depth}`);
      assert(!result.ok && result.error.message.includes("deeper"), `depth ${depth}`);
    }
  }
});

// ===========================================================================
// 2. Path normalization
// ===========================================================================

/** Reference model of the path rules in docs/DESIGN.md §2, written independently of lib/workspace/io/path.ts. */
function modelSafePath(value: string): boolean {
  if (value.length === 0) return false;
  if (!value.isWellFormed()) return false;
  if (utf8Length(value) > MAX_PATH_BYTES) return false;
  if (value.includes("\0") || value.includes("\\")) return false;
  return value.split("/").every((s) => s !== "" && s !== "." && s !== "..");
}

/** Reference model of checkEntryPaths: O(n²), obviously correct. */
function modelEntryPaths(paths: readonly string[]): boolean {
  if (!paths.every(modelSafePath)) return false;
  for (let i = 1; i < paths.length; i++) if (!(paths[i - 1]! < paths[i]!)) return false;
  for (const p of paths) {
    for (const q of paths) if (q.startsWith(p + "/")) return false;
  }
  return true;
}

const SEGMENTS = [
  "a",
  "b",
  "ab",
  "a-b",
  "a.b",
  "A",
  "é",
  "e\u0301",
  "\u{1f602}",
  ".hidden",
  "...",
  "x y",
  "new\nline",
  "tab\t",
  "\u2028",
];
const pathPieces = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...SEGMENTS) },
  { weight: 3, arbitrary: fc.constantFrom("/", "/", "//", ".", "..", "./", "../", "/..") },
  {
    weight: 1,
    arbitrary: fc.constantFrom("\\", "\0", "\ud800", "\udc00", "\r", "\u0000/", "%2e%2e", "C:"),
  },
  { weight: 1, arbitrary: anyUnit },
);
const pathLike = fc.array(pathPieces, { maxLength: 10 }).map((p) => p.join(""));
const cleanPath = fc.array(fc.constantFrom(...SEGMENTS), { minLength: 1, maxLength: 3 })
  .map((s) => s.join("/"));
/** Strings whose UTF-8 length is within a few bytes of MAX_PATH_BYTES. */
const nearLimitPath = fc.tuple(
  fc.constantFrom("a", "é", "€", "\u{1f602}", "ab/"),
  fc.integer({ min: -6, max: 6 }),
  fc.constantFrom("", "x", "é", "/y"),
).map(([unit, delta, tail]) => {
  const unitBytes = utf8Length(unit);
  const count = Math.max(1, Math.floor((MAX_PATH_BYTES + delta - utf8Length(tail)) / unitBytes));
  return unit.repeat(count) + tail;
});

Deno.test("fuzz path: normalizeRelativePath returns its input unchanged or throws PathError, exactly per the model", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        pathLike,
        cleanPath,
        nearLimitPath,
        fc.string({ unit: anyUnit, maxLength: 20 }),
        fc.string({ unit: "binary", maxLength: 20 }),
        fc.string({ unit: anyUnit, minLength: 4000, maxLength: 6000 }),
      ),
      (path) => {
        const result = typed(() => normalizeRelativePath(path), "normalizeRelativePath");
        if (!result.ok) {
          assert(result.error instanceof PathError, `not a PathError: ${result.error.name}`);
        }
        assertEquals(result.ok, modelSafePath(path), `verdict for ${JSON.stringify(path)}`);
        assertEquals(isSafeRelativePath(path), result.ok);
        if (result.ok) {
          assert(result.value === path, "the path was rewritten");
          assert(!path.startsWith("/") && !path.includes("\0") && !path.includes("\\"));
          for (const segment of path.split("/")) {
            assert(segment !== "" && segment !== "." && segment !== "..", `segment ${segment}`);
          }
          assert(path.isWellFormed() && utf8Length(path) <= MAX_PATH_BYTES);
        }
      },
    ),
    params(3000),
  );
});

Deno.test("fuzz path: non-string values are refused with PathError, never a TypeError", () => {
  fc.assert(
    fc.property(anyish.filter((v) => typeof v !== "string"), (value) => {
      const result = typed(() => normalizeRelativePath(value as string), "non-string");
      assert(!result.ok && result.error instanceof PathError);
      assert(!isSafeRelativePath(value as string));
    }),
    params(300),
  );
});

Deno.test("fuzz path: checkEntryPaths passes exactly the sorted, unique, non-nested lists of safe paths", () => {
  const list = fc.oneof(
    fc.array(fc.oneof(cleanPath, pathLike), { maxLength: 8 }),
    fc.uniqueArray(cleanPath, { maxLength: 10 }).map((l) => l.sort()),
    fc.uniqueArray(cleanPath, { maxLength: 10 }).map((l) =>
      l.sort().filter((p, _, all) => !all.some((q) => p.startsWith(q + "/")))
    ),
    fc.uniqueArray(fc.constantFrom("a", "a/b", "a/b/c", "a-b", "a.b", "a/c", "b", "ab", "a0"), {
      maxLength: 6,
    }).map((l) => l.sort()),
  );
  let passed = 0;
  fc.assert(
    fc.property(list, (paths) => {
      const result = typed(() => checkEntryPaths(paths), "checkEntryPaths");
      if (!result.ok) assert(result.error instanceof PathError, result.error.name);
      assertEquals(result.ok, modelEntryPaths(paths), `verdict for ${JSON.stringify(paths)}`);
      if (result.ok) passed++;
    }),
    params(3000),
  );
  assert(passed > 0, "no generated list passed: the generator is too hostile to be useful");
});

// ===========================================================================
// 3. Tree manifests
// ===========================================================================

const targetArb = fc.string({ unit: "binary", minLength: 1, maxLength: 12 }).filter((s) =>
  !s.includes("\0")
);
const skippedArb = fc.uniqueArray(
  fc.record({
    path: fc.oneof(targetArb, fc.constantFrom(".env", "a\nb", "../outside")),
    reason: fc.constantFrom("secret", "ignored", "special_file", "too_large", "unreadable"),
  }),
  { maxLength: 4, selector: (r) => `${r.path}\u0000${r.reason}` },
).map((l) => l.sort(compareSkipped));

const validTreeArb: fc.Arbitrary<TreeManifest> = fc.record({
  paths: fc.uniqueArray(cleanPath, { maxLength: 8 }),
  shapes: fc.array(
    fc.record({
      symlink: fc.boolean(),
      blob: hex64,
      size: fc.oneof(fc.nat(1 << 20), fc.maxSafeInteger().map(Math.abs)),
      mode: fc.integer({ min: 0, max: 0o7777 }),
      target: targetArb,
    }),
    { minLength: 8, maxLength: 8 },
  ),
  skipped: skippedArb,
}).map(({ paths, shapes, skipped }) => {
  const kept = paths.sort().filter((p, _, all) => !all.some((q) => p.startsWith(q + "/")));
  return {
    version: 1 as const,
    entries: kept.map((path, i) => {
      const s = shapes[i]!;
      return s.symlink
        ? { path, type: "symlink" as const, target: s.target }
        : { path, type: "file" as const, blob: s.blob, size: s.size, mode: s.mode };
    }),
    skipped,
  };
});

/** Every invariant of an accepted manifest, checked independently of validateTree. */
function checkTreeInvariants(tree: TreeManifest): void {
  assertEquals(Object.keys(tree).sort(), ["entries", "skipped", "version"]);
  assertEquals(tree.version, 1);
  assert(modelEntryPaths(tree.entries.map((e) => e.path)), "entry paths break the rules");
  for (const e of tree.entries) {
    if (e.type === "file") {
      assertEquals(Object.keys(e).sort(), ["blob", "mode", "path", "size", "type"]);
      assert(/^[0-9a-f]{64}$/.test(e.blob), `blob ${e.blob}`);
      assert(Number.isSafeInteger(e.size) && e.size >= 0, `size ${e.size}`);
      assert(Number.isSafeInteger(e.mode) && e.mode >= 0 && e.mode <= 0o7777, `mode ${e.mode}`);
    } else {
      assertEquals(e.type, "symlink");
      assertEquals(Object.keys(e).sort(), ["path", "target", "type"]);
      assert(typeof e.target === "string" && e.target.length >= 1, "empty target");
      assert(e.target.length <= MAX_NAME_LENGTH && !e.target.includes("\0"), "bad target");
    }
  }
  for (let i = 0; i < tree.skipped.length; i++) {
    const s = tree.skipped[i]!;
    assertEquals(Object.keys(s).sort(), ["path", "reason"]);
    assert(typeof s.path === "string" && s.path.length > 0 && !s.path.includes("\0"));
    assert(typeof s.reason === "string" && s.reason.length > 0 && !s.reason.includes("\0"));
    if (i > 0) assert(compareSkipped(tree.skipped[i - 1]!, s) < 0, "skipped not sorted/unique");
  }
  // Re-serializes canonically and reads back to the same manifest.
  const bytes = treeBytes(tree);
  const again = validateTree(parseCanonical(bytes));
  assertEquals(again, tree);
  assertEquals(treeBytes(again), bytes);
}

/** Whether a manifest carries a lone surrogate anywhere validateTree must refuse it. */
function hasLoneSurrogate(tree: TreeManifest): boolean {
  return tree.entries.some((e) => e.type === "symlink" && !e.target.isWellFormed()) ||
    tree.skipped.some((s) => !s.path.isWellFormed() || !s.reason.isWellFormed());
}

Deno.test("fuzz tree: generated valid manifests are accepted unchanged and keep every invariant", () => {
  fc.assert(
    fc.property(validTreeArb, (tree) => {
      const accepted = validateTree(copy(tree));
      assertEquals(accepted, tree);
      checkTreeInvariants(accepted);
    }),
    params(500),
  );
});

Deno.test("fuzz tree: mutated manifests are refused with a CtxsnapError or keep every invariant", () => {
  fc.assert(
    fc.property(
      validTreeArb,
      fc.array(mutationArb, { minLength: 1, maxLength: 3 }),
      (tree, mutations) => {
        let value: unknown = copy(tree);
        for (const m of mutations) value = mutate(value, m);
        const result = typed(() => validateTree(value), "validateTree");
        if (result.ok) {
          assert(!hasLoneSurrogate(result.value), "accepted a lone surrogate");
          checkTreeInvariants(result.value);
        }
      },
    ),
    params(2000),
  );
});

Deno.test("fuzz tree: arbitrary JSON-ish values are refused with a CtxsnapError or are valid manifests", () => {
  const shaped = fc.record({
    version: fc.oneof(fc.constant(1), scalarish),
    entries: fc.oneof(
      fc.array(
        fc.dictionary(keyArb, anyish, { maxKeys: 6 }),
        { maxLength: 3 },
      ),
      anyish,
    ),
    skipped: fc.oneof(fc.constant([]), anyish),
  }, { requiredKeys: [] });
  fc.assert(
    fc.property(fc.oneof(anyish, shaped), (value) => {
      const result = typed(() => validateTree(value), "validateTree");
      if (result.ok) {
        assert(!hasLoneSurrogate(result.value), "accepted a lone surrogate");
        checkTreeInvariants(result.value);
      }
    }),
    params(1500),
  );
});

Deno.test("fuzz tree: byte edits of canonical manifests are refused or read back to exactly those bytes", () => {
  fc.assert(
    fc.property(validTreeArb, byteEdits, (tree, edits) => {
      let bytes = treeBytes(tree);
      for (const e of edits) bytes = applyByteEdit(bytes, e);
      const result = typed(() => validateTree(parseCanonical(bytes)), "parse+validateTree");
      if (result.ok) {
        checkTreeInvariants(result.value);
        assertEquals(treeBytes(result.value), bytes, "the reader normalized hostile bytes");
      }
    }),
    params(1500),
  );
});

Deno.test({
  name: "validateTree refuses a lone surrogate in a symlink target or skipped record",
  fn() {
    for (
      const tree of [
        { version: 1, entries: [{ path: "l", type: "symlink", target: "\ud800" }], skipped: [] },
        { version: 1, entries: [], skipped: [{ path: "x\udc00", reason: "secret" }] },
        { version: 1, entries: [], skipped: [{ path: "x", reason: "\ud800" }] },
      ]
    ) {
      const result = typed(() => validateTree(tree), "validateTree");
      assert(!result.ok, `accepted ${JSON.stringify(tree)}`);
    }
  },
});

// ===========================================================================
// 4. Envelopes
// ===========================================================================

// Fixed test keys (published on purpose).
async function signerOf(seed: Uint8Array): Promise<Signer> {
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}
const signer = await signerOf(new Uint8Array(32).map((_, i) => (i * 11 + 1) & 0xff));

const richBody: SnapshotBody = {
  schema: SNAPSHOT_SCHEMA,
  created_at: "2026-03-04T05:06:07.890Z",
  parent: "ab".repeat(32),
  session: "agent/run-1",
  branch: "main",
  reason: "fuzz baseline \u00e9\u{1f602}",
  source: { kind: "tool_call", id: "call-42" },
  git: { commit: "c".repeat(40), branch: "main", dirty: true },
  workspace: { tree: "cd".repeat(32), files: 3, bytes: 1234, skipped: 1 },
  context: {
    ...emptyContext(),
    task: "prove it",
    progress_pct: 42,
    decisions: ["use tar", "use jcs"],
    files_touched: ["a.txt", "src/b.ts"],
    findings: ["x"],
    knowledge: [],
    extensions: { "harness.v1": { step: 3, tags: ["a", "b"], ok: true, none: null } },
  },
  cursors: { ...emptyCursors(), action: 7, message: null, auto_event: 2 },
  facets: {
    ...emptyFacets(),
    artifact_versions: [{ name: "report", version: 2 }],
    environment_pins: { deno: "2.x" },
    metadata: { note: "fuzz" },
  },
  tool: { name: "ctxsnap", version: "0.1.0" },
};
const baseEnvelope = await signBody(richBody, signer);
const baseCanonical = canonicalize(baseEnvelope);

/** If a hostile envelope was accepted, it must not also verify unless it means the same thing. */
async function checkAcceptedEnvelope(envelope: Envelope, what: string): Promise<void> {
  const check = await typedAsync(() => checkEnvelope(envelope), `${what}: checkEnvelope`);
  assert(check.ok, `${what}: checkEnvelope threw ${!check.ok && check.error.message}`);
  const same = canonicalize(envelope) === baseCanonical;
  const verifies = check.value.idMatches && check.value.signatureValid;
  if (same) assert(verifies, `${what}: the unchanged envelope no longer verifies`);
  else {
    assert(
      !verifies,
      `${what}: a changed envelope still verifies:\n${canonicalize(envelope)}`,
    );
  }
}

Deno.test("fuzz envelope: value-level field replacements, deletions, additions and type changes", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(mutationArb, { minLength: 1, maxLength: 3 }), async (mutations) => {
      let value: unknown = copy(baseEnvelope);
      for (const m of mutations) value = mutate(value, m);
      const direct = typed(() => validateEnvelope(value), "validateEnvelope");
      if (direct.ok) await checkAcceptedEnvelope(direct.value, "validateEnvelope");
      // The same value through its JSON text (JSON.stringify turns NaN into null, drops undefined).
      const text = JSON.stringify(value);
      if (text === undefined) return;
      const parsed = typed(() => parseEnvelope(text), "parseEnvelope");
      if (parsed.ok) await checkAcceptedEnvelope(parsed.value, "parseEnvelope");
    }),
    params(1500),
  );
});

Deno.test("fuzz envelope: byte flips, insertions and deletions in the published text", async () => {
  const published = encoder.encode(publishedSnapshotText(baseEnvelope));
  await fc.assert(
    fc.asyncProperty(byteEdits, fc.constantFrom(1, 13, 512, 1 << 16), async (edits, chunk) => {
      let bytes: Uint8Array = published;
      for (const e of edits) bytes = applyByteEdit(bytes, e);
      const parsed = typed(() => parseEnvelope(bytes), "parseEnvelope");
      if (parsed.ok) await checkAcceptedEnvelope(parsed.value, "parseEnvelope");
      // The offline verifier over the same bytes: refused, reported invalid, or unchanged.
      const report = await typedAsync(
        () => verifyStream(memReader(bytes, chunk), TRUST_ALL),
        "verifyStream",
      );
      if (report.ok && report.value.valid) {
        assertEquals(canonicalize(report.value.primary), baseCanonical, "a changed file verified");
      }
      if (parsed.ok !== report.ok && report.ok) {
        throw new AssertionError("verifyStream accepted what parseEnvelope refused");
      }
    }),
    params(1500),
  );
});

// ===========================================================================
// 5. Bundle reader
// ===========================================================================

interface TarLayout {
  members: { header: number; data: number; size: number; end: number; name: string }[];
  /** Offset of the first end-of-archive zero block. */
  endMarker: number;
}

function tarLayout(bytes: Uint8Array): TarLayout {
  const members: TarLayout["members"] = [];
  let at = 0;
  for (;;) {
    const block = bytes.subarray(at, at + 512);
    if (block.every((b) => b === 0)) return { members, endMarker: at };
    const nameEnd = block.indexOf(0);
    const name = decoder.decode(block.subarray(0, nameEnd < 0 ? 100 : Math.min(nameEnd, 100)));
    const size = parseInt(decoder.decode(block.subarray(124, 135)), 8);
    const end = at + 512 + Math.ceil(size / 512) * 512;
    members.push({ header: at, data: at + 512, size, end, name });
    at = end;
  }
}

/** A genuine bundle: two snapshots with history, two trees, blobs (one empty), a symlink. */
async function buildBundle(): Promise<{ bytes: Uint8Array; cleanup: () => Promise<void> }> {
  const ws = await Deno.makeTempDir({ prefix: "ctxsnap-fuzz-" });
  await Deno.writeTextFile(`${ws}/a.txt`, "alpha\n");
  await Deno.mkdir(`${ws}/src`);
  await Deno.writeTextFile(`${ws}/src/b.txt`, "bravo ".repeat(100));
  await Deno.writeTextFile(`${ws}/empty`, "");
  await Deno.symlink("a.txt", `${ws}/link`);
  const store = Store.init(`${ws}/.ctxsnap`, ws);
  try {
    await createSnapshot(store, signer, { reason: "first" });
    await Deno.writeTextFile(`${ws}/c.txt`, "charlie\n");
    const second = await createSnapshot(store, signer, { reason: "second" });
    const plan = await planPublish(store, second.id, { withWorkspace: true, history: "all" });
    const chunks: Uint8Array[] = [];
    writePublished(store, plan, (chunk) => chunks.push(chunk.slice()));
    return {
      bytes: concat(...chunks),
      cleanup: () => Deno.remove(ws, { recursive: true }),
    };
  } finally {
    store.close();
  }
}

type BundleEdit =
  | { kind: "bytes"; edits: ByteEdit[] }
  | { kind: "truncate"; at: number }
  | { kind: "swap"; i: number; j: number }
  | { kind: "duplicate"; i: number; j: number }
  | { kind: "drop"; i: number }
  | { kind: "padding"; at: number; byte: number }
  | { kind: "header"; i: number; offset: number; byte: number }
  | { kind: "appendZeros"; count: number };

const bundleEditArb: fc.Arbitrary<BundleEdit> = fc.oneof(
  fc.record({ kind: fc.constant("bytes" as const), edits: byteEdits }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("swap" as const), i: fc.nat(), j: fc.nat() }),
  fc.record({ kind: fc.constant("duplicate" as const), i: fc.nat(), j: fc.nat() }),
  fc.record({ kind: fc.constant("drop" as const), i: fc.nat() }),
  fc.record({
    kind: fc.constant("padding" as const),
    at: fc.nat(),
    byte: fc.integer({ min: 1, max: 255 }),
  }),
  fc.record({
    kind: fc.constant("header" as const),
    i: fc.nat(),
    offset: fc.nat(511),
    byte: fc.nat(255),
  }),
  fc.record({
    kind: fc.constant("appendZeros" as const),
    count: fc.integer({ min: 1, max: 4096 }),
  }),
);

function applyBundleEdit(bytes: Uint8Array, layout: TarLayout, e: BundleEdit): Uint8Array {
  const members = layout.members;
  const slices = members.map((m) => bytes.subarray(m.header, m.end));
  const tail = bytes.subarray(layout.endMarker);
  const rebuild = (list: Uint8Array[]) => concat(...list, tail);
  switch (e.kind) {
    case "bytes":
      return e.edits.reduce(applyByteEdit, bytes);
    case "truncate":
      return bytes.subarray(0, e.at % bytes.length);
    case "swap": {
      const list = [...slices];
      const i = e.i % list.length;
      const j = e.j % list.length;
      [list[i], list[j]] = [list[j]!, list[i]!];
      return rebuild(list);
    }
    case "duplicate": {
      const list = [...slices];
      list.splice(e.j % (list.length + 1), 0, list[e.i % list.length]!);
      return rebuild(list);
    }
    case "drop": {
      const list = [...slices];
      list.splice(e.i % list.length, 1);
      return rebuild(list);
    }
    case "padding": {
      // Any padding byte: after a member's data, or after the end-of-archive marker.
      const regions: [number, number][] = members
        .map((m) => [m.data + m.size, m.end] as [number, number])
        .filter(([a, b]) => b > a);
      regions.push([layout.endMarker, bytes.length]);
      const total = regions.reduce((n, [a, b]) => n + b - a, 0);
      let k = e.at % total;
      const out = bytes.slice();
      for (const [a, b] of regions) {
        if (k < b - a) {
          out[a + k] = e.byte;
          break;
        }
        k -= b - a;
      }
      return out;
    }
    case "header": {
      const out = bytes.slice();
      out[members[e.i % members.length]!.header + e.offset] = e.byte;
      return out;
    }
    case "appendZeros":
      return concat(bytes, new Uint8Array(e.count));
  }
}

/** The only changes that may be accepted: more or fewer zero bytes after the end marker. */
function isNullChange(original: Uint8Array, layout: TarLayout, mutated: Uint8Array): boolean {
  const end = layout.endMarker + 1024;
  if (mutated.length < end || !equalBytes(mutated.subarray(0, end), original.subarray(0, end))) {
    return false;
  }
  return mutated.subarray(end).every((b) => b === 0);
}

function summaryKey(summary: BundleSummary): string {
  return canonicalize({
    manifest: summary.manifest as unknown as JsonValue,
    envelopes: summary.envelopes.map((e) => canonicalize(e)),
    blobBytes: summary.blobBytes,
  });
}

Deno.test("fuzz bundle: flips, truncations, insertions, reorderings and padding changes are refused with a CtxsnapError", async () => {
  const { bytes: original, cleanup } = await buildBundle();
  try {
    const layout = tarLayout(original);
    assert(layout.members.length >= 6, `bundle has only ${layout.members.length} members`);
    const genuine = await readBundle(memReader(original));
    assertEquals(genuine.badSignatures, []);
    const genuineKey = summaryKey(genuine);
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(bundleEditArb, { minLength: 1, maxLength: 2 }),
        fc.constantFrom(1, 100, 512, 4096, 1 << 20),
        fc.boolean(),
        async (edits, chunk, viaVerify) => {
          const mutated = edits.reduce((b, e) => applyBundleEdit(b, layout, e), original);
          const nullChange = isNullChange(original, layout, mutated);
          let blobBytesSeen = 0;
          const visitor = {
            blobStart: () => (c: Uint8Array) => {
              blobBytesSeen += c.length;
            },
          };
          if (viaVerify) {
            const report = await typedAsync(
              () => verifyStream(memReader(mutated, chunk), TRUST_ALL, visitor),
              "verifyStream",
            );
            if (!report.ok) {
              refused++;
              return;
            }
            assert(
              nullChange || !report.value.valid,
              `verifyStream accepted a changed bundle as valid (${JSON.stringify(edits)})`,
            );
          } else {
            const summary = await typedAsync(
              () => readBundle(memReader(mutated, chunk), visitor),
              "readBundle",
            );
            if (!summary.ok) {
              refused++;
              return;
            }
            if (nullChange) assertEquals(summaryKey(summary.value), genuineKey);
            else {
              assert(
                summary.value.badSignatures.length > 0,
                `readBundle accepted a changed bundle (${JSON.stringify(edits)})`,
              );
            }
            assertEquals(blobBytesSeen, summary.value.blobBytes);
          }
        },
      ),
      params(600),
    );
    assert(refused > 0, "nothing was refused: the mutations are not reaching the reader");
  } finally {
    await cleanup();
  }
});

Deno.test("fuzz bundle: well-framed bundles whose manifest or trees were mutated (hashes kept consistent) are refused", async () => {
  const { bytes: original, cleanup } = await buildBundle();
  try {
    const layout = tarLayout(original);
    const members = layout.members.map((m): { name: string; data: Uint8Array } => ({
      name: m.name,
      data: original.slice(m.data, m.data + m.size),
    }));
    const genuineKey = summaryKey(await readBundle(memReader(original)));
    const jsonMembers = members.flatMap((m, i) => (m.name.endsWith(".json") ? [i] : []));
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.array(mutationArb, { minLength: 1, maxLength: 2 }),
        fc.boolean(),
        async (pick, mutations, followTree) => {
          const list = members.map((m) => ({ ...m }));
          const index = jsonMembers[pick % jsonMembers.length]!;
          const target = list[index]!;
          let value: unknown = parseJson(target.data);
          for (const m of mutations) value = mutate(value, m);
          let data: Uint8Array;
          try {
            data = canonicalBytes(value);
          } catch {
            const text = JSON.stringify(value);
            if (text === undefined) return;
            data = encoder.encode(text);
          }
          target.data = data;
          if (target.name.startsWith("trees/")) {
            // Keep the tree's hash consistent with its name, and (optionally) the manifest too,
            // so the reader's deeper checks (references, sizes) are what must refuse it.
            const oldId = target.name.slice(6, 70);
            const newId = sha256Hex(data);
            target.name = `trees/${newId}.json`;
            if (followTree) {
              const manifest = list[0]!;
              const text = decoder.decode(manifest.data).replaceAll(oldId, newId);
              const m = parseJson(text) as { trees: string[] };
              m.trees.sort();
              manifest.data = canonicalBytes(m);
              const trees = list.filter((x) => x.name.startsWith("trees/"))
                .sort((a, b) => (a.name < b.name ? -1 : 1));
              const others = list.filter((x) => !x.name.startsWith("trees/"));
              const firstBlob = others.findIndex((x) => x.name.startsWith("blobs/"));
              others.splice(firstBlob < 0 ? others.length : firstBlob, 0, ...trees);
              list.splice(0, list.length, ...others);
            }
          }
          // A mutated tree may now equal another one; duplicate names are the tar layer's
          // business (covered above), and TarWriter refuses to write them.
          if (new Set(list.map((m) => m.name)).size !== list.length) return;
          const chunks: Uint8Array[] = [];
          const writer = new TarWriter((chunk) => chunks.push(chunk.slice()));
          for (const m of list) writer.addFile(m.name, m.data);
          writer.finish();
          const bytes = concat(...chunks);
          const summary = await typedAsync(() => readBundle(memReader(bytes, 4096)), "readBundle");
          if (!summary.ok) {
            refused++;
            return;
          }
          const same = summaryKey(summary.value) === genuineKey;
          assert(
            same || summary.value.badSignatures.length > 0,
            `a changed bundle was accepted: ${decoder.decode(data).slice(0, 400)}`,
          );
        },
      ),
      params(600),
    );
    assert(refused > 0, "nothing was refused");
  } finally {
    await cleanup();
  }
});

Deno.test("fuzz bundle: random byte strings with a ustar-looking header are refused with a CtxsnapError", async () => {
  const { bytes: original, cleanup } = await buildBundle();
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 0, maxLength: 3000 }),
        fc.nat(),
        async (noise, keep) => {
          // Keep a genuine prefix (so headers decode) and continue with noise.
          const prefix = original.subarray(0, keep % Math.min(original.length, 4096));
          const bytes = concat(prefix, noise);
          const result = await typedAsync(
            () => verifyStream(memReader(bytes, 777), TRUST_ALL),
            "verifyStream",
          );
          assert(!result.ok, "random bytes were accepted as a bundle");
        },
      ),
      params(500),
    );
  } finally {
    await cleanup();
  }
});

// ===========================================================================
// 6. The committed hostile corpus
// ===========================================================================

const HOSTILE = new URL("../fixtures/hostile/", import.meta.url);

interface Expectation {
  error: string;
  includes: string;
  bug?: string;
}

async function loadCorpus(): Promise<Map<string, Expectation>> {
  const index = JSON.parse(
    await Deno.readTextFile(new URL("index.json", HOSTILE)),
  ) as Record<string, Expectation>;
  const onDisk: string[] = [];
  for await (const entry of Deno.readDir(HOSTILE)) {
    if (entry.name !== "index.json" && entry.name !== "generate.ts") onDisk.push(entry.name);
  }
  assertEquals(onDisk.sort(), Object.keys(index).sort(), "index.json and the directory differ");
  return new Map(Object.entries(index));
}

function classChain(error: unknown): string[] {
  const names: string[] = [];
  for (let p = Object.getPrototypeOf(error); p !== null; p = Object.getPrototypeOf(p)) {
    names.push((p.constructor as { name: string }).name);
  }
  return names;
}

/** Runs the reader a fixture targets; returns a verdict string for comparison. */
async function readFixture(name: string, bytes: Uint8Array): Promise<Outcome<string>> {
  if (name.startsWith("json-")) {
    const lenient = typed(() => parseJson(bytes), name);
    const strict = typed(() => parseCanonical(bytes), name);
    if (lenient.ok !== strict.ok && lenient.ok) return strict as Outcome<never>;
    return lenient.ok ? { ok: true, value: "valid" } : lenient;
  }
  if (name.startsWith("tree-") || name === "control-tree.json") {
    const result = typed(() => validateTree(parseJson(bytes)), name);
    const strict = typed(() => validateTree(parseCanonical(bytes)), name);
    if (result.ok && !strict.ok) return strict;
    return result.ok ? { ok: true, value: "valid" } : result;
  }
  if (name.startsWith("envelope-") || name === "control-envelope.json") {
    const report = await typedAsync(() => verifyStream(memReader(bytes, 4096), TRUST_ALL), name);
    if (!report.ok) return report;
    return { ok: true, value: report.value.valid ? "valid" : "invalid" };
  }
  if (name.endsWith(".ctxbundle")) {
    const report = await typedAsync(() => verifyStream(memReader(bytes, 1000), TRUST_ALL), name);
    // readBundle directly (no sniffing) must refuse too.
    const direct = await typedAsync(() => readBundle(memReader(bytes, 333)), `${name} readBundle`);
    if (report.ok !== direct.ok && !name.startsWith("bundle-")) {
      throw new AssertionError(`${name}: verifyStream and readBundle disagree`);
    }
    if (!report.ok) return report;
    if (direct.ok === false) return direct;
    return { ok: true, value: report.value.valid ? "valid" : "invalid" };
  }
  throw new AssertionError(`fixture ${name} does not name the reader it targets`);
}

function judge(name: string, expect: Expectation, outcome: Outcome<string>): string | null {
  if (expect.error === "valid" || expect.error === "invalid") {
    if (outcome.ok && outcome.value === expect.error) return null;
    return `${name}: expected ${expect.error}, got ${
      outcome.ok ? outcome.value : describe(outcome.error)
    }`;
  }
  if (outcome.ok) return `${name}: accepted (${outcome.value}), expected ${expect.error}`;
  if (!classChain(outcome.error).includes(expect.error)) {
    return `${name}: expected ${expect.error}, got ${outcome.error.name}: ${outcome.error.message}`;
  }
  if (!outcome.error.message.includes(expect.includes)) {
    return `${name}: message ${JSON.stringify(outcome.error.message)} lacks ${
      JSON.stringify(expect.includes)
    }`;
  }
  return null;
}

for (
  const [prefix, what] of [
    [
      "control-",
      "genuine control inputs are accepted (the hostile variants differ only on purpose)",
    ],
    ["json-", "every json-* fixture is refused by parseJson and parseCanonical"],
    ["tree-", "every tree-* fixture is refused by the tree reader"],
    ["envelope-", "every envelope-* fixture is refused by the published-snapshot reader"],
    ["bundle-", "every bundle-* fixture is refused by the bundle reader"],
  ] as const
) {
  Deno.test(`hostile corpus: ${what}`, async () => {
    const corpus = await loadCorpus();
    const failures: string[] = [];
    let count = 0;
    for (const [name, expect] of corpus) {
      if (!name.startsWith(prefix) || expect.bug !== undefined) continue;
      count++;
      const bytes = await Deno.readFile(new URL(name, HOSTILE));
      const failure = judge(name, expect, await readFixture(name, bytes));
      if (failure !== null) failures.push(failure);
    }
    assert(count > 0, `no ${prefix}* fixtures`);
    assertEquals(failures, [], `${failures.length} of ${count} fixtures misjudged`);
  });
}

Deno.test("hostile corpus: stays under 1 MiB", async () => {
  let total = 0;
  for await (const entry of Deno.readDir(HOSTILE)) {
    total += (await Deno.stat(new URL(entry.name, HOSTILE))).size;
  }
  assert(total < 1024 * 1024, `the corpus holds ${total} bytes`);
});

Deno.test({
  name: "hostile corpus: envelopes with impossible calendar dates are refused",
  async fn() {
    const corpus = await loadCorpus();
    const failures: string[] = [];
    for (const [name, expect] of corpus) {
      if (expect.bug === undefined) continue;
      const bytes = await Deno.readFile(new URL(name, HOSTILE));
      const failure = judge(name, expect, await readFixture(name, bytes));
      if (failure !== null) failures.push(`${failure} — ${expect.bug}`);
    }
    assertEquals(failures, []);
  },
});
