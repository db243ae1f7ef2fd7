/**
 * The store: one SQLite index (`index.db`, WAL) holding metadata and every
 * object; a blob over 1 MiB is kept as FastCDC chunks (older stores may
 * still hold `objects/ab/<id>` files, which are read).
 *
 * Every object's id is the SHA-256 hex of its bytes, and every read checks it
 * again (docs/DESIGN.md §3, invariant 1). A large blob read to a temp file is
 * chunked into rows and its hash checked before the row that names it commits.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const id = store.putBlob(new TextEncoder().encode("hello\n"));
 * if (!(new TextDecoder().decode(store.readBlob(id)) === "hello\n")) throw new Error("Example failed");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type * as NodeZlib from "node:zlib";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import {
  BusyError,
  ConflictError,
  CtxsnapError,
  errnoOf,
  IntegrityError,
  NoStoreError,
  NotFoundError,
  quote,
  StoreTrustError,
} from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import { createSha256, sha256Hex } from "../crypto/hash.ts";
import { builtin, deflateRawSync, getEnv, mayWrite } from "../runtime.ts";
import { beginRead, endRead, inTransaction, inTransactionAsync, mapSqliteError } from "./_sql.ts";
import { countWait } from "./waits.ts";

export { mapSqliteError };
import { MIGRATIONS, SCHEMA_VERSION } from "./schema.ts";
import { checkRegistered, checkSchema, checkStorePaths } from "./trust.ts";
import {
  COMPRESS_MIN_BYTES,
  DEFLATE_OPTIONS,
  packPays,
  sampleCompresses,
  TREE_DEFLATE_OPTIONS,
} from "./compression.ts";
import { noteTransient } from "./_reclaim.ts";
import type { TreeManifest } from "../format/tree.ts";
import { type DirTree, splitManifest } from "../format/dir_tree.ts";
import {
  checkDirTree,
  type CheckDirTreeOptions,
  type DirTreeFacts,
  expandDirTree,
  MAX_TREE_BYTES,
  parseTreeObject,
} from "../format/tree_object.ts";
import { Chunker } from "../format/fastcdc.ts";

/** Most expanded trees {@linkcode Store.keepingTrees} keeps at once. */
export const MAX_KEPT_TREES = 4;

/** Blobs up to this size live inside the SQLite index; larger ones are files. */
export const INLINE_BLOB_MAX: number = 1024 * 1024;
let zlibModule: typeof NodeZlib | undefined;
/** `node:zlib`, loaded on first use (it is slow to load under Deno). */
function zlib(): typeof NodeZlib {
  return zlibModule ??= builtin<typeof NodeZlib>("node:zlib");
}

export { COMPRESS_MIN_BYTES, packPays } from "./compression.ts";
/** The store format tag recorded in `meta.format`. */
export const STORE_FORMAT = "ctxsnap-store/1";
export { INDEX_FILE } from "./_names.ts";
import { INDEX_FILE } from "./_names.ts";
/** Default busy timeout in milliseconds (override with `CTXSNAP_BUSY_TIMEOUT_MS`). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/** Options for {@linkcode Store.open}. */
export interface StoreOpenOptions {
  /** Open the index read-only (no migration, no writes). */
  readOnly?: boolean;
  /**
   * Require the store to be registered as this user's in this config
   * directory (created by `init` or adopted, see `trust.ts`). The command
   * line always passes its config directory; without it only the path and
   * schema checks apply.
   */
  registry?: string;
  /**
   * With `readOnly`: a brief look (a few queries, then closed), opened
   * without switching the index to WAL (see {@linkcode Store.open}).
   */
  brief?: boolean;
  /**
   * The workspace the store must name (a store found by walking up must
   * belong to the directory holding it): checked right after the schema,
   * before anything is written, so one open both checks and serves.
   */
  owner?: string;
}

function busyTimeout(): number {
  const raw = getEnv("CTXSNAP_BUSY_TIMEOUT_MS");
  const value = raw === undefined ? NaN : Number(raw);
  return Number.isSafeInteger(value) && value >= 0 ? value : DEFAULT_BUSY_TIMEOUT_MS;
}

/**
 * The first string after every string starting with `prefix` (its last
 * character incremented: `remote:` gives `remote;`), so `key >= prefix AND
 * key < prefixEnd(prefix)` selects the keys with that prefix by index. The
 * prefix must be non-empty and end in an ASCII character.
 */
function prefixEnd(prefix: string): string {
  const last = prefix.charCodeAt(prefix.length - 1);
  if (!(last >= 0 && last < 0x7f)) {
    throw new RangeError(`A key prefix must end in an ASCII character: ${quote(prefix)}`);
  }
  return prefix.slice(0, -1) + String.fromCharCode(last + 1);
}

/** An open store. Close it with {@linkcode Store.close}. */
export class Store {
  /** Absolute path of the store directory. */
  readonly dir: string;
  /** The SQLite index. */
  readonly db: DatabaseSync;
  /** Absolute path of the workspace this store captures. */
  readonly workspaceRoot: string;
  /** Whether the index was opened read-only. */
  readonly readOnly: boolean;
  private readonly statements = new Map<string, StatementSync>();
  /** A read-only open of a writable index, running WAL with writes refused (see `Store.open`). */
  private readonly walReader: boolean;
  /** Asynchronous readers sharing this connection's read transaction. */
  private readers = 0;
  private readersDone: Promise<void> = Promise.resolve();
  private releaseReaders: () => void = () => {};
  /** Whether a write transaction of this object is open. */
  private inWrite = false;
  /** `cache_size` before {@linkcode Store.widenPageCache}, until the transaction ends. */
  private pageCacheDefault: number | null = null;
  /** The connection {@linkcode Store.objectGone} reads the latest state on. */
  private latest: DatabaseSync | undefined;

  private static opened = 0;

  /**
   * How many times this process has opened or initialised a store: the
   * seam that pins how often each command opens one
   * (`tests/workspace/move_engine_test.ts`).
   */
  static get opens(): number {
    return Store.opened;
  }

  private constructor(dir: string, db: DatabaseSync, readOnly: boolean, walReader = false) {
    this.dir = dir;
    this.db = db;
    this.readOnly = readOnly;
    this.walReader = walReader;
    const recorded = this.getMeta("workspace_root");
    if (recorded === null) {
      throw new IntegrityError(`The store at ${quote(dir)} does not name its workspace`);
    }
    this.workspaceRoot = path.resolve(dir, recorded);
    const format = this.getMeta("format");
    if (format !== STORE_FORMAT) {
      throw new CtxsnapError(
        `The store at ${quote(dir)} has format ${
          quote(format)
        }; this ctxsnap reads ${STORE_FORMAT}`,
        "failure",
        {
          hint: "upgrade ctxsnap to open this store",
        },
      );
    }
  }

  /**
   * Creates a store in `dir` for the workspace at `workspace` and opens it.
   * Initialising an existing store for the same workspace is harmless and
   * returns it; one recorded for another workspace is refused.
   */
  static init(dir: string, workspace: string): Store {
    Store.opened += 1;
    const storeDir = path.resolve(dir);
    const root = path.resolve(workspace);
    // An existing directory (or one planted as a symlink) is checked before
    // anything is created inside it, and one ctxsnap did not make is never
    // taken over: without an index it may hold only what an interrupted
    // init made (empty `objects/` and `tmp/`).
    checkStorePaths(storeDir, { requireIndex: false });
    if (!fs.existsSync(path.join(storeDir, INDEX_FILE))) refuseForeignFolder(storeDir);
    fs.mkdirSync(path.join(storeDir, "objects"), { recursive: true, mode: 0o700 });
    fs.mkdirSync(path.join(storeDir, "tmp"), { recursive: true, mode: 0o700 });
    Store.createIndexFile(storeDir);
    checkStorePaths(storeDir);
    const db = Store.connect(storeDir, false);
    try {
      checkSchema(db, Store.userVersion(db), storeDir);
      // Only before the first table exists can the mode be set without a VACUUM.
      const empty = db.prepare("SELECT count(*) AS n FROM sqlite_master").get() as { n: number };
      if (Number(empty.n) === 0) db.exec("PRAGMA auto_vacuum = INCREMENTAL");
      Store.prepareWriter(db);
      Store.migrate(db);
      const relative = path.relative(storeDir, root);
      const recorded = path.dirname(storeDir) === root ? ".." : relative === "" ? "." : root;
      inTransaction(db, "init", () => {
        const insert = db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)");
        insert.run("workspace_root", recorded);
        insert.run("created_at", new Date().toISOString());
        insert.run("format", STORE_FORMAT);
      });
    } catch (error) {
      db.close();
      throw mapSqliteError(error, "init");
    }
    const store = new Store(storeDir, db, false);
    if (store.workspaceRoot !== root) {
      store.close();
      throw new ConflictError(
        `The store at ${quote(storeDir)} already belongs to the workspace ${
          quote(store.workspaceRoot)
        }`,
        { hint: "use another --store for this workspace" },
      );
    }
    return store;
  }

  /**
   * Opens an existing store; throws {@linkcode NoStoreError} if `dir` holds
   * none. Before any query or write, every store path is checked
   * ({@linkcode checkStorePaths}) and, with `registry`, the store must be
   * registered as this user's; the schema is then checked against the one
   * its version should have. Any failure is a `StoreTrustError` (exit 1).
   */
  static open(dir: string, options: StoreOpenOptions = {}): Store {
    Store.opened += 1;
    const storeDir = path.resolve(dir);
    if (!fs.existsSync(path.join(storeDir, INDEX_FILE))) {
      throw new NoStoreError(`No store at ${quote(storeDir)}`, {
        hint: "run `ctxsnap init` in the workspace, or pass --store DIR",
      });
    }
    checkStorePaths(storeDir);
    if (options.registry !== undefined) checkRegistered(options.registry, storeDir);
    const readOnly = options.readOnly ?? false;
    // A reader of a registered store whose index it may write runs WAL like
    // the writers, with writes refused (`query_only`), so its read
    // transaction never holds a writer back (DESIGN.md §3.4). Any other
    // (read-only media, a sandbox without write permission, a foreign store
    // being inspected by `init --adopt --dry-run`) is opened read-only, in
    // whatever journal mode it is in, and never changed.
    if (
      readOnly && options.brief !== true && options.registry !== undefined &&
      Store.writable(storeDir)
    ) {
      return Store.openWith(storeDir, false, true, options.owner);
    }
    return Store.openWith(storeDir, readOnly, false, options.owner);
  }

  /** Whether this process may write the index and create its `-wal` and `-shm` files. */
  private static writable(storeDir: string): boolean {
    const index = path.join(storeDir, INDEX_FILE);
    if (!mayWrite(storeDir) || !mayWrite(index)) return false;
    try {
      fs.accessSync(storeDir, fs.constants.W_OK);
      fs.accessSync(index, fs.constants.W_OK);
      return true;
    } catch {
      return false;
    }
  }

  /** Opens the checked store `storeDir`; see {@linkcode Store.open}. */
  private static openWith(
    storeDir: string,
    readOnly: boolean,
    walReader: boolean,
    owner?: string,
  ): Store {
    let db = Store.connect(storeDir, readOnly);
    try {
      let version: number;
      try {
        version = Store.userVersion(db);
      } catch (error) {
        // A writer killed mid-transaction leaves a WAL that needs recovery,
        // which a read-only connection may not run. Let a short read-write
        // open recover it (where the files are writable), then read again.
        if (!readOnly || !/readonly|read-only/i.test(String((error as Error)?.message))) {
          throw error;
        }
        db.close();
        try {
          const writer = Store.connect(storeDir, false);
          Store.userVersion(writer);
          writer.close();
        } catch {
          // Truly read-only media: report the original problem below.
        }
        db = Store.connect(storeDir, true);
        version = Store.userVersion(db);
      }
      if (version > SCHEMA_VERSION) {
        throw new CtxsnapError(
          `The store at ${
            quote(storeDir)
          } has schema version ${version}; this ctxsnap knows up to ${SCHEMA_VERSION}`,
          "failure",
          { hint: "upgrade ctxsnap to open this store" },
        );
      }
      checkSchema(db, version, storeDir);
      if (owner !== undefined) Store.checkOwner(db, storeDir, owner);
      if (walReader) {
        db.exec("PRAGMA query_only = ON");
        if (Store.tryWal(db)) return new Store(storeDir, db, true, true);
        // Read-only media after all, or a writer mid-transaction in
        // rollback-journal mode: read as before, without waiting for it.
        db.close();
        return Store.openWith(storeDir, true, false, owner);
      }
      if (!readOnly) Store.prepareWriter(db);
      if (version < SCHEMA_VERSION && !readOnly) Store.migrate(db);
      return new Store(storeDir, db, readOnly);
    } catch (error) {
      db.close();
      throw mapSqliteError(error, "open");
    }
  }

  /** Refuses a store whose recorded workspace is not `owner` (read only; nothing written). */
  private static checkOwner(db: DatabaseSync, storeDir: string, owner: string): void {
    const row = db.prepare("SELECT value FROM meta WHERE key = 'workspace_root'").get() as
      | { value: string }
      | undefined;
    const root = row === undefined ? null : path.resolve(storeDir, row.value);
    if (root === path.resolve(owner)) return;
    throw new IntegrityError(
      `The store found at ${JSON.stringify(storeDir)} names another workspace, ${
        JSON.stringify(root ?? "")
      }`,
      {
        hint:
          "a store found by walking up must belong to the directory that holds it; pass --store DIR to use it anyway",
      },
    );
  }

  /** Opens the index without writing to it (the schema is checked before any write). */
  private static connect(storeDir: string, readOnly: boolean): DatabaseSync {
    const file = path.join(storeDir, INDEX_FILE);
    try {
      const db = new DatabaseSync(file, { readOnly });
      db.exec(`PRAGMA busy_timeout = ${busyTimeout()}`);
      // No function with side effects may run from the schema (defence in depth).
      db.exec("PRAGMA trusted_schema = OFF");
      db.exec("PRAGMA foreign_keys = ON");
      return db;
    } catch (error) {
      throw mapSqliteError(error, "open");
    }
  }

  /** Switches a writer's connection to WAL and full synchronous commits. */
  private static prepareWriter(db: DatabaseSync): void {
    try {
      Store.enterWal(db);
      db.exec("PRAGMA synchronous = FULL");
    } catch (error) {
      throw mapSqliteError(error, "open");
    }
  }

  /** Creates an empty index file readable and writable by its owner only (SQLite fills it). */
  private static createIndexFile(storeDir: string): void {
    try {
      const fd = fs.openSync(
        path.join(storeDir, INDEX_FILE),
        fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY |
          fs.constants.O_NOFOLLOW,
        0o600,
      );
      fs.closeSync(fd);
    } catch (error) {
      if (errnoOf(error) !== "EEXIST") throw error;
    }
  }

  /**
   * Switches the index to WAL mode. That needs an exclusive lock, for which
   * SQLite does not call the busy handler, so retry until the busy timeout.
   */
  private static enterWal(db: DatabaseSync): void {
    const deadline = Date.now() + busyTimeout();
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const since = performance.now();
    try {
      for (;;) {
        try {
          db.exec("PRAGMA journal_mode = WAL");
          return;
        } catch (error) {
          const mapped = mapSqliteError(error, "open");
          if (!(mapped instanceof BusyError) || Date.now() >= deadline) throw mapped;
          Atomics.wait(pause, 0, 0, 10);
        }
      }
    } finally {
      countWait(since);
    }
  }

  /** Switches a reader's connection to WAL if that can be done at once; whether it is in WAL. */
  private static tryWal(db: DatabaseSync): boolean {
    try {
      db.exec("PRAGMA busy_timeout = 0");
      const row = db.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode?: string };
      return row.journal_mode === "wal";
    } catch {
      return false;
    } finally {
      db.exec(`PRAGMA busy_timeout = ${busyTimeout()}`);
    }
  }

  /** The schema version recorded in the index (`PRAGMA user_version`). */
  private static userVersion(db: DatabaseSync): number {
    const row = db.prepare("PRAGMA user_version").get() as { user_version: number };
    return row.user_version;
  }

  /** Applies the migrations the index has not had yet, in one transaction. */
  private static migrate(db: DatabaseSync): void {
    inTransaction(db, "migrate", () => {
      const from = Store.userVersion(db);
      for (let version = from; version < MIGRATIONS.length; version++) {
        db.exec(MIGRATIONS[version]!);
        db.exec(`PRAGMA user_version = ${version + 1}`);
      }
    });
  }

  /** A prepared statement for `sql`, prepared once per open store. */
  stmt(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** Closes the index. */
  close(): void {
    if (this.latest?.isOpen) this.latest.close();
    if (!this.db.isOpen) return;
    if (!this.readOnly || this.walReader) {
      // Leave the index in rollback-journal mode at rest when we are the last
      // user, so read-only opens (verify on read-only media) need no -wal/-shm.
      try {
        this.db.exec("PRAGMA busy_timeout = 0");
        this.db.exec("PRAGMA journal_mode = DELETE");
      } catch {
        // Another connection is open: it stays in WAL mode, which is fine.
      }
    }
    this.db.close();
  }

  /**
   * Runs `fn` in one write transaction (`BEGIN IMMEDIATE`). Refused while an
   * asynchronous read ({@linkcode Store.readAsync}) holds this connection's
   * read transaction: the write would join it and commit when it ends.
   */
  transaction<T>(what: string, fn: () => T): T {
    if (this.readers > 0 && !this.inWrite) {
      throw new Error(`${what}: a write may not start inside a read transaction on this store`);
    }
    this.inWrite = true;
    try {
      return inTransaction(this.db, what, fn);
    } finally {
      this.inWrite = this.db.isTransaction;
      this.restorePageCache();
    }
  }

  /**
   * Runs an async `fn` in one write transaction; nothing else may use the
   * store meanwhile. It first waits for this connection's asynchronous
   * readers ({@linkcode Store.readAsync}) to finish.
   */
  async transactionAsync<T>(what: string, fn: () => Promise<T>): Promise<T> {
    while (this.readers > 0 && !this.inWrite) await this.readersDone;
    const outer = this.inWrite;
    this.inWrite = true;
    try {
      return await inTransactionAsync(this.db, what, fn);
    } finally {
      this.inWrite = outer;
      this.restorePageCache();
    }
  }

  /**
   * Runs `fn` against one committed state of the store: every query it makes
   * reads the same snapshot of the index (a deferred `BEGIN`; SQLite's WAL
   * pins the snapshot at the first read, and writers go on meanwhile).
   * Inside a transaction already open on this connection it joins it. Every
   * reader that makes more than one query goes through this or
   * {@linkcode Store.readAsync} (docs/DESIGN.md §3.4). Object files are not in
   * the snapshot: a file gc unlinked after the snapshot was taken reads as
   * missing, which {@linkcode Store.objectGone} tells apart from damage.
   */
  read<T>(fn: () => T): T {
    if (this.db.isTransaction) return fn();
    beginRead(this.db);
    try {
      return fn();
    } finally {
      endRead(this.db);
    }
  }

  /**
   * {@linkcode Store.read} for an asynchronous reader (one that signs,
   * verifies signatures or talks to a remote between its queries). Readers
   * that overlap on this connection share one read transaction, which ends
   * when the last of them does; a write transaction on this connection waits
   * for them ({@linkcode Store.transactionAsync}), so `fn` itself must not
   * write.
   */
  async readAsync<T>(fn: () => Promise<T>): Promise<T> {
    if (this.db.isTransaction && this.readers === 0) return await fn(); // inside a write
    if (this.readers === 0) {
      beginRead(this.db);
      this.readersDone = new Promise((resolve) => (this.releaseReaders = resolve));
    }
    this.readers++;
    try {
      return await fn();
    } finally {
      if (--this.readers === 0) {
        endRead(this.db);
        this.releaseReaders();
      }
    }
  }

  /**
   * Whether object `id` is absent from the store's latest committed state
   * (read outside any snapshot this connection holds, on a connection of its
   * own): a reader pinned to an older state that finds an object's file
   * missing uses it to tell an object gc has since removed (its row goes
   * first, its file after) from a damaged store.
   */
  objectGone(id: string): boolean {
    const latest = this.latestConnection();
    const row = latest.prepare("SELECT 1 FROM objects WHERE id = ?").get(id);
    return row === undefined;
  }

  /**
   * Re-checks a blob against the latest committed state (see
   * {@linkcode Store.objectGone}): true when its row is there and its bytes
   * hash to its id, or when it is gone; false only when its bytes are
   * missing or wrong while the latest state names it, with its row unchanged
   * from before the check to after it (a concurrent gc and re-capture of the
   * same content is not damage). Busy (exit 6) if it keeps changing.
   */
  blobSoundNow(id: string): boolean {
    const latest = this.latestConnection();
    const rowOf = () =>
      latest.prepare("SELECT created_at FROM objects WHERE id = ?").get(id) as
        | { created_at: number }
        | undefined;
    for (let round = 0; round < 3; round++) {
      const before = rowOf();
      if (before === undefined) return true;
      const view = new Store(this.dir, latest, true);
      if (view.checkBlob(id)) return true;
      const after = rowOf();
      if (after === undefined) return true;
      if (after.created_at === before.created_at) return false;
    }
    throw new BusyError(
      `The store is busy: blob ${quote(id)} kept changing while it was checked`,
      { hint: "retry when the store is quieter" },
    );
  }

  /** A second connection that always reads the latest committed state. */
  private latestConnection(): DatabaseSync {
    if (this.latest === undefined || !this.latest.isOpen) {
      this.latest = Store.connect(this.dir, true);
    }
    return this.latest;
  }

  /** Reads a store setting, or `null`. */
  getMeta(key: string): string | null {
    const row = this.stmt("SELECT value FROM meta WHERE key = ?").get(key) as
      | { value: string }
      | undefined;
    return row?.value ?? null;
  }

  /** Writes a store setting. */
  setMeta(key: string, value: string): void {
    this.stmt(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    )
      .run(key, value);
  }

  /**
   * Every store setting whose key starts with `prefix` (non-empty, ending in
   * an ASCII character), in key order.
   */
  metaWithPrefix(prefix: string): { key: string; value: string }[] {
    return this.stmt("SELECT key, value FROM meta WHERE key >= ? AND key < ? ORDER BY key")
      .all(prefix, prefixEnd(prefix)) as { key: string; value: string }[];
  }

  /** Deletes a store setting (nothing when absent). */
  deleteMeta(key: string): void {
    this.stmt("DELETE FROM meta WHERE key = ?").run(key);
  }

  /**
   * Deletes every store setting whose key starts with `prefix` (non-empty,
   * ending in an ASCII character).
   */
  deleteMetaWithPrefix(prefix: string): void {
    this.stmt("DELETE FROM meta WHERE key >= ? AND key < ?").run(prefix, prefixEnd(prefix));
  }

  /**
   * Lets SQLite keep up to `kib` KiB of pages in memory (`PRAGMA cache_size`,
   * default 2 MiB) until the write transaction under way ends; outside one it
   * does nothing. A first capture inserts tens of thousands of objects in one
   * transaction: with the default cache the object-id index (random keys)
   * does not fit, and its pages are spilled to the WAL and read back again
   * and again. Pages are allocated only as they are used. The default comes
   * back after the commit (before it, the smaller cache would spill the
   * transaction's pages to the WAL once more).
   */
  widenPageCache(kib: number): void {
    if (!this.db.isTransaction) return;
    this.pageCacheDefault ??=
      (this.stmt("PRAGMA cache_size").get() as { cache_size: number }).cache_size;
    this.db.exec(`PRAGMA cache_size = ${-Math.max(1, Math.floor(kib))}`);
  }

  /** After a write transaction: gives back what {@linkcode Store.widenPageCache} took. */
  private restorePageCache(): void {
    if (this.pageCacheDefault === null || !this.db.isOpen || this.db.isTransaction) return;
    const before = this.pageCacheDefault;
    this.pageCacheDefault = null;
    this.db.exec(`PRAGMA cache_size = ${Math.trunc(before)}`);
  }

  /** Whether an object with this id is recorded. */
  hasObject(id: string): boolean {
    return this.stmt("SELECT 1 FROM objects WHERE id = ?").get(id) !== undefined;
  }

  /** The recorded size of an object, unverified, or null when it is not recorded. */
  objectSize(id: string): number | null {
    const row = this.stmt("SELECT size FROM objects WHERE id = ?").get(id) as
      | { size: number }
      | undefined;
    return row?.size ?? null;
  }

  /** Every recorded object's id and kind (`blob` or `tree`), in id order, unverified. */
  listObjects(): { id: string; kind: string }[] {
    return this.stmt("SELECT id, kind FROM objects ORDER BY id").all() as {
      id: string;
      kind: string;
    }[];
  }

  /** The ids of the blobs stored as chunks (encoding `chunks`), unverified. */
  chunkedBlobIds(): Set<string> {
    const rows = this.stmt("SELECT id FROM objects WHERE kind = 'blob' AND encoding = 'chunks'")
      .all() as { id: string }[];
    return new Set(rows.map((row) => row.id));
  }

  /** Path of the file holding a large blob. */
  objectPath(id: string): string {
    return path.join(this.dir, "objects", id.slice(0, 2), id);
  }

  /** A fresh temp file path inside the store (same filesystem as objects). */
  tempPath(): string {
    const dir = path.join(this.dir, "tmp");
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return path.join(dir, `t-${crypto.randomUUID()}`);
  }

  /** Stores bytes as a blob and returns its id; storing existing content is a no-op. */
  putBlob(data: Uint8Array, knownId?: string): string {
    const id = knownId ?? sha256Hex(data);
    if (data.byteLength > INLINE_BLOB_MAX) {
      if (this.hasObject(id)) return id;
      const chunks: string[] = [];
      const chunker = new Chunker((chunk) => chunks.push(this.putBlob(chunk.slice())));
      chunker.push(data);
      chunker.finish();
      this.putChunkedBlob(id, data.byteLength, chunks);
    } else {
      this.insertObject(id, "blob", data.byteLength, "raw", data);
    }
    return id;
  }

  /**
   * Adopts a fully written, fsynced temp file (see {@linkcode Store.tempPath})
   * as the blob `id` of `size` bytes: its content-defined chunks (FORMAT.md
   * 8.6) are stored as inline blobs, re-hashed on the way, and the file is
   * removed. The caller has hashed it while writing; a file that no longer
   * hashes to `id` is refused. Memory stays bounded whatever the size.
   */
  adoptBlobFile(tempFile: string, id: string, size: number): void {
    try {
      if (this.hasObject(id)) return;
      const chunks: string[] = [];
      const hasher = createSha256();
      let total = 0;
      const chunker = new Chunker((chunk) => chunks.push(this.putBlob(chunk.slice())));
      const fd = fs.openSync(tempFile, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      try {
        const buffer = new Uint8Array(1024 * 1024);
        for (;;) {
          const n = fs.readSync(fd, buffer, 0, buffer.byteLength, null);
          if (n === 0) break;
          total += n;
          hasher.update(buffer.subarray(0, n));
          chunker.push(buffer.subarray(0, n));
        }
      } finally {
        fs.closeSync(fd);
      }
      chunker.finish();
      if (total !== size || hasher.digestHex() !== id) {
        throw new IntegrityError(
          `The temp file for blob ${quote(id)} changed before it was stored`,
        );
      }
      this.putChunkedBlob(id, size, chunks);
    } finally {
      fs.rmSync(tempFile, { force: true });
    }
  }

  /**
   * Stores an inline blob of `size` bytes whose id the caller computed, as
   * `stored`: its raw bytes (`raw`) or their DEFLATE compression made by the
   * shared rule of `compression.ts` (`deflate`). Storing existing content is a no-op.
   */
  putPackedBlob(id: string, size: number, how: "raw" | "deflate", stored: Uint8Array): void {
    this.insertRow(id, "blob", size, how, stored);
  }

  /** Stores an object, deflated when that pays (`compression.ts`); existing content is a no-op. */
  private insertObject(
    id: string,
    kind: "blob" | "tree",
    size: number,
    encoding: "raw" | "file",
    data: Uint8Array | null,
  ): void {
    let stored = data;
    let how: "raw" | "deflate" | "file" = encoding;
    const options = kind === "tree" ? TREE_DEFLATE_OPTIONS : DEFLATE_OPTIONS;
    if (
      data !== null && data.byteLength >= COMPRESS_MIN_BYTES &&
      (kind === "tree" ||
        sampleCompresses(data, (sample) => deflateRawSync(sample, options.level)))
    ) {
      const packed = deflateRawSync(data, options.level);
      if (packPays(data.byteLength, packed.byteLength)) {
        stored = packed;
        how = "deflate";
      }
    }
    this.insertRow(id, kind, size, how, stored);
  }

  /** Inserts an object row unless one with the same id exists. */
  private insertRow(
    id: string,
    kind: "blob" | "tree",
    size: number,
    encoding: "raw" | "deflate" | "file" | "chunks",
    data: Uint8Array | null,
  ): void {
    this.stmt(
      "INSERT OR IGNORE INTO objects (id, kind, size, encoding, data, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    ).run(id, kind, size, encoding, data, Date.now());
    noteTransient(data?.byteLength ?? 0);
  }

  /** The bytes of an inline object (raw or inflated), bounded by its recorded size. */
  private inlineBytes(
    id: string,
    row: { size: number; encoding: string; data: Uint8Array | null },
  ): Uint8Array {
    const data = row.data ?? new Uint8Array();
    if (row.encoding === "raw") return data;
    try {
      const out = zlib().inflateRawSync(data, { maxOutputLength: Math.max(1, row.size) });
      noteTransient(out.byteLength);
      return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
    } catch (error) {
      throw new IntegrityError(
        `Object ${quote(id)} is corrupt: its compressed bytes do not inflate`,
        {
          cause: error,
        },
      );
    }
  }

  /**
   * The row of object `id`, refusing a malformed id. The same bytes can be a
   * blob and a tree (a file holding a tree object's bytes, a directory whose
   * tree equals a file's content), and the row keeps the kind it was first
   * stored as: a row of the other kind is read too when its bytes are inline,
   * where every read re-hashes them (and a tree read parses and validates
   * them). One stored as a file or as chunks is refused as the wrong kind.
   */
  private objectRow(
    id: string,
    kind: "blob" | "tree",
  ): { size: number; encoding: string; data: Uint8Array | null } {
    if (!isHex(id, 64)) throw new IntegrityError(`Object id ${quote(id)} is not a SHA-256 hex id`);
    const row = this.stmt("SELECT kind, size, encoding, data FROM objects WHERE id = ?").get(
      id,
    ) as
      | { kind: string; size: number; encoding: string; data: Uint8Array | null }
      | undefined;
    if (row === undefined) throw new NotFoundError(`The store has no ${kind} ${quote(id)}`);
    noteTransient(row.data?.byteLength ?? 0);
    if (row.kind !== kind && row.encoding !== "raw" && row.encoding !== "deflate") {
      throw new IntegrityError(`Object ${quote(id)} is a ${row.kind}, not a ${kind}`);
    }
    return row;
  }

  /**
   * Streams a blob's bytes to `onChunk`, then checks its hash and size.
   * Throws {@linkcode IntegrityError} after the last chunk if they differ, so
   * a caller must not commit what it wrote until this returns.
   */
  streamBlob(id: string, onChunk: (chunk: Uint8Array) => void): number {
    let total = 0;
    for (const piece of this.blobPieces(id)) {
      total += piece.byteLength;
      onChunk(piece);
    }
    return total;
  }

  /**
   * A blob's bytes as a sequence of pieces (each valid until the next is
   * taken); after the last piece the hash and size are checked and a
   * mismatch throws {@linkcode IntegrityError}, so a caller must not commit
   * what it wrote until the iteration ends. A chunked blob (encoding
   * `chunks`) yields its chunks in order, each verified as a blob itself.
   */
  *blobPieces(
    id: string,
    asChunk = false,
    verified?: ReadonlyMap<string, boolean>,
  ): Generator<Uint8Array, void, undefined> {
    const row = this.objectRow(id, "blob");
    const corrupt = () =>
      new IntegrityError(`Blob ${quote(id)} is corrupt: its bytes do not hash to its id`);
    if (row.encoding === "chunks") {
      if (asChunk) {
        throw new IntegrityError(`Blob ${quote(id)} is corrupt: a chunk is itself chunked`);
      }
      const chunks = this.chunksOf(id, row.data);
      const hasher = createSha256();
      let total = 0;
      for (const chunk of chunks) {
        const pieces = verified?.get(chunk) === true
          ? this.#chunkBytes(chunk)
          : this.blobPieces(chunk, true);
        for (const piece of pieces) {
          total += piece.byteLength;
          if (total > row.size) throw corrupt();
          hasher.update(piece);
          yield piece;
        }
      }
      if (total !== row.size || hasher.digestHex() !== id) throw corrupt();
      return;
    }
    if (row.encoding !== "file") {
      const data = this.inlineBytes(id, row);
      if (data.byteLength !== row.size || sha256Hex(data) !== id) throw corrupt();
      yield data;
      return;
    }
    const hasher = createSha256();
    let total = 0;
    let fd: number;
    try {
      fd = fs.openSync(this.objectPath(id), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    } catch (error) {
      throw new IntegrityError(`Blob ${quote(id)} is missing its object file`, { cause: error });
    }
    try {
      const buffer = new Uint8Array(1024 * 1024);
      for (;;) {
        const n = fs.readSync(fd, buffer, 0, buffer.byteLength, null);
        if (n === 0) break;
        total += n;
        if (total > row.size) break;
        const chunk = buffer.subarray(0, n);
        hasher.update(chunk);
        yield chunk;
      }
    } finally {
      fs.closeSync(fd);
    }
    if (total !== row.size || hasher.digestHex() !== id) throw corrupt();
  }

  /**
   * The bytes of a chunk this process has just verified (see
   * {@linkcode Store.checkBlob}), not re-hashed: the whole blob's hash,
   * checked by the caller, still covers them.
   */
  *#chunkBytes(id: string): Generator<Uint8Array, void, undefined> {
    const row = this.objectRow(id, "blob");
    if (row.encoding !== "raw" && row.encoding !== "deflate") {
      throw new IntegrityError(`Blob ${quote(id)} is corrupt: a chunk is not stored inline`);
    }
    yield this.inlineBytes(id, row);
  }

  /** Parses a chunked blob's list of chunk ids (32 bytes each), refusing a malformed one. */
  private chunksOf(id: string, data: Uint8Array | null): string[] {
    if (data === null || data.byteLength === 0 || data.byteLength % 32 !== 0) {
      throw new IntegrityError(`Blob ${quote(id)} is corrupt: its chunk list is malformed`);
    }
    const ids: string[] = [];
    for (let at = 0; at < data.byteLength; at += 32) {
      let hex = "";
      for (const byte of data.subarray(at, at + 32)) hex += byte.toString(16).padStart(2, "0");
      ids.push(hex);
    }
    return ids;
  }

  /**
   * The chunk ids of a chunked blob, unverified (gc keeps them with the
   * blob); null for a blob stored whole or absent.
   */
  blobChunks(id: string): string[] | null {
    const row = this.stmt("SELECT encoding, data FROM objects WHERE id = ? AND kind = 'blob'")
      .get(id) as { encoding: string; data: Uint8Array | null } | undefined;
    if (row === undefined || row.encoding !== "chunks") return null;
    return this.chunksOf(id, row.data);
  }

  /**
   * Records the blob `id` of `size` bytes as the concatenation of the stored
   * blobs `chunks` (docs/FORMAT.md 8.6). The caller hashed the whole content
   * while chunking it; every chunk must already be stored. Storing existing
   * content is a no-op.
   */
  putChunkedBlob(id: string, size: number, chunks: readonly string[]): void {
    const list = new Uint8Array(chunks.length * 32);
    chunks.forEach((chunk, i) => {
      if (!isHex(chunk, 64) || !this.hasObject(chunk)) {
        throw new IntegrityError(`Chunk ${quote(chunk)} of blob ${quote(id)} is not stored`);
      }
      for (let j = 0; j < 32; j++) list[i * 32 + j] = parseInt(chunk.slice(2 * j, 2 * j + 2), 16);
    });
    this.insertRow(id, "blob", size, "chunks", list);
  }

  /**
   * The stored row of an inline blob, unverified: its encoding, recorded
   * size and stored bytes; null when the blob is file-backed or absent. For
   * callers that inflate and hash elsewhere and must then compare the digest
   * with `id` (see `zlib_pool.ts`); anything else uses
   * {@linkcode Store.streamBlob}, which verifies.
   */
  storedInlineBlob(
    id: string,
  ): { encoding: "raw" | "deflate"; size: number; data: Uint8Array } | null {
    const row = this.stmt("SELECT kind, size, encoding, data FROM objects WHERE id = ?").get(id) as
      | { kind: string; size: number; encoding: string; data: Uint8Array | null }
      | undefined;
    if (row === undefined || row.kind !== "blob" || row.data === null) return null;
    noteTransient(row.data.byteLength);
    if (row.encoding !== "raw" && row.encoding !== "deflate") return null;
    return { encoding: row.encoding, size: row.size, data: row.data };
  }

  /** Reads a whole blob into memory, verified. */
  readBlob(id: string): Uint8Array {
    const chunks: Uint8Array[] = [];
    const total = this.streamBlob(id, (chunk) => chunks.push(chunk.slice()));
    if (chunks.length === 1) return chunks[0]!;
    const out = new Uint8Array(total);
    let offset = 0;
    for (const chunk of chunks) {
      out.set(chunk, offset);
      offset += chunk.byteLength;
    }
    return out;
  }

  /**
   * Re-reads a blob and returns whether it is present and hashes to its id.
   * A chunked blob's chunks are each checked too, except those `verified`
   * maps to true: chunks this same pass already re-hashed (so `verify --all`
   * hashes each chunk once for itself and once as part of the whole file).
   * The whole blob's hash and size are always checked.
   */
  checkBlob(id: string, verified?: ReadonlyMap<string, boolean>): boolean {
    try {
      for (const _ of this.blobPieces(id, false, verified)) { /* hashed by blobPieces */ }
      return true;
    } catch (error) {
      if (error instanceof CtxsnapError) return false;
      throw error;
    }
  }

  /**
   * Stores a validated flat manifest as directory trees (tree version 2,
   * `dir_tree.ts`) and returns the root tree's id. Directories already
   * stored are not written again.
   */
  putTree(tree: TreeManifest): string {
    return splitManifest(tree, (object) => this.putTreeBytes(object.id, object.bytes)).rootId;
  }

  /**
   * Stores a manifest given as its canonical bytes and their SHA-256 `id`
   * (an incremental capture serializes and validates it itself). With
   * `pack: false` it is stored uncompressed, to be compressed later by
   * {@linkcode Store.packTree} (a checkpoint then does not wait for it).
   */
  putTreeBytes(id: string, bytes: Uint8Array, options: { pack?: boolean } = {}): void {
    if (this.hasObject(id)) return;
    if (options.pack === false) this.insertRow(id, "tree", bytes.byteLength, "raw", bytes);
    else this.insertObject(id, "tree", bytes.byteLength, "raw", bytes);
  }

  /**
   * Compresses a manifest stored uncompressed, by the rule every object is
   * stored with (its id and content do not change); returns whether it did.
   * Call it inside a transaction.
   */
  packTree(id: string): boolean {
    const row = this.stmt("SELECT kind, size, encoding, data FROM objects WHERE id = ?").get(id) as
      | { kind: string; size: number; encoding: string; data: Uint8Array | null }
      | undefined;
    if (row?.kind !== "tree" || row.encoding !== "raw" || row.data === null) return false;
    if (row.data.byteLength < COMPRESS_MIN_BYTES || row.data.byteLength !== row.size) return false;
    const packed = deflateRawSync(row.data, TREE_DEFLATE_OPTIONS.level);
    if (!packPays(row.data.byteLength, packed.byteLength)) return false;
    this.stmt("UPDATE objects SET encoding = 'deflate', data = ? WHERE id = ? AND encoding = 'raw'")
      .run(packed, id);
    return true;
  }

  /**
   * Tree objects read so far by {@linkcode Store.getTreeObject} (and so by
   * {@linkcode Store.getTree}): what a diff that skips equal subtrees keeps small.
   */
  treeReads = 0;

  /**
   * Reads, re-hashes, strictly parses and validates one tree object: a flat
   * manifest (version 1, written before directory trees) or one directory
   * (version 2). Subtrees a directory names are not read.
   */
  getTreeObject(id: string): { bytes: Uint8Array; tree: TreeManifest | DirTree } {
    const row = this.objectRow(id, "tree");
    this.treeReads += 1;
    if (row.size > MAX_TREE_BYTES) {
      throw new IntegrityError(`Tree ${quote(id)} is too large`);
    }
    const bytes = this.inlineBytes(id, row);
    if (bytes.byteLength > MAX_TREE_BYTES) {
      throw new IntegrityError(`Tree ${quote(id)} is too large`);
    }
    if (sha256Hex(bytes) !== id) {
      throw new IntegrityError(`Tree ${quote(id)} is corrupt: its bytes do not hash to its id`);
    }
    return { bytes, tree: parseTreeObject(bytes) };
  }

  /**
   * The flat manifest of tree `id`, verified: a version 1 manifest as it is,
   * a version 2 root expanded through its subtrees ({@linkcode expandDirTree}).
   */
  getTree(id: string): TreeManifest {
    const kept = this.#keptTrees?.get(id);
    if (kept !== undefined) return kept;
    const { tree } = this.getTreeObject(id);
    const flat = tree.version === 1
      ? tree
      : expandDirTree(id, tree, (sub) => this.getTreeObject(sub).tree);
    this.keepTree(id, flat);
    return flat;
  }

  #keptTrees: Map<string, TreeManifest> | null = null;
  #keeping = 0;

  /**
   * Inside {@linkcode Store.keepingTrees}, keeps `tree` as the flat manifest
   * of tree `id` (a no-op outside it). The caller vouches that `tree` is
   * what `getTree(id)` returns: it built `tree` from verified objects and it
   * passed `validateTree`, or `id` is what `putTree(tree)` returned.
   */
  keepTree(id: string, tree: TreeManifest): void {
    if (this.#keptTrees === null || this.#keptTrees.has(id)) return;
    Object.freeze(tree.entries);
    Object.freeze(tree.skipped);
    this.#keptTrees.set(id, Object.freeze(tree));
    for (const old of this.#keptTrees.keys()) {
      if (this.#keptTrees.size <= MAX_KEPT_TREES) break;
      this.#keptTrees.delete(old);
    }
  }

  /**
   * Runs `fn` with the trees {@linkcode Store.getTree} expands kept (the
   * last {@linkcode MAX_KEPT_TREES}, frozen), so a workspace move that looks
   * at the baseline, the target and the tree before the move in several
   * phases reads each once. A tree id names its content, so a kept tree is
   * what reading it again would return; outside `fn` every call reads and
   * verifies again.
   */
  async keepingTrees<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#keeping++ === 0) this.#keptTrees = new Map();
    try {
      return await fn();
    } finally {
      if (--this.#keeping === 0) this.#keptTrees = null;
    }
  }

  /**
   * Checks tree `id` as {@linkcode Store.getTree} would (it throws the same
   * errors) without expanding it, and returns its totals. A version 2 tree
   * goes through {@linkcode checkDirTree}: with a `memo` shared across calls
   * each distinct directory is read once and a root already checked is not
   * read at all, so checking many snapshots costs their distinct trees. A
   * flat (version 1) manifest is read whole and not kept in `memo`.
   */
  checkTree(id: string, options: CheckDirTreeOptions = {}): DirTreeFacts {
    const known = options.memo?.get(id);
    if (known !== undefined) return known;
    const { tree } = this.getTreeObject(id);
    if (tree.version === 2) {
      return checkDirTree(id, tree, (sub) => this.getTreeObject(sub).tree, options);
    }
    let bytes = 0;
    let files = 0;
    for (const entry of tree.entries) {
      if (entry.type !== "file") continue;
      files += 1;
      bytes += entry.size;
    }
    return {
      entries: tree.entries.length,
      skipped: tree.skipped.length,
      height: 0,
      files,
      bytes,
      longestPath: 0,
      longestSkipped: 0,
      slashSkipped: false,
      flagged: false,
    };
  }
}

/**
 * Refuses a store folder without an index that holds anything but the empty
 * `objects/` and `tmp/` an interrupted `init` leaves: files someone else put
 * there (a committed `.ctxsnap/` in a fresh clone) are never adopted.
 */
function refuseForeignFolder(storeDir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(storeDir);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return;
    throw error;
  }
  const foreign = names.filter((name) =>
    !((name === "objects" || name === "tmp") &&
      fs.readdirSync(path.join(storeDir, name)).length === 0)
  ).sort();
  if (foreign.length === 0) return;
  throw new StoreTrustError(
    `The folder ${quote(storeDir)} already holds ${
      foreign.slice(0, 5).map((n) => quote(n)).join(", ")
    }${foreign.length > 5 ? ` and ${foreign.length - 5} more` : ""}, which ctxsnap did not create`,
    {
      hint: "a store folder is ctxsnap's alone: move those files away and run init again; " +
        "a complete store copied from elsewhere is checked with `ctxsnap init --adopt --dry-run`",
    },
  );
}
