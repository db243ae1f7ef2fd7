/**
 * Docs that cannot drift: the exit-status tables of the README and
 * docs/CLI.md say exactly what the code says, and every test that
 * docs/SECURITY.md names as the proof of a defence exists.
 */
import { join } from "node:path";
import { EXIT_MEANINGS } from "../lib/errors.ts";
import { EXIT_TABLE } from "../lib/cli/output.ts";
import { assert, assertEquals } from "./_assert.ts";
import { REPO } from "./_cli.ts";

/** The rows of every Markdown table in `text` whose header row has all of `columns`. */
function tables(text: string, columns: string[]): Record<string, string>[] {
  const rows: Record<string, string>[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const header = cells(lines[i]!);
    if (header === null || !columns.every((c) => header.includes(c))) continue;
    if (!/^\|[\s:|-]+\|$/.test(lines[i + 1]?.trim() ?? "")) continue;
    for (i += 2; i < lines.length; i++) {
      const row = cells(lines[i]!);
      if (row === null) break;
      rows.push(Object.fromEntries(header.map((name, k) => [name, row[k] ?? ""])));
    }
  }
  return rows;
}

/** The cells of a Markdown table row (pipes inside backticks kept), or null. */
function cells(line: string): string[] | null {
  const t = line.trim();
  if (!t.startsWith("|") || !t.endsWith("|")) return null;
  const out: string[] = [];
  let cell = "";
  let code = false;
  for (const ch of t.slice(1, -1)) {
    if (ch === "`") code = !code;
    if (ch === "|" && !code) {
      out.push(cell.trim());
      cell = "";
    } else cell += ch;
  }
  out.push(cell.trim());
  return out;
}

Deno.test("the exit-status tables of README.md and docs/CLI.md are the code's EXIT_MEANINGS", async () => {
  const expected = EXIT_MEANINGS.map((m) => [String(m.exit), m.meaning]);
  for (const file of ["README.md", "docs/CLI.md"]) {
    const text = await Deno.readTextFile(join(REPO, file));
    const rows = tables(text, ["exit", "meaning"]).map((r) => [r.exit!, r.meaning!]);
    assertEquals(rows, expected, `${file}'s exit table`);
  }
  // `ctxsnap --help` prints the same table (after its line for 0).
  for (const m of EXIT_MEANINGS.filter((m) => m.exit !== 0)) {
    assert(
      EXIT_TABLE.split("\n").some((line) => line.trim() === `${m.exit}`.padEnd(4) + m.meaning),
      `--help lists exit ${m.exit}: ${m.meaning}`,
    );
  }
});

/** Every test name declared in a test file: `Deno.test("…")`, `name: "…"`, `t.step("…")`. */
async function declaredTests(file: string): Promise<RegExp[]> {
  const text = await Deno.readTextFile(join(REPO, file));
  const names: RegExp[] = [];
  const literal =
    /(?:Deno\.test\(\s*|name:\s*|\.step\(\s*)("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`)/g;
  for (const match of text.matchAll(literal)) {
    const raw = match[1]!;
    // Backticks are Markdown in the docs, so they are not compared.
    const quoted = raw.startsWith("'")
      ? `"${raw.slice(1, -1).replace(/\\'/g, "'").replace(/"/g, '\\"')}"`
      : raw;
    const source = !quoted.startsWith("`")
      ? escapeRegExp((JSON.parse(quoted) as string).replace(/`/g, ""))
      // A template literal: each ${…} stands for any text, or is written as is.
      : raw.slice(1, -1).replace(/\\`/g, "").split(/\$\{[^}]*\}/).map(escapeRegExp)
        .join("(?:\\$\\{[^}]*\\}|[^;]*?)");
    // A name ends the cell, or is followed by "; " or a " (note)".
    names.push(new RegExp(`${source}(?=$|; | \\()`, "y"));
  }
  return names;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The parts of a SECURITY.md test cell that are not test names: the cell must
 * read `NAME[ (note)][; NAME[ (note)]]…`, each NAME a declared test name
 * (names may themselves hold `;` and parentheses, so the longest declared
 * name that matches at each position is taken).
 */
function unknownNames(cell: string, declared: RegExp[]): string[] {
  const text = cell.replace(/`/g, "").trim();
  const unknown: string[] = [];
  let at = 0;
  while (at < text.length) {
    let best = 0;
    for (const re of declared) {
      re.lastIndex = at;
      const m = re.exec(text);
      if (m !== null && m[0].length > best) best = m[0].length;
    }
    let next: number;
    if (best === 0) {
      next = text.indexOf("; ", at);
      if (next < 0) next = text.length;
      unknown.push(text.slice(at, next));
    } else {
      next = at + best;
      const note = /\s*\((?:[^()]|\([^()]*\))*\)/y;
      note.lastIndex = next;
      if (note.exec(text) !== null) next = note.lastIndex;
      if (next < text.length && !text.startsWith("; ", next)) {
        // The name ran into other text: report what follows as unknown.
        const end = text.indexOf("; ", next);
        unknown.push(text.slice(at, end < 0 ? text.length : end));
        next = end < 0 ? text.length : end;
      }
    }
    at = next;
    while (text.startsWith("; ", at)) at += 2;
  }
  return unknown;
}

Deno.test("every test docs/SECURITY.md names as a proof exists in the test file it names", async () => {
  const text = await Deno.readTextFile(join(REPO, "docs/SECURITY.md"));
  const rows = tables(text, ["test file", "test"]);
  assert(rows.length > 50, `SECURITY.md's tables name tests (${rows.length} rows found)`);
  const cache = new Map<string, RegExp[]>();
  const missing: string[] = [];
  for (const row of rows) {
    const files = row["test file"]!.split(/\s+\/\s+|\s*,\s*/).map((f) => f.replace(/`/g, ""))
      .filter((f) => f !== "" && f !== "—");
    if (files.length === 0) continue;
    const declared: RegExp[] = [];
    for (const file of files) {
      if (!cache.has(file)) cache.set(file, await declaredTests(file));
      declared.push(...cache.get(file)!);
    }
    if (row.test!.trim() === "" || row.test!.trim() === "—") continue;
    for (const name of unknownNames(row.test!, declared)) {
      missing.push(`${files.join(" / ")}: ${name}`);
    }
  }
  assertEquals(missing, [], "tests named in SECURITY.md that do not exist");
});

Deno.test("every mutation docs/SECURITY.md's threat table names exists in scripts/mutations.ts, and every threat names one or says why not", async () => {
  const { MUTATIONS } = await import("../scripts/mutations.ts");
  const known = new Set(MUTATIONS.map((m) => m.id));
  const text = await Deno.readTextFile(join(REPO, "docs/SECURITY.md"));
  const rows = tables(text, ["area", "threat", "test", "mutation"]);
  assert(rows.length > 90, `the threat table has a mutation column (${rows.length} rows found)`);
  const unknown: string[] = [];
  const missing: string[] = [];
  for (const row of rows) {
    const cell = row.mutation!.trim();
    if (cell.startsWith("—")) {
      // No mutation: allowed only with a reason, or where the row has no test at all.
      if (cell === "—" && row["test file"]!.trim() !== "—") missing.push(row.threat!);
      continue;
    }
    if (cell === "") {
      missing.push(row.threat!);
      continue;
    }
    for (const id of cell.split(/\s*,\s*/)) if (!known.has(id)) unknown.push(id);
  }
  assertEquals(unknown, [], "mutation ids named in SECURITY.md that scripts/mutations.ts lacks");
  assertEquals(missing, [], "threats with a test but no mutation (and no reason given)");
});

Deno.test("scripts/mutations.ts holds at least 40 well-formed mutations, each applying exactly once to today's tree", async () => {
  const { MUTATIONS } = await import("../scripts/mutations.ts");
  const { checkMutations } = await import("../scripts/mutate.ts");
  assert(MUTATIONS.length >= 40, `${MUTATIONS.length} mutations`);
  assertEquals(await checkMutations(REPO, MUTATIONS), []);
});

Deno.test("docs/FORMAT.md numbers each section once, and every link to one of its sections names a heading it has", async () => {
  const format = await Deno.readTextFile(join(REPO, "docs", "FORMAT.md"));
  const numbers = [...format.matchAll(/^#{2,4} (\d+(?:\.\d+)*)\.? /gm)].map((m) => m[1]!);
  const repeated = numbers.filter((n, i) => numbers.indexOf(n) !== i);
  assertEquals(repeated, [], "section numbers used twice");
  // GitHub's anchors: lower case, punctuation but - dropped, spaces as -.
  const anchors = new Set(
    [...format.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
      m[1]!.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replaceAll(" ", "-")
    ),
  );
  const broken: string[] = [];
  for (const file of ["README.md", "docs/CLI.md", "docs/SECURITY.md", "docs/DESIGN.md"]) {
    const text = await Deno.readTextFile(join(REPO, file));
    for (const m of text.matchAll(/FORMAT\.md#([a-z0-9-]+)\)/g)) {
      if (!anchors.has(m[1]!)) broken.push(`${file}: #${m[1]}`);
    }
  }
  assertEquals(broken, [], "links to headings FORMAT.md does not have");
});
