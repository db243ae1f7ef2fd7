/**
 * Private helpers around `node:sqlite`: error mapping and transactions.
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { BusyError, CtxsnapError, IntegrityError, IoError } from "../errors.ts";
import { countWait } from "./waits.ts";

/** Maps SQLite failures to typed errors: busy and locked become {@linkcode BusyError}. */
export function mapSqliteError(error: unknown, what: string): unknown {
  if (error instanceof CtxsnapError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/database is locked|SQLITE_BUSY|database table is locked/i.test(message)) {
    return new BusyError(`The store is busy: ${what} waited past the busy timeout`, {
      hint: "another ctxsnap process is using this store; retry, or raise CTXSNAP_BUSY_TIMEOUT_MS",
      cause: error,
    });
  }
  if (/disk I\/O error|database or disk is full|SQLITE_FULL|SQLITE_IOERR/i.test(message)) {
    return new IoError(`The store could not be written: ${what} failed (${message})`, {
      hint: "the disk may be full or failing; free space, then run `ctxsnap verify`",
      cause: error,
    });
  }
  if (/malformed|not a database|file is not a database/i.test(message)) {
    return new IntegrityError(`The store index is corrupt: ${message}`, {
      hint: "restore .ctxsnap/index.db from a backup, or publish what still verifies",
      cause: error,
    });
  }
  return error;
}

function begin(db: DatabaseSync, what: string): void {
  const since = performance.now();
  try {
    db.exec("BEGIN IMMEDIATE");
  } catch (error) {
    throw mapSqliteError(error, what);
  } finally {
    countWait(since);
  }
}

function rollback(db: DatabaseSync): void {
  try {
    if (db.isTransaction) db.exec("ROLLBACK");
  } catch {
    // The original error matters more than a failed rollback.
  }
}

/**
 * Runs `fn` inside `BEGIN IMMEDIATE … COMMIT`, rolling back on any throw.
 * Nested calls join the outer transaction.
 */
export function inTransaction<T>(db: DatabaseSync, what: string, fn: () => T): T {
  if (db.isTransaction) return fn();
  begin(db, what);
  try {
    const result = fn();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    rollback(db);
    throw mapSqliteError(error, what);
  }
}

/** Like {@linkcode inTransaction} for an async body (e.g. one that signs with WebCrypto). */
export async function inTransactionAsync<T>(
  db: DatabaseSync,
  what: string,
  fn: () => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return await fn();
  begin(db, what);
  try {
    const result = await fn();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    rollback(db);
    throw mapSqliteError(error, what);
  }
}

/** Opens a read transaction (deferred: the first read pins the snapshot). */
export function beginRead(db: DatabaseSync): void {
  try {
    db.exec("BEGIN DEFERRED");
  } catch (error) {
    throw mapSqliteError(error, "read");
  }
}

/** Ends a read transaction opened by {@linkcode beginRead}. */
export function endRead(db: DatabaseSync): void {
  try {
    if (db.isTransaction) db.exec("COMMIT");
  } catch {
    rollback(db);
  }
}
