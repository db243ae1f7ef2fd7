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
import * as path from "node:path";
import process from "node:process";
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
      env: { ...process.env, GIT_OPTIONAL_LOCKS: "0", LC_ALL: "C" },
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

/** The top directory of the git work tree containing `dir`, or null. */
export function gitTopLevel(dir: string): string | null {
  const top = runGit(dir, ["rev-parse", "--show-toplevel"]);
  return top.status === 0 ? top.stdout.trim() : null;
}

/**
 * Lists what `git status --porcelain` reports for `dir`, ignoring paths
 * inside `excludeAbs` (the store, when it lives in the work tree).
 * Untracked files count. Returns null outside a work tree.
 */
export function gitStatus(dir: string, excludeAbs: string | null = null): string[] | null {
  const top = gitTopLevel(dir);
  if (top === null) return null;
  const status = runGit(dir, ["status", "--porcelain=v1", "-z", "--untracked-files=all"]);
  if (status.status !== 0) return null;
  const records = status.stdout.split("\0").filter((record) => record.length > 3);
  const excluded = excludeAbs === null ? null : path.relative(top, excludeAbs);
  return records.filter((record) => {
    const file = record.slice(3);
    if (excluded === null || excluded.startsWith("..") || path.isAbsolute(excluded)) return true;
    return file !== excluded && !file.startsWith(excluded + "/");
  });
}

/** Reads the git anchor of `dir`, or null when it is not inside a git work tree. */
export function gitAnchor(dir: string, excludeAbs: string | null = null): GitAnchor | null {
  const inside = runGit(dir, ["rev-parse", "--is-inside-work-tree"]);
  if (inside.status !== 0 || inside.stdout.trim() !== "true") return null;
  const head = runGit(dir, ["rev-parse", "--verify", "-q", "HEAD"]);
  const commit = head.status === 0 ? head.stdout.trim() : null;
  const branch = runGit(dir, ["symbolic-ref", "--short", "-q", "HEAD"]);
  const changes = gitStatus(dir, excludeAbs) ?? [];
  return {
    commit: commit !== null && /^([0-9a-f]{40}|[0-9a-f]{64})$/.test(commit) ? commit : null,
    branch: branch.status === 0 && branch.stdout.trim() !== "" ? branch.stdout.trim() : null,
    dirty: changes.length > 0,
  };
}
