/**
 * The text-diff module: edit scripts are correct and shortest (checked
 * against a dynamic-programming LCS), hunks re-create the new text, the
 * unified output is accepted by `git apply`, the cost bound holds, and
 * binary input is recognized.
 * @module
 */
import fc from "fast-check";
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import {
  decodeText,
  diffLines,
  diffText,
  formatUnified,
  type Hunk,
  hunkHeader,
  isBinary,
  NO_NEWLINE,
  splitLines,
  type TextDiff,
} from "../../lib/history/text_diff.ts";

/** Length of the longest common subsequence (quadratic; for small inputs). */
function lcsLength(a: readonly string[], b: readonly string[]): number {
  let prev = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1).fill(0);
    for (let j = 1; j <= b.length; j++) {
      row[j] = a[i - 1] === b[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, row[j - 1]!);
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** Replays an edit script on `a`, checking that equal runs really are equal. */
function applyOps(
  a: readonly string[],
  b: readonly string[],
  ops: { op: string; count: number }[],
): string[] {
  const out: string[] = [];
  let i = 0;
  let j = 0;
  for (const { op, count } of ops) {
    assert(count > 0, "runs are never empty");
    if (op === "equal") {
      for (let k = 0; k < count; k++) {
        assertEquals(a[i + k], b[j + k], "an equal run pairs equal lines");
        out.push(a[i + k]!);
      }
      i += count;
      j += count;
    } else if (op === "delete") i += count;
    else {
      out.push(...b.slice(j, j + count));
      j += count;
    }
  }
  assertEquals(i, a.length, "the script consumes all of a");
  return out;
}

/** Applies hunks to `oldText` strictly (context and deleted lines must match). */
function applyHunks(oldText: string, hunks: Hunk[]): string {
  const a = splitLines(oldText);
  const out: string[] = [];
  let at = 0;
  for (const hunk of hunks) {
    const start = hunk.old_lines === 0 ? hunk.old_start : hunk.old_start - 1;
    assert(start >= at, "hunks are in order and do not overlap");
    out.push(...a.slice(at, start));
    at = start;
    let olds = 0;
    let news = 0;
    for (let k = 0; k < hunk.lines.length; k++) {
      const line = hunk.lines[k]!;
      if (line === NO_NEWLINE) continue;
      const last = hunk.lines[k + 1] !== NO_NEWLINE;
      const text = line.slice(1) + (last ? "\n" : "");
      if (line[0] === " " || line[0] === "-") {
        assertEquals(a[at], text, `old line ${at + 1} matches the hunk`);
        at++;
        olds++;
      }
      if (line[0] === " " || line[0] === "+") {
        out.push(text);
        news++;
      }
    }
    assertEquals(olds, hunk.old_lines, "old_lines counts the old lines");
    assertEquals(news, hunk.new_lines, "new_lines counts the new lines");
  }
  out.push(...a.slice(at));
  return out.join("");
}

/** Random texts over a small alphabet of lines, with or without a final newline. */
const textArb = fc.tuple(
  fc.array(fc.constantFrom("a", "b", "c", "d", "", "a b", "x\r"), { maxLength: 30 }),
  fc.boolean(),
).map(([lines, newline]) => lines.length === 0 ? "" : lines.join("\n") + (newline ? "\n" : ""));

Deno.test("diffLines finds a correct and shortest edit script (checked against LCS)", () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom("a", "b", "c", "d"), { maxLength: 40 }),
      fc.array(fc.constantFrom("a", "b", "c", "d"), { maxLength: 40 }),
      (a, b) => {
        const { ops, exact } = diffLines(a, b);
        assert(exact, "small inputs never hit the cost bound");
        assertEquals(applyOps(a, b, ops), b);
        const edits = ops.filter((o) => o.op !== "equal").reduce((n, o) => n + o.count, 0);
        assertEquals(edits, a.length + b.length - 2 * lcsLength(a, b), "the script is shortest");
        for (let k = 1; k < ops.length; k++) assert(ops[k]!.op !== ops[k - 1]!.op);
      },
    ),
    { numRuns: 400 },
  );
});

Deno.test("diffText hunks turn the old text into the new one for every context width", () => {
  fc.assert(
    fc.property(textArb, textArb, fc.integer({ min: 0, max: 4 }), (before, after, context) => {
      const diff = diffText(before, after, { context });
      assertEquals(applyHunks(before, diff.hunks), after);
      assertEquals(diff.hunks.length === 0, before === after, "no hunks exactly when equal");
      const plus = diff.hunks.flatMap((h) => h.lines).filter((l) => l[0] === "+").length;
      const minus = diff.hunks.flatMap((h) => h.lines).filter((l) => l[0] === "-").length;
      assertEquals([plus, minus], [diff.added, diff.removed]);
    }),
    { numRuns: 400 },
  );
});

Deno.test("formatUnified output is accepted by git apply and recreates the new file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-text-diff-" });
  try {
    const samples = fc.sample(fc.tuple(textArb, textArb), { numRuns: 40, seed: 18 });
    samples.push(["", "one\n"], ["one\n", ""], ["no newline", "no newline\n"], ["x\n", "x"]);
    let applied = 0;
    for (const [index, [before, after]] of samples.entries()) {
      const name = `f${index}.txt`;
      const file = join(dir, name);
      const diff = diffText(before === "" ? null : before, after === "" ? null : after);
      if (diff.hunks.length === 0) continue;
      const oldLabel = before === "" ? "/dev/null" : `a/${name}`;
      const newLabel = after === "" ? "/dev/null" : `b/${name}`;
      if (before !== "") await Deno.writeTextFile(file, before);
      const patch = join(dir, `${name}.patch`);
      await Deno.writeTextFile(patch, formatUnified(diff, oldLabel, newLabel));
      const git = await new Deno.Command("git", {
        args: ["apply", patch],
        cwd: dir,
        stderr: "piped",
      })
        .output();
      assertEquals(git.code, 0, `git apply ${name}: ${new TextDecoder().decode(git.stderr)}`);
      if (after === "") {
        assert(!(await Deno.stat(file).then(() => true, () => false)), `${name} was deleted`);
      } else assertEquals(await Deno.readTextFile(file), after, `${name} after git apply`);
      applied++;
    }
    assert(applied >= 30, `git applied ${applied} patches`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hunks merge when their contexts touch and stay apart otherwise", () => {
  const before = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
  const near = before.replace("line 3\n", "LINE 3\n").replace("line 9\n", "LINE 9\n");
  assertEquals(diffText(before, near).hunks.length, 1, "5 unchanged lines apart: one hunk");
  const touching = before.replace("line 3\n", "LINE 3\n").replace("line 10\n", "LINE 10\n");
  assertEquals(diffText(before, touching).hunks.length, 1, "6 apart: contexts touch (as git)");
  const far = before.replace("line 3\n", "LINE 3\n").replace("line 11\n", "LINE 11\n");
  const hunks = diffText(before, far).hunks;
  assertEquals(hunks.map(hunkHeader), ["@@ -1,6 +1,6 @@", "@@ -8,7 +8,7 @@"]);
});

Deno.test("hunkHeader leaves out a count of 1 and gives the line before an empty range", () => {
  assertEquals(hunkHeader(diffText("a\n", "b\n").hunks[0]!), "@@ -1 +1 @@");
  assertEquals(hunkHeader(diffText(null, "a\nb\n").hunks[0]!), "@@ -0,0 +1,2 @@");
  assertEquals(
    hunkHeader(diffText("a\nb\n", "a\nb\nc\n", { context: 0 }).hunks[0]!),
    "@@ -2,0 +3 @@",
  );
});

Deno.test("a missing final newline gets the marker line on the side that lacks it", () => {
  const diff = diffText("a\nb", "a\nb\n");
  assertEquals(diff.hunks[0]!.lines, [" a", "-b", NO_NEWLINE, "+b"]);
  assertEquals(diffText("same", "same").hunks, []);
});

Deno.test("the cost bound gives a correct, inexact diff, the same every run", () => {
  const a = Array.from({ length: 3000 }, (_, i) => `a${(i * 7919) % 3000}\n`);
  const b = Array.from(
    { length: 3000 },
    (_, i) => (i % 3 === 0 ? `a${(i * 7919) % 3000}\n` : `b${i}\n`),
  );
  const bounded = diffLines(a, b, { maxCost: 10_000 });
  assert(!bounded.exact, "the bound was hit");
  assertEquals(applyOps(a, b, bounded.ops), b);
  assertEquals(diffLines(a, b, { maxCost: 10_000 }).ops, bounded.ops, "deterministic");
  const full = diffLines(a, b, { maxCost: 100_000_000 });
  assert(full.exact, "a higher bound is enough here");
  const edits = (d: typeof full) =>
    d.ops.filter((o) => o.op !== "equal").reduce((n, o) => n + o.count, 0);
  assert(edits(full) <= edits(bounded), "the exact diff is never longer");
  const text = diffText(a.join(""), b.join(""), { maxCost: 10_000 });
  assert(!text.exact);
  assertEquals(applyHunks(a.join(""), text.hunks), b.join(""));
});

Deno.test("a large, wholly different input stays within the cost bound", () => {
  const a = Array.from({ length: 50_000 }, (_, i) => `old ${i}\n`).join("");
  const b = Array.from({ length: 50_000 }, (_, i) => `new ${i}\n`).join("");
  const diff = diffText(a, b, { maxCost: 100_000 });
  assertEquals([diff.removed, diff.added], [50_000, 50_000]);
  assertEquals(diff.hunks.length, 1);
});

Deno.test("binary detection: a NUL in the first 8000 bytes or invalid UTF-8", () => {
  const enc = new TextEncoder();
  assert(!isBinary(new Uint8Array()), "empty is text");
  assert(!isBinary(enc.encode("héllo ✓ \u{1f600}\n")), "UTF-8 is text");
  assertEquals(decodeText(enc.encode("\ufeffbom")), "\ufeffbom", "a BOM is kept");
  assert(isBinary(new Uint8Array([0x61, 0x00, 0x62])), "NUL");
  assert(isBinary(new Uint8Array([0xff, 0xfe, 0x41])), "invalid UTF-8");
  assert(isBinary(new Uint8Array([0x61, 0xc3])), "truncated UTF-8 sequence");
  const lateNul = new Uint8Array(9000).fill(0x61);
  lateNul[8500] = 0;
  assert(!isBinary(lateNul), "a NUL after 8000 bytes does not count (git's rule)");
  const diff: TextDiff = diffText(new Uint8Array([1, 0, 2]), enc.encode("text\n"));
  assert(diff.binary && diff.hunks.length === 0);
  assertEquals(formatUnified(diff, "a/x", "b/x"), "Binary files a/x and b/x differ\n");
});

Deno.test("splitLines keeps newlines and carriage returns", () => {
  assertEquals(splitLines(""), []);
  assertEquals(splitLines("\n"), ["\n"]);
  assertEquals(splitLines("a\r\nb"), ["a\r\n", "b"]);
});
