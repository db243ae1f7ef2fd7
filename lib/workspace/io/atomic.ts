/**
 * Atomic file replacement: readers see either the old file or the complete
 * new one, never a partial write, and after a crash the new file is durable
 * once {@linkcode writeFileAtomic} has returned.
 *
 * The data goes to a fresh temporary file in the same directory (created with
 * `O_CREAT | O_EXCL | O_NOFOLLOW`, so it never reuses or writes through an
 * existing path), which is fsynced and renamed over the destination; then the
 * directory is fsynced. `rename` replaces a symlink at the destination rather
 * than following it. The temporary file is removed on failure.
 *
 * @example
 * ```ts
 * import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import { writeFileAtomic } from "./atomic.ts";
 *
 * const dir = mkdtempSync(join(tmpdir(), "ctxsnap-doc-"));
 * const file = join(dir, "config.json");
 * writeFileAtomic(file, '{"ok":true}\n', { mode: 0o600 });
 * if (!(readFileSync(file, "utf8") === '{"ok":true}\n')) throw new Error("Example failed");
 * if (!((statSync(file).mode & 0o777) === 0o600)) throw new Error("Example failed");
 * rmSync(dir, { recursive: true });
 * ```
 * @module
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  openSync,
  renameSync,
  unlinkSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { CtxsnapError, quote } from "../../errors.ts";
import { errnoOf, reasonOf } from "../../errors.ts";
import { writeAllSync } from "./fd.ts";

/** Prefix of the temporary files {@linkcode writeFileAtomic} creates. */
export const TEMP_PREFIX: string = ".ctxsnap-tmp-";

/** Options of {@linkcode writeFileAtomic}. */
export interface WriteAtomicOptions {
  /** Exact permission bits of the new file (not reduced by the umask); default `0o666 & ~umask`. */
  mode?: number;
  /** Fsync the file and its directory (default true); turn off only for throwaway data. */
  fsync?: boolean;
}

/**
 * Replaces (or creates) the file at `absPath` with `data` atomically. A
 * string is written as UTF-8. The parent directory must exist.
 *
 * @example
 * ```ts
 * import { mkdtempSync, readFileSync, rmSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import { writeFileAtomic } from "./atomic.ts";
 *
 * const dir = mkdtempSync(join(tmpdir(), "ctxsnap-doc-"));
 * writeFileAtomic(join(dir, "a.bin"), new Uint8Array([1, 2, 3]), { fsync: false });
 * if (!(readFileSync(join(dir, "a.bin")).length === 3)) throw new Error("Example failed");
 * rmSync(dir, { recursive: true });
 * ```
 *
 * @param absPath Destination path.
 * @param data The new content.
 * @param options Mode and durability.
 * @throws {CtxsnapError} With code `"failure"` naming the path when any step fails.
 */
export function writeFileAtomic(
  absPath: string,
  data: Uint8Array | string,
  options: WriteAtomicOptions = {},
): void {
  const { mode, fsync = true } = options;
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const dir = dirname(absPath);
  const temp = join(dir, TEMP_PREFIX + randomHex(8));
  let fd: number | undefined;
  let created = false;
  try {
    fd = openSync(
      temp,
      constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
      mode ?? 0o666,
    );
    created = true;
    if (mode !== undefined) fchmodSync(fd, mode);
    writeAllSync(fd, bytes);
    if (fsync) fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, absPath);
    created = false;
    if (fsync) fsyncDir(dir);
  } catch (error) {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // Already failing; the original error is the one to report.
      }
    }
    if (created) {
      try {
        unlinkSync(temp);
      } catch {
        // Best effort: a leftover temp file is named so it can be recognized.
      }
    }
    throw new CtxsnapError(
      `Cannot write file ${quote(absPath)}: ${reasonOf(error)}`,
      "failure",
      { cause: error, hint: "check that the directory exists and is writable" },
    );
  }
}

/**
 * Fsyncs a directory so that entries created, renamed or removed in it are
 * durable. Filesystems that cannot fsync a directory are tolerated.
 *
 * @example
 * ```ts
 * import { tmpdir } from "node:os";
 * import { fsyncDir } from "./atomic.ts";
 * fsyncDir(tmpdir());
 * ```
 *
 * @param absDir The directory.
 * @throws {Error} The underlying `node:fs` error when the directory cannot be opened.
 */
export function fsyncDir(absDir: string): void {
  const fd = openSync(absDir, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0));
  try {
    fsyncSync(fd);
  } catch (error) {
    const code = errnoOf(error);
    if (code !== "EINVAL" && code !== "ENOTSUP" && code !== "EPERM" && code !== "EISDIR") {
      throw error;
    }
  } finally {
    closeSync(fd);
  }
}

function randomHex(byteCount: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(byteCount));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
