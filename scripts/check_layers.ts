// deno-lint-ignore-file no-console
/**
 * Checks the layering rules of `docs/DESIGN.md` (§8, "Layers") over `lib/`,
 * so that they stay true without anyone having to remember them:
 *
 * 1. A module imports only modules of its own layer folder or of a lower layer
 *    (a layer folder may hold another: `lib/workspace/io/` is a layer of its
 *    own below `lib/workspace/`, and a file belongs to the innermost one)
 *    (the layer table is read from docs/DESIGN.md itself, so the document and
 *    the check cannot disagree).
 * 2. A `_`-prefixed file is private to its folder.
 * 3. SQL is written only in `lib/repository`.
 * 4. Only `lib/cli` prints or exits (`lib/runtime.ts` holds the raw calls it
 *    uses; nothing else imports `exit` from it).
 * 5. Doc examples assert by throwing, never with `console.assert` (which only
 *    prints, so `deno test --doc` would pass whatever the example claims).
 * 6. Every layer folder has a `doc.ts` holding only its module doc: its rank
 *    (`layer N`), what it owns (`Owns:`), and what it may use (`May use:`, the
 *    folders of every lower rank of the table, no more, no fewer)
 *    ({@linkcode checkFolderDocs}).
 *
 * Run by `deno task check`; exits 1 and lists every violation.
 *
 * @example
 * ```ts ignore
 * import { checkLayers, readLayerTable } from "./check_layers.ts";
 * const violations = await checkLayers(".", await readLayerTable("docs/DESIGN.md"));
 * if (violations.length > 0) throw new Error(violations.join("\n"));
 * ```
 *
 * @module
 */
import { dirname, join, normalize, relative } from "node:path";

/** One row of the layer table: a rank and the `lib/` folders at it (`.` for files directly in lib/). */
export interface Layer {
  /** Lower ranks are imported by higher ones, never the reverse. */
  rank: number;
  /** Folders under `lib/` (`.` means the files directly in `lib/`). */
  folders: string[];
}

/**
 * Reads the layer table from a design document: the markdown table whose
 * header starts `| rank | folders |`. Folders are written as `lib/NAME/` or
 * `lib/NAME.ts` (a file directly in lib/), separated by commas.
 */
export async function readLayerTable(path: string): Promise<Layer[]> {
  const text = await Deno.readTextFile(path);
  const lines = text.split("\n");
  const start = lines.findIndex((line) => /^\|\s*rank\s*\|\s*folders\s*\|/i.test(line));
  if (start < 0) throw new Error(`No "| rank | folders |" table in "${path}"`);
  const layers: Layer[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    const cells = line.split("|").map((cell) => cell.trim());
    const rank = Number(cells[1]);
    if (!Number.isInteger(rank)) throw new Error(`Bad rank in layer row "${line}"`);
    const folders = [...(cells[2] ?? "").matchAll(/`lib\/([^`]*)`/g)].map((m) => {
      const name = m[1]!;
      return name.endsWith(".ts") || name === "" ? "." : name.replace(/\/$/, "");
    });
    if (folders.length === 0) throw new Error(`No folders in layer row "${line}"`);
    layers.push({ rank, folders: [...new Set(folders)] });
  }
  return layers;
}

const IMPORT =
  /(?:^|[\s;}])(?:import|export)\s[^;]*?from\s*"([^"]+)"|import\(\s*"([^"]+)"\s*\)|(?:^|[\s;}])import\s*"([^"]+)"/g;
const SQL =
  /\b(?:SELECT\s[^;]*?\bFROM\s|INSERT\s+(?:OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(?:TABLE|TRIGGER|INDEX|VIEW)\s)/;
const PRINTS = /\bconsole\.\w+\(|\bDeno\.exit\(|\bprocess\.exit\(|\bDeno\.std(?:out|err)\.write/;

function stripComments(source: string): string {
  // Block comments (JSDoc examples may print) and line comments; strings are kept.
  return source.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, " "))
    .replace(/(^|[^:"'`\\])\/\/[^\n]*/g, "$1");
}

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* tsFiles(path);
    else if (entry.isFile && entry.name.endsWith(".ts")) yield path;
  }
}

/**
 * The layer folder a path under `root/lib` belongs to: the longest folder of the
 * table that contains it (`lib/workspace/io/` before `lib/workspace/`), `.` for
 * files directly in lib/, or its first folder when the table names none.
 */
function folderOf(libDir: string, path: string, folders: readonly string[]): string {
  const rel = relative(libDir, path);
  const parts = rel.split("/");
  if (parts.length === 1) return ".";
  const dir = parts.slice(0, -1).join("/");
  let best: string | undefined;
  for (const folder of folders) {
    if (folder === "." || !(dir === folder || dir.startsWith(folder + "/"))) continue;
    if (best === undefined || folder.length > best.length) best = folder;
  }
  return best ?? parts[0]!;
}

/**
 * Checks every module under `root/lib` against `layers`; returns one line per
 * violation (`file:line: what`), empty when the code follows the rules.
 */
export async function checkLayers(root: string, layers: Layer[]): Promise<string[]> {
  const libDir = join(root, "lib");
  const rankOf = new Map<string, number>();
  for (const layer of layers) for (const folder of layer.folders) rankOf.set(folder, layer.rank);
  const violations: string[] = [];
  const files: string[] = [];
  for await (const file of tsFiles(libDir)) files.push(file);
  files.sort();
  for (const file of files) {
    const shown = relative(root, file);
    const folder = folderOf(libDir, file, [...rankOf.keys()]);
    const rank = rankOf.get(folder);
    if (rank === undefined) {
      violations.push(`${shown}: folder "lib/${folder}" is not in the layer table`);
      continue;
    }
    const raw = await Deno.readTextFile(file);
    for (const match of raw.matchAll(/console\.assert\(/g)) {
      const line = raw.slice(0, match.index).split("\n").length;
      violations.push(`${shown}:${line}: console.assert only prints; throw in examples`);
    }
    const source = stripComments(raw);
    const lineAt = (index: number) => source.slice(0, index).split("\n").length;
    for (const match of source.matchAll(IMPORT)) {
      const specifier = match[1] ?? match[2] ?? match[3]!;
      if (!specifier.startsWith(".")) continue;
      const target = normalize(join(dirname(file), specifier));
      const where = `${shown}:${lineAt(match.index! + match[0].search(/\S/))}`;
      if (!target.startsWith(libDir + "/")) {
        violations.push(`${where}: imports "${specifier}" from outside lib/`);
        continue;
      }
      const targetFolder = folderOf(libDir, target, [...rankOf.keys()]);
      const base = target.split("/").at(-1)!;
      if (targetFolder !== folder && base.startsWith("_")) {
        violations.push(`${where}: imports "${specifier}", private to lib/${targetFolder}`);
      }
      if (targetFolder === folder) continue;
      const targetRank = rankOf.get(targetFolder);
      if (targetRank === undefined) {
        violations.push(`${where}: imports "${specifier}" from a folder not in the layer table`);
      } else if (targetRank >= rank) {
        violations.push(
          `${where}: lib/${folder} (layer ${rank}) imports "${specifier}" (lib/${targetFolder}, layer ${targetRank})`,
        );
      }
      if (folder !== "cli" && /\bexit\b/.test(match[0]) && target.endsWith("/runtime.ts")) {
        violations.push(`${where}: only lib/cli exits`);
      }
    }
    if (folder !== "repository") {
      for (const match of source.matchAll(new RegExp(SQL, "g"))) {
        violations.push(`${shown}:${lineAt(match.index!)}: SQL outside lib/repository`);
      }
    }
    if (folder !== "cli" && shown !== "lib/runtime.ts") {
      for (const match of source.matchAll(new RegExp(PRINTS, "g"))) {
        violations.push(`${shown}:${lineAt(match.index!)}: prints or exits outside lib/cli`);
      }
    }
  }
  return violations;
}

/** The file of a layer folder that holds only its module doc (as restic's `doc.go`). */
export const FOLDER_DOC = "doc.ts";

/** The `lib/` folders named in backticks in `text`, as {@linkcode readLayerTable} names them. */
function foldersNamed(text: string): string[] {
  return [...text.matchAll(/`lib\/([^`]*)`/g)].map((m) => {
    const name = m[1]!;
    return name.endsWith(".ts") || name === "" ? "." : name.replace(/\/$/, "");
  });
}

/**
 * Checks that every layer folder of `layers` has a {@linkcode FOLDER_DOC}
 * holding only a module doc that names its rank (`layer N`), says what it
 * owns (`Owns: …`) and lists what it may use (`May use: …`, the folders of
 * every lower rank, in backticks); returns one line per violation.
 */
export async function checkFolderDocs(root: string, layers: Layer[]): Promise<string[]> {
  const violations: string[] = [];
  for (const layer of layers) {
    const below = new Set(layers.filter((l) => l.rank < layer.rank).flatMap((l) => l.folders));
    for (const folder of layer.folders) {
      if (folder === ".") continue;
      const shown = `lib/${folder}/${FOLDER_DOC}`;
      let raw: string;
      try {
        raw = await Deno.readTextFile(join(root, shown));
      } catch {
        violations.push(`lib/${folder}/: no ${FOLDER_DOC} saying what the layer owns and may use`);
        continue;
      }
      if (stripComments(raw).trim() !== "") {
        violations.push(`${shown}: holds code; it holds only the folder's module doc`);
      }
      const doc = (raw.match(/\/\*\*([\s\S]*?)\*\//)?.[1] ?? "").replace(/^\s*\* ?/gm, "");
      if (!/@module\b/.test(doc)) violations.push(`${shown}: no @module doc comment`);
      const rank = doc.match(/\blayer (\d+)\b/i)?.[1];
      if (rank === undefined) {
        violations.push(`${shown}: does not say its layer (layer ${layer.rank})`);
      } else if (Number(rank) !== layer.rank) {
        violations.push(`${shown}: says layer ${rank}; the table gives layer ${layer.rank}`);
      }
      const paragraph = (label: string) =>
        doc.match(new RegExp(`(?:^|\\n)${label}:([\\s\\S]*?)(?:\\n\\s*\\n|@module)`))?.[1];
      if ((paragraph("Owns") ?? "").trim() === "") {
        violations.push(`${shown}: no "Owns:" paragraph saying what the layer owns`);
      }
      const mayUse = paragraph("May use");
      if (mayUse === undefined) {
        violations.push(`${shown}: no "May use:" paragraph`);
        continue;
      }
      const listed = new Set(foldersNamed(mayUse));
      const name = (f: string) => f === "." ? "lib/*.ts" : `lib/${f}/`;
      const missing = [...below].filter((f) => !listed.has(f)).map(name);
      const extra = [...listed].filter((f) => !below.has(f)).map(name);
      if (missing.length > 0) {
        violations.push(
          `${shown}: "May use" omits ${missing.join(", ")}, below layer ${layer.rank} in the table`,
        );
      }
      if (extra.length > 0) {
        violations.push(
          `${shown}: "May use" lists ${
            extra.join(", ")
          }, not below layer ${layer.rank} in the table`,
        );
      }
    }
  }
  return violations;
}

/**
 * Finds import cycles among the modules under `root/lib` (static imports and
 * re-exports; a dynamic `import()` loads lazily and breaks no cycle's
 * evaluation order, so it is not an edge): one line per cycle, naming its
 * modules in order. The layer rule already forbids cycles between folders;
 * this catches them inside one.
 */
export async function checkCycles(root: string): Promise<string[]> {
  const libDir = join(root, "lib");
  const files: string[] = [];
  for await (const file of tsFiles(libDir)) files.push(file);
  files.sort();
  const edges = new Map<string, string[]>();
  const STATIC =
    /(?:^|[\s;}])(?:import|export)\s(?!type\s)[^;]*?from\s*"([^"]+)"|(?:^|[\s;}])import\s*"([^"]+)"/g;
  for (const file of files) {
    const source = stripComments(await Deno.readTextFile(file));
    const targets: string[] = [];
    for (const match of source.matchAll(STATIC)) {
      const specifier = match[1] ?? match[2]!;
      if (!specifier.startsWith(".")) continue;
      const target = normalize(join(dirname(file), specifier));
      if (target.startsWith(libDir + "/")) targets.push(target);
    }
    edges.set(file, targets);
  }
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const cycles: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      const seen = state.get(next);
      if (seen === "open") {
        const cycle = stack.slice(stack.indexOf(next)).map((f) => relative(root, f));
        cycles.push(`import cycle: ${[...cycle, relative(root, next)].join(" -> ")}`);
      } else if (seen === undefined && edges.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return cycles;
}

if (import.meta.main) {
  const root = Deno.args[0] ?? ".";
  const layers = await readLayerTable(Deno.args[1] ?? join(root, "docs/DESIGN.md"));
  const violations = [
    ...await checkLayers(root, layers),
    ...await checkFolderDocs(root, layers),
    ...await checkCycles(root),
  ];
  for (const line of violations) console.error(line);
  if (violations.length > 0) {
    console.error(
      `${violations.length} layering violation(s); the rules are in docs/DESIGN.md §8.`,
    );
    Deno.exit(1);
  }
}
