/**
 * Publishing as a lean-ctx file (`publish ID --format lean-ctx`): a ctxsnap
 * snapshot becomes a lean-ctx `CONTEXT_SNAPSHOT_V1` carrying its session and
 * git slices and its `roi`/`lineage`/`ledger` slices when it has them (zero
 * ROI and empty lineage and ledger otherwise), signed with the user's key
 * under lean-ctx's message rule. A stored lean-ctx snapshot is written as
 * itself (its own id and signature; signed with the user's key only when it
 * was unsigned, as lean-ctx's own publish does).
 *
 * The file is the pretty form, named `<id12>.ctxsnapshot.json` after the
 * lean-ctx id.
 *
 * @example
 * ```ts
 * import { leanCtxFromBody } from "./leanctx_export.ts";
 * import { leanCtxId } from "./leanctx.ts";
 * import { emptyContext, emptyCursors, emptyFacets, SNAPSHOT_SCHEMA } from "../format/body.ts";
 * const lean = leanCtxFromBody({
 *   schema: SNAPSHOT_SCHEMA, created_at: "2026-01-01T00:00:00.000Z", parent: null,
 *   session: "main", branch: "main", reason: "", source: null,
 *   git: { commit: "a".repeat(40), branch: "main", dirty: false }, workspace: null,
 *   context: { ...emptyContext(), task: "ship", progress_pct: 40 },
 *   cursors: emptyCursors(), facets: emptyFacets(), tool: { name: "ctxsnap", version: "0.1.0" },
 * });
 * if (lean.session?.task !== "ship" || lean.roi.compression_rate !== 0) throw new Error("slices");
 * if (leanCtxId(lean).length !== 64) throw new Error("id");
 * ```
 * @module
 */
import { IntegrityError, quote } from "../errors.ts";
import type { SnapshotBody } from "../format/body.ts";
import type { Signer } from "../format/envelope.ts";
import { ppmToRatio } from "../format/slices.ts";
import { readEnvelope } from "../history/timeline.ts";
import type { Store } from "../repository/store.ts";
import { VERSION } from "../version.ts";
import {
  leanCtxFileName,
  leanCtxFileText,
  type LeanCtxSnapshot,
  newLeanCtxSnapshot,
  signLeanCtx,
} from "./leanctx.ts";
import { checkStoredLeanCtx, type ResolvedId } from "./leanctx_store.ts";

/** The `lean_ctx_version` ctxsnap writes into the files it makes. */
export const EXPORT_TOOL_VERSION: string = `ctxsnap/${VERSION}`;

/** The lean-ctx snapshot of a ctxsnap body (unsigned, id not yet set). */
export function leanCtxFromBody(body: SnapshotBody): LeanCtxSnapshot {
  const lean = newLeanCtxSnapshot(body.created_at, EXPORT_TOOL_VERSION);
  if (body.git !== null) lean.git = { ...body.git };
  if (body.roi !== undefined) {
    lean.roi = {
      input_tokens: BigInt(body.roi.input_tokens),
      output_tokens: BigInt(body.roi.output_tokens),
      tokens_saved: BigInt(body.roi.tokens_saved),
      compression_rate: ppmToRatio(body.roi.compression_rate_ppm),
    };
  }
  if (body.lineage !== undefined) {
    lean.lineage = {
      items_recorded: BigInt(body.lineage.items_recorded),
      items: body.lineage.items.map((i) => ({
        seq: BigInt(i.seq),
        kind: i.kind,
        tool: i.tool,
        path: i.path,
        input_tokens: BigInt(i.input_tokens),
        output_tokens: BigInt(i.output_tokens),
        compression_ratio: ppmToRatio(i.compression_ratio_ppm),
        content_hash: i.content_hash,
      })),
    };
  }
  if (body.ledger !== undefined) {
    lean.ledger = {
      window_size: BigInt(body.ledger.window_size),
      total_tokens_sent: BigInt(body.ledger.total_tokens_sent),
      total_tokens_saved: BigInt(body.ledger.total_tokens_saved),
      items: body.ledger.items.map((i) => ({
        path: i.path,
        state: i.state,
        phi: i.phi_ppm === null ? null : ppmToRatio(i.phi_ppm),
        sent_tokens: BigInt(i.sent_tokens),
        original_tokens: BigInt(i.original_tokens),
      })),
    };
  }
  const c = body.context;
  lean.session = {
    session_id: body.session,
    task: c.task === "" ? null : c.task,
    decisions: [...c.decisions],
    files_touched: [...c.files_touched],
    progress_pct: c.progress_pct,
  };
  return lean;
}

/** A lean-ctx file ready to write. */
export interface LeanCtxExport {
  /** The signed snapshot. */
  snapshot: LeanCtxSnapshot;
  /** The file text (pretty form, no final newline). */
  text: string;
  /** `<id12>.ctxsnapshot.json`. */
  fileName: string;
  /** Whether `signer` signed it now (false: a stored lean-ctx snapshot kept its signature). */
  signedNow: boolean;
}

/**
 * Builds the lean-ctx file of a stored snapshot of either kind. The source is
 * checked first: a ctxsnap snapshot whose id or signature does not verify,
 * or a tampered stored lean-ctx file, is refused (exit 1).
 */
export async function exportLeanCtx(
  store: Store,
  signer: Signer,
  target: ResolvedId,
): Promise<LeanCtxExport> {
  let snapshot: LeanCtxSnapshot;
  let signedNow = false;
  if (target.format === "lean-ctx") {
    const check = await checkStoredLeanCtx(store, target.id);
    if (!check.intact) {
      throw new IntegrityError(`Stored lean-ctx snapshot ${quote(target.id)} does not verify`, {
        hint: "run `ctxsnap verify --all`",
      });
    }
    snapshot = check.snapshot;
    if (snapshot.signature === null) {
      snapshot = await signLeanCtx(snapshot, signer);
      signedNow = true;
    }
  } else {
    const envelope = await readEnvelope(store, target.id); // id and signature checked
    snapshot = await signLeanCtx(leanCtxFromBody(envelope.body), signer);
    signedNow = true;
  }
  return {
    snapshot,
    text: leanCtxFileText(snapshot),
    fileName: leanCtxFileName(snapshot.snapshot_id),
    signedNow,
  };
}
