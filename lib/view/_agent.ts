/**
 * The agent part of the timeline data (`agent_sessions`, docs/FORMAT.md
 * §14): each agent session with its prompts, each prompt with the events
 * recorded for it (tool, Bash command, the snapshot after it), its
 * conversation slice when one is kept, and the command that resumes from
 * the state before it.
 *
 * From a store it reads the agent tables (local records: prompt text and
 * commands are there only when the hook was asked to keep them); from a
 * published file, which carries no such records, it groups the snapshots by
 * their signed `facets.metadata.agent` (events that changed nothing made no
 * snapshot there, and no text is known).
 *
 * @example
 * ```ts
 * import { agentOfBody } from "./_agent.ts";
 * const agent = agentOfBody({ agent: { harness: "claude-code", session_id: "s1", event: "Stop", prompt: 2 } });
 * if (agent?.prompt !== 2) throw new Error("metadata");
 * ```
 * @module
 */
import type { JsonValue } from "../encoding/canonical_json.ts";
import type { Store } from "../repository/store.ts";
import { allAgentEvents, allAgentSessions, allAgentTurns } from "../repository/agent_rows.ts";
import type {
  ConversationSource,
  ViewAgentEvent,
  ViewAgentSession,
  ViewPrompt,
  ViewSnapshot,
  ViewSnapshotAgent,
} from "./model.ts";

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The lane an agent session's snapshots are drawn in. */
export function agentLane(harness: string, sessionId: string): string {
  return `agent:${harness}/${sessionId}`;
}

/** The command that resumes agent session `sessionId` from the state before prompt `prompt`. */
export function resumeCommand(sessionId: string, prompt: number): string {
  return `ctxsnap resume --agent-session ${sessionId} --prompt ${prompt}`;
}

/** The agent event a body's `facets.metadata` names, checked for shape; else null. */
export function agentOfBody(metadata: Record<string, JsonValue>): ViewSnapshotAgent | null {
  const agent = metadata.agent;
  if (agent === null || typeof agent !== "object" || Array.isArray(agent)) return null;
  const { harness, session_id, event, prompt } = agent as Record<string, JsonValue>;
  if (typeof harness !== "string" || !/^[a-z][a-z0-9-]{0,31}$/.test(harness)) return null;
  if (typeof session_id !== "string" || !ID_RE.test(session_id)) return null;
  if (typeof event !== "string" || !/^[A-Za-z][A-Za-z0-9]{0,63}$/.test(event)) return null;
  if (prompt !== null && !(Number.isSafeInteger(prompt) && (prompt as number) >= 1)) return null;
  return { harness, session_id, event, prompt: prompt as number | null };
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Agent sessions from a store's records, limited to the snapshots in view. */
export function agentSessionsFromStore(
  store: Store,
  snapshots: readonly ViewSnapshot[],
  conversation: ConversationSource | undefined,
): ViewAgentSession[] {
  const inView = new Set(snapshots.map((s) => s.id));
  const sessions = allAgentSessions(store);
  if (sessions.length === 0) return [];
  const events = new Map<number, ViewAgentEvent[]>();
  for (const row of allAgentEvents(store)) {
    if (!inView.has(row.snapshot)) continue;
    const list = events.get(row.agent_session) ?? [];
    list.push({
      position: row.position,
      kind: row.kind,
      tool: row.tool,
      command: row.command ?? null,
      prompt: row.prompt,
      snapshot: row.snapshot,
      created: row.created === 1,
      at: iso(row.at),
    });
    events.set(row.agent_session, list);
  }
  const turns = new Map<
    number,
    Map<number, { text: string | null; snapshot: string; at: number }>
  >();
  for (const row of allAgentTurns(store)) {
    const map = turns.get(row.agent_session) ?? new Map();
    map.set(row.prompt, { text: row.text, snapshot: row.snapshot, at: row.at });
    turns.set(row.agent_session, map);
  }
  const out: ViewAgentSession[] = [];
  for (const session of sessions) {
    const own = events.get(session.seq) ?? [];
    const promptTurns = turns.get(session.seq) ?? new Map();
    const prompts = new Map<number, ViewPrompt>();
    const promptOf = (n: number): ViewPrompt => {
      let p = prompts.get(n);
      if (p === undefined) {
        const turn = promptTurns.get(n);
        p = {
          prompt: n,
          text: turn?.text ?? null,
          at: turn === undefined ? null : iso(turn.at),
          before: turn !== undefined && inView.has(turn.snapshot) ? turn.snapshot : null,
          events: [],
          conversation: conversation?.(session.harness, session.session_id, n) ?? null,
          resume: resumeCommand(session.session_id, n),
        };
        prompts.set(n, p);
      }
      return p;
    };
    const early: ViewAgentEvent[] = [];
    for (const event of own) {
      if (event.prompt === null) early.push(event);
      else promptOf(event.prompt).events.push(event);
    }
    if (prompts.size === 0 && early.length === 0) continue;
    out.push({
      harness: session.harness,
      session_id: session.session_id,
      lane: agentLane(session.harness, session.session_id),
      ctx_session: session.ctx_session,
      first_event_at: iso(session.first_event_at),
      last_event_at: iso(session.last_event_at),
      end_reason: session.end_reason,
      from_records: true,
      before_first_prompt: early,
      prompts: [...prompts.values()].sort((a, b) => a.prompt - b.prompt),
    });
  }
  return out;
}

/** Agent sessions from the snapshots' signed metadata alone (a published file). */
export function agentSessionsFromSnapshots(
  snapshots: readonly ViewSnapshot[],
): ViewAgentSession[] {
  const sessions = new Map<string, ViewAgentSession>();
  for (const s of snapshots) {
    const a = s.agent;
    if (a === null) continue;
    const lane = agentLane(a.harness, a.session_id);
    let session = sessions.get(lane);
    if (session === undefined) {
      session = {
        harness: a.harness,
        session_id: a.session_id,
        lane,
        ctx_session: s.session,
        first_event_at: s.created_at,
        last_event_at: s.created_at,
        end_reason: null,
        from_records: false,
        before_first_prompt: [],
        prompts: [],
      };
      sessions.set(lane, session);
    }
    session.last_event_at = s.created_at;
    const event: ViewAgentEvent = {
      position: 0,
      kind: a.event,
      tool: null,
      command: null,
      prompt: a.prompt,
      snapshot: s.id,
      created: true,
      at: s.created_at,
    };
    if (a.prompt === null) {
      session.before_first_prompt.push(event);
      continue;
    }
    let p = session.prompts.find((x) => x.prompt === a.prompt);
    if (p === undefined) {
      p = {
        prompt: a.prompt,
        text: null,
        at: a.event === "UserPromptSubmit" ? s.created_at : null,
        before: a.event === "UserPromptSubmit" ? s.id : null,
        events: [],
        conversation: null,
        resume: resumeCommand(a.session_id, a.prompt),
      };
      session.prompts.push(p);
    }
    p.events.push(event);
  }
  for (const session of sessions.values()) session.prompts.sort((a, b) => a.prompt - b.prompt);
  return [...sessions.values()];
}
