/**
 * The one summary shape of a snapshot, shared by `create --json`,
 * `list --json`, `show --json` and the library's {@linkcode listSnapshots}:
 * snake_case keys, ISO 8601 UTC times, full 64-hex ids (docs/CLI.md,
 * "JSON").
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { createSnapshot } from "./create.ts";
 * import { listSnapshots } from "./summary.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "a\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const made = await createSnapshot(store, await loadOrCreateIdentity(await Deno.makeTempDir()), { reason: "first" });
 * const [row] = listSnapshots(store);
 * if (row?.id !== made.id || row.reason !== "first" || row.workspace?.files !== 1) {
 *   throw new Error("summary");
 * }
 * store.close();
 * ```
 * @module
 */
import type { Store } from "../repository/store.ts";
import { snapshotIds } from "../repository/snapshot_rows.ts";
import type { Envelope } from "../format/envelope.ts";
import { type SnapshotSummary, summaryOf } from "../format/summary_shape.ts";

export type { SnapshotSummary } from "../format/summary_shape.ts";
import {
  branchChain,
  type BranchRow,
  getSnapshotRow,
  readEnvelopeUnverified,
  selection,
} from "./timeline.ts";

/**
 * The summary of a stored snapshot (the envelope when given, else read from
 * the store without checking its signature: a summary only describes, it
 * vouches for nothing; whatever acts on a snapshot reads it verified).
 */
export function summarize(store: Store, id: string, envelope?: Envelope): SnapshotSummary {
  const row = getSnapshotRow(store, id);
  let env: Envelope | null = envelope ?? null;
  if (env === null) {
    try {
      env = readEnvelopeUnverified(store, id);
    } catch {
      env = null;
    }
  }
  return summaryOf(id, env, row);
}

/** Filters for {@linkcode listSnapshots}. */
export interface ListFilter {
  /** Session (default current). */
  session?: string;
  /** Branch whose chain to walk (default the session's current). */
  branch?: string;
  /** Every snapshot of the store, newest first, instead of one branch's chain. */
  all?: boolean;
  /** Only snapshots created at or before this time (ms since the epoch). */
  before?: number;
  /** Most rows to return. */
  limit?: number;
}

/**
 * Lists snapshots newest first: the chain of a branch from its head
 * through `parent` links (default the current branch), or with `all` every
 * snapshot of the store in reverse insertion order.
 */
export function listSnapshots(store: Store, filter: ListFilter = {}): SnapshotSummary[] {
  let ids: string[];
  if (filter.all) {
    ids = snapshotIds(store, { newestFirst: true });
  } else {
    const sel = selection(store, filter.session, filter.branch);
    ids = branchChain(store, sel.session, sel.branch);
  }
  const out: SnapshotSummary[] = [];
  for (const id of ids) {
    if (filter.limit !== undefined && out.length >= filter.limit) break;
    const summary = summarize(store, id);
    if (filter.before !== undefined && !(Date.parse(summary.createdAt) <= filter.before)) continue;
    out.push(summary);
  }
  return out;
}

/** A branch as `branch --json` lists it. */
export interface BranchSummary {
  /** Branch name. */
  name: string;
  /** Head id, or null. */
  head: string | null;
  /** Fork base, or null. */
  base: string | null;
  /** Whether it is the session's current branch. */
  current: boolean;
  /** Created (ISO 8601 UTC). */
  createdAt: string;
  /** Last head move (ISO 8601 UTC). */
  updatedAt: string;
}

/** The summary of a branch row. */
export function summarizeBranch(row: BranchRow, current: string): BranchSummary {
  return {
    name: row.name,
    head: row.head,
    base: row.base,
    current: row.name === current,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}
