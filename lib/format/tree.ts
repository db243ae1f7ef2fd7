/**
 * Tree manifests: the canonical description of a captured workspace.
 *
 * `{"version":1,"entries":[…],"skipped":[…]}` where an entry is a file
 * (`path`, `type:"file"`, `blob`, `size`, `mode`) or a symlink (`path`,
 * `type:"symlink"`, `target`). A manifest read from anywhere is untrusted:
 * {@linkcode validateTree} checks every field, the path rules and the limits.
 *
 * @example
 * ```ts
 * import { treeBytes, treeId, validateTree } from "./tree.ts";
 * const tree = validateTree({ version: 1, entries: [], skipped: [] });
 * if (!(treeId(tree) === treeId(validateTree(JSON.parse(new TextDecoder().decode(treeBytes(tree))))))) throw new Error("Example failed");
 * ```
 * @module
 */
import { canonicalBytes } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import { sha256Hex } from "../crypto/hash.ts";
import { checkEntryPaths } from "../workspace/io/path.ts";
import { isReservedName } from "../workspace/io/capture_policy.ts";

/** The manifest format version this code reads and writes. */
export const TREE_VERSION = 1;
/** Most entries (files and symlinks) one manifest may hold. */
export const MAX_TREE_ENTRIES = 2_000_000;
/** Most skipped records one manifest may hold. */
export const MAX_TREE_SKIPPED = 1_000_000;
/** Largest manifest accepted, in bytes of canonical JSON. */
export const MAX_TREE_BYTES: number = 512 * 1024 * 1024;
/** Longest symlink target or skipped path accepted, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 4096;

/** A regular file in a tree. */
export interface FileEntry {
  /** Normalized relative POSIX path. */
  path: string;
  /** Entry kind. */
  type: "file";
  /** SHA-256 hex of the file's bytes. */
  blob: string;
  /** Size in bytes. */
  size: number;
  /** Permission bits (`mode & 0o7777`). */
  mode: number;
}

/** A symbolic link in a tree, recorded and never followed. */
export interface SymlinkEntry {
  /** Normalized relative POSIX path. */
  path: string;
  /** Entry kind. */
  type: "symlink";
  /** The link's target exactly as `readlink` returned it. */
  target: string;
}

/** One entry of a tree. */
export type TreeEntry = FileEntry | SymlinkEntry;

/** Something the capture left out, and why. */
export interface SkippedEntry {
  /** Relative path as seen on disk (may be an unsafe name). */
  path: string;
  /** Why it was skipped, e.g. `secret`, `ignored`, `special_file`. */
  reason: string;
}

/** A workspace tree manifest. */
export interface TreeManifest {
  /** Always {@linkcode TREE_VERSION}. */
  version: 1;
  /** Sorted, unique entries. */
  entries: TreeEntry[];
  /** Sorted records of what was left out. */
  skipped: SkippedEntry[];
}

function fail(message: string): never {
  throw new IntegrityError(`Invalid tree manifest: ${message}`);
}

function plainObject(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    fail(`${what} is not an object`);
  }
  return value as Record<string, unknown>;
}

function onlyKeys(object: Record<string, unknown>, allowed: readonly string[], what: string): void {
  for (const key of Object.keys(object)) {
    if (!allowed.includes(key)) fail(`${what} has unknown field ${quote(key)}`);
  }
  for (const key of allowed) {
    if (!(key in object)) fail(`${what} lacks field ${quote(key)}`);
  }
}

function name(value: unknown, what: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    fail(`${what} is not a string of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  if (value.includes("\0")) fail(`${what} contains NUL`);
  if (!value.isWellFormed()) fail(`${what} contains a lone surrogate`);
  return value;
}

/** Validates an untrusted manifest value and returns it typed; throws {@linkcode IntegrityError}. */
export function validateTree(value: unknown): TreeManifest {
  const top = plainObject(value, "manifest");
  onlyKeys(top, ["version", "entries", "skipped"], "manifest");
  if (top.version !== TREE_VERSION) {
    throw new IntegrityError(`Unsupported tree manifest version ${quote(top.version)}`, {
      hint: "this ctxsnap reads tree versions 1 and 2; upgrade ctxsnap",
    });
  }
  if (!Array.isArray(top.entries)) fail("entries is not an array");
  if (!Array.isArray(top.skipped)) fail("skipped is not an array");
  if (top.entries.length > MAX_TREE_ENTRIES) fail(`more than ${MAX_TREE_ENTRIES} entries`);
  if (top.skipped.length > MAX_TREE_SKIPPED) fail(`more than ${MAX_TREE_SKIPPED} skipped`);
  const entries: TreeEntry[] = top.entries.map(checkedEntry);
  checkEntryPaths(entries.map((entry) => entry.path));
  for (const entry of entries) checkNotReserved(entry);
  const skipped: SkippedEntry[] = [];
  for (const raw of top.skipped) {
    const next = checkedSkipped(raw);
    const previous = skipped[skipped.length - 1];
    if (previous !== undefined && compareSkipped(previous, next) >= 0) {
      fail(`skipped records are not sorted and unique at ${quote(next.path)}`);
    }
    skipped.push(next);
  }
  return { version: 1, entries, skipped };
}

/**
 * Checks the fields of one untrusted manifest entry (not its path's rules,
 * order or place: see {@linkcode checkEntryPaths} and
 * {@linkcode checkNotReserved}) and returns a typed copy.
 */
export function checkedEntry(raw: unknown): TreeEntry {
  const entry = plainObject(raw, "entry");
  if (entry.type === "file") {
    onlyKeys(entry, ["path", "type", "blob", "size", "mode"], "file entry");
    const { path, blob, size, mode } = entry;
    if (typeof path !== "string") fail("entry path is not a string");
    if (typeof blob !== "string" || !isHex(blob, 64)) {
      fail(`blob of ${quote(path)} is not a SHA-256 hex id`);
    }
    if (!Number.isSafeInteger(size) || (size as number) < 0) {
      fail(`size of ${quote(path)} is invalid`);
    }
    if (!Number.isSafeInteger(mode) || (mode as number) < 0 || (mode as number) > 0o7777) {
      fail(`mode of ${quote(path)} is invalid`);
    }
    return { path, type: "file", blob, size: size as number, mode: mode as number };
  }
  if (entry.type === "symlink") {
    onlyKeys(entry, ["path", "type", "target"], "symlink entry");
    if (typeof entry.path !== "string") fail("entry path is not a string");
    return { path: entry.path, type: "symlink", target: name(entry.target, "symlink target") };
  }
  fail(`entry type ${quote(entry.type)} is unknown`);
}

/** Refuses an entry any segment of whose path is a reserved name (`.git`, `.ctxsnap`). */
export function checkNotReserved(entry: TreeEntry): void {
  if (entry.path.split("/").some(isReservedName)) {
    fail(`entry ${quote(entry.path)} lies in a reserved name (.git or .ctxsnap)`);
  }
}

/** Checks the fields of one untrusted skipped record and returns a typed copy. */
export function checkedSkipped(raw: unknown): SkippedEntry {
  const record = plainObject(raw, "skipped record");
  onlyKeys(record, ["path", "reason"], "skipped record");
  return { path: name(record.path, "skipped path"), reason: name(record.reason, "skip reason") };
}

/** Orders skipped records by path, then reason (UTF-16 code units). */
export function compareSkipped(a: SkippedEntry, b: SkippedEntry): number {
  if (a.path !== b.path) return a.path < b.path ? -1 : 1;
  return a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0;
}

/** The canonical bytes of a manifest (what its id hashes). */
export function treeBytes(tree: TreeManifest): Uint8Array {
  return canonicalBytes(tree);
}

/** The id of a manifest: SHA-256 hex of its canonical bytes. */
export function treeId(tree: TreeManifest): string {
  return sha256Hex(treeBytes(tree));
}

/** Counts a tree's files and their total bytes. */
export function treeTotals(tree: TreeManifest): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const entry of tree.entries) {
    if (entry.type === "file") {
      files += 1;
      bytes += entry.size;
    }
  }
  return { files, bytes };
}
