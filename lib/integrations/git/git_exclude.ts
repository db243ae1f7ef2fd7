/**
 * Keeping a store out of git: `init` adds the store directory to the
 * repository's `info/exclude` (never to a tracked `.gitignore`), so
 * `git add -A` does not commit it.
 *
 * The file is found with `git rev-parse --git-path info/exclude` (which
 * handles linked worktrees and submodules); the line is the store's path
 * relative to the work tree's top, anchored with a leading `/` and ending in
 * `/`. It is appended once: a file that already has the line (or one that is
 * a symlink, or whose `info/` directory is a symlink) is left alone.
 *
 * @example
 * ```ts
 * import { excludeLine } from "./git_exclude.ts";
 * if (excludeLine("/repo", "/repo/sub/.ctxsnap") !== "/sub/.ctxsnap/") throw new Error("anchored");
 * if (excludeLine("/repo", "/elsewhere/.ctxsnap") !== null) throw new Error("outside the work tree");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { gitTopLevel, runGit } from "./git.ts";

/** The `info/exclude` line for a store at `storeDir` in the work tree `top`, or null when outside it. */
export function excludeLine(top: string, storeDir: string): string | null {
  const relative = path.relative(top, storeDir);
  if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) return null;
  return `/${relative.split(path.sep).join("/")}/`;
}

/**
 * Adds the store to the `info/exclude` of the git work tree holding
 * `workspace`. Returns the file changed, or null (not in a work tree, the
 * store is outside it, the line is already there, or the file could not be
 * written safely).
 */
export function excludeStoreFromGit(workspace: string, storeDir: string): string | null {
  const top = gitTopLevel(workspace);
  if (top === null) return null;
  let realTop: string;
  let realStore: string;
  try {
    realTop = fs.realpathSync(top);
    realStore = fs.realpathSync(storeDir);
  } catch {
    return null;
  }
  const line = excludeLine(realTop, realStore);
  if (line === null) return null;
  const run = runGit(top, ["rev-parse", "--git-path", "info/exclude"]);
  if (run.status !== 0) return null;
  const file = path.resolve(top, run.stdout.trim());
  try {
    const info = path.dirname(file);
    const dirStat = fs.lstatSync(info, { throwIfNoEntry: false });
    if (dirStat === undefined) fs.mkdirSync(info, { recursive: true });
    else if (!dirStat.isDirectory()) return null;
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    if (stat !== undefined && !stat.isFile()) return null;
    const text = stat === undefined ? "" : fs.readFileSync(file, "utf8");
    const lines = text.split(/\r?\n/);
    if (lines.includes(line) || lines.includes(line.slice(0, -1))) return null;
    const fd = fs.openSync(
      file,
      fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT |
        fs.constants.O_NOFOLLOW,
      0o644,
    );
    try {
      const prefix = text === "" || text.endsWith("\n") ? "" : "\n";
      fs.writeSync(fd, `${prefix}# the ctxsnap store (ctxsnap init)\n${line}\n`);
    } finally {
      fs.closeSync(fd);
    }
    return file;
  } catch {
    return null;
  }
}
