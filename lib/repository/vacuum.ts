/**
 * Returning freed index pages to the filesystem after gc (docs/FORMAT.md
 * 8.1, "Disk comes back").
 *
 * A store created by this code has `auto_vacuum = INCREMENTAL`, so the pages
 * that gc's deletes put on SQLite's freelist are handed back in small steps,
 * each its own short write transaction (`PRAGMA incremental_vacuum(N)`): a
 * concurrent capture waits at most one step for the write lock, never the
 * whole vacuum. A store made before that (`auto_vacuum = NONE`) is switched
 * once with `VACUUM`, which rewrites the index under the write lock. Then a
 * `wal_checkpoint(TRUNCATE)` copies the result into `index.db`, which SQLite
 * truncates to its new page count.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { returnFreePages } from "./vacuum.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const result = returnFreePages(store);
 * if (result.freePagesAfter !== 0) throw new Error("no free page is left");
 * store.close();
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { BusyError } from "../errors.ts";
import { INDEX_FILE } from "./_names.ts";
import { mapSqliteError } from "./_sql.ts";
import type { Store } from "./store.ts";

/** Pages handed back per write transaction (4 MiB at the default 4 KiB page size). */
export const VACUUM_STEP_PAGES = 1024;

/** What {@linkcode returnFreePages} did to `index.db`. */
export interface VacuumResult {
  /** `incremental` (steps of {@linkcode VACUUM_STEP_PAGES}), `full` (the one-time switch), or `none` (nothing free). */
  mode: "incremental" | "full" | "none";
  /** Free pages in the index before. */
  freePagesBefore: number;
  /** Free pages in the index after. */
  freePagesAfter: number;
  /** Bytes of `index.db` plus its write-ahead log before. */
  indexBytesBefore: number;
  /** Bytes of `index.db` plus its write-ahead log after. */
  indexBytesAfter: number;
}

function pragmaNumber(store: Store, name: string): number {
  const row = store.db.prepare(`PRAGMA ${name}`).get() as Record<string, number> | undefined;
  return Number(row === undefined ? 0 : Object.values(row)[0] ?? 0);
}

/** Bytes of `index.db` and `index.db-wal` (0 for one that is absent). */
export function indexBytes(store: Store): number {
  let total = 0;
  for (const name of [INDEX_FILE, `${INDEX_FILE}-wal`]) {
    try {
      total += fs.lstatSync(path.join(store.dir, name)).size;
    } catch {
      // Absent (no WAL at rest).
    }
  }
  return total;
}

/** The index's `auto_vacuum` mode: 0 none, 1 full, 2 incremental. */
export function autoVacuumMode(store: Store): number {
  return pragmaNumber(store, "auto_vacuum");
}

/** Free pages on the index's freelist (what a vacuum can give back). */
export function freePages(store: Store): number {
  return pragmaNumber(store, "freelist_count");
}

/**
 * Hands the index's free pages back to the filesystem. Must not run inside a
 * transaction. A write lock not obtained within the busy timeout is a
 * {@linkcode BusyError} (exit 6): nothing is lost, and running gc again
 * finishes the job.
 */
export function returnFreePages(store: Store): VacuumResult {
  const before = freePages(store);
  const bytesBefore = indexBytes(store);
  let mode: VacuumResult["mode"] = "none";
  try {
    if (autoVacuumMode(store) !== 2) {
      // One-time switch of a store made before incremental vacuum: VACUUM
      // rebuilds the file with the new mode (and no free pages).
      mode = "full";
      store.db.exec("PRAGMA auto_vacuum = INCREMENTAL");
      store.db.exec("VACUUM");
    } else if (before > 0) {
      mode = "incremental";
      // Bounded steps: a concurrent writer waits for one step at most. The
      // loop ends because every step frees pages or finds none left.
      for (let left = before; left > 0;) {
        store.transaction("gc vacuum", () => {
          store.db.exec(`PRAGMA incremental_vacuum(${VACUUM_STEP_PAGES})`);
        });
        const now = freePages(store);
        if (now >= left) break;
        left = now;
      }
    }
    // Copy the WAL into index.db, which SQLite truncates to its page count.
    // Busy readers only delay this until a later checkpoint; not an error.
    store.db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get();
  } catch (error) {
    const mapped = mapSqliteError(error, "gc vacuum");
    if (mapped instanceof BusyError) {
      throw new BusyError(
        "gc removed the objects but could not return the index's free pages: the store was busy",
        { hint: "run `ctxsnap gc` again when the store is idle", cause: error },
      );
    }
    throw mapped;
  }
  return {
    mode,
    freePagesBefore: before,
    freePagesAfter: freePages(store),
    indexBytesBefore: bytesBefore,
    indexBytesAfter: indexBytes(store),
  };
}
