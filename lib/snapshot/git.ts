/**
 * The git anchor: HEAD commit, branch and dirty flag, read without touching
 * the user's index (`GIT_OPTIONAL_LOCKS=0`, read-only plumbing only).
 *
 * @example
 * ```ts
 * import { gitAnchor } from "./git.ts";
 * const dir = await Deno.makeTempDir();
 * console.assert(gitAnchor(dir) === null); // not a git work tree
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { environment } from "../runtime.ts";
import type { GitAnchor } from "./body.ts";

/** Result of one git invocation. */
export interface GitRun {
  /** Exit status (null if git could not be started). */
  status: number | null;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/** Runs `git` in `cwd` with optional locks disabled; never throws. */
export function runGit(cwd: string, args: string[]): GitRun {
  try {
    const result = spawnSync("git", args, {
      cwd,
      env: { ...environment(), GIT_OPTIONAL_LOCKS: "0", LC_ALL: "C" },
      encoding: "utf8",
      maxBuffer: 256 * 1024 * 1024,
    });
    return {
      status: result.status,
      stdout: String(result.stdout ?? ""),
      stderr: String(result.stderr ?? ""),
    };
  } catch (error) {
    return { status: null, stdout: "", stderr: String(error) };
  }
}

/**
 * The top directory of the git work tree containing `dir`, or null: the
 * nearest ancestor holding a `.git` entry (a directory, or a file for linked
 * worktrees and submodules). Found without running git.
 */
export function gitTopLevel(dir: string): string | null {
  let current = path.resolve(dir);
  for (;;) {
    if (fs.existsSync(path.join(current, ".git"))) return current;
    const parent = path.dirname(current);
    if (parent === current) return null;
    current = parent;
  }
}

/** What one `git status --porcelain=v2 --branch` run says. */
export interface GitStatus {
  /** HEAD commit, or null before the first commit. */
  commit: string | null;
  /** Checked-out branch, or null when detached. */
  branch: string | null;
  /** Changed, staged, unmerged and untracked paths (relative to the top level). */
  changes: string[];
}

/**
 * Runs one `git status --porcelain=v2 --branch -z --untracked-files=all` in
 * `dir` and parses it; paths inside `excludeAbs` (the store) are left out.
 * Returns null outside a work tree or if git fails.
 */
export function readGitStatus(dir: string, excludeAbs: string | null = null): GitStatus | null {
  const top = gitTopLevel(dir);
  if (top === null) return null;
  const run = runGit(dir, ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"]);
  if (run.status !== 0) return null;
  const excluded = excludeAbs === null ? null : path.relative(top, excludeAbs);
  const inStore = (file: string) =>
    excluded !== null && excluded !== "" && !excluded.startsWith("..") &&
    !path.isAbsolute(excluded) &&
    (file === excluded || file.startsWith(excluded + "/"));
  const status: GitStatus = { commit: null, branch: null, changes: [] };
  const records = run.stdout.split("\0");
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    if (record.startsWith("# branch.oid ")) {
      const oid = record.slice(13);
      status.commit = /^([0-9a-f]{40}|[0-9a-f]{64})$/.test(oid) ? oid : null;
    } else if (record.startsWith("# branch.head ")) {
      const head = record.slice(14);
      status.branch = head === "(detached)" ? null : head;
    } else if (record.startsWith("1 ") || record.startsWith("u ")) {
      const fields = record.split(" ");
      const file = fields.slice(record.startsWith("1 ") ? 8 : 10).join(" ");
      if (!inStore(file)) status.changes.push(file);
    } else if (record.startsWith("2 ")) {
      const file = record.split(" ").slice(9).join(" ");
      i++; // the original path follows as its own record
      if (!inStore(file)) status.changes.push(file);
    } else if (record.startsWith("? ")) {
      const file = record.slice(2);
      if (!inStore(file)) status.changes.push(file);
    }
  }
  return status;
}

/**
 * Lists what `git status` reports for `dir` (untracked files count), ignoring
 * paths inside `excludeAbs`. Returns null outside a work tree.
 */
export function gitStatus(dir: string, excludeAbs: string | null = null): string[] | null {
  return readGitStatus(dir, excludeAbs)?.changes ?? null;
}

/** Reads the git anchor of `dir` (one git process), or null outside a git work tree. */
export function gitAnchor(dir: string, excludeAbs: string | null = null): GitAnchor | null {
  const status = readGitStatus(dir, excludeAbs);
  if (status === null) return null;
  return { commit: status.commit, branch: status.branch, dirty: status.changes.length > 0 };
}

/** The paths git tracks in the work tree containing `dir` (relative to `dir`), or an empty set. */
export function gitTrackedFiles(dir: string): Set<string> {
  const run = runGit(dir, ["ls-files", "-z", "--full-name", "--", "."]);
  if (run.status !== 0) return new Set();
  const top = gitTopLevel(dir);
  const prefix = top === null ? "" : path.relative(top, path.resolve(dir));
  const out = new Set<string>();
  for (const file of run.stdout.split("\0")) {
    if (file === "") continue;
    out.add(
      prefix === "" ? file : file.startsWith(prefix + "/") ? file.slice(prefix.length + 1) : file,
    );
  }
  return out;
}
