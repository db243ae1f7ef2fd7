/**
 * What `timeline` and `serve` share: which part of the store to show
 * (`--all`, `--session S`, `--branch B`) and whom to trust.
 *
 * @example
 * ```ts ignore
 * import { storeScope } from "./_view.ts";
 * const scope = storeScope(store, parsed); // { kind: "session", session: "default" }
 * ```
 * @module
 */
import { NotFoundError, quote, UsageError } from "../errors.ts";
import { listBranches, listSnapshotRows, selection } from "../history/timeline.ts";
import type { StoreScope } from "../view/model.ts";
import type { Store } from "../repository/store.ts";
import { flag, type OptionSpec, type Parsed, str } from "./args.ts";
import { SELECTION_FLAGS, TRUST_FLAGS } from "./flags.ts";

/** The options `timeline` and `serve` share: what to show and whom to trust. */
export const VIEW_OPTIONS: Record<string, OptionSpec> = {
  session: SELECTION_FLAGS.session,
  branch: { ...SELECTION_FLAGS.branch, help: "only this branch's history" },
  all: SELECTION_FLAGS.all,
  ...TRUST_FLAGS,
};

/** Resolves `--all`, `--session S`, `--branch B` to a scope (the current session by default). */
export function storeScope(
  store: Store,
  parsed: Parsed,
): StoreScope {
  const session = str(parsed, "session");
  const branch = str(parsed, "branch");
  if (flag(parsed, "all")) {
    if (session !== undefined || branch !== undefined) {
      throw new UsageError("use --all, or --session/--branch, not both");
    }
    return { kind: "all" };
  }
  const sel = selection(store, session, branch);
  const branches = listBranches(store, sel.session);
  // The current session may be empty (a new store); a session asked for by name must exist.
  if (
    session !== undefined && branches.length === 0 &&
    listSnapshotRows(store, { session: sel.session, limit: 1 }).length === 0
  ) {
    throw new NotFoundError(`No session ${quote(sel.session)}`, {
      hint: "list sessions with `ctxsnap session list`, or use --all",
    });
  }
  if (branch === undefined) return { kind: "session", session: sel.session };
  if (!branches.some((b) => b.name === sel.branch)) {
    throw new NotFoundError(`No branch ${quote(sel.branch)} in session ${quote(sel.session)}`, {
      hint: "list branches with `ctxsnap branch list`",
    });
  }
  return { kind: "branch", session: sel.session, branch: sel.branch };
}
