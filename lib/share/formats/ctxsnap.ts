/**
 * ctxsnap's own snapshot format as a {@linkcode SnapshotFormat}: the
 * native one. Its stored snapshots are the timeline's; this adapter
 * describes and lists them in the terms every format shares, so a command
 * that takes snapshots of any format (diff, materialize, the Replay view)
 * reads them through one interface. Creating, restoring, publishing and
 * verifying them stays the core's (`lib/history`, `lib/workspace/move`,
 * `lib/share/publish.ts`, `lib/share/verify_file.ts`).
 *
 * @example
 * ```ts
 * import { ctxsnapFormat } from "./ctxsnap.ts";
 * if (!ctxsnapFormat.sniff(new TextEncoder().encode(' {"id":'))) throw new Error("an envelope");
 * if (ctxsnapFormat.kept) throw new Error("native");
 * ```
 * @module
 */
import type { JsonValue } from "../../encoding/canonical_json.ts";
import type { SnapshotBody } from "../../format/body.ts";
import { SLICE_FIELDS } from "../../format/slices.ts";
import { snapshotIdsWithPrefix } from "../../repository/snapshot_rows.ts";
import type { Store } from "../../repository/store.ts";
import { listSnapshots, summarize } from "../../history/summary.ts";
import { readEnvelope } from "../../history/timeline.ts";
import type { SnapshotFormat, StoredFilter, StoredSnapshot } from "./format.ts";

/** The `roi`, `lineage` and `ledger` slices a body has, or null when none. */
export function bodySlices(body: SnapshotBody): Record<string, JsonValue> | null {
  const found: Record<string, JsonValue> = {};
  for (const field of SLICE_FIELDS) {
    const value = (body as unknown as Record<string, JsonValue | undefined>)[field];
    if (value !== undefined) found[field] = value;
  }
  return Object.keys(found).length > 0 ? found : null;
}

/** ctxsnap's own format. */
export const ctxsnapFormat: SnapshotFormat = {
  name: "ctxsnap",
  kept: false,
  sniff(bytes: Uint8Array): boolean {
    let i = 0;
    while (i < bytes.length && (bytes[i] === 0x20 || (bytes[i]! >= 0x09 && bytes[i]! <= 0x0d))) {
      i++;
    }
    if (bytes[i] === 0x7b) return true; // a published envelope
    return bytes.length >= 262 && new TextDecoder().decode(bytes.subarray(257, 262)) === "ustar";
  },
  idsWithPrefix(store: Store, prefix: string, limit: number): string[] {
    return snapshotIdsWithPrefix(store, prefix, limit);
  },
  async describe(store: Store, id: string): Promise<StoredSnapshot> {
    const envelope = await readEnvelope(store, id); // id and signature checked
    const b = envelope.body;
    return {
      ...summarize(store, id, envelope),
      context: b.context,
      tree: b.workspace?.tree ?? null,
      tool: b.tool,
      slices: bodySlices(b),
    };
  },
  async list(store: Store, filter: StoredFilter): Promise<StoredSnapshot[]> {
    const all = filter.session === undefined;
    const out: StoredSnapshot[] = [];
    for (const s of listSnapshots(store, all ? { all } : { ...filter })) {
      out.push(await this.describe(store, s.id));
    }
    return out;
  },
};
