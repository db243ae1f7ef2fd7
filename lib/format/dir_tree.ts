/**
 * Directory trees (tree `version` 2): one object per directory, as git
 * stores them. A snapshot names its root tree; a directory whose content did
 * not change is the same object in every snapshot, so a capture writes only
 * the trees on the paths that changed and a diff skips equal subtrees.
 *
 * `{"version":2,"entries":[…],"skipped":[…]}` where an entry is a file
 * (`name`, `type:"file"`, `blob`, `size`, `mode`), a symlink (`name`,
 * `type:"symlink"`, `target`) or a subdirectory (`name`, `type:"tree"`,
 * `tree`). Entries are sorted by name, a subdirectory's name compared with a
 * `/` appended (git's order), so a depth-first walk yields paths in the flat
 * manifest's order. {@linkcode validateDirTree} checks one object;
 * {@linkcode splitManifest} turns a flat manifest into its directory objects.
 * The store expands a root tree back into the flat manifest
 * (`Store.getTree`), refusing depth bombs, empty subtrees and subtrees that
 * are not version 2 trees (docs/FORMAT.md §2.2).
 *
 * @example
 * ```ts
 * import { splitManifest, validateDirTree } from "./dir_tree.ts";
 * const blob = "0".repeat(64);
 * const split = splitManifest({
 *   version: 1,
 *   entries: [{ path: "src/a.ts", type: "file", blob, size: 1, mode: 0o644 }],
 *   skipped: [],
 * });
 * // One tree for the root, one for src/, children first.
 * if (split.objects.length !== 2) throw new Error("Example failed");
 * const root = validateDirTree(JSON.parse(new TextDecoder().decode(split.objects[1]!.bytes)));
 * if (root.entries[0]!.type !== "tree") throw new Error("Example failed");
 * ```
 * @module
 */
import { canonicalBytes } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import { sha256Hex } from "../crypto/hash.ts";
import { isReservedName } from "../workspace/io/capture_policy.ts";
import {
  checkedEntry,
  checkedSkipped,
  checkNotReserved,
  compareSkipped,
  MAX_NAME_LENGTH,
  MAX_TREE_ENTRIES,
  MAX_TREE_SKIPPED,
  type SkippedEntry,
  type TreeEntry,
  type TreeManifest,
} from "./tree.ts";
import { EntryPathChecker } from "../workspace/io/path.ts";

/** The version of directory tree objects. */
export const DIR_TREE_VERSION = 2;
/** Most entries plus skipped records one directory object may hold. */
export const MAX_DIR_ENTRIES = 1_000_000;
/** Largest directory object accepted, in bytes of canonical JSON. */
export const MAX_DIR_TREE_BYTES: number = 128 * 1024 * 1024;
/** Deepest nesting of directory objects below a root (the root is depth 0). */
export const MAX_TREE_DEPTH = 256;

/** A regular file in a directory. */
export interface DirFileEntry {
  /** One path segment. */
  name: string;
  /** Entry kind. */
  type: "file";
  /** SHA-256 hex of the file's bytes. */
  blob: string;
  /** Size in bytes. */
  size: number;
  /** Permission bits (`mode & 0o7777`). */
  mode: number;
}

/** A symbolic link in a directory. */
export interface DirSymlinkEntry {
  /** One path segment. */
  name: string;
  /** Entry kind. */
  type: "symlink";
  /** The link's target exactly as `readlink` returned it. */
  target: string;
}

/** A subdirectory: the id of its own directory tree. */
export interface DirSubtreeEntry {
  /** One path segment. */
  name: string;
  /** Entry kind. */
  type: "tree";
  /** SHA-256 hex id of a version 2 tree. */
  tree: string;
}

/** One entry of a directory tree. */
export type DirEntry = DirFileEntry | DirSymlinkEntry | DirSubtreeEntry;

/** Something the capture left out in this directory. */
export interface DirSkipped {
  /** The path relative to this directory (normally one segment). */
  name: string;
  /** Why it was skipped. */
  reason: string;
}

/** One directory tree object. */
export interface DirTree {
  /** Always {@linkcode DIR_TREE_VERSION}. */
  version: 2;
  /** Entries in git order (see the module doc), names unique. */
  entries: DirEntry[];
  /** Sorted by name, then reason; unique. */
  skipped: DirSkipped[];
}

function fail(message: string): never {
  throw new IntegrityError(`Invalid directory tree: ${message}`);
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

function text(value: unknown, what: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    fail(`${what} is not a string of 1 to ${MAX_NAME_LENGTH} characters`);
  }
  if (value.includes("\0")) fail(`${what} contains NUL`);
  if (!value.isWellFormed()) fail(`${what} contains a lone surrogate`);
  return value;
}

/** Why `name` cannot be an entry name (one path segment), or null. */
export function entryNameProblem(name: string): string | null {
  if (name.length === 0) return "is empty";
  if (name.length > MAX_NAME_LENGTH) return "is too long";
  if (name === "." || name === "..") return "is a dot segment";
  if (name.includes("/")) return "contains a slash";
  if (name.includes("\\")) return "contains a backslash";
  if (name.includes("\0")) return "contains NUL";
  if (!name.isWellFormed()) return "contains a lone surrogate";
  if (isReservedName(name)) return "is a reserved name (.git or .ctxsnap)";
  return null;
}

/** The key a directory's entries are ordered by: the name, with `/` appended for a subtree. */
export function entryOrderKey(entry: { name: string; type: string }): string {
  return entry.type === "tree" ? `${entry.name}/` : entry.name;
}

function compareDirSkipped(a: DirSkipped, b: DirSkipped): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0;
}

/**
 * Validates one untrusted directory tree object and returns it typed; throws
 * {@linkcode IntegrityError}. What it names (subtrees) is checked by whoever
 * follows them.
 */
export function validateDirTree(value: unknown): DirTree {
  const top = plainObject(value, "tree");
  onlyKeys(top, ["version", "entries", "skipped"], "tree");
  if (top.version !== DIR_TREE_VERSION) fail(`version ${quote(top.version)} is not 2`);
  if (!Array.isArray(top.entries)) fail("entries is not an array");
  if (!Array.isArray(top.skipped)) fail("skipped is not an array");
  if (top.entries.length + top.skipped.length > MAX_DIR_ENTRIES) {
    fail(`more than ${MAX_DIR_ENTRIES} entries and skipped records`);
  }
  const entries: DirEntry[] = [];
  const names = new Set<string>();
  let previousKey: string | undefined;
  for (const raw of top.entries) {
    const entry = plainObject(raw, "entry");
    const name = entry.name;
    if (typeof name !== "string") fail("entry name is not a string");
    const problem = entryNameProblem(name);
    if (problem !== null) fail(`entry name ${quote(name)} ${problem}`);
    if (entry.type === "file") {
      onlyKeys(entry, ["name", "type", "blob", "size", "mode"], "file entry");
      const { blob, size, mode } = entry;
      if (typeof blob !== "string" || !isHex(blob, 64)) {
        fail(`blob of ${quote(name)} is not a SHA-256 hex id`);
      }
      if (!Number.isSafeInteger(size) || (size as number) < 0) {
        fail(`size of ${quote(name)} is invalid`);
      }
      if (!Number.isSafeInteger(mode) || (mode as number) < 0 || (mode as number) > 0o7777) {
        fail(`mode of ${quote(name)} is invalid`);
      }
      entries.push({ name, type: "file", blob, size: size as number, mode: mode as number });
    } else if (entry.type === "symlink") {
      onlyKeys(entry, ["name", "type", "target"], "symlink entry");
      entries.push({ name, type: "symlink", target: text(entry.target, "symlink target") });
    } else if (entry.type === "tree") {
      onlyKeys(entry, ["name", "type", "tree"], "tree entry");
      if (typeof entry.tree !== "string" || !isHex(entry.tree, 64)) {
        fail(`tree of ${quote(name)} is not a SHA-256 hex id`);
      }
      entries.push({ name, type: "tree", tree: entry.tree });
    } else {
      fail(`entry type ${quote(entry.type)} is unknown`);
    }
    if (names.has(name)) fail(`entry name ${quote(name)} appears more than once`);
    names.add(name);
    const key = entryOrderKey(entries[entries.length - 1]!);
    if (previousKey !== undefined && !(previousKey < key)) {
      fail(`entries are not in order at ${quote(name)}`);
    }
    previousKey = key;
  }
  const skipped: DirSkipped[] = [];
  for (const raw of top.skipped) {
    const record = plainObject(raw, "skipped record");
    onlyKeys(record, ["name", "reason"], "skipped record");
    const next = {
      name: text(record.name, "skipped name"),
      reason: text(record.reason, "skip reason"),
    };
    const previous = skipped[skipped.length - 1];
    if (previous !== undefined && compareDirSkipped(previous, next) >= 0) {
      fail(`skipped records are not sorted and unique at ${quote(next.name)}`);
    }
    skipped.push(next);
  }
  return { version: 2, entries, skipped };
}

/**
 * The canonical bytes of a directory tree (what its id hashes): exactly
 * `canonicalBytes(tree)` for a tree of the shape {@linkcode DirTree} defines,
 * written field by field in JCS key order instead of through the generic
 * serializer (a capture serializes every directory of the workspace). A value
 * the generic serializer would refuse (a lone surrogate, a number that is
 * not a safe integer) is refused here too; one of any other shape (an
 * unknown type, a missing or extra field) goes to the generic serializer,
 * so the bytes never depend on which path wrote them.
 */
export function dirTreeBytes(tree: DirTree): Uint8Array {
  const text = dirTreeText(tree);
  return text === null ? canonicalBytes(tree) : UTF8.encode(text);
}

const UTF8 = new TextEncoder();
// Characters JCS escapes (quote, backslash, C0 controls): JSON.stringify
// writes them exactly as JCS does; lone surrogates are refused first.
// deno-lint-ignore no-control-regex
const PLAIN_STRING = /^[^"\\\u0000-\u001f]*$/;

/** A JCS string, or null for one the generic serializer must judge (it refuses lone surrogates). */
function jcsString(value: unknown): string | null {
  if (typeof value !== "string" || !value.isWellFormed()) return null;
  return PLAIN_STRING.test(value) ? `"${value}"` : JSON.stringify(value);
}

/** A JCS safe integer, or null. */
function jcsInteger(value: unknown): string | null {
  return Number.isSafeInteger(value) ? String(value) : null;
}

const TOP_KEYS = ["entries", "skipped", "version"] as const;
const FILE_KEYS = ["blob", "mode", "name", "size", "type"] as const;
const LINK_KEYS = ["name", "target", "type"] as const;
const SUBTREE_KEYS = ["name", "tree", "type"] as const;
const SKIPPED_KEYS = ["name", "reason"] as const;
const isEnumerable = Object.prototype.propertyIsEnumerable;

/**
 * Whether `object` is a plain object whose own enumerable keys are exactly
 * `keys` (what the generic serializer would write), with no symbol keys.
 */
function hasKeys(object: object, keys: readonly string[]): boolean {
  if (Object.getPrototypeOf(object) !== Object.prototype) return false;
  let n = 0;
  for (const _ in object) n++;
  if (n !== keys.length) return false;
  for (const key of keys) if (!isEnumerable.call(object, key)) return false;
  return Object.getOwnPropertySymbols(object).length === 0;
}

/** The canonical text of a tree of exactly the {@linkcode DirTree} shape, or null. */
function dirTreeText(tree: DirTree): string | null {
  if (!hasKeys(tree, TOP_KEYS) || tree.version !== 2) return null;
  const { entries, skipped } = tree;
  if (!Array.isArray(entries) || !Array.isArray(skipped)) return null;
  let text = '{"entries":[';
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as unknown as Record<string, unknown> | undefined;
    if (entry === null || typeof entry !== "object") return null;
    const name = jcsString(entry.name);
    if (name === null) return null;
    let item: string | null;
    if (entry.type === "file" && hasKeys(entry, FILE_KEYS)) {
      const blob = jcsString(entry.blob);
      const mode = jcsInteger(entry.mode);
      const size = jcsInteger(entry.size);
      if (blob === null || mode === null || size === null) return null;
      item = `{"blob":${blob},"mode":${mode},"name":${name},"size":${size},"type":"file"}`;
    } else if (entry.type === "symlink" && hasKeys(entry, LINK_KEYS)) {
      const target = jcsString(entry.target);
      if (target === null) return null;
      item = `{"name":${name},"target":${target},"type":"symlink"}`;
    } else if (entry.type === "tree" && hasKeys(entry, SUBTREE_KEYS)) {
      const id = jcsString(entry.tree);
      if (id === null) return null;
      item = `{"name":${name},"tree":${id},"type":"tree"}`;
    } else {
      return null;
    }
    text += i === 0 ? item : `,${item}`;
  }
  text += '],"skipped":[';
  for (let i = 0; i < skipped.length; i++) {
    const record = skipped[i] as unknown as Record<string, unknown> | undefined;
    if (record === null || typeof record !== "object" || !hasKeys(record, SKIPPED_KEYS)) {
      return null;
    }
    const name = jcsString(record.name);
    const reason = jcsString(record.reason);
    if (name === null || reason === null) return null;
    const item = `{"name":${name},"reason":${reason}}`;
    text += i === 0 ? item : `,${item}`;
  }
  return `${text}],"version":2}`;
}

/** One directory object made by {@linkcode splitManifest}. */
export interface DirObject {
  /** SHA-256 hex of `bytes`. */
  id: string;
  /** Canonical JSON of the directory tree. */
  bytes: Uint8Array;
}

/** What {@linkcode splitManifest} returns. */
export interface SplitManifest {
  /** The root tree's id. */
  rootId: string;
  /** Every directory object, each directory after those below it (the root last). */
  objects: DirObject[];
}

interface OpenDir {
  name: string;
  entries: DirEntry[];
  skipped: DirSkipped[];
  /** Set by {@linkcode DirTreeWriter.enterKnown}: what the directory held when last built. */
  known?: KnownDir;
}

/**
 * A directory whose own files, symlinks and skipped records a capture
 * already knows to be unchanged ({@linkcode DirTreeWriter.enterKnown}).
 */
export interface KnownDir {
  /** Its tree id when it was last built. */
  id: string;
  /** The subtrees it held then, `[name, tree id]` in entry order. */
  subtrees: readonly (readonly [string, string])[];
  /** How many files and symlinks, and skipped records, it holds itself (counted against the limits). */
  counts: { entries: number; skipped: number };
  /** Its own files, symlinks and skipped records, read only when it must be built again. */
  own(): { entries: DirEntry[]; skipped: DirSkipped[] };
}

/** What {@linkcode DirTreeWriter}'s `onClose` is told about each directory built or kept. */
export interface ClosedDir {
  /** The directory's path (`""` for the root). */
  path: string;
  /** Its tree id. */
  id: string;
  /** Its entries (subtrees by id) and skipped records, as built; empty when `kept`. */
  entries: readonly DirEntry[];
  /** Its skipped records, as built; empty when `kept`. */
  skipped: readonly DirSkipped[];
  /** It was a {@linkcode KnownDir} whose subtrees were all unchanged: its id was kept, nothing built. */
  kept: boolean;
}

/**
 * Splits a valid flat manifest into directory objects (tree version 2). The
 * result is canonical: the same manifest always gives the same objects.
 * Directories holding neither entries nor skipped records are not recorded.
 * A skipped record goes into its parent directory's tree, named by its last
 * segment, when every segment of that parent is a valid entry name;
 * otherwise into the root tree under its whole path.
 *
 * One pass in path order: everything below a directory is contiguous in it,
 * so each directory is built as soon as the walk leaves it, and with
 * `onObject` handed over then (its bytes can go) instead of collected; only
 * the directories on the current path are held.
 */
export function splitManifest(
  tree: TreeManifest,
  onObject?: (object: DirObject) => void,
): SplitManifest {
  const rootSkipped: DirSkipped[] = [];
  const placed: SkippedEntry[] = [];
  for (const record of tree.skipped) {
    if (placedInParent(record.path)) placed.push(record);
    else rootSkipped.push({ name: record.path, reason: record.reason });
  }
  const objects: DirObject[] = [];
  const ids = new Set<string>();
  const sink = (object: DirObject) => {
    if (ids.has(object.id)) return; // identical directories are one object, listed once
    ids.add(object.id);
    if (onObject === undefined) objects.push(object);
    else onObject(object);
  };
  const open: OpenDir[] = [{ name: "", entries: [], skipped: rootSkipped }];
  const close = (): void => {
    const dir = open.pop()!;
    const object = buildDir(dir.entries, dir.skipped);
    sink(object);
    open[open.length - 1]!.entries.push({ name: dir.name, type: "tree", tree: object.id });
  };
  /** Opens the directories of `segments` (closing those the walk has left); returns the deepest. */
  const enter = (segments: string[]): OpenDir => {
    let common = 0;
    while (
      common < segments.length && common + 1 < open.length &&
      open[common + 1]!.name === segments[common]
    ) common++;
    while (open.length > common + 1) close();
    for (let i = common; i < segments.length; i++) {
      if (open.length > MAX_TREE_DEPTH) {
        throw new IntegrityError(
          `Invalid tree manifest: directories nest deeper than ${MAX_TREE_DEPTH}`,
        );
      }
      open.push({ name: segments[i]!, entries: [], skipped: [] });
    }
    return open[open.length - 1]!;
  };
  let e = 0;
  let k = 0;
  const entries = tree.entries;
  while (e < entries.length || k < placed.length) {
    const entry = entries[e];
    const record = placed[k];
    if (entry !== undefined && (record === undefined || entry.path <= record.path)) {
      e++;
      const segments = entry.path.split("/");
      const name = segments.pop()!;
      enter(segments).entries.push(
        entry.type === "file"
          ? { name, type: "file", blob: entry.blob, size: entry.size, mode: entry.mode }
          : { name, type: "symlink", target: entry.target },
      );
    } else {
      k++;
      const segments = record!.path.split("/");
      const name = segments.pop()!;
      enter(segments).skipped.push({ name, reason: record!.reason });
    }
  }
  while (open.length > 1) close();
  const root = buildDir(open[0]!.entries, open[0]!.skipped);
  sink(root);
  return { rootId: root.id, objects };
}

/**
 * Whether a skipped record at `path` goes into its parent directory's tree
 * (named by its last segment): when that segment is not empty and every
 * segment of the parent is a valid entry name. Otherwise it goes into the
 * root tree under its whole path.
 */
function placedInParent(path: string): boolean {
  const slash = path.lastIndexOf("/");
  if (slash === path.length - 1) return false;
  return slash < 0 || path.slice(0, slash).split("/").every((s) => entryNameProblem(s) === null);
}

/** What {@linkcode DirTreeWriter.finish} returns. */
export interface DirTreeTotals {
  /** The root tree's id. */
  rootId: string;
  /** Entries (files and symlinks) written. */
  entries: number;
  /** Skipped records written (duplicates dropped). */
  skipped: number;
}

/**
 * Builds the directory trees of a workspace from its entries and skipped
 * records as a walk yields them, without a flat manifest: each directory is
 * built, checked and handed to `onObject` as soon as the walk leaves it, so
 * only the directories on the current path are held. The objects and root
 * id are exactly those {@linkcode splitManifest} gives for the validated
 * flat manifest of the same entries and records (each directory's entries
 * and records are sorted, and duplicate records dropped, when it is built).
 *
 * Every rule `validateTree` applies to a flat manifest is applied
 * on the way: the fields of each entry and record, the path rules, order
 * and uniqueness of entry paths ({@linkcode EntryPathChecker}), no entry
 * below another or inside a reserved name, and the count limits. Entries
 * must come in manifest order (a walk's order); skipped records in any
 * order within the directory being walked. Input that would reopen a
 * directory already built is refused rather than built twice.
 *
 * @example
 * ```ts
 * import { DirTreeWriter, splitManifest } from "./dir_tree.ts";
 * const blob = "0".repeat(64);
 * const writer = new DirTreeWriter(() => {});
 * writer.addEntry({ path: "src/a.ts", type: "file", blob, size: 1, mode: 0o644 });
 * writer.addSkipped({ path: ".env", reason: "secret" });
 * const { rootId } = writer.finish();
 * const split = splitManifest({
 *   version: 1,
 *   entries: [{ path: "src/a.ts", type: "file", blob, size: 1, mode: 0o644 }],
 *   skipped: [{ path: ".env", reason: "secret" }],
 * });
 * if (rootId !== split.rootId) throw new Error("Example failed");
 * ```
 */
export class DirTreeWriter {
  #open: OpenDir[] = [{ name: "", entries: [], skipped: [] }];
  /** `dir/` of each open directory below the root (parallel to `#open`, without the root). */
  #keys: string[] = [];
  /** The greatest `dir/` key of a directory already built. */
  #maxClosed = "";
  #paths = new EntryPathChecker();
  #entries = 0;
  #skipped = 0;
  #finished = false;

  /**
   * `onObject` receives each directory object as it is built, the root last;
   * `onClose`, if given, hears of every directory built or kept.
   */
  constructor(
    private readonly onObject: (object: DirObject) => void,
    private readonly onClose?: (dir: ClosedDir) => void,
  ) {}

  /**
   * Opens the directory at `path` (`""` for the root) as the walk enters it,
   * with its own files, symlinks and skipped records known: they are not
   * added, and when every subtree it ends up with is one it held before (and
   * nothing was added to it), its tree id is kept without building it again.
   * Otherwise it is built from `known.own()` and what was added. The caller
   * vouches for `known` (the capture's tree cache, checked against the disk).
   */
  enterKnown(path: string, known: KnownDir): void {
    const dir = this.#enter(path === "" ? [] : path.split("/"));
    if (dir.entries.length > 0 || dir.skipped.length > 0 || dir.known !== undefined) {
      throw new IntegrityError(`Invalid tree manifest: ${quote(path)} is entered twice`);
    }
    dir.known = known;
    // What it keeps counts against the limits as if it had been added.
    this.#countEntries(known.counts.entries);
    this.#countSkipped(known.counts.skipped);
  }

  /** Adds one untrusted file or symlink entry; throws as `validateTree` would. */
  addEntry(raw: TreeEntry): void {
    const entry = checkedEntry(raw);
    this.#paths.check(entry.path);
    checkNotReserved(entry);
    this.#countEntries(1);
    const segments = entry.path.split("/");
    const name = segments.pop()!;
    this.#enter(segments).entries.push(
      entry.type === "file"
        ? { name, type: "file", blob: entry.blob, size: entry.size, mode: entry.mode }
        : { name, type: "symlink", target: entry.target },
    );
  }

  /** Adds one untrusted skipped record; throws as `validateTree` would. */
  addSkipped(raw: SkippedEntry): void {
    const record = checkedSkipped(raw);
    if (!placedInParent(record.path)) {
      this.#open[0]!.skipped.push({ name: record.path, reason: record.reason });
      return;
    }
    const segments = record.path.split("/");
    const name = segments.pop()!;
    this.#enter(segments).skipped.push({ name, reason: record.reason });
  }

  /** Builds the directories still open and the root; returns its id and the counts. */
  finish(): DirTreeTotals {
    if (this.#finished) throw new Error("DirTreeWriter.finish() called twice");
    this.#finished = true;
    while (this.#open.length > 1) this.#close();
    const rootId = this.#build("", this.#open[0]!, true)!;
    return { rootId, entries: this.#entries, skipped: this.#skipped };
  }

  /**
   * Builds (or keeps) one directory and returns its id; null for a directory
   * left with nothing in it (not recorded). The root is always built.
   */
  #build(path: string, dir: OpenDir, root: boolean): string | null {
    const known = dir.known;
    if (known !== undefined) {
      if (dir.skipped.length === 0 && sameSubtrees(dir.entries, known.subtrees)) {
        this.onClose?.({ path, id: known.id, entries: [], skipped: [], kept: true });
        return known.id;
      }
      const own = known.own();
      // Counted as built (its skipped records below) instead of as known.
      this.#countEntries(own.entries.length - known.counts.entries);
      this.#skipped -= known.counts.skipped;
      dir.entries = [...own.entries, ...dir.entries];
      dir.skipped = [...own.skipped, ...dir.skipped];
    }
    this.#dedupeSkipped(dir.skipped);
    if (!root && dir.entries.length === 0 && dir.skipped.length === 0) return null;
    const object = buildDir(dir.entries, dir.skipped);
    this.onObject(object);
    this.onClose?.({
      path,
      id: object.id,
      entries: dir.entries,
      skipped: dir.skipped,
      kept: false,
    });
    return object.id;
  }

  #dedupeSkipped(skipped: DirSkipped[]): void {
    skipped.sort(compareDirSkipped);
    // Two undecodable names can decode to the same spelling: record it once.
    for (let i = skipped.length - 1; i > 0; i--) {
      if (compareDirSkipped(skipped[i - 1]!, skipped[i]!) === 0) skipped.splice(i, 1);
    }
    this.#countSkipped(skipped.length);
  }

  #countEntries(count: number): void {
    this.#entries += count;
    if (this.#entries > MAX_TREE_ENTRIES) {
      throw new IntegrityError(`Invalid tree manifest: more than ${MAX_TREE_ENTRIES} entries`);
    }
  }

  #countSkipped(count: number): void {
    this.#skipped += count;
    if (this.#skipped > MAX_TREE_SKIPPED) {
      throw new IntegrityError(`Invalid tree manifest: more than ${MAX_TREE_SKIPPED} skipped`);
    }
  }

  #close(): void {
    const dir = this.#open.pop()!;
    const key = this.#keys.pop()!;
    if (key > this.#maxClosed) this.#maxClosed = key;
    const id = this.#build(key.slice(0, -1), dir, false);
    if (id === null) return;
    this.#open[this.#open.length - 1]!.entries.push({ name: dir.name, type: "tree", tree: id });
  }

  /** Opens the directories of `segments` (building those the walk has left); returns the deepest. */
  #enter(segments: string[]): OpenDir {
    if (this.#finished) throw new Error("DirTreeWriter used after finish()");
    const open = this.#open;
    let common = 0;
    while (
      common < segments.length && common + 1 < open.length &&
      open[common + 1]!.name === segments[common]
    ) common++;
    while (open.length > common + 1) this.#close();
    for (let i = common; i < segments.length; i++) {
      if (open.length > MAX_TREE_DEPTH) {
        throw new IntegrityError(
          `Invalid tree manifest: directories nest deeper than ${MAX_TREE_DEPTH}`,
        );
      }
      const key = `${segments.slice(0, i + 1).join("/")}/`;
      // In a depth-first walk every directory entered comes after all those left.
      if (!(key > this.#maxClosed)) {
        throw new IntegrityError(
          `Invalid tree manifest: ${quote(key.slice(0, -1))} is entered again after it was left`,
        );
      }
      open.push({ name: segments[i]!, entries: [], skipped: [] });
      this.#keys.push(key);
    }
    return open[open.length - 1]!;
  }
}

/** Whether `entries` are exactly the subtrees `subtrees` lists, in that order. */
function sameSubtrees(
  entries: readonly DirEntry[],
  subtrees: readonly (readonly [string, string])[],
): boolean {
  if (entries.length !== subtrees.length) return false;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const [name, id] = subtrees[i]!;
    if (entry.type !== "tree" || entry.name !== name || entry.tree !== id) return false;
  }
  return true;
}

/** Whether `entries` are already in git order (each key strictly after the one before). */
function inEntryOrder(entries: readonly DirEntry[]): boolean {
  let previous = "";
  for (let i = 0; i < entries.length; i++) {
    const key = entryOrderKey(entries[i]!);
    if (i > 0 && !(previous < key)) return false;
    previous = key;
  }
  return true;
}

/**
 * Refuses a file or symlink that shares its name with a subtree of the same
 * directory (FORMAT.md §2.2: names are unique within an object). A valid
 * flat manifest can ask for one: a skipped record below a file entry
 * (`a` and `a/s`) would need a directory `a` beside the file `a`.
 */
function refuseFileBesideSubtree(entries: readonly DirEntry[]): void {
  let trees: Set<string> | null = null;
  for (const entry of entries) if (entry.type === "tree") (trees ??= new Set()).add(entry.name);
  if (trees === null) return;
  for (const entry of entries) {
    if (entry.type !== "tree" && trees.has(entry.name)) {
      throw new IntegrityError(
        `Invalid tree manifest: a skipped record lies below the entry ${quote(entry.name)}`,
      );
    }
  }
}

/** Sorts, checks the bounds of, serializes and hashes one directory. */
function buildDir(entries: DirEntry[], skipped: DirSkipped[]): DirObject {
  // A walk yields a directory's entries in order: check that in one pass
  // before sorting (the sort would leave them as they are).
  if (!inEntryOrder(entries)) {
    entries.sort((a, b) => {
      const x = entryOrderKey(a);
      const y = entryOrderKey(b);
      return x < y ? -1 : x > y ? 1 : 0;
    });
  }
  skipped.sort(compareDirSkipped);
  refuseFileBesideSubtree(entries);
  if (entries.length + skipped.length > MAX_DIR_ENTRIES) {
    throw new IntegrityError(
      `Invalid tree manifest: a directory holds more than ${MAX_DIR_ENTRIES} entries`,
    );
  }
  const bytes = dirTreeBytes({ version: 2, entries, skipped });
  if (bytes.byteLength > MAX_DIR_TREE_BYTES) {
    throw new IntegrityError(
      `Invalid tree manifest: a directory's tree is larger than ${MAX_DIR_TREE_BYTES} bytes`,
    );
  }
  return { id: sha256Hex(bytes), bytes };
}

/**
 * Serializes one directory from its entries (subtrees named by id) and
 * skipped records, in any order; returns its object. For writers that keep
 * their own model of the directories (the incremental capture).
 */
export function dirObject(entries: DirEntry[], skipped: DirSkipped[]): DirObject {
  return buildDir(entries, skipped);
}

/** Converts a skipped record of a directory at `prefix` to a flat one. */
export function flatSkipped(prefix: string, record: DirSkipped): SkippedEntry {
  return { path: prefix === "" ? record.name : `${prefix}/${record.name}`, reason: record.reason };
}

/** Converts a file or symlink entry of a directory at `prefix` to a flat entry. */
export function flatEntry(prefix: string, entry: DirFileEntry | DirSymlinkEntry): TreeEntry {
  const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
  return entry.type === "file"
    ? { path, type: "file", blob: entry.blob, size: entry.size, mode: entry.mode }
    : { path, type: "symlink", target: entry.target };
}

export { compareSkipped };
