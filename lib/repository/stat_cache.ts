/**
 * The stat cache's rows (docs/FORMAT.md, table `stat_cache`): for each
 * workspace file last captured, the stat fields it had and the blob it held,
 * so that an unchanged file is not read again. Capture (`lib/workspace/`)
 * decides when a row may be trusted; this module only reads and writes them,
 * inside the caller's transaction.
 *
 * @example
 * ```ts
 * import { mkdtempSync } from "node:fs";
 * import { join } from "node:path";
 * import { Store } from "./store.ts";
 * import { readStatCache, upsertStatCacheRow } from "./stat_cache.ts";
 *
 * const workspace = mkdtempSync("/tmp/ctxsnap-");
 * const store = Store.init(join(workspace, ".ctxsnap"), workspace);
 * const stat = { size: 3, mtimeMs: 1, ctimeMs: 1, ino: 7, dev: 1, mode: 0o644 };
 * store.transaction("example", () => upsertStatCacheRow(store, "a.txt", stat, "ab".repeat(32), 5));
 * if (readStatCache(store).get("a.txt")?.size !== 3) throw new Error("Example failed");
 * store.close();
 * ```
 * @module
 */
import type { Store } from "./store.ts";

/** One stat-cache row as stored. */
export interface StatCacheRow {
  /** The workspace path, `/`-separated. */
  path: string;
  /** Size in bytes when captured. */
  size: number;
  /** Modification time, milliseconds. */
  mtime_ms: number;
  /** Status-change time, milliseconds. */
  ctime_ms: number;
  /** Inode number. */
  ino: number;
  /** Device number. */
  dev: number;
  /** Mode bits. */
  mode: number;
  /** The blob id the file held. */
  blob: string;
  /** The store filesystem's clock when the row was written (racy-file check). */
  stamp_ms: number;
}

/** The stat fields a row records. */
export interface StatFields {
  /** Size in bytes. */
  size: number;
  /** Modification time, milliseconds. */
  mtimeMs: number;
  /** Status-change time, milliseconds. */
  ctimeMs: number;
  /** Inode number. */
  ino: number;
  /** Device number. */
  dev: number;
  /** Mode bits. */
  mode: number;
}

/** Every row, by path (one call into SQLite, not one a row). */
export function readStatCache(store: Store): Map<string, StatCacheRow> {
  const rows = new Map<string, StatCacheRow>();
  for (const row of store.stmt("SELECT * FROM stat_cache").iterate()) {
    const r = row as unknown as StatCacheRow;
    // A fixed-shape copy: the driver's row objects are dictionaries, several
    // times the size, and a watch process reads every row at its first walk.
    rows.set(r.path, {
      path: r.path,
      size: r.size,
      mtime_ms: r.mtime_ms,
      ctime_ms: r.ctime_ms,
      ino: r.ino,
      dev: r.dev,
      mode: r.mode,
      blob: r.blob,
      stamp_ms: r.stamp_ms,
    });
  }
  return rows;
}

/** How many numbers a {@linkcode StatCacheTable} keeps per row. */
const FIELDS = 7;
const SIZE = 0;
const MTIME = 1;
const CTIME = 2;
const INO = 3;
const DEV = 4;
const MODE = 5;
const STAMP = 6;

/**
 * Every row, compactly: a map from path to row number, the seven numbers of
 * every row in one `Float64Array` (which holds any JavaScript number
 * exactly, so comparisons are those of the rows themselves) and the blob ids
 * in one array. Reading 43,000 rows this way makes no object per row, and
 * {@linkcode StatCacheTable.matches} compares plain numbers.
 *
 * @example
 * ```ts
 * import { mkdtempSync } from "node:fs";
 * import { join } from "node:path";
 * import { Store } from "./store.ts";
 * import { readStatCacheTable, upsertStatCacheRow } from "./stat_cache.ts";
 *
 * const workspace = mkdtempSync("/tmp/ctxsnap-");
 * const store = Store.init(join(workspace, ".ctxsnap"), workspace);
 * const stat = { size: 3, mtimeMs: 1.5, ctimeMs: 1, ino: 7, dev: 1, mode: 0o644 };
 * store.transaction("example", () => upsertStatCacheRow(store, "a.txt", stat, "ab".repeat(32), 5));
 * const table = readStatCacheTable(store);
 * const row = table.row("a.txt");
 * if (!(table.matches(row, stat) && table.stampMs(row) === 5)) throw new Error("Example failed");
 * store.close();
 * ```
 */
export class StatCacheTable implements StatCacheRows {
  readonly #rows: Map<string, number>;
  readonly #numbers: Float64Array;
  readonly #blobs: string[];

  /** An empty table. */
  static empty(): StatCacheTable {
    return new StatCacheTable(new Map(), new Float64Array(0), []);
  }

  private constructor(rows: Map<string, number>, numbers: Float64Array, blobs: string[]) {
    this.#rows = rows;
    this.#numbers = numbers;
    this.#blobs = blobs;
  }

  /** @internal Builds a table from rows as arrays (see {@linkcode readStatCacheTable}). */
  static fromArrays(rows: readonly unknown[][]): StatCacheTable {
    const index = new Map<string, number>();
    const numbers = new Float64Array(rows.length * FIELDS);
    const blobs: string[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      index.set(r[0] as string, i);
      const o = i * FIELDS;
      for (let f = 0; f < FIELDS; f++) numbers[o + f] = r[f + 1] as number;
      blobs[i] = r[FIELDS + 1] as string;
    }
    return new StatCacheTable(index, numbers, blobs);
  }

  /** Number of rows. */
  get size(): number {
    return this.#blobs.length;
  }

  /** The row number of `path`, or -1 when it has none. */
  row(path: string): number {
    return this.#rows.get(path) ?? -1;
  }

  /** Every path with a row. */
  paths(): IterableIterator<string> {
    return this.#rows.keys();
  }

  /** Whether row `row` records exactly these stat fields (size, times, inode, device, mode). */
  matches(row: number, stat: StatFields): boolean {
    const n = this.#numbers;
    const o = row * FIELDS;
    return n[o + SIZE] === stat.size && n[o + MTIME] === stat.mtimeMs &&
      n[o + CTIME] === stat.ctimeMs && n[o + INO] === stat.ino && n[o + DEV] === stat.dev &&
      n[o + MODE] === stat.mode;
  }

  /** The size row `row` records. */
  sizeOf(row: number): number {
    return this.#numbers[row * FIELDS + SIZE]!;
  }

  /** When row `row` was written, on the store filesystem's clock. */
  stampMs(row: number): number {
    return this.#numbers[row * FIELDS + STAMP]!;
  }

  /** The blob id row `row` records. */
  blob(row: number): string {
    return this.#blobs[row]!;
  }
}

const TABLE_COLUMNS =
  "SELECT path, size, mtime_ms, ctime_ms, ino, dev, mode, stamp_ms, blob FROM stat_cache";

/**
 * Every row as a {@linkcode StatCacheTable} (one call into SQLite, rows
 * read as arrays where the runtime's `node:sqlite` can).
 */
export function readStatCacheTable(store: Store): StatCacheTable {
  const statement = store.stmt(TABLE_COLUMNS) as unknown as {
    setReturnArrays?: (on: boolean) => void;
    all(): unknown[];
  };
  if (typeof statement.setReturnArrays === "function") {
    // This statement's own text: no other caller of store.stmt() shares it.
    statement.setReturnArrays(true);
    return StatCacheTable.fromArrays(statement.all() as unknown[][]);
  }
  return StatCacheTable.fromArrays((statement.all() as StatCacheRow[]).map(rowArray));
}

/** A row in {@linkcode TABLE_COLUMNS}' order. */
function rowArray(r: StatCacheRow): unknown[] {
  return [r.path, r.size, r.mtime_ms, r.ctime_ms, r.ino, r.dev, r.mode, r.stamp_ms, r.blob];
}

/** The row of `path`, or undefined (one indexed read). */
export function readStatCacheRow(store: Store, path: string): StatCacheRow | undefined {
  return store.stmt("SELECT * FROM stat_cache WHERE path = ?").get(path) as
    | StatCacheRow
    | undefined;
}

/**
 * What a capture asks of the stat cache by row number: a
 * {@linkcode StatCacheTable} of every row, or {@linkcode readStatCacheRowView}'s
 * view of one.
 */
export interface StatCacheRows {
  /** The row number of `path`, or -1 when it has none. */
  row(path: string): number;
  /** Whether row `row` records exactly these stat fields. */
  matches(row: number, stat: StatFields): boolean;
  /** The size row `row` records. */
  sizeOf(row: number): number;
  /** When row `row` was written, on the store filesystem's clock. */
  stampMs(row: number): number;
  /** The blob id row `row` records. */
  blob(row: number): string;
}

/**
 * `path`'s row alone (one indexed read) as {@linkcode StatCacheRows}, row 0,
 * with no table built: for a capture that reads rows one by one.
 */
export function readStatCacheRowView(store: Store, path: string): StatCacheRows {
  const r = readStatCacheRow(store, path);
  return {
    row: (p) => (r !== undefined && p === r.path ? 0 : -1),
    matches: (_, stat) =>
      r !== undefined && r.size === stat.size && r.mtime_ms === stat.mtimeMs &&
      r.ctime_ms === stat.ctimeMs && r.ino === stat.ino && r.dev === stat.dev &&
      r.mode === stat.mode,
    sizeOf: () => r!.size,
    stampMs: () => r!.stamp_ms,
    blob: () => r!.blob,
  };
}

/** The paths that have a row. */
export function statCachePaths(store: Store): string[] {
  const rows = store.stmt("SELECT path FROM stat_cache").all() as { path: string }[];
  return rows.map((row) => row.path);
}

/** Records (or replaces) the row of `path`. */
export function upsertStatCacheRow(
  store: Store,
  path: string,
  stat: StatFields,
  blob: string,
  stampMs: number,
): void {
  store.stmt(UPSERT_CACHE).run(
    path,
    stat.size,
    stat.mtimeMs,
    stat.ctimeMs,
    stat.ino,
    stat.dev,
    stat.mode,
    blob,
    stampMs,
  );
}

/** Drops the row of `path`, if any. */
export function deleteStatCacheRow(store: Store, path: string): void {
  store.stmt("DELETE FROM stat_cache WHERE path = ?").run(path);
}

/**
 * The paths of every row below directory `dir` (`""`: every row), relative
 * to it: one range read.
 */
export function statCachePathsBelow(store: Store, dir: string): string[] {
  const rows =
    (dir === ""
      ? store.stmt("SELECT path FROM stat_cache").all()
      : store.stmt("SELECT path FROM stat_cache WHERE path > ? AND path < ?").all(
        `${dir}/`,
        `${dir}0`,
      )) as { path: string }[];
  const skip = dir === "" ? 0 : dir.length + 1;
  return rows.map(({ path }) => path.slice(skip));
}

/**
 * Empties the stat cache, so the next capture reads and scans every file
 * (an adopted store's cache describes another machine's files). Inside the
 * caller's write transaction.
 */
export function clearStatCache(store: Store): void {
  store.stmt("DELETE FROM stat_cache").run();
}

const UPSERT_CACHE =
  `INSERT INTO stat_cache (path, size, mtime_ms, ctime_ms, ino, dev, mode, blob, stamp_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms,
       ctime_ms = excluded.ctime_ms, ino = excluded.ino, dev = excluded.dev, mode = excluded.mode,
       blob = excluded.blob, stamp_ms = excluded.stamp_ms`;
