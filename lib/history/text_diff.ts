/**
 * Line diffs of text files: Myers' O(ND) algorithm (the linear-space
 * "middle snake" bisection) with a bounded cost, unified hunks with context
 * lines, and binary detection.
 *
 * - {@linkcode decodeText} says whether bytes are text: valid UTF-8 with no
 *   NUL byte in the first 8,000 bytes (git's rule, plus UTF-8), else binary.
 * - {@linkcode diffLines} computes an edit script over two line arrays. The
 *   search is bounded by `maxCost` steps: beyond it the rest of a region is
 *   reported as deleted then inserted, which is a correct edit script but not
 *   necessarily the shortest (`exact: false`). The bound is a step count, not
 *   a clock, so the same inputs always give the same diff.
 * - {@linkcode diffText} turns two texts (or byte arrays, or `null` for a
 *   missing side) into {@linkcode TextDiff}: hunks whose lines are unified
 *   diff lines (`" "`, `"-"`, `"+"` and `"\ No newline at end of file"`).
 * - {@linkcode formatUnified} prints a `TextDiff` as a unified diff that
 *   `git apply` and `patch` accept.
 *
 * Lines are split after each `"\n"`; a `"\r"` stays part of its line. Every
 * function is pure and never throws for any input.
 *
 * @example
 * ```ts
 * import { diffText, formatUnified } from "./text_diff.ts";
 * const diff = diffText("a\nb\nc\n", "a\nB\nc\n");
 * if (!(diff.added === 1 && diff.removed === 1)) throw new Error("counts");
 * const patch = formatUnified(diff, "a/x.txt", "b/x.txt");
 * if (!patch.includes("@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n")) throw new Error(patch);
 * ```
 * @module
 */

/** How many leading bytes are searched for a NUL byte (git's rule). */
export const BINARY_SNIFF_BYTES = 8000;
/** Default number of unchanged lines shown around each change. */
export const DEFAULT_CONTEXT = 3;
/** Default bound on the diff search, in steps (about 50 ms of work). */
export const DEFAULT_MAX_COST = 4_000_000;
/** The marker line unified diffs print after a last line without a newline. */
export const NO_NEWLINE = "\\ No newline at end of file";

/** One run of an edit script. */
export interface DiffOp {
  /** Lines kept, deleted from the old side, or inserted from the new side. */
  op: "equal" | "delete" | "insert";
  /** How many lines (at least 1). */
  count: number;
}

/** The result of {@linkcode diffLines}. */
export interface LineDiff {
  /** The edit script, in order; adjacent runs never share an `op`. */
  ops: DiffOp[];
  /** False when the cost bound cut the search (the script is still correct). */
  exact: boolean;
}

/** One hunk of a unified diff. Line numbers count from 1. */
export interface Hunk {
  /** First old line shown (the line before the hunk when `old_lines` is 0). */
  old_start: number;
  /** Old lines the hunk covers. */
  old_lines: number;
  /** First new line shown (the line before the hunk when `new_lines` is 0). */
  new_start: number;
  /** New lines the hunk covers. */
  new_lines: number;
  /** Unified diff lines without their newline: `" x"`, `"-x"`, `"+x"` or {@linkcode NO_NEWLINE}. */
  lines: string[];
}

/** The diff of two files. */
export interface TextDiff {
  /** Either side is binary: no hunks are computed. */
  binary: boolean;
  /** Hunks in order. */
  hunks: Hunk[];
  /** Lines inserted. */
  added: number;
  /** Lines deleted. */
  removed: number;
  /** False when the cost bound cut the search (still a correct diff, maybe not the shortest). */
  exact: boolean;
}

/** Options of {@linkcode diffText} and {@linkcode diffLines}. */
export interface TextDiffOptions {
  /** Unchanged lines around each change (default {@linkcode DEFAULT_CONTEXT}). */
  context?: number;
  /** Bound on the search, in steps (default {@linkcode DEFAULT_MAX_COST}). */
  maxCost?: number;
}

const fatalUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The text of `bytes`, or null when they are binary: a NUL byte in the first
 * {@linkcode BINARY_SNIFF_BYTES} bytes, or not valid UTF-8.
 */
export function decodeText(bytes: Uint8Array): string | null {
  const sniff = Math.min(bytes.length, BINARY_SNIFF_BYTES);
  for (let i = 0; i < sniff; i++) if (bytes[i] === 0) return null;
  try {
    return fatalUtf8.decode(bytes);
  } catch {
    return null;
  }
}

/** Whether `bytes` are binary (see {@linkcode decodeText}). */
export function isBinary(bytes: Uint8Array): boolean {
  return decodeText(bytes) === null;
}

/** Splits text into lines, each keeping its `"\n"`; the last may lack one. `""` has no lines. */
export function splitLines(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (;;) {
    const end = text.indexOf("\n", start);
    if (end === -1) break;
    lines.push(text.slice(start, end + 1));
    start = end + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** Computes an edit script turning `a` into `b` (lines compared as whole strings). */
export function diffLines(
  a: readonly string[],
  b: readonly string[],
  options: TextDiffOptions = {},
): LineDiff {
  // Lines become small integers, so the search compares numbers.
  const ids = new Map<string, number>();
  const intern = (lines: readonly string[]): Int32Array => {
    const out = new Int32Array(lines.length);
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      let id = ids.get(line);
      if (id === undefined) ids.set(line, id = ids.size);
      out[i] = id;
    }
    return out;
  };
  const search = new MyersSearch(intern(a), intern(b), options.maxCost ?? DEFAULT_MAX_COST);
  search.diff(0, a.length, 0, b.length);
  return { ops: search.ops, exact: search.exact };
}

/** Myers' bisection over interned lines, appending runs to `ops`. */
class MyersSearch {
  readonly ops: DiffOp[] = [];
  exact = true;
  #budget: number;

  constructor(private readonly a: Int32Array, private readonly b: Int32Array, maxCost: number) {
    this.#budget = Math.max(0, maxCost);
  }

  #push(op: DiffOp["op"], count: number): void {
    if (count <= 0) return;
    const last = this.ops[this.ops.length - 1];
    if (last !== undefined && last.op === op) last.count += count;
    else this.ops.push({ op, count });
  }

  /** Diffs a[aLo, aHi) against b[bLo, bHi). */
  diff(aLo: number, aHi: number, bLo: number, bHi: number): void {
    const { a, b } = this;
    let prefix = 0;
    while (aLo < aHi && bLo < bHi && a[aLo] === b[bLo]) {
      aLo++;
      bLo++;
      prefix++;
    }
    let suffix = 0;
    while (aLo < aHi && bLo < bHi && a[aHi - 1] === b[bHi - 1]) {
      aHi--;
      bHi--;
      suffix++;
    }
    this.#push("equal", prefix);
    if (aLo === aHi) this.#push("insert", bHi - bLo);
    else if (bLo === bHi) this.#push("delete", aHi - aLo);
    else {
      const split = this.#bisect(aLo, aHi, bLo, bHi);
      if (split === "disjoint" || split === "over_budget") {
        if (split === "over_budget") this.exact = false;
        this.#push("delete", aHi - aLo);
        this.#push("insert", bHi - bLo);
      } else {
        this.diff(aLo, split.x, bLo, split.y);
        this.diff(split.x, aHi, split.y, bHi);
      }
    }
    this.#push("equal", suffix);
  }

  /**
   * Finds a point on a shortest edit path through the region by walking
   * from both corners at once until the paths overlap: `"disjoint"` when the
   * two sides share no line (then deleting and inserting everything is
   * shortest), `"over_budget"` when the cost bound ran out first.
   */
  #bisect(
    aLo: number,
    aHi: number,
    bLo: number,
    bHi: number,
  ): { x: number; y: number } | "disjoint" | "over_budget" {
    const { a, b } = this;
    const n = aHi - aLo;
    const m = bHi - bLo;
    const maxD = Math.ceil((n + m) / 2);
    const offset = maxD;
    const size = 2 * maxD + 2;
    // vf[k]: furthest x reached on diagonal k from the top left;
    // vb[k]: furthest distance reached on diagonal k from the bottom right.
    const vf = new Int32Array(size).fill(-1);
    const vb = new Int32Array(size).fill(-1);
    vf[offset + 1] = 0;
    vb[offset + 1] = 0;
    const delta = n - m;
    const front = (delta & 1) !== 0;
    let kfStart = 0, kfEnd = 0, kbStart = 0, kbEnd = 0;
    for (let d = 0; d < maxD; d++) {
      for (let k = -d + kfStart; k <= d - kfEnd; k += 2) {
        if (--this.#budget < 0) return "over_budget";
        const ki = offset + k;
        let x = k === -d || (k !== d && vf[ki - 1]! < vf[ki + 1]!) ? vf[ki + 1]! : vf[ki - 1]! + 1;
        let y = x - k;
        const from = x;
        while (x < n && y < m && a[aLo + x] === b[bLo + y]) {
          x++;
          y++;
        }
        this.#budget -= x - from;
        vf[ki] = x;
        if (x > n) kfEnd += 2;
        else if (y > m) kfStart += 2;
        else if (front) {
          const kb = offset + delta - k;
          if (kb >= 0 && kb < size && vb[kb] !== -1 && x >= n - vb[kb]!) {
            return { x: aLo + x, y: bLo + y };
          }
        }
      }
      for (let k = -d + kbStart; k <= d - kbEnd; k += 2) {
        if (--this.#budget < 0) return "over_budget";
        const ki = offset + k;
        let x = k === -d || (k !== d && vb[ki - 1]! < vb[ki + 1]!) ? vb[ki + 1]! : vb[ki - 1]! + 1;
        let y = x - k;
        const from = x;
        while (x < n && y < m && a[aHi - x - 1] === b[bHi - y - 1]) {
          x++;
          y++;
        }
        this.#budget -= x - from;
        vb[ki] = x;
        if (x > n) kbEnd += 2;
        else if (y > m) kbStart += 2;
        else if (!front) {
          const kf = offset + delta - k;
          if (kf >= 0 && kf < size && vf[kf] !== -1) {
            const xf = vf[kf]!;
            const yf = xf - (kf - offset);
            if (xf >= n - x) return { x: aLo + xf, y: bLo + yf };
          }
        }
      }
    }
    return "disjoint";
  }
}

/** Computes the diff of two texts; `null` is a missing file (diffed as empty). */
export function diffText(
  oldText: string | Uint8Array | null,
  newText: string | Uint8Array | null,
  options: TextDiffOptions = {},
): TextDiff {
  const decode = (value: string | Uint8Array | null): string | null =>
    value === null ? "" : typeof value === "string" ? value : decodeText(value);
  const before = decode(oldText);
  const after = decode(newText);
  if (before === null || after === null) {
    return { binary: true, hunks: [], added: 0, removed: 0, exact: true };
  }
  const a = splitLines(before);
  const b = splitLines(after);
  const { ops, exact } = diffLines(a, b, options);
  const hunks = buildHunks(a, b, ops, Math.max(0, options.context ?? DEFAULT_CONTEXT));
  let added = 0;
  let removed = 0;
  for (const op of ops) {
    if (op.op === "insert") added += op.count;
    else if (op.op === "delete") removed += op.count;
  }
  return { binary: false, hunks, added, removed, exact };
}

interface Region {
  aStart: number;
  aEnd: number;
  bStart: number;
  bEnd: number;
}

function buildHunks(
  a: readonly string[],
  b: readonly string[],
  ops: readonly DiffOp[],
  context: number,
): Hunk[] {
  // Regions of consecutive deletes and inserts.
  const regions: Region[] = [];
  let i = 0;
  let j = 0;
  let open: Region | null = null;
  for (const { op, count } of ops) {
    if (op === "equal") {
      open = null;
      i += count;
      j += count;
      continue;
    }
    if (open === null) {
      open = { aStart: i, aEnd: i, bStart: j, bEnd: j };
      regions.push(open);
    }
    if (op === "delete") open.aEnd = i += count;
    else open.bEnd = j += count;
  }
  // Regions closer than two contexts share a hunk.
  const groups: Region[][] = [];
  for (const region of regions) {
    const group = groups[groups.length - 1];
    const last = group?.[group.length - 1];
    if (group !== undefined && last !== undefined && region.aStart - last.aEnd <= 2 * context) {
      group.push(region);
    } else groups.push([region]);
  }
  const line = (prefix: string, text: string, out: string[]): void => {
    if (text.endsWith("\n")) out.push(prefix + text.slice(0, -1));
    else out.push(prefix + text, NO_NEWLINE);
  };
  return groups.map((group) => {
    const first = group[0]!;
    const last = group[group.length - 1]!;
    const aFrom = Math.max(0, first.aStart - context);
    const aTo = Math.min(a.length, last.aEnd + context);
    const bFrom = first.bStart - (first.aStart - aFrom);
    const bTo = last.bEnd + (aTo - last.aEnd);
    const lines: string[] = [];
    let at = aFrom;
    for (const region of group) {
      for (; at < region.aStart; at++) line(" ", a[at]!, lines);
      for (let k = region.aStart; k < region.aEnd; k++) line("-", a[k]!, lines);
      for (let k = region.bStart; k < region.bEnd; k++) line("+", b[k]!, lines);
      at = region.aEnd;
    }
    for (; at < aTo; at++) line(" ", a[at]!, lines);
    const oldLines = aTo - aFrom;
    const newLines = bTo - bFrom;
    return {
      old_start: oldLines === 0 ? aFrom : aFrom + 1,
      old_lines: oldLines,
      new_start: newLines === 0 ? bFrom : bFrom + 1,
      new_lines: newLines,
      lines,
    };
  });
}

/** The `@@ -a,b +c,d @@` line of a hunk (a count of 1 is left out, as git and GNU diff do). */
export function hunkHeader(hunk: Hunk): string {
  const range = (start: number, count: number) => count === 1 ? `${start}` : `${start},${count}`;
  return `@@ -${range(hunk.old_start, hunk.old_lines)} +${
    range(hunk.new_start, hunk.new_lines)
  } @@`;
}

/**
 * Prints a diff in unified format with the given file labels (`a/x`, `b/x`,
 * or `/dev/null` for a missing side). An empty diff prints nothing; a binary
 * one prints git's `Binary files … differ` line.
 */
export function formatUnified(diff: TextDiff, oldLabel: string, newLabel: string): string {
  if (diff.binary) return `Binary files ${oldLabel} and ${newLabel} differ\n`;
  if (diff.hunks.length === 0) return "";
  const out = [`--- ${oldLabel}`, `+++ ${newLabel}`];
  for (const hunk of diff.hunks) out.push(hunkHeader(hunk), ...hunk.lines);
  return out.join("\n") + "\n";
}
