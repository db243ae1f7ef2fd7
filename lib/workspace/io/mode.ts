/**
 * The rule from a recorded file mode to the mode a restore creates.
 *
 * A tree records `lstat` permission bits (`mode & 0o7777`, FORMAT.md §2). A
 * restore or materialize never recreates setuid, setgid or sticky bits and
 * never makes a file world-writable, and it honours the umask: the file is
 * created with {@linkcode creationMode} and the kernel removes the umask's
 * bits, so it ends up with {@linkcode restoredMode}. A file on disk matches a
 * recorded entry's mode when its bits equal either the recorded bits or what
 * restoring them gives under the current umask ({@linkcode modeMatches}).
 *
 * @example
 * ```ts
 * import { creationMode, modeMatches, restoredMode } from "./mode.ts";
 * if (creationMode(0o4777) !== 0o775) throw new Error("no setuid, no world-write");
 * if (restoredMode(0o666, 0o022) !== 0o644) throw new Error("the umask applies");
 * if (!modeMatches(0o644, 0o666, 0o022)) throw new Error("a restored file matches its entry");
 * if (modeMatches(0o600, 0o644, 0o022)) throw new Error("another mode does not");
 * ```
 * @module
 */
import { umask } from "../../runtime.ts";

/** Permission bits passed to `open(O_CREAT)` for a file recorded with `recorded`. */
export function creationMode(recorded: number): number {
  return recorded & 0o775;
}

/** The permission bits a file recorded with `recorded` gets when restored under `mask`. */
export function restoredMode(recorded: number, mask: number): number {
  return creationMode(recorded) & ~mask & 0o777;
}

/**
 * Whether permission bits `onDisk` are what a restore of `recorded` leaves
 * (under `mask`, default the process umask), or `recorded` itself.
 */
export function modeMatches(onDisk: number, recorded: number, mask: number = umask()): boolean {
  const bits = onDisk & 0o7777;
  return bits === (recorded & 0o7777) || bits === restoredMode(recorded, mask);
}
