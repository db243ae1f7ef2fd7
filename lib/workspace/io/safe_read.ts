/**
 * Reading a workspace file without ever following a symlink and without ever
 * capturing a half-written file (docs/DESIGN.md §4).
 *
 * The caller got `expected` from `lstat` during the walk. The file is opened
 * with `O_RDONLY | O_NOFOLLOW | O_NONBLOCK` (a symlink swapped in fails with
 * `ELOOP`; a FIFO opens without blocking). Then `fstat` must show a regular
 * file with the same inode and device as `expected`, and the same size,
 * mtime and ctime after the last byte was read, and the byte count must
 * equal the size.
 *
 * That inode check is the real guarantee. Deno, unless run with all
 * permissions, resolves symlinks in the path itself (for its permission
 * check) and opens the resolved path, so `O_NOFOLLOW` cannot see a swapped-in
 * symlink; the open then reaches the link's target, whose inode differs, and
 * the read is refused as "replaced". The same check stops a swapped parent
 * directory from redirecting the read to another file.
 *
 * Two paths keep that guarantee. When the kernel confirmed that the open
 * descriptor is `expectedRealPath` (the workspace's own file at this path,
 * through `/proc/self/fd`), a file kept in memory is read whole (plus one
 * byte, which proves growth) and then checked with a single `fstat` against
 * the walk's `lstat`; its bytes are returned only after that check, and a
 * file that changed since the walk is read again by the other path.
 * Otherwise (no such check, a file streamed to `onChunk`, or one too large to
 * keep) `fstat` checks the file before a byte is read, it is read in 1 MiB
 * chunks hashed as they stream, and `fstat` checks it again at the end.
 *
 * @example
 * ```ts
 * import { lstatSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import { readRegularNoFollow, statInfoOf } from "./safe_read.ts";
 *
 * const dir = mkdtempSync(join(tmpdir(), "ctxsnap-doc-"));
 * const file = join(dir, "hello.txt");
 * writeFileSync(file, "abc");
 * const result = readRegularNoFollow(file, statInfoOf(lstatSync(file)), { maxBytes: 1024 });
 * if (!(result.size === 3)) throw new Error("Example failed");
 * if (!(result.sha256.startsWith("ba7816bf"))) throw new Error("Example failed");
 * if (!(new TextDecoder().decode(result.data!) === "abc")) throw new Error("Example failed");
 * rmSync(dir, { recursive: true });
 * ```
 * @module
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync, readSync } from "node:fs";
import type { FileStat } from "../../runtime.ts";
import { createSha256 } from "../../crypto/hash.ts";
import { type CtxsnapErrorOptions, IntegrityError, quote } from "../../errors.ts";
import { errnoOf, reasonOf } from "../../errors.ts";

/** Chunk size of the streaming read: 1 MiB. */
export const READ_CHUNK_BYTES: number = 1024 * 1024;

/** Default for `keepBytesUpTo`: files up to 4 MiB are returned in memory. */
export const DEFAULT_KEEP_BYTES: number = 4 * 1024 * 1024;

/** The parts of a `stat` result that identify a file and detect changes to it. */
export interface StatInfo {
  /** Size in bytes. */
  size: number;
  /** Last modification time, milliseconds since the epoch. */
  mtimeMs: number;
  /** Last status change time, milliseconds since the epoch. */
  ctimeMs: number;
  /** Inode number. */
  ino: number;
  /** Device number. */
  dev: number;
  /** Permission bits only (`mode & 0o7777`). */
  mode: number;
}

/** A file was replaced, became a symlink, or changed while it was being read (exit 1). */
export class FileChangedError extends IntegrityError {
  /** Creates a file-changed error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "FileChangedError";
  }
}

/** A file could not be opened or read: permission denied, vanished, I/O error (exit 1). */
export class UnreadableError extends IntegrityError {
  /** Creates an unreadable-file error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "UnreadableError";
  }
}

/** What {@linkcode readRegularNoFollow} read. */
export interface ReadResult {
  /** The file's bytes when `size <= keepBytesUpTo`, else `null` (use `onChunk` to stream them). */
  data: Uint8Array | null;
  /** SHA-256 of the bytes, lowercase hex. */
  sha256: string;
  /** Number of bytes read, equal to `stat.size`. */
  size: number;
  /** The `fstat` of the open file, which the bytes are consistent with. */
  stat: StatInfo;
}

/** Options of {@linkcode readRegularNoFollow}. */
export interface ReadOptions {
  /** Refuse (with {@linkcode FileChangedError}) a file larger than this many bytes. */
  maxBytes: number;
  /**
   * Receives each chunk as it is read, e.g. to stream it into storage. The
   * chunk is a view of a reused buffer, valid only until the callback returns:
   * copy it to keep it. An exception thrown here aborts the read and is rethrown unchanged.
   */
  onChunk?: (chunk: Uint8Array) => void;
  /** Return the bytes in `data` only when the file is at most this large (default 4 MiB). */
  keepBytesUpTo?: number;
  /**
   * Sees every byte read, in order, in one or more chunks (say, to look for
   * secrets), without changing which read path is taken: a file read whole
   * is shown once, after its identity check. The chunk is valid only during
   * the call. An exception thrown here aborts the read and is rethrown unchanged.
   */
  inspect?: (chunk: Uint8Array) => void;
  /**
   * The canonical path the opened file must have (the workspace's real path
   * joined with the entry's relative path). Where the kernel can say which
   * file a descriptor refers to (`/proc/self/fd` on Linux), a file reached
   * through a parent directory swapped for a symlink is refused.
   */
  expectedRealPath?: string;
}

let procFdWorks: boolean | undefined;

/** The path the kernel reports for an open descriptor, or null where it cannot say. */
export function descriptorPath(fd: number): string | null {
  if (procFdWorks === false) return null;
  try {
    const resolved = readlinkSync(`/proc/self/fd/${fd}`);
    procFdWorks = true;
    return resolved;
  } catch {
    procFdWorks ??= false;
    return null;
  }
}

/**
 * Converts `node:fs` stats into a {@linkcode StatInfo}.
 *
 * @example
 * ```ts
 * import { lstatSync } from "node:fs";
 * import { statInfoOf } from "./safe_read.ts";
 * const info = statInfoOf(lstatSync("."));
 * if (!(info.mode <= 0o7777)) throw new Error("Example failed");
 * ```
 */
export function statInfoOf(stats: FileStat): StatInfo {
  return {
    size: stats.size,
    mtimeMs: stats.mtimeMs,
    ctimeMs: stats.ctimeMs,
    ino: stats.ino,
    dev: stats.dev,
    mode: stats.mode & 0o7777,
  };
}

/**
 * Reads the regular file at `absPath`, which an earlier `lstat` described as
 * `expected`, without following a symlink, hashing it as it streams.
 *
 * @example
 * ```ts
 * import { lstatSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import { FileChangedError, readRegularNoFollow, statInfoOf } from "./safe_read.ts";
 *
 * const dir = mkdtempSync(join(tmpdir(), "ctxsnap-doc-"));
 * const file = join(dir, "notes.txt");
 * writeFileSync(file, "notes");
 * writeFileSync(join(dir, "secret"), "SECRET");
 * const expected = statInfoOf(lstatSync(file));
 * unlinkSync(file);
 * symlinkSync(join(dir, "secret"), file); // swapped in after the lstat
 * try {
 *   readRegularNoFollow(file, expected, { maxBytes: 1024 });
 *   if (!(false)) throw new Error("Example failed");
 * } catch (error) {
 *   if (!(error instanceof FileChangedError)) throw new Error("Example failed");
 * }
 * rmSync(dir, { recursive: true });
 * ```
 *
 * @param absPath The file's path.
 * @param expected The `lstat` of the file taken during the walk.
 * @param options Size limit, streaming callback and in-memory threshold.
 * @returns The bytes (if small enough), their SHA-256, size and the file's `fstat`.
 * @throws {FileChangedError} If the path became a symlink or was replaced by another
 *   file, is not a regular file, exceeds `maxBytes`, or changed while being read.
 * @throws {UnreadableError} If the file cannot be opened or read (EACCES, EPERM,
 *   ENOENT, EIO, ...).
 */
export function readRegularNoFollow(
  absPath: string,
  expected: StatInfo,
  options: ReadOptions,
): ReadResult {
  const { maxBytes, keepBytesUpTo = DEFAULT_KEEP_BYTES } = options;
  let fd: number;
  try {
    fd = openSync(absPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw openFailure(absPath, error);
  }
  try {
    let confirmed = false;
    if (options.expectedRealPath !== undefined) {
      // O_NOFOLLOW guards only the last component: a parent directory swapped
      // for a symlink between the walk and the open would lead elsewhere.
      const actual = descriptorPath(fd);
      if (actual !== null && actual !== options.expectedRealPath) {
        throw new FileChangedError(
          `File ${quote(absPath)} was reached through a replaced directory`,
        );
      }
      confirmed = actual !== null;
    }
    // Reading before the identity check is only for a descriptor the kernel
    // confirmed is the workspace's own file at this path: never an outside one.
    if (
      confirmed && options.onChunk === undefined && expected.size <= keepBytesUpTo &&
      expected.size <= maxBytes
    ) {
      const fast = readWholeChecked(fd, absPath, expected);
      if (fast !== null) {
        if (options.inspect !== undefined) callback(options.inspect, fast.data!);
        return fast;
      }
      // Same file, but it changed since the walk's lstat: read it afresh.
    }
    return readStreaming(fd, absPath, expected, options);
  } catch (error) {
    if (error instanceof CallbackFailure) throw error.error; // not the file's fault
    if (error instanceof IntegrityError) throw error;
    throw new UnreadableError(`Cannot read file ${quote(absPath)}: ${reasonOf(error)}`, {
      cause: error,
    });
  } finally {
    try {
      closeSync(fd);
    } catch {
      // A failed close of a read-only descriptor loses nothing.
    }
  }
}

/**
 * The fast path for a file kept in memory: read `expected.size` bytes and
 * one more, then a single `fstat` must match the walk's `lstat` exactly
 * (inode, device, size, mtime, ctime). The bytes leave this function only
 * after that check. Returns null when it is the same regular file but it
 * changed since the `lstat`, for the caller to read it again.
 */
function readWholeChecked(
  fd: number,
  absPath: string,
  expected: StatInfo,
): ReadResult | null {
  const size = expected.size;
  // One byte more than expected, asked for in the same read: a file that grew
  // fills it. A short read is the end of a regular file, so an unchanged file
  // takes one `read`, not a second one to probe the end; a file that changes
  // after it is caught by the `fstat` below (size, mtime, ctime).
  const buffer = new Uint8Array(size + 1);
  let total = 0;
  let failure: unknown = null;
  try {
    while (total <= size) {
      const want = size + 1 - total;
      const count = readSync(fd, buffer, total, want, total);
      total += count;
      if (count < want) break;
    }
  } catch (error) {
    failure = error; // classified once fstat says what was opened
  }
  const after = checkIdentity(fd, absPath, expected);
  if (failure !== null) throw failure;
  if (
    total !== size || after.size !== size || after.mtimeMs !== expected.mtimeMs ||
    after.ctimeMs !== expected.ctimeMs
  ) {
    return null;
  }
  const data = buffer.subarray(0, size);
  const hasher = createSha256();
  hasher.update(data);
  return { data, sha256: hasher.digestHex(), size, stat: statInfoOf(after) };
}

/**
 * `fstat`s the open file and checks that it is a regular file with the
 * inode and device the walk saw.
 */
function checkIdentity(fd: number, absPath: string, expected: StatInfo): FileStat {
  const stat = fstatSync(fd);
  if (!stat.isFile()) {
    throw new FileChangedError(`File ${quote(absPath)} is no longer a regular file`);
  }
  if (stat.ino !== expected.ino || stat.dev !== expected.dev) {
    throw new FileChangedError(`File ${quote(absPath)} was replaced between lstat and open`);
  }
  return stat;
}

function tooLarge(absPath: string, maxBytes: number, size: number): FileChangedError {
  return new FileChangedError(
    `File ${quote(absPath)} is larger than the size limit of ${maxBytes} bytes (${size} bytes)`,
  );
}

/**
 * The general path: `fstat` before a byte is read (identity and size), the
 * content streamed in chunks to `onChunk` and the hash, then `fstat` again.
 */
function readStreaming(
  fd: number,
  absPath: string,
  expected: StatInfo,
  options: ReadOptions,
): ReadResult {
  const { maxBytes, onChunk, inspect, keepBytesUpTo = DEFAULT_KEEP_BYTES } = options;
  const before = checkIdentity(fd, absPath, expected);
  const size = before.size;
  if (size > maxBytes) throw tooLarge(absPath, maxBytes, size);
  const data = size <= keepBytesUpTo ? new Uint8Array(size) : null;
  const hasher = createSha256();
  const buffer = new Uint8Array(Math.min(READ_CHUNK_BYTES, size + 1));
  // Read at most one byte past the size seen at open: that byte proves growth.
  const limit = size + 1;
  let total = 0;
  while (total < limit) {
    const want = Math.min(buffer.length, limit - total);
    const count = readSync(fd, buffer, 0, want, total);
    if (count === 0) break;
    if (total + count > size) break; // grew; reported below
    const chunk = buffer.subarray(0, count);
    hasher.update(chunk);
    data?.set(chunk, total);
    if (inspect !== undefined) callback(inspect, chunk);
    if (onChunk !== undefined) callback(onChunk, chunk);
    total += count;
  }
  const after = fstatSync(fd);
  if (
    total !== size || after.size !== size || after.mtimeMs !== before.mtimeMs ||
    after.ctimeMs !== before.ctimeMs || after.ino !== before.ino
  ) {
    throw new FileChangedError(`File ${quote(absPath)} changed while being read`, {
      hint: "capture again once the file is no longer being written",
    });
  }
  return { data, sha256: hasher.digestHex(), size, stat: statInfoOf(before) };
}

/** Carries an exception out of `onChunk` so it is rethrown as is, not as unreadable. */
class CallbackFailure {
  constructor(readonly error: unknown) {}
}

/** Calls the caller's `fn`, wrapping what it throws in a {@linkcode CallbackFailure}. */
function callback(fn: (chunk: Uint8Array) => void, chunk: Uint8Array): void {
  try {
    fn(chunk);
  } catch (error) {
    throw new CallbackFailure(error);
  }
}

function openFailure(absPath: string, error: unknown): Error {
  const name = quote(absPath);
  const code = errnoOf(error);
  if (code === "ELOOP") {
    return new FileChangedError(`File ${name} became a symlink`, { cause: error });
  }
  if (code === "ENXIO" || code === "EISDIR") {
    return new FileChangedError(`File ${name} is no longer a regular file`, { cause: error });
  }
  if (code === "EACCES" || code === "EPERM") {
    return new UnreadableError(`Permission denied reading file ${name}`, { cause: error });
  }
  if (code === "ENOENT") {
    return new UnreadableError(`File ${name} disappeared before it could be read`, {
      cause: error,
    });
  }
  return new UnreadableError(`Cannot open file ${name}: ${reasonOf(error)}`, { cause: error });
}
