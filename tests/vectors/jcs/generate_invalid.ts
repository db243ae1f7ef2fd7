/**
 * Regenerates `invalid/*.json`: hostile inputs every canonical JSON reader
 * must refuse. Several are not valid UTF-8, so they are written as bytes here
 * rather than edited by hand.
 *
 * Files named `noncanonical_*` are valid JSON that `parseJson` accepts but
 * `parseCanonical` must refuse; every other file must be refused by both.
 *
 * Run from the repository root:
 * `deno run --allow-write=tests/vectors/jcs/invalid tests/vectors/jcs/generate_invalid.ts`
 *
 * @module
 */
import { concatBytes } from "../../_util.ts";

const enc = new TextEncoder();

function bytes(...parts: (string | number[])[]): Uint8Array {
  const chunks = parts.map((part) => typeof part === "string" ? enc.encode(part) : new Uint8Array(part));
  return concatBytes(chunks);
}

/** Name (without `.json`) → file content. */
export const INVALID_VECTORS: Readonly<Record<string, string | Uint8Array>> = {
  // Duplicate keys.
  duplicate_key: '{"a":1,"a":2}',
  duplicate_key_escaped: '{"a":1,"\\u0061":2}',
  duplicate_key_nested: '{"x":{"b":true,"b":true}}',
  duplicate_key_proto: '{"__proto__":1,"__proto__":2}',
  // Lone surrogates, escaped.
  lone_surrogate_escape_high: '["\\ud800"]',
  lone_surrogate_escape_low: '["\\udc00"]',
  lone_surrogate_escape_reversed: '["\\ude02\\ud83d"]',
  lone_surrogate_escape_then_char: '["\\ud83dA"]',
  lone_surrogate_escape_in_key: '{"\\udbff":1}',
  // Lone surrogates, raw (WTF-8 / CESU-8 bytes: not valid UTF-8).
  raw_lone_surrogate_high: bytes('["', [0xed, 0xa0, 0x80], '"]'),
  raw_lone_surrogate_low: bytes('["', [0xed, 0xb0, 0x80], '"]'),
  raw_surrogate_pair_cesu8: bytes('["', [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x82], '"]'),
  // Invalid UTF-8.
  invalid_utf8_lone_continuation: bytes('["', [0x80], '"]'),
  invalid_utf8_overlong_slash: bytes('["', [0xc0, 0xaf], '"]'),
  invalid_utf8_overlong_nul: bytes('["', [0xe0, 0x80, 0x80], '"]'),
  invalid_utf8_truncated: bytes('["', [0xe2, 0x82], '"]'),
  invalid_utf8_above_max: bytes('["', [0xf4, 0x90, 0x80, 0x80], '"]'),
  invalid_utf8_ff: bytes("[", [0xff], "]"),
  invalid_utf8_in_key: bytes('{"', [0xc3], '":1}'),
  // Byte order mark.
  bom: bytes([0xef, 0xbb, 0xbf], "{}"),
  bom_after_whitespace: bytes(" ", [0xef, 0xbb, 0xbf], "{}"),
  // Excessive nesting (default maxDepth is 64).
  deep_arrays_100: "[".repeat(100) + "]".repeat(100),
  deep_objects_100: '{"a":'.repeat(100) + "null" + "}".repeat(100),
  deep_mixed_65: '[{"a":'.repeat(32) + "[]" + "}]".repeat(32),
  // Syntax errors.
  trailing_comma_array: "[1,]",
  trailing_comma_object: '{"a":1,}',
  leading_comma_array: "[,1]",
  missing_comma: "[1 2]",
  missing_colon: '{"a" 1}',
  empty: "",
  whitespace_only: " \n\t",
  trailing_garbage: '{"a":1} x',
  two_values: "{}{}",
  comment: '{"a":1} // note',
  block_comment: '{/* c */"a":1}',
  single_quotes: "{'a':1}",
  unquoted_key: "{a:1}",
  number_key: "{1:1}",
  unterminated_string: '["abc',
  unterminated_array: "[1,2",
  unterminated_object: '{"a":1',
  unescaped_tab: '["a\tb"]',
  unescaped_newline: '["a\nb"]',
  unescaped_nul: '["a\u0000b"]',
  invalid_escape: '["\\x41"]',
  invalid_escape_single_quote: "[\"\\'\"]",
  short_unicode_escape: '["\\u12"]',
  non_hex_unicode_escape: '["\\u12g4"]',
  non_json_whitespace_nbsp: "[1,\u00a02]",
  non_json_whitespace_vt: "[1,\u000b2]",
  literal_truncated: "[tru]",
  literal_capitalized: "[True]",
  literal_undefined: "[undefined]",
  nan: "[NaN]",
  infinity: "[Infinity]",
  negative_infinity: "[-Infinity]",
  // Numbers.
  leading_zero: "[01]",
  leading_zero_negative: "[-01]",
  minus_alone: "[-]",
  minus_then_space: "[- 1]",
  plus_sign: "[+1]",
  leading_dot: "[.5]",
  trailing_dot: "[1.]",
  exponent_without_digits: "[1e]",
  exponent_sign_without_digits: "[1e+]",
  hex_number: "[0x10]",
  huge_exponent: "[1e400]",
  float_when_integers_only: "[1.5]",
  zero_fraction_when_integers_only: "[1.0]",
  exponent_when_integers_only: "[1e3]",
  upper_exponent_when_integers_only: "[1E3]",
  negative_exponent_when_integers_only: "[100e-2]",
  unsafe_integer_2_53: "[9007199254740992]",
  unsafe_integer_negative_2_53: "[-9007199254740992]",
  unsafe_integer_huge: "[123456789012345678901234567890]",
  // Valid JSON, but not in canonical form.
  noncanonical_key_order: '{"b":1,"a":2}',
  // Sorted by code point, not by UTF-16 code unit as JCS requires.
  noncanonical_key_order_code_points: '{"\ufb33":2,"\u{1f602}":1}',
  noncanonical_whitespace: '{"a": 1}',
  noncanonical_leading_whitespace: ' {"a":1}',
  noncanonical_trailing_newline: '{"a":1}\n',
  noncanonical_escaped_ascii: '["\\u0041"]',
  noncanonical_escaped_solidus: '["\\/"]',
  noncanonical_escaped_non_ascii: '["\\u00e9"]',
  noncanonical_escaped_pair: '["\\ud83d\\ude02"]',
  noncanonical_uppercase_unicode_escape: '["\\u001F"]',
  noncanonical_unicode_escape_for_short: '["\\u000a"]',
  noncanonical_negative_zero: "[-0]",
};

if (import.meta.main) {
  const dir = new URL("./invalid/", import.meta.url);
  await Deno.mkdir(dir, { recursive: true });
  for (const [name, content] of Object.entries(INVALID_VECTORS)) {
    const data = typeof content === "string" ? enc.encode(content) : content;
    await Deno.writeFile(new URL(`${name}.json`, dir), data);
  }
}
