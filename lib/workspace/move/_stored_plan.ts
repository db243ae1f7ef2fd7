/**
 * The stored plan of a move of the workspace (restore, switch, undo, redo),
 * read as hostile input: it comes from the store, which may have been
 * edited, so nothing in it is acted on before it is checked here.
 *
 * - exactly the fields its kind writes (FORMAT.md §9), each of its type: the
 *   core fields every move records, plus the kind's own (`restore`:
 *   `session`, `session_mode`, `pre_restore`, `git_commit`, `git_back`;
 *   `switch`: `from_branch`, `to_branch`; `undo` and `redo`: `reverts`). A
 *   plan without `view_before` is a restore plan of schema 3 or older and
 *   has exactly that schema's fields;
 * - `pre_tree`, `target_tree` and `baseline` are 64-hex ids; `pre_restore` a
 *   snapshot id; session and branch names valid; `reverts` an operation id;
 * - every path in `writes` and `deletes` is a normalized relative path, with
 *   no reserved name in any folded spelling and outside the store's own
 *   location, and appears once;
 * - `git_commit` is a full hex object id and `git_back` a branch name git
 *   accepts or a full hex object id (so it can never be taken for a path or
 *   an option);
 * - the operation is a move on valid names; a restore names a 64-hex target.
 *
 * {@linkcode checkPlanAgainstTrees} then requires every write to be an entry
 * of the target tree and every delete an entry of the tree captured before
 * the move, so a plan can never delete what the move did not see captured
 * (`.git` internals, secrets, ignored files).
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
import type { JsonValue } from "../../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../../errors.ts";
import { isHex } from "../../encoding/hex.ts";
import { normalizeRelativePath } from "../io/path.ts";
import { isReservedName } from "../io/reserved.ts";
import type { TreeEntry } from "../../format/tree.ts";
import { MAX_TREE_ENTRIES } from "../../format/tree.ts";
import { isValidName } from "../../format/body.ts";
import { isBranchName, isObjectId } from "../../integrations/git/git.ts";
import type { View } from "../../history/oplog.ts";
import { refuseStorePaths } from "../restore_paths.ts";

/** The plan a move records in its operation, validated. */
export interface StoredMovePlan {
  /** The tree moved to (null when the operation moved no files). */
  target_tree: string | null;
  /** The workspace captured just before the first write. */
  pre_tree: string;
  /** Paths written from `target_tree`. */
  writes: string[];
  /** Paths deleted. */
  deletes: string[];
  /** Whether files were moved. */
  workspace: boolean;
  /** The baseline to record when done (null: leave it). */
  baseline: string | null;
  /** The sessions the operation may change. */
  sessions: string[];
  /** Their view when the operation started (for its undo record), or null (a plan from schema 3 or older). */
  view_before: View | null;
  /** The kind's own fields, each checked. */
  extra: Record<string, JsonValue>;
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

/** The fields every move plan records. */
const CORE_FIELDS = [
  "target_tree",
  "pre_tree",
  "writes",
  "deletes",
  "workspace",
  "baseline",
  "sessions",
  "view_before",
] as const;

type FieldCheck = (value: JsonValue, fail: (what: string) => never, key: string) => void;

const isBool: FieldCheck = (v, fail, key) => {
  if (typeof v !== "boolean") fail(`${key} is not a boolean`);
};
const isNullableId: FieldCheck = (v, fail, key) => {
  if (v !== null && (typeof v !== "string" || !isHex(v, 64))) fail(`${key} is not a 64-hex id`);
};
const isName: FieldCheck = (v, fail, key) => {
  if (typeof v !== "string" || !isValidName(v)) fail(`${key} is not a valid name`);
};
const isCommit: FieldCheck = (v, fail, key) => {
  if (v !== null && (typeof v !== "string" || !isObjectId(v))) fail(`${key} is not a commit id`);
};
const isGitBack: FieldCheck = (v, fail, key) => {
  if (v !== null && (typeof v !== "string" || !(isObjectId(v) || isBranchName(v)))) {
    fail(`${key} ${quote(String(v))} is neither a branch name nor a commit id`);
  }
};
const isOperationId: FieldCheck = (v, fail, key) => {
  if (typeof v !== "string" || !/^op-[0-9a-f]{16}$/.test(v)) fail(`${key} is not an operation id`);
};

/** Each move kind's own fields. */
const KIND_FIELDS: Record<string, Record<string, FieldCheck>> = {
  restore: {
    session: isBool,
    session_mode: (v, fail, key) => {
      if (v !== "merge" && v !== "replace") fail(`${key} is neither merge nor replace`);
    },
    pre_restore: isNullableId,
    git_commit: isCommit,
    git_back: isGitBack,
  },
  switch: { from_branch: isName, to_branch: isName },
  undo: { reverts: isOperationId },
  redo: { reverts: isOperationId },
};

/** A restore plan of schema 3 or older (no undo record): exactly these fields. */
const LEGACY_RESTORE_FIELDS: Record<string, FieldCheck> = {
  target_tree: isNullableId,
  pre_tree: isNullableId,
  writes: () => {},
  deletes: () => {},
  workspace: isBool,
  session: isBool,
  pre_restore: isNullableId,
  git_commit: isCommit,
  git_back: isGitBack,
};

function failer(op: StoredOperation): (what: string) => never {
  return (what: string): never => {
    throw new IntegrityError(`Operation ${quote(op.id)} has an invalid plan: ${what}`, {
      hint:
        "it was not written by this ctxsnap; inspect the store, then `ctxsnap recover --discard` ends it without touching the workspace",
    });
  };
}

/**
 * Validates the stored plan of move operation `op` for the workspace at
 * `root` with its store at `storeDir`; throws {@linkcode IntegrityError}.
 */
export function validateStoredPlan(
  op: StoredOperation,
  root: string,
  storeDir: string,
): StoredMovePlan {
  const fail = failer(op);
  const own = KIND_FIELDS[op.kind];
  if (own === undefined) fail(`kind ${quote(op.kind)} does not move the workspace`);
  if (op.kind === "restore" && (typeof op.target !== "string" || !isHex(op.target, 64))) {
    fail("the target is not an id");
  }
  if (op.target !== null && (typeof op.target !== "string" || !isHex(op.target, 64))) {
    fail("the target is not an id");
  }
  if (typeof op.session !== "string" || !isValidName(op.session)) fail("bad session name");
  if (typeof op.branch !== "string" || !isValidName(op.branch)) fail("bad branch name");
  const p = op.plan;
  if (p === null || typeof p !== "object" || Array.isArray(p)) return fail("not an object");
  const plan = p as Record<string, JsonValue>;
  // Plans written before schema 4 (an interrupted restore from an older
  // ctxsnap) have no view, sessions or baseline: they still finish or abort.
  const legacy = !("view_before" in plan);
  if (legacy && op.kind !== "restore") fail("it has no view_before");
  const fields: Record<string, FieldCheck> = legacy ? LEGACY_RESTORE_FIELDS : {
    target_tree: isNullableId,
    pre_tree: isNullableId,
    writes: () => {},
    deletes: () => {},
    workspace: isBool,
    baseline: isNullableId,
    sessions: (v, f, key) => {
      if (!Array.isArray(v) || v.length > 1000) return f(`${key} is not a list`);
      for (const name of v) isName(name, f, key);
    },
    view_before: (v, f, key) => {
      if (v === null || typeof v !== "object" || Array.isArray(v)) f(`${key} is not an object`);
    },
    ...own,
  };
  for (const key of Object.keys(plan)) if (!(key in fields)) fail(`unknown field ${quote(key)}`);
  for (const [key, check] of Object.entries(fields)) {
    if (!(key in plan)) fail(`missing field ${quote(key)}`);
    check(plan[key]!, fail, key);
  }
  if (plan.pre_tree === null) fail("pre_tree is not a 64-hex id");
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
  const workspace = plan.workspace as boolean;
  const out: StoredMovePlan = {
    target_tree: plan.target_tree as string | null,
    pre_tree: plan.pre_tree as string,
    writes: paths(plan.writes, "writes"),
    deletes: paths(plan.deletes, "deletes"),
    workspace,
    baseline: legacy
      ? (workspace ? plan.target_tree as string | null : null)
      : plan.baseline as string | null,
    sessions: legacy ? [op.session!] : plan.sessions as string[],
    view_before: legacy ? null : plan.view_before as unknown as View,
    extra: {},
  };
  for (const key of Object.keys(legacy ? LEGACY_RESTORE_FIELDS : own!)) {
    if (!(CORE_FIELDS as readonly string[]).includes(key)) out.extra[key] = plan[key]!;
  }
  if (!workspace && (out.writes.length > 0 || out.deletes.length > 0)) {
    fail("it changes paths without moving the workspace");
  }
  if (workspace && out.target_tree === null) fail("it moves the workspace without a tree");
  try {
    refuseStorePaths(root, storeDir, [...out.writes, ...out.deletes]);
  } catch (error) {
    fail((error as Error).message);
  }
  return out;
}

/**
 * Requires every write of `plan` to be an entry of the target tree and every
 * delete an entry of the tree captured before the move; throws
 * {@linkcode IntegrityError}.
 */
export function checkPlanAgainstTrees(
  op: StoredOperation,
  plan: StoredMovePlan,
  pre: ReadonlyMap<string, TreeEntry>,
  target: ReadonlyMap<string, TreeEntry>,
): void {
  const fail = failer(op);
  for (const rel of plan.writes) {
    if (!target.has(rel)) fail(`it writes ${quote(rel)}, which its target tree does not hold`);
  }
  for (const rel of plan.deletes) {
    if (!pre.has(rel)) fail(`it deletes ${quote(rel)}, which the workspace did not hold`);
  }
}
