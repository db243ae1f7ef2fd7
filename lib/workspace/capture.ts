/**
 * Capturing a workspace into the store as directory trees (docs/DESIGN.md §4).
 *
 * Files are read with `O_NOFOLLOW|O_NONBLOCK` and an ino/dev check; symlinks
 * are recorded, never followed; everything left out is listed with a reason.
 * A stat cache recognises unchanged files without rehashing them. Like git's
 * racy-clean rule, a cached entry is trusted only if the file's mtime and
 * ctime were strictly older than the moment the entry was recorded, so an
 * edit in the same timestamp tick is always re-read. Content already stored
 * is never compressed again, and once a capture has stored a megabyte of
 * compressible bytes, compression moves to a worker on another core
 * (`zlib_pool.ts`) while the next files are read.
 *
 * Secrets stay out: files whose path is a secret by name are never opened
 * (`secret`), and every byte read is scanned for private keys and tokens
 * ({@linkcode SecretScanner}); a file with one is left out as
 * `secret_content` and none of its bytes reach the store. Paths in the
 * store's allow list (`allow_secrets.ts`) are exempt from both rules. The
 * stat cache never stands in for the scan: a file left out has no cache row,
 * a file captured only because it is allowed gets none either, and cached
 * rows from before a change of the rules ({@linkcode SECRET_RULES_VERSION})
 * are not trusted.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { captureWorkspace } from "./capture.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/notes.md`, "# hi\n");
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const { tree, stats } = store.transaction("capture", () => captureWorkspace(store));
 * if (!(tree.entries.length === 1 && stats.hashed === 1)) throw new Error("Example failed");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { CtxsnapError, IntegrityError, quote } from "../errors.ts";
import { DEFAULT_MAX_FILE_BYTES } from "./io/capture_policy.ts";
import { SECRET_RULES_VERSION, SecretScanner } from "./io/secret_scan.ts";
import { readAllowSecrets } from "../repository/allow_secrets.ts";
import {
  deleteStatCacheRow,
  readStatCacheRowView,
  readStatCacheTable,
  statCachePaths,
  type StatCacheRows,
  StatCacheTable,
  upsertStatCacheRow,
} from "../repository/stat_cache.ts";
import {
  FileChangedError,
  readRegularNoFollow,
  type StatInfo,
  UnreadableError,
} from "./io/safe_read.ts";
import { type ListedEntry, type WalkItem, type WalkOptions, walkWorkspace } from "./io/walk.ts";
import { KnownDirs } from "./_known_dirs.ts";
import { INLINE_BLOB_MAX, type Store } from "../repository/store.ts";
import { ZlibPool } from "../repository/zlib_pool.ts";
import { COMPRESS_MIN_BYTES } from "../repository/compression.ts";
import {
  compareSkipped,
  type SkippedEntry,
  type TreeEntry,
  type TreeManifest,
} from "../format/tree.ts";
import { writeAllSync } from "./io/fd.ts";
import { DirTreeWriter } from "../format/dir_tree.ts";
import { expandDirTree, parseTreeObject } from "../format/tree_object.ts";

/** Counters describing one capture. */
export interface CaptureStats {
  /** Regular files recorded. */
  files: number;
  /** Symlinks recorded. */
  symlinks: number;
  /** Paths left out. */
  skipped: number;
  /** Total bytes of recorded files. */
  bytes: number;
  /** Files whose content was read and hashed. */
  hashed: number;
  /** Files recognised unchanged from the stat cache, not read. */
  reused: number;
}

/** What {@linkcode captureWorkspace} returns. */
export interface CaptureResult {
  /** The id of the stored root tree (a version 2 directory tree). */
  treeId: string;
  /**
   * The flat manifest, built when first read (from the stored trees, or from
   * the trees a `persist: false` capture kept): a create never reads it.
   */
  readonly tree: TreeManifest;
  /** What the capture left out: the manifest's `skipped`, without building the manifest. */
  skipped: SkippedEntry[];
  /** Counters. */
  stats: CaptureStats;
}

/** Options for {@linkcode captureWorkspace}. */
export interface CaptureOptions {
  /** Workspace root; defaults to the store's. */
  root?: string;
  /** Largest file captured; larger ones are skipped as `too_large`. */
  maxFileBytes?: number;
  /** Use and update the stat cache (default true). */
  useStatCache?: boolean;
  /**
   * Store blobs, the manifest and stat-cache updates (default true). With
   * false the workspace is only hashed: nothing is written (diff, plans).
   */
  persist?: boolean;
  /** Called after each file with the number of paths seen so far. */
  onProgress?: (seen: number) => void;
  /**
   * Scan file contents for secrets (default true). Only benchmarks turn it
   * off; a store captured without it trusts none of its stat cache later.
   */
  scanContent?: boolean;
}

/**
 * Files whose stat-cache row a `dirs` capture looks up one by one before it
 * reads every row at once instead (about what one read of 40,000 rows costs).
 */
const LOOKUPS_BEFORE_TABLE = 2000;

/** The meta key naming the secret rules the stat-cache rows were written under. */
const SECRET_RULES_META = "secret_rules";

/** Whether the stat cache's rows were written under `plan`'s secret rules (else none is trusted). */
function rulesMatch(store: Store, plan: CapturePlan): boolean {
  return store.getMeta(SECRET_RULES_META) === plan.rules;
}

/** Extra racy window when the store and the workspace are on different filesystems. */
const CROSS_DEVICE_MARGIN_MS = 3000;
/** Milliseconds of ctime granularity assumed (some platforms report whole seconds). */
const CTIME_GRANULARITY_MS = 1000;

function cacheHit(cache: StatCacheRows, row: number, stat: StatInfo, margin: number): boolean {
  if (row < 0 || !cache.matches(row, stat)) return false;
  // Racy-clean: trust only entries whose timestamps were strictly older than
  // the moment they were recorded, allowing for timestamp granularity.
  const stamp = cache.stampMs(row);
  return stat.mtimeMs + 1 + margin <= stamp &&
    stat.ctimeMs + CTIME_GRANULARITY_MS + margin <= stamp;
}

/**
 * The filesystem's notion of "now": the mtime of a new file created in the
 * store's `tmp/` (`O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing already there,
 * a planted symlink least of all, is ever opened or truncated), then removed.
 */
function filesystemNow(store: Store): number {
  const stamp = store.tempPath();
  const fd = fs.openSync(
    stamp,
    fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW,
    0o600,
  );
  try {
    return fs.fstatSync(fd).mtimeMs;
  } finally {
    fs.closeSync(fd);
    fs.rmSync(stamp, { force: true });
  }
}

/**
 * Everything a capture's walk and reads decide by besides the workspace
 * itself: the root, the size limit, the excluded directories, the secret
 * rules and the store's allow list. Full and incremental capture
 * (`incremental.ts`) use the same plan, so they classify every path alike;
 * `fingerprint` changes whenever anything here does.
 */
export interface CapturePlan {
  /** Workspace root (absolute). */
  root: string;
  /** Its real path: every file read must resolve to `<realRoot>/<its path>`. */
  realRoot: string;
  /** Device of the root, for the cross-device racy margin. */
  rootDev: number;
  /** Options for {@linkcode walkWorkspace}. */
  walk: WalkOptions & { maxFileBytes: number; allowSecrets: ReadonlySet<string> };
  /** Scan file contents for secrets. */
  scanContent: boolean;
  /** The secret rules stat-cache rows must have been written under to be trusted. */
  rules: string;
  /** Identifies all of the above: equal fingerprints capture alike. */
  fingerprint: string;
}

/** The {@linkcode CapturePlan} of a capture of `store`'s workspace with `options`. */
export function capturePlan(store: Store, options: CaptureOptions = {}): CapturePlan {
  const root = path.resolve(options.root ?? store.workspaceRoot);
  let rootStat: fs.Stats;
  try {
    rootStat = fs.statSync(root);
  } catch (error) {
    throw new CtxsnapError(`The workspace ${quote(root)} cannot be read`, "not_found", {
      cause: error,
    });
  }
  if (!rootStat.isDirectory()) {
    throw new CtxsnapError(`The workspace ${quote(root)} is not a directory`, "not_found");
  }
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const scanContent = options.scanContent ?? true;
  const allowSecrets = readAllowSecrets(store.dir);
  // The store's own directory is left out by identity: exactly that path,
  // never every directory that happens to share its name.
  const storeStat = fs.lstatSync(store.dir);
  const skipDirectory = { dev: storeStat.dev, ino: storeStat.ino };
  // Every file read must resolve to <real root>/<its path>: see readRegularNoFollow.
  const realRoot = fs.realpathSync(root);
  const rules = scanContent ? SECRET_RULES_VERSION : "none";
  return {
    root,
    realRoot,
    rootDev: rootStat.dev,
    walk: { maxFileBytes, skipDirectory, allowSecrets },
    scanContent,
    rules,
    fingerprint: JSON.stringify([
      root,
      realRoot,
      maxFileBytes,
      skipDirectory,
      [...allowSecrets].sort(),
      rules,
    ]),
  };
}

/**
 * How an {@linkcode ItemCapture} uses the stat cache: `use` reads every row
 * at the start, `lookup` reads each file's row when it is met (a long-lived
 * process's walk: no map of every row), `dirs` does too but leaves pruning
 * rows to its caller (a capture that keeps known directories, whose files
 * it never sees), `write` only updates rows.
 */
export type StatCacheUse = "use" | "lookup" | "dirs" | "write" | "none";

/**
 * Turns the items of a walk into manifest entries and skipped records: a
 * file recognised unchanged by the stat cache is reused, any other is read
 * (into the store, or only hashed) and scanned for secrets. One per
 * capture; close it when done.
 */
export class ItemCapture {
  /** Counters so far (`skipped` is left to the caller, who dedupes records). */
  readonly stats: CaptureStats = {
    files: 0,
    symlinks: 0,
    skipped: 0,
    bytes: 0,
    hashed: 0,
    reused: 0,
  };
  /**
   * The stat cache as read (compact: no object per row), and which of its
   * rows a recorded file kept; empty when rows are read one by one (`lookup`).
   */
  private cache: StatCacheTable;
  private readonly kept: Uint8Array;
  /** Rows read one by one so far (`dirs`: past {@linkcode LOOKUPS_BEFORE_TABLE}, the table is read). */
  private lookups = 0;
  /** Rows are read one by one (`lookup`), not all at once into `cache`. */
  private lookup: boolean;
  /**
   * Paths recorded, kept only when {@linkcode pruneCache} will need them
   * (other rules, or rows read one by one).
   */
  private readonly recorded: Set<string> | null;
  private readonly persist: boolean;
  private readonly writeCache: boolean;
  /** Whether the stat cache was written under this plan's secret rules. */
  private readonly rulesMatch: boolean;
  /** The store filesystem's clock when the capture started (rows written now carry it). */
  readonly stamp: number;
  /** Extra racy window (the store and the workspace on different filesystems). */
  readonly clockMargin: number;
  /** Rows are pruned by the caller, directory by directory (`dirs`). */
  private readonly pruneByCaller: boolean;
  private readonly blobs: InlineBlobWriter;

  /**
   * `persist` stores blobs (else files are only hashed); `cache` says whether
   * the stat cache is read (`use`), only updated (`write`) or left alone.
   */
  constructor(
    private readonly store: Store,
    private readonly plan: CapturePlan,
    options: { persist: boolean; cache: StatCacheUse },
  ) {
    this.persist = options.persist;
    // Rows written under other secret rules (or with no content scan) are not
    // trusted: those files are read and scanned again.
    this.rulesMatch = rulesMatch(store, plan);
    const reads = options.cache === "use" || options.cache === "lookup" ||
      options.cache === "dirs";
    this.writeCache = options.persist && options.cache !== "none" && (reads || this.rulesMatch);
    this.lookup = (options.cache === "lookup" || options.cache === "dirs") && this.rulesMatch;
    this.pruneByCaller = options.cache === "dirs" && this.rulesMatch;
    this.cache = options.cache === "use" && this.rulesMatch
      ? readStatCacheTable(store)
      : StatCacheTable.empty();
    this.kept = new Uint8Array(this.cache.size);
    this.recorded = this.writeCache && !this.pruneByCaller && (!this.rulesMatch || this.lookup)
      ? new Set()
      : null;
    this.stamp = options.persist ? filesystemNow(store) : 0;
    // The stamp is read from the store's filesystem. When the workspace lives on
    // another one (clock skew, 2 s FAT timestamps), widen the racy window.
    this.clockMargin = fs.statSync(store.dir).dev === plan.rootDev ? 0 : CROSS_DEVICE_MARGIN_MS;
    this.blobs = new InlineBlobWriter(store);
  }

  /** The entry or skipped record for one walk item. */
  add(item: WalkItem): TreeEntry | SkippedEntry {
    if (item.kind === "skip") return { path: item.path, reason: item.reason };
    if (item.kind === "symlink") {
      this.stats.symlinks += 1;
      return { path: item.path, type: "symlink", target: item.target };
    }
    const { stats, plan } = this;
    if (this.pruneByCaller && this.lookup && ++this.lookups > LOOKUPS_BEFORE_TABLE) {
      // Many directories changed (a checkout, say): one read of every row
      // costs less than a lookup per file from here on.
      this.cache = readStatCacheTable(this.store);
      this.lookup = false;
    }
    const cache = this.lookup ? readStatCacheRowView(this.store, item.path) : this.cache;
    const row = cache.row(item.path);
    const allowed = plan.walk.allowSecrets.has(item.path);
    let blob: string;
    let size: number;
    let mode = item.stat.mode;
    // gc removes cache rows whose blob it deletes, so a hit names a stored blob.
    if (!allowed && cacheHit(cache, row, item.stat, this.clockMargin)) {
      blob = cache.blob(row);
      size = cache.sizeOf(row);
      stats.reused += 1;
    } else {
      const realPath = plan.realRoot === "/" ? `/${item.path}` : `${plan.realRoot}/${item.path}`;
      const max = plan.walk.maxFileBytes;
      const scanner = plan.scanContent && !allowed ? new SecretScanner() : null;
      const read = this.persist
        ? readFileIntoStore(this.store, this.blobs, item.absPath, item.stat, max, realPath, scanner)
        : hashFile(item.absPath, item.stat, max, realPath, scanner);
      if ("reason" in read) {
        // A file left out keeps no row: it is read and scanned again next time.
        if (this.writeCache) {
          deleteStatCacheRow(this.store, item.path);
        }
        return { path: item.path, reason: read.reason };
      }
      blob = read.blob;
      size = read.size;
      mode = read.stat.mode;
      stats.hashed += 1;
      // An allowed file gets no row: once it leaves the allow list, it is scanned again.
      if (this.writeCache && !allowed) {
        upsertStatCacheRow(this.store, item.path, read.stat, blob, this.stamp);
      }
    }
    if (row >= 0 && !this.lookup && !this.pruneByCaller) this.kept[row] = 1;
    this.recorded?.add(item.path);
    stats.files += 1;
    stats.bytes += size;
    return { path: item.path, type: "file", blob, size, mode };
  }

  /**
   * After a whole capture: drops the stat-cache rows of files it did not
   * record, and of every file it captured only because it is allowed.
   */
  pruneCache(): void {
    if (!this.writeCache || this.pruneByCaller) return;
    const remove = (path: string) => deleteStatCacheRow(this.store, path);
    if (this.rulesMatch) {
      for (const cachedPath of this.lookup ? statCachePaths(this.store) : this.cache.paths()) {
        const kept = this.lookup
          ? this.recorded!.has(cachedPath)
          : this.kept[this.cache.row(cachedPath)] === 1;
        if (!kept) remove(cachedPath);
      }
      return;
    }
    // Rows of files left out or allowed this time must not outlive the old rules.
    const keep = new Set(this.recorded);
    for (const allowed of this.plan.walk.allowSecrets) keep.delete(allowed);
    for (const path of statCachePaths(this.store)) if (!keep.has(path)) remove(path);
    this.store.setMeta("secret_rules", this.plan.rules);
  }

  /** Waits for compression still under way and stores its results. */
  finish(): void {
    this.blobs.finish();
  }

  /** Stops the compression worker, if one was started. */
  close(): void {
    this.blobs.close();
  }
}

/** Sorts skipped records and drops exact duplicates, in place. */
export function sortSkipped(skipped: SkippedEntry[]): SkippedEntry[] {
  skipped.sort(compareSkipped);
  // Two undecodable names can decode to the same spelling: record it once.
  for (let i = skipped.length - 1; i > 0; i--) {
    if (compareSkipped(skipped[i - 1]!, skipped[i]!) === 0) skipped.splice(i, 1);
  }
  return skipped;
}

/**
 * Captures the workspace into `store` and returns its root tree's id. The
 * walk streams into directory trees ({@linkcode DirTreeWriter}): each
 * directory is checked, built and stored as the walk leaves it, and no flat
 * manifest is built; the result's `tree` builds one only when read.
 * Call it inside {@linkcode Store.transaction} so the blobs, the trees and
 * whatever references them commit together.
 */
export function captureWorkspace(store: Store, options: CaptureOptions = {}): CaptureResult {
  const plan = capturePlan(store, options);
  const persist = options.persist ?? true;
  const useCache = options.useStatCache ?? true;
  const skipped: SkippedEntry[] = [];
  // persist: each directory is stored as it is built; else its bytes are kept
  // (a diff or a plan reads the flat view) and nothing is written.
  const kept = new Map<string, Uint8Array>();
  // A persisted capture that uses the stat cache also keeps directories its
  // tree cache knows unchanged (_known_dirs.ts), and writes the rows back.
  const rows = persist && useCache
    ? new KnownDirs(store, {
      fingerprint: plan.fingerprint,
      rulesMatch: rulesMatch(store, plan),
    })
    : null;
  const cache: StatCacheUse = !useCache ? "none" : rows?.reading ? "dirs" : "use";
  const items = new ItemCapture(store, plan, { persist, cache });
  const trees = new DirTreeWriter(
    persist
      ? (object) => store.putTreeBytes(object.id, object.bytes)
      : (object) => void kept.set(object.id, object.bytes),
    rows === null ? undefined : (dir) => rows.closed(dir),
  );
  rows?.attach(trees, { stamp: items.stamp, margin: items.clockMargin });
  const stats = items.stats;
  const walk = rows === null ? plan.walk : {
    ...plan.walk,
    onListed: (path: string, listing: readonly ListedEntry[]) =>
      rows.listed(path, listing, stats, skipped),
    onLeave: (path: string) => rows.left(path),
  };
  const allowed = plan.walk.allowSecrets;
  let seen = 0;
  let treeId: string;
  try {
    for (const item of walkWorkspace(plan.root, walk)) {
      const result = items.add(item);
      seen += 1;
      if ("reason" in result) {
        rows?.decided(result.path, { reason: result.reason });
        trees.addSkipped(result);
        skipped.push(result);
        continue;
      }
      if (rows !== null) {
        const isAllowed = allowed.has(result.path);
        rows.decided(result.path, {
          kept: result.type === "file" && !isAllowed,
          allowed: isAllowed,
        });
      }
      trees.addEntry(result);
      if (result.type === "file") options.onProgress?.(seen);
    }
    items.finish();
    treeId = trees.finish().rootId;
  } finally {
    items.close();
  }
  items.pruneCache();
  rows?.finish();
  sortSkipped(skipped);
  stats.skipped = skipped.length;
  let flat: TreeManifest | undefined;
  return {
    treeId,
    skipped,
    stats,
    get tree(): TreeManifest {
      if (flat !== undefined) return flat;
      if (persist) return flat = store.getTree(treeId);
      const read = (id: string) => parseTreeObject(kept.get(id)!);
      const root = read(treeId);
      flat = root.version === 1 ? root : expandDirTree(treeId, root, read);
      kept.clear();
      return flat;
    },
  };
}

type ReadOutcome = { blob: string; size: number; stat: StatInfo } | { reason: string };

function skipReason(error: unknown): { reason: string } {
  if (error instanceof FileChangedError) return { reason: "changed_while_reading" };
  if (error instanceof UnreadableError) return { reason: "unreadable" };
  if (error instanceof IntegrityError && /grew|larger|too large/i.test(error.message)) {
    return { reason: "too_large" };
  }
  throw error;
}

/** The scanner's callback for a read, if any. */
function inspectWith(scanner: SecretScanner | null): { inspect?: (chunk: Uint8Array) => void } {
  return scanner === null ? {} : { inspect: (chunk) => scanner.update(chunk) };
}

function hashFile(
  absPath: string,
  expected: StatInfo,
  maxFileBytes: number,
  expectedRealPath: string,
  scanner: SecretScanner | null,
): ReadOutcome {
  try {
    const result = readRegularNoFollow(absPath, expected, {
      maxBytes: maxFileBytes,
      keepBytesUpTo: 0,
      expectedRealPath,
      ...inspectWith(scanner),
    });
    if (scanner?.found) return { reason: "secret_content" };
    return { blob: result.sha256, size: result.size, stat: result.stat };
  } catch (error) {
    return skipReason(error);
  }
}

function readFileIntoStore(
  store: Store,
  blobs: InlineBlobWriter,
  absPath: string,
  expected: StatInfo,
  maxFileBytes: number,
  expectedRealPath: string,
  scanner: SecretScanner | null,
): ReadOutcome {
  const large = expected.size > INLINE_BLOB_MAX;
  let tempPath: string | null = null;
  let tempFd: number | null = null;
  let inline: Uint8Array | null = null;
  let read: ReadOutcome;
  try {
    if (large) {
      tempPath = store.tempPath();
      tempFd = fs.openSync(
        tempPath,
        fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY |
          fs.constants.O_NOFOLLOW,
        0o600,
      );
    }
    const fd = tempFd;
    const result = readRegularNoFollow(absPath, expected, {
      maxBytes: maxFileBytes,
      keepBytesUpTo: INLINE_BLOB_MAX,
      expectedRealPath,
      ...inspectWith(scanner),
      ...(fd === null ? {} : {
        onChunk: (chunk: Uint8Array) => {
          writeAllSync(fd, chunk);
        },
      }),
    });
    // A secret is dropped before its bytes are stored (the temp file is removed below).
    if (scanner?.found) return { reason: "secret_content" };
    if (result.data !== null && result.size <= INLINE_BLOB_MAX) {
      inline = result.data;
    } else if (tempPath !== null && tempFd !== null) {
      fs.fsyncSync(tempFd);
      fs.closeSync(tempFd);
      tempFd = null;
      store.adoptBlobFile(tempPath, result.sha256, result.size);
      tempPath = null;
    } else {
      throw new IntegrityError(`${quote(absPath)} grew past the inline limit while being read`);
    }
    read = { blob: result.sha256, size: result.size, stat: result.stat };
  } catch (error) {
    return skipReason(error);
  } finally {
    if (tempFd !== null) fs.closeSync(tempFd);
    if (tempPath !== null) fs.rmSync(tempPath, { force: true });
  }
  // Outside the try: an error storing a blob (this one's, or an earlier one
  // the compression worker hands back now) is the store's, never a reason to
  // leave this file out.
  if (inline !== null) blobs.put(read.blob, inline);
  return read;
}

/** SQLite's page cache while a capture's transaction stores blobs: 32 MiB (`Store.widenPageCache`). */
const CAPTURE_PAGE_CACHE_KIB = 32 * 1024;
/**
 * Blobs a capture stores before it widens the page cache: a checkpoint of a
 * few changed files (a watch process's, every turn) keeps the default cache
 * and the pages it holds between transactions.
 */
const WIDEN_AFTER_BLOBS = 256;

/** Inline bytes a capture compresses itself before it starts a compression worker. */
const POOL_AFTER_BYTES = 1024 * 1024;

/**
 * Stores a capture's inline blobs. Content already stored is skipped before
 * any compression. Once the capture has stored {@linkcode POOL_AFTER_BYTES}
 * of compressible bytes, compression moves to a {@linkcode ZlibPool} worker
 * on another core; the stored rows are the same either way.
 */
class InlineBlobWriter {
  #pool: ZlibPool<{ id: string; data: Uint8Array }> | null | undefined;
  #compressible = 0;
  #stored = 0;

  constructor(private readonly store: Store) {}

  put(id: string, data: Uint8Array): void {
    if (++this.#stored === WIDEN_AFTER_BLOBS) this.store.widenPageCache(CAPTURE_PAGE_CACHE_KIB);
    // Only content that would be compressed is looked up first: a smaller
    // blob's insert (INSERT OR IGNORE) is the same lookup.
    if (data.byteLength < COMPRESS_MIN_BYTES) {
      this.store.putBlob(data, id);
      return;
    }
    if (this.store.hasObject(id)) return;
    if (this.#pool === undefined) {
      this.#compressible += data.byteLength;
      if (this.#compressible >= POOL_AFTER_BYTES) this.#pool = this.#startPool();
    }
    if (this.#pool?.deflate({ id, data }, data)) return;
    this.store.putBlob(data, id);
  }

  /** Waits for the worker's last results and stores them. */
  finish(): void {
    this.#pool?.finish();
  }

  /** Stops the worker, if one was started. */
  close(): void {
    this.#pool?.close();
  }

  #startPool(): ZlibPool<{ id: string; data: Uint8Array }> | null {
    return ZlibPool.start(({ id, data }, outcome) => {
      if (outcome.kind === "packed") {
        this.store.putPackedBlob(id, data.byteLength, "deflate", outcome.bytes);
      } else if (outcome.kind === "raw") {
        this.store.putPackedBlob(id, data.byteLength, "raw", data);
      } else {
        this.store.putBlob(data, id);
      }
    });
  }
}
