import fc from "fast-check";
import {
  canonicalBytes,
  canonicalize,
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_DEPTH,
  type JsonValue,
  parseCanonical,
  parseJson,
} from "../../lib/encoding/canonical_json.ts";
import { CanonicalJsonError, IntegrityError } from "../../lib/errors.ts";
import { fromHex, isHex, toHex } from "../../lib/encoding/hex.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";

const VECTORS = new URL("../vectors/jcs/", import.meta.url);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

// ---------------------------------------------------------------------------
// canonicalize()
// ---------------------------------------------------------------------------

Deno.test("canonicalize() sorts keys by UTF-16 code units, not code points", () => {
  // U+1F602 is D83D DE02 in UTF-16, so it sorts before U+FB33 despite its larger code point.
  const value = { "\ufb33": 1, "\u{1f602}": 2, "a": 3, "B": 4, "": 5, "10": 6, "1": 7 };
  assertEquals(canonicalize(value), '{"":5,"1":7,"10":6,"B":4,"a":3,"\u{1f602}":2,"\ufb33":1}');
});

Deno.test("canonicalize() sorts nested object keys and keeps array order", () => {
  assertEquals(
    canonicalize({ z: [{ b: 1, a: 2 }, 3, []], y: {} }),
    '{"y":{},"z":[{"a":2,"b":1},3,[]]}',
  );
});

Deno.test("canonicalize() emits literals and top-level scalars", () => {
  assertEquals(canonicalize(null), "null");
  assertEquals(canonicalize(true), "true");
  assertEquals(canonicalize(false), "false");
  assertEquals(canonicalize("x"), '"x"');
  assertEquals(canonicalize(-42), "-42");
  assertEquals(canonicalize([null, true, false]), "[null,true,false]");
});

Deno.test("canonicalize() escapes only quote, backslash and control characters", () => {
  const short: Record<number, string> = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r" };
  for (let code = 0; code < 0x20; code++) {
    const expected = short[code] ?? "\\u" + code.toString(16).padStart(4, "0");
    assertEquals(canonicalize(String.fromCharCode(code)), `"${expected}"`, `U+${code}`);
  }
  assertEquals(canonicalize('"\\'), '"\\"\\\\"');
  // Everything else is literal, including DEL, U+2028/2029, "/" and non-ASCII.
  const literal = "\u007f\u2028\u2029/<>'é€\u{1f602}\ufeff";
  assertEquals(canonicalize(literal), `"${literal}"`);
});

Deno.test("canonicalize() writes \\u escapes with lowercase hex", () => {
  assertEquals(canonicalize("\u001f\u000b"), '"\\u001f\\u000b"');
});

Deno.test("canonicalize() serializes -0 as 0", () => {
  assertEquals(canonicalize(-0), "0");
  assertEquals(canonicalize([-0], { integersOnly: false }), "[0]");
});

Deno.test("canonicalize() refuses a non-integer by default", () => {
  assertThrows(() => canonicalize({ a: [1.5] }), CanonicalJsonError, '"1.5"');
  assertThrows(() => canonicalize(0.1), CanonicalJsonError, "not an integer");
});

Deno.test("canonicalize() refuses integers outside the safe range by default", () => {
  assertEquals(canonicalize(Number.MAX_SAFE_INTEGER), "9007199254740991");
  assertEquals(canonicalize(Number.MIN_SAFE_INTEGER), "-9007199254740991");
  assertThrows(() => canonicalize(2 ** 53), CanonicalJsonError, '"9007199254740992"');
  assertThrows(() => canonicalize(-(2 ** 53)), CanonicalJsonError);
  assertThrows(() => canonicalize(1e21), CanonicalJsonError);
});

Deno.test("canonicalize() accepts any finite number with integersOnly false", () => {
  assertEquals(
    canonicalize([1.5, 1e21, 2 ** 53, 5e-324], { integersOnly: false }),
    "[1.5,1e+21,9007199254740992,5e-324]",
  );
});

Deno.test("canonicalize() refuses NaN and infinities even with integersOnly false", () => {
  for (const value of [NaN, Infinity, -Infinity]) {
    assertThrows(() => canonicalize(value), CanonicalJsonError, "not finite");
    assertThrows(
      () => canonicalize([value], { integersOnly: false }),
      CanonicalJsonError,
      "not finite",
    );
  }
});

Deno.test("canonicalize() refuses lone surrogates in strings and keys", () => {
  for (const lone of ["\ud800", "\udc00", "a\ud83d", "\ude02\ud83d"]) {
    assertThrows(() => canonicalize(lone), CanonicalJsonError, "lone surrogate");
    assertThrows(() => canonicalize({ [lone]: 1 }), CanonicalJsonError, "Key");
  }
  assertEquals(canonicalize("\ud83d\ude02"), '"\u{1f602}"');
});

Deno.test("canonicalize() refuses undefined, functions, symbols and bigints", () => {
  const bad: unknown[] = [undefined, () => 1, Symbol("s"), 1n];
  for (const value of bad) {
    assertThrows(() => canonicalize(value), CanonicalJsonError, "is not valid JSON");
    assertThrows(() => canonicalize([value]), CanonicalJsonError, '"/0"');
    assertThrows(() => canonicalize({ a: value }), CanonicalJsonError, '"/a"');
  }
});

Deno.test("canonicalize() refuses objects that are not plain", () => {
  class Point {
    x = 1;
  }
  const bad: unknown[] = [
    new Date(0),
    new Map(),
    new Set(),
    new Point(),
    new Uint8Array(2),
    /x/,
    new String("s"),
    new Number(1),
    Promise.resolve(),
    new Error("e"),
  ];
  for (const value of bad) {
    assertThrows(() => canonicalize({ v: value }), CanonicalJsonError, "is not a plain object");
  }
});

Deno.test("canonicalize() refuses objects with symbol keys", () => {
  assertThrows(() => canonicalize({ [Symbol("s")]: 1 }), CanonicalJsonError, "symbol keys");
});

Deno.test("canonicalize() accepts prototype-less objects", () => {
  const value = Object.create(null);
  value.b = 1;
  value.a = 2;
  assertEquals(canonicalize(value), '{"a":2,"b":1}');
});

Deno.test("canonicalize() treats an own __proto__ key as an ordinary key", () => {
  const value = JSON.parse('{"__proto__":{"x":1},"a":2}');
  assertEquals(canonicalize(value), '{"__proto__":{"x":1},"a":2}');
});

Deno.test("canonicalize() refuses an array with holes", () => {
  // deno-lint-ignore no-sparse-arrays
  assertThrows(() => canonicalize([1, , 3]), CanonicalJsonError, '"/1"');
  assertThrows(() => canonicalize(new Array(2)), CanonicalJsonError, "has a hole");
});

Deno.test("canonicalize() refuses cycles but accepts shared references", () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  assertThrows(() => canonicalize(cyclic), CanonicalJsonError, "cycle");
  const list: unknown[] = [];
  list.push([list]);
  assertThrows(() => canonicalize(list), CanonicalJsonError, "cycle");
  const shared = { x: [1] };
  assertEquals(canonicalize([shared, shared]), '[{"x":[1]},{"x":[1]}]');
});

Deno.test("canonicalize() names the offending path as a JSON pointer", () => {
  const error = assertThrows(
    () => canonicalize({ "a/b": [0, { "~": 0.5 }] }),
    CanonicalJsonError,
  );
  assert(error.message.includes('"/a~1b/1/~0"'), error.message);
  assert(error.message.startsWith("Number "), error.message);
});

Deno.test("canonicalBytes() is the UTF-8 encoding of canonicalize()", () => {
  const value = { "é": "\u{1f602}", a: [1, 2] };
  assertEquals(canonicalBytes(value), encoder.encode(canonicalize(value)));
  assertEquals(canonicalBytes(value), encoder.encode('{"a":[1,2],"é":"\u{1f602}"}'));
  assertThrows(() => canonicalBytes(1.5), CanonicalJsonError);
  assertEquals(canonicalBytes(1.5, { integersOnly: false }), encoder.encode("1.5"));
});

// ---------------------------------------------------------------------------
// parseJson()
// ---------------------------------------------------------------------------

Deno.test("parseJson() exposes the documented defaults", () => {
  assertEquals(DEFAULT_MAX_BYTES, 16 * 1024 * 1024);
  assertEquals(DEFAULT_MAX_DEPTH, 64);
});

Deno.test("parseJson() accepts any insignificant whitespace", () => {
  assertEquals(parseJson(' \t\r\n{ "b" : [ 1 , 2 ] ,\n"a":{ } } \n'), { a: {}, b: [1, 2] });
});

Deno.test("parseJson() parses top-level scalars", () => {
  assertEquals(parseJson("null"), null);
  assertEquals(parseJson("true"), true);
  assertEquals(parseJson(" false "), false);
  assertEquals(parseJson('"s"'), "s");
  assertEquals(parseJson("-12"), -12);
  assertEquals(parseJson("0"), 0);
});

Deno.test("parseJson() decodes every escape", () => {
  assertEquals(
    parseJson('"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00E9\\ud83d\\ude02"'),
    '"\\/\b\f\n\r\tAé\u{1f602}',
  );
});

Deno.test("parseJson() rejects a duplicate key", () => {
  assertThrows(() => parseJson('{"a":1,"b":2,"a":3}'), CanonicalJsonError, 'Duplicate key "a"');
  assertThrows(() => parseJson('{"é":1,"\\u00e9":2}'), CanonicalJsonError, "Duplicate key");
});

Deno.test("parseJson() keeps a __proto__ key as an ordinary own key", () => {
  const value = parseJson('{"__proto__":{"polluted":true},"a":1}') as Record<string, JsonValue>;
  assert(Object.hasOwn(value, "__proto__"));
  assertEquals(Object.keys(value).sort(), ["__proto__", "a"]);
  assertEquals(Object.getPrototypeOf(value), Object.prototype);
  assertEquals((value as { polluted?: unknown }).polluted, undefined);
  assertEquals(({} as { polluted?: unknown }).polluted, undefined);
  assertEquals(canonicalize(value), '{"__proto__":{"polluted":true},"a":1}');
});

Deno.test("parseJson() reports byte offsets for bytes and character offsets for text", () => {
  const text = '{"é":1,"é":2}';
  assertThrows(() => parseJson(text), CanonicalJsonError, "at character 7");
  assertThrows(() => parseJson(encoder.encode(text)), CanonicalJsonError, "at byte 8");
  assertThrows(() => parseJson("[1,,2]"), CanonicalJsonError, 'Unexpected character ","');
});

Deno.test("parseJson() rejects a leading byte order mark", () => {
  assertThrows(() => parseJson("\ufeff{}"), CanonicalJsonError, "byte order mark");
  assertThrows(
    () => parseJson(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d])),
    CanonicalJsonError,
    "byte order mark",
  );
});

Deno.test("parseJson() rejects invalid UTF-8 and names the byte", () => {
  const error = assertThrows(
    () => parseJson(new Uint8Array([0x5b, 0x22, 0x61, 0xc3, 0x28, 0x22, 0x5d])),
    CanonicalJsonError,
    "not valid UTF-8",
  );
  assert(error.message.includes("at byte 3"), error.message);
});

Deno.test("parseJson() rejects raw lone surrogates in text input", () => {
  assertThrows(() => parseJson('["a\ud800"]'), CanonicalJsonError, "at character 3");
  assertThrows(() => parseJson('{"\udc00":1}'), CanonicalJsonError, "lone surrogate");
});

Deno.test("parseJson() rejects lone surrogate escapes", () => {
  for (const escape of ["\\ud800", "\\udfff", "\\ude02\\ud83d", "\\ud83dx", "\\ud83d\\u0041"]) {
    assertThrows(() => parseJson(`["${escape}"]`), CanonicalJsonError, "lone surrogate");
  }
});

Deno.test("parseJson() rejects numbers with leading zeros or a lone minus", () => {
  assertThrows(() => parseJson("[01]"), CanonicalJsonError, 'Number "01" has a leading zero');
  assertThrows(() => parseJson("-"), CanonicalJsonError, '"-"');
  assertThrows(() => parseJson("[-]"), CanonicalJsonError);
  assertThrows(() => parseJson("00", { integersOnly: false }), CanonicalJsonError, "leading zero");
});

Deno.test("parseJson() rejects trailing content", () => {
  assertThrows(() => parseJson("{} {}"), CanonicalJsonError, "after the JSON value");
  assertThrows(() => parseJson("1 2"), CanonicalJsonError, "at character 2");
});

Deno.test("parseJson() rejects fractions, exponents and unsafe integers by default", () => {
  assertThrows(() => parseJson("[1.5]"), CanonicalJsonError, 'Number "1.5" is not an integer');
  assertThrows(() => parseJson("1.0"), CanonicalJsonError, "not an integer");
  assertThrows(() => parseJson("1e2"), CanonicalJsonError, "not an integer");
  assertThrows(() => parseJson("9007199254740992"), CanonicalJsonError, "safe integer range");
  assertEquals(parseJson("[9007199254740991,-9007199254740991]"), [
    9007199254740991,
    -9007199254740991,
  ]);
});

Deno.test("parseJson() parses any number as a JS number with integersOnly false", () => {
  assertEquals(
    parseJson("[1.5, 1E30, -2e-3, 9007199254740993, 0.1]", { integersOnly: false }),
    [1.5, 1e30, -0.002, 9007199254740992, 0.1],
  );
  assertThrows(() => parseJson("1e400", { integersOnly: false }), CanonicalJsonError, "too large");
});

Deno.test("parseJson() enforces maxDepth", () => {
  const nest = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
  assertEquals(parseJson(nest(DEFAULT_MAX_DEPTH)) !== undefined, true);
  assertThrows(() => parseJson(nest(DEFAULT_MAX_DEPTH + 1)), CanonicalJsonError, "deeper than");
  assertEquals(parseJson('{"a":[1]}', { maxDepth: 2 }), { a: [1] });
  assertThrows(() => parseJson('{"a":[1]}', { maxDepth: 1 }), CanonicalJsonError, "at character 5");
  assertEquals(parseJson("7", { maxDepth: 0 }), 7);
  assertEquals(parseJson(nest(200), { maxDepth: 200 }) !== undefined, true);
});

Deno.test("parseJson() enforces maxBytes before decoding", () => {
  // Invalid UTF-8 past the limit is reported as too large, proving no decoding happened.
  const bytes = new Uint8Array(11).fill(0xff);
  assertThrows(
    () => parseJson(bytes, { maxBytes: 10 }),
    CanonicalJsonError,
    "exceeds the limit of 10 bytes",
  );
  assertEquals(parseJson("[1,2]", { maxBytes: 5 }), [1, 2]);
  assertThrows(() => parseJson("[1,2] ", { maxBytes: 5 }), CanonicalJsonError, "6 bytes");
  // Text input is measured in UTF-8 bytes: "é" is 2 bytes, U+1F602 is 4.
  assertEquals(parseJson('"é"', { maxBytes: 4 }), "é");
  assertThrows(() => parseJson('"é"', { maxBytes: 3 }), CanonicalJsonError, "4 bytes");
  assertThrows(() => parseJson('"\u{1f602}"', { maxBytes: 5 }), CanonicalJsonError, "6 bytes");
});

Deno.test("parseJson() refuses input that is neither text nor bytes", () => {
  assertThrows(() => parseJson(42 as unknown as string), CanonicalJsonError);
});

Deno.test("parseJson() refuses invalid limit options with a RangeError", () => {
  assertThrows(() => parseJson("1", { maxDepth: -1 }), RangeError);
  assertThrows(() => parseJson("1", { maxBytes: 1.5 }), RangeError);
});

// ---------------------------------------------------------------------------
// parseCanonical()
// ---------------------------------------------------------------------------

Deno.test("parseCanonical() accepts canonical text and bytes", () => {
  const text = '{"a":[1,"\u{1f602}",null],"b":{"c":true}}';
  const expected = { a: [1, "\u{1f602}", null], b: { c: true } };
  assertEquals(parseCanonical(text), expected);
  assertEquals(parseCanonical(encoder.encode(text)), expected);
});

Deno.test("parseCanonical() rejects non-canonical key order", () => {
  assertThrows(
    () => parseCanonical('{"b":1,"a":2}'),
    CanonicalJsonError,
    "is not in canonical form",
  );
});

Deno.test("parseCanonical() rejects whitespace and needless escapes", () => {
  for (const text of ['{"a": 1}', "[1]\n", '["\\u0041"]', '["\\/"]', '["\\u001F"]', "-0"]) {
    assertEquals(parseJson(text) !== undefined, true);
    assertThrows(() => parseCanonical(text), CanonicalJsonError, "is not in canonical form");
  }
});

Deno.test("parseCanonical() reports where the input first differs", () => {
  assertThrows(
    () => parseCanonical(encoder.encode('{"é":1,"ê": 2}')),
    CanonicalJsonError,
    "at byte 13",
  );
});

Deno.test("parseCanonical() accepts canonical non-integers with integersOnly false", () => {
  assertEquals(parseCanonical("[1.5,1e+21]", { integersOnly: false }), [1.5, 1e21]);
  assertThrows(
    () => parseCanonical("[1.50]", { integersOnly: false }),
    CanonicalJsonError,
    "canonical form",
  );
  assertThrows(() => parseCanonical("[1.5]"), CanonicalJsonError, "not an integer");
});

// ---------------------------------------------------------------------------
// RFC 8785 vectors
// ---------------------------------------------------------------------------

async function listJson(dir: URL): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(".json")) names.push(entry.name);
  }
  return names.sort();
}

Deno.test("canonicalize() reproduces every RFC 8785 output vector byte for byte", async () => {
  const names = await listJson(new URL("input/", VECTORS));
  assert(names.length >= 6, `expected the cyberphone vectors, found ${names.join(", ")}`);
  for (const name of ["arrays", "french", "structures", "unicode", "values", "weird"]) {
    assert(names.includes(`${name}.json`), `missing vector ${name}.json`);
  }
  for (const name of names) {
    const input = await Deno.readFile(new URL(`input/${name}`, VECTORS));
    const expected = await Deno.readFile(new URL(`output/${name}`, VECTORS));
    const actual = canonicalBytes(parseJson(input, { integersOnly: false }), {
      integersOnly: false,
    });
    assertEquals(decoder.decode(actual), decoder.decode(expected), name);
    assertEquals(actual, expected, name);
  }
});

Deno.test("parseCanonical() accepts every RFC 8785 output vector as a fixed point", async () => {
  for (const name of await listJson(new URL("output/", VECTORS))) {
    const expected = await Deno.readFile(new URL(`output/${name}`, VECTORS));
    const value = parseCanonical(expected, { integersOnly: false });
    assertEquals(canonicalBytes(value, { integersOnly: false }), expected, name);
    assertEquals(parseCanonical(decoder.decode(expected), { integersOnly: false }), value, name);
  }
});

Deno.test("canonicalize() formats every RFC 8785 Appendix B number as specified", async () => {
  const lines = (await Deno.readTextFile(new URL("numbers.txt", VECTORS))).split("\n");
  const view = new DataView(new ArrayBuffer(8));
  let count = 0;
  for (const line of lines) {
    if (line === "" || line.startsWith("#")) continue;
    const [bits, expected] = line.split(",");
    assert(bits !== undefined && isHex(bits, 16) && expected !== undefined, line);
    view.setBigUint64(0, BigInt("0x" + bits));
    const value = view.getFloat64(0);
    if (expected === "error") {
      assertThrows(
        () => canonicalize(value, { integersOnly: false }),
        CanonicalJsonError,
        undefined,
      );
    } else {
      assertEquals(canonicalize(value, { integersOnly: false }), expected, bits);
      // The expected text parses back to the same double and is canonical.
      assertEquals(parseCanonical(expected, { integersOnly: false }), value, bits);
    }
    count++;
  }
  assertEquals(count, 26);
});

Deno.test("parseCanonical() refuses every hostile input with CanonicalJsonError", async () => {
  const dir = new URL("invalid/", VECTORS);
  const names = await listJson(dir);
  assert(names.length >= 40, `expected the invalid vectors, found ${names.length}`);
  for (const name of names) {
    const bytes = await Deno.readFile(new URL(name, dir));
    for (const input of [bytes, decoder.decode(bytes)]) {
      // Lossy decoding may repair some inputs (e.g. a BOM is dropped); bytes are authoritative.
      if (typeof input === "string" && encoder.encode(input).length !== bytes.length) continue;
      let error: unknown;
      try {
        parseCanonical(input);
      } catch (caught) {
        error = caught;
      }
      assert(error !== undefined, `${name} was accepted by parseCanonical()`);
      assert(
        error instanceof CanonicalJsonError,
        `${name} threw ${
          error instanceof Error ? `${error.name}: ${error.message}` : String(error)
        }`,
      );
      if (name.startsWith("noncanonical_")) {
        parseJson(input); // valid JSON, only the form is wrong
        assert(error.message.includes("is not in canonical form"), `${name}: ${error.message}`);
      } else {
        assertThrows(() => parseJson(input), CanonicalJsonError, undefined);
      }
    }
  }
});

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

const { json } = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.maxSafeInteger(),
    fc.string({ unit: "binary" }),
    fc.array(tie("json"), { maxLength: 5 }),
    fc.dictionary(fc.string({ unit: "binary", maxLength: 6 }), tie("json"), { maxKeys: 5 }),
  ),
}));

Deno.test("parseCanonical(canonicalize(v)) deep-equals v and canonicalize is idempotent", () => {
  fc.assert(
    fc.property(json, (value) => {
      const text = canonicalize(value);
      const parsed = parseCanonical(text);
      assertEquals(parsed, value);
      assertEquals(canonicalize(parsed), text);
      assertEquals(parseCanonical(canonicalBytes(value)), value);
    }),
    { numRuns: 300 },
  );
});

Deno.test("parseJson() accepts any whitespace-padded JSON.stringify output of a canonical value", () => {
  fc.assert(
    fc.property(json, fc.constantFrom(undefined, 1, "\t", " \n"), (value, indent) => {
      const pretty = JSON.stringify(value, null, indent);
      assertEquals(parseJson(pretty), value);
      assertEquals(canonicalize(parseJson(encoder.encode(pretty))), canonicalize(value));
    }),
    { numRuns: 200 },
  );
});

Deno.test("parseJson() throws only CanonicalJsonError on corrupted input", () => {
  fc.assert(
    fc.property(
      json,
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), {
        minLength: 1,
        maxLength: 4,
      }),
      (value, edits) => {
        const bytes = canonicalBytes(value);
        if (bytes.length === 0) return;
        for (const [index, byte] of edits) bytes[index % bytes.length] = byte;
        for (const parse of [parseJson, parseCanonical]) {
          try {
            parse(bytes);
          } catch (error) {
            assert(error instanceof CanonicalJsonError, `threw ${String(error)}`);
          }
        }
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("parseCanonical() parses a 5 MB manifest of 35,000 entries", () => {
  const entries = [];
  for (let i = 0; entries.length < 35_000; i++) {
    entries.push({
      blob: "ab".repeat(32),
      mode: 420,
      path: `src/module_${i}/file_${i}_\u00e9\u{1f602}.ts`,
      size: i * 7,
      type: "file",
    });
  }
  const bytes = canonicalBytes({ entries, skipped: [], version: 1 });
  assert(bytes.length > 5_000_000, `manifest is only ${bytes.length} bytes`);
  // Its speed is measured in scripts/bench.ts; tests never depend on timing.
  const value = parseCanonical(bytes) as { entries: { path: string }[] };
  assertEquals(value.entries.length, 35_000);
  assertEquals(value.entries[34_999]?.path, entries[34_999]?.path);
});

// ---------------------------------------------------------------------------
// hex
// ---------------------------------------------------------------------------

Deno.test("toHex() encodes bytes as lowercase hex", () => {
  assertEquals(toHex(new Uint8Array([])), "");
  assertEquals(toHex(new Uint8Array([0, 1, 15, 16, 171, 255])), "00010f10abff");
});

Deno.test("fromHex() decodes lowercase hex and round-trips with toHex()", () => {
  assertEquals(fromHex("00010f10abff"), new Uint8Array([0, 1, 15, 16, 171, 255]));
  assertEquals(fromHex(""), new Uint8Array([]));
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assertEquals(fromHex(toHex(all), 256), all);
});

Deno.test("fromHex() rejects uppercase, odd length and non-hex characters", () => {
  assertThrows(() => fromHex("AB"), IntegrityError, '"AB"');
  assertThrows(() => fromHex("abc"), IntegrityError, 'Hex string "abc" has an odd length');
  for (const bad of ["0x12", "zz", " 1", "1 ", "1-", "éé", "\u0660\u0661", "aB"]) {
    assertThrows(() => fromHex(bad), IntegrityError, "not lowercase hex");
  }
});

Deno.test("fromHex() rejects a length other than expectedBytes", () => {
  assertEquals(fromHex("abcd", 2), new Uint8Array([0xab, 0xcd]));
  assertThrows(() => fromHex("abcd", 32), IntegrityError, "decodes to 2 bytes, expected 32");
});

Deno.test("isHex() accepts only lowercase hex of the given length", () => {
  assert(isHex("00ff"));
  assert(isHex(""));
  assert(isHex("00ff", 4));
  assert(!isHex("00ff", 6));
  assert(!isHex("00FF"));
  assert(!isHex("0ff"));
  assert(!isHex("0g"));
  assert(isHex("a".repeat(64), 64));
});

Deno.test("toHex() and fromHex() round-trip arbitrary bytes", () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      const hex = toHex(bytes);
      assert(isHex(hex, bytes.length * 2));
      assertEquals(fromHex(hex, bytes.length), bytes);
    }),
  );
});
