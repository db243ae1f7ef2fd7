/**
 * Incremental capture: a long-lived process keeps a model of the workspace
 * (every manifest entry and skipped record, and the ignore rules of every
 * directory it descended into) and, at each capture, re-examines only the
 * paths filesystem events say changed (`fs_events.ts`). The result is the
 * manifest a full {@linkcode captureWorkspace} would build at that moment:
 * the same walk (a partial walk from each changed path's directory, with that
 * directory's rules) and the same {@linkcode ItemCapture} classify and read
 * every path.
 *
 * The model is compact (a watch process holds it for hours): paths are
 * interned in a {@linkcode PathTable} (a node per path: its parent's number
 * and its last segment), and what is recorded of a file (size, mode, device,
 * inode, blob id as 32 bytes) lives in that table's typed arrays, so a file
 * costs a few dozen bytes plus its name. Rows of the stat cache are read one
 * by one at the first walk, never all at once.
 *
 * It falls back to a full walk at the first capture, when events overflowed
 * or could not be watched, when an ignore file at the root changed, when the
 * capture options or the store's garbage collection changed what it may
 * assume, after a capture whose transaction did not commit
 * ({@linkcode IncrementalCapture.invalidate}), and whenever a partial walk
 * fails. Where inotify is not available (Node.js, macOS, Windows) or the
 * workspace lies on a network or FUSE filesystem, every capture is a full
 * walk. Files with more than one hard link are re-read at every capture (a
 * write through another link raises no event here).
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { captureWorkspace } from "./capture.ts";
 * import { IncrementalCapture } from "./incremental.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/a.txt`, "a\n");
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const incremental = new IncrementalCapture(store);
 * store.transaction("capture", () => incremental.capture());
 * await Deno.writeTextFile(`${dir}/b.txt`, "b\n");
 * const next = store.transaction("capture", () => incremental.capture());
 * const full = store.transaction("capture", () => captureWorkspace(store));
 * if (next.treeId !== full.treeId) throw new Error("not the tree a full capture builds");
 * incremental.close();
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import { type DirtySet, WorkspaceWatcher } from "./io/fs_events.ts";
import { IGNORE_FILE_NAMES, type IgnoreStack } from "./io/ignore.ts";
import { type WalkItem, walkWorkspace } from "./io/walk.ts";
import { collectGarbage, lstat } from "../runtime.ts";
import { lastGc } from "../repository/gc.ts";
import {
  type CaptureOptions,
  type CapturePlan,
  capturePlan,
  type CaptureResult,
  type CaptureStats,
  captureWorkspace,
  ItemCapture,
} from "./capture.ts";
import type { Store } from "../repository/store.ts";
import { markTreeCacheRowsPartial, treeCacheDirs } from "../repository/tree_cache.ts";
import {
  compareSkipped,
  MAX_TREE_ENTRIES,
  MAX_TREE_SKIPPED,
  type SkippedEntry,
  type TreeEntry,
  type TreeManifest,
  validateTree,
} from "../format/tree.ts";
import { type DirEntry, dirObject, type DirSkipped, entryNameProblem } from "../format/dir_tree.ts";
import { NONE, PathTable, ROOT } from "./_path_table.ts";

/** How an {@linkcode IncrementalCapture} has been working. */
export interface IncrementalStatus {
  /** `events` while filesystem events are trusted, else `walk` (every capture walks). */
  mode: "events" | "walk";
  /** Why captures walk the whole workspace, or null. */
  reason: string | null;
  /** Directories watched. */
  watched: number;
  /** Captures that walked the whole workspace. */
  fullWalks: number;
  /** Captures that re-examined only what changed. */
  incremental: number;
  /** Paths re-examined by the last capture (null after a full walk). */
  lastChanged: number | null;
}

interface DirNode {
  /** The ignore rules in effect inside the directory. */
  ignore: IgnoreStack;
  dev: number;
  ino: number;
  mode: number;
  uid: number;
  gid: number;
}

/** A file entry (size, mode and blob in the table's columns). */
const FILE = 1;
/** A symlink entry (its target in `targets`). */
const SYMLINK = 2;
/** A directory the walk descended into (in `dirs`). */
const DIR = 4;
/** Skipped records (their reasons in `skips`). */
const SKIP = 8;
/** A regular file whose device and inode are in the table's columns. */
const INODE = 16;
/** What makes a node a key: something of it is recorded. */
const KEY = FILE | SYMLINK | DIR | SKIP;

/** Filesystems whose changes made elsewhere raise no local inotify event. */
const REMOTE_FILESYSTEMS: ReadonlySet<number> = new Set([
  0x6969, // NFS
  0x517b, // SMB
  0xff534d42, // CIFS
  0xfe534d42, // SMB2
  0x65735546, // FUSE (sshfs, virtiofs through FUSE, …)
  0x01021997, // 9P (v9fs)
  0x00c36400, // Ceph
  0x5346414f, // AFS
  0x73757245, // Coda
  0x01161970, // GFS2
  0x7461636f, // OCFS2
  0x6e667364, // nfsd
  0x47504653, // GPFS
  0x0bd00bd0, // Lustre
]);

function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

function baseOf(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

class NeedsFullWalk extends Error {}

/** Captures a workspace again and again, re-examining only what changed. */
export class IncrementalCapture {
  /**
   * Every path the model knows (entries, skipped records, directories, and
   * the directories above them), interned: see `_path_table.ts`.
   */
  private readonly table = new PathTable();
  /** Symlink targets by node. */
  private readonly targets = new Map<number, string>();
  /** The stored tree of each directory, null for one that holds nothing (not recorded). */
  private readonly dirIds = new Map<number, string | null>();
  /** Directories whose tree must be built again (every ancestor of one is in it too). */
  private readonly dirtyDirs = new Set<number>();
  /** Bumped whenever the model changes: a result's flat manifest is built from this model. */
  private generation = 0;
  /** The reasons of each node's skipped records, sorted. */
  private readonly skips = new Map<number, string[]>();
  private readonly dirs = new Map<number, DirNode>();
  private readonly multiLinked = new Set<number>();
  /** Files recorded with more than one link since the links were last looked up. */
  private readonly linkedNow = new Set<number>();
  /** Nodes recorded by the capture under way (an incremental one), else null. */
  private recorded: Set<number> | null = null;
  private unpacked: string[] = [];
  private readonly devices = new Set<number>();
  private totals = { files: 0, symlinks: 0, bytes: 0, skipped: 0 };
  private plan: CapturePlan | null = null;
  private gcMark: string | null | undefined = undefined;
  private built = false;
  private changed = true;
  private last: { treeId: string } | null = null;
  private watcher: WorkspaceWatcher | null;
  private walkReason: string | null = null;
  private readonly counters = {
    fullWalks: 0,
    incremental: 0,
    lastChanged: null as number | null,
  };

  /**
   * Watches `store`'s workspace from the first capture on. `options` are
   * those of every capture (`maxFileBytes`); `watch: false` makes every
   * capture a full walk.
   */
  constructor(
    private readonly store: Store,
    private readonly options: Pick<CaptureOptions, "maxFileBytes"> & { watch?: boolean } = {},
  ) {
    this.watcher = options.watch === false ? null : WorkspaceWatcher.open(store.workspaceRoot);
    if (this.watcher === null) {
      this.walkReason = options.watch === false
        ? "events are turned off"
        : "filesystem events are not available on this system or runtime";
    }
  }

  /** How captures have been made so far. */
  get status(): IncrementalStatus {
    return {
      mode: this.walkReason === null ? "events" : "walk",
      reason: this.walkReason,
      watched: this.watcher?.size ?? 0,
      ...this.counters,
    };
  }

  /** How many paths the model holds (interned nodes, the root and the directories above records included). */
  get paths(): number {
    return this.table.count;
  }

  /**
   * Forgets the model: the next capture walks the whole workspace. Call it
   * when the transaction a capture ran in did not commit (its blobs are gone).
   */
  invalidate(): void {
    this.built = false;
  }

  /** Reads pending events (keeps the kernel's queue short between captures). */
  poll(): void {
    this.watcher?.drain();
  }

  /**
   * Captures the workspace into the store; call it inside a store
   * transaction, and {@linkcode invalidate} if that transaction fails.
   */
  capture(): CaptureResult {
    if (this.watcher === null || this.walkReason !== null) {
      this.counters.fullWalks += 1;
      this.counters.lastChanged = null;
      return captureWorkspace(this.store, this.options);
    }
    const plan = capturePlan(this.store, this.options);
    const gcMark = this.gcMarkNow();
    this.watcher.drain();
    const dirty = this.watcher.take();
    if (this.watcher.broken !== null) {
      this.stopWatching(this.watcher.broken);
      return this.capture();
    }
    if (
      !this.built || dirty.all || plan.fingerprint !== this.plan?.fingerprint ||
      gcMark !== this.gcMark
    ) {
      return this.rebuild(plan, gcMark);
    }
    const items = new ItemCapture(this.store, plan, { persist: true, cache: "write" });
    let fullWalk = false;
    try {
      this.counters.lastChanged = this.apply(dirty, plan, items);
      items.finish();
      // The tree cache's rows of the directories changed here no longer
      // describe them (and say nothing of rows written below them).
      const dirs = new Set(dirty.relist);
      for (const path of dirty.paths) dirs.add(parentOf(path));
      markTreeCacheRowsPartial(this.store, dirs);
      this.counters.incremental += 1;
    } catch (error) {
      if (!(error instanceof NeedsFullWalk) && !isWalkFailure(error)) throw error;
      fullWalk = true;
    } finally {
      this.recorded = null;
      items.close();
    }
    if (fullWalk) return this.rebuild(plan, gcMark);
    if (this.watcher.broken !== null) {
      this.stopWatching(this.watcher.broken);
      return this.capture();
    }
    return this.result(items.stats.hashed);
  }

  /**
   * The manifests this capture stored uncompressed since the last call:
   * compress them with `Store.packTree` when idle.
   */
  takeUnpacked(): string[] {
    const ids = this.unpacked;
    this.unpacked = [];
    return ids;
  }

  /** Stops watching. */
  close(): void {
    this.watcher?.close();
    this.watcher = null;
  }

  private stopWatching(reason: string): void {
    this.walkReason = reason;
    this.watcher?.close();
    this.watcher = null;
  }

  private gcMarkNow(): string | null {
    return lastGc(this.store);
  }

  private rebuild(plan: CapturePlan, gcMark: string | null): CaptureResult {
    const watcher = this.watcher!;
    this.counters.fullWalks += 1;
    this.counters.lastChanged = null;
    this.generation += 1;
    this.table.clear();
    this.targets.clear();
    this.dirIds.clear();
    this.dirtyDirs.clear();
    this.skips.clear();
    this.dirs.clear();
    this.multiLinked.clear();
    this.linkedNow.clear();
    this.nameable.clear();
    this.totals = { files: 0, symlinks: 0, bytes: 0, skipped: 0 };
    this.built = false;
    this.devices.clear();
    // The nodes that became keys, linked into their directories' trees once
    // every directory is known.
    const keys: number[] = [];
    // Rows read one by one: a map of every row would be the largest thing
    // this process ever holds, and the heap keeps what it once grew to.
    const items = new ItemCapture(this.store, plan, { persist: true, cache: "lookup" });
    try {
      for (
        const item of walkWorkspace(plan.root, {
          ...plan.walk,
          onDescend: (rel, abs) => watcher.watch(rel, abs),
          onDirectory: (rel, ignore, stats) => {
            const node = this.setDir(rel, ignore, stats);
            if (node !== ROOT) keys.push(node);
          },
        })
      ) {
        const result = items.add(item);
        // Each record is checked with the manifest rules, as a full capture's
        // validation of its whole manifest does (order and uniqueness hold by
        // construction: one node per path).
        checkRecord(result);
        const node = this.record(item, result);
        if (node !== NONE) keys.push(node);
      }
      items.finish();
    } finally {
      items.close();
    }
    items.pruneCache();
    // Rows were written below directories the tree cache has no row for: the
    // next capture reading its rows walks their parents (and prunes what went).
    const rows = treeCacheDirs(this.store);
    const parents = new Set<string>();
    for (const node of this.dirs.keys()) {
      const rel = this.table.pathOf(node);
      if (rel !== "" && !rows.has(rel)) parents.add(parentOf(rel));
    }
    markTreeCacheRowsPartial(this.store, parents);
    this.findLinks();
    for (const node of keys) this.link(node);
    keys.length = 0;
    if (
      this.totals.files + this.totals.symlinks > MAX_TREE_ENTRIES ||
      this.totals.skipped > MAX_TREE_SKIPPED
    ) {
      validateTree(this.flatTree()); // throws what a full capture would
    }
    this.markDirty(ROOT);
    watcher.prune((rel) => this.hasDir(rel));
    this.plan = plan;
    this.gcMark = gcMark;
    this.built = true;
    this.changed = true;
    const result = this.result(items.stats.hashed);
    // The walk's garbage (stat objects, read buffers, entries) goes now, not
    // whenever the next allocations would have triggered a collection.
    collectGarbage();
    return result;
  }

  /** A reason not to trust events for the filesystem holding `dir`, or null. */
  private remoteFilesystem(dir: string): string | null {
    try {
      const type = Number(fs.statfsSync(dir).type);
      return REMOTE_FILESYSTEMS.has(type >>> 0)
        ? `the workspace is on a network or FUSE filesystem (type 0x${type.toString(16)})`
        : null;
    } catch {
      return null; // no statfs here: nothing known against events
    }
  }

  /** Records the directory `rel` the walk descended into; returns its node. */
  private setDir(rel: string, ignore: IgnoreStack, stats: DirStats): number {
    if (!this.devices.has(stats.dev)) {
      // A mount point below the root: events there are only as good as its filesystem.
      this.devices.add(stats.dev);
      const remote = this.remoteFilesystem(
        rel === "" ? this.store.workspaceRoot : `${this.store.workspaceRoot}/${rel}`,
      );
      if (remote !== null) this.watcher!.broken ??= remote;
    }
    const node = this.table.intern(rel);
    this.table.flags[node]! |= DIR;
    this.dirs.set(node, {
      ignore,
      dev: stats.dev,
      ino: stats.ino,
      mode: stats.mode,
      uid: stats.uid ?? -1,
      gid: stats.gid ?? -1,
    });
    return node;
  }

  /** The directory the walk descended into at `rel`, if the model holds one. */
  private dirAt(rel: string): DirNode | undefined {
    const node = this.table.find(rel);
    return node === NONE ? undefined : this.dirs.get(node);
  }

  private hasDir(rel: string): boolean {
    return this.dirAt(rel) !== undefined;
  }

  /**
   * Adds what the walk yielded for `item` to the model; returns its node if
   * it is a new key, else `NONE`.
   */
  private record(item: WalkItem, result: TreeEntry | SkippedEntry): number {
    const path = result.path;
    const table = this.table;
    const node = table.intern(path);
    this.recorded?.add(node);
    const isNew = (table.flags[node]! & KEY) === 0;
    // What is recorded for a regular file depends on its bytes (too_large,
    // secret_content, its blob): index it by inode, whatever the result.
    if (item.kind === "file") {
      this.linkInode(node, item.stat.dev, item.stat.ino, item.links);
    } else if (item.kind === "skip" && item.reason === "too_large") {
      try {
        const stat = lstat(`${this.store.workspaceRoot}/${path}`);
        if (stat.isFile()) this.linkInode(node, stat.dev, stat.ino, stat.nlink);
      } catch {
        // Gone since: its directory's events will say so.
      }
    }
    if ("reason" in result) {
      this.markDirty(this.homeOf(node));
      const reasons = this.skips.get(node);
      if (reasons === undefined) {
        this.skips.set(node, [result.reason]);
        table.flags[node]! |= SKIP;
        this.totals.skipped += 1;
      } else if (!reasons.includes(result.reason)) {
        reasons.push(result.reason);
        reasons.sort();
        this.totals.skipped += 1;
      }
      return isNew ? node : NONE;
    }
    if (result.type === "file") {
      table.flags[node]! |= FILE;
      table.size[node] = result.size;
      table.mode[node] = result.mode;
      table.setBlobHex(node, result.blob);
      this.totals.files += 1;
      this.totals.bytes += result.size;
    } else {
      table.flags[node]! |= SYMLINK;
      this.targets.set(node, result.target);
      this.totals.symlinks += 1;
    }
    this.markDirty(this.homeOf(node));
    return isNew ? node : NONE;
  }

  /**
   * Indexes a regular file by inode. A file with other hard links is
   * examined again at every capture (a write through another link raises no
   * event for it), and so are the other paths of its inode (whose link count
   * grew silently): {@linkcode findLinks} looks those up.
   */
  private linkInode(node: number, dev: number, ino: number, links: number): void {
    const table = this.table;
    table.flags[node]! |= INODE;
    table.dev[node] = dev;
    table.ino[node] = ino;
    if (links > 1) {
      this.multiLinked.add(node);
      this.linkedNow.add(node);
    } else this.multiLinked.delete(node);
  }

  /**
   * Marks every file the model holds that shares an inode with one recorded
   * with several links since the last call: one pass over the table, only
   * when there is such a file.
   */
  private findLinks(): void {
    if (this.linkedNow.size === 0) return;
    const table = this.table;
    const inodes = new Set<string>();
    for (const node of this.linkedNow) {
      if ((table.flags[node]! & INODE) !== 0) inodes.add(`${table.dev[node]}:${table.ino[node]}`);
    }
    this.linkedNow.clear();
    this.markInodes(inodes);
  }

  /** Marks every file of the model whose `dev:ino` is in `inodes` as multi-linked. */
  private markInodes(inodes: ReadonlySet<string>): void {
    if (inodes.size === 0) return;
    const table = this.table;
    const inos = new Set<number>();
    for (const inode of inodes) inos.add(Number(inode.slice(inode.indexOf(":") + 1)));
    for (let node = 1; node < table.end; node++) {
      if ((table.flags[node]! & INODE) === 0 || !inos.has(table.ino[node]!)) continue;
      if (inodes.has(`${table.dev[node]}:${table.ino[node]}`)) this.multiLinked.add(node);
    }
  }

  /**
   * Changed paths that are files with several links may be new links to
   * files the model holds (whose link count grew without an event for them),
   * even when the new name itself is not captured (a secret, ignored).
   */
  private noticeLinks(plan: CapturePlan, paths: Iterable<string>): void {
    const inodes = new Set<string>();
    for (const path of paths) {
      try {
        const stat = lstat(`${plan.root}/${path}`);
        if (stat.isFile() && stat.nlink >= 2) inodes.add(`${stat.dev}:${stat.ino}`);
      } catch {
        // Gone: nothing to notice.
      }
    }
    this.markInodes(inodes);
  }

  /** Removes `path` and everything below it from the model; returns whether a directory went. */
  private removeSubtree(path: string): boolean {
    const table = this.table;
    const top = table.find(path);
    if (top === NONE || top === ROOT) return false;
    let dirs = false;
    // Children before their parents: a child's leaving marks its parent
    // dirty, and the parent's own leaving takes that mark away again.
    const nodes = table.subtree(top);
    for (let i = nodes.length - 1; i >= 0; i--) {
      if (this.forget(nodes[i]!)) dirs = true;
      table.release(nodes[i]!);
    }
    // Directories above that were only on the way to what went.
    for (let up = table.parent[top]!; up !== ROOT && up !== NONE;) {
      const next = table.parent[up]!;
      if (!this.unused(up)) break;
      this.forget(up);
      table.release(up);
      up = next;
    }
    return dirs;
  }

  /** Whether `node` holds nothing: no record, no child, in no tree's records. */
  private unused(node: number): boolean {
    const table = this.table;
    return (table.flags[node]! & KEY) === 0 && table.kids[node] === undefined &&
      table.home[node] === NONE && table.first[node] === NONE;
  }

  /** Forgets what the model records of `node`; returns whether it was a directory. */
  private forget(node: number): boolean {
    const table = this.table;
    const flags = table.flags[node]!;
    if ((flags & FILE) !== 0) {
      this.totals.files -= 1;
      this.totals.bytes -= table.size[node]!;
    }
    if ((flags & SYMLINK) !== 0) {
      this.targets.delete(node);
      this.totals.symlinks -= 1;
    }
    this.multiLinked.delete(node);
    this.linkedNow.delete(node);
    const reasons = this.skips.get(node);
    if (reasons !== undefined) {
      this.skips.delete(node);
      this.totals.skipped -= reasons.length;
    }
    this.unlink(node);
    this.nameable.delete(node);
    table.flags[node] = 0;
    return this.dirs.delete(node);
  }

  /** Records `node` in its directory's tree (and that directory in its parent's, up to the root). */
  private link(node: number): void {
    const table = this.table;
    for (let child = node;;) {
      const home = this.homeOf(child);
      const was = table.home[child]!;
      if (was === home) return;
      if (was !== NONE) this.markDirty(table.detach(child));
      table.attach(child, home);
      this.markDirty(home);
      if (home === ROOT) return;
      child = home;
    }
  }

  /** Removes `node` from its directory's tree, and forgets its own tree. */
  private unlink(node: number): void {
    const table = this.table;
    const home = table.detach(node);
    if (home !== NONE) this.markDirty(home);
    for (let member = table.first[node]!; member !== NONE;) {
      const next = table.next[member]!;
      table.detach(member);
      member = next;
    }
    this.dirIds.delete(node);
    this.dirtyDirs.delete(node);
  }

  /** Parents found able (or not) to be directories of a tree, by node. */
  private readonly nameable = new Map<number, boolean>();

  /**
   * The directory whose tree records `node`: its parent, unless a segment
   * of the parent cannot be an entry name (then the root, under the whole
   * path), as `splitManifest` places skipped records.
   */
  private homeOf(node: number): number {
    const parent = this.table.parent[node]!;
    if (parent === ROOT || this.dirs.has(parent)) return parent;
    return this.isNameable(parent) ? parent : ROOT;
  }

  private isNameable(node: number): boolean {
    if (node === ROOT) return true;
    let ok = this.nameable.get(node);
    if (ok === undefined) {
      ok = entryNameProblem(this.table.names[node]!) === null &&
        this.isNameable(this.table.parent[node]!);
      this.nameable.set(node, ok);
    }
    return ok;
  }

  /** Marks directory `dir` and its ancestors for building again. */
  private markDirty(dir: number): void {
    for (let at = dir; !this.dirtyDirs.has(at); at = this.table.parent[at]!) {
      this.dirtyDirs.add(at);
      if (at === ROOT) return;
    }
  }

  /** Re-examines what `dirty` names; returns how many paths were re-examined. */
  private apply(dirty: DirtySet, plan: CapturePlan, items: ItemCapture): number {
    this.generation += 1;
    const paths = new Set(dirty.paths);
    this.noticeLinks(plan, paths);
    for (const node of this.multiLinked) paths.add(this.table.pathOf(node));
    const force = new Set<string>();
    for (const dir of dirty.relist) {
      if (dir === "") throw new NeedsFullWalk();
      paths.add(dir);
      force.add(dir);
    }
    const recorded = new Set<number>();
    this.recorded = recorded;
    const walked = new Set<string>();
    let examined = 0;
    let removedDirs = false;
    while (paths.size > 0) {
      const pass = this.pass([...paths].sort(), force, walked, plan, items);
      examined += pass.examined;
      removedDirs ||= pass.removedDirs;
      this.findLinks();
      // Entries found to have other links in this pass are re-read too.
      paths.clear();
      for (const node of this.multiLinked) {
        if (!recorded.has(node)) paths.add(this.table.pathOf(node));
      }
    }
    if (removedDirs) this.watcher!.prune((rel) => this.hasDir(rel));
    return examined;
  }

  /**
   * Re-examines `sorted` paths. Parents sort before what lies below them: a
   * directory walked again covers everything below it; one found unchanged
   * does not, so the changed paths below it are examined one by one.
   */
  private pass(
    sorted: readonly string[],
    force: ReadonlySet<string>,
    walked: Set<string>,
    plan: CapturePlan,
    items: ItemCapture,
  ): { examined: number; removedDirs: boolean } {
    const covered = (path: string): boolean => {
      for (let up = path; up !== ""; up = parentOf(up)) if (walked.has(up)) return true;
      return false;
    };
    let removedDirs = false;
    let examined = 0;
    for (const changed of sorted) {
      if (covered(changed)) continue;
      let path = changed;
      let parent = parentOf(path);
      // A change inside a directory that was not descended into (ignored,
      // excluded, new): re-examine that directory as an entry of its parent.
      while (parent !== "" && !this.hasDir(parent)) {
        path = parent;
        parent = parentOf(parent);
      }
      let again = force.has(changed);
      if ((IGNORE_FILE_NAMES as readonly string[]).includes(baseOf(path))) {
        // Its directory's rules changed: walk that directory again, whole.
        if (parent === "") throw new NeedsFullWalk();
        path = parent;
        parent = parentOf(parent);
        again = true;
      }
      if (covered(path)) continue;
      examined += 1;
      const node = this.dirAt(path);
      if (node !== undefined && !again && this.sameDirectory(plan, path, node)) continue;
      walked.add(path);
      if (this.removeSubtree(path)) removedDirs = true;
      const parentNode = this.dirAt(parent);
      if (parentNode === undefined) throw new NeedsFullWalk();
      const watcher = this.watcher!;
      for (
        const item of walkWorkspace(plan.root, {
          ...plan.walk,
          start: { dir: parent, ignore: parentNode.ignore, names: new Set([baseOf(path)]) },
          onDescend: (rel, abs) => watcher.watch(rel, abs),
          onDirectory: (rel, ignore, stats) => {
            const dir = this.setDir(rel, ignore, stats);
            if (dir !== ROOT) this.link(dir);
          },
        })
      ) {
        const result = items.add(item);
        checkRecord(result);
        const key = this.record(item, result);
        if (key !== NONE) this.link(key);
      }
      this.changed = true;
    }
    return { examined, removedDirs };
  }

  /**
   * Whether the directory at `path` is still the one the model describes:
   * still watched (a deleted directory's watch goes, and a new one may get
   * the same inode number) with the same identity, mode and owner.
   */
  private sameDirectory(plan: CapturePlan, path: string, node: DirNode): boolean {
    if (!this.watcher!.watching(path)) return false;
    try {
      const now = lstat(`${plan.root}/${path}`) as DirStats;
      return now.isDirectory() && now.dev === node.dev && now.ino === node.ino &&
        now.mode === node.mode && (now.uid ?? -1) === node.uid && (now.gid ?? -1) === node.gid;
    } catch {
      return false;
    }
  }

  private result(hashed: number): CaptureResult {
    const stats: CaptureStats = {
      files: this.totals.files,
      symlinks: this.totals.symlinks,
      skipped: this.totals.skipped,
      bytes: this.totals.bytes,
      hashed,
      reused: this.totals.files - hashed,
    };
    if (!this.changed && this.last !== null) return this.resultOf(this.last.treeId, stats);
    const treeId = this.writeDirs();
    this.last = { treeId };
    this.changed = false;
    return this.resultOf(treeId, stats);
  }

  /**
   * Builds and stores the tree of every dirty directory, deepest first, and
   * returns the root's id. Unchanged directories keep their trees: a
   * one-file change writes the trees on its path only.
   */
  private writeDirs(): string {
    const table = this.table;
    const order = [...this.dirtyDirs].map((dir) => ({ dir, depth: table.depth(dir) }))
      .sort((a, b) => b.depth - a.depth);
    for (const { dir } of order) {
      const entries: DirEntry[] = [];
      const skipped: DirSkipped[] = [];
      for (let key = table.first[dir]!; key !== NONE; key = table.next[key]!) {
        const name = table.parent[key] === dir ? table.names[key]! : table.pathOf(key);
        const flags = table.flags[key]!;
        if ((flags & FILE) !== 0) {
          entries.push({
            name,
            type: "file",
            blob: table.blobHex(key),
            size: table.size[key]!,
            mode: table.mode[key]!,
          });
        } else if ((flags & SYMLINK) !== 0) {
          entries.push({ name, type: "symlink", target: this.targets.get(key)! });
        }
        for (const reason of this.skips.get(key) ?? []) skipped.push({ name, reason });
        const sub = this.dirIds.get(key);
        if (sub !== undefined && sub !== null) entries.push({ name, type: "tree", tree: sub });
      }
      if (dir !== ROOT && entries.length === 0 && skipped.length === 0) {
        this.dirIds.set(dir, null);
        continue;
      }
      const object = dirObject(entries, skipped);
      if (!this.store.hasObject(object.id)) {
        // Stored uncompressed now, compressed while idle (see takeUnpacked).
        this.store.putTreeBytes(object.id, object.bytes, { pack: false });
        this.unpacked.push(object.id);
      }
      this.dirIds.set(dir, object.id);
    }
    this.dirtyDirs.clear();
    return this.dirIds.get(ROOT)!;
  }

  /** The flat manifest of the model as it is now. */
  private flatTree(): TreeManifest {
    const table = this.table;
    const entries: TreeEntry[] = [];
    const skipped: SkippedEntry[] = [];
    table.visit(ROOT, (node, path) => {
      const flags = table.flags[node]!;
      if ((flags & FILE) !== 0) {
        entries.push({
          path,
          type: "file",
          blob: table.blobHex(node),
          size: table.size[node]!,
          mode: table.mode[node]!,
        });
      } else if ((flags & SYMLINK) !== 0) {
        entries.push({ path, type: "symlink", target: this.targets.get(node)! });
      }
      for (const reason of this.skips.get(node) ?? []) skipped.push({ path, reason });
    });
    return { version: 1, entries, skipped };
  }

  /** A result whose flat manifest is built when first read, from the model as it is now. */
  private resultOf(treeId: string, stats: CaptureStats): CaptureResult {
    const generation = this.generation;
    let flat: TreeManifest | undefined;
    const flatTree = () => this.flatTree();
    const current = () => this.generation === generation;
    const skipped: SkippedEntry[] = [];
    for (const [node, reasons] of this.skips) {
      const path = this.table.pathOf(node);
      for (const reason of reasons) skipped.push({ path, reason });
    }
    skipped.sort(compareSkipped);
    return {
      treeId,
      stats,
      skipped,
      get tree(): TreeManifest {
        if (flat === undefined) {
          if (!current()) throw new Error("The capture's model has changed since this result");
          flat = flatTree();
        }
        return flat;
      },
    };
  }
}

/** What `onDirectory` and `lstat` report, with the owner where known. */
type DirStats = ReturnType<typeof lstat>;

/** Checks one new entry or record with the manifest rules (the rest was checked before). */
function checkRecord(result: TreeEntry | SkippedEntry): void {
  if ("reason" in result) validateTree({ version: 1, entries: [], skipped: [result] });
  else validateTree({ version: 1, entries: [result], skipped: [] });
}

/** A partial walk that could not list its start directory (it vanished meanwhile). */
function isWalkFailure(error: unknown): boolean {
  return error instanceof Error && /^Cannot read /.test(error.message);
}
