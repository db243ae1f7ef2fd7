/**
 * Path rules for tree manifests (docs/DESIGN.md §2): every entry path is a normalized
 * POSIX relative path, entries are sorted by UTF-16 code units (the JS default
 * sort and the JCS key order), unique, and no entry sits below another entry.
 *
 * @example
 * ```ts
 * import { checkEntryPaths, comparePaths, isSafeRelativePath, normalizeRelativePath } from "./path.ts";
 *
 * if (!(normalizeRelativePath("src/main.ts") === "src/main.ts")) throw new Error("Example failed");
 * if (!(!isSafeRelativePath("../etc/passwd"))) throw new Error("Example failed");
 * if (!(["a/b", "a-b", "ab"].sort(comparePaths).join(" ") === "a-b a/b ab")) throw new Error("Example failed");
 * checkEntryPaths(["a-b", "a/b", "ab"]); // sorted, unique, no nesting: no error
 * ```
 * @module
 */
import { PathError, quote } from "../../errors.ts";
import { utf8Length } from "../../encoding/utf8.ts";

/** Longest accepted path, in UTF-8 bytes (Linux `PATH_MAX`). */
export const MAX_PATH_BYTES: number = 4096;

/** An empty, `.` or `..` segment anywhere in a path. */
const BAD_SEGMENT = /(?:^|\/)\.{0,2}(?:\/|$)/;

/** Returns why `value` is not a normalized relative path, or `null` when it is one. */
function problemOf(value: string): string | null {
  if (typeof value !== "string") return "is not a string";
  if (value.length === 0) return "is empty";
  // A UTF-16 code unit takes at most 3 UTF-8 bytes, so short strings skip the encode.
  if (value.length * 3 > MAX_PATH_BYTES && utf8Length(value) > MAX_PATH_BYTES) {
    return `is longer than ${MAX_PATH_BYTES} bytes`;
  }
  if (value.includes("\0")) return "contains a NUL character";
  if (value.includes("\\")) return "contains a backslash";
  if (!value.isWellFormed()) return "contains a lone surrogate (not valid UTF-8)";
  if (value.startsWith("/")) return "is absolute";
  if (value.endsWith("/")) return "ends with a slash";
  // One scan finds whether any segment is empty, "." or "..": only then split
  // to name the first one (the walk checks every name it lists).
  if (!BAD_SEGMENT.test(value)) return null;
  for (const segment of value.split("/")) {
    if (segment === "") return "contains an empty segment";
    if (segment === ".") return 'contains a "." segment';
    if (segment === "..") return 'contains a ".." segment';
  }
  return null;
}

/**
 * Returns `value` unchanged when it is already a normalized POSIX relative
 * path; otherwise throws. Nothing is rewritten: `"./a"` or `"a//b"` are
 * refused, not cleaned up, so a manifest has exactly one spelling per path.
 *
 * Refused: empty, absolute, NUL, backslash, lone surrogates, `""`/`"."`/`".."`
 * segments, a trailing slash, more than {@linkcode MAX_PATH_BYTES} UTF-8 bytes.
 * Newlines and other control characters are legal file-name bytes and are kept.
 *
 * @example
 * ```ts
 * import { normalizeRelativePath } from "./path.ts";
 * if (!(normalizeRelativePath("docs/README.md") === "docs/README.md")) throw new Error("Example failed");
 * try {
 *   normalizeRelativePath("a/../b");
 *   if (!(false)) throw new Error("Example failed");
 * } catch (error) {
 *   if (!((error as Error).name === "PathError")) throw new Error("Example failed");
 * }
 * ```
 *
 * @param value The path to check.
 * @returns `value` itself.
 * @throws {PathError} When `value` is not a normalized relative path.
 */
export function normalizeRelativePath(value: string): string {
  const problem = problemOf(value);
  if (problem !== null) {
    throw new PathError(`Path ${quote(value)} ${problem}`, {
      hint: "paths must be relative POSIX paths without '.', '..' or empty segments",
    });
  }
  return value;
}

/**
 * Whether `value` is a normalized POSIX relative path (see
 * {@linkcode normalizeRelativePath}); never throws.
 *
 * @example
 * ```ts
 * import { isSafeRelativePath } from "./path.ts";
 * if (!(isSafeRelativePath("a/b.txt"))) throw new Error("Example failed");
 * if (!(!isSafeRelativePath("/etc/passwd"))) throw new Error("Example failed");
 * ```
 */
export function isSafeRelativePath(value: string): boolean {
  return problemOf(value) === null;
}

/**
 * Orders paths by UTF-16 code units, the order of manifest entries (the same
 * as `Array.prototype.sort` without a comparator and as JCS key order). Note
 * that `"a-b" < "a/b" < "a.b"`, since `-` (0x2d) < `.` (0x2e) < `/` (0x2f).
 *
 * @example
 * ```ts
 * import { comparePaths } from "./path.ts";
 * if (!(comparePaths("a-b", "a/b") < 0)) throw new Error("Example failed");
 * if (!(comparePaths("a/b", "a/b") === 0)) throw new Error("Example failed");
 * ```
 *
 * @returns A negative number, zero or a positive number, as for `Array.prototype.sort`.
 */
export function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Checks the entry paths of a tree manifest: each is normalized, the list is
 * strictly increasing per {@linkcode comparePaths} (so sorted and unique), and
 * no path lies below another entry (`"a"` together with `"a/x"`). Runs in time
 * linear in the total length of the paths.
 *
 * @example
 * ```ts
 * import { checkEntryPaths } from "./path.ts";
 * checkEntryPaths(["a.txt", "b/c.txt"]);
 * try {
 *   checkEntryPaths(["a", "a/x"]);
 *   if (!(false)) throw new Error("Example failed");
 * } catch (error) {
 *   if (!((error as Error).message.includes('"a/x"'))) throw new Error("Example failed");
 * }
 * ```
 *
 * @param paths Entry paths in manifest order.
 * @throws {PathError} Naming the first offending path.
 */
export function checkEntryPaths(paths: readonly string[]): void {
  const checker = new EntryPathChecker();
  for (const path of paths) checker.check(path);
}

/**
 * {@linkcode checkEntryPaths} one path at a time, for a writer that streams
 * its entries (a full capture): hand it every entry path in manifest order
 * and it throws at the first one `checkEntryPaths` would refuse. It holds
 * only the previous path and the entries it is a prefix of.
 *
 * @example
 * ```ts
 * import { EntryPathChecker } from "./path.ts";
 * const checker = new EntryPathChecker();
 * checker.check("a");
 * try {
 *   checker.check("a/x");
 *   throw new Error("unreachable");
 * } catch (error) {
 *   if (!((error as Error).name === "PathError")) throw new Error("Example failed");
 * }
 * ```
 */
export class EntryPathChecker {
  // `open` holds earlier paths that are string prefixes of the current one,
  // shortest first. If some earlier entry P is a directory prefix of Q, every
  // path sorted between them starts with P, so P is still on the stack — and,
  // absent earlier errors, it is the top once non-prefixes are popped.
  #open: string[] = [];
  #previous: string | undefined;

  /** Checks the next entry path; throws {@linkcode PathError} naming it. */
  check(path: string): void {
    normalizeRelativePath(path);
    const previous = this.#previous;
    if (previous !== undefined) {
      const order = comparePaths(previous, path);
      if (order === 0) throw new PathError(`Entry path ${quote(path)} appears more than once`);
      if (order > 0) {
        throw new PathError(`Entry path ${quote(path)} is out of order after ${quote(previous)}`);
      }
    }
    this.#previous = path;
    const open = this.#open;
    while (open.length > 0 && !path.startsWith(open[open.length - 1]!)) open.pop();
    const parent = open[open.length - 1];
    if (parent !== undefined && path.charCodeAt(parent.length) === 0x2f /* "/" */) {
      throw new PathError(`Entry path ${quote(path)} sits below entry ${quote(parent)}`);
    }
    open.push(path);
  }
}
