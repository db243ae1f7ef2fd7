/**
 * Switching branches moves the workspace: `switchTo` makes NAME the
 * session's current branch and moves the files from the workspace baseline
 * to NAME's head with the same three-way rules as a restore (`policy.ts`).
 * Local changes the target does not touch are carried along, as with
 * `git switch`; files that only the other branch recorded go away, so
 * nothing leaks from one branch into another; a conflict is refused unless
 * `--force`, which first records the disk in a snapshot on the branch being
 * left. The baseline becomes NAME's head tree. Nothing is added to the
 * timeline: the operation (kind `switch`) is in the log, and `undo` reverts
 * it.
 *
 * A pointer-only switch (`pointerOnly`, or a branch whose head recorded no
 * workspace) changes only where the next snapshot goes; the files and the
 * baseline stay.
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { createSnapshot } from "../../history/create.ts";
 * import { forkBranch } from "../../history/branch.ts";
 * import { switchTo } from "./switch.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${ws}/a.txt`, "main\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const base = await createSnapshot(store, me, {});
 * forkBranch(store, base.id, "exp");
 * await switchTo(store, me, "exp");
 * await Deno.writeTextFile(`${ws}/new.txt`, "only on exp\n");
 * await createSnapshot(store, me, {});
 * await switchTo(store, me, "main");
 * let leaked = true;
 * try {
 *   await Deno.lstat(`${ws}/new.txt`);
 * } catch {
 *   leaked = false;
 * }
 * if (leaked) throw new Error("a file of exp leaked into main");
 * store.close();
 * ```
 * @module
 */
import { NotFoundError, quote } from "../../errors.ts";
import { assertResolved } from "../../repository/operations.ts";
import type { Store } from "../../repository/store.ts";
import { setCurrentBranch } from "../../repository/session_rows.ts";
import type { TreeManifest } from "../../format/tree.ts";
import type { Signer } from "../../format/envelope.ts";
import { recordChange } from "../../history/oplog.ts";
import { checkName, getBranch, readEnvelope, selection } from "../../history/timeline.ts";
import { runMove } from "./engine.ts";
import type { MovePlan } from "../plan.ts";
import { requireContent } from "./restore.ts";
import { walkWithBaseline } from "./move.ts";

/** Options of {@linkcode switchTo}. */
export interface SwitchOptions {
  /** Session (default current). */
  sessionName?: string;
  /** Only change the current branch; leave the files and the baseline. */
  pointerOnly?: boolean;
  /** Only plan. */
  dryRun?: boolean;
  /** Apply despite content conflicts, after recording the disk in a snapshot. */
  force?: boolean;
  /** Progress callback while writing. */
  onProgress?: (done: number, total: number) => void;
}

/** What a switch did (or, with `dryRun`, would do); `--json` prints it in snake_case (`lib/cli/json.ts`). */
export interface SwitchResult {
  /** Session. */
  session: string;
  /** The branch left. */
  from: string;
  /** The branch switched to. */
  branch: string;
  /** Its head. */
  head: string | null;
  /** Whether files moved (false: a pointer-only switch). */
  workspace: boolean;
  /** The plan, or null for a pointer-only switch. */
  plan: MovePlan | null;
  /** Whether this was only a plan. */
  dryRun: boolean;
  /** The operation, or null (dry run, nothing changed). */
  operation: string | null;
  /** The snapshot `--force` recorded the disk in, or null. */
  preSwitch: string | null;
}

/** Switches the session to branch `name`, moving the workspace to its head (see the module doc). */
export function switchTo(
  store: Store,
  signer: Signer,
  name: string,
  options: SwitchOptions = {},
): Promise<SwitchResult> {
  // Each tree the move looks at is read once; the head's as its differences
  // from the baseline (`requireContent`).
  return store.keepingTrees(() => switchWith(store, signer, name, options));
}

async function switchWith(
  store: Store,
  signer: Signer,
  name: string,
  options: SwitchOptions,
): Promise<SwitchResult> {
  const sel = selection(store, options.sessionName);
  const branch = checkName(name, "branch");
  assertResolved(store, sel.session);
  const row = getBranch(store, sel.session, branch);
  if (row === null) {
    throw new NotFoundError(`No branch ${quote(branch)} in session ${quote(sel.session)}`, {
      hint:
        "list branches with `ctxsnap branch list`, or create one with `ctxsnap fork ID --name NAME`",
    });
  }
  const head = row.head === null ? null : await readEnvelope(store, row.head); // verified
  const result: SwitchResult = {
    session: sel.session,
    from: sel.branch,
    branch,
    head: row.head,
    workspace: false,
    plan: null,
    dryRun: options.dryRun === true,
    operation: null,
    preSwitch: null,
  };
  let target: TreeManifest | null = null;
  // The plan's walk, made first: it may stand in for the baseline.
  let disk: TreeManifest | undefined;
  let base: { id: string; tree: TreeManifest } | null = null;
  if (!options.pointerOnly && head !== null && head.body.workspace !== null) {
    ({ disk, base } = walkWithBaseline(store));
    target = requireContent(store, head, base);
  }
  if (target === null) {
    if (result.dryRun) return result;
    result.operation = store.transaction("switch", () => {
      assertResolved(store, sel.session);
      return recordChange(store, [sel.session], () => {
        setCurrentBranch(store, sel.session, branch);
        return {
          kind: "switch",
          session: sel.session,
          branch,
          source: null,
          target: row.head,
          plan: { from_branch: sel.branch, to_branch: branch, workspace: false },
        };
      });
    });
    return result;
  }
  result.workspace = true;
  const moved = await runMove(store, signer, {
    kind: "switch",
    session: sel.session,
    branch,
    sessions: [sel.session],
    source: null,
    target: row.head,
    tree: target,
    treeId: head!.body.workspace!.tree,
    base: base?.tree ?? null,
    disk,
    overwrite: options.force ? "local" : "none",
    setsBaseline: true,
    effects: { session: null, currentBranch: branch, view: null, recordAs: null, git: null },
    extra: { from_branch: sel.branch },
    save: {
      reason: "pre-switch",
      session: sel.session,
      branch: sel.branch,
      detached: false,
      metadata: { pre_switch_for: branch },
    },
    dryRun: result.dryRun,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  result.plan = moved.plan;
  result.operation = moved.operation;
  result.preSwitch = moved.saved;
  return result;
}
