/**
 * Writing into a workspace without ever reaching outside it, even while
 * something else swaps its directories for symlinks.
 *
 * **Through directory descriptors.** Where the kernel offers `/proc/self/fd`
 * (Linux), every change is made through a descriptor of the directory it
 * happens in. Directories are opened one component at a time from the root,
 * each as `/proc/self/fd/<parent>/<name>` with `O_DIRECTORY | O_NOFOLLOW`,
 * which resolves `<name>` inside the directory the parent descriptor holds
 * (like `openat`); a symlink or non-directory component is refused. Files are
 * then created (`O_CREAT | O_EXCL | O_NOFOLLOW`), renamed, linked and unlinked
 * as `/proc/self/fd/<dir>/<name>`, so no lookup of a parent path can be
 * redirected. Immediately before each change, the directory's descriptor must
 * still sit at `<real root>/<its path>` (`readlink /proc/self/fd/<dir>`): a
 * directory moved away, deleted or swapped for a symlink since it was opened
 * stops the operation with a {@linkcode ConflictError}, and nothing outside
 * the root is touched. Nothing caches the result of a check.
 *
 * **Elsewhere** (no `/proc`), each change first re-checks the whole parent
 * chain with `lstat` (every component a real directory, never a symlink) and
 * then acts by path; a swap in the instant between that check and the change
 * is not detected there.
 *
 * Files and symlinks are written to a fresh temporary name in their own
 * directory and renamed into place, so a symlink at the destination is
 * replaced, never written through. A file is created with the
 * {@linkcode creationMode} of its recorded mode, and the umask applies.
 *
 * **Durability.** {@linkcode SafeWriter.flush} makes the batch durable with
 * one `sync -f` of the filesystem, or where that is unavailable an fsync of
 * each file this writer wrote, opened only after `lstat` shows the same
 * regular file (same device and inode) and with `O_NONBLOCK | O_NOFOLLOW`:
 * never a FIFO or a device, so it cannot hang. Then it fsyncs every directory
 * it changed.
 *
 * @example
 * ```ts
 * import { SafeWriter } from "./safe_write.ts";
 * const root = await Deno.makeTempDir();
 * const writer = new SafeWriter(root);
 * try {
 *   writer.writeFile("a/b.txt", 0o644, (write) => write(new TextEncoder().encode("hi")));
 *   writer.flush();
 * } finally {
 *   writer.close();
 * }
 * if (await Deno.readTextFile(`${root}/a/b.txt`) !== "hi") throw new Error("written");
 * await Deno.remove(root, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConflictError, CtxsnapError, quote } from "../../errors.ts";
import { errnoOf } from "../../errors.ts";
import { TEMP_PREFIX } from "./atomic.ts";
import { creationMode } from "./mode.ts";
import { normalizeRelativePath } from "./path.ts";
import { syncFilesystem } from "../../runtime.ts";
import { writeAllSync } from "./fd.ts";

/** Directory descriptors kept open at most; more are closed and reopened as needed. */
const MAX_OPEN_DIRS = 64;

const DIR_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0) |
  fs.constants.O_NOFOLLOW;

function tempName(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return TEMP_PREFIX + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** `lstat` of `path`, or null when nothing is there; any other error is thrown. */
function lstatOrNull(path: string): fs.Stats | null {
  try {
    return fs.lstatSync(path);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return null;
    throw error;
  }
}

function splitPath(relPath: string): { dir: string; name: string } {
  const rel = normalizeRelativePath(relPath);
  const slash = rel.lastIndexOf("/");
  return slash === -1
    ? { dir: "", name: rel }
    : { dir: rel.slice(0, slash), name: rel.slice(slash + 1) };
}

function replaced(relPath: string): ConflictError {
  return new ConflictError(
    `Cannot write ${quote(relPath)}: a parent directory was replaced during the restore`,
    { hint: "something is changing the workspace; stop it and retry" },
  );
}

/** One directory an operation acts in: where its entries are, and the check before a change. */
interface Place {
  /** Relative path of the directory (`""` for the root). */
  rel: string;
  /** The path naming `name` inside this directory (through its descriptor where possible). */
  entry(name: string): string;
  /** Throws {@linkcode ConflictError} unless the directory is still where it belongs. */
  verify(): void;
  /** The descriptor, when the writer holds one. */
  fd: number | null;
}

/** Writes below one root directory. Call {@linkcode SafeWriter.close} when done. */
export class SafeWriter {
  /** Absolute root. */
  readonly root: string;
  #real: string | null = null;
  #rootFd: number | null = null;
  #proc: boolean | null = null;
  readonly #pathOnly: boolean;
  /** Open directory descriptors by relative path (not the root). */
  readonly #handles = new Map<string, number>();
  /** Relative paths of directories whose entries changed. */
  readonly #dirty = new Set<string>();
  /** Directories this writer created: nothing can be in them but what it wrote. */
  readonly #created = new Set<string>();
  /** Files written since the last flush, to fsync where `sync -f` is unavailable. */
  #written: { rel: string; dev: number; ino: number }[] = [];

  /**
   * Creates a writer for `root` (which must be an existing directory).
   * `descriptors: false` acts by path with a full parent re-check, as on a
   * system without `/proc/self/fd` (the default uses descriptors when the
   * kernel offers them).
   */
  constructor(root: string, options: { descriptors?: boolean } = {}) {
    this.root = path.resolve(root);
    this.#pathOnly = options.descriptors === false;
  }

  /** The real path of the root, resolved once. */
  #realRoot(): string {
    return this.#real ??= fs.realpathSync(this.root);
  }

  #abs(rel: string): string {
    const real = this.#realRoot();
    if (rel === "") return real;
    return real === "/" ? `/${rel}` : `${real}/${rel}`;
  }

  /** Whether changes go through `/proc/self/fd` descriptors (decided once). */
  #useProc(): boolean {
    if (this.#pathOnly) return false;
    if (this.#proc !== null) return this.#proc;
    try {
      const fd = fs.openSync(this.#realRoot(), DIR_FLAGS);
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === this.#realRoot()) {
        this.#rootFd = fd;
        this.#proc = true;
      } else {
        fs.closeSync(fd);
        this.#proc = false;
      }
    } catch {
      this.#proc = false;
    }
    return this.#proc;
  }

  /** Closes every directory descriptor this writer holds. */
  close(): void {
    for (const fd of this.#handles.values()) fs.closeSync(fd);
    this.#handles.clear();
    if (this.#rootFd !== null) fs.closeSync(this.#rootFd);
    this.#rootFd = null;
    this.#proc = null;
  }

  /**
   * The directory `rel` as a {@linkcode Place}, creating missing directories
   * when `create`; null when a component is missing and not `create`.
   * Throws {@linkcode ConflictError} when a component is a symlink or not a
   * directory.
   */
  #place(rel: string, create: boolean, forPath: string): Place | null {
    return this.#useProc()
      ? this.#placeByDescriptor(rel, create, forPath)
      : this.#placeByPath(rel, create, forPath);
  }

  #placeByDescriptor(rel: string, create: boolean, forPath: string): Place | null {
    if (this.#handles.size >= MAX_OPEN_DIRS) {
      for (const fd of this.#handles.values()) fs.closeSync(fd);
      this.#handles.clear();
    }
    let fd = this.#rootFd!;
    let current = "";
    if (rel !== "") {
      for (const part of rel.split("/")) {
        const next = current === "" ? part : `${current}/${part}`;
        let child = this.#handles.get(next);
        if (child === undefined) {
          const opened = this.#openChild(fd, current, part, next, create, forPath);
          if (opened === null) return null;
          child = opened;
          this.#handles.set(next, child);
        }
        fd = child;
        current = next;
      }
    }
    const expected = this.#abs(rel);
    const dirFd = fd;
    return {
      rel,
      fd: dirFd,
      entry: (name) => `/proc/self/fd/${dirFd}/${name}`,
      verify: () => {
        let actual: string | null = null;
        try {
          actual = fs.readlinkSync(`/proc/self/fd/${dirFd}`);
        } catch {
          actual = null;
        }
        if (actual !== expected) throw replaced(forPath);
      },
    };
  }

  #openChild(
    parentFd: number,
    parentRel: string,
    name: string,
    rel: string,
    create: boolean,
    forPath: string,
  ): number | null {
    const at = `/proc/self/fd/${parentFd}/${name}`;
    for (let attempt = 0;; attempt++) {
      try {
        return fs.openSync(at, DIR_FLAGS);
      } catch (error) {
        const code = errnoOf(error);
        if (code === "ENOENT" && create && attempt === 0) {
          try {
            fs.mkdirSync(at, { mode: 0o755 });
            this.#created.add(rel);
            this.#dirty.add(parentRel);
          } catch (mkdirError) {
            if (errnoOf(mkdirError) !== "EEXIST") throw mkdirError;
          }
          continue;
        }
        if (code === "ENOENT") return null;
        if (code === "ELOOP" || code === "ENOTDIR") throw this.#inTheWay(forPath, rel);
        throw error;
      }
    }
  }

  #inTheWay(forPath: string, rel: string): ConflictError {
    let what = "not a directory";
    try {
      if (fs.lstatSync(this.#abs(rel)).isSymbolicLink()) what = "a symlink";
    } catch {
      // Gone again: "not a directory" is still the truth of the moment.
    }
    return new ConflictError(`Cannot write ${quote(forPath)}: ${quote(rel)} is ${what}`, {
      hint: "move it aside, then retry",
    });
  }

  #placeByPath(rel: string, create: boolean, forPath: string): Place | null {
    const check = (): boolean => {
      let current = "";
      for (const part of rel === "" ? [] : rel.split("/")) {
        const next = current === "" ? part : `${current}/${part}`;
        let stat: fs.Stats | null = null;
        try {
          stat = fs.lstatSync(this.#abs(next));
        } catch (error) {
          if (errnoOf(error) !== "ENOENT") throw error;
        }
        if (stat === null) {
          if (!create) return false;
          try {
            fs.mkdirSync(this.#abs(next), { mode: 0o755 });
            this.#created.add(next);
            this.#dirty.add(current);
          } catch (error) {
            if (errnoOf(error) !== "EEXIST") throw error;
          }
          stat = fs.lstatSync(this.#abs(next));
        }
        if (stat.isSymbolicLink() || !stat.isDirectory()) throw this.#inTheWay(forPath, next);
        current = next;
      }
      return true;
    };
    if (!check()) return null;
    return {
      rel,
      fd: null,
      entry: (name) => path.join(this.#abs(rel), name),
      verify: () => {
        if (!check()) throw replaced(forPath);
      },
    };
  }

  /**
   * Writes a regular file atomically. `produce` is called with a `write`
   * function and must write the whole content; if it throws (for example a
   * blob failing its hash check) nothing replaces the destination. `mode` is
   * the recorded mode: the file is created with {@linkcode creationMode} of
   * it and the umask applies (no setuid, setgid, sticky or world-write bit).
   * With `exclusive`, the file must be new: it is linked into place, never
   * renamed over anything, and an existing entry of any kind (a file, a
   * symlink, a FIFO) stops it with a {@linkcode ConflictError}.
   */
  writeFile(
    relPath: string,
    mode: number,
    produce: (write: (chunk: Uint8Array) => void) => void,
    options: { exclusive?: boolean } = {},
  ): void {
    const { dir, name } = splitPath(relPath);
    const place = this.#place(dir, true, relPath);
    if (place === null) throw replaced(relPath); // made, then removed by someone else
    this.#refuseDirectory(place, name, relPath);
    const temp = place.entry(tempName());
    place.verify();
    let fd: number | null = fs.openSync(
      temp,
      fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW,
      creationMode(mode), // the kernel removes the umask's bits
    );
    try {
      const out = fd;
      produce((chunk) => {
        writeAllSync(out, chunk);
      });
      const stat = fs.fstatSync(fd);
      // No per-file fsync: flush() makes the whole batch durable at once.
      fs.closeSync(fd);
      fd = null;
      place.verify();
      if (options.exclusive) {
        try {
          fs.linkSync(temp, place.entry(name)); // never replaces: EEXIST
        } catch (error) {
          if (errnoOf(error) !== "EEXIST") throw error;
          throw new ConflictError(`Cannot write ${quote(relPath)}: it exists`, {
            hint: "pick a new name; an existing file is never replaced",
          });
        }
        fs.unlinkSync(temp);
      } else fs.renameSync(temp, place.entry(name));
      this.#dirty.add(dir);
      this.#written.push({ rel: relPath, dev: stat.dev, ino: stat.ino });
    } catch (error) {
      if (fd !== null) fs.closeSync(fd);
      fs.rmSync(temp, { force: true }); // ours, in the directory the descriptor holds
      throw error;
    }
  }

  /** Creates or replaces a symlink atomically. */
  writeSymlink(relPath: string, target: string): void {
    const { dir, name } = splitPath(relPath);
    const place = this.#place(dir, true, relPath);
    if (place === null) throw replaced(relPath); // made, then removed by someone else
    this.#refuseDirectory(place, name, relPath);
    const temp = place.entry(tempName());
    place.verify();
    fs.symlinkSync(target, temp);
    try {
      place.verify();
      fs.renameSync(temp, place.entry(name));
      this.#dirty.add(dir);
    } catch (error) {
      fs.rmSync(temp, { force: true });
      throw error;
    }
  }

  /**
   * The names in directory `relDir`, listed through its descriptor (never
   * through a symlink), or null when it does not exist. A symlink or
   * non-directory on the way is a {@linkcode ConflictError}.
   */
  list(relDir: string): string[] | null {
    const rel = relDir === "" ? "" : normalizeRelativePath(relDir);
    const place = this.#place(rel, false, rel === "" ? "." : rel);
    if (place === null) return null;
    place.verify();
    return fs.readdirSync(place.entry("."));
  }

  /**
   * Removes a file or symlink (never a directory); missing is fine, and so is
   * a missing parent. Prunes the parents it leaves empty, up to the root,
   * unless `prune` is false.
   */
  remove(relPath: string, options: { prune?: boolean } = {}): void {
    const { dir, name } = splitPath(relPath);
    const place = this.#place(dir, false, relPath);
    if (place === null) return;
    const stat = lstatOrNull(place.entry(name));
    if (stat === null) return;
    if (stat.isDirectory()) {
      throw new ConflictError(`Cannot delete ${quote(relPath)}: it is a directory now`);
    }
    place.verify();
    fs.unlinkSync(place.entry(name));
    this.#dirty.add(dir);
    if (options.prune === false) return;
    // Remove parents left empty, up to the root.
    let rel = dir;
    while (rel !== "") {
      const parent = splitPath(rel);
      const above = this.#place(parent.dir, false, relPath);
      if (above === null) break;
      above.verify();
      try {
        fs.rmdirSync(above.entry(parent.name));
      } catch {
        break;
      }
      const fd = this.#handles.get(rel);
      if (fd !== undefined) fs.closeSync(fd);
      this.#handles.delete(rel);
      this.#dirty.delete(rel);
      this.#dirty.add(parent.dir);
      rel = parent.dir;
    }
  }

  /**
   * Removes `relPath` when it is an empty directory (one a killed restore
   * left where a file belongs); anything else there is left alone. A
   * non-empty directory is a {@linkcode ConflictError}.
   */
  removeEmptyDirectory(relPath: string): void {
    const { dir, name } = splitPath(relPath);
    const place = this.#place(dir, false, relPath);
    if (place === null) return;
    const stat = lstatOrNull(place.entry(name));
    if (stat === null) return;
    if (!stat.isDirectory()) return;
    const fd = this.#handles.get(relPath);
    if (fd !== undefined) fs.closeSync(fd);
    this.#handles.delete(relPath);
    place.verify();
    try {
      fs.rmdirSync(place.entry(name));
    } catch (error) {
      throw new ConflictError(`Cannot write ${quote(relPath)}: a directory is in the way`, {
        hint: "move the directory aside, then retry",
        cause: error,
      });
    }
    this.#dirty.add(dir);
  }

  /**
   * Makes everything written durable: the file data of the whole batch (one
   * `sync -f` of the filesystem where available, else an fsync of each file
   * this writer wrote, never opening anything but that same regular file),
   * then every directory this writer changed.
   */
  flush(): void {
    if (this.#written.length > 0) {
      syncFilesystem(this.#realRoot(), () => this.#fsyncWritten());
      this.#written = [];
    }
    for (const rel of this.#dirty) {
      let place: Place | null;
      try {
        place = this.#place(rel, false, rel === "" ? "." : rel);
      } catch (error) {
        if (error instanceof ConflictError) continue; // replaced since: not ours to sync
        throw error;
      }
      if (place === null) continue; // removed after emptying
      this.#fsyncDirectory(place);
    }
    this.#dirty.clear();
  }

  #fsyncDirectory(place: Place): void {
    let fd = place.fd;
    let opened = false;
    try {
      if (fd === null) {
        fd = fs.openSync(place.entry("."), DIR_FLAGS);
        opened = true;
      }
      fs.fsyncSync(fd);
    } catch (error) {
      const code = errnoOf(error);
      if (code !== "EINVAL" && code !== "ENOTSUP" && code !== "EPERM" && code !== "EISDIR") {
        if (!(error instanceof CtxsnapError)) throw error;
      }
    } finally {
      if (opened && fd !== null) fs.closeSync(fd);
    }
  }

  /** Fsyncs each file written, only if it is still that regular file; never blocks on a FIFO. */
  #fsyncWritten(): void {
    for (const file of this.#written) {
      const abs = this.#abs(file.rel);
      try {
        const before = fs.lstatSync(abs);
        if (!before.isFile() || before.dev !== file.dev || before.ino !== file.ino) continue;
        const fd = fs.openSync(
          abs,
          fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK,
        );
        try {
          const now = fs.fstatSync(fd);
          if (now.isFile() && now.dev === file.dev && now.ino === file.ino) fs.fsyncSync(fd);
        } finally {
          fs.closeSync(fd);
        }
      } catch {
        // Replaced or gone since it was written: nothing of ours to flush.
      }
    }
  }

  /**
   * Removes temp files this writer's kind leaves behind when killed
   * mid-write, in the directories of `relPaths` (used by recover). Only
   * directories reached without a symlink are cleaned.
   */
  removeStrayTemps(relPaths: Iterable<string>): number {
    const dirs = new Set<string>();
    for (const rel of relPaths) dirs.add(splitPath(rel).dir);
    let removed = 0;
    for (const dir of dirs) {
      let place: Place | null;
      try {
        place = this.#place(dir, false, dir === "" ? "." : dir);
      } catch (error) {
        if (error instanceof ConflictError) continue; // a symlink or file in the way
        throw error;
      }
      if (place === null) continue;
      let names: string[];
      try {
        names = fs.readdirSync(place.entry("."));
      } catch {
        continue;
      }
      for (const name of names) {
        if (!name.startsWith(TEMP_PREFIX)) continue;
        try {
          const stat = fs.lstatSync(place.entry(name));
          if (!stat.isFile() && !stat.isSymbolicLink()) continue;
          place.verify();
          fs.unlinkSync(place.entry(name));
          this.#dirty.add(dir);
          removed++;
        } catch (error) {
          if (error instanceof ConflictError) break;
          // Gone already, or not ours to remove.
        }
      }
    }
    return removed;
  }

  /**
   * The first component of `relPath`'s parents that is not a directory (a
   * symlink, a file, …), or null when every existing parent is a directory.
   * A read-only probe for planning; writes check again as they go.
   */
  blockedParent(relPath: string): string | null {
    const parts = normalizeRelativePath(relPath).split("/");
    let rel = "";
    for (const part of parts.slice(0, -1)) {
      rel = rel === "" ? part : `${rel}/${part}`;
      let stat: fs.Stats;
      try {
        stat = fs.lstatSync(path.join(this.root, rel));
      } catch {
        return null; // missing: it will be created
      }
      if (stat.isSymbolicLink() || !stat.isDirectory()) return rel;
    }
    return null;
  }

  #refuseDirectory(place: Place, name: string, relPath: string): void {
    // In a directory this writer made, nothing can be in the way.
    if (this.#created.has(place.rel)) return;
    let stat: fs.Stats | null = null;
    try {
      stat = fs.lstatSync(place.entry(name));
    } catch {
      stat = null;
    }
    if (stat?.isDirectory()) {
      throw new ConflictError(`Cannot write ${quote(relPath)}: a directory is in the way`, {
        hint: "move the directory aside, then retry",
      });
    }
  }
}
