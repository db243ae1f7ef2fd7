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
import { lstat } from "../runtime.ts";
import { countOperations } from "../repository/operations.ts";
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
import {
  compareSkipped,
  type SkippedEntry,
  type TreeEntry,
  type TreeManifest,
  validateTree,
} from "../format/tree.ts";
import {
  type DirEntry,
  dirObject,
  type DirSkipped,
  entryNameProblem,
  splitManifest,
} from "../format/dir_tree.ts";

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

/** Index of the first key ≥ `key` in sorted `keys`. */
function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

class NeedsFullWalk extends Error {}

/** Captures a workspace again and again, re-examining only what changed. */
export class IncrementalCapture {
  /** Sorted paths that hold an entry, skipped records or a directory (not the root). */
  private keys: string[] = [];
  private readonly entries = new Map<string, TreeEntry>();
  /** The keys each directory's tree holds, by the directory's path (`""` the root). */
  private readonly children = new Map<string, Set<string>>();
  /** The stored tree of each directory, null for one that holds nothing (not recorded). */
  private readonly dirIds = new Map<string, string | null>();
  /** Directories whose tree must be built again (every ancestor of one is in it too). */
  private readonly dirtyDirs = new Set<string>();
  /** Bumped whenever the model changes: a result's flat manifest is built from this model. */
  private generation = 0;
  private readonly skips = new Map<string, string[]>();
  private readonly dirs = new Map<string, DirNode>();
  private readonly multiLinked = new Set<string>();
  /** Paths recorded by the capture under way. */
  private readonly recorded = new Set<string>();
  private unpacked: string[] = [];
  /** The inode (`dev:ino`) of each file entry, and the entries of each inode. */
  private readonly inodeOf = new Map<string, string>();
  private readonly pathsOf = new Map<string, Set<string>>();
  private readonly devices = new Set<number>();
  private totals = { files: 0, symlinks: 0, bytes: 0, skipped: 0 };
  private plan: CapturePlan | null = null;
  private gcMark: number | null = null;
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
    const gcMark = this.gcCount();
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
      this.counters.incremental += 1;
    } catch (error) {
      if (!(error instanceof NeedsFullWalk) && !isWalkFailure(error)) throw error;
      fullWalk = true;
    } finally {
      items.close();
    }
    if (fullWalk) return this.rebuild(plan, gcMark);
    if (this.watcher.broken !== null) {
      this.stopWatching(this.watcher.broken);
      return this.capture();
    }
    return this.result(items.stats.hashed, false);
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

  private gcCount(): number {
    return countOperations(this.store, "gc");
  }

  private rebuild(plan: CapturePlan, gcMark: number): CaptureResult {
    const watcher = this.watcher!;
    this.counters.fullWalks += 1;
    this.counters.lastChanged = null;
    this.generation += 1;
    this.keys = [];
    this.entries.clear();
    this.children.clear();
    this.dirIds.clear();
    this.dirtyDirs.clear();
    this.skips.clear();
    this.dirs.clear();
    this.multiLinked.clear();
    this.inodeOf.clear();
    this.pathsOf.clear();
    this.totals = { files: 0, symlinks: 0, bytes: 0, skipped: 0 };
    this.built = false;
    this.devices.clear();
    const keys: string[] = [];
    const items = new ItemCapture(this.store, plan, { persist: true, cache: "use" });
    try {
      for (
        const item of walkWorkspace(plan.root, {
          ...plan.walk,
          onDescend: (rel, abs) => watcher.watch(rel, abs),
          onDirectory: (rel, ignore, stats) => {
            this.setDir(rel, ignore, stats);
            if (rel !== "") keys.push(rel);
          },
        })
      ) {
        if (this.record(item, items.add(item))) keys.push(item.path);
      }
      items.finish();
    } finally {
      items.close();
    }
    items.pruneCache();
    keys.sort();
    this.keys = keys.filter((key, i) => i === 0 || keys[i - 1] !== key);
    for (const key of this.keys) this.link(key);
    this.markDirty("");
    watcher.prune((rel) => this.dirs.has(rel));
    this.plan = plan;
    this.gcMark = gcMark;
    this.built = true;
    this.changed = true;
    return this.result(items.stats.hashed, true);
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

  private setDir(rel: string, ignore: IgnoreStack, stats: DirStats): void {
    if (!this.devices.has(stats.dev)) {
      // A mount point below the root: events there are only as good as its filesystem.
      this.devices.add(stats.dev);
      const remote = this.remoteFilesystem(
        rel === "" ? this.store.workspaceRoot : `${this.store.workspaceRoot}/${rel}`,
      );
      if (remote !== null) this.watcher!.broken ??= remote;
    }
    this.dirs.set(rel, {
      ignore,
      dev: stats.dev,
      ino: stats.ino,
      mode: stats.mode,
      uid: stats.uid ?? -1,
      gid: stats.gid ?? -1,
    });
  }

  /**
   * Adds what the walk yielded for `item` to the model; returns whether
   * `item.path` is a new key.
   */
  private record(item: WalkItem, result: TreeEntry | SkippedEntry): boolean {
    const path = result.path;
    this.recorded.add(path);
    const isNew = !this.entries.has(path) && !this.skips.has(path) && !this.dirs.has(path);
    // What is recorded for a regular file depends on its bytes (too_large,
    // secret_content, its blob): index it by inode, whatever the result.
    if (item.kind === "file") {
      this.linkInode(path, `${item.stat.dev}:${item.stat.ino}`, item.links);
    } else if (item.kind === "skip" && item.reason === "too_large") {
      try {
        const stat = lstat(`${this.store.workspaceRoot}/${path}`);
        if (stat.isFile()) this.linkInode(path, `${stat.dev}:${stat.ino}`, stat.nlink);
      } catch {
        // Gone since: its directory's events will say so.
      }
    }
    if ("reason" in result) {
      this.markDirty(this.homeOf(path));
      const reasons = this.skips.get(path);
      if (reasons === undefined) {
        this.skips.set(path, [result.reason]);
        this.totals.skipped += 1;
      } else if (!reasons.includes(result.reason)) {
        reasons.push(result.reason);
        reasons.sort();
        this.totals.skipped += 1;
      }
      return isNew;
    }
    this.entries.set(path, result);
    this.markDirty(this.homeOf(path));
    if (result.type === "file") {
      this.totals.files += 1;
      this.totals.bytes += result.size;
    } else this.totals.symlinks += 1;
    return isNew;
  }

  /**
   * Indexes a regular file by inode. A file with other hard links is
   * examined again at every capture (a write through another link raises no
   * event for it), and so are the other paths of its inode (whose link count
   * grew silently).
   */
  private linkInode(path: string, inode: string, links: number): void {
    this.inodeOf.set(path, inode);
    let paths = this.pathsOf.get(inode);
    if (paths === undefined) this.pathsOf.set(inode, paths = new Set());
    paths.add(path);
    if (links > 1) { for (const linked of paths) this.multiLinked.add(linked); }
    else this.multiLinked.delete(path);
  }

  /**
   * A changed path that is a file with several links may be a new link to a
   * file the model holds (whose link count grew without an event for it),
   * even when the new name itself is not captured (a secret, ignored).
   */
  private noticeLinks(plan: CapturePlan, path: string): void {
    try {
      const stat = lstat(`${plan.root}/${path}`);
      if (!stat.isFile() || stat.nlink < 2) return;
      const paths = this.pathsOf.get(`${stat.dev}:${stat.ino}`);
      if (paths !== undefined) { for (const linked of paths) this.multiLinked.add(linked); }
    } catch {
      // Gone: nothing to notice.
    }
  }

  private unlinkInode(path: string): void {
    const inode = this.inodeOf.get(path);
    if (inode === undefined) return;
    this.inodeOf.delete(path);
    const paths = this.pathsOf.get(inode);
    paths?.delete(path);
    if (paths?.size === 0) this.pathsOf.delete(inode);
  }

  /** Removes `path` and everything below it from the model; returns whether a directory went. */
  private removeSubtree(path: string): boolean {
    let dirs = false;
    const at = lowerBound(this.keys, path);
    if (this.keys[at] === path) {
      if (this.forget(path)) dirs = true;
      this.keys.splice(at, 1);
    }
    // Keys below `path` are contiguous from `path/` on ("a-b" and "a.b" sort
    // between "a" and "a/…", so they are not in this range).
    const prefix = `${path}/`;
    const start = lowerBound(this.keys, prefix);
    let end = start;
    while (end < this.keys.length && this.keys[end]!.startsWith(prefix)) {
      if (this.forget(this.keys[end]!)) dirs = true;
      end += 1;
    }
    this.keys.splice(start, end - start);
    return dirs;
  }

  private forget(key: string): boolean {
    const entry = this.entries.get(key);
    if (entry !== undefined) {
      this.entries.delete(key);
      this.multiLinked.delete(key);
      if (entry.type === "file") {
        this.totals.files -= 1;
        this.totals.bytes -= entry.size;
      } else this.totals.symlinks -= 1;
    }
    this.multiLinked.delete(key);
    this.unlinkInode(key);
    const reasons = this.skips.get(key);
    if (reasons !== undefined) {
      this.skips.delete(key);
      this.totals.skipped -= reasons.length;
    }
    this.unlink(key);
    return this.dirs.delete(key);
  }

  private insertKey(key: string): void {
    const at = lowerBound(this.keys, key);
    if (this.keys[at] !== key) this.keys.splice(at, 0, key);
    this.link(key);
  }

  /** Records `key` in its directory's tree (and that directory in its parent's, up to the root). */
  private link(key: string): void {
    for (let child = key;;) {
      const home = this.homeOf(child);
      let set = this.children.get(home);
      if (set === undefined) this.children.set(home, set = new Set());
      if (set.has(child)) return;
      set.add(child);
      this.markDirty(home);
      if (home === "") return;
      child = home;
    }
  }

  /** Removes `key` from its directory's tree. */
  private unlink(key: string): void {
    const home = this.homeOf(key);
    if (this.children.get(home)?.delete(key)) this.markDirty(home);
    this.children.delete(key);
    this.dirIds.delete(key);
    this.dirtyDirs.delete(key);
  }

  /** Parents found able (or not) to be directories of a tree, by path. */
  private readonly nameable = new Map<string, boolean>();

  /**
   * The directory whose tree records `key`: its parent, unless a segment of
   * the parent cannot be an entry name (then the root, under the whole path),
   * as `splitManifest` places skipped records.
   */
  private homeOf(key: string): string {
    const parent = parentOf(key);
    if (parent === "" || this.dirs.has(parent)) return parent;
    let ok = this.nameable.get(parent);
    if (ok === undefined) {
      ok = parent.split("/").every((s) => entryNameProblem(s) === null);
      this.nameable.set(parent, ok);
    }
    return ok ? parent : "";
  }

  /** Marks directory `dir` and its ancestors for building again. */
  private markDirty(dir: string): void {
    for (let at = dir; !this.dirtyDirs.has(at); at = parentOf(at)) {
      this.dirtyDirs.add(at);
      if (at === "") return;
    }
  }

  /** Re-examines what `dirty` names; returns how many paths were re-examined. */
  private apply(dirty: DirtySet, plan: CapturePlan, items: ItemCapture): number {
    this.generation += 1;
    const paths = new Set(dirty.paths);
    for (const path of paths) this.noticeLinks(plan, path);
    for (const path of this.multiLinked) paths.add(path);
    const force = new Set<string>();
    for (const dir of dirty.relist) {
      if (dir === "") throw new NeedsFullWalk();
      paths.add(dir);
      force.add(dir);
    }
    this.recorded.clear();
    const walked = new Set<string>();
    let examined = 0;
    let removedDirs = false;
    while (paths.size > 0) {
      const pass = this.pass([...paths].sort(), force, walked, plan, items);
      examined += pass.examined;
      removedDirs ||= pass.removedDirs;
      // Entries found to have other links in this pass are re-read too.
      paths.clear();
      for (const path of this.multiLinked) if (!this.recorded.has(path)) paths.add(path);
    }
    if (removedDirs) this.watcher!.prune((rel) => this.dirs.has(rel));
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
      while (parent !== "" && !this.dirs.has(parent)) {
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
      const node = this.dirs.get(path);
      if (node !== undefined && !again && this.sameDirectory(plan, path, node)) continue;
      walked.add(path);
      if (this.removeSubtree(path)) removedDirs = true;
      const parentNode = this.dirs.get(parent);
      if (parentNode === undefined) throw new NeedsFullWalk();
      const watcher = this.watcher!;
      for (
        const item of walkWorkspace(plan.root, {
          ...plan.walk,
          start: { dir: parent, ignore: parentNode.ignore, names: new Set([baseOf(path)]) },
          onDescend: (rel, abs) => watcher.watch(rel, abs),
          onDirectory: (rel, ignore, stats) => {
            this.setDir(rel, ignore, stats);
            this.insertKey(rel);
          },
        })
      ) {
        const result = items.add(item);
        checkRecord(result);
        if (this.record(item, result)) this.insertKey(result.path);
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

  private result(hashed: number, validated: boolean): CaptureResult {
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
    if (validated) {
      // After a full walk: the trees built directory by directory must be
      // the ones a full capture's split of the validated manifest gives.
      const tree = validateTree(this.flatTree());
      if (splitManifest(tree).rootId !== treeId) {
        throw new Error("Incremental directory trees differ from the canonical split");
      }
    }
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
    const depth = (dir: string): number => dir === "" ? -1 : dir.split("/").length;
    const order = [...this.dirtyDirs].sort((a, b) => depth(b) - depth(a));
    for (const dir of order) {
      const entries: DirEntry[] = [];
      const skipped: DirSkipped[] = [];
      for (const key of this.children.get(dir) ?? []) {
        const name = parentOf(key) === dir ? baseOf(key) : key;
        const entry = this.entries.get(key);
        if (entry !== undefined) {
          entries.push(
            entry.type === "file"
              ? { name, type: "file", blob: entry.blob, size: entry.size, mode: entry.mode }
              : { name, type: "symlink", target: entry.target },
          );
        }
        for (const reason of this.skips.get(key) ?? []) skipped.push({ name, reason });
        const sub = this.dirIds.get(key);
        if (sub !== undefined && sub !== null) entries.push({ name, type: "tree", tree: sub });
      }
      if (dir !== "" && entries.length === 0 && skipped.length === 0) {
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
    return this.dirIds.get("")!;
  }

  /** The flat manifest of the model as it is now. */
  private flatTree(): TreeManifest {
    const entries: TreeEntry[] = [];
    const skipped: SkippedEntry[] = [];
    for (const key of this.keys) {
      const entry = this.entries.get(key);
      if (entry !== undefined) entries.push(entry);
      for (const reason of this.skips.get(key) ?? []) skipped.push({ path: key, reason });
    }
    return { version: 1, entries, skipped };
  }

  /** A result whose flat manifest is built when first read, from the model as it is now. */
  private resultOf(treeId: string, stats: CaptureStats): CaptureResult {
    const generation = this.generation;
    let flat: TreeManifest | undefined;
    const flatTree = () => this.flatTree();
    const current = () => this.generation === generation;
    const skipped: SkippedEntry[] = [];
    for (const [path, reasons] of this.skips) {
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
