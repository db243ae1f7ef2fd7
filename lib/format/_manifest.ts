/**
 * Reading a bundle manifest (`ctxsnap-bundle.json`) with bounded memory.
 *
 * The manifest MUST be canonical JSON, so a valid one has exactly one byte
 * layout: `{"blobs":[{"id":"<hex>","size":<n>},…],"format":"ctxsnap.bundle/v1",
 * "primary":"<hex>","snapshots":["<hex>",…],"trees":["<hex>",…],"workspace":<bool>}`.
 * {@linkcode ManifestScanner} checks the bytes against that layout as they
 * stream in, chunk by chunk, and keeps only what the reader needs: tree and
 * blob ids packed as 32 bytes each in sorted tables ({@linkcode IdTable}),
 * blob sizes in a `Float64Array`, and the (at most 100,000) snapshot ids. It
 * never builds the JSON value, so a 64 MiB manifest listing 760,000 blobs
 * costs about 30 MiB instead of about 1 GiB.
 *
 * Anything that is not exactly that layout is refused: whitespace, another
 * key order, escapes, unsorted or repeated ids, more ids than the limits,
 * an unsafe size, a `primary` other than the last snapshot, trees or blobs
 * with `workspace: false`. Private to the share layer.
 *
 * @example
 * ```ts
 * import { ManifestScanner } from "./_manifest.ts";
 * const id = "a".repeat(64);
 * const text = `{"blobs":[],"format":"ctxsnap.bundle/v1","primary":"${id}",` +
 *   `"snapshots":["${id}"],"trees":[],"workspace":false}`;
 * const scanner = new ManifestScanner();
 * scanner.push(new TextEncoder().encode(text));
 * const manifest = scanner.finish();
 * if (manifest.primary !== id || manifest.blobs.count !== 0) throw new Error("misread");
 * ```
 * @module
 */
import { quote } from "../errors.ts";
import { BundleFormatError } from "./tar.ts";

/** The bundle format tag (also in bundle.ts). */
const FORMAT = "ctxsnap.bundle/v1";
/** Most snapshots one bundle may hold. */
export const MAX_MANIFEST_SNAPSHOTS = 100_000;
/** Most trees one bundle may hold. */
export const MAX_MANIFEST_TREES = 10_000_000;
/** Longest string token accepted (ids are 64, the format tag 17). */
const MAX_STRING = 128;

const HEX_VALUE = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) HEX_VALUE[0x30 + i] = i;
for (let i = 0; i < 6; i++) HEX_VALUE[0x61 + i] = 10 + i;

/** A growing table of 32-byte ids, appended in strictly increasing order. */
export class IdTable {
  #bytes = new Uint8Array(32 * 256);
  /** Number of ids. */
  count = 0;

  /** Appends `id` (32 bytes); returns false when it is not greater than the last id. */
  append(id: Uint8Array): boolean {
    if (this.count > 0 && compare(id, 0, this.#bytes, (this.count - 1) * 32) <= 0) return false;
    if ((this.count + 1) * 32 > this.#bytes.length) {
      const grown = new Uint8Array(this.#bytes.length * 2);
      grown.set(this.#bytes);
      this.#bytes = grown;
    }
    this.#bytes.set(id, this.count * 32);
    this.count++;
    return true;
  }

  /** The index of the id `hex` (64 lowercase hex), or -1. */
  indexOf(hex: string): number {
    const id = new Uint8Array(32);
    if (hex.length !== 64 || !decodeHex(hex, id)) return -1;
    let lo = 0;
    let hi = this.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = compare(this.#bytes, mid * 32, id, 0);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** The id at `index` as 64 lowercase hex. */
  hexAt(index: number): string {
    let text = "";
    for (let i = index * 32; i < index * 32 + 32; i++) {
      text += this.#bytes[i]!.toString(16).padStart(2, "0");
    }
    return text;
  }
}

function compare(a: Uint8Array, at: number, b: Uint8Array, bt: number): number {
  for (let i = 0; i < 32; i++) {
    const d = a[at + i]! - b[bt + i]!;
    if (d !== 0) return d;
  }
  return 0;
}

function decodeHex(hex: string, out: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) {
    const hi = HEX_VALUE[hex.charCodeAt(2 * i) & 0xff]!;
    const lo = HEX_VALUE[hex.charCodeAt(2 * i + 1) & 0xff]!;
    if (hi < 0 || lo < 0 || hex.charCodeAt(2 * i) > 0xff || hex.charCodeAt(2 * i + 1) > 0xff) {
      return false;
    }
    out[i] = (hi << 4) | lo;
  }
  return true;
}

/** What {@linkcode ManifestScanner.finish} returns. */
export interface PackedManifest {
  /** The primary snapshot id (the last of `snapshots`). */
  primary: string;
  /** Snapshot ids in manifest order (oldest first). */
  snapshots: string[];
  /** Whether trees and blobs are included. */
  workspace: boolean;
  /** Tree ids, sorted. */
  trees: IdTable;
  /** Blob ids, sorted. */
  blobs: IdTable;
  /** Blob sizes, by index in `blobs`. */
  blobSizes: Float64Array;
}

// Token kinds.
const PUNCT = 0;
const STRING = 1;
const INT = 2;
const BOOL = 3;

// Instructions of the layout program.
type Step =
  | { op: "punct"; char: number }
  | { op: "key"; name: string }
  | { op: "branch"; cases: Record<number, number> }
  | { op: "blob_id" }
  | { op: "blob_size" }
  | { op: "format" }
  | { op: "primary" }
  | { op: "snapshot" }
  | { op: "tree" }
  | { op: "workspace" }
  | { op: "end" };

const ch = (c: string) => c.charCodeAt(0);
const P = (c: string): Step => ({ op: "punct", char: ch(c) });
const K = (name: string): Step => ({ op: "key", name });

/** The canonical layout as a little program; `branch` jumps, every other step falls through. */
const PROGRAM: Step[] = [];
const label = () => PROGRAM.length;
{
  PROGRAM.push(P("{"), K("blobs"), P(":"), P("["));
  const blobsFirst = label();
  PROGRAM.push({ op: "branch", cases: {} }); // "]" → after blobs, "{" → record
  const record = label();
  PROGRAM.push(K("id"), P(":"), { op: "blob_id" }, P(","), K("size"), P(":"), {
    op: "blob_size",
  }, P("}"));
  const blobsNext = label();
  PROGRAM.push({ op: "branch", cases: {} }); // "," → "{" record, "]" → after blobs
  const recordOpen = label();
  PROGRAM.push({ op: "branch", cases: { [ch("{")]: record } });
  const afterBlobs = label();
  PROGRAM.push(P(","), K("format"), P(":"), { op: "format" });
  PROGRAM.push(P(","), K("primary"), P(":"), { op: "primary" });
  PROGRAM.push(P(","), K("snapshots"), P(":"), P("["));
  const snapshot = label();
  PROGRAM.push({ op: "snapshot" });
  const snapshotsNext = label();
  PROGRAM.push({ op: "branch", cases: {} }); // "," → snapshot, "]" → trees
  const afterSnapshots = label();
  PROGRAM.push(P(","), K("trees"), P(":"), P("["));
  const treesFirst = label();
  PROGRAM.push({ op: "branch", cases: {} }); // "]" → workspace, string → tree
  const tree = label();
  PROGRAM.push({ op: "tree" });
  const treesNext = label();
  PROGRAM.push({ op: "branch", cases: {} }); // "," → tree, "]" → workspace
  const afterTrees = label();
  PROGRAM.push(P(","), K("workspace"), P(":"), { op: "workspace" }, P("}"), { op: "end" });
  const set = (at: number, cases: Record<number, number>) =>
    (PROGRAM[at] as { cases: Record<number, number> }).cases = cases;
  set(blobsFirst, { [ch("]")]: afterBlobs, [ch("{")]: record });
  set(blobsNext, { [ch(",")]: recordOpen, [ch("]")]: afterBlobs });
  set(snapshotsNext, { [ch(",")]: snapshot, [ch("]")]: afterSnapshots });
  // A string token in a branch is dispatched under the key -1, then read by the target step.
  set(treesFirst, { [ch("]")]: afterTrees, [-1]: tree });
  set(treesNext, { [ch(",")]: tree, [ch("]")]: afterTrees });
}

function describeStep(step: Step): string {
  switch (step.op) {
    case "punct":
      return quote(String.fromCharCode(step.char));
    case "key":
      return `the key ${quote(step.name)}`;
    case "branch":
      return Object.keys(step.cases).map((c) =>
        c === "-1" ? "an id" : quote(String.fromCharCode(Number(c)))
      ).join(" or ");
    case "blob_id":
    case "primary":
    case "snapshot":
    case "tree":
      return "a 64-hex id";
    case "blob_size":
      return "a size";
    case "format":
      return "the format tag";
    case "workspace":
      return "true or false";
    case "end":
      return "the end of the manifest";
  }
}

/**
 * Checks a manifest's bytes against the canonical v1 layout as they arrive
 * ({@linkcode push}), then {@linkcode finish} returns the packed manifest.
 * Every refusal is a {@linkcode BundleFormatError} naming the byte offset.
 */
export class ManifestScanner {
  #offset = 0;
  #pc = 0;
  // Lexer state for a token that spans chunks.
  #inString = false;
  #string = new Uint8Array(MAX_STRING);
  #stringLength = 0;
  #inInt = false;
  #intValue = 0;
  #intDigits = 0;
  #intZero = false;
  #word = "";
  #tokenStart = 0;
  // What is kept.
  #id = new Uint8Array(32);
  #trees = new IdTable();
  #blobs = new IdTable();
  #sizes = new Float64Array(256);
  #snapshots: string[] = [];
  #snapshotSet = new Set<string>();
  #primary = "";
  #workspace: boolean | null = null;

  #fail(message: string, at: number = this.#tokenStart): never {
    throw new BundleFormatError(`Invalid bundle: manifest ${message} (at byte ${at})`, {
      hint: "the manifest must be the canonical ctxsnap.bundle/v1 manifest; a bundle written by " +
        "a newer ctxsnap needs a newer ctxsnap",
    });
  }

  #unexpected(found: string): never {
    this.#fail(`has ${found} where ${describeStep(PROGRAM[this.#pc]!)} was expected`);
  }

  /** Feeds the next bytes of the manifest. */
  push(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      const at = this.#offset + i;
      if (this.#inString) {
        if (b === 0x22) {
          this.#inString = false;
          this.#token(STRING, 0);
        } else if (b === 0x5c || b < 0x20) {
          this.#fail("has an escape or a control character in a string", at);
        } else if (this.#stringLength === MAX_STRING) {
          this.#fail(`has a string longer than ${MAX_STRING} bytes`);
        } else this.#string[this.#stringLength++] = b;
        continue;
      }
      if (this.#inInt) {
        if (b >= 0x30 && b <= 0x39) {
          if (this.#intZero) this.#fail("has a number with a leading zero");
          if (++this.#intDigits > 16) this.#fail("has a number outside the safe integer range");
          this.#intValue = this.#intValue * 10 + (b - 0x30);
          continue;
        }
        this.#inInt = false;
        this.#token(INT, 0);
      } else if (this.#word !== "") {
        if (b >= 0x61 && b <= 0x7a && this.#word.length < 5) {
          this.#word += String.fromCharCode(b);
          if (this.#word === "true" || this.#word === "false") {
            const value = this.#word === "true" ? 1 : 0;
            this.#word = "";
            this.#token(BOOL, value);
          }
          continue;
        }
        this.#fail(`has the word ${quote(this.#word)}`);
      }
      this.#tokenStart = at;
      if (b === 0x22) {
        this.#inString = true;
        this.#stringLength = 0;
      } else if (b >= 0x30 && b <= 0x39) {
        this.#inInt = true;
        this.#intValue = b - 0x30;
        this.#intDigits = 1;
        this.#intZero = b === 0x30;
      } else if (b === 0x74 || b === 0x66) {
        this.#word = String.fromCharCode(b);
      } else if (
        b === 0x7b || b === 0x7d || b === 0x5b || b === 0x5d || b === 0x2c || b === 0x3a
      ) {
        this.#token(PUNCT, b);
      } else {
        this.#fail(
          `has ${
            b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09
              ? "whitespace (it is not canonical)"
              : `the byte 0x${b.toString(16).padStart(2, "0")}`
          }`,
          at,
        );
      }
    }
    this.#offset += chunk.length;
  }

  #stringText(): string {
    let text = "";
    for (let i = 0; i < this.#stringLength; i++) text += String.fromCharCode(this.#string[i]!);
    return text;
  }

  /** Reads the current string token as a 64-hex id into `#id`; returns its text. */
  #idToken(what: string): string {
    const text = this.#stringText();
    if (text.length !== 64 || !decodeHex(text, this.#id)) {
      this.#fail(`lists ${quote(text)} in ${what}, not a 64-hex id`);
    }
    return text;
  }

  #token(kind: number, value: number): void {
    const step = PROGRAM[this.#pc]!;
    if (step.op === "branch") {
      const target = step.cases[kind === PUNCT ? value : kind === STRING ? -1 : -2];
      if (target === undefined) this.#unexpected(this.#describeToken(kind, value));
      this.#pc = target;
      if (kind === PUNCT) return;
      this.#token(kind, value); // a string that starts the branch target
      return;
    }
    const want = step.op === "punct"
      ? PUNCT
      : step.op === "blob_size"
      ? INT
      : step.op === "workspace"
      ? BOOL
      : step.op === "end"
      ? -1
      : STRING;
    if (kind !== want || (step.op === "punct" && value !== step.char)) {
      this.#unexpected(this.#describeToken(kind, value));
    }
    switch (step.op) {
      case "key":
        if (this.#stringText() !== step.name) {
          this.#unexpected(`the key ${quote(this.#stringText())}`);
        }
        break;
      case "blob_id": {
        const text = this.#idToken("blobs");
        if (!this.#blobs.append(this.#id)) {
          this.#fail(`blobs are not sorted by id without repeats at ${quote(text)}`);
        }
        break;
      }
      case "blob_size": {
        if (this.#intValue > Number.MAX_SAFE_INTEGER) {
          this.#fail("has a blob size outside the safe integer range");
        }
        const index = this.#blobs.count - 1;
        if (index >= this.#sizes.length) {
          const grown = new Float64Array(this.#sizes.length * 2);
          grown.set(this.#sizes);
          this.#sizes = grown;
        }
        this.#sizes[index] = this.#intValue;
        break;
      }
      case "format": {
        const text = this.#stringText();
        if (text !== FORMAT) {
          throw new BundleFormatError(`Unsupported bundle format ${quote(text)}`, {
            hint: `this ctxsnap reads ${FORMAT}; upgrade ctxsnap`,
          });
        }
        break;
      }
      case "primary":
        this.#primary = this.#idToken("primary");
        break;
      case "snapshot": {
        const text = this.#idToken("snapshots");
        if (this.#snapshotSet.has(text)) this.#fail(`repeats snapshot ${quote(text)}`);
        if (this.#snapshots.length === MAX_MANIFEST_SNAPSHOTS) {
          this.#fail(`lists more than ${MAX_MANIFEST_SNAPSHOTS} snapshots`);
        }
        this.#snapshotSet.add(text);
        this.#snapshots.push(text);
        break;
      }
      case "tree": {
        const text = this.#idToken("trees");
        if (this.#trees.count === MAX_MANIFEST_TREES) {
          this.#fail(`lists more than ${MAX_MANIFEST_TREES} trees`);
        }
        if (!this.#trees.append(this.#id)) {
          this.#fail(`trees are not sorted without repeats at ${quote(text)}`);
        }
        break;
      }
      case "workspace":
        this.#workspace = value === 1;
        break;
    }
    this.#pc++;
  }

  #describeToken(kind: number, value: number): string {
    if (kind === PUNCT) return quote(String.fromCharCode(value));
    if (kind === STRING) return `the string ${quote(this.#stringText())}`;
    if (kind === INT) return `the number ${this.#intValue}`;
    return value === 1 ? "true" : "false";
  }

  /** Ends the input; returns the manifest or throws. */
  finish(): PackedManifest {
    if (this.#inInt) {
      this.#inInt = false;
      this.#token(INT, 0);
    }
    if (PROGRAM[this.#pc]!.op !== "end" || this.#inString || this.#word !== "") {
      this.#fail(`ends where ${describeStep(PROGRAM[this.#pc]!)} was expected`, this.#offset);
    }
    const last = this.#snapshots[this.#snapshots.length - 1];
    if (last === undefined || last !== this.#primary) {
      this.#fail("names a primary that is not the last listed snapshot", this.#offset);
    }
    if (this.#workspace === false && (this.#trees.count > 0 || this.#blobs.count > 0)) {
      this.#fail("lists trees or blobs while workspace is false", this.#offset);
    }
    return {
      primary: this.#primary,
      snapshots: this.#snapshots,
      workspace: this.#workspace === true,
      trees: this.#trees,
      blobs: this.#blobs,
      blobSizes: this.#sizes,
    };
  }
}
