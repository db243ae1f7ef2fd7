/**
 * Private file helpers of the crypto layer (which sits above lib/workspace/io): the
 * durable directory fsync, and the checks that keep the verifier's own
 * configuration (the config directory, `identity.pem`, `trusted_keys.json`,
 * a `--trusted-keys` file, a `--trust` key file) from being another user's
 * or anyone's to change. Every refusal is a {@linkcode ConfigError} (exit 7).
 * @module
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  realpathSync,
  type Stats,
  statSync,
} from "node:fs";
import process from "node:process";
import { ConfigError, errnoOf, quote } from "../errors.ts";

/** This process's user id, or null where there is none (Windows). */
function currentUid(): number | null {
  try {
    return typeof process.getuid === "function" ? process.getuid() : null;
  } catch {
    return null;
  }
}

function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return "a directory";
  if (stat.isFIFO()) return "a FIFO";
  if (stat.isSocket()) return "a socket";
  if (stat.isCharacterDevice()) return "a character device";
  if (stat.isBlockDevice()) return "a block device";
  return "of an unknown type";
}

function modeText(stat: Stats): string {
  return (stat.mode & 0o7777).toString(8).padStart(4, "0");
}

/**
 * Why `stat` may not be trusted as configuration, or null: owned by a user
 * other than this one or root, or writable by group or others (any group or
 * other permission at all with `private`). No checks where there are no uids.
 */
function exposure(
  stat: Stats,
  isPrivate: boolean,
): { problem: string; owner: boolean } | null {
  const uid = currentUid();
  if (uid === null) return null;
  if (stat.uid !== uid && stat.uid !== 0) {
    return {
      problem: `is owned by another user (uid ${stat.uid}, this process runs as uid ${uid})`,
      owner: true,
    };
  }
  if (isPrivate && (stat.mode & 0o077) !== 0) {
    return { problem: `is accessible by group or others (mode ${modeText(stat)})`, owner: false };
  }
  if (!isPrivate && (stat.mode & 0o022) !== 0) {
    return { problem: `is writable by group or others (mode ${modeText(stat)})`, owner: false };
  }
  return null;
}

function ownerHint(path: string): string {
  return `check who put it there; if it is yours to use: chown "$(id -u)" ${path}`;
}

/**
 * Checks the config directory: when it exists it must be a directory owned
 * by this user (or root) and not writable by group or others, because
 * whoever can write it can replace the trusted keys or the signing key.
 *
 * @throws {ConfigError} Naming the directory, with a `chmod`/`chown` hint.
 */
export function checkConfigDir(dir: string): void {
  let stat: Stats;
  try {
    stat = statSync(dir);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return;
    throw new ConfigError(
      `Cannot read config directory ${quote(dir)}: ${errnoOf(error) ?? error}`,
      { cause: error },
    );
  }
  if (!stat.isDirectory()) {
    throw new ConfigError(`Config directory ${quote(dir)} is not a directory`);
  }
  const exposed = exposure(stat, false);
  if (exposed !== null) {
    throw new ConfigError(`Config directory ${quote(dir)} ${exposed.problem}`, {
      hint: exposed.owner ? ownerHint(dir) : `chmod 700 ${dir}`,
    });
  }
}

/** Options of {@linkcode readConfigFile}. */
export interface ConfigFileOptions {
  /** What the file is, for messages (e.g. `Trusted keys file`). */
  what: string;
  /** Largest size accepted. */
  maxBytes: number;
  /** Refuse any group or other permission (a private key), not only write permission. */
  private?: boolean;
  /** The hint for a file whose mode exposes it (e.g. `chmod 600 PATH`). */
  modeHint?: string;
  /** Follow a symbolic link once (a file named on the command line). Default: refuse it. */
  followSymlink?: boolean;
  /** Check owner and mode (default true). */
  checkOwner?: boolean;
}

/**
 * Reads a configuration file without ever blocking on or reading from
 * something else: `lstat` (a FIFO or device is refused before it is opened),
 * `open(O_RDONLY | O_NOFOLLOW | O_NONBLOCK)`, `fstat` (a regular file, the
 * same inode and device, owned by this user or root and not writable by
 * others), then at most `maxBytes` bytes are read. Returns null when the
 * file does not exist.
 *
 * @throws {ConfigError} For every other problem, naming the file.
 */
export function readConfigFile(path: string, options: ConfigFileOptions): Uint8Array | null {
  const { what, maxBytes } = options;
  const name = `${what} ${quote(path)}`;
  const failed = (error: unknown): ConfigError =>
    new ConfigError(`Cannot read ${name}: ${errnoOf(error) ?? error}`, { cause: error });
  let target = path;
  let before: Stats;
  try {
    before = lstatSync(path);
    if (before.isSymbolicLink()) {
      if (options.followSymlink !== true) {
        throw new ConfigError(`${name} is a symbolic link`, {
          hint: "replace the link with the file itself",
        });
      }
      target = realpathSync(path);
      before = lstatSync(target);
    }
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if (errnoOf(error) === "ENOENT") return null;
    throw failed(error);
  }
  if (!before.isFile()) {
    // Refused before open(): opening a device can have effects of its own.
    throw new ConfigError(`${name} is ${kindOf(before)}, not a regular file; it was not opened`);
  }
  let fd: number;
  try {
    fd = openSync(target, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (errnoOf(error) === "ELOOP") {
      throw new ConfigError(`${name} was replaced by a symbolic link while being opened`);
    }
    throw failed(error);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.ino !== before.ino || stat.dev !== before.dev) {
      throw new ConfigError(`${name} was replaced while being opened`);
    }
    if (!stat.isFile()) throw new ConfigError(`${name} is not a regular file`);
    if (options.checkOwner !== false) {
      const exposed = exposure(stat, options.private === true);
      if (exposed !== null) {
        const hint = exposed.owner ? ownerHint(path) : options.modeHint;
        throw new ConfigError(`${name} ${exposed.problem}`, hint === undefined ? {} : { hint });
      }
    }
    if (stat.size > maxBytes) {
      throw new ConfigError(`${name} is too large (${stat.size} bytes, at most ${maxBytes})`);
    }
    // One byte more than allowed proves a file that grew after the fstat.
    const buffer = new Uint8Array(Math.min(maxBytes, stat.size) + 1);
    let total = 0;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buffer, total, buffer.length - total, null);
      } catch (error) {
        if (errnoOf(error) === "EAGAIN") continue;
        throw failed(error);
      }
      if (n === 0) break;
      total += n;
      if (total === buffer.length) {
        throw new ConfigError(`${name} changed while being read`);
      }
    }
    return buffer.slice(0, total);
  } finally {
    closeSync(fd);
  }
}
