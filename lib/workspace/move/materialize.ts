/**
 * Materialize: write a snapshot's tree, or selected paths, into a directory.
 * It deletes nothing and overwrites nothing that differs: a path that
 * exists with other content is a conflict, and then nothing is written.
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { createSnapshot } from "../../history/create.ts";
 * import { materialize } from "./materialize.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "a\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const snap = await createSnapshot(store, await loadOrCreateIdentity(await Deno.makeTempDir()), {});
 * const dest = await Deno.makeTempDir();
 * materialize(store, snap.envelope.body.workspace!.tree, dest);
 * if (!(await Deno.readTextFile(`${dest}/a.txt`) === "a\n")) throw new Error("Example failed");
 * store.close();
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConflictError, IoError, NotFoundError, quote, reasonOf } from "../../errors.ts";
import { modeMatches } from "../io/mode.ts";
import { normalizeRelativePath } from "../io/path.ts";
import { readRegularNoFollow, statInfoOf } from "../io/safe_read.ts";
import { FileWrites, totalBytes } from "../file_writes.ts";
import { refuseStorePaths } from "../restore_paths.ts";
import { SafeWriter } from "../io/safe_write.ts";
import type { Store } from "../../repository/store.ts";
import type { TreeEntry } from "../../format/tree.ts";

/** What {@linkcode materialize} did. */
export interface MaterializeResult {
  /** Paths written. */
  written: string[];
  /** Paths already identical, left alone. */
  identical: string[];
}

function sameOnDisk(abs: string, entry: TreeEntry): boolean | null {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(abs);
  } catch {
    return null; // absent
  }
  if (entry.type === "symlink") {
    return stat.isSymbolicLink() && fs.readlinkSync(abs) === entry.target;
  }
  if (!stat.isFile() || stat.size !== entry.size) return false;
  try {
    return readRegularNoFollow(abs, statInfoOf(stat), { maxBytes: entry.size, keepBytesUpTo: 0 })
          .sha256 ===
        entry.blob && modeMatches(stat.mode, entry.mode);
  } catch {
    return false;
  }
}

/**
 * Writes tree `treeId` (or the entries at or below `paths`) into `dest`,
 * creating it if needed. Refuses (exit 5) before writing if anything differs.
 */
export function materialize(
  store: Store,
  treeId: string,
  dest: string,
  paths: string[] = [],
): MaterializeResult {
  const tree = store.getTree(treeId);
  const wanted = paths.map((p) => normalizeRelativePath(p.replace(/\/+$/, "")));
  const entries = wanted.length === 0
    ? tree.entries
    : tree.entries.filter((e) => wanted.some((w) => e.path === w || e.path.startsWith(w + "/")));
  for (const w of wanted) {
    if (!entries.some((e) => e.path === w || e.path.startsWith(w + "/"))) {
      throw new NotFoundError(`The snapshot has no path ${quote(w)}`);
    }
  }
  refuseStorePaths(dest, store.dir, entries.map((e) => e.path));
  // Into a new or empty directory nothing can differ: skip the per-path checks.
  let fresh: boolean;
  try {
    fresh = !fs.existsSync(dest) || fs.readdirSync(dest).length === 0;
    fs.mkdirSync(dest, { recursive: true });
  } catch (error) {
    throw new IoError(`Cannot materialize into ${quote(dest)}: ${reasonOf(error)}`, {
      cause: error,
      path: dest,
      hint: "name a directory, or a path where one can be created",
    });
  }
  const root = path.resolve(dest);
  const result: MaterializeResult = { written: [], identical: [] };
  const conflicts: string[] = [];
  const todo: TreeEntry[] = [];
  for (const entry of entries) {
    const same = fresh ? null : sameOnDisk(path.join(root, entry.path), entry);
    if (same === null) todo.push(entry);
    else if (same) result.identical.push(entry.path);
    else conflicts.push(entry.path);
  }
  if (conflicts.length > 0) {
    throw new ConflictError(
      `${conflicts.length} path(s) already exist in ${quote(root)} with other content: ${
        conflicts.slice(0, 10).join(", ")
      }`,
      {
        hint:
          "materialize deletes and overwrites nothing; choose an empty directory or move them aside",
      },
    );
  }
  const writer = new SafeWriter(root);
  try {
    const files = new FileWrites(store, writer, totalBytes(todo));
    try {
      for (const entry of todo) {
        files.write(entry);
        result.written.push(entry.path);
      }
      files.finish();
    } finally {
      files.close();
    }
    writer.flush();
  } finally {
    writer.close();
  }
  return result;
}
