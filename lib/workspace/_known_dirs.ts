/**
 * The capture's use of the tree cache (`lib/repository/tree_cache.ts`,
 * docs/FORMAT.md §8.2): which directories of the walk are unchanged since
 * their row was written, so their trees are kept without their entries
 * being looked up, read, checked or serialized again, and the rows written
 * back after a capture.
 *
 * A directory is known when its row lists exactly the entries the walk
 * just listed, in order, each with the same `lstat` (files and symlinks:
 * mode, size, mtime, ctime, inode, device, and racily clean against the
 * row's stamp as stat-cache rows must be; directories and special files:
 * type, inode, device), when no ignore file on its path from the root
 * changed (the rules that decided what it left out are the same), when its
 * row is not partial (nothing in it was unreadable, changed while read,
 * left out for its content, unsafely named or captured only because it is
 * allowed, and no watch process changed it since) and when its tree is
 * still stored. Its subtrees are walked as usual; its id
 * is kept when they all come out the same.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { captureWorkspace } from "./capture.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/src`);
 * await Deno.writeTextFile(`${dir}/src/a.ts`, "export {};\n");
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const first = store.transaction("capture", () => captureWorkspace(store));
 * // Later (once the files are older than the first capture's stamp), a
 * // capture keeps src's tree without reading its row in stat_cache.
 * const again = store.transaction("capture", () => captureWorkspace(store));
 * if (again.treeId !== first.treeId) throw new Error("Example failed");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { ClosedDir, DirEntry, DirTreeWriter } from "../format/dir_tree.ts";
import type { SkippedEntry } from "../format/tree.ts";
import { IntegrityError, quote } from "../errors.ts";
import type { Store } from "../repository/store.ts";
import { deleteStatCacheRow, statCachePathsBelow } from "../repository/stat_cache.ts";
import {
  clearTreeCache,
  deleteTreeCacheRow,
  readTreeCache,
  TREE_CACHE_FIELDS,
  type TreeCacheRow,
  updateTreeCacheTree,
  writeTreeCacheRow,
} from "../repository/tree_cache.ts";
import type { ListedEntry } from "./io/walk.ts";
import { IGNORE_FILE_NAMES } from "./io/ignore.ts";
import type { CaptureStats } from "./capture.ts";

/** The meta key holding the capture plan's fingerprint the rows were written under. */
const PLAN_META = "tree_cache_plan";
/** Milliseconds of ctime granularity assumed (as for stat-cache rows). */
const CTIME_GRANULARITY_MS = 1000;
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const SLASH = 0x2f;
const IGNORE_FILES: ReadonlySet<string> = new Set(IGNORE_FILE_NAMES);

/** Why a directory's row is written partial: its own entries must be looked at every time. */
const TAINTING_REASONS: ReadonlySet<string> = new Set([
  "unreadable",
  "changed_while_reading",
  "secret_content",
  "unsafe_name",
]);

interface DirState {
  listing: readonly ListedEntry[];
  row: TreeCacheRow | undefined;
  /** Kept through {@linkcode DirTreeWriter.enterKnown}. */
  known: boolean;
  /** No ignore file from the root down to here changed since the rows were written. */
  rulesSame: boolean;
  /** Something in it must be looked at again next time: its row is written partial. */
  tainted: boolean;
  /** Names of its files that keep a stat-cache row (directories walked entry by entry). */
  kept: Set<string>;
}

/** The parent directory of a workspace path (`""` for a top-level entry). */
function parentDir(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

/**
 * One capture's view of the tree cache. `reading` is false when the rows
 * may not be trusted (none yet, another plan, other secret rules): then
 * every directory is walked entry by entry and the rows are written anew.
 */
export class KnownDirs {
  readonly #store: Store;
  readonly #rows: Map<string, TreeCacheRow>;
  #reading: boolean;
  #stamp = 0;
  #margin = 0;
  readonly #states = new Map<string, DirState>();
  readonly #visited = new Set<string>();
  /** Directories the writer built or kept (a listed one left empty is neither). */
  readonly #closed = new Set<string>();
  #writer: DirTreeWriter | null = null;

  /**
   * Opens the rows for a capture under `fingerprint` whose stat-cache rows
   * are trusted (`rulesMatch`).
   */
  constructor(store: Store, options: { fingerprint: string; rulesMatch: boolean }) {
    this.#store = store;
    const planMatch = store.getMeta(PLAN_META) === options.fingerprint;
    this.#reading = planMatch && options.rulesMatch;
    this.#rows = this.#reading ? readTreeCache(store) : new Map();
    if (this.#rows.size === 0) this.#reading = false;
    if (!this.#reading) {
      clearTreeCache(store);
      store.setMeta(PLAN_META, options.fingerprint);
    }
  }

  /** Whether rows are read (the capture looks up stat-cache rows file by file then). */
  get reading(): boolean {
    return this.#reading;
  }

  /**
   * The writer the capture builds trees with (known directories are entered
   * in it), and the capture's stamp and racy margin (rows written carry the stamp).
   */
  attach(writer: DirTreeWriter, clock: { stamp: number; margin: number }): void {
    this.#writer = writer;
    this.#stamp = clock.stamp;
    this.#margin = clock.margin;
  }

  /**
   * The walk listed `path`: returns true when it is known (the walk then
   * yields none of its own entries), adding what its row holds to `stats`
   * and `skipped`.
   */
  listed(
    path: string,
    listing: readonly ListedEntry[],
    stats: CaptureStats,
    skipped: SkippedEntry[],
  ): boolean {
    this.#visited.add(path);
    const row = this.#rows.get(path);
    const parent = path === "" ? undefined : this.#states.get(parentDir(path));
    const state: DirState = {
      listing,
      row,
      known: false,
      rulesSame: false,
      tainted: listing.some((entry) => entry.skip !== null),
      kept: new Set(),
    };
    this.#states.set(path, state);
    if (!this.#reading || row === undefined || (parent !== undefined && !parent.rulesSame)) {
      return false;
    }
    const same = this.#compare(listing, row);
    state.rulesSame = same.rules;
    if (!same.rules || state.tainted || !same.all) return false;
    if (row.files + row.symlinks + row.skipped.length + row.subtrees.length === 0) return false;
    if (!row.stored) return false;
    if (row.partial) return false;
    state.known = true;
    const store = this.#store;
    this.#writer!.enterKnown(path, {
      id: row.tree,
      subtrees: row.subtrees,
      counts: { entries: row.files + row.symlinks, skipped: row.skipped.length },
      own: () => {
        const { tree } = store.getTreeObject(row.tree);
        if (tree.version !== 2) {
          throw new IntegrityError(
            `Tree-cache row ${quote(path)} names tree ${
              quote(row.tree)
            }, which is not a directory tree`,
          );
        }
        return {
          entries: tree.entries.filter((entry) => entry.type !== "tree"),
          skipped: tree.skipped,
        };
      },
    });
    stats.files += row.files;
    stats.symlinks += row.symlinks;
    stats.bytes += row.bytes;
    stats.reused += row.files;
    for (const [name, reason] of row.skipped) {
      skipped.push({ path: path === "" ? name : `${path}/${name}`, reason });
    }
    return true;
  }

  /**
   * What the capture decided for one item of a directory walked entry by
   * entry: a file that keeps its stat-cache row, or something that makes
   * the directory's row partial.
   */
  decided(path: string, outcome: { kept?: boolean; reason?: string; allowed?: boolean }): void {
    const state = this.#states.get(parentDir(path));
    if (state === undefined) return;
    if (
      outcome.allowed === true ||
      (outcome.reason !== undefined && TAINTING_REASONS.has(outcome.reason))
    ) {
      state.tainted = true;
    }
    if (outcome.kept === true) state.kept.add(path.slice(path.lastIndexOf("/") + 1));
  }

  /**
   * The walk left `path`: a directory walked entry by entry loses the
   * stat-cache rows of files no longer in it, and of everything below a
   * subdirectory the walk did not list (gone, now a file, left out: a watch
   * process may have written rows there that no tree-cache row covers).
   */
  left(path: string): void {
    const state = this.#states.get(path);
    if (state === undefined || state.known || !this.#reading) return;
    const prefix = path === "" ? "" : `${path}/`;
    for (const rest of statCachePathsBelow(this.#store, path)) {
      const slash = rest.indexOf("/");
      const stale = slash < 0
        ? !state.kept.has(rest)
        : !this.#visited.has(prefix + rest.slice(0, slash));
      if (stale) deleteStatCacheRow(this.#store, prefix + rest);
    }
  }

  /** The writer built or kept a directory: its row is written or updated. */
  closed(dir: ClosedDir): void {
    const state = this.#states.get(dir.path);
    this.#states.delete(dir.path);
    this.#closed.add(dir.path);
    if (state === undefined || dir.kept) return;
    const subtrees = subtreesOf(dir.entries);
    if (state.known && !state.tainted) {
      updateTreeCacheTree(this.#store, state.row!, dir.id, subtrees);
      return;
    }
    let files = 0;
    let symlinks = 0;
    let bytes = 0;
    for (const entry of dir.entries) {
      if (entry.type === "file") {
        files += 1;
        bytes += entry.size;
      } else if (entry.type === "symlink") symlinks += 1;
    }
    const names: string[] = [];
    const stats = new Float64Array(state.listing.length * TREE_CACHE_FIELDS);
    for (let i = 0; i < state.listing.length; i++) {
      const entry = state.listing[i]!;
      names.push(entry.name);
      const s = entry.stats;
      if (s === null) continue;
      const o = i * TREE_CACHE_FIELDS;
      stats[o] = s.mode;
      stats[o + 1] = s.size;
      stats[o + 2] = s.mtimeMs;
      stats[o + 3] = s.ctimeMs;
      stats[o + 4] = s.ino;
      stats[o + 5] = s.dev;
    }
    if (names.length === 0) return;
    writeTreeCacheRow(this.#store, {
      dir: dir.path,
      tree: dir.id,
      stampMs: this.#stamp,
      names: names.join("/"),
      stats,
      files,
      symlinks,
      bytes,
      skipped: dir.skipped.map((record) => [record.name, record.reason] as const),
      subtrees,
      partial: state.tainted,
    });
  }

  /**
   * After the walk: the rows of directories it did not list (gone, now left
   * out) go, and so do the rows of directories left empty (no tree). The
   * stat-cache rows below a directory not listed went when the walk left its
   * parent: a parent whose listing lost a directory, or whose ignore file
   * changed, is never kept, so {@linkcode left} prunes below it.
   */
  finish(): void {
    for (const dir of this.#rows.keys()) {
      if (this.#closed.has(dir)) continue;
      deleteTreeCacheRow(this.#store, dir);
    }
  }

  /**
   * Whether `listing` is exactly what `row` lists, entry by entry (`all`),
   * and whether its ignore files are (`rules`).
   */
  #compare(listing: readonly ListedEntry[], row: TreeCacheRow): { all: boolean; rules: boolean } {
    const names = row.names;
    let at = 0;
    let i = 0;
    let all = true;
    for (; i < listing.length; i++) {
      const name = listing[i]!.name;
      const end = at + name.length;
      if (
        at >= names.length || !names.startsWith(name, at) ||
        (end !== names.length && names.charCodeAt(end) !== SLASH)
      ) break;
      if (!this.#entrySame(listing[i]!, row, i)) {
        all = false;
        if (IGNORE_FILES.has(name)) return { all, rules: false };
      }
      at = end + 1;
    }
    if (i === listing.length && at >= names.length) return { all, rules: true };
    return { all: false, rules: this.#ignoreFilesSame(listing, row) };
  }

  /** Whether the ignore files in `listing` are those `row` lists, unchanged. */
  #ignoreFilesSame(listing: readonly ListedEntry[], row: TreeCacheRow): boolean {
    const listed = row.names.split("/");
    for (const name of IGNORE_FILE_NAMES) {
      const now = listing.findIndex((entry) => entry.name === name);
      const then = listed.indexOf(name);
      if (now < 0 && then < 0) continue;
      if (now < 0 || then < 0 || !this.#entrySame(listing[now]!, row, then)) return false;
    }
    return true;
  }

  /** Whether `entry` has the `lstat` row entry `i` recorded (racily clean for files and links). */
  #entrySame(entry: ListedEntry, row: TreeCacheRow, i: number): boolean {
    const s = entry.stats;
    if (s === null) return false;
    const n = row.stats;
    const o = i * TREE_CACHE_FIELDS;
    const type = s.mode & S_IFMT;
    if (type !== (n[o]! & S_IFMT) || s.ino !== n[o + 4] || s.dev !== n[o + 5]) return false;
    if (type !== S_IFREG && type !== S_IFLNK) return true;
    if (
      s.mode !== n[o] || s.size !== n[o + 1] || s.mtimeMs !== n[o + 2] ||
      s.ctimeMs !== n[o + 3]
    ) return false;
    // Racy-clean, as for stat-cache rows: changed in the tick the listing was taken?
    return s.mtimeMs + 1 + this.#margin <= row.stampMs &&
      s.ctimeMs + CTIME_GRANULARITY_MS + this.#margin <= row.stampMs;
  }
}

function subtreesOf(entries: readonly DirEntry[]): [string, string][] {
  const subtrees: [string, string][] = [];
  for (const entry of entries) if (entry.type === "tree") subtrees.push([entry.name, entry.tree]);
  return subtrees;
}
