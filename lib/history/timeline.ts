/**
 * The timeline: sessions, branches and the snapshot rows linked by `parent`.
 *
 * Snapshot rows are append-only (the schema refuses updates); a branch head
 * moves only by compare-and-swap. Ids resolve by unique prefix (≥ 4 hex).
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { branchChain, currentSelection } from "./timeline.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * if (currentSelection(store).session !== "main") throw new Error("main");
 * if (branchChain(store, "main", "main").length !== 0) throw new Error("empty");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import {
  ConflictError,
  IntegrityError,
  NotFoundError,
  quote,
  SignatureError,
  UsageError,
} from "../errors.ts";
import type { Store } from "../repository/store.ts";
import {
  type BranchRow,
  compareAndSetHead,
  getBranch,
  insertBranchIfMissing,
} from "../repository/branch_rows.ts";
import { insertSessionIfMissing, sessionCurrentBranch } from "../repository/session_rows.ts";
import {
  hasSnapshot,
  insertSnapshotRow,
  snapshotEnvelopeBytes,
  snapshotIdHoldingSource,
  snapshotIdsWithPrefix,
  snapshotParent,
} from "../repository/snapshot_rows.ts";
import { isValidName } from "../format/body.ts";
import { checkEnvelope, type Envelope, envelopeBytes, parseEnvelope } from "../format/envelope.ts";

export { type BranchRow, getBranch, listBranches } from "../repository/branch_rows.ts";
export {
  getSnapshotRow,
  hasSnapshot,
  listSnapshotRows,
  type RowFilter,
  type SnapshotRow,
} from "../repository/snapshot_rows.ts";

/** The default session and branch name. */
export const DEFAULT_NAME = "main";

/**
 * Whether `name` is a branch that tracks a remote: `<remote>/<key_id>/<branch>`
 * (its branch part may have up to four segments of its own, so the whole
 * name can be longer than a body's branch name).
 */
export function isTrackingBranchName(name: string): boolean {
  const match = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}\/[0-9a-f]{16}\/(.+)$/.exec(name);
  return match !== null && isValidName(match[1]!);
}

/** Checks a session or branch name given by a user. */
export function checkName(name: string, what: "session" | "branch"): string {
  if (!isValidName(name) && !(what === "branch" && isTrackingBranchName(name))) {
    throw new UsageError(`Invalid ${what} name ${quote(name)}`, {
      hint: "use letters, digits, '.', '_', '-' and up to three '/' separators",
    });
  }
  return name;
}

/** The current session (store setting) and its current branch. */
export function currentSelection(store: Store): { session: string; branch: string } {
  const session = store.getMeta("current_session") ?? DEFAULT_NAME;
  return { session, branch: sessionCurrentBranch(store, session) ?? DEFAULT_NAME };
}

/** Resolves optional `--session`/`--branch` flags against the current selection. */
export function selection(
  store: Store,
  session?: string,
  branch?: string,
): { session: string; branch: string } {
  const current = currentSelection(store);
  const s = session === undefined ? current.session : checkName(session, "session");
  if (branch !== undefined) return { session: s, branch: checkName(branch, "branch") };
  if (s === current.session) return current;
  return { session: s, branch: sessionCurrentBranch(store, s) ?? DEFAULT_NAME };
}

/** Creates the session row if missing (inside the caller's transaction). */
export function ensureSession(store: Store, session: string, branch = DEFAULT_NAME): void {
  insertSessionIfMissing(store, session, branch);
}

/** Creates the branch row if missing, with the given head (inside a transaction). */
export function ensureBranch(
  store: Store,
  session: string,
  branch: string,
  head: string | null = null,
  base: string | null = null,
): BranchRow {
  ensureSession(store, session);
  insertBranchIfMissing(store, session, branch, head, base);
  return getBranch(store, session, branch)!;
}

/**
 * Moves a branch head from `expected` to `next` (compare-and-swap).
 * Throws {@linkcode ConflictError} if the head is no longer `expected`.
 */
export function moveHead(
  store: Store,
  session: string,
  branch: string,
  expected: string | null,
  next: string,
): void {
  if (!compareAndSetHead(store, session, branch, expected, next)) {
    throw new ConflictError(`The head of branch ${quote(branch)} moved`, {
      hint: "another process created a snapshot; list the branch and retry",
    });
  }
}

/** Inserts a snapshot row (idempotent on id). Returns false if it was already present. */
export function insertSnapshot(store: Store, envelope: Envelope, imported = false): boolean {
  const b = envelope.body;
  const inserted = insertSnapshotRow(store, {
    id: envelope.id,
    session: b.session,
    branch: b.branch,
    parent: b.parent,
    created_at: b.created_at,
    tree: b.workspace?.tree ?? null,
    // Only the store's own snapshots hold the idempotency key of `create --source`.
    source_kind: imported ? null : b.source?.kind ?? null,
    source_id: imported ? null : b.source?.id ?? null,
    key_id: envelope.signature.key_id,
    imported,
    envelope: envelopeBytes(envelope),
  });
  if (inserted) return true;
  if (hasSnapshot(store, envelope.id)) return false;
  // Not the id: the session already holds another snapshot with this source,
  // the idempotency key of `create --source`. Refuse rather than drop it.
  const source = b.source!;
  const other = snapshotIdHoldingSource(store, b.session, source.kind, source.id);
  throw new ConflictError(
    `Snapshot ${quote(envelope.id.slice(0, 12))} has the source ${
      quote(`${source.kind}:${source.id}`)
    } of snapshot ${quote(other?.slice(0, 12) ?? "?")} in session ${quote(b.session)}`,
    { hint: "a session holds one snapshot per `create --source` key; nothing was added" },
  );
}

/**
 * Resolves a full id or a unique prefix of at least 4 hex characters.
 * Unknown → {@linkcode NotFoundError}; ambiguous → {@linkcode UsageError} listing candidates.
 */
export function resolveSnapshotId(store: Store, prefix: string): string {
  const p = prefix.trim().toLowerCase();
  if (!/^[0-9a-f]{4,64}$/.test(p)) {
    throw new UsageError(`Snapshot id ${quote(prefix)} is not 4 to 64 hex characters`);
  }
  const rows = snapshotIdsWithPrefix(store, p, 11);
  if (rows.length === 0) {
    throw new NotFoundError(`No snapshot matches ${quote(prefix)}`, {
      hint: "run `ctxsnap list --all` to see every snapshot",
    });
  }
  if (rows.length > 1) {
    const shown = rows.slice(0, 10).map((id) => id.slice(0, 16)).join(", ");
    throw new UsageError(
      `Snapshot id ${quote(prefix)} is ambiguous: ${shown}${rows.length > 10 ? ", …" : ""}`,
      {
        hint: "type more characters of the id",
      },
    );
  }
  return rows[0]!;
}

function storedEnvelope(store: Store, id: string): Uint8Array {
  const bytes = snapshotEnvelopeBytes(store, id);
  if (bytes === null) throw new NotFoundError(`No snapshot ${quote(id)}`);
  return bytes;
}

function parseStored(bytes: Uint8Array, id: string): Envelope {
  const envelope = parseEnvelope(bytes);
  if (envelope.id !== id) {
    throw new IntegrityError(
      `Stored snapshot ${quote(id)} holds an envelope for ${quote(envelope.id)}`,
    );
  }
  return envelope;
}

/**
 * Reads and strictly parses a stored envelope WITHOUT checking its id or
 * signature: only for callers that check it themselves and report the
 * result (`verify`), or that show nothing it could vouch for (`list`).
 * Anything that acts on an envelope uses {@linkcode readEnvelope}.
 */
export function readEnvelopeUnverified(store: Store, id: string): Envelope {
  return parseStored(storedEnvelope(store, id), id);
}

/** Verified envelopes per open store, by id, with the exact stored bytes they came from. */
const verifiedEnvelopes = new WeakMap<
  Store,
  Map<string, { bytes: Uint8Array; envelope: Envelope }>
>();
/** Most verified envelopes remembered per open store. */
const VERIFIED_CACHE_LIMIT = 4096;

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Reads a stored envelope and checks it before anyone acts on it: strict
 * parse, the row's id, the id recomputed from the body (BLAKE3) and the
 * Ed25519 signature over that id. A tampered envelope is an
 * {@linkcode IntegrityError} (a bad signature a {@linkcode SignatureError}),
 * exit 1. Trust in the signer is not checked here. An envelope verified once
 * is remembered for the open store (keyed by its exact stored bytes, so an
 * edited row is checked again); do not mutate the result.
 */
export async function readEnvelope(store: Store, id: string): Promise<Envelope> {
  const bytes = storedEnvelope(store, id);
  let cache = verifiedEnvelopes.get(store);
  const hit = cache?.get(id);
  if (hit !== undefined && sameBytes(hit.bytes, bytes)) return hit.envelope;
  const envelope = parseStored(bytes, id);
  const check = await checkEnvelope(envelope);
  if (!check.idMatches) {
    throw new IntegrityError(
      `Stored snapshot ${quote(id)} is not intact: its body hashes to ${quote(check.computedId)}`,
      { hint: "run `ctxsnap verify --all`; nothing was done with this snapshot" },
    );
  }
  if (!check.signatureValid) {
    throw new SignatureError(`Stored snapshot ${quote(id)} has a signature that does not verify`, {
      hint: "run `ctxsnap verify --all`; nothing was done with this snapshot",
    });
  }
  if (cache === undefined) {
    cache = new Map();
    verifiedEnvelopes.set(store, cache);
  }
  if (cache.size >= VERIFIED_CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  cache.set(id, { bytes, envelope });
  return envelope;
}

/** Whether `ancestor` is `descendant` or reachable from it through `parent` links (present rows only). */
export function isAncestor(store: Store, ancestor: string, descendant: string): boolean {
  const seen = new Set<string>();
  let cursor: string | null = descendant;
  while (cursor !== null && !seen.has(cursor)) {
    if (cursor === ancestor) return true;
    seen.add(cursor);
    cursor = snapshotParent(store, cursor) ?? null;
  }
  return false;
}

/** Walks a branch from its head through `parent` links (newest first), over present snapshots only. */
export function branchChain(store: Store, session: string, branch: string): string[] {
  const head = getBranch(store, session, branch)?.head ?? null;
  const chain: string[] = [];
  const seen = new Set<string>();
  let cursor = head;
  while (cursor !== null && !seen.has(cursor)) {
    seen.add(cursor);
    const parent = snapshotParent(store, cursor);
    if (parent === undefined) break; // forgotten, or never imported: the timeline ends here
    chain.push(cursor);
    cursor = parent;
  }
  return chain;
}
