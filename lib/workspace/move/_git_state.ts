/**
 * The git side of a restore: where HEAD is against the target's git anchor,
 * and what `restore --git` does there (layer: restore).
 *
 * `--git` judges a work tree clean as `git status` does, for the files a
 * restore could touch: a tracked file modified, staged or unmerged blocks
 * it, and so does an untracked file that ctxsnap captures (after the
 * checkout the checked-out state becomes the baseline, so such a file would
 * be taken for part of it). Files git ignores never count (`git status`
 * does not list them), and neither do untracked files ctxsnap does not
 * capture (`node_modules`, excluded or secret files) nor files outside the
 * workspace: the restore never touches them, and `git switch` leaves them
 * alone or refuses by itself, before anything changed.
 *
 * @example
 * ```ts
 * import { restoreGitState } from "./_git_state.ts";
 * const dir = await Deno.makeTempDir();
 * // Outside a git work tree: nothing to say.
 * if (restoreGitState(dir, dir + "/.ctxsnap", null, () => new Set()) !== null) throw new Error();
 * ```
 * @module
 */
import * as path from "node:path";
import type { GitAnchor } from "../../format/body.ts";
import { gitTopLevel, readGitStatus } from "../../integrations/git/git.ts";

/** Where HEAD is, or where a snapshot's anchor was. */
export interface GitPosition {
  /** The commit, or null (before the first commit). */
  commit: string | null;
  /** The branch, or null when detached. */
  branch: string | null;
}

/** The git side of a restore, as `--json` prints it (`git`). */
export interface RestoreGitState {
  /** The target's git anchor, or null when it recorded none. */
  anchor: GitPosition | null;
  /** HEAD before the restore. */
  head: GitPosition;
  /** Whether HEAD's commit or branch differs from the anchor (false without an anchor). */
  differs: boolean;
  /**
   * What `--git` does: `checkout` (the anchor's commit, detached), `refuse`
   * (`blocking` changes), or `none` (the target has no anchor commit).
   */
  withGit: "checkout" | "refuse" | "none";
  /** How many changes make `--git` refuse. */
  blocking: number;
  /** The first 20 of them (paths relative to the git top level). */
  blockingPaths: string[];
}

/** Most blocking paths listed. */
const SHOWN = 20;

/**
 * The git state of a restore of a snapshot anchored at `anchor` in
 * `workspace`, or null outside a git work tree. `captured` returns the paths
 * (relative to the workspace) a capture of the workspace records; it is
 * called only when git lists untracked files.
 */
export function restoreGitState(
  workspace: string,
  storeDir: string,
  anchor: GitAnchor | null,
  captured: () => ReadonlySet<string>,
): RestoreGitState | null {
  const status = readGitStatus(workspace, storeDir);
  const top = gitTopLevel(workspace);
  if (status === null || top === null) return null;
  const untracked = new Set(status.untracked);
  let capturedPaths: ReadonlySet<string> | null = null;
  const blocking = status.changes.filter((file) => {
    if (!untracked.has(file)) return true;
    const rel = path.relative(workspace, path.join(top, file));
    if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return false;
    capturedPaths ??= captured();
    return capturedPaths.has(rel.split(path.sep).join("/"));
  });
  const head = { commit: status.commit, branch: status.branch };
  const at = anchor === null ? null : { commit: anchor.commit, branch: anchor.branch };
  return {
    anchor: at,
    head,
    differs: at !== null && (at.commit !== head.commit || at.branch !== head.branch),
    withGit: at?.commit == null ? "none" : blocking.length > 0 ? "refuse" : "checkout",
    blocking: blocking.length,
    blockingPaths: blocking.slice(0, SHOWN),
  };
}
