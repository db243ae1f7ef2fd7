/**
 * The `agent_sessions`, `agent_turns` and `agent_events` tables (schema 5,
 * docs/FORMAT.md §8.2 and §16): an agent harness's sessions, the prompts
 * submitted in each (numbered 1, 2, … in the order the agent sent them) and
 * every hook event delivered, each naming the snapshot that holds the
 * workspace after it.
 *
 * This layer stores and finds rows; what an event means is
 * `lib/history/agent.ts`. Call the writing functions inside the caller's
 * write transaction.
 *
 * @example
 * ```ts
 * import { Store } from "./store.ts";
 * import { agentSessionRow, touchAgentSession } from "./agent_rows.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * store.transaction("t", () =>
 *   touchAgentSession(store, {
 *     harness: "claude-code", session_id: "s1", ctx_session: "main",
 *     cwd: dir, transcript_path: null, at: 1,
 *   })
 * );
 * if (agentSessionRow(store, "claude-code", "s1")?.prompts !== 0) throw new Error("row");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "./store.ts";

/** One agent session. */
export interface AgentSessionRow {
  /** Row number. */
  seq: number;
  /** The harness (`claude-code`). */
  harness: string;
  /** The agent's session id (`-` when its events carry none). */
  session_id: string;
  /** The ctxsnap session its first event was recorded in. */
  ctx_session: string;
  /** The directory of its latest event that gave one. */
  cwd: string | null;
  /** The transcript path its latest event gave, if any. */
  transcript_path: string | null;
  /** Time of its first event (ms since the epoch). */
  first_event_at: number;
  /** Time of its latest event (ms since the epoch). */
  last_event_at: number;
  /** `reason` of its `SessionEnd`, or null while it has not ended. */
  end_reason: string | null;
  /** Prompts submitted so far. */
  prompts: number;
  /** Events recorded so far. */
  events: number;
  /** The omissions already told to the user (JSON array of `reason\tpath`). */
  notified: string;
}

/** One prompt of an agent session. */
export interface AgentTurnRow {
  /** Its number within the agent session (1, 2, …). */
  prompt: number;
  /** The agent's own prompt id, if it gave one. */
  prompt_id: string | null;
  /** The prompt's text, kept only when the hook was asked to (`--record-prompts`). */
  text: string | null;
  /** The `seq` of its `UserPromptSubmit` event. */
  event: number;
  /** The snapshot holding the workspace when it was submitted (the state before it). */
  snapshot: string;
  /** When it was submitted (ms since the epoch). */
  at: number;
}

/** One hook event. */
export interface AgentEventRow {
  /** Row number (store-wide delivery order). */
  seq: number;
  /** The agent session's row. */
  agent_session: number;
  /** Its position within the agent session (1, 2, …). */
  position: number;
  /** Its identity within the agent session (the agent's ids, or `#<position>`). */
  key: string;
  /** The event (`UserPromptSubmit`, `PostToolUse`, …). */
  kind: string;
  /** The tool, for tool events. */
  tool: string | null;
  /** The agent's tool call id, if any. */
  tool_use_id: string | null;
  /** The Bash command of a Bash tool event, kept only with `--record-prompts` (schema 9). */
  command: string | null;
  /** The prompt it belongs to, or null before the first. */
  prompt: number | null;
  /** The snapshot holding the workspace after it. */
  snapshot: string;
  /** 1 when this event made that snapshot, 0 when it found the workspace unchanged. */
  created: number;
  /** When it was recorded (ms since the epoch). */
  at: number;
  /** The transcript the event named (absolute path), or null (schema 8). */
  transcript_path: string | null;
  /** The transcript's byte length when the event was recorded, or null when not read. */
  transcript_len: number | null;
  /** SHA-256 (hex) of the transcript's first `transcript_len` bytes, or null. */
  transcript_sha256: string | null;
  /** The segment chain (`agent_transcripts.chain`) holding that prefix, or null when not kept. */
  transcript_chain: number | null;
  /** The event in the agent-session model (`prompt`, `tool_post`, …), or null (before schema 8). */
  model_kind: string | null;
}

/** What {@linkcode touchAgentSession} records of an event's session. */
export interface AgentSessionTouch {
  /** The harness. */
  harness: string;
  /** The agent's session id (`-` for none). */
  session_id: string;
  /** The ctxsnap session (kept from the first event). */
  ctx_session: string;
  /** The event's cwd, if any (kept when null). */
  cwd: string | null;
  /** The event's transcript path, if any (kept when null). */
  transcript_path: string | null;
  /** The event's time. */
  at: number;
}

const tablesKnown = new WeakMap<Store, boolean>();

/** Whether the store has the agent tables (a read-only open of a store before schema 5 has not). */
export function hasAgentTables(store: Store): boolean {
  let known = tablesKnown.get(store);
  if (known === undefined) {
    known = store.stmt(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_events'",
    ).get() !== undefined;
    tablesKnown.set(store, known);
  }
  return known;
}

const SESSION_COLUMNS =
  "seq, harness, session_id, ctx_session, cwd, transcript_path, first_event_at, last_event_at, end_reason, prompts, events, notified";

/** The agent session `sessionId` of `harness`, or null. */
export function agentSessionRow(
  store: Store,
  harness: string,
  sessionId: string,
): AgentSessionRow | null {
  if (!hasAgentTables(store)) return null;
  const row = store.stmt(
    `SELECT ${SESSION_COLUMNS} FROM agent_sessions WHERE harness = ? AND session_id = ?`,
  ).get(harness, sessionId) as AgentSessionRow | undefined;
  return row ?? null;
}

/** The agent session with row number `seq`, or null. */
export function agentSessionBySeq(store: Store, seq: number): AgentSessionRow | null {
  if (!hasAgentTables(store)) return null;
  const row = store.stmt(`SELECT ${SESSION_COLUMNS} FROM agent_sessions WHERE seq = ?`).get(seq) as
    | AgentSessionRow
    | undefined;
  return row ?? null;
}

/** The agent sessions with the id `sessionId`, of any harness (newest event first). */
export function agentSessionsById(store: Store, sessionId: string): AgentSessionRow[] {
  if (!hasAgentTables(store)) return [];
  return store.stmt(
    `SELECT ${SESSION_COLUMNS} FROM agent_sessions WHERE session_id = ?
     ORDER BY last_event_at DESC, seq DESC`,
  ).all(sessionId) as unknown as AgentSessionRow[];
}

/** The agent events attached to snapshot `snapshot`, in delivery order. */
export function agentEventsOfSnapshot(store: Store, snapshot: string): AgentEventRow[] {
  if (!hasAgentTables(store)) return [];
  return store.stmt(
    `SELECT ${eventColumns(store)} FROM agent_events WHERE snapshot = ? ORDER BY seq`,
  ).all(snapshot) as unknown as AgentEventRow[];
}

/**
 * The newest event of an agent session before position `position` that
 * recorded a transcript length, or null.
 */
export function transcriptEventBefore(
  store: Store,
  agentSession: number,
  position: number,
): AgentEventRow | null {
  if (!hasAgentTables(store)) return null;
  const row = store.stmt(
    `SELECT ${eventColumns(store)} FROM agent_events
     WHERE agent_session = ? AND position < ? AND transcript_len IS NOT NULL
     ORDER BY position DESC LIMIT 1`,
  ).get(agentSession, position) as AgentEventRow | undefined;
  return row ?? null;
}

/** The newest event of an agent session that recorded a transcript length, or null. */
export function latestTranscriptEvent(store: Store, agentSession: number): AgentEventRow | null {
  return transcriptEventBefore(store, agentSession, Number.MAX_SAFE_INTEGER);
}

/** The agent sessions whose id starts with `prefix`, newest event first (at most `limit`). */
export function agentSessionsByPrefix(
  store: Store,
  prefix: string,
  limit: number,
): AgentSessionRow[] {
  if (!hasAgentTables(store)) return [];
  return store.stmt(
    `SELECT ${SESSION_COLUMNS} FROM agent_sessions WHERE substr(session_id, 1, ?) = ?
     ORDER BY last_event_at DESC, seq DESC LIMIT ?`,
  ).all(prefix.length, prefix, limit) as unknown as AgentSessionRow[];
}

/** The agent sessions, newest event first (at most `limit`). */
export function listAgentSessions(store: Store, limit: number): AgentSessionRow[] {
  if (!hasAgentTables(store)) return [];
  return store.stmt(
    `SELECT ${SESSION_COLUMNS} FROM agent_sessions
     ORDER BY prompts > 0 DESC, last_event_at DESC, seq DESC LIMIT ?`,
  ).all(limit) as unknown as AgentSessionRow[];
}

/** Creates the agent session's row, or updates its latest event, cwd and transcript path. */
export function touchAgentSession(store: Store, touch: AgentSessionTouch): AgentSessionRow {
  store.stmt(
    `INSERT INTO agent_sessions
       (harness, session_id, ctx_session, cwd, transcript_path, first_event_at, last_event_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (harness, session_id) DO UPDATE SET
       cwd = COALESCE(excluded.cwd, cwd),
       transcript_path = COALESCE(excluded.transcript_path, transcript_path),
       last_event_at = MAX(last_event_at, excluded.last_event_at)`,
  ).run(
    touch.harness,
    touch.session_id,
    touch.ctx_session,
    touch.cwd,
    touch.transcript_path,
    touch.at,
    touch.at,
  );
  return agentSessionRow(store, touch.harness, touch.session_id)!;
}

/** Records the counters, end reason and notified omissions of an agent session. */
export function updateAgentSession(
  store: Store,
  seq: number,
  fields: { prompts: number; events: number; end_reason: string | null; notified: string },
): void {
  store.stmt(
    "UPDATE agent_sessions SET prompts = ?, events = ?, end_reason = COALESCE(?, end_reason), notified = ? WHERE seq = ?",
  ).run(fields.prompts, fields.events, fields.end_reason, fields.notified, seq);
}

const EVENT_COLUMNS_9 =
  "seq, agent_session, position, key, kind, tool, tool_use_id, command, prompt, snapshot, created, at, transcript_path, transcript_len, transcript_sha256, transcript_chain, model_kind";
const EVENT_COLUMNS_8 =
  "seq, agent_session, position, key, kind, tool, tool_use_id, NULL AS command, prompt, snapshot, created, at, transcript_path, transcript_len, transcript_sha256, transcript_chain, model_kind";
const EVENT_COLUMNS_5 =
  "seq, agent_session, position, key, kind, tool, tool_use_id, NULL AS command, prompt, snapshot, created, at, NULL AS transcript_path, NULL AS transcript_len, NULL AS transcript_sha256, NULL AS transcript_chain, NULL AS model_kind";
const transcriptsKnown = new WeakMap<Store, boolean>();
const commandKnown = new WeakMap<Store, boolean>();

/** Whether the store has schema 8's transcript columns and table (a read-only open of an older store has not). */
export function hasTranscriptTables(store: Store): boolean {
  let known = transcriptsKnown.get(store);
  if (known === undefined) {
    known = store.stmt(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_transcripts'",
    ).get() !== undefined;
    transcriptsKnown.set(store, known);
  }
  return known;
}

/** Whether `agent_events` has schema 9's `command` column. */
function hasCommandColumn(store: Store): boolean {
  let known = commandKnown.get(store);
  if (known === undefined) {
    known = store.stmt(
      "SELECT 1 FROM pragma_table_info('agent_events') WHERE name = 'command'",
    ).get() !== undefined;
    commandKnown.set(store, known);
  }
  return known;
}

function eventColumns(store: Store): string {
  if (!hasTranscriptTables(store)) return EVENT_COLUMNS_5;
  return hasCommandColumn(store) ? EVENT_COLUMNS_9 : EVENT_COLUMNS_8;
}

/** The event with this key in the agent session, or null. */
export function agentEventByKey(
  store: Store,
  agentSession: number,
  key: string,
): AgentEventRow | null {
  if (!hasAgentTables(store)) return null;
  const row = store.stmt(
    `SELECT ${eventColumns(store)} FROM agent_events WHERE agent_session = ? AND key = ?`,
  ).get(agentSession, key) as AgentEventRow | undefined;
  return row ?? null;
}

/** Records an event; returns its `seq`. */
export function insertAgentEvent(store: Store, row: Omit<AgentEventRow, "seq">): number {
  const result = store.stmt(
    `INSERT INTO agent_events
       (agent_session, position, key, kind, tool, tool_use_id, command, prompt, snapshot, created,
        at, transcript_path, transcript_len, transcript_sha256, transcript_chain, model_kind)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    row.agent_session,
    row.position,
    row.key,
    row.kind,
    row.tool,
    row.tool_use_id,
    row.command,
    row.prompt,
    row.snapshot,
    row.created,
    row.at,
    row.transcript_path,
    row.transcript_len,
    row.transcript_sha256,
    row.transcript_chain,
    row.model_kind,
  );
  return Number(result.lastInsertRowid);
}

/** The events of an agent session in the order delivered (at most `limit`, newest kept). */
export function agentEvents(store: Store, agentSession: number, limit: number): AgentEventRow[] {
  if (!hasAgentTables(store)) return [];
  const rows = store.stmt(
    `SELECT ${eventColumns(store)} FROM agent_events WHERE agent_session = ?
     ORDER BY position DESC LIMIT ?`,
  ).all(agentSession, limit) as unknown as AgentEventRow[];
  return rows.reverse();
}

/** Records prompt `row.prompt` of an agent session. */
export function insertAgentTurn(store: Store, agentSession: number, row: AgentTurnRow): void {
  store.stmt(
    "INSERT INTO agent_turns (agent_session, prompt, prompt_id, text, event, snapshot, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  ).run(agentSession, row.prompt, row.prompt_id, row.text, row.event, row.snapshot, row.at);
}

/** The prompts of an agent session, first first. */
export function agentTurns(store: Store, agentSession: number): AgentTurnRow[] {
  if (!hasAgentTables(store)) return [];
  return store.stmt(
    "SELECT prompt, prompt_id, text, event, snapshot, at FROM agent_turns WHERE agent_session = ? ORDER BY prompt",
  ).all(agentSession) as unknown as AgentTurnRow[];
}

/** Prompt `prompt` of an agent session, or null. */
export function agentTurn(store: Store, agentSession: number, prompt: number): AgentTurnRow | null {
  if (!hasAgentTables(store)) return null;
  const row = store.stmt(
    "SELECT prompt, prompt_id, text, event, snapshot, at FROM agent_turns WHERE agent_session = ? AND prompt = ?",
  ).get(agentSession, prompt) as AgentTurnRow | undefined;
  return row ?? null;
}

/** The prompt of an agent session with the agent's prompt id `promptId`, or null. */
export function agentTurnByPromptId(
  store: Store,
  agentSession: number,
  promptId: string,
): AgentTurnRow | null {
  if (!hasAgentTables(store)) return null;
  const row = store.stmt(
    "SELECT prompt, prompt_id, text, event, snapshot, at FROM agent_turns WHERE agent_session = ? AND prompt_id = ?",
  ).get(agentSession, promptId) as AgentTurnRow | undefined;
  return row ?? null;
}

/** The snapshots agent events created (`created = 1`): the agent's own checkpoints. */
export function agentCreatedSnapshots(store: Store): Set<string> {
  if (!hasAgentTables(store)) return new Set();
  const rows = store.stmt(
    "SELECT DISTINCT snapshot FROM agent_events WHERE created = 1",
  ).all() as unknown as { snapshot: string }[];
  return new Set(rows.map((row) => row.snapshot));
}

/**
 * The snapshots holding the workspace before each of the newest `perSession`
 * prompts of every agent session (what `prompt:N` and a resume from prompt N
 * restore).
 */
export function recentPromptSnapshots(store: Store, perSession: number): Set<string> {
  if (!hasAgentTables(store) || perSession <= 0) return new Set();
  const rows = store.stmt(
    `SELECT snapshot FROM (
       SELECT snapshot, ROW_NUMBER() OVER (PARTITION BY agent_session ORDER BY prompt DESC) AS n
       FROM agent_turns
     ) WHERE n <= ?`,
  ).all(perSession) as unknown as { snapshot: string }[];
  return new Set(rows.map((row) => row.snapshot));
}

/** Every agent session, in row order. */
export function allAgentSessions(store: Store): AgentSessionRow[] {
  if (!hasAgentTables(store)) return [];
  return store.stmt(`SELECT ${SESSION_COLUMNS} FROM agent_sessions ORDER BY seq`)
    .all() as unknown as AgentSessionRow[];
}

/** Every event of every agent session, in delivery order. */
export function allAgentEvents(store: Store): AgentEventRow[] {
  if (!hasAgentTables(store)) return [];
  return store.stmt(`SELECT ${eventColumns(store)} FROM agent_events ORDER BY seq`)
    .all() as unknown as AgentEventRow[];
}

/** Every prompt of every agent session, with its session's row number. */
export function allAgentTurns(store: Store): (AgentTurnRow & { agent_session: number })[] {
  if (!hasAgentTables(store)) return [];
  return store.stmt(
    "SELECT agent_session, prompt, prompt_id, text, event, snapshot, at FROM agent_turns ORDER BY agent_session, prompt",
  ).all() as unknown as (AgentTurnRow & { agent_session: number })[];
}
