/**
 * Walking a workspace for capture (docs/DESIGN.md §4), using `lstat` only and never
 * following a symlink: a symlink, whether to a file or a directory, is yielded
 * as a {@linkcode WalkSymlink} with its `readlink` target and never traversed.
 *
 * Skipped entries are yielded as {@linkcode WalkSkip} with a reason:
 *
 * - `excluded_dir`: a directory named in `excludeDirs` (default
 *   {@linkcode DEFAULT_EXCLUDED_DIRS}) at any depth, or the one directory
 *   `skipDirectory` names by device and inode (the store), reported once as
 *   the directory's path and not descended into;
 * - `ignored`: matched by a `.gitignore`/`.ctxsnapignore` (see
 *   {@linkcode IgnoreStack}); an ignored directory is reported once, not descended;
 * - `secret`: a file or symlink whose path {@linkcode isSecretPath} (never
 *   opened), unless its exact path is in `allowSecrets`;
 * - `special_file`: a FIFO, socket or device (never opened);
 * - `too_large`: a regular file over `maxFileBytes` (`detail` holds its size);
 * - `unreadable`: `lstat`, `readdir` or `readlink` failed (`detail` says why);
 * - `unsafe_name`: a name that cannot be a manifest path (a backslash, not
 *   valid UTF-8, a path over 4096 bytes; see {@linkcode normalizeRelativePath}).
 *   Newlines and other control characters are legal and accepted.
 *
 * - `changed_while_reading`: a directory replaced between its `lstat` and
 *   its `readdir` (its listing is discarded). For files the walk reads no
 *   contents: the capture code reads each {@linkcode WalkFile} with
 *   `readRegularNoFollow` and reports this reason itself when that fails with
 *   `FileChangedError`.
 *
 * Limits: `node:fs` has no `openat`/`fdopendir`, so a directory swapped for a
 * symlink and swapped back exactly around a `readdir` is not detected.
 *
 * Order: items come out in {@linkcode comparePaths} order of their paths, so
 * the file and symlink paths, collected, are already sorted as a manifest
 * needs (siblings are sorted with directories keyed as `name/`, which is what
 * makes `"a-b" < "a/b" < "a.b"` come out right). Empty directories yield
 * nothing. An entry that vanishes between `readdir` and `lstat` is left out.
 *
 * @example
 * ```ts
 * import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import { walkWorkspace } from "./walk.ts";
 *
 * const root = mkdtempSync(join(tmpdir(), "ctxsnap-doc-"));
 * mkdirSync(join(root, "src"));
 * writeFileSync(join(root, "src", "main.ts"), "export {};\n");
 * writeFileSync(join(root, ".env"), "TOKEN=x\n");
 * const items = [...walkWorkspace(root)].map((item) => `${item.kind}:${item.path}`);
 * if (!(items.join(" ") === "skip:.env file:src/main.ts")) throw new Error("Example failed");
 * rmSync(root, { recursive: true });
 * ```
 * @module
 */
import { readdirSync, readlinkSync, statSync } from "node:fs";
import { type FileStat, lstat } from "../../runtime.ts";
import { join, resolve } from "node:path";
import { CtxsnapError, NotFoundError, quote } from "../../errors.ts";
import { errnoOf, reasonOf } from "../../errors.ts";
import { IgnoreStack } from "./ignore.ts";
import { comparePaths, isSafeRelativePath, MAX_PATH_BYTES, normalizeRelativePath } from "./path.ts";
import { utf8Length } from "../../encoding/utf8.ts";
import {
  DEFAULT_EXCLUDED_DIRS,
  DEFAULT_MAX_FILE_BYTES,
  isReservedName,
  isSecretName,
  isSecretPath,
  secretPathRulesReach,
} from "./capture_policy.ts";
import { type StatInfo, statInfoOf } from "./safe_read.ts";

/** Why an entry was left out of a capture. */
export type SkipReason =
  | "excluded_dir"
  | "reserved"
  | "ignored"
  | "secret"
  | "secret_content"
  | "special_file"
  | "too_large"
  | "unreadable"
  | "changed_while_reading"
  | "unsafe_name";

/** A regular file to capture; its content is read later with `readRegularNoFollow`. */
export interface WalkFile {
  /** Discriminant. */
  kind: "file";
  /** Normalized relative POSIX path. */
  path: string;
  /** Absolute path to open. */
  absPath: string;
  /** The `lstat` taken during the walk, to pass as `expected` when reading. */
  stat: StatInfo;
  /** Its number of hard links (a write through another link changes it too). */
  links: number;
}

/** A symlink, recorded with its target and never followed. */
export interface WalkSymlink {
  /** Discriminant. */
  kind: "symlink";
  /** Normalized relative POSIX path. */
  path: string;
  /** The link's target exactly as `readlink` returns it. */
  target: string;
}

/** An entry left out, with the reason. */
export interface WalkSkip {
  /** Discriminant. */
  kind: "skip";
  /** Relative path of the entry (for an unsafe name, as well as it can be spelled). */
  path: string;
  /** Why it was left out. */
  reason: SkipReason;
  /** More about why, e.g. an errno code or a size. */
  detail?: string;
}

/** One item of a walk. */
export type WalkItem = WalkFile | WalkSymlink | WalkSkip;

/** Options of {@linkcode walkWorkspace}. */
export interface WalkOptions {
  /** Regular files larger than this are skipped as `too_large` (default 256 MiB). */
  maxFileBytes?: number;
  /** Directory names never descended into, at any depth (default {@linkcode DEFAULT_EXCLUDED_DIRS}). */
  excludeDirs?: ReadonlySet<string>;
  /** Honor `.gitignore` and `.ctxsnapignore` files (default true). */
  useIgnoreFiles?: boolean;
  /** Exact paths the secret rules do not apply to (the user's `allow-secrets` list). */
  allowSecrets?: ReadonlySet<string>;
  /**
   * One directory left out as `excluded_dir` wherever it is met, recognised by
   * its device and inode, not its name (the store's own directory): exactly
   * that directory, never another one of the same name.
   */
  skipDirectory?: { dev: number; ino: number } | null;
  /**
   * Walk one directory below the root instead of the whole workspace (an
   * incremental capture re-walking what changed). Paths stay relative to the
   * root.
   */
  start?: WalkStart;
  /** Called just before a directory (the root included) is listed, to watch it first. */
  onDescend?: (path: string, absPath: string) => void;
  /**
   * Called for each directory descended into (the root included) with the
   * rules in effect inside it and its `lstat` (the root's `stat`).
   */
  onDirectory?: (path: string, ignore: IgnoreStack, stats: FileStat) => void;
  /**
   * Called for each directory listed (the root included, after
   * `onDirectory`) with its entries, sorted, each with its `lstat`. When it
   * returns true the walk yields nothing of that directory's own: no file,
   * symlink or skipped record directly in it (a capture that already knows
   * them); it still descends into the subdirectories it would descend into.
   */
  onListed?: (path: string, entries: readonly ListedEntry[]) => boolean;
  /** Called when the walk leaves a directory it listed (after everything below it). */
  onLeave?: (path: string) => void;
}

/** One entry of a listed directory, as {@linkcode WalkOptions.onListed} sees it. */
export interface ListedEntry {
  /** Its name in the directory. */
  readonly name: string;
  /** Its `lstat`, or null when it is left out before classification (`skip`). */
  readonly stats: FileStat | null;
  /** Set when it is left out before classification (an unsafe name, a failed `lstat`). */
  readonly skip: WalkSkip | null;
}

/** Where a partial walk starts: see {@linkcode WalkOptions.start}. */
export interface WalkStart {
  /** The directory, relative to the root (`""` for the root itself); a previous walk descended into it. */
  dir: string;
  /** The ignore rules in effect inside it, its own ignore files included (from `onDirectory`). */
  ignore: IgnoreStack;
  /** Only these entries of `dir` (names); every directory below them is walked whole. */
  names?: ReadonlySet<string>;
}

interface Entry {
  name: string;
  path: string;
  absPath: string;
  /** Sort key among siblings: the name, plus `/` for a directory. */
  key: string;
  stats: FileStat | null;
  /** Set when the entry is skipped before classification. */
  skip: WalkSkip | null;
}

interface Frame {
  /** The directory's path (`""` for the root). */
  path: string;
  /** Its own entries are known to the caller ({@linkcode WalkOptions.onListed}): yield none. */
  quiet: boolean;
  ignore: IgnoreStack;
  entries: Entry[];
  index: number;
  /** Whether a secret path rule beyond the name can apply to its children ({@linkcode secretPathRulesReach}). */
  secretPaths: boolean;
}

let walks = 0;

/**
 * How many walks of a workspace this process has started: the seam that
 * pins how often each command walks (`tests/workspace/move_engine_test.ts`).
 */
export function walksStarted(): number {
  return walks;
}

/**
 * Walks the workspace at `root`, yielding files and symlinks to capture and
 * the entries it skips, in {@linkcode comparePaths} order.
 *
 * @example
 * ```ts
 * import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import { walkWorkspace } from "./walk.ts";
 *
 * const root = mkdtempSync(join(tmpdir(), "ctxsnap-doc-"));
 * writeFileSync(join(root, "big.bin"), new Uint8Array(11));
 * symlinkSync("/etc", join(root, "etc"));
 * const items = [...walkWorkspace(root, { maxFileBytes: 10 })];
 * if (!(items[0]?.kind === "skip" && items[0].reason === "too_large")) throw new Error("Example failed");
 * if (!(items[1]?.kind === "symlink" && items[1].target === "/etc")) throw new Error("Example failed");
 * rmSync(root, { recursive: true });
 * ```
 *
 * @param root The workspace directory (a symlink given here is followed once).
 * @param options Size limit, excluded directory names, ignore files.
 * @throws {NotFoundError} If `root` does not exist.
 * @throws {CtxsnapError} If `root` is not a readable directory.
 */
export function* walkWorkspace(root: string, options: WalkOptions = {}): Generator<WalkItem> {
  walks += 1;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const excludeDirs = options.excludeDirs ?? DEFAULT_EXCLUDED_DIRS;
  const useIgnoreFiles = options.useIgnoreFiles ?? true;
  const allowSecrets = options.allowSecrets ?? new Set<string>();
  const skipDirectory = options.skipDirectory ?? null;
  const rootAbs = resolve(root);
  const rootIgnore = IgnoreStack.root();

  const stack: Frame[] = [];
  if (options.start !== undefined) {
    // A partial walk: the start directory was descended into before, its
    // rules are known; listing it can fail if it vanished meanwhile.
    const { dir, ignore, names } = options.start;
    const absDir = dir === "" ? rootAbs : join(rootAbs, dir);
    try {
      stack.push({
        path: dir,
        quiet: false,
        ignore,
        entries: listDirectory(dir, absDir, names),
        index: 0,
        secretPaths: secretPathRulesReach(dir),
      });
    } catch (error) {
      throw new CtxsnapError(`Cannot read ${quote(absDir)}: ${reasonOf(error)}`, "failure", {
        cause: error,
      });
    }
  } else {
    let rootEntries: Entry[];
    let rootStat: FileStat;
    try {
      rootStat = statSync(rootAbs);
      if (!rootStat.isDirectory()) {
        throw new CtxsnapError(`Workspace ${quote(root)} is not a directory`);
      }
      options.onDescend?.("", rootAbs);
      rootEntries = listDirectory("", rootAbs);
    } catch (error) {
      if (error instanceof CtxsnapError) throw error;
      if (errnoOf(error) === "ENOENT") {
        throw new NotFoundError(`Workspace ${quote(root)} does not exist`, { cause: error });
      }
      throw new CtxsnapError(
        `Cannot read workspace ${quote(root)}: ${reasonOf(error)}`,
        "failure",
        { cause: error },
      );
    }
    const ignore = useIgnoreFiles
      ? rootIgnore.child("", rootAbs, namesOf(rootEntries))
      : rootIgnore;
    options.onDirectory?.("", ignore, rootStat);
    const quiet = options.onListed?.("", rootEntries) ?? false;
    stack.push({ path: "", quiet, ignore, entries: rootEntries, index: 0, secretPaths: false });
  }

  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    const entry = frame.entries[frame.index++];
    if (entry === undefined) {
      stack.pop();
      options.onLeave?.(frame.path);
      continue;
    }
    if (entry.skip !== null) {
      if (!frame.quiet) yield entry.skip;
      continue;
    }
    const stats = entry.stats!;
    const { path } = entry;

    if (isReservedName(entry.name)) {
      if (!frame.quiet) yield { kind: "skip", path, reason: "reserved" };
      continue;
    }
    if (stats.isDirectory()) {
      if (
        excludeDirs.has(entry.name) ||
        (skipDirectory !== null && stats.ino === skipDirectory.ino &&
          stats.dev === skipDirectory.dev)
      ) {
        if (!frame.quiet) yield { kind: "skip", path, reason: "excluded_dir" };
      } else if (useIgnoreFiles && frame.ignore.ignores(path, true)) {
        if (!frame.quiet) yield { kind: "skip", path, reason: "ignored" };
      } else {
        let entries: Entry[];
        try {
          options.onDescend?.(path, entry.absPath);
          entries = listDirectory(path, entry.absPath);
        } catch (error) {
          yield { kind: "skip", path, reason: "unreadable", detail: reasonOf(error) };
          continue;
        }
        if (!sameDirectory(stats, entry.absPath)) {
          // Replaced (say, by a symlink) between lstat and readdir: what was
          // listed may lie outside the workspace, so none of it is used.
          yield {
            kind: "skip",
            path,
            reason: "changed_while_reading",
            detail: "directory was replaced during the walk",
          };
          continue;
        }
        let ignore = frame.ignore;
        if (useIgnoreFiles) {
          try {
            ignore = frame.ignore.child(path, entry.absPath, namesOf(entries));
          } catch (error) {
            // Its ignore rules cannot be applied: leave the whole directory out.
            yield { kind: "skip", path, reason: "unreadable", detail: reasonOf(error) };
            continue;
          }
        }
        options.onDirectory?.(path, ignore, stats);
        const quiet = options.onListed?.(path, entries) ?? false;
        stack.push({
          path,
          quiet,
          ignore,
          entries,
          index: 0,
          secretPaths: secretPathRulesReach(path),
        });
      }
      continue;
    }
    if (frame.quiet) continue;

    if (useIgnoreFiles && frame.ignore.ignores(path, false)) {
      yield { kind: "skip", path, reason: "ignored" };
    } else if (
      (frame.secretPaths ? isSecretPath(path) : isSecretName(entry.name)) &&
      !allowSecrets.has(path)
    ) {
      yield { kind: "skip", path, reason: "secret" };
    } else if (stats.isSymbolicLink()) {
      yield readSymlink(entry);
    } else if (stats.isFile()) {
      if (stats.size > maxFileBytes) {
        yield { kind: "skip", path, reason: "too_large", detail: `${stats.size} bytes` };
      } else {
        yield {
          kind: "file",
          path,
          absPath: entry.absPath,
          stat: statInfoOf(stats),
          links: stats.nlink,
        };
      }
    } else {
      yield { kind: "skip", path, reason: "special_file", detail: specialKind(stats) };
    }
  }
}

/** The names in a listing, so ignore files known to be absent are not opened. */
function namesOf(entries: Entry[]): ReadonlySet<string> {
  const names = new Set<string>();
  for (const entry of entries) names.add(entry.name);
  return names;
}

/**
 * Lists and `lstat`s a directory's entries (only those named in `only`, if
 * given), sorted so their paths come out in order.
 */
function listDirectory(dirPath: string, absDir: string, only?: ReadonlySet<string>): Entry[] {
  // Sorted by name first (the engine's own string sort, no comparator): the
  // entries then need reordering only where a directory's key, `name/`,
  // sorts apart from its name (checked below).
  const names = readdirSync(absDir).sort();
  // A joined path is safe when the directory's is and the name is one safe
  // segment within the length limit: the directory is checked once here,
  // each name on its own (not the whole path again per entry).
  const dirSafe = dirPath === "" || isSafeRelativePath(dirPath);
  const entries: Entry[] = [];
  // Only names decoded lossily (U+FFFD) can repeat; sorted, a repeat follows its twin.
  let previous: string | undefined;
  for (const name of names) {
    const duplicate = name === previous;
    previous = name;
    if (only !== undefined && !only.has(name)) continue;
    const path = dirPath === "" ? name : `${dirPath}/${name}`;
    // absDir is absolute and normalized, and a listed name holds no "/" and is
    // never "." or "..": joining is concatenating (no normalization per entry).
    const absPath = absDir === "/" ? `/${name}` : `${absDir}/${name}`;
    const entry: Entry = { name, path, absPath, key: name, stats: null, skip: null };
    entries.push(entry);
    if (duplicate) {
      // Two undecodable names can decode to the same string.
      entry.skip = { kind: "skip", path, reason: "unsafe_name", detail: "duplicate name" };
      continue;
    }
    if (
      !(dirSafe && isSafeRelativePath(name) &&
        (path.length * 3 <= MAX_PATH_BYTES || utf8Length(path) <= MAX_PATH_BYTES))
    ) {
      entry.skip = { kind: "skip", path, reason: "unsafe_name", detail: problemOf(path) };
      continue;
    }
    try {
      entry.stats = lstat(absPath);
    } catch (error) {
      if (errnoOf(error) === "ENOENT") {
        if (name.includes("\uFFFD")) {
          // The name was decoded lossily, so the decoded spelling names nothing.
          entry.skip = {
            kind: "skip",
            path,
            reason: "unsafe_name",
            detail: "name is not valid UTF-8",
          };
        } else {
          entries.pop(); // vanished since readdir: no longer part of the workspace
        }
        continue;
      }
      entry.skip = { kind: "skip", path, reason: "unreadable", detail: reasonOf(error) };
      continue;
    }
    if (entry.stats.isDirectory()) entry.key = name + "/";
  }
  for (let i = 1; i < entries.length; i++) {
    if (comparePaths(entries[i - 1]!.key, entries[i]!.key) >= 0) {
      entries.sort((a, b) => comparePaths(a.key, b.key));
      break;
    }
  }
  return entries;
}

/** Whether `absDir` is still the directory `before` described (same device and inode). */
function sameDirectory(before: FileStat, absDir: string): boolean {
  try {
    const now = lstat(absDir);
    return now.isDirectory() && now.ino === before.ino && now.dev === before.dev;
  } catch {
    return false;
  }
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function readSymlink(entry: Entry): WalkSymlink | WalkSkip {
  try {
    // As bytes, decoded strictly: Node and Bun would otherwise decode an
    // invalid target lossily (U+FFFD) and a restore would recreate another one.
    const raw: unknown = readlinkSync(entry.absPath, { encoding: "buffer" });
    const target = typeof raw === "string" ? raw : STRICT_UTF8.decode(raw as Uint8Array);
    return { kind: "symlink", path: entry.path, target };
  } catch (error) {
    const message = error instanceof Error ? error.message : "";
    // Deno's readlink refuses such a target itself; TextDecoder throws a TypeError.
    if (message.includes("not valid UTF-8") || error instanceof TypeError) {
      return {
        kind: "skip",
        path: entry.path,
        reason: "unsafe_name",
        detail: "symlink target is not valid UTF-8",
      };
    }
    return { kind: "skip", path: entry.path, reason: "unreadable", detail: reasonOf(error) };
  }
}

function problemOf(path: string): string {
  try {
    normalizeRelativePath(path);
    return "invalid path";
  } catch (error) {
    return (error as Error).message;
  }
}

function specialKind(stats: FileStat): string {
  if (stats.isFIFO()) return "fifo";
  if (stats.isSocket()) return "socket";
  if (stats.isCharacterDevice()) return "character device";
  if (stats.isBlockDevice()) return "block device";
  return "unknown file type";
}
