/**
 * The one summary shape of a snapshot (`create --json`, `list --json`,
 * `show --json`, {@linkcode summaryOf}), computed from an envelope alone, so
 * that a command which never opens the store (a checkpoint handed to the
 * watch process) prints the same document. `summary.ts` adds the store.
 *
 * @example
 * ```ts
 * import { summaryOf } from "./summary_shape.ts";
 * const unreadable = summaryOf("ab".repeat(32), null, {
 *   created_at: "2026-11-30T10:00:00.000Z", session: "main", branch: "main", parent: null,
 *   key_id: "0123456789abcdef", imported: 1,
 * });
 * if (unreadable.readable || !unreadable.imported || unreadable.reason !== null) {
 *   throw new Error("a row without an envelope is an unreadable summary");
 * }
 * ```
 * @module
 */
import type { GitAnchor, WorkspaceRef } from "./body.ts";
import type { Envelope } from "./envelope.ts";

/** What every listing says about one snapshot. */
export interface SnapshotSummary {
  /** Full snapshot id. */
  id: string;
  /** `ctxsnap`, or `lean-ctx` for an imported lean-ctx snapshot (listed by `list`). */
  format: "ctxsnap" | "lean-ctx";
  /** When it was created (ISO 8601 UTC, from the signed body). */
  createdAt: string;
  /** Session. */
  session: string;
  /** Branch named in the signed body. */
  branch: string;
  /** Parent id, or null. */
  parent: string | null;
  /** Why it was taken (null when the envelope cannot be read). */
  reason: string | null;
  /** Idempotency source, or null. */
  source: { kind: string; id: string } | null;
  /** The workspace recorded (tree id and counts, as in the body), or null. */
  workspace: WorkspaceRef | null;
  /** The git anchor, or null. */
  git: GitAnchor | null;
  /** The target of the restore this snapshot records, or null. */
  revertedTo: string | null;
  /** Signer key id (null: an unsigned lean-ctx snapshot). */
  keyId: string | null;
  /** Whether it arrived by import. */
  imported: boolean;
  /** False when the stored envelope no longer parses (run `verify`). */
  readable: boolean;
}

/** The stored row fields a summary falls back on when the envelope cannot be read. */
export interface SummaryRow {
  /** When it was created (ISO 8601 UTC). */
  created_at: string;
  /** Session. */
  session: string;
  /** Branch. */
  branch: string;
  /** Parent id, or null. */
  parent: string | null;
  /** Signer key id. */
  key_id: string;
  /** 1 when it arrived by import. */
  imported: number;
}

/**
 * The summary of snapshot `id` from its envelope (null: unreadable) and its
 * stored row, if there is one (none: a snapshot just made, not imported).
 */
export function summaryOf(
  id: string,
  envelope: Envelope | null,
  row: SummaryRow | null | undefined,
): SnapshotSummary {
  const b = envelope?.body;
  const reverted = b?.facets.metadata.reverted_to;
  return {
    id,
    format: "ctxsnap",
    createdAt: b?.created_at ?? row?.created_at ?? "",
    session: b?.session ?? row?.session ?? "",
    branch: b?.branch ?? row?.branch ?? "",
    parent: b?.parent ?? row?.parent ?? null,
    reason: b?.reason ?? null,
    source: b?.source ?? null,
    workspace: b?.workspace ?? null,
    git: b?.git ?? null,
    revertedTo: typeof reverted === "string" ? reverted : null,
    keyId: envelope?.signature.key_id ?? row?.key_id ?? "",
    imported: row?.imported === 1,
    readable: envelope !== null,
  };
}
