/**
 * The `file:///DIR` backend: objects are files under one directory (a
 * shared folder, an NFS mount, a sync folder), at the path of their key.
 *
 * The directory is shared, so it is treated as hostile like any remote: no
 * path component below the root may be a symlink (checked with `lstat`
 * before every operation, and afterwards through `/proc/self/fd` where the
 * kernel offers it), objects are opened with `O_NOFOLLOW | O_NONBLOCK` and
 * must be regular files (a FIFO or device planted there is refused, never
 * read), and reads are bounded. Writes go to a fresh `O_EXCL` temporary file
 * in the target directory, are fsynced and renamed into place, so an object
 * under its final name is always complete; {@linkcode FileBackend.flush}
 * fsyncs the directories written. A multipart upload appends its parts to
 * one such temporary file. Temporary files (`.ctxsnap-tmp-*`) are never
 * listed.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { FileBackend } from "./file_backend.ts";
 * const dir = await Deno.makeTempDir();
 * const backend = new FileBackend(dir);
 * await backend.put("objects/ab/x", new TextEncoder().encode("hi"));
 * const listed = await backend.list("objects/");
 * if (listed.length !== 1 || listed[0]!.key !== "objects/ab/x") throw new Error("list");
 * const bytes = await backend.get("objects/ab/x", 1024);
 * if (new TextDecoder().decode(bytes!) !== "hi") throw new Error("get");
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { errnoOf, IntegrityError, quote, RemoteError } from "../errors.ts";
import { fsyncDir, TEMP_PREFIX } from "../workspace/io/atomic.ts";
import { descriptorPath } from "../workspace/io/safe_read.ts";
import {
  type Backend,
  checkKey,
  checkPrefix,
  LIST_BOUNDS,
  type MultipartUpload,
  type ObjectInfo,
} from "./backend.ts";
import { writeAllSync } from "../workspace/io/fd.ts";

function randomHex(): string {
  return Array.from(
    crypto.getRandomValues(new Uint8Array(8)),
    (b) => b.toString(16).padStart(2, "0"),
  )
    .join("");
}

const CHUNK = 1024 * 1024;

/** A remote held in a local (or mounted) directory. */
export class FileBackend implements Backend {
  /** Absolute path of the directory. */
  readonly root: string;
  /** `file://` followed by the directory. */
  readonly location: string;
  /** Any part size works here; the S3 minimum is kept so callers behave the same. */
  readonly minPartSize: number = 5 * 1024 * 1024;
  private realRootPath: string | null = null;
  private readonly dirty = new Set<string>();

  /** A backend for the directory `root` (created on the first write). */
  constructor(root: string) {
    this.root = path.resolve(root);
    this.location = `file://${this.root}`;
  }

  private realRoot(): string {
    return this.realRootPath ??= fs.realpathSync(this.root);
  }

  /**
   * The absolute directory holding `key`, every component checked with
   * `lstat`: null when one is missing (and `create` is false). A component
   * that is a symlink or not a directory is refused.
   */
  private parentDir(key: string, create: boolean): string | null {
    const parts = checkKey(key).split("/");
    if (create) fs.mkdirSync(this.root, { recursive: true });
    else if (!fs.existsSync(this.root)) return null;
    let dir = this.root;
    for (const part of parts.slice(0, -1)) {
      const next = path.join(dir, part);
      let stat: fs.Stats | null = null;
      try {
        stat = fs.lstatSync(next);
      } catch (error) {
        if (errnoOf(error) !== "ENOENT") throw this.ioError("read", key, error);
      }
      if (stat === null) {
        if (!create) return null;
        try {
          fs.mkdirSync(next);
          this.dirty.add(dir);
        } catch (error) {
          if (errnoOf(error) !== "EEXIST") throw this.ioError("write", key, error);
        }
        stat = fs.lstatSync(next);
      }
      if (stat.isSymbolicLink() || !stat.isDirectory()) {
        throw new IntegrityError(
          `The remote ${quote(this.location)} is unsafe: ${
            quote(path.relative(this.root, next))
          } is ${stat.isSymbolicLink() ? "a symlink" : "not a directory"}`,
          { hint: "remove it from the shared directory; ctxsnap never follows links there" },
        );
      }
      dir = next;
    }
    return dir;
  }

  /** Refuses a descriptor the kernel places outside the real root (a parent swapped meanwhile). */
  private checkDescriptor(fd: number, absPath: string, key: string): void {
    const actual = descriptorPath(fd);
    const expected = path.join(this.realRoot(), path.relative(this.root, absPath));
    if (actual !== null && actual !== expected) {
      fs.closeSync(fd);
      throw new IntegrityError(
        `The remote ${quote(this.location)} is unsafe: ${
          quote(key)
        } resolved outside it while being opened`,
      );
    }
  }

  private ioError(what: "read" | "write", key: string, error: unknown): RemoteError {
    return new RemoteError(
      `Cannot ${what} ${quote(key)} in ${quote(this.location)}: ${
        errnoOf(error) ?? (error as Error).message
      }`,
      { cause: error },
    );
  }

  /** Opens the regular file of `key` for reading, or returns null when absent. */
  private openObject(key: string): { fd: number; size: number } | null {
    const dir = this.parentDir(key, false);
    if (dir === null) return null;
    const file = path.join(dir, path.basename(key));
    let fd: number;
    try {
      fd = fs.openSync(
        file,
        fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK,
      );
    } catch (error) {
      const code = errnoOf(error);
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      if (code === "ELOOP") {
        throw new IntegrityError(
          `The remote ${quote(this.location)} is unsafe: ${quote(key)} is a symlink`,
        );
      }
      throw this.ioError("read", key, error);
    }
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) {
      fs.closeSync(fd);
      throw new IntegrityError(
        `The remote ${quote(this.location)} is unsafe: ${quote(key)} is not a regular file`,
      );
    }
    this.checkDescriptor(fd, file, key);
    return { fd, size: stat.size };
  }

  /** {@inheritDoc Backend.get} */
  async get(key: string, maxBytes: number): Promise<Uint8Array | null> {
    const chunks: Uint8Array[] = [];
    let total = 0;
    const found = await this.getStream(key, maxBytes, (chunk) => {
      chunks.push(chunk.slice());
      total += chunk.byteLength;
    });
    if (!found) return null;
    const out = new Uint8Array(total);
    let at = 0;
    for (const chunk of chunks) {
      out.set(chunk, at);
      at += chunk.byteLength;
    }
    return out;
  }

  /** {@inheritDoc Backend.getStream} */
  getStream(
    key: string,
    maxBytes: number,
    onChunk: (chunk: Uint8Array) => void,
  ): Promise<boolean> {
    const opened = this.openObject(key);
    if (opened === null) return Promise.resolve(false);
    const { fd } = opened;
    try {
      if (opened.size > maxBytes) throw tooLarge(this.location, key, maxBytes);
      const buffer = new Uint8Array(Math.min(CHUNK, maxBytes + 1));
      let total = 0;
      for (;;) {
        let n: number;
        try {
          n = fs.readSync(fd, buffer, 0, buffer.byteLength, null);
        } catch (error) {
          throw this.ioError("read", key, error);
        }
        if (n === 0) break;
        total += n;
        if (total > maxBytes) throw tooLarge(this.location, key, maxBytes);
        onChunk(buffer.subarray(0, n));
      }
      return Promise.resolve(true);
    } catch (error) {
      return Promise.reject(error);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** {@inheritDoc Backend.getRange} */
  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    const opened = this.openObject(key);
    if (opened === null) return Promise.resolve(null);
    const { fd } = opened;
    try {
      if (offset + length > opened.size) {
        throw new IntegrityError(
          `The remote object ${quote(key)} in ${
            quote(this.location)
          } is shorter than the range asked for`,
        );
      }
      const out = new Uint8Array(length);
      let done = 0;
      while (done < length) {
        let n: number;
        try {
          n = fs.readSync(fd, out, done, length - done, offset + done);
        } catch (error) {
          throw this.ioError("read", key, error);
        }
        if (n === 0) {
          throw new IntegrityError(`The remote object ${quote(key)} shrank while it was read`);
        }
        done += n;
      }
      return Promise.resolve(out);
    } catch (error) {
      return Promise.reject(error);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** {@inheritDoc Backend.head} */
  head(key: string): Promise<ObjectInfo | null> {
    const dir = this.parentDir(key, false);
    if (dir === null) return Promise.resolve(null);
    try {
      const stat = fs.lstatSync(path.join(dir, path.basename(key)));
      // Anything but a regular file is not an object (a push replaces it).
      return Promise.resolve(stat.isFile() ? { key, size: stat.size } : null);
    } catch (error) {
      const code = errnoOf(error);
      if (code === "ENOENT" || code === "ENOTDIR") return Promise.resolve(null);
      return Promise.reject(this.ioError("read", key, error));
    }
  }

  /** Creates a fresh temporary file next to `key`; returns its path and descriptor. */
  private createTemp(key: string): { dir: string; temp: string; fd: number } {
    const dir = this.parentDir(key, true)!;
    const temp = path.join(dir, `${TEMP_PREFIX}${randomHex()}`);
    let fd: number;
    try {
      fd = fs.openSync(
        temp,
        fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY |
          fs.constants.O_NOFOLLOW,
        0o644,
      );
    } catch (error) {
      throw this.ioError("write", key, error);
    }
    try {
      this.checkDescriptor(fd, temp, key);
    } catch (error) {
      fs.rmSync(temp, { force: true });
      throw error;
    }
    return { dir, temp, fd };
  }

  private writeAll(fd: number, data: Uint8Array, key: string): void {
    try {
      writeAllSync(fd, data);
    } catch (error) {
      throw this.ioError("write", key, error);
    }
  }

  private publish(fd: number, temp: string, dir: string, key: string, sync = true): void {
    try {
      if (sync) fs.fsyncSync(fd);
      fs.closeSync(fd);
      fs.renameSync(temp, path.join(dir, path.basename(key)));
    } catch (error) {
      fs.rmSync(temp, { force: true });
      throw this.ioError("write", key, error);
    }
    this.dirty.add(dir);
  }

  /** {@inheritDoc Backend.put} */
  async put(key: string, data: Uint8Array): Promise<void> {
    const { dir, temp, fd } = this.createTemp(key);
    try {
      this.writeAll(fd, data, key);
      // Asynchronous, so the fsyncs of concurrent puts overlap (one journal commit for many).
      await new Promise<void>((resolve, reject) =>
        fs.fsync(fd, (error) => (error ? reject(this.ioError("write", key, error)) : resolve()))
      );
    } catch (error) {
      fs.closeSync(fd);
      fs.rmSync(temp, { force: true });
      throw error;
    }
    this.publish(fd, temp, dir, key, false);
  }

  /** {@inheritDoc Backend.list} */
  list(prefix: string): Promise<ObjectInfo[]> {
    checkPrefix(prefix);
    const out: ObjectInfo[] = [];
    const start = prefix === "" ? "" : prefix.slice(0, -1);
    let base: string | null;
    try {
      base = start === "" ? (fs.existsSync(this.root) ? this.root : null) : (() => {
        const dir = this.parentDir(start, false);
        return dir === null ? null : path.join(dir, path.basename(start));
      })();
    } catch (error) {
      return Promise.reject(error);
    }
    const beyond = (what: string): never => {
      throw new IntegrityError(
        `The shared directory's listing of ${
          quote(prefix)
        } is longer than ${what}; nothing was taken from it`,
        { hint: "the remote is damaged or hostile; check it" },
      );
    };
    const walk = (abs: string, rel: string, depth: number) => {
      if (depth > 64) beyond("64 directory levels");
      let names: string[];
      try {
        names = fs.readdirSync(abs);
      } catch (error) {
        const code = errnoOf(error);
        if (code === "ENOENT" || code === "ENOTDIR") return;
        throw this.ioError("read", rel, error);
      }
      for (const name of names) {
        if (name.startsWith(TEMP_PREFIX)) continue;
        const child = path.join(abs, name);
        const key = rel === "" ? name : `${rel}/${name}`;
        let stat: fs.Stats;
        try {
          stat = fs.lstatSync(child);
        } catch {
          continue; // removed meanwhile
        }
        if (stat.isDirectory()) walk(child, key, depth + 1);
        else if (stat.isFile()) {
          if (out.length >= LIST_BOUNDS.keys) beyond(`${LIST_BOUNDS.keys} keys`);
          out.push({ key, size: stat.size });
        }
        // Symlinks and special files are not objects.
      }
    };
    try {
      if (base !== null) {
        const stat = fs.lstatSync(base);
        if (stat.isDirectory() && !stat.isSymbolicLink()) walk(base, start, 0);
      }
    } catch (error) {
      if (errnoOf(error) !== "ENOENT") return Promise.reject(error);
    }
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return Promise.resolve(out);
  }

  /** {@inheritDoc Backend.delete} */
  delete(key: string): Promise<void> {
    try {
      const dir = this.parentDir(key, false);
      if (dir !== null) {
        try {
          fs.unlinkSync(path.join(dir, path.basename(key)));
          this.dirty.add(dir);
        } catch (error) {
          const code = errnoOf(error);
          if (code !== "ENOENT" && code !== "ENOTDIR") throw this.ioError("write", key, error);
        }
      }
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** {@inheritDoc Backend.startMultipart} */
  startMultipart(key: string): Promise<MultipartUpload> {
    let state: { dir: string; temp: string; fd: number } | null;
    try {
      state = this.createTemp(key);
    } catch (error) {
      return Promise.reject(error);
    }
    let expected = 1;
    const done = () => {
      if (state === null) throw new RemoteError(`The upload of ${quote(key)} is already finished`);
      return state;
    };
    return Promise.resolve({
      putPart: (n: number, data: Uint8Array) => {
        try {
          const s = done();
          if (n !== expected) {
            throw new RemoteError(`Part ${n} of ${quote(key)} arrived out of order`);
          }
          this.writeAll(s.fd, data, key);
          expected += 1;
          return Promise.resolve();
        } catch (error) {
          return Promise.reject(error);
        }
      },
      complete: () => {
        try {
          const s = done();
          state = null;
          this.publish(s.fd, s.temp, s.dir, key);
          return Promise.resolve();
        } catch (error) {
          return Promise.reject(error);
        }
      },
      abort: () => {
        if (state !== null) {
          fs.closeSync(state.fd);
          fs.rmSync(state.temp, { force: true });
          state = null;
        }
        return Promise.resolve();
      },
    });
  }

  /** Fsyncs every directory an object was written to or removed from since the last flush. */
  flush(): Promise<void> {
    try {
      for (const dir of this.dirty) fsyncDir(dir);
      this.dirty.clear();
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

function tooLarge(location: string, key: string, maxBytes: number): IntegrityError {
  return new IntegrityError(
    `The remote object ${quote(key)} in ${quote(location)} is larger than ${maxBytes} bytes`,
  );
}
