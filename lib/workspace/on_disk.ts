/**
 * What one workspace path holds right now, looked at directly (never through
 * the capture's ignore and secret rules, never following a symlink), and
 * whether that matches a tree entry. `recover` uses it to tell a path a
 * restore already wrote (or had not reached yet) from one someone else
 * changed: an ignored or secret file listed in a plan is seen as it is, not
 * as absent.
 *
 * @example
 * ```ts
 * import { inspectPath, matchesEntry } from "./on_disk.ts";
 * const root = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${root}/a.txt`, "hi\n");
 * const state = inspectPath(root, "a.txt", []);
 * if (state.kind !== "file") throw new Error("a regular file");
 * if (matchesEntry(inspectPath(root, "missing", []), undefined, false) !== true) {
 *   throw new Error("an absent path matches no entry");
 * }
 * await Deno.remove(root, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { errnoOf } from "../errors.ts";
import { modeMatches } from "./io/mode.ts";
import { readRegularNoFollow, statInfoOf } from "./io/safe_read.ts";
import type { TreeEntry } from "../format/tree.ts";

/** The state of one path. */
export type DiskState =
  | { kind: "absent" }
  | { kind: "blocked" } // a parent is a symlink, a file or something else: the path cannot exist
  | { kind: "dir"; empty: boolean }
  | { kind: "symlink"; target: string }
  | { kind: "file"; size: number; mode: number; blob: string | null }
  | { kind: "special" };

/**
 * Looks at `root/rel` without following symlinks. A regular file is hashed
 * only when its size is one of `sizes` (the sizes it could match).
 */
export function inspectPath(root: string, rel: string, sizes: readonly number[]): DiskState {
  const parts = rel.split("/");
  let abs = root;
  for (const part of parts.slice(0, -1)) {
    abs = path.join(abs, part);
    try {
      const stat = fs.lstatSync(abs);
      if (stat.isSymbolicLink() || !stat.isDirectory()) return { kind: "blocked" };
    } catch (error) {
      if (errnoOf(error) === "ENOENT") return { kind: "absent" };
      throw error;
    }
  }
  abs = path.join(abs, parts[parts.length - 1]!);
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(abs);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return { kind: "absent" };
    throw error;
  }
  if (stat.isSymbolicLink()) {
    try {
      return { kind: "symlink", target: fs.readlinkSync(abs) };
    } catch {
      return { kind: "special" };
    }
  }
  if (stat.isDirectory()) return { kind: "dir", empty: fs.readdirSync(abs).length === 0 };
  if (!stat.isFile()) return { kind: "special" };
  let blob: string | null = null;
  if (sizes.includes(stat.size)) {
    try {
      blob = readRegularNoFollow(abs, statInfoOf(stat), {
        maxBytes: stat.size,
        keepBytesUpTo: 0,
      }).sha256;
    } catch {
      blob = null; // changing while read: matches nothing
    }
  }
  return { kind: "file", size: stat.size, mode: stat.mode & 0o7777, blob };
}

/**
 * Whether `state` is what a tree holding `entry` at this path leaves there.
 * With no entry, the path must be absent, or be a directory the tree implies
 * (`impliedDir`: the tree has entries below the path).
 */
export function matchesEntry(
  state: DiskState,
  entry: TreeEntry | undefined,
  impliedDir: boolean,
): boolean {
  if (entry === undefined) {
    return state.kind === "absent" || state.kind === "blocked" ||
      (state.kind === "dir" && impliedDir);
  }
  if (entry.type === "symlink") return state.kind === "symlink" && state.target === entry.target;
  return state.kind === "file" && state.size === entry.size && state.blob === entry.blob &&
    modeMatches(state.mode, entry.mode);
}

/** The set of directories `entries` imply (every proper prefix of their paths). */
export function impliedDirectories(entries: Iterable<string>): Set<string> {
  const dirs = new Set<string>();
  for (const rel of entries) {
    for (let i = rel.indexOf("/"); i !== -1; i = rel.indexOf("/", i + 1)) dirs.add(rel.slice(0, i));
  }
  return dirs;
}
