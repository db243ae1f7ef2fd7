/**
 * The git anchor: HEAD commit, branch and dirty flag, read without touching
 * the user's index (`GIT_OPTIONAL_LOCKS=0`, read-only plumbing only).
 *
 * git runs as data, never as code the repository chose: the workspace (and
 * its `.git/config`, `.gitattributes`, hooks) is untrusted. ctxsnap runs
 * only `config --get-regexp`, `status`, `ls-files` and `switch`, and every
 * run overrides, on the command line (which wins over every config file),
 * what those commands can start or change: `core.fsmonitor` (status), hooks
 * (`core.hooksPath=/dev/null`: `post-checkout`, `reference-transaction`),
 * submodule recursion (`submodule.recurse=false`: `switch` would check out
 * every submodule), and the `clean`, `smudge` and `process` commands of
 * every filter driver the repository configures (listed first with
 * `git config --get-regexp`). Every transport is refused by an empty
 * `GIT_ALLOW_PROTOCOL`, which also overrides any `protocol.<name>.allow` the
 * repository sets (so a lazy fetch of a partial clone cannot run `ext::` or
 * ssh), and `GIT_NO_LAZY_FETCH=1` stops that fetch first where git knows it.
 * Settings those four commands never reach are not overridden: the pager
 * (git starts one only when its output is a terminal; ctxsnap reads a
 * pipe), `diff.external` (only `git diff` and `log -p` run it), credential
 * helpers and `core.askPass` (only a transport asks for credentials), and
 * automatic gc and maintenance (only commands that write objects start
 * them). docs/SECURITY.md ("Hostile workspaces") says the same; the test
 * that records every git run's arguments fails when a new command appears.
 * The work tree is pinned to the directory
 * holding `.git` (`GIT_WORK_TREE`, so `core.worktree` cannot point git at
 * another directory) and discovery stops there (`GIT_CEILING_DIRECTORIES`).
 * git's own `safe.directory` ownership rule is left in force: a repository
 * owned by another user is refused by git, and then there is no anchor. A git
 * run that does not finish within `CTXSNAP_GIT_TIMEOUT_MS` (default 120 s) is
 * killed and counts as failed, so a configuration that makes git block (an
 * `include.path` naming a FIFO) cannot hang ctxsnap.
 *
 * @example
 * ```ts
 * import { gitAnchor, isBranchName } from "./git.ts";
 * const dir = await Deno.makeTempDir();
 * if (gitAnchor(dir) !== null) throw new Error("not a git work tree");
 * if (isBranchName("a.txt -- x") || !isBranchName("feature/x")) throw new Error("refname rules");
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { environment, getEnv } from "../../runtime.ts";
import type { GitAnchor } from "../../format/body.ts";

/** Result of one git invocation. */
export interface GitRun {
  /** Exit status (null if git could not be started, or was not run). */
  status: number | null;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/** `-c` overrides of every setting with which a repository could make ctxsnap's git runs start a program. */
const SAFE_CONFIG: readonly string[] = [
  "core.fsmonitor=false",
  "core.hooksPath=/dev/null",
  "submodule.recurse=false",
];

/** Environment variables that would point git at another repository or at a program. */
const DROPPED_ENV: ReadonlySet<string> = new Set([
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_COMMON_DIR",
  "GIT_NAMESPACE",
  "GIT_CEILING_DIRECTORIES",
  "GIT_EXTERNAL_DIFF",
  "GIT_PAGER",
  "GIT_ASKPASS",
  "SSH_ASKPASS",
  "GIT_SSH",
  "GIT_SSH_COMMAND",
  "GIT_EDITOR",
  "GIT_ALLOW_PROTOCOL",
  "GIT_CONFIG_PARAMETERS",
  "GIT_CONFIG_COUNT",
]);

/** Environment variables holding the values `--config-env` overrides use. */
const EMPTY_VALUE = "CTXSNAP_GIT_EMPTY";
const FALSE_VALUE = "CTXSNAP_GIT_FALSE";

function gitEnvironment(top: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(environment())) {
    if (value !== undefined && !DROPPED_ENV.has(name)) env[name] = value;
  }
  env.GIT_OPTIONAL_LOCKS = "0";
  env.LC_ALL = "C";
  env.GIT_TERMINAL_PROMPT = "0";
  env.GIT_NO_LAZY_FETCH = "1";
  // An allow list in the environment overrides every protocol.<name>.allow a
  // repository's config sets (which would win over protocol.allow=never).
  env.GIT_ALLOW_PROTOCOL = "";
  env.GIT_WORK_TREE = top;
  const parent = path.dirname(top);
  if (parent !== top) env.GIT_CEILING_DIRECTORIES = parent;
  env[EMPTY_VALUE] = "";
  env[FALSE_VALUE] = "false";
  return env;
}

/** Default longest wait for one git run (`CTXSNAP_GIT_TIMEOUT_MS` overrides). */
const DEFAULT_GIT_TIMEOUT_MS = 120_000;

/**
 * How long one git run may take before it is killed: a repository can make
 * git block forever (an `include.path` naming a FIFO, say).
 */
function gitTimeoutMs(): number {
  const value = Number(getEnv("CTXSNAP_GIT_TIMEOUT_MS") ?? NaN);
  return Number.isSafeInteger(value) && value > 0 ? value : DEFAULT_GIT_TIMEOUT_MS;
}

/**
 * The variables of {@linkcode DROPPED_ENV} this process has: some runtimes
 * (Deno's `node:child_process`) merge the parent's environment into the
 * `env` given, so leaving a variable out does not remove it. Those ctxsnap
 * does not set itself are removed with `env -u NAME` instead (names only, never values, on the
 * command line); without an `env` program git does not run (no anchor).
 */
function inheritedDropped(env: Record<string, string>): string[] {
  return Object.keys(environment()).filter((name) => DROPPED_ENV.has(name) && !(name in env))
    .sort();
}

function spawnGit(cwd: string, args: string[], env: Record<string, string>): GitRun {
  const unset = inheritedDropped(env);
  const [command, argv] = unset.length === 0
    ? ["git", args]
    : ["env", [...unset.flatMap((name) => ["-u", name]), "git", ...args]];
  try {
    const result = spawnSync(command, argv, {
      cwd,
      env,
      encoding: "utf8",
      maxBuffer: 256 * 1024 * 1024,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: gitTimeoutMs(),
      killSignal: "SIGKILL",
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

const SAFE_ARGS: readonly string[] = SAFE_CONFIG.flatMap((setting) => ["-c", setting]);

/**
 * `--config-env` overrides emptying the commands of every filter driver the
 * repository configures, or null when they cannot be listed. (`--config-env`
 * splits at the last `=`, so a driver name holding `=` is still matched.)
 */
function filterOverrides(cwd: string, env: Record<string, string>): string[] | null {
  const run = spawnGit(
    cwd,
    [...SAFE_ARGS, "config", "-z", "--name-only", "--get-regexp", "^filter\\."],
    env,
  );
  if (run.status === 1 && run.stdout === "") return []; // no filter driver configured
  if (run.status !== 0) return null;
  const drivers = new Set<string>();
  for (const key of run.stdout.split("\0")) {
    const last = key.lastIndexOf(".");
    if (!key.startsWith("filter.") || last <= "filter.".length) continue;
    drivers.add(key.slice("filter.".length, last));
  }
  const out: string[] = [];
  for (const driver of drivers) {
    if (driver.includes("\n")) return null; // not a name git writes: refuse to guess
    for (const command of ["clean", "smudge", "process"]) {
      out.push(`--config-env=filter.${driver}.${command}=${EMPTY_VALUE}`);
    }
    out.push(`--config-env=filter.${driver}.required=${FALSE_VALUE}`);
  }
  return out;
}

/**
 * Runs `git` in `cwd`, inside the work tree whose top directory holds `.git`
 * (see {@linkcode gitTopLevel}), with every program the repository could
 * configure disabled (see the module documentation); never throws. Outside a
 * work tree, or when the repository's filter drivers cannot be listed, git is
 * not run and `status` is null.
 */
export function runGit(cwd: string, args: string[]): GitRun {
  const top = gitTopLevel(cwd);
  if (top === null) return { status: null, stdout: "", stderr: "not inside a git work tree" };
  const env = gitEnvironment(top);
  const filters = filterOverrides(cwd, env);
  if (filters === null) {
    return { status: null, stdout: "", stderr: "cannot list the repository's filter drivers" };
  }
  return spawnGit(cwd, [...SAFE_ARGS, ...filters, ...args], env);
}

/**
 * Checks out `ref` in the work tree containing `cwd` with `git switch`, which
 * never takes a path (so a stored ref cannot discard an edit the way
 * `git checkout <path>` would): a full object id detached, or a branch name
 * (no remote-tracking guess); the ref follows `--end-of-options`. Anything
 * else is not run (`status` null). Never throws.
 */
export function gitSwitch(cwd: string, ref: string): GitRun {
  if (isObjectId(ref)) {
    return runGit(cwd, ["switch", "--quiet", "--detach", "--end-of-options", ref]);
  }
  if (isBranchName(ref)) {
    return runGit(cwd, ["switch", "--quiet", "--no-guess", "--end-of-options", ref]);
  }
  return { status: null, stdout: "", stderr: `${JSON.stringify(ref)} is not a branch or commit` };
}

/** What {@linkcode switchFrom} did. */
export interface HeadMove {
  /** Whether HEAD now is `to`. */
  moved: boolean;
  /** Why not: `head_moved` (HEAD was not at `from`), `refused` (git refused the switch: `detail`), `gone` (`to` is no branch or commit); null when moved. */
  reason: "head_moved" | "refused" | "gone" | null;
  /** git's message when it refused, or null. */
  detail: string | null;
}

/** The branch HEAD is on, or the commit it is detached at, or null. */
export function headNow(cwd: string): string | null {
  const symbolic = runGit(cwd, ["symbolic-ref", "--quiet", "HEAD"]);
  if (symbolic.status === 0) {
    const ref = symbolic.stdout.trim();
    return ref.startsWith("refs/heads/") ? ref.slice(11) : null;
  }
  const commit = runGit(cwd, ["rev-parse", "--verify", "--quiet", "HEAD"]);
  return commit.status === 0 ? commit.stdout.trim() : null;
}

/**
 * Switches HEAD to `to` (a branch name, or a full commit id, detached) with
 * {@linkcode gitSwitch}, only while HEAD is exactly `from` (the branch
 * checked out, or that commit detached): git itself refuses to overwrite a
 * local change. Undo and redo of a `restore --git` use it. Never throws.
 */
export function switchFrom(cwd: string, from: string, to: string): HeadMove {
  if (!isObjectId(to) && !isBranchName(to)) return { moved: false, reason: "gone", detail: null };
  if (headNow(cwd) !== from) return { moved: false, reason: "head_moved", detail: null };
  const run = gitSwitch(cwd, to);
  if (run.status === 0) return { moved: true, reason: null, detail: null };
  return { moved: false, reason: "refused", detail: run.stderr.trim().slice(0, 2000) };
}

/** Whether `value` is a full hex object id (SHA-1 or SHA-256). */
export function isObjectId(value: string): boolean {
  return /^([0-9a-f]{40}|[0-9a-f]{64})$/.test(value);
}

/**
 * Whether `name` is a branch name git accepts (the rules of
 * `git check-ref-format --branch`): no component starting with `.` or ending
 * in `.lock`, no `..`, `@{`, control characters, space or any of `~^:?*[\`,
 * no leading `-` or `/`, no trailing `/` or `.`, no `//`, not `@`, at most
 * 255 characters.
 */
export function isBranchName(name: string): boolean {
  if (name.length === 0 || name.length > 255 || name === "@") return false;
  if (name.startsWith("-") || name.startsWith("/") || name.endsWith("/")) return false;
  if (name.endsWith(".") || name.includes("..") || name.includes("@{") || name.includes("//")) {
    return false;
  }
  for (const char of name) if (char <= " " || char === "\x7f") return false;
  if (/[~^:?*[\\]/.test(name)) return false;
  return name.split("/").every((part) => !part.startsWith(".") && !part.endsWith(".lock"));
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
  /** The untracked paths among `changes` (git-ignored ones are never listed). */
  untracked: string[];
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
  const status: GitStatus = { commit: null, branch: null, changes: [], untracked: [] };
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
      if (!inStore(file)) {
        status.changes.push(file);
        status.untracked.push(file);
      }
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
