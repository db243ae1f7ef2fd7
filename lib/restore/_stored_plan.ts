/**
 * A restore operation's stored plan, read as hostile input: it comes from
 * the store, which may have been edited, so nothing in it is acted on before
 * it is checked here.
 *
 * - exactly the fields a restore writes (FORMAT.md §9), each of its type;
 * - `pre_tree` and `target_tree` are 64-hex ids; `pre_restore` a snapshot id;
 * - every path in `writes` and `deletes` is a normalized relative path, with
 *   no reserved name in any folded spelling and outside the store's own
 *   location, and appears once;
 * - `git_commit` is a full hex object id and `git_back` a branch name git
 *   accepts or a full hex object id (so it can never be taken for a path or
 *   an option);
 * - the operation names a restore of a 64-hex target on valid names.
 *
 * {@linkcode checkPlanAgainstTrees} then requires every write to be an entry
 * of the target tree and every delete an entry of the pre-restore tree, so a
 * plan can never delete what the restore did not see captured (`.git`
 * internals, secrets, ignored files).
 *
 * @example
 * ```ts
 * import { validateStoredPlan } from "./_stored_plan.ts";
 * const op = {
 *   id: "op-0123456789abcdef", kind: "restore", session: "main", branch: "main",
 *   target: "a".repeat(64), plan: {
 *     target_tree: "b".repeat(64), pre_tree: "c".repeat(64), writes: [".git/config"], deletes: [],
 *     workspace: true, session: false, pre_restore: null, git_commit: null, git_back: null,
 *   },
 * };
 * let refused = false;
 * try {
 *   validateStoredPlan(op, "/w", "/w/.ctxsnap");
 * } catch {
 *   refused = true;
 * }
 * if (!refused) throw new Error("a plan writing into .git is refused");
 * ```
 * @module
 */
import type { JsonValue } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import { normalizeRelativePath } from "../fs/path.ts";
import { isReservedName } from "../fs/reserved.ts";
import type { TreeEntry } from "../store/tree.ts";
import { MAX_TREE_ENTRIES } from "../store/tree.ts";
import { isValidName } from "../snapshot/body.ts";
import { isBranchName, isObjectId } from "../snapshot/git.ts";
import { refuseStorePaths } from "./_paths.ts";

/** A validated restore plan. */
export interface StoredPlan {
  /** The target tree, or null when the target recorded no workspace. */
  target_tree: string | null;
  /** The tree captured just before the first write. */
  pre_tree: string;
  /** Paths written from the target tree. */
  writes: string[];
  /** Paths deleted. */
  deletes: string[];
  /** Whether workspace files are restored. */
  workspace: boolean;
  /** Whether the session is merged. */
  session: boolean;
  /** The `--force` snapshot, or null. */
  pre_restore: string | null;
  /** The commit checked out with `--git`, or null. */
  git_commit: string | null;
  /** Where HEAD was before `--git`: a branch name or a commit id, or null. */
  git_back: string | null;
}

/** The parts of an operation row the check reads. */
export interface StoredOperation {
  /** Operation id. */
  id: string;
  /** Kind. */
  kind: string;
  /** Session. */
  session: string | null;
  /** Branch. */
  branch: string | null;
  /** Target snapshot. */
  target: string | null;
  /** The plan as parsed JSON. */
  plan: JsonValue;
}

const FIELDS = [
  "target_tree",
  "pre_tree",
  "writes",
  "deletes",
  "workspace",
  "session",
  "pre_restore",
  "git_commit",
  "git_back",
] as const;

/**
 * Validates the stored plan of restore operation `op` for the workspace at
 * `root` with its store at `storeDir`; throws {@linkcode IntegrityError}.
 */
export function validateStoredPlan(
  op: StoredOperation,
  root: string,
  storeDir: string,
): StoredPlan {
  const fail = (what: string): never => {
    throw new IntegrityError(`Operation ${quote(op.id)} has an invalid plan: ${what}`, {
      hint:
        "it was not written by this ctxsnap; inspect the store, then `ctxsnap recover --discard` ends it without touching the workspace",
    });
  };
  if (op.kind !== "restore") fail(`kind ${quote(op.kind)} is not a restore`);
  if (typeof op.target !== "string" || !isHex(op.target, 64)) fail("the target is not an id");
  if (typeof op.session !== "string" || !isValidName(op.session)) fail("bad session name");
  if (typeof op.branch !== "string" || !isValidName(op.branch)) fail("bad branch name");
  const p = op.plan;
  if (p === null || typeof p !== "object" || Array.isArray(p)) return fail("not an object");
  const plan = p as Record<string, JsonValue>;
  for (const key of Object.keys(plan)) {
    if (!(FIELDS as readonly string[]).includes(key)) fail(`unknown field ${quote(key)}`);
  }
  for (const key of FIELDS) if (!(key in plan)) fail(`missing field ${quote(key)}`);
  const id = (value: JsonValue | undefined, what: string, nullable: boolean): string | null => {
    if (value === null && nullable) return null;
    if (typeof value !== "string" || !isHex(value, 64)) return fail(`${what} is not a 64-hex id`);
    return value;
  };
  const flag = (value: JsonValue | undefined, what: string): boolean => {
    if (typeof value !== "boolean") return fail(`${what} is not a boolean`);
    return value;
  };
  const seen = new Set<string>();
  const paths = (value: JsonValue | undefined, what: string): string[] => {
    if (!Array.isArray(value)) return fail(`${what} is not a list`);
    if (value.length > MAX_TREE_ENTRIES) fail(`${what} has too many paths`);
    const out: string[] = [];
    for (const item of value) {
      if (typeof item !== "string") return fail(`${what} holds a non-string`);
      try {
        normalizeRelativePath(item);
      } catch (error) {
        return fail((error as Error).message);
      }
      if (item.split("/").some(isReservedName)) {
        fail(`${what} names ${quote(item)}, in a reserved name (.git or .ctxsnap)`);
      }
      if (seen.has(item)) fail(`${quote(item)} appears more than once`);
      seen.add(item);
      out.push(item);
    }
    return out;
  };
  const workspace = flag(plan.workspace, "workspace");
  const out: StoredPlan = {
    target_tree: id(plan.target_tree, "target_tree", true),
    pre_tree: id(plan.pre_tree, "pre_tree", false)!,
    writes: paths(plan.writes, "writes"),
    deletes: paths(plan.deletes, "deletes"),
    workspace,
    session: flag(plan.session, "session"),
    pre_restore: id(plan.pre_restore, "pre_restore", true),
    git_commit: null,
    git_back: null,
  };
  if (!workspace && (out.writes.length > 0 || out.deletes.length > 0)) {
    fail("it changes paths without restoring the workspace");
  }
  if (workspace && out.target_tree === null) fail("it restores a workspace without a tree");
  const commit = plan.git_commit;
  if (commit !== null) {
    if (typeof commit !== "string" || !isObjectId(commit)) fail("git_commit is not a commit id");
    out.git_commit = commit as string;
  }
  const back = plan.git_back;
  if (back !== null) {
    if (typeof back !== "string" || !(isObjectId(back) || isBranchName(back))) {
      fail(`git_back ${quote(back)} is neither a branch name nor a commit id`);
    }
    out.git_back = back as string;
  }
  try {
    refuseStorePaths(root, storeDir, [...out.writes, ...out.deletes]);
  } catch (error) {
    fail((error as Error).message);
  }
  return out;
}

/**
 * Requires every write of `plan` to be an entry of the target tree and every
 * delete an entry of the pre-restore tree; throws {@linkcode IntegrityError}.
 */
export function checkPlanAgainstTrees(
  op: StoredOperation,
  plan: StoredPlan,
  pre: ReadonlyMap<string, TreeEntry>,
  target: ReadonlyMap<string, TreeEntry>,
): void {
  const fail = (what: string): never => {
    throw new IntegrityError(`Operation ${quote(op.id)} has an invalid plan: ${what}`, {
      hint:
        "it was not written by this ctxsnap; inspect the store, then `ctxsnap recover --discard` ends it without touching the workspace",
    });
  };
  for (const rel of plan.writes) {
    if (!target.has(rel)) fail(`it writes ${quote(rel)}, which its target tree does not hold`);
  }
  for (const rel of plan.deletes) {
    if (!pre.has(rel)) fail(`it deletes ${quote(rel)}, which the workspace did not hold`);
  }
}
