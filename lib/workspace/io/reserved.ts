/**
 * Reserved names, compared the way other filesystems compare names.
 *
 * `.git` and `.ctxsnap` (and a store's own directory name) must never be
 * written by a restore, whatever spelling a manifest uses. A spelling that is
 * a different name on Linux can be the same directory elsewhere, so a name is
 * reserved when it matches after the folding those filesystems apply
 * (git's `is_hfs_dotgit` in utf8.c and `is_ntfs_dotgit` in path.c are the
 * reference; this is a superset of both):
 *
 * - Unicode default-ignorable code points are dropped (HFS+ ignores zero-width
 *   joiners, bidi controls and the BOM: `.g\u200cit` is `.git` there);
 * - case is folded by full Unicode case mapping (NTFS and APFS are
 *   case-insensitive, and `ſ`, `ı` and the Kelvin sign fold to `s`, `i`, `k`);
 * - the name is NFC-normalized (HFS+ and APFS do not tell NFC from NFD);
 * - anything from the first `:` on is dropped (an NTFS alternate data stream:
 *   `.git::$INDEX_ALLOCATION` is `.git`), then trailing dots and spaces
 *   (NTFS trims them: `.git. .` is `.git`);
 * - an NTFS 8.3 short name of a reserved name is reserved too: the first six
 *   characters of the name without its leading dot, `~` and a digit (`GIT~1`,
 *   `CTXSNA~2`), and the hashed fall-back form (its first two characters, four
 *   hex digits, `~` and a number).
 *
 * @example
 * ```ts
 * import { isReservedName, sameReservedName } from "./reserved.ts";
 * for (const name of [".git", ".GIT", ".git.", ".git ", "GIT~1", ".g\u200dit", ".ctx\u017Fnap", ".git::$INDEX_ALLOCATION"]) {
 *   if (!isReservedName(name)) throw new Error(`${JSON.stringify(name)} should be reserved`);
 * }
 * for (const name of [".github", ".gitignore", "git", ".ctxsnapignore", "src"]) {
 *   if (isReservedName(name)) throw new Error(`${JSON.stringify(name)} is not reserved`);
 * }
 * if (!sameReservedName("MyStore.", "mystore")) throw new Error("store names fold too");
 * ```
 * @module
 */

/** The names reserved everywhere: git's metadata and ctxsnap's store. */
export const RESERVED_NAMES: ReadonlySet<string> = new Set([".git", ".ctxsnap"]);

const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * A name as a case-insensitive, normalization-insensitive filesystem that
 * ignores default-ignorable code points and trims like NTFS would see it.
 *
 * @example
 * ```ts
 * import { foldName } from "./reserved.ts";
 * if (foldName(".Git. ") !== ".git") throw new Error("trailing dots and spaces are trimmed");
 * if (foldName(".ctx\u017Fnap") !== ".ctxsnap") throw new Error("long s folds to s");
 * ```
 */
export function foldName(name: string): string {
  // Printable ASCII holds no ignorable code point, is its own NFC, and
  // upper- then lower-casing it is lower-casing it: the common case, fast.
  const folded = PRINTABLE_ASCII.test(name)
    ? name.toLowerCase()
    : name.replace(IGNORABLE, "").normalize("NFC").toUpperCase().toLowerCase();
  const colon = folded.indexOf(":");
  return (colon === -1 ? folded : folded.slice(0, colon)).replace(/[. ]+$/, "");
}

/** Whether folded `stem` is an NTFS 8.3 short name of the folded name `long`. */
function isShortNameOf(stem: string, long: string): boolean {
  if (!stem.includes("~")) return false;
  const match = /^(.+)~[1-9][0-9]*$/.exec(stem);
  if (match === null) return false;
  const prefix = match[1]!;
  // 8.3 drops leading dots, dots and spaces, and characters it cannot hold.
  const base = long.replace(/^\.+/, "").replace(/[^a-z0-9!#$%&'()@^_`{}~-]/g, "");
  if (base.length === 0) return false;
  if (prefix === base.slice(0, 6)) return true;
  return prefix.length === 6 && prefix.startsWith(base.slice(0, 2)) &&
    /^[0-9a-f]{4}$/.test(prefix.slice(2));
}

/**
 * Whether path segment `name` names the same entry as `reserved` on some
 * filesystem (see the module documentation for the folding).
 *
 * @example
 * ```ts
 * import { sameReservedName } from "./reserved.ts";
 * if (!sameReservedName("CTXSNA~1", ".ctxsnap")) throw new Error("8.3 short name");
 * if (sameReservedName("ctxsnap", ".ctxsnap")) throw new Error("the dot matters");
 * ```
 */
export function sameReservedName(name: string, reserved: string): boolean {
  const stem = foldName(name);
  const long = foldName(reserved);
  return stem === long || isShortNameOf(stem, long);
}

const FOLDED_RESERVED: readonly string[] = [...RESERVED_NAMES].map(foldName);
/** Whether every reserved name folds to one starting with "." (the fast path's premise). */
const ALL_DOTTED = FOLDED_RESERVED.every((name) => name.startsWith("."));

/**
 * Whether one path segment is a reserved name (`.git` or `.ctxsnap`) in any
 * spelling some filesystem treats as the same name.
 *
 * @example
 * ```ts
 * import { isReservedName } from "./reserved.ts";
 * if (!isReservedName(".CtxSnap")) throw new Error("any case");
 * if (isReservedName("notes.md")) throw new Error("ordinary names are not reserved");
 * ```
 */
export function isReservedName(name: string): boolean {
  // The walk asks this of every entry. A printable-ASCII name folds by
  // lower-casing (its first character stays a "." only if it was one) and
  // an 8.3 short name holds a "~": a name with neither folds to no reserved
  // name, all of which start with ".".
  if (
    ALL_DOTTED && name.charCodeAt(0) !== 0x2e && !name.includes("~") && PRINTABLE_ASCII.test(name)
  ) return false;
  const stem = foldName(name); // once, not once per reserved name
  return FOLDED_RESERVED.some((long) => stem === long || isShortNameOf(stem, long));
}

/**
 * Whether the relative POSIX path `relPath` is, or lies below, the relative
 * path `reservedPath` (a store inside the workspace, say), comparing segment
 * by segment with {@linkcode sameReservedName}.
 *
 * @example
 * ```ts
 * import { isInsideReservedPath } from "./reserved.ts";
 * if (!isInsideReservedPath("Data/Store./index.db", "data/store")) throw new Error("folded");
 * if (isInsideReservedPath("data/store2/x", "data/store")) throw new Error("another name");
 * ```
 */
export function isInsideReservedPath(relPath: string, reservedPath: string): boolean {
  const parts = relPath.split("/");
  const reserved = reservedPath.split("/");
  if (parts.length < reserved.length) return false;
  for (let i = 0; i < reserved.length; i++) {
    if (!sameReservedName(parts[i]!, reserved[i]!)) return false;
  }
  return true;
}
