/**
 * The operations log: every restore, fork, forget, gc and import is recorded
 * with its plan, status (`planned`, `applying`, `done`, `failed`, `aborted`)
 * and error. An `applying` restore blocks new snapshots on its session until
 * `ctxsnap recover` resolves it.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { finishOperation, listOperations, startOperation } from "./operations.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const op = store.transaction("op", () => startOperation(store, { kind: "gc", plan: {} }));
 * store.transaction("op", () => finishOperation(store, op.id, "done"));
 * if (!(listOperations(store, {})[0]?.status === "done")) throw new Error("Example failed");
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
  | "restore"
  | "fork"
  | "forget"
  | "gc"
  | "import"
  | "materialize"
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
  created_at: number;
  /** End time (ms), or null while unresolved. */
  finished_at: number | null;
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
}

function newId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return "op-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Records a new operation (call inside a transaction) and returns it. */
export function startOperation(store: Store, start: OperationStart): Operation {
  const id = newId();
  const now = Date.now();
  store.stmt(
    `INSERT INTO operations (id, session, branch, kind, source, target, status, plan, error, created_at, finished_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, NULL)`,
  ).run(
    id,
    start.session ?? null,
    start.branch ?? null,
    start.kind,
    start.source ?? null,
    start.target ?? null,
    start.status ?? "applying",
    canonicalize(start.plan),
    now,
  );
  return getOperation(store, id)!;
}

/** Sets an operation's final status (and error). */
export function finishOperation(
  store: Store,
  id: string,
  status: OperationStatus,
  error: string | null = null,
): void {
  store.stmt("UPDATE operations SET status = ?, error = ?, finished_at = ? WHERE id = ?").run(
    status,
    error,
    status === "applying" || status === "planned" ? null : Date.now(),
    id,
  );
}

interface OperationRow extends Omit<Operation, "plan"> {
  plan: string;
}

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
  const row = store.stmt("SELECT * FROM operations WHERE id = ?").get(id) as
    | OperationRow
    | undefined;
  return row === undefined ? null : decode(row);
}

/** The unresolved (`applying`) operation of a session, or null. */
export function unresolvedOperation(store: Store, session: string): Operation | null {
  const row = store.stmt(
    "SELECT * FROM operations WHERE session = ? AND status = 'applying' ORDER BY seq LIMIT 1",
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

/** Lists operations newest first, without plans (they can be large). */
export function listOperations(
  store: Store,
  filter: { session?: string; limit?: number },
): Omit<Operation, "plan">[] {
  const where = filter.session === undefined ? "" : "WHERE session = ? OR session IS NULL";
  const params: (string | number)[] = filter.session === undefined ? [] : [filter.session];
  params.push(filter.limit ?? -1);
  return store.stmt(
    `SELECT id, session, branch, kind, source, target, status, error, created_at, finished_at
     FROM operations ${where} ORDER BY seq DESC LIMIT ?`,
  ).all(...params) as unknown as Omit<Operation, "plan">[];
}
