/**
 * Canonical JSON (RFC 8785, JCS): the single byte form ctxsnap hashes and
 * signs, and a strict hand-written parser that refuses anything ambiguous.
 *
 * - {@linkcode canonicalize} / {@linkcode canonicalBytes} serialize a value
 *   with object keys sorted by UTF-16 code units, no whitespace, minimal
 *   string escaping and ECMAScript number formatting.
 * - {@linkcode parseJson} parses strict JSON (any insignificant whitespace),
 *   refusing duplicate keys, lone surrogates, invalid UTF-8, a byte order
 *   mark, excessive size or depth and, by default, non-integer numbers.
 * - {@linkcode parseCanonical} additionally requires the input to be exactly
 *   the canonical serialization of what it parses to.
 *
 * By default only safe integers are accepted as numbers (ctxsnap formats
 * store ratios as integer basis points); pass `integersOnly: false` for full
 * RFC 8785 number handling. Every failure is a {@linkcode CanonicalJsonError}.
 *
 * @example
 * ```ts
 * import { canonicalize, parseCanonical, parseJson } from "./canonical_json.ts";
 *
 * const text = canonicalize({ b: [1, "é"], a: null });
 * if (!(text === '{"a":null,"b":[1,"é"]}')) throw new Error("Example failed");
 * if (!(JSON.stringify(parseCanonical(text)) === text)) throw new Error("Example failed");
 *
 * let refused = false;
 * try {
 *   parseJson('{"a":1,"a":2}');
 * } catch {
 *   refused = true;
 * }
 * if (!(refused)) throw new Error("duplicate keys are refused");
 * ```
 * @module
 */

import { CanonicalJsonError, quote } from "../errors.ts";
import { utf8Length } from "./utf8.ts";

/** A JSON value as produced by the parser and accepted by the serializer. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/** Options for {@linkcode canonicalize} and {@linkcode canonicalBytes}. */
export interface CanonicalOptions {
  /**
   * Accept only safe integers as numbers (`Number.isSafeInteger`).
   * @default {true}
   */
  integersOnly?: boolean;
}

/** Options for {@linkcode parseJson} and {@linkcode parseCanonical}. */
export interface ParseOptions {
  /**
   * Largest accepted input, in UTF-8 bytes; checked before decoding.
   * @default {DEFAULT_MAX_BYTES}
   */
  maxBytes?: number;
  /**
   * Deepest accepted nesting of arrays and objects (a top-level object is depth 1).
   * @default {DEFAULT_MAX_DEPTH}
   */
  maxDepth?: number;
  /**
   * Accept only integer numbers without fraction or exponent, in the safe range.
   * @default {true}
   */
  integersOnly?: boolean;
}

/** Default largest accepted input: 16 MiB. */
export const DEFAULT_MAX_BYTES: number = 16 * 1024 * 1024;

/** Default deepest accepted nesting of arrays and objects. */
export const DEFAULT_MAX_DEPTH: number = 64;

// ---------------------------------------------------------------------------
// Serialization
// ---------------------------------------------------------------------------

// Characters JCS escapes: quote, backslash and C0 controls. Lone surrogates are
// checked separately with isWellFormed().
// deno-lint-ignore no-control-regex
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;
// deno-lint-ignore no-control-regex
const NEEDS_ESCAPE_GLOBAL = /["\\\u0000-\u001f]/g;
const SHORT_ESCAPES: Readonly<Record<string, string>> = {
  '"': '\\"',
  "\\": "\\\\",
  "\b": "\\b",
  "\t": "\\t",
  "\n": "\\n",
  "\f": "\\f",
  "\r": "\\r",
};

function escapeChar(char: string): string {
  return SHORT_ESCAPES[char] ?? "\\u00" + char.charCodeAt(0).toString(16).padStart(2, "0");
}

function pointer(path: readonly (string | number)[]): string {
  let text = "";
  for (const segment of path) {
    text += "/" + String(segment).replaceAll("~", "~0").replaceAll("/", "~1");
  }
  return text;
}

function where(path: readonly (string | number)[]): string {
  return path.length === 0 ? "at the top level" : `at ${quote(pointer(path))}`;
}

class Serializer {
  readonly #integersOnly: boolean;
  readonly #parts: string[] = [];
  readonly #path: (string | number)[] = [];
  readonly #ancestors = new Set<object>();

  constructor(integersOnly: boolean) {
    this.#integersOnly = integersOnly;
  }

  run(value: unknown): string {
    this.#value(value);
    return this.#parts.join("");
  }

  #fail(message: string): never {
    throw new CanonicalJsonError(message);
  }

  #string(text: string, what: string): void {
    if (!text.isWellFormed()) {
      this.#fail(`${what} ${quote(text)} ${where(this.#path)} contains a lone surrogate`);
    }
    this.#parts.push(
      '"',
      NEEDS_ESCAPE.test(text) ? text.replace(NEEDS_ESCAPE_GLOBAL, escapeChar) : text,
      '"',
    );
  }

  #number(value: number): void {
    if (!Number.isFinite(value)) {
      this.#fail(`Number ${quote(value)} ${where(this.#path)} is not finite`);
    }
    if (this.#integersOnly && !Number.isSafeInteger(value)) {
      this.#fail(
        `Number ${quote(value)} ${where(this.#path)} is not an integer in the safe range`,
      );
    }
    // Number.prototype.toString is exactly the JCS number form; -0 becomes "0".
    this.#parts.push(String(value));
  }

  #value(value: unknown): void {
    switch (typeof value) {
      case "string":
        return this.#string(value, "String");
      case "number":
        return this.#number(value);
      case "boolean":
        this.#parts.push(value ? "true" : "false");
        return;
      case "object":
        if (value === null) {
          this.#parts.push("null");
          return;
        }
        return this.#container(value);
      default:
        this.#fail(`Value of type ${typeof value} ${where(this.#path)} is not valid JSON`);
    }
  }

  #container(value: object): void {
    if (this.#ancestors.has(value)) {
      this.#fail(`Value ${where(this.#path)} contains a cycle`);
    }
    if (Array.isArray(value)) {
      this.#ancestors.add(value);
      this.#array(value);
    } else {
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
        this.#fail(
          `Object of type ${quote(typeof name === "string" ? name : "unknown")} ${
            where(this.#path)
          } is not a plain object`,
        );
      }
      if (Object.getOwnPropertySymbols(value).length > 0) {
        this.#fail(`Object ${where(this.#path)} has symbol keys`);
      }
      this.#ancestors.add(value);
      this.#object(value as Record<string, unknown>);
    }
    this.#ancestors.delete(value);
  }

  #array(value: readonly unknown[]): void {
    const parts = this.#parts;
    const path = this.#path;
    parts.push("[");
    for (let i = 0; i < value.length; i++) {
      if (i > 0) parts.push(",");
      path.push(i);
      if (!(i in value)) this.#fail(`Array ${where(path)} has a hole`);
      this.#value(value[i]);
      path.pop();
    }
    parts.push("]");
  }

  #object(value: Record<string, unknown>): void {
    const parts = this.#parts;
    const path = this.#path;
    // The default sort compares UTF-16 code units, exactly as JCS requires.
    const keys = Object.keys(value).sort();
    parts.push("{");
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (i > 0) parts.push(",");
      this.#string(key, "Key");
      parts.push(":");
      path.push(key);
      this.#value(value[key]);
      path.pop();
    }
    parts.push("}");
  }
}

/**
 * Serializes a value as RFC 8785 canonical JSON text.
 *
 * @param value A JSON value built from plain objects, arrays, strings, finite
 * numbers, booleans and null.
 * @param options `integersOnly` (default `true`) refuses any number that is
 * not a safe integer.
 * @returns The canonical JSON text.
 * @throws {CanonicalJsonError} On NaN or infinite numbers, non-integers (with
 * `integersOnly`), lone surrogates, `undefined`, functions, symbols, bigints,
 * non-plain objects, arrays with holes, or cycles.
 */
export function canonicalize(value: unknown, options: CanonicalOptions = {}): string {
  return new Serializer(options.integersOnly ?? true).run(value);
}

/**
 * Serializes a value as the UTF-8 bytes of its RFC 8785 canonical JSON text.
 *
 * @param value A JSON value (see {@linkcode canonicalize}).
 * @param options As for {@linkcode canonicalize}.
 * @returns The UTF-8 encoding of `canonicalize(value, options)`.
 * @throws {CanonicalJsonError} As {@linkcode canonicalize}.
 */
export function canonicalBytes(value: unknown, options: CanonicalOptions = {}): Uint8Array {
  return new TextEncoder().encode(canonicalize(value, options));
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

const UTF8_DECODER = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Offset of the first byte that does not start a valid UTF-8 sequence. */
function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    let need: number;
    let min = 0x80;
    let max = 0xbf;
    if (b < 0x80) {
      i++;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) min = 0xa0;
      if (b === 0xed) max = 0x9f; // no encoded surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) min = 0x90;
      if (b === 0xf4) max = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined) return i;
      if (k === 1 ? c < min || c > max : c < 0x80 || c > 0xbf) return i;
    }
    i += need + 1;
  }
  return bytes.length;
}

function firstLoneSurrogate(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return i;
    } else if (code >= 0xdc00 && code <= 0xdfff) return i;
  }
  return -1;
}

function limit(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`Option ${name} must be a non-negative integer, got ${quote(value)}`);
  }
  return value;
}

interface Source {
  text: string;
  /** Whether offsets are reported in bytes (input was bytes) or characters. */
  bytes: boolean;
}

function decode(input: string | Uint8Array, maxBytes: number): Source {
  if (typeof input === "string") {
    // A UTF-16 unit encodes to 1-3 bytes (a surrogate pair to 4), so only
    // count when the length alone does not decide.
    if (
      input.length > maxBytes || (input.length * 3 > maxBytes && utf8Length(input) > maxBytes)
    ) {
      throw new CanonicalJsonError(
        `Input of ${utf8Length(input)} bytes exceeds the limit of ${maxBytes} bytes`,
      );
    }
    const lone = firstLoneSurrogate(input);
    if (lone >= 0) {
      throw new CanonicalJsonError(
        `Input contains a lone surrogate ${quote(input[lone])} at character ${lone}`,
      );
    }
    return { text: input, bytes: false };
  }
  if (!(input instanceof Uint8Array)) {
    throw new CanonicalJsonError(`Input ${quote(input)} is neither a string nor bytes`);
  }
  if (input.length > maxBytes) {
    throw new CanonicalJsonError(
      `Input of ${input.length} bytes exceeds the limit of ${maxBytes} bytes`,
    );
  }
  let text: string;
  try {
    text = UTF8_DECODER.decode(input);
  } catch (cause) {
    const at = firstInvalidUtf8(input);
    const sample = Array.from(input.subarray(at, at + 4), (b) => b.toString(16).padStart(2, "0"))
      .join(" ");
    throw new CanonicalJsonError(
      `Input is not valid UTF-8: bytes ${quote(sample)} at byte ${at}`,
      { cause },
    );
  }
  return { text, bytes: true };
}

const WS_SPACE = 0x20;
const WS_TAB = 0x09;
const WS_LF = 0x0a;
const WS_CR = 0x0d;

class Parser {
  readonly #text: string;
  readonly #bytes: boolean;
  readonly #maxDepth: number;
  readonly #integersOnly: boolean;
  #pos = 0;
  #depth = 0;

  constructor(source: Source, maxDepth: number, integersOnly: boolean) {
    this.#text = source.text;
    this.#bytes = source.bytes;
    this.#maxDepth = maxDepth;
    this.#integersOnly = integersOnly;
  }

  parse(): JsonValue {
    const text = this.#text;
    if (text.charCodeAt(0) === 0xfeff) {
      this.#fail("Input starts with a byte order mark", 0);
    }
    this.#skipWhitespace();
    if (this.#pos >= text.length) this.#fail("Input contains no JSON value", this.#pos);
    const value = this.#value();
    this.#skipWhitespace();
    if (this.#pos < text.length) {
      this.#fail(`Unexpected ${this.#describe(this.#pos)} after the JSON value`, this.#pos);
    }
    return value;
  }

  /** Formats an offset as a byte offset (byte input) or character offset. */
  #at(pos: number): string {
    return this.#bytes ? `at byte ${utf8Length(this.#text, pos)}` : `at character ${pos}`;
  }

  #fail(message: string, pos: number): never {
    throw new CanonicalJsonError(`${message} ${this.#at(pos)}`);
  }

  #describe(pos: number): string {
    if (pos >= this.#text.length) return "end of input";
    const cp = this.#text.codePointAt(pos)!;
    const name = `character ${quote(String.fromCodePoint(cp))}`;
    // Name invisible or confusable characters (BOM, NBSP, controls) by code point too.
    return cp > 0x20 && cp < 0x7f
      ? name
      : `${name} (U+${cp.toString(16).toUpperCase().padStart(4, "0")})`;
  }

  #unexpected(pos: number, expected: string): never {
    this.#fail(`Unexpected ${this.#describe(pos)}, expected ${expected}`, pos);
  }

  #skipWhitespace(): void {
    const text = this.#text;
    let pos = this.#pos;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === WS_SPACE || c === WS_LF || c === WS_CR || c === WS_TAB) pos++;
      else break;
    }
    this.#pos = pos;
  }

  #value(): JsonValue {
    const text = this.#text;
    const pos = this.#pos;
    const c = text.charCodeAt(pos);
    switch (c) {
      case 0x7b: // {
        return this.#object();
      case 0x5b: // [
        return this.#array();
      case 0x22: // "
        return this.#string();
      case 0x74: // t
        return this.#literal("true", true);
      case 0x66: // f
        return this.#literal("false", false);
      case 0x6e: // n
        return this.#literal("null", null);
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.#number();
        return this.#unexpected(pos, "a JSON value");
    }
  }

  #literal<T extends JsonValue>(word: string, value: T): T {
    if (!this.#text.startsWith(word, this.#pos)) {
      const end = this.#pos + word.length;
      let token = this.#text.slice(this.#pos, end);
      if (end < this.#text.length) token += "...";
      this.#fail(`Invalid literal ${quote(token)}`, this.#pos);
    }
    this.#pos += word.length;
    return value;
  }

  #enter(pos: number): void {
    if (++this.#depth > this.#maxDepth) {
      this.#fail(`Nesting is deeper than the limit of ${this.#maxDepth} levels`, pos);
    }
  }

  #array(): JsonValue[] {
    const text = this.#text;
    this.#enter(this.#pos);
    this.#pos++; // [
    const result: JsonValue[] = [];
    this.#skipWhitespace();
    if (text.charCodeAt(this.#pos) === 0x5d) {
      this.#pos++;
      this.#depth--;
      return result;
    }
    for (;;) {
      this.#skipWhitespace();
      result.push(this.#value());
      this.#skipWhitespace();
      const c = text.charCodeAt(this.#pos);
      if (c === 0x2c) {
        this.#pos++;
        this.#skipWhitespace();
        if (text.charCodeAt(this.#pos) === 0x5d) this.#fail("Trailing comma in array", this.#pos);
      } else if (c === 0x5d) {
        this.#pos++;
        break;
      } else this.#unexpected(this.#pos, '"," or "]"');
    }
    this.#depth--;
    return result;
  }

  #object(): { [key: string]: JsonValue } {
    const text = this.#text;
    this.#enter(this.#pos);
    this.#pos++; // {
    const result: { [key: string]: JsonValue } = {};
    this.#skipWhitespace();
    if (text.charCodeAt(this.#pos) === 0x7d) {
      this.#pos++;
      this.#depth--;
      return result;
    }
    for (;;) {
      this.#skipWhitespace();
      const keyPos = this.#pos;
      if (text.charCodeAt(keyPos) !== 0x22) {
        if (text.charCodeAt(keyPos) === 0x7d) this.#fail("Trailing comma in object", keyPos);
        this.#unexpected(keyPos, "a string key");
      }
      const key = this.#string();
      if (Object.hasOwn(result, key)) this.#fail(`Duplicate key ${quote(key)}`, keyPos);
      this.#skipWhitespace();
      if (text.charCodeAt(this.#pos) !== 0x3a) this.#unexpected(this.#pos, '":"');
      this.#pos++;
      this.#skipWhitespace();
      const value = this.#value();
      if (key === "__proto__") {
        // Define rather than assign, so "__proto__" stays an ordinary own key.
        Object.defineProperty(result, key, {
          value,
          writable: true,
          enumerable: true,
          configurable: true,
        });
      } else {
        result[key] = value;
      }
      this.#skipWhitespace();
      const c = text.charCodeAt(this.#pos);
      if (c === 0x2c) this.#pos++;
      else if (c === 0x7d) {
        this.#pos++;
        break;
      } else this.#unexpected(this.#pos, '"," or "}"');
    }
    this.#depth--;
    return result;
  }

  #string(): string {
    const text = this.#text;
    const start = this.#pos + 1;
    let pos = start;
    // Fast path: no escapes.
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        this.#pos = pos + 1;
        return text.slice(start, pos);
      }
      if (c === 0x5c || c < 0x20 || Number.isNaN(c)) break;
      pos++;
    }
    const parts: string[] = [];
    let chunk = start;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c === 0x22) break;
      if (Number.isNaN(c)) this.#fail("Unterminated string", this.#pos);
      if (c < 0x20) {
        this.#fail(
          `Unescaped control character ${quote(String.fromCharCode(c))} in string`,
          pos,
        );
      }
      if (c !== 0x5c) {
        pos++;
        continue;
      }
      if (pos > chunk) parts.push(text.slice(chunk, pos));
      const e = text.charCodeAt(pos + 1);
      switch (e) {
        case 0x22:
          parts.push('"');
          break;
        case 0x5c:
          parts.push("\\");
          break;
        case 0x2f:
          parts.push("/");
          break;
        case 0x62:
          parts.push("\b");
          break;
        case 0x66:
          parts.push("\f");
          break;
        case 0x6e:
          parts.push("\n");
          break;
        case 0x72:
          parts.push("\r");
          break;
        case 0x74:
          parts.push("\t");
          break;
        case 0x75: {
          const hex = text.slice(pos + 2, pos + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
            this.#fail(`Invalid unicode escape ${quote(text.slice(pos, pos + 6))}`, pos);
          }
          parts.push(String.fromCharCode(parseInt(hex, 16)));
          pos += 6;
          chunk = pos;
          continue;
        }
        default:
          this.#fail(`Invalid escape ${quote(text.slice(pos, pos + 2))} in string`, pos);
      }
      pos += 2;
      chunk = pos;
    }
    if (pos > chunk) parts.push(text.slice(chunk, pos));
    const value = parts.join("");
    // Raw input is already free of lone surrogates, so any here came from escapes.
    if (!value.isWellFormed()) {
      this.#fail(`String ${quote(value)} contains a lone surrogate escape`, start - 1);
    }
    this.#pos = pos + 1;
    return value;
  }

  #number(): number {
    const text = this.#text;
    const start = this.#pos;
    let pos = start;
    let integer = true;
    if (text.charCodeAt(pos) === 0x2d) pos++;
    const first = text.charCodeAt(pos);
    if (first === 0x30) {
      pos++;
      const next = text.charCodeAt(pos);
      if (next >= 0x30 && next <= 0x39) {
        this.#fail(`Number ${quote(this.#token(start))} has a leading zero`, start);
      }
    } else if (first >= 0x31 && first <= 0x39) {
      pos = this.#digits(pos);
    } else {
      this.#fail(
        `Invalid number ${quote(this.#token(start))}: "-" must be followed by a digit`,
        start,
      );
    }
    if (text.charCodeAt(pos) === 0x2e) {
      integer = false;
      const end = this.#digits(pos + 1);
      if (end === pos + 1) {
        this.#fail(`Invalid number ${quote(this.#token(start))}: digits must follow "."`, start);
      }
      pos = end;
    }
    const e = text.charCodeAt(pos);
    if (e === 0x65 || e === 0x45) {
      integer = false;
      pos++;
      const sign = text.charCodeAt(pos);
      if (sign === 0x2b || sign === 0x2d) pos++;
      const end = this.#digits(pos);
      if (end === pos) {
        this.#fail(
          `Invalid number ${quote(this.#token(start))}: the exponent needs digits`,
          start,
        );
      }
      pos = end;
    }
    const token = text.slice(start, pos);
    if (this.#integersOnly && !integer) {
      this.#fail(`Number ${quote(token)} is not an integer`, start);
    }
    const value = Number(token);
    if (this.#integersOnly && !Number.isSafeInteger(value)) {
      this.#fail(`Number ${quote(token)} is outside the safe integer range`, start);
    }
    if (!Number.isFinite(value)) {
      this.#fail(`Number ${quote(token)} is too large to represent`, start);
    }
    this.#pos = pos;
    return value;
  }

  #digits(pos: number): number {
    const text = this.#text;
    for (;;) {
      const c = text.charCodeAt(pos);
      if (c >= 0x30 && c <= 0x39) pos++;
      else return pos;
    }
  }

  /** The number-like token at `start`, for error messages. */
  #token(start: number): string {
    const match = /^[-+0-9.eE]*/.exec(this.#text.slice(start, start + 64));
    const token = match?.[0] ?? "";
    return token === "" ? this.#text.slice(start, start + 1) : token;
  }
}

/**
 * Parses strict JSON text (RFC 8259 grammar with any insignificant whitespace).
 *
 * Refuses duplicate keys, invalid UTF-8, a leading byte order mark, lone
 * surrogates (raw or escaped), leading zeros, trailing content, input larger
 * than `maxBytes` (checked before decoding), nesting deeper than `maxDepth`
 * and, with `integersOnly` (the default), any number with a fraction or
 * exponent or outside the safe integer range. A key `"__proto__"` becomes an
 * ordinary own property.
 *
 * @param input JSON text, or its UTF-8 bytes.
 * @param options Size, depth and number limits.
 * @returns The parsed value.
 * @throws {CanonicalJsonError} If the input is refused; the message gives the
 * offset (in bytes for byte input, in UTF-16 code units for string input).
 */
export function parseJson(input: string | Uint8Array, options: ParseOptions = {}): JsonValue {
  const maxBytes = limit(options.maxBytes, DEFAULT_MAX_BYTES, "maxBytes");
  const maxDepth = limit(options.maxDepth, DEFAULT_MAX_DEPTH, "maxDepth");
  const source = decode(input, maxBytes);
  return new Parser(source, maxDepth, options.integersOnly ?? true).parse();
}

/**
 * Parses JSON text that must be in RFC 8785 canonical form: the input must be
 * byte for byte the {@linkcode canonicalBytes} of the parsed value.
 *
 * @param input Canonical JSON text, or its UTF-8 bytes.
 * @param options As for {@linkcode parseJson}; `integersOnly` also applies to
 * the canonical serialization.
 * @returns The parsed value.
 * @throws {CanonicalJsonError} If {@linkcode parseJson} refuses the input or
 * the input is not in canonical form.
 */
export function parseCanonical(
  input: string | Uint8Array,
  options: ParseOptions = {},
): JsonValue {
  const maxBytes = limit(options.maxBytes, DEFAULT_MAX_BYTES, "maxBytes");
  const maxDepth = limit(options.maxDepth, DEFAULT_MAX_DEPTH, "maxDepth");
  const integersOnly = options.integersOnly ?? true;
  const source = decode(input, maxBytes);
  const value = new Parser(source, maxDepth, integersOnly).parse();
  // Decoding is strict and BOM-free, so equal text means equal UTF-8 bytes.
  const canonical = canonicalize(value, { integersOnly });
  const text = source.text;
  if (text !== canonical) {
    let i = 0;
    while (i < text.length && text.charCodeAt(i) === canonical.charCodeAt(i)) i++;
    const at = source.bytes ? `byte ${utf8Length(text, i)}` : `character ${i}`;
    throw new CanonicalJsonError(
      `JSON text is not in canonical form: it first differs from ${
        quote(canonical.slice(Math.max(0, i - 20), i + 20))
      } at ${at}`,
    );
  }
  return value;
}
