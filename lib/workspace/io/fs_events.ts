/**
 * Knowing which paths of a workspace changed, from Linux inotify events (fs
 * layer; the libc binding is `openInotify` in `runtime.ts`).
 *
 * A {@linkcode WorkspaceWatcher} watches the directories it is told to (a
 * capture's walk watches each directory just before listing it) and turns
 * the kernel's events into a {@linkcode DirtySet}: the relative paths that
 * were created, written, removed, renamed or changed mode or owner. Events
 * wait in the kernel's queue until {@linkcode WorkspaceWatcher.drain} reads
 * them, so a busy process loses none: every change that completed before a
 * drain is in the set after it. When the queue overflowed, a watch could not
 * be added, the root itself moved, or a name was not valid UTF-8 for its
 * directory, the set says so (`all`, `relist`) and the caller walks again.
 *
 * Deno's `Deno.watchFs` is not used: it hands events over through a
 * 16-slot channel and drops the rest silently while JavaScript is busy.
 *
 * @example
 * ```ts
 * import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import { WorkspaceWatcher } from "./fs_events.ts";
 * const root = mkdtempSync(join(tmpdir(), "ctxsnap-doc-"));
 * const watcher = WorkspaceWatcher.open(root);
 * if (watcher !== null) {
 *   watcher.watch("", root);
 *   writeFileSync(join(root, "a.txt"), "a");
 *   watcher.drain();
 *   const dirty = watcher.take();
 *   if (!dirty.paths.has("a.txt")) throw new Error("the write was not seen");
 *   watcher.close();
 * }
 * rmSync(root, { recursive: true });
 * ```
 * @module
 */
import { type Inotify, openInotify } from "../../runtime.ts";

/** What changed since the last {@linkcode WorkspaceWatcher.take}. */
export interface DirtySet {
  /** Everything may have changed: walk the whole workspace again. */
  all: boolean;
  /** Relative paths (never `""`) whose entry may have changed. */
  paths: Set<string>;
  /** Directories whose whole listing must be read again (a name that is not UTF-8 changed). */
  relist: Set<string>;
}

const IN_MODIFY = 0x2;
const IN_ATTRIB = 0x4;
const IN_CLOSE_WRITE = 0x8;
const IN_MOVED_FROM = 0x40;
const IN_MOVED_TO = 0x80;
const IN_CREATE = 0x100;
const IN_DELETE = 0x200;
const IN_DELETE_SELF = 0x400;
const IN_MOVE_SELF = 0x800;
const IN_UNMOUNT = 0x2000;
const IN_Q_OVERFLOW = 0x4000;
const IN_IGNORED = 0x8000;
const IN_ONLYDIR = 0x01000000;
const IN_DONT_FOLLOW = 0x02000000;
const IN_EXCL_UNLINK = 0x04000000;

/** The events every watch asks for. */
const WATCH_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
  IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW |
  IN_EXCL_UNLINK;

/** Most dirty paths kept before the set collapses to `all`. */
export const MAX_DIRTY_PATHS = 100_000;

const ENOENT = 2;
const ENOTDIR = 20;

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Watches a workspace's directories and collects what changed. */
export class WorkspaceWatcher {
  private readonly pathOf = new Map<number, string>();
  private readonly wdOf = new Map<string, number>();
  private readonly buffer = new Uint8Array(64 * 1024);
  private dirty: DirtySet = { all: false, paths: new Set(), relist: new Set() };
  /** Why events can no longer be trusted (a watch failed), or null. */
  broken: string | null = null;

  private constructor(private readonly inotify: Inotify) {}

  /** Opens a watcher, or returns null where inotify is not available. */
  static open(_root: string): WorkspaceWatcher | null {
    const inotify = openInotify();
    return inotify === null ? null : new WorkspaceWatcher(inotify);
  }

  /** How many directories are watched. */
  get size(): number {
    return this.wdOf.size;
  }

  /**
   * Watches the directory `rel` (relative path, `""` for the root) at `abs`,
   * without following a symlink. A directory that vanished or stopped being
   * one is not an error (its parent's events report that); any other failure
   * (the watch limit, say) makes {@linkcode broken} say why.
   */
  watch(rel: string, abs: string): void {
    const wd = this.inotify.addWatch(abs, WATCH_MASK);
    if (wd < 0) {
      if (-wd !== ENOENT && -wd !== ENOTDIR) {
        this.broken ??= `cannot watch ${JSON.stringify(abs)} (errno ${-wd})`;
      }
      return;
    }
    // The same inode watched again (a directory moved) keeps its descriptor.
    const previous = this.pathOf.get(wd);
    if (previous !== undefined && previous !== rel && this.wdOf.get(previous) === wd) {
      this.wdOf.delete(previous);
    }
    this.pathOf.set(wd, rel);
    this.wdOf.set(rel, wd);
  }

  /** Whether the directory `rel` is watched (its watch was not removed since). */
  watching(rel: string): boolean {
    return this.wdOf.has(rel);
  }

  /** Stops watching every directory for which `keep(rel)` is false. */
  prune(keep: (rel: string) => boolean): void {
    for (const [rel, wd] of [...this.wdOf]) {
      if (keep(rel)) continue;
      this.wdOf.delete(rel);
      this.pathOf.delete(wd);
      this.inotify.removeWatch(wd);
    }
  }

  /** Reads every event the kernel has queued into the dirty set. */
  drain(): void {
    for (;;) {
      const n = this.inotify.read(this.buffer);
      if (n === 0) return;
      if (n < 0) {
        this.broken ??= `reading events failed (errno ${-n})`;
        this.dirty.all = true;
        return;
      }
      this.parse(n);
    }
  }

  private parse(n: number): void {
    const view = new DataView(this.buffer.buffer, 0, n);
    let offset = 0;
    while (offset + 16 <= n) {
      const wd = view.getInt32(offset, true);
      const mask = view.getUint32(offset + 4, true);
      const length = view.getUint32(offset + 12, true);
      const nameBytes = this.buffer.subarray(offset + 16, offset + 16 + length);
      offset += 16 + length;
      if ((mask & (IN_Q_OVERFLOW | IN_UNMOUNT)) !== 0) {
        this.dirty.all = true;
        continue;
      }
      const dir = this.pathOf.get(wd);
      if (dir === undefined) continue;
      if ((mask & IN_IGNORED) !== 0) {
        this.pathOf.delete(wd);
        if (this.wdOf.get(dir) === wd) this.wdOf.delete(dir);
      }
      const end = nameBytes.indexOf(0);
      const raw = end < 0 ? nameBytes : nameBytes.subarray(0, end);
      if (raw.byteLength === 0) {
        // An event about the watched directory itself.
        if (dir === "") {
          if ((mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) !== 0) this.dirty.all = true;
        } else this.mark(dir);
        continue;
      }
      let name: string;
      try {
        name = STRICT_UTF8.decode(raw);
      } catch {
        this.dirty.relist.add(dir);
        continue;
      }
      this.mark(dir === "" ? name : `${dir}/${name}`);
    }
  }

  private mark(path: string): void {
    if (this.dirty.all) return;
    this.dirty.paths.add(path);
    if (this.dirty.paths.size > MAX_DIRTY_PATHS) {
      this.dirty.all = true;
      this.dirty.paths.clear();
    }
  }

  /** Returns what changed since the last call and starts a new set. */
  take(): DirtySet {
    const dirty = this.dirty;
    this.dirty = { all: false, paths: new Set(), relist: new Set() };
    if (this.broken !== null) dirty.all = true;
    return dirty;
  }

  /** Stops watching. */
  close(): void {
    this.inotify.close();
    this.pathOf.clear();
    this.wdOf.clear();
  }
}
