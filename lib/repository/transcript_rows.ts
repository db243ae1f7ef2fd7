/**
 * The `agent_transcripts` table (schema 8, docs/FORMAT.md §8.2 and §16.3):
 * an agent session's transcript kept as appended segments. A chain starts
 * at byte 0; each segment continues where the previous one of its chain
 * ended and carries the SHA-256 of the whole prefix it completes.
 *
 * This layer stores and finds rows; what they mean is
 * `lib/history/transcript.ts`. Call the writing functions inside the
 * caller's write transaction.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { insertTranscriptSegment, lastTranscriptSegment } from "./transcript_rows.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * store.transaction("t", () =>
 *   insertTranscriptSegment(store, {
 *     agent_session: 1, chain: 1, start: 0, length: 2, prefix_sha256: "0".repeat(64),
 *     path: "/t.jsonl", data: new Uint8Array([123, 125]), at: 1,
 *   })
 * );
 * if (lastTranscriptSegment(store, 1)?.length !== 2) throw new Error("row");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "./store.ts";
import { hasTranscriptTables } from "./agent_rows.ts";

/** One stored segment of a transcript. */
export interface TranscriptSegmentRow {
  /** The agent session's row. */
  agent_session: number;
  /** The chain (1, 2, …): a new one starts when the recorded prefix no longer matches. */
  chain: number;
  /** Byte offset of the segment in the transcript. */
  start: number;
  /** Its length in bytes (at least 1). */
  length: number;
  /** SHA-256 (hex) of the transcript's bytes `[0, start + length)`. */
  prefix_sha256: string;
  /** The transcript's path when read. */
  path: string;
  /** The bytes. */
  data: Uint8Array;
  /** When it was read (ms since the epoch). */
  at: number;
}

/** The segment a chain ends with, without its data. */
export type TranscriptEnd = Omit<TranscriptSegmentRow, "data">;

/** Records one segment. */
export function insertTranscriptSegment(store: Store, row: TranscriptSegmentRow): void {
  store.stmt(
    `INSERT INTO agent_transcripts (agent_session, chain, start, length, prefix_sha256, path, data, at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    row.agent_session,
    row.chain,
    row.start,
    row.length,
    row.prefix_sha256,
    row.path,
    row.data,
    row.at,
  );
}

/** The last segment of the agent session's newest chain (without data), or null. */
export function lastTranscriptSegment(store: Store, agentSession: number): TranscriptEnd | null {
  if (!hasTranscriptTables(store)) return null;
  const row = store.stmt(
    `SELECT agent_session, chain, start, length, prefix_sha256, path, at FROM agent_transcripts
     WHERE agent_session = ? ORDER BY chain DESC, start DESC LIMIT 1`,
  ).get(agentSession) as TranscriptEnd | undefined;
  return row ?? null;
}

/** The segments of one chain that begin before byte `end`, in order (with data). */
export function transcriptSegments(
  store: Store,
  agentSession: number,
  chain: number,
  end: number,
): TranscriptSegmentRow[] {
  if (!hasTranscriptTables(store)) return [];
  const rows = store.stmt(
    `SELECT agent_session, chain, start, length, prefix_sha256, path, data, at FROM agent_transcripts
     WHERE agent_session = ? AND chain = ? AND start < ? ORDER BY start`,
  ).all(agentSession, chain, end) as unknown as TranscriptSegmentRow[];
  return rows.map((row) => ({ ...row, data: new Uint8Array(row.data) }));
}

/** Bytes kept for an agent session's transcript, over all chains. */
export function transcriptBytesKept(store: Store, agentSession: number): number {
  if (!hasTranscriptTables(store)) return 0;
  const row = store.stmt(
    "SELECT COALESCE(SUM(length), 0) AS n FROM agent_transcripts WHERE agent_session = ?",
  ).get(agentSession) as { n: number };
  return Number(row.n);
}

/** A transcript chain that no remaining agent event needs, and what it holds. */
export interface UnneededTranscriptChain {
  /** The agent session's row. */
  agent_session: number;
  /** The chain. */
  chain: number;
  /** Its segments. */
  segments: number;
  /** Their bytes. */
  bytes: number;
}

/**
 * The kept transcript chains that no agent event whose snapshot the store
 * still holds names (an event of a forgotten snapshot no longer keeps its
 * chain), in order. Call inside the caller's (gc's) write transaction.
 */
export function unneededTranscriptChains(store: Store): UnneededTranscriptChain[] {
  if (!hasTranscriptTables(store)) return [];
  const rows = store.stmt(
    `SELECT t.agent_session AS agent_session, t.chain AS chain, COUNT(*) AS segments,
            SUM(t.length) AS bytes
     FROM agent_transcripts t
     WHERE (t.agent_session, t.chain) NOT IN (
       SELECT e.agent_session, e.transcript_chain FROM agent_events e
       JOIN snapshots s ON s.id = e.snapshot
       WHERE e.transcript_chain IS NOT NULL)
     GROUP BY t.agent_session, t.chain ORDER BY t.agent_session, t.chain`,
  ).all() as { agent_session: number; chain: number; segments: number; bytes: number }[];
  return rows.map((r) => ({
    agent_session: Number(r.agent_session),
    chain: Number(r.chain),
    segments: Number(r.segments),
    bytes: Number(r.bytes),
  }));
}

/**
 * Deletes every segment of one chain and unlinks the events that named it
 * (their `transcript_chain` becomes NULL: not kept; path, length and hash
 * stay). Call inside the caller's write transaction.
 */
export function deleteTranscriptChain(store: Store, agentSession: number, chain: number): void {
  store.stmt("DELETE FROM agent_transcripts WHERE agent_session = ? AND chain = ?").run(
    agentSession,
    chain,
  );
  store.stmt(
    "UPDATE agent_events SET transcript_chain = NULL WHERE agent_session = ? AND transcript_chain = ?",
  ).run(agentSession, chain);
}
