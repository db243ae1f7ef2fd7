/**
 * Writing into a workspace without ever following a symlink in any path
 * component: each parent directory is checked with `lstat` (and created when
 * missing); files and symlinks are written to a fresh temp name in their own
 * directory (`O_CREAT|O_EXCL`) and renamed into place, so a symlink at the
 * destination is replaced, never written through.
 *
 * @example
 * ```ts
 * import { SafeWriter } from "./safe_write.ts";
 * const root = await Deno.makeTempDir();
 * const writer = new SafeWriter(root);
 * writer.writeFile("a/b.txt", 0o644, (write) => write(new TextEncoder().encode("hi")));
 * writer.flush();
 * console.assert(await Deno.readTextFile(`${root}/a/b.txt`) === "hi");
 * await Deno.remove(root, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConflictError, CtxsnapError, quote } from "../encoding/errors.ts";
import { errnoOf } from "./_errno.ts";
import { fsyncDir, TEMP_PREFIX } from "./atomic.ts";
import { creationMode } from "./mode.ts";
import { normalizeRelativePath } from "./path.ts";
import { descriptorPath } from "./safe_read.ts";
import { syncFilesystem } from "../runtime.ts";

function tempName(dir: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return path.join(
    dir,
    TEMP_PREFIX + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""),
  );
}

/** Writes below one root directory; fsyncs touched directories on {@linkcode SafeWriter.flush}. */
export class SafeWriter {
  /** Absolute root. */
  readonly root: string;
  private readonly dirty = new Set<string>();
  private readonly checked = new Set<string>();
  /** Directories this writer created: nothing can be in them but what it wrote. */
  private readonly created = new Set<string>();
  private wroteFiles = false;

  private real: string | null = null;

  /** Creates a writer for `root` (which must be an existing directory). */
  constructor(root: string) {
    this.root = path.resolve(root);
  }

  private realRoot(): string {
    return this.real ??= fs.realpathSync(this.root);
  }

  /**
   * Returns the absolute parent directory of `relPath`, creating missing
   * directories; throws {@linkcode ConflictError} if a component is a
   * symlink or not a directory.
   */
  parentOf(relPath: string): string {
    const rel = normalizeRelativePath(relPath);
    const parts = rel.split("/");
    let dir = this.root;
    let relDir = "";
    for (const part of parts.slice(0, -1)) {
      relDir = relDir === "" ? part : `${relDir}/${part}`;
      const next = path.join(dir, part);
      if (!this.checked.has(relDir)) {
        let stat: fs.Stats | null = null;
        try {
          stat = fs.lstatSync(next);
        } catch (error) {
          if (errnoOf(error) !== "ENOENT") throw error;
        }
        if (stat === null) {
          try {
            fs.mkdirSync(next, { mode: 0o755 });
            this.dirty.add(dir);
            this.created.add(next);
          } catch (error) {
            if (errnoOf(error) !== "EEXIST") throw error;
          }
          stat = fs.lstatSync(next);
        }
        if (stat.isSymbolicLink() || !stat.isDirectory()) {
          throw new ConflictError(
            `Cannot write ${quote(rel)}: ${quote(relDir)} is ${
              stat.isSymbolicLink() ? "a symlink" : "not a directory"
            }`,
            { hint: "move it aside, then retry" },
          );
        }
        this.checked.add(relDir);
      }
      dir = next;
    }
    return dir;
  }

  /** What is at `relPath` now (via lstat, never following), or null. */
  lstat(relPath: string): fs.Stats | null {
    try {
      return fs.lstatSync(path.join(this.root, normalizeRelativePath(relPath)));
    } catch (error) {
      if (errnoOf(error) === "ENOENT" || errnoOf(error) === "ENOTDIR") return null;
      throw error;
    }
  }

  /**
   * Writes a regular file atomically. `produce` is called with a `write`
   * function and must write the whole content; if it throws (for example a
   * blob failing its hash check) nothing replaces the destination. `mode` is
   * the recorded mode: the file is created with {@linkcode creationMode} of
   * it and the umask applies (no setuid, setgid, sticky or world-write bit).
   */
  writeFile(
    relPath: string,
    mode: number,
    produce: (write: (chunk: Uint8Array) => void) => void,
  ): void {
    const dir = this.parentOf(relPath);
    const final = path.join(dir, path.basename(relPath));
    this.refuseDirectory(relPath, final);
    const temp = tempName(dir);
    let fd: number | null = fs.openSync(
      temp,
      fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW,
      creationMode(mode), // the kernel removes the umask's bits
    );
    // The parents were checked, but one could be swapped for a symlink since:
    // the kernel's view of the new file's path must be inside the root.
    const actual = descriptorPath(fd);
    const expected = path.join(this.realRoot(), path.relative(this.root, temp));
    if (actual !== null && actual !== expected) {
      fs.closeSync(fd);
      fs.rmSync(actual, { force: true }); // ours: created just now with O_EXCL
      throw new ConflictError(
        `Cannot write ${quote(relPath)}: a parent directory was replaced during the restore`,
        {
          hint: "something is changing the workspace; stop it and retry",
        },
      );
    }
    try {
      const out = fd;
      produce((chunk) => {
        let offset = 0;
        while (offset < chunk.byteLength) {
          offset += fs.writeSync(out, chunk, offset, chunk.byteLength - offset);
        }
      });
      // No per-file fsync: flush() makes the whole batch durable at once.
      fs.closeSync(fd);
      fd = null;
      fs.renameSync(temp, final);
      this.dirty.add(dir);
      this.wroteFiles = true;
    } catch (error) {
      if (fd !== null) fs.closeSync(fd);
      fs.rmSync(temp, { force: true });
      throw error;
    }
  }

  /** Creates or replaces a symlink atomically. */
  writeSymlink(relPath: string, target: string): void {
    const dir = this.parentOf(relPath);
    const final = path.join(dir, path.basename(relPath));
    this.refuseDirectory(relPath, final);
    const temp = tempName(dir);
    fs.symlinkSync(target, temp);
    try {
      fs.renameSync(temp, final);
      this.dirty.add(dir);
    } catch (error) {
      fs.rmSync(temp, { force: true });
      throw error;
    }
  }

  /** Removes a file or symlink (never a directory); missing is fine. Prunes emptied parents. */
  remove(relPath: string): void {
    const dir = this.parentOf(relPath);
    const final = path.join(dir, path.basename(relPath));
    const stat = this.lstat(relPath);
    if (stat === null) return;
    if (stat.isDirectory()) {
      throw new ConflictError(`Cannot delete ${quote(relPath)}: it is a directory now`);
    }
    fs.unlinkSync(final);
    this.dirty.add(dir);
    // Remove parents left empty, up to the root.
    let rel = path.posix.dirname(normalizeRelativePath(relPath));
    while (rel !== "." && rel !== "") {
      const abs = path.join(this.root, rel);
      try {
        fs.rmdirSync(abs);
      } catch {
        break;
      }
      this.checked.delete(rel);
      this.dirty.delete(abs);
      this.dirty.add(path.dirname(abs));
      rel = path.posix.dirname(rel);
    }
  }

  /**
   * Makes everything written durable: the file data of the whole batch (one
   * `syncfs` of the filesystem where the runtime offers it, else an fsync of
   * each file written), then every directory this writer changed.
   */
  flush(): void {
    if (this.wroteFiles) {
      syncFilesystem(this.root, () => this.fsyncWritten());
      this.wroteFiles = false;
    }
    for (const dir of this.dirty) {
      if (!fs.existsSync(dir)) continue; // removed after emptying
      try {
        fsyncDir(dir);
      } catch (error) {
        if (!(error instanceof CtxsnapError)) throw error;
      }
    }
    this.dirty.clear();
  }

  /**
   * Removes temp files this writer's kind leaves behind when killed
   * mid-write, in the directories of `relPaths` (used by recover).
   */
  removeStrayTemps(relPaths: Iterable<string>): number {
    const dirs = new Set<string>();
    for (const rel of relPaths) {
      // Only directories reached without a symlink: never clean up outside the root.
      if (this.blockedParent(rel) !== null) continue;
      dirs.add(path.dirname(path.join(this.root, normalizeRelativePath(rel))));
    }
    let removed = 0;
    for (const dir of dirs) {
      let names: string[];
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        if (!name.startsWith(TEMP_PREFIX)) continue;
        const file = path.join(dir, name);
        try {
          const stat = fs.lstatSync(file);
          if (!stat.isFile() && !stat.isSymbolicLink()) continue;
          fs.unlinkSync(file);
          removed++;
        } catch {
          // Gone already, or not ours to remove.
        }
      }
    }
    return removed;
  }

  /**
   * The first component of `relPath`'s parents that is not a directory (a
   * symlink, a file, …), or null when every existing parent is a directory.
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

  private fsyncWritten(): void {
    for (const dir of this.dirty) {
      let names: string[];
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        try {
          const fd = fs.openSync(
            path.join(dir, name),
            fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW,
          );
          try {
            fs.fsyncSync(fd);
          } finally {
            fs.closeSync(fd);
          }
        } catch {
          // Not a regular file we can open: nothing of ours to flush.
        }
      }
    }
  }

  private refuseDirectory(relPath: string, final: string): void {
    // In a directory this writer made, nothing can be in the way.
    if (this.created.has(path.dirname(final))) return;
    let stat: fs.Stats | null = null;
    try {
      stat = fs.lstatSync(final);
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
