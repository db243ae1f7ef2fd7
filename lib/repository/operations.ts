/**
 * The operations log: every create, restore, switch, undo, redo, fork,
 * import, session edit, forget and gc is recorded with its plan, status
 * (`planned`, `applying`, `done`, `failed`, `aborted`) and error. An
 * `applying` move of the workspace blocks changes to its session (and every
 * other move of the workspace) until `ctxsnap recover` resolves it.
 * Operations that can be undone also carry an undo record (see
 * `lib/history/oplog.ts`), and an undo or redo names the operation it
 * reverts.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { finishOperation, listOperations, startOperation } from "./operations.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const op = store.transaction("op", () => startOperation(store, { kind: "gc", plan: {} }));
 * store.transaction("op", () => finishOperation(store, op.id, "done"));
 * if (listOperations(store, {})[0]?.status !== "done") throw new Error("done");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { canonicalize, type JsonValue, parseJson } from "../encoding/canonical_json.ts";
import { ConflictError, IntegrityError, quote } from "../errors.ts";
import type { Store } from "./store.ts";

/** Operation kinds. */
export type OperationKind =
  | "create"
  | "restore"
  | "switch"
  | "undo"
  | "redo"
  | "session"
  | "fork"
  | "forget"
  | "gc"
  | "import"
  | "pull";
/** Operation statuses. */
export type OperationStatus = "planned" | "applying" | "done" | "failed" | "aborted";

/** One operation record. */
export interface Operation {
  /** Random id (`op-` + 16 hex). */
  id: string;
  /** Session it belongs to, or null for store-wide operations (gc). */
  session: string | null;
  /** Branch, or null. */
  branch: string | null;
  /** Kind. */
  kind: OperationKind;
  /** Source snapshot (e.g. the head before a restore), or null. */
  source: string | null;
  /** Target snapshot, or null. */
  target: string | null;
  /** Status. */
  status: OperationStatus;
  /** The plan, as JSON. */
  plan: JsonValue;
  /** Error message if it failed. */
  error: string | null;
  /** Start time (ms). */
  createdAt: number;
  /** End time (ms), or null while unresolved. */
  finishedAt: number | null;
}

/** What {@linkcode startOperation} needs. */
export interface OperationStart {
  /** Kind. */
  kind: OperationKind;
  /** Plan (any JSON). */
  plan: JsonValue;
  /** Session. */
  session?: string | null;
  /** Branch. */
  branch?: string | null;
  /** Source snapshot. */
  source?: string | null;
  /** Target snapshot. */
  target?: string | null;
  /** Initial status (default `applying`). */
  status?: OperationStatus;
  /** The id (default: a fresh one from {@linkcode newOperationId}). */
  id?: string;
  /** The undo record (canonical JSON), or null when it cannot be undone (yet). */
  undo?: JsonValue | null;
  /** For an undo or redo: the operation it reverts. */
  reverts?: string | null;
}

/** A fresh operation id: `op-` and 16 random hex characters. */
export function newOperationId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return "op-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Records a new operation (call inside a transaction) and returns it. */
export function startOperation(store: Store, start: OperationStart): Operation {
  const id = start.id ?? newOperationId();
  const now = Date.now();
  const status = start.status ?? "applying";
  store.stmt(
    `INSERT INTO operations (id, session, branch, kind, source, target, status, plan, error,
       created_at, finished_at, undo, reverts)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)`,
  ).run(
    id,
    start.session ?? null,
    start.branch ?? null,
    start.kind,
    start.source ?? null,
    start.target ?? null,
    status,
    canonicalize(start.plan),
    now,
    status === "applying" || status === "planned" ? null : now,
    start.undo === undefined || start.undo === null ? null : canonicalize(start.undo),
    start.reverts ?? null,
  );
  return getOperation(store, id)!;
}

/** Sets an operation's final status (and error, and for a done one its undo record). */
export function finishOperation(
  store: Store,
  id: string,
  status: OperationStatus,
  error: string | null = null,
  undo: JsonValue | null = null,
): void {
  store.stmt(
    "UPDATE operations SET status = ?, error = ?, finished_at = ?, undo = ? WHERE id = ?",
  ).run(
    status,
    error,
    status === "applying" || status === "planned" ? null : Date.now(),
    undo === null ? null : canonicalize(undo),
    id,
  );
}

interface OperationRow extends Omit<Operation, "plan"> {
  plan: string;
}

const COLUMNS =
  "id, session, branch, kind, source, target, status, plan, error, created_at AS createdAt, " +
  "finished_at AS finishedAt";

function decode(row: OperationRow): Operation {
  let plan: JsonValue;
  try {
    plan = parseJson(row.plan, { maxBytes: 512 * 1024 * 1024 });
  } catch (error) {
    throw new IntegrityError(`Operation ${quote(row.id)} has an unreadable plan`, { cause: error });
  }
  return { ...row, plan };
}

/** Reads one operation, or null. */
export function getOperation(store: Store, id: string): Operation | null {
  const row = store.stmt(`SELECT ${COLUMNS} FROM operations WHERE id = ?`).get(id) as
    | OperationRow
    | undefined;
  return row === undefined ? null : decode(row);
}

/** The unresolved (`applying`) operation of a session, or null. */
export function unresolvedOperation(store: Store, session: string): Operation | null {
  const row = store.stmt(
    `SELECT ${COLUMNS} FROM operations WHERE session = ? AND status = 'applying' ORDER BY seq LIMIT 1`,
  ).get(session) as OperationRow | undefined;
  return row === undefined ? null : decode(row);
}

/**
 * Refuses to change a session that has an unresolved (`applying`) operation
 * (docs/DESIGN.md §3, invariant 5), unless it is `allowed` (the one being finished).
 */
export function assertResolved(store: Store, session: string, allowed: string | null = null): void {
  const op = unresolvedOperation(store, session);
  if (op !== null && op.id !== allowed) {
    throw new ConflictError(
      `Session ${quote(session)} has an unresolved ${op.kind} (operation ${op.id})`,
      {
        hint: "run `ctxsnap recover` to finish it, or `ctxsnap recover --abort` to undo it",
      },
    );
  }
}

/** Operation kinds that move workspace files (and may be left `applying` by a crash). */
export const MOVE_KINDS: readonly OperationKind[] = ["restore", "switch", "undo", "redo"];

/** The unresolved (`applying`) move of the workspace in any session, or null. */
export function unresolvedMove(store: Store): Operation | null {
  const row = store.stmt(
    `SELECT ${COLUMNS} FROM operations
     WHERE status = 'applying' AND kind IN ('restore', 'switch', 'undo', 'redo') ORDER BY seq LIMIT 1`,
  ).get() as OperationRow | undefined;
  return row === undefined ? null : decode(row);
}

/**
 * Refuses to change the workspace or its baseline while any session has an
 * unresolved move (the store has one workspace), unless it is `allowed`
 * (the one being finished).
 */
export function assertWorkspaceResolved(store: Store, allowed: string | null = null): void {
  const op = unresolvedMove(store);
  if (op !== null && op.id !== allowed) {
    throw new ConflictError(
      `The workspace has an unresolved ${op.kind} (operation ${op.id}, session ${
        quote(op.session ?? "")
      })`,
      {
        hint: `run \`ctxsnap recover${
          op.session === null ? "" : ` --session ${op.session}`
        }\` to finish it, or add --abort to undo it`,
      },
    );
  }
}

/** The targets of the `applying` operations (those that have one), in no particular order. */
export function applyingTargets(store: Store): string[] {
  const rows = store.stmt("SELECT target FROM operations WHERE status = 'applying'").all() as {
    target: string | null;
  }[];
  return rows.flatMap((row) => row.target === null ? [] : [row.target]);
}

/** The ids of the operations still `applying` or `planned`, oldest first. */
export function unresolvedOperationIds(store: Store): string[] {
  return (store.stmt(
    "SELECT id FROM operations WHERE status IN ('applying', 'planned') ORDER BY seq",
  ).all() as { id: string }[]).map((row) => row.id);
}

/** Lists operations newest first, without plans (they can be large). */
export function listOperations(
  store: Store,
  filter: { session?: string; limit?: number },
): Omit<Operation, "plan">[] {
  const where = filter.session === undefined ? "" : "WHERE session = ? OR session IS NULL";
  const params: (string | number)[] = filter.session === undefined ? [] : [filter.session];
  params.push(filter.limit ?? -1);
  return store.stmt(
    `SELECT id, session, branch, kind, source, target, status, error,
            created_at AS createdAt, finished_at AS finishedAt
     FROM operations ${where} ORDER BY seq DESC LIMIT ?`,
  ).all(...params) as unknown as Omit<Operation, "plan">[];
}
