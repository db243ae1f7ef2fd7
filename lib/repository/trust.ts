/**
 * Store trust: ctxsnap uses a store only when this user created it, or
 * explicitly adopted it, on this machine, and only while every path of it is
 * safe and its SQLite schema is exactly ctxsnap's. A store found in a cloned
 * repository or an unpacked archive is someone else's until adopted: file
 * ownership cannot tell (a clone is owned by whoever cloned it).
 *
 * - **Paths** ({@linkcode checkStorePaths}): the store folder is ctxsnap's
 *   alone. Every entry in it must be one {@linkcode STORE_ENTRIES} names
 *   (`index.db` and its `-wal`, `-shm` and `-journal` files, `objects/`,
 *   `tmp/`, `run/`, `published/`, `allow-secrets`, `retention`, `transcripts`); each, every
 *   `objects/xx`, and every entry of `tmp/`, `run/` and `published/` is
 *   checked with `lstat`: a real directory or regular file (a socket for the
 *   watch socket), never a symlink, owned by the current user, and (the
 *   store's own paths) not writable by group or others.
 * - **Schema** ({@linkcode checkSchema}): the `sqlite_master` rows (every
 *   table, index, trigger and view) must be exactly those the migrations
 *   create for the store's `user_version`; an extra trigger, view, table or
 *   index, or a changed definition, is refused.
 * - **Registration** ({@linkcode registerStore}, {@linkcode checkRegistered}):
 *   `init` (or `init --adopt`) records the store in the user's config
 *   directory, `stores/<first 32 hex of SHA-256 of its real path>.json`
 *   holding the store's real path and the inode and birth time of its
 *   `index.db`. A store is registered only while all three still match: a
 *   copy, a clone, a store moved elsewhere or an index replaced by another
 *   file are not.
 *
 * Every refusal is a {@linkcode StoreTrustError} (exit 1) with a hint;
 * nothing is ever repaired silently.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { checkRegistered, isRegistered, registerStore } from "./trust.ts";
 * const dir = await Deno.makeTempDir();
 * const config = await Deno.makeTempDir();
 * Store.init(`${dir}/.ctxsnap`, dir).close();
 * if (isRegistered(config, `${dir}/.ctxsnap`)) throw new Error("not yet registered");
 * registerStore(config, `${dir}/.ctxsnap`, "init");
 * checkRegistered(config, `${dir}/.ctxsnap`); // throws when not registered
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { canonicalBytes, parseJson } from "../encoding/canonical_json.ts";
import { CtxsnapError, errnoOf, quote, StoreTrustError } from "../errors.ts";
import { sha256Hex } from "../crypto/hash.ts";
import { writeFileAtomic } from "../workspace/io/atomic.ts";
import { currentUid, type FileStat, lstat } from "../runtime.ts";
import { MIGRATIONS } from "./schema.ts";

/** The index file's name (as in `store.ts`). */
const INDEX = "index.db";
/** Largest registration file read. */
const MAX_REGISTRATION_BYTES = 4096;

const ADOPT_HINT =
  "if you trust it, look at it with `ctxsnap init --adopt --dry-run`, then `ctxsnap init --adopt`";

function uidOrFail(): number | null {
  try {
    return currentUid();
  } catch (error) {
    throw new StoreTrustError(
      "Cannot tell which user runs ctxsnap, so store ownership is unknown",
      {
        cause: error,
        hint: "run ctxsnap with all permissions (-A), or at least --allow-sys=uid",
      },
    );
  }
}

function lstatOrNull(abs: string): FileStat | null {
  try {
    return lstat(abs);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return null;
    throw error;
  }
}

/** Refuses `abs` unless it is a real `kind` owned by `uid` and not writable by group or others. */
function checkPath(
  abs: string,
  stat: FileStat,
  kind: "directory" | "file",
  uid: number | null,
  what: string,
): void {
  if (stat.isSymbolicLink()) {
    throw new StoreTrustError(`The store path ${quote(abs)} is a symbolic link`, {
      hint:
        `a store never holds links; ${what} may have been planted. ${ADOPT_HINT} after removing it`,
    });
  }
  if (kind === "directory" ? !stat.isDirectory() : !stat.isFile()) {
    throw new StoreTrustError(`The store path ${quote(abs)} is not a ${kind}`, {
      hint: "the store is damaged or was planted; inspect it",
    });
  }
  if (uid !== null && stat.uid !== uid) {
    throw new StoreTrustError(
      `The store path ${quote(abs)} is owned by user ${stat.uid}, not by you (${uid})`,
      { hint: "use a store you created; `chown` it only if it really is yours" },
    );
  }
  if ((stat.mode & 0o022) !== 0) {
    throw new StoreTrustError(
      `The store path ${quote(abs)} is writable by ${
        (stat.mode & 0o002) !== 0 ? "everyone" : "its group"
      } (mode ${(stat.mode & 0o7777).toString(8).padStart(4, "0")})`,
      { hint: `if the store is yours, run \`chmod go-w ${abs}\`` },
    );
  }
}

/**
 * Checks every path of the store in `dir` with `lstat` (see the module
 * documentation). With `requireIndex: false` a store being created may
 * still lack its index. Throws {@linkcode StoreTrustError}.
 */
export function checkStorePaths(dir: string, options: { requireIndex?: boolean } = {}): void {
  const uid = uidOrFail();
  const top = lstatOrNull(dir);
  if (top === null) {
    if (options.requireIndex === false) return;
    throw new StoreTrustError(`The store directory ${quote(dir)} does not exist`);
  }
  checkPath(dir, top, "directory", uid, "the store directory");
  const index = lstatOrNull(path.join(dir, INDEX));
  if (index === null) {
    if (options.requireIndex !== false) {
      throw new StoreTrustError(`The store at ${quote(dir)} has no ${INDEX}`);
    }
  } else checkPath(path.join(dir, INDEX), index, "file", uid, "the index");
  for (const suffix of ["-wal", "-shm", "-journal"]) {
    const abs = path.join(dir, INDEX + suffix);
    const stat = lstatOrNull(abs);
    if (stat !== null) checkPath(abs, stat, "file", uid, "an index file");
  }
  for (const name of fs.readdirSync(dir)) {
    const kind = STORE_ENTRIES[name];
    if (kind === undefined) {
      throw new StoreTrustError(
        `The store at ${quote(dir)} holds an unexpected entry ${quote(name)}`,
        {
          hint: "a store folder holds only ctxsnap's own files; move it out if it is yours " +
            "(a store from elsewhere: `ctxsnap init --adopt --dry-run` lists what it holds)",
        },
      );
    }
    if (name.startsWith(INDEX)) continue; // checked above
    const abs = path.join(dir, name);
    const stat = lstatOrNull(abs);
    if (stat === null) continue; // removed meanwhile
    checkPath(abs, stat, kind, uid, name === "allow-secrets" ? "an allow list" : `${name}/`);
    if (kind === "directory" && name !== "objects") checkEntries(abs, name, uid);
  }
  const objects = path.join(dir, "objects");
  const objectsStat = lstatOrNull(objects);
  if (objectsStat === null) return;
  for (const name of fs.readdirSync(objects)) {
    const abs = path.join(objects, name);
    const stat = lstatOrNull(abs);
    if (stat === null) continue; // removed meanwhile (gc)
    if (!/^[0-9a-f]{2}$/.test(name)) {
      throw new StoreTrustError(`The store holds an unexpected entry ${quote(abs)}`, {
        hint: "objects/ holds only two-hex-digit directories; inspect it",
      });
    }
    checkPath(abs, stat, "directory", uid, "an objects/ directory");
  }
}

/**
 * Every name the top of a store directory may hold, and what it must be.
 * Anything else makes the store refused ({@linkcode checkStorePaths}); a
 * file ctxsnap adds to the store later must be added here.
 */
export const STORE_ENTRIES: Readonly<Record<string, "directory" | "file">> = {
  [INDEX]: "file",
  [`${INDEX}-wal`]: "file",
  [`${INDEX}-shm`]: "file",
  [`${INDEX}-journal`]: "file",
  objects: "directory",
  tmp: "directory",
  run: "directory",
  published: "directory",
  "allow-secrets": "file",
  retention: "file",
  transcripts: "file",
  "daemon.conf": "file",
};

/**
 * Checks the entries of `tmp/`, `run/` or `published/`: never a symlink,
 * owned by this user; `tmp/` holds files and directories, `run/` the watch
 * files (`watch.json`, its socket, `watch.lock`, `daemon.log`, `http.json`
 * and their temporary names), `published/`
 * regular files.
 */
function checkEntries(abs: string, name: string, uid: number | null): void {
  for (const entry of fs.readdirSync(abs)) {
    const entryPath = path.join(abs, entry);
    const stat = lstatOrNull(entryPath);
    if (stat === null) continue; // removed meanwhile (gc, a watch process stopping)
    const problem = stat.isSymbolicLink()
      ? "is a symbolic link"
      : uid !== null && stat.uid !== uid
      ? `is owned by user ${stat.uid}, not by you (${uid})`
      : name === "tmp"
      ? (stat.isFile() || stat.isDirectory() ? null : "is not a file or directory")
      : name === "published"
      ? (stat.isFile() ? null : "is not a regular file")
      : entry === "watch.sock"
      ? (stat.isSocket() ? null : "is not a socket")
      : RUN_FILES.has(entry) || entry.startsWith(".ctxsnap-tmp-")
      ? (stat.isFile() ? null : "is not a regular file")
      : "is not a watch file";
    if (problem !== null) {
      throw new StoreTrustError(`The store path ${quote(entryPath)} ${problem}`, {
        hint: `${name}/ holds only ctxsnap's own files; it may have been planted. ${ADOPT_HINT}`,
      });
    }
  }
}

/** The regular files of `run/` (lib/integrations/watch/). */
const RUN_FILES: ReadonlySet<string> = new Set([
  "watch.json",
  "watch.lock",
  "daemon.log",
  "http.json",
]);

/** `sqlite_master` rows in a comparable form (definitions with quoting and spacing normalized). */
function schemaRows(db: DatabaseSync): string[] {
  const rows = db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master").all() as {
    type: string;
    name: string;
    tbl_name: string;
    sql: string | null;
  }[];
  return rows.map((row) => {
    const sql = row.sql === null ? "" : row.sql.replace(/["`]/g, "").replace(/\s+/g, " ").trim();
    return JSON.stringify([row.type, row.name, row.tbl_name, sql]);
  }).sort();
}

const expectedByVersion = new Map<number, string[]>();

/**
 * SHA-256 of the schema rows (as compared by {@linkcode checkSchema}, sorted,
 * joined by newlines) that every migration creates: what a current store's
 * `sqlite_master` must hash to. Pinned by a test against
 * {@linkcode expectedSchemaDigest}, so a new migration must update it.
 */
export const CURRENT_SCHEMA_DIGEST =
  "cac93e8fd07ff59b7b1ee5f824dd566073032e883da86cc61e107722d440478c";

/** The digest {@linkcode CURRENT_SCHEMA_DIGEST} pins, computed from the migrations (slow). */
export function expectedSchemaDigest(version: number = MIGRATIONS.length): string {
  return sha256Hex(expectedSchema(version).join("\n"));
}

/** The schema rows migrations 1 … `version` create, built once in memory. */
function expectedSchema(version: number): string[] {
  let rows = expectedByVersion.get(version);
  if (rows === undefined) {
    const db = new DatabaseSync(":memory:");
    try {
      for (const migration of MIGRATIONS.slice(0, version)) db.exec(migration);
      rows = schemaRows(db);
    } finally {
      db.close();
    }
    expectedByVersion.set(version, rows);
  }
  return rows;
}

/**
 * Requires the schema of `db` (a store at schema `version`) to be exactly
 * the one the migrations create: same tables, indexes, triggers and views,
 * same definitions, nothing more. Throws {@linkcode StoreTrustError}.
 */
export function checkSchema(db: DatabaseSync, version: number, dir: string): void {
  if (!Number.isSafeInteger(version) || version < 0 || version > MIGRATIONS.length) return;
  const actual = schemaRows(db);
  // A current store is compared by digest, without building the expected
  // schema in memory on every open (about 8 ms); any difference is reported
  // from the full comparison below.
  if (version === MIGRATIONS.length && sha256Hex(actual.join("\n")) === CURRENT_SCHEMA_DIGEST) {
    return;
  }
  const expected = expectedSchema(version);
  const extra = actual.filter((row) => !expected.includes(row));
  const missing = expected.filter((row) => !actual.includes(row));
  if (extra.length === 0 && missing.length === 0) return;
  const name = (row: string) => {
    const [type, objectName] = JSON.parse(row) as string[];
    return `${type} ${objectName}`;
  };
  throw new StoreTrustError(
    `The store at ${quote(dir)} does not have ctxsnap's schema: ${
      [
        ...extra.map((row) => `unexpected ${name(row)}`),
        ...missing.map((row) => `missing or changed ${name(row)}`),
      ].slice(0, 5).join(", ")
    }`,
    {
      hint:
        "its index.db was altered (extra triggers or tables can rewrite what ctxsnap records); do not use it",
    },
  );
}

/** A store's registration in the user's config directory. */
export interface StoreRegistration {
  /** Always 1. */
  version: 1;
  /** The store directory's real path. */
  store_dir: string;
  /** Inode of its `index.db`. */
  index_ino: number;
  /** Birth time of its `index.db` in ms, or null where the filesystem keeps none. */
  index_birthtime_ms: number | null;
  /** When it was registered (ISO-8601 UTC). */
  registered_at: string;
  /** `init` (created here) or `adopt`. */
  how: "init" | "adopt";
}

/** The directory holding registrations inside config directory `configDir`. */
export function registryDir(configDir: string): string {
  return path.join(configDir, "stores");
}

function identityOf(storeDir: string): { real: string; ino: number; birth: number | null } {
  const real = fs.realpathSync(storeDir);
  const stat = fs.lstatSync(path.join(real, INDEX));
  const birth = Number.isFinite(stat.birthtimeMs) && stat.birthtimeMs > 0
    ? Math.trunc(stat.birthtimeMs)
    : null;
  return { real, ino: stat.ino, birth };
}

function registrationPath(configDir: string, realStoreDir: string): string {
  return path.join(registryDir(configDir), `${sha256Hex(realStoreDir).slice(0, 32)}.json`);
}

/** Records the store in `storeDir` as this user's, created here (`init`) or adopted. */
export function registerStore(
  configDir: string,
  storeDir: string,
  how: "init" | "adopt",
): StoreRegistration {
  const id = identityOf(storeDir);
  fs.mkdirSync(configDir, { recursive: true, mode: 0o700 });
  const dir = registryDir(configDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const dirStat = fs.lstatSync(dir);
  checkPath(dir, dirStat, "directory", uidOrFail(), "the store registry");
  const registration: StoreRegistration = {
    version: 1,
    store_dir: id.real,
    index_ino: id.ino,
    index_birthtime_ms: id.birth,
    registered_at: new Date().toISOString(),
    how,
  };
  writeFileAtomic(registrationPath(configDir, id.real), canonicalBytes(registration as never), {
    mode: 0o600,
  });
  return registration;
}

function readRegistration(file: string): StoreRegistration | null {
  const uid = uidOrFail();
  const dirStat = lstatOrNull(path.dirname(file));
  if (dirStat === null) return null;
  checkPath(path.dirname(file), dirStat, "directory", uid, "the store registry");
  const stat = lstatOrNull(file);
  if (stat === null) return null;
  checkPath(file, stat, "file", uid, "a store registration");
  if (stat.size > MAX_REGISTRATION_BYTES) {
    throw new StoreTrustError(`The store registration ${quote(file)} is too large`);
  }
  let value: unknown;
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const bytes = new Uint8Array(MAX_REGISTRATION_BYTES + 1);
    const n = fs.readSync(fd, bytes, 0, bytes.byteLength, 0);
    value = parseJson(bytes.subarray(0, n), { maxBytes: MAX_REGISTRATION_BYTES });
  } catch (error) {
    if (error instanceof StoreTrustError) throw error;
    throw new StoreTrustError(`The store registration ${quote(file)} is unreadable`, {
      cause: error,
      hint: "remove it and run `ctxsnap init --adopt` in the store's workspace",
    });
  } finally {
    fs.closeSync(fd);
  }
  const r = value as Record<string, unknown>;
  const keys = ["version", "store_dir", "index_ino", "index_birthtime_ms", "registered_at", "how"];
  if (
    r === null || typeof r !== "object" || Array.isArray(r) ||
    Object.keys(r).sort().join() !== [...keys].sort().join() || r.version !== 1 ||
    typeof r.store_dir !== "string" || !Number.isSafeInteger(r.index_ino) ||
    !(r.index_birthtime_ms === null || Number.isSafeInteger(r.index_birthtime_ms)) ||
    typeof r.registered_at !== "string" || (r.how !== "init" && r.how !== "adopt")
  ) {
    throw new StoreTrustError(`The store registration ${quote(file)} is malformed`, {
      hint: "remove it and run `ctxsnap init --adopt` in the store's workspace",
    });
  }
  return r as unknown as StoreRegistration;
}

/** Whether the store in `storeDir` is registered as this user's (see {@linkcode checkRegistered}). */
export function isRegistered(configDir: string, storeDir: string): boolean {
  const id = identityOf(storeDir);
  const registration = readRegistration(registrationPath(configDir, id.real));
  return registration !== null && registration.store_dir === id.real &&
    registration.index_ino === id.ino &&
    (registration.index_birthtime_ms === null || id.birth === null ||
      registration.index_birthtime_ms === id.birth);
}

/**
 * Throws {@linkcode StoreTrustError} unless the store in `storeDir` was
 * created or adopted by this user with config directory `configDir`, and its
 * index is still the file that was registered.
 */
export function checkRegistered(configDir: string, storeDir: string): void {
  let registered: boolean;
  try {
    registered = isRegistered(configDir, storeDir);
  } catch (error) {
    if (error instanceof CtxsnapError) throw error;
    throw new StoreTrustError(`Cannot check whether the store at ${quote(storeDir)} is yours`, {
      cause: error,
    });
  }
  if (!registered) {
    throw new StoreTrustError(
      `The store at ${
        quote(storeDir)
      } was not created or adopted by you on this machine (a store committed into a repository or copied from elsewhere is someone else's)`,
      { hint: ADOPT_HINT },
    );
  }
}
