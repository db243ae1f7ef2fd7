/**
 * JSON the way lean-ctx's files need it: a strict reader that keeps every
 * number literal exactly as written (ctxsnap's canonical reader refuses
 * floats by design), and serde_json-compatible writers (`to_string` and
 * `to_string_pretty`) over values whose member order is explicit.
 *
 * The reader accepts the RFC 8259 grammar with SP, TAB, LF and CR as
 * whitespace and refuses: input over the size limit (checked before
 * decoding), invalid UTF-8, a byte order mark, nesting over the depth limit,
 * a duplicate key, a lone surrogate escape, unescaped control characters,
 * invalid escapes, leading zeros, trailing commas, trailing content and
 * number literals longer than {@linkcode MAX_NUMBER_LITERAL} characters.
 * Every refusal is an `IntegrityError` (exit 1).
 *
 * @example
 * ```ts
 * import { compactJson, F64, Fields, NumberLiteral, parseRawJson, prettyJson, RawObject, U64 } from "./_leanctx_json.ts";
 * const raw = parseRawJson(new TextEncoder().encode('{"rate": 0.0, "n": 7}'));
 * if (!(raw instanceof RawObject)) throw new Error("not an object");
 * const rate = raw.members.get("rate");
 * if (!(rate instanceof NumberLiteral && rate.text === "0.0")) throw new Error("literal lost");
 * const value = new Fields([["n", new U64(7n)], ["rate", new F64(0)]]);
 * if (compactJson(value) !== '{"n":7,"rate":0.0}') throw new Error(compactJson(value));
 * if (prettyJson(value) !== '{\n  "n": 7,\n  "rate": 0.0\n}') throw new Error(prettyJson(value));
 * ```
 * @module
 */
import { IntegrityError, quote } from "../errors.ts";
import { formatF64 } from "../format/serde_f64.ts";

/** Longest number literal the reader accepts, in characters. */
export const MAX_NUMBER_LITERAL = 1024;

/** A JSON number exactly as written in the input. */
export class NumberLiteral {
  /** Creates a literal (already checked against the JSON number grammar). */
  constructor(
    /** The literal text, e.g. `0.0`, `1e-6`, `9007199254740991`. */
    readonly text: string,
    /** Whether it has neither a fraction nor an exponent. */
    readonly isInteger: boolean,
  ) {}
}

/** A JSON object, members in input order. */
export class RawObject {
  /** Members by key (keys are unique: duplicates are refused). */
  readonly members: Map<string, RawJson> = new Map();
}

/** A parsed JSON value that keeps number literals. */
export type RawJson = null | boolean | string | NumberLiteral | RawObject | RawJson[];

function fail(message: string): never {
  throw new IntegrityError(message);
}

const SIMPLE_ESCAPES: ReadonlyMap<string, string> = new Map([
  ['"', '"'],
  ["\\", "\\"],
  ["/", "/"],
  ["b", "\b"],
  ["f", "\f"],
  ["n", "\n"],
  ["r", "\r"],
  ["t", "\t"],
]);

const DECODER = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

class Reader {
  #pos = 0;
  #depth = 0;

  constructor(readonly text: string, readonly maxDepth: number) {}

  #fail(message: string): never {
    fail(`${message} at character ${this.#pos}`);
  }

  parse(): RawJson {
    this.#ws();
    const value = this.#value();
    this.#ws();
    if (this.#pos < this.text.length) this.#fail("Unexpected content after the JSON value");
    return value;
  }

  #ws(): void {
    const t = this.text;
    for (;;) {
      const c = t.charCodeAt(this.#pos);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.#pos++;
      else return;
    }
  }

  #value(): RawJson {
    const c = this.text.charCodeAt(this.#pos);
    if (c === 0x7b) return this.#object();
    if (c === 0x5b) return this.#array();
    if (c === 0x22) return this.#string();
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.#number();
    for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.text.startsWith(word, this.#pos)) {
        this.#pos += word.length;
        return value;
      }
    }
    if (Number.isNaN(c)) this.#fail("Unexpected end of input");
    this.#fail(
      `Unexpected character ${quote(String.fromCodePoint(this.text.codePointAt(this.#pos)!))}`,
    );
  }

  #enter(): void {
    if (++this.#depth > this.maxDepth) {
      this.#fail(`Nesting is deeper than the limit of ${this.maxDepth} levels`);
    }
    this.#pos++;
    this.#ws();
  }

  #object(): RawObject {
    this.#enter();
    const out = new RawObject();
    if (this.text.charCodeAt(this.#pos) === 0x7d) {
      this.#pos++;
      this.#depth--;
      return out;
    }
    for (;;) {
      if (this.text.charCodeAt(this.#pos) !== 0x22) this.#fail("Expected a string key");
      const at = this.#pos;
      const key = this.#string();
      if (out.members.has(key)) {
        this.#pos = at;
        this.#fail(`Duplicate key ${quote(key)}`);
      }
      this.#ws();
      if (this.text.charCodeAt(this.#pos) !== 0x3a) this.#fail('Expected ":"');
      this.#pos++;
      this.#ws();
      out.members.set(key, this.#value());
      this.#ws();
      const c = this.text.charCodeAt(this.#pos);
      this.#pos++;
      if (c === 0x7d) break;
      if (c !== 0x2c) {
        this.#pos--;
        this.#fail('Expected "," or "}"');
      }
      this.#ws();
    }
    this.#depth--;
    return out;
  }

  #array(): RawJson[] {
    this.#enter();
    const out: RawJson[] = [];
    if (this.text.charCodeAt(this.#pos) === 0x5d) {
      this.#pos++;
      this.#depth--;
      return out;
    }
    for (;;) {
      out.push(this.#value());
      this.#ws();
      const c = this.text.charCodeAt(this.#pos);
      this.#pos++;
      if (c === 0x5d) break;
      if (c !== 0x2c) {
        this.#pos--;
        this.#fail('Expected "," or "]"');
      }
      this.#ws();
    }
    this.#depth--;
    return out;
  }

  #string(): string {
    const t = this.text;
    let pos = this.#pos + 1;
    let out = "";
    let chunk = pos;
    for (;;) {
      const c = t.charCodeAt(pos);
      if (Number.isNaN(c)) this.#fail("Unterminated string");
      if (c === 0x22) break;
      if (c < 0x20) {
        this.#pos = pos;
        this.#fail("Unescaped control character in a string");
      }
      if (c !== 0x5c) {
        pos++;
        continue;
      }
      out += t.slice(chunk, pos);
      const e = t[pos + 1];
      const simple = e === undefined ? undefined : SIMPLE_ESCAPES.get(e);
      if (simple !== undefined) {
        out += simple;
        pos += 2;
      } else if (e === "u") {
        const hex = t.slice(pos + 2, pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
          this.#pos = pos;
          this.#fail("Invalid \\u escape");
        }
        out += String.fromCharCode(parseInt(hex, 16));
        pos += 6;
      } else {
        this.#pos = pos;
        this.#fail("Invalid escape in a string");
      }
      chunk = pos;
    }
    out += t.slice(chunk, pos);
    // The decoded input has no lone surrogates, so any here came from escapes.
    if (!out.isWellFormed()) this.#fail("A string escapes a lone surrogate");
    this.#pos = pos + 1;
    return out;
  }

  #number(): NumberLiteral {
    const match = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/.exec(
      this.text.slice(this.#pos, this.#pos + MAX_NUMBER_LITERAL + 1),
    );
    if (match === null) this.#fail("Invalid number");
    const literal = match[0];
    if (literal.length > MAX_NUMBER_LITERAL) {
      this.#fail(`A number literal is longer than ${MAX_NUMBER_LITERAL} characters`);
    }
    const next = this.text.charCodeAt(this.#pos + literal.length);
    if ((next >= 0x30 && next <= 0x39) || next === 0x2e || next === 0x65 || next === 0x45) {
      this.#fail(`Invalid number ${quote(literal)}`);
    }
    this.#pos += literal.length;
    return new NumberLiteral(literal, match[2] === undefined && match[3] === undefined);
  }
}

/**
 * Parses strict JSON bytes, keeping number literals as written.
 *
 * @param bytes The UTF-8 input.
 * @param options `maxBytes` (checked before decoding) and `maxDepth` (a top-level object is depth 1).
 * @throws {IntegrityError} On anything the module doc lists.
 */
export function parseRawJson(
  bytes: Uint8Array,
  options: { maxBytes?: number; maxDepth?: number } = {},
): RawJson {
  return parseRawDocument(bytes, options).value;
}

/** Like {@linkcode parseRawJson}, also returning the decoded text. */
export function parseRawDocument(
  bytes: Uint8Array,
  options: { maxBytes?: number; maxDepth?: number } = {},
): { value: RawJson; text: string } {
  const maxBytes = options.maxBytes ?? 4 * 1024 * 1024;
  if (bytes.length > maxBytes) fail(`The file is larger than ${maxBytes} bytes`);
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    fail("The file starts with a byte order mark");
  }
  let text: string;
  try {
    text = DECODER.decode(bytes);
  } catch {
    fail("The file is not valid UTF-8");
  }
  return { value: new Reader(text, options.maxDepth ?? 64).parse(), text };
}

// ---------------------------------------------------------------------------
// Writers

/** An unsigned integer to write in plain decimal. */
export class U64 {
  /** Wraps `value` (0 … 2^64 − 1). */
  constructor(readonly value: bigint) {}
}

/** A double to write as serde_json does. */
export class F64 {
  /** Wraps a finite `value`. */
  constructor(readonly value: number) {}
}

/** An object whose members are written in the given order. */
export class Fields {
  /** Wraps `[key, value]` pairs. */
  constructor(readonly list: readonly (readonly [string, Ordered])[]) {}
}

/** A value for the serde_json-compatible writers. */
export type Ordered = null | boolean | string | U64 | F64 | Fields | Ordered[];

// deno-lint-ignore no-control-regex
const SERDE_ESCAPED = /["\\\u0000-\u001f]/g;

/**
 * A JSON string as serde_json writes it: `"` and `\` escaped, `\b \f \n \r \t`,
 * other U+0000–U+001F as `\u00xx` (lowercase), everything else raw UTF-8.
 */
export function serdeString(text: string): string {
  return `"${
    text.replace(SERDE_ESCAPED, (c) => {
      switch (c) {
        case '"':
          return '\\"';
        case "\\":
          return "\\\\";
        case "\b":
          return "\\b";
        case "\f":
          return "\\f";
        case "\n":
          return "\\n";
        case "\r":
          return "\\r";
        case "\t":
          return "\\t";
        default:
          return "\\u00" + c.charCodeAt(0).toString(16).padStart(2, "0");
      }
    })
  }"`;
}

function scalar(value: Ordered): string | null {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "string") return serdeString(value);
  if (value instanceof U64) return value.value.toString();
  if (value instanceof F64) return formatF64(value.value);
  return null;
}

/** `serde_json::to_string`: no whitespace, members in the given order. */
export function compactJson(value: Ordered): string {
  const s = scalar(value);
  if (s !== null) return s;
  if (Array.isArray(value)) return `[${value.map(compactJson).join(",")}]`;
  const fields = value as Fields;
  return `{${fields.list.map(([k, v]) => `${serdeString(k)}:${compactJson(v)}`).join(",")}}`;
}

/** `serde_json::to_string_pretty`: two-space indent, `"key": value`, `[]`/`{}` when empty, no final newline. */
export function prettyJson(value: Ordered, indent = ""): string {
  const s = scalar(value);
  if (s !== null) return s;
  const inner = indent + "  ";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((v) => inner + prettyJson(v, inner)).join(",\n")}\n${indent}]`;
  }
  const fields = value as Fields;
  if (fields.list.length === 0) return "{}";
  return `{\n${
    fields.list.map(([k, v]) => `${inner}${serdeString(k)}: ${prettyJson(v, inner)}`).join(",\n")
  }\n${indent}}`;
}
