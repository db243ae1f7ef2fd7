/**
 * Agent sessions, prompts and hook events as records of their own
 * (docs/FORMAT.md §16): what a Claude Code hook event becomes, and how the
 * prompts of an agent session are found again.
 *
 * Each agent's events are first mapped to one model (an
 * {@linkcode AgentEventKind}: Claude Code's here, the other agents' in
 * `lib/integrations/agents/`). Each event delivered is recorded once in
 * `agent_events`, keyed by the agent's own ids: `<event>:<tool_use_id>` for
 * tool events, `prompt:<prompt_id>` for a prompt that has one (Claude Code's
 * `prompt_id`, Codex's `turn_id`, Cursor's `generation_id`, OpenCode's
 * message id). An event without such an id is
 * never taken for a retry (its key is its position in the agent session):
 * equal bytes are not equal events. A delivery whose key is already recorded
 * returns the snapshot recorded the first time (`created: false`), and
 * changes nothing. Prompt N of agent session S is the N-th `UserPromptSubmit`
 * recorded for S (`agent_turns`); each agent session counts its own. The
 * transcript an event names is linked and kept (`./transcript.ts`).
 *
 * Each event is attached to the snapshot that holds the workspace after it:
 * a new one when anything changed, else the branch head it left unchanged.
 * No digest of the event's bytes is kept anywhere (a published snapshot
 * must not let anyone confirm an unrecorded prompt by guessing).
 *
 * @example
 * ```ts
 * import { parseClaudeCodeEvent } from "./agent.ts";
 * const event = parseClaudeCodeEvent(new TextEncoder().encode(JSON.stringify({
 *   session_id: "3f6c0b0e-7b1c-4a35-9a53-2b1d6b2f9e10", hook_event_name: "PostToolUse",
 *   tool_name: "Bash", tool_use_id: "toolu_01A", cwd: "/tmp",
 * })), { recordPrompts: false });
 * if (event.event !== "PostToolUse" || event.tool !== "Bash") throw new Error("parse");
 * ```
 * @module
 */
import type { JsonValue } from "../encoding/canonical_json.ts";
import { parseJson } from "../encoding/canonical_json.ts";
import { NotFoundError, quote, UsageError } from "../errors.ts";
import type { Store } from "../repository/store.ts";
import type { SkippedEntry } from "../format/tree.ts";
import { getSnapshotRow } from "../repository/snapshot_rows.ts";
import {
  agentEventByKey,
  type AgentEventRow,
  agentEvents,
  agentSessionBySeq,
  type AgentSessionRow,
  agentSessionRow,
  agentSessionsById,
  agentSessionsByPrefix,
  agentTurn,
  agentTurnByPromptId,
  type AgentTurnRow,
  agentTurns,
  insertAgentEvent,
  insertAgentTurn,
  listAgentSessions,
  touchAgentSession,
  updateAgentSession,
} from "../repository/agent_rows.ts";
import type { CreateOptions, CreateResult } from "./create.ts";
import { readTranscriptPolicy } from "../repository/transcript_policy.ts";
import { keepTranscript, readTranscript, type TranscriptMark } from "./transcript.ts";
import { getBranch, readEnvelope, selection } from "./timeline.ts";

/** The source kind of Claude Code events. */
export const CLAUDE_CODE = "claude-code";
/** The agents whose hook events are recorded (`ctxsnap hook <agent>`). */
export const AGENTS: readonly string[] = [
  "claude-code",
  "gemini-cli",
  "codex",
  "cursor",
  "opencode",
];

/**
 * What an event is in the agent-session model, whatever the agent calls it
 * (docs/FORMAT.md §16.4 maps each agent's names).
 */
export type AgentEventKind =
  | "session_start"
  | "session_end"
  | "prompt"
  | "tool_pre"
  | "tool_post"
  | "tool_error"
  | "permission"
  | "turn_end"
  | "turn_error"
  | "compact"
  | "subagent"
  | "other";

const KINDS: ReadonlySet<string> = new Set([
  "session_start",
  "session_end",
  "prompt",
  "tool_pre",
  "tool_post",
  "tool_error",
  "permission",
  "turn_end",
  "turn_error",
  "compact",
  "subagent",
  "other",
]);

/** The kind of a Claude Code event name. */
export function claudeCodeKind(event: string): AgentEventKind {
  switch (event) {
    case "SessionStart":
      return "session_start";
    case "SessionEnd":
      return "session_end";
    case "UserPromptSubmit":
      return "prompt";
    case "PreToolUse":
      return "tool_pre";
    case "PostToolUse":
      return "tool_post";
    case "PostToolUseFailure":
      return "tool_error";
    case "PermissionRequest":
      return "permission";
    case "Stop":
      return "turn_end";
    case "StopFailure":
      return "turn_error";
    case "PreCompact":
    case "PostCompact":
      return "compact";
    case "SubagentStart":
    case "SubagentStop":
      return "subagent";
    default:
      return "other";
  }
}
/** Largest hook event read (bytes). */
export const MAX_EVENT_BYTES: number = 4 * 1024 * 1024;
/** Longest prompt text kept in a reason (characters). */
const MAX_PROMPT_IN_REASON = 1000;

/** The kinds of events that carry a tool call (keyed by `tool_use_id`). */
const TOOL_KINDS: ReadonlySet<string> = new Set([
  "tool_pre",
  "tool_post",
  "tool_error",
  "permission",
]);

/** What ctxsnap keeps of one hook event, validated. */
export interface AgentEvent {
  /** The harness (one of {@linkcode AGENTS}). */
  harness: string;
  /** What the event is in the agent-session model. */
  kind: AgentEventKind;
  /** The agent's session id, or null when the event had none. */
  session_id: string | null;
  /** The event's name (`UserPromptSubmit`, `PostToolUse`, …). */
  event: string;
  /** The tool, for tool events. */
  tool: string | null;
  /** The harness's id of the tool call, if any. */
  tool_use_id: string | null;
  /** The agent's id of the prompt (turn) the event belongs to, if any. */
  prompt_id: string | null;
  /** `source` of SessionStart, `trigger` of PreCompact, `reason` of SessionEnd, if any. */
  detail: string | null;
  /** The prompt's text: only when the hook was asked to record prompts. */
  prompt: string | null;
  /** A Bash tool event's command (`tool_input.command`): only when asked to record prompts. */
  command: string | null;
  /** The directory the event happened in (absolute), or null. */
  cwd: string | null;
  /** The agent's transcript file (absolute), or null. */
  transcript_path: string | null;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const EVENT_RE = /^[A-Za-z][A-Za-z0-9]{0,63}$/;
// deno-lint-ignore no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/;

function bad(what: string): never {
  throw new UsageError(`The hook event ${what}`);
}

function optionalString(o: Record<string, unknown>, key: string): string | null {
  const value = o[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") bad(`field ${quote(key)} is not a string`);
  return value;
}

function optionalId(o: Record<string, unknown>, key: string): string | null {
  const value = optionalString(o, key);
  if (value !== null && !ID_RE.test(value)) bad(`field ${quote(key)} is not a valid id`);
  return value;
}

function optionalPath(o: Record<string, unknown>, key: string): string | null {
  const value = optionalString(o, key);
  if (
    value !== null &&
    (!value.startsWith("/") || value.length > 4096 || CONTROL_RE.test(value) ||
      !value.isWellFormed())
  ) {
    bad(`field ${quote(key)} is not an absolute path`);
  }
  return value;
}

function optionalLabel(o: Record<string, unknown>, key: string, max: number): string | null {
  const value = optionalString(o, key);
  if (value === null) return null;
  if (value.length === 0 || value.length > max || CONTROL_RE.test(value) || !value.isWellFormed()) {
    bad(`field ${quote(key)} is not a short printable string`);
  }
  return value;
}

/**
 * Parses a Claude Code hook event (JSON on the hook's standard input).
 * Every field is optional and untrusted: fields ctxsnap uses must have their
 * documented type and form, others are ignored. The event name is required.
 *
 * @throws {UsageError} On anything malformed, naming the field.
 */
export function parseClaudeCodeEvent(
  bytes: Uint8Array,
  options: { recordPrompts: boolean },
): AgentEvent {
  if (bytes.byteLength > MAX_EVENT_BYTES) bad(`is larger than ${MAX_EVENT_BYTES} bytes`);
  let value: unknown;
  try {
    // Tool inputs and responses may nest deeply and hold fractions; they are not kept.
    value = parseJson(bytes, { maxBytes: MAX_EVENT_BYTES, maxDepth: 1024, integersOnly: false });
  } catch (error) {
    bad(`is not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) bad("is not an object");
  const o = value as Record<string, unknown>;
  const event = optionalString(o, "hook_event_name");
  if (event === null) bad("has no hook_event_name");
  if (!EVENT_RE.test(event)) bad(`name ${quote(event)} is not an event name`);
  const cwd = optionalPath(o, "cwd");
  const transcript = optionalPath(o, "transcript_path");
  const prompt = optionalString(o, "prompt");
  const detailKey = event === "SessionStart"
    ? "source"
    : event === "PreCompact" || event === "PostCompact"
    ? "trigger"
    : event === "SessionEnd"
    ? "reason"
    : null;
  return {
    harness: CLAUDE_CODE,
    kind: claudeCodeKind(event),
    session_id: optionalId(o, "session_id"),
    event,
    tool: optionalLabel(o, "tool_name", 256),
    tool_use_id: optionalId(o, "tool_use_id"),
    prompt_id: optionalId(o, "prompt_id"),
    detail: detailKey === null ? null : optionalLabel(o, detailKey, 64),
    prompt: options.recordPrompts && prompt !== null && prompt.isWellFormed() ? prompt : null,
    command: options.recordPrompts ? bashCommand(o) : null,
    cwd,
    transcript_path: transcript,
  };
}

/** Longest Bash command kept (characters); a longer one is cut and ends with `…`. */
export const MAX_COMMAND_CHARS = 4096;

/** `tool_input.command` of a Bash tool event, cut to {@linkcode MAX_COMMAND_CHARS}; else null. */
function bashCommand(o: Record<string, unknown>): string | null {
  if (o.tool_name !== "Bash") return null;
  const input = o.tool_input;
  if (input === null || typeof input !== "object" || Array.isArray(input)) return null;
  const command = (input as Record<string, unknown>).command;
  if (typeof command !== "string" || !command.isWellFormed()) return null;
  return command.length > MAX_COMMAND_CHARS
    ? `${command.slice(0, MAX_COMMAND_CHARS - 1)}…`
    : command;
}

/**
 * Checks an {@linkcode AgentEvent} received from another process (a watch
 * process gets one from the hook); returns it, or throws {@linkcode UsageError}.
 */
export function validateAgentEvent(value: unknown): AgentEvent {
  if (value === null || typeof value !== "object" || Array.isArray(value)) bad("is not an object");
  const o = value as Record<string, unknown>;
  const keys = [
    "harness",
    "kind",
    "session_id",
    "event",
    "tool",
    "tool_use_id",
    "prompt_id",
    "detail",
    "prompt",
    "command",
    "cwd",
    "transcript_path",
  ];
  for (const key of Object.keys(o)) if (!keys.includes(key)) bad(`has unknown field ${quote(key)}`);
  for (const key of keys) if (!Object.hasOwn(o, key)) bad(`lacks ${quote(key)}`);
  if (typeof o.harness !== "string" || !AGENTS.includes(o.harness)) {
    bad(`harness ${quote(o.harness)} is unknown`);
  }
  if (typeof o.kind !== "string" || !KINDS.has(o.kind)) bad(`kind ${quote(o.kind)} is unknown`);
  if (typeof o.event !== "string" || !EVENT_RE.test(o.event)) bad("name is not an event name");
  const event: AgentEvent = {
    harness: o.harness,
    kind: o.kind as AgentEventKind,
    session_id: optionalId(o, "session_id"),
    event: o.event,
    tool: optionalLabel(o, "tool", 256),
    tool_use_id: optionalId(o, "tool_use_id"),
    prompt_id: optionalId(o, "prompt_id"),
    detail: optionalLabel(o, "detail", 64),
    prompt: optionalString(o, "prompt"),
    command: optionalString(o, "command"),
    cwd: optionalPath(o, "cwd"),
    transcript_path: optionalPath(o, "transcript_path"),
  };
  if (event.prompt !== null && !event.prompt.isWellFormed()) bad("prompt is not text");
  if (
    event.command !== null &&
    (event.command.length > MAX_COMMAND_CHARS || !event.command.isWellFormed())
  ) {
    bad("command is not a command");
  }
  return event;
}

/** What recording one event did, besides the snapshot (see {@linkcode recordAgentEvent}). */
export interface AgentOutcome {
  /** The agent's session id (`-` when the event had none). */
  sessionId: string;
  /** The event. */
  event: string;
  /** Its position within the agent session (1, 2, …). */
  position: number;
  /** The prompt it belongs to (for `UserPromptSubmit`, the one it submitted), or null before the first. */
  prompt: number | null;
  /** True when this delivery repeated an event already recorded (nothing was recorded again). */
  duplicate: boolean;
  /** What the snapshot left out that this agent session had not been told yet. */
  omitted: SkippedEntry[];
  /** How many paths of the last categories (`ignored`, `excluded_dir`) were left out, told once. */
  omittedMore: number;
  /** What the event recorded of its transcript, or null when it named none. */
  transcript?: TranscriptMark | null;
}

/** A snapshot made for an agent event, and what the event recorded. */
export type AgentResult = CreateResult & { agent: AgentOutcome };

/**
 * Omission reasons told path by path; `ignored` and `excluded_dir` are told
 * once per agent session as a count, `reserved` (`.git`, `.ctxsnap`) never.
 */
const TOLD_BY_PATH: ReadonlySet<string> = new Set([
  "secret",
  "secret_content",
  "too_large",
  "special_file",
  "unreadable",
  "unsafe_name",
  "changed_while_reading",
]);
const TOLD_AS_COUNT: ReadonlySet<string> = new Set(["ignored", "excluded_dir"]);
/** Most omissions remembered as told per agent session, and most characters of their list. */
const MAX_NOTIFIED = 5000;
const MAX_NOTIFIED_CHARS = 256 * 1024;
/** Events whose `systemMessage` Claude Code discards: nothing is told (or marked told) on them. */
const UNTOLD_EVENTS: ReadonlySet<string> = new Set([
  "PreCompact",
  "PostCompact",
  "SessionEnd",
  "StopFailure",
]);

class DuplicateDelivery extends Error {}

/** The key that makes a redelivery of `event` a retry, or null when the agent gives no id. */
function idKey(event: AgentEvent): string | null {
  if (TOOL_KINDS.has(event.kind) && event.tool_use_id !== null) {
    return `${event.event}:${event.tool_use_id}`;
  }
  if (event.kind === "prompt" && event.prompt_id !== null) {
    return `prompt:${event.prompt_id}`;
  }
  return null;
}

function reasonOf(event: AgentEvent): string {
  let reason = event.tool === null ? event.event : `${event.event} ${event.tool}`;
  if (event.detail !== null) reason += ` (${event.detail})`;
  if (event.prompt !== null) {
    const text = event.prompt.length > MAX_PROMPT_IN_REASON
      ? `${event.prompt.slice(0, MAX_PROMPT_IN_REASON)}…`
      : event.prompt;
    reason += `: ${text}`;
  }
  return reason.slice(0, 1024);
}

async function duplicateResult(store: Store, row: AgentEventRow): Promise<AgentResult> {
  let envelope;
  try {
    envelope = await readEnvelope(store, row.snapshot);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    throw new NotFoundError(
      `This event was recorded before, in snapshot ${row.snapshot.slice(0, 12)}, since forgotten`,
    );
  }
  const session = agentSessionBySeq(store, row.agent_session);
  return {
    id: row.snapshot,
    envelope,
    created: false,
    capture: null,
    operation: null,
    secrets: [],
    agent: {
      sessionId: session?.session_id ?? "-",
      event: row.kind,
      position: row.position,
      prompt: row.prompt,
      duplicate: true,
      omitted: [],
      omittedMore: 0,
    },
  };
}

/** The omissions of `tree` this agent session was not told of yet, and the new told set. */
function newOmissions(
  skipped: readonly SkippedEntry[],
  notifiedText: string,
): { omitted: SkippedEntry[]; more: number; notified: string } {
  let told: string[];
  try {
    const parsed = JSON.parse(notifiedText);
    told = Array.isArray(parsed) ? parsed.filter((x) => typeof x === "string") : [];
  } catch {
    told = [];
  }
  const known = new Set(told);
  let chars = notifiedText.length;
  const omitted: SkippedEntry[] = [];
  let more = 0;
  const counted = new Set<string>();
  for (const entry of skipped) {
    if (TOLD_BY_PATH.has(entry.reason)) {
      const key = `${entry.reason}\t${entry.path}`;
      if (known.has(key)) continue;
      omitted.push(entry);
      if (told.length < MAX_NOTIFIED && chars + key.length + 4 <= MAX_NOTIFIED_CHARS) {
        told.push(key);
        known.add(key);
        chars += key.length + 4;
      }
    } else if (TOLD_AS_COUNT.has(entry.reason)) {
      const key = `${entry.reason}\t*`;
      if (known.has(key)) continue;
      more += 1;
      counted.add(key);
    }
  }
  for (const key of counted) told.push(key);
  return { omitted, more, notified: JSON.stringify(told) };
}

/**
 * Records `event` with a checkpoint: `create` (`createSnapshot` with the
 * caller's capture) is called with `options` plus the event's reason and
 * `facets.metadata.agent`, and inside its transaction the event, its agent
 * session and (for a prompt) its turn are recorded against the snapshot it
 * returns. A redelivered event (same agent ids) returns the first delivery's
 * snapshot and records nothing. `skippedOf`, when given, answers the skipped
 * records of a tree its capture just made (or null), so telling the agent
 * session what was left out does not read the whole tree back.
 */
export async function recordAgentEvent(
  store: Store,
  options: CreateOptions,
  event: AgentEvent,
  create: (options: CreateOptions) => Promise<CreateResult>,
  skippedOf?: (treeId: string) => SkippedEntry[] | null,
): Promise<AgentResult> {
  if (event.session_id === null) {
    // Without the agent's session nothing can be numbered or named: never a session "-" that
    // would then stand for the latest one.
    throw new UsageError(`The ${quote(event.event)} event has no session_id: nothing recorded`, {
      hint: "a harness's hook events carry the agent session's id (Claude Code: session_id)",
    });
  }
  const sessionId = event.session_id;
  const key = idKey(event);
  const lookup = (): AgentEventRow | null => {
    if (key === null) return null;
    const row = agentSessionRow(store, event.harness, sessionId);
    return row === null ? null : agentEventByKey(store, row.seq, key);
  };
  const seen = lookup();
  if (seen !== null) return await duplicateResult(store, seen);
  const sel = selection(store, options.session, options.branch);
  // The transcript is read before the write transaction (a file read holds no lock).
  const policy = event.transcript_path === null ? null : readTranscriptPolicy(store.dir);
  const read = event.transcript_path === null
    ? null
    : readTranscript(event.harness, event.transcript_path, policy!);
  const agentMeta: Record<string, JsonValue> = {
    harness: event.harness,
    session_id: event.session_id,
    event: event.event,
    prompt: null,
  };
  let headBefore: string | null = null;
  let position = 0;
  let prompt: number | null = null;
  let prompts = 0;
  let outcome: AgentOutcome | null = null;
  try {
    const result = await create({
      ...options,
      source: null,
      reason: reasonOf(event),
      metadata: { ...(options.metadata ?? {}), agent: agentMeta },
      prepare: () => {
        options.prepare?.();
        if (lookup() !== null) throw new DuplicateDelivery();
        const row = agentSessionRow(store, event.harness, sessionId);
        headBefore = getBranch(store, sel.session, sel.branch)?.head ?? null;
        position = (row?.events ?? 0) + 1;
        prompts = row?.prompts ?? 0;
        if (event.kind === "prompt") {
          prompts += 1;
          prompt = prompts;
        } else {
          const turn = row !== null && event.prompt_id !== null
            ? agentTurnByPromptId(store, row.seq, event.prompt_id)
            : null;
          prompt = turn?.prompt ?? (prompts === 0 ? null : prompts);
        }
        agentMeta.prompt = prompt;
      },
      beforeCommit: (envelope) => {
        options.beforeCommit?.(envelope);
        const at = Date.now();
        const row = touchAgentSession(store, {
          harness: event.harness,
          session_id: sessionId,
          ctx_session: sel.session,
          cwd: event.cwd,
          transcript_path: event.transcript_path,
          at,
        });
        const mark = read === null ? null : keepTranscript(store, row.seq, read, policy!, at);
        const seq = insertAgentEvent(store, {
          transcript_path: mark?.path ?? null,
          transcript_len: mark?.len ?? null,
          transcript_sha256: mark?.sha256 ?? null,
          transcript_chain: mark?.chain ?? null,
          model_kind: event.kind,
          agent_session: row.seq,
          position,
          key: key ?? `#${position}`,
          kind: event.event,
          tool: event.tool,
          tool_use_id: event.tool_use_id,
          command: event.command,
          prompt,
          snapshot: envelope.id,
          created: envelope.id === headBefore ? 0 : 1,
          at,
        });
        if (event.kind === "prompt") {
          insertAgentTurn(store, row.seq, {
            prompt: prompt!,
            prompt_id: event.prompt_id,
            text: event.prompt,
            event: seq,
            snapshot: envelope.id,
            at,
          });
        }
        const workspace = envelope.body.workspace;
        const skipped = workspace === null || workspace.skipped === 0 ||
            UNTOLD_EVENTS.has(event.event)
          ? []
          // The capture's own records when the caller kept them (a watch process):
          // reading them back from the store expands every directory of the tree.
          : skippedOf?.(workspace.tree) ?? store.getTree(workspace.tree).skipped;
        const told = UNTOLD_EVENTS.has(event.event)
          ? { omitted: [], more: 0, notified: row.notified }
          : newOmissions(skipped, row.notified);
        updateAgentSession(store, row.seq, {
          prompts,
          events: position,
          end_reason: event.kind === "session_end" ? (event.detail ?? "other") : null,
          notified: told.notified,
        });
        outcome = {
          sessionId,
          event: event.event,
          position,
          prompt,
          duplicate: false,
          omitted: told.omitted,
          omittedMore: told.more,
          transcript: mark,
        };
      },
    });
    return { ...result, agent: outcome! };
  } catch (error) {
    if (!(error instanceof DuplicateDelivery)) throw error;
    // Another process recorded the same event meanwhile: its snapshot stands.
    return await duplicateResult(store, lookup()!);
  }
}

/** An agent session and its prompts (see {@linkcode agentPrompts}). */
export interface AgentPrompts {
  /** The agent session. */
  session: AgentSessionRow;
  /** Its prompts, first first: each names the state before it (`snapshot`). */
  prompts: AgentTurnRow[];
}

/**
 * The agent session `spec` names (its id, or a unique prefix of at least 4
 * characters), or when `spec` is null the latest: the one with the newest
 * event among those that have prompts (a session that only started has none
 * to name), else the one with the newest event.
 *
 * @throws {NotFoundError} When there is none. @throws {UsageError} When a prefix is ambiguous.
 */
export function findAgentSession(store: Store, spec: string | null): AgentSessionRow {
  if (spec === null) {
    const latest = listAgentSessions(store, 1)[0];
    if (latest === undefined) {
      throw new NotFoundError("No agent session is recorded in this store", {
        hint: "the agent hook records them: see the README's Claude Code section",
      });
    }
    return latest;
  }
  const exact = agentSessionsById(store, spec);
  if (exact.length === 1) return exact[0]!;
  if (exact.length > 1) {
    throw new UsageError(`Agent session ${quote(spec)} is recorded for more than one agent`, {
      hint: `the agents: ${exact.map((s) => s.harness).join(", ")}`,
    });
  }
  const found = spec.length >= 4 ? agentSessionsByPrefix(store, spec, 2) : [];
  if (found.length === 1) return found[0]!;
  if (found.length > 1) {
    throw new UsageError(`Agent session prefix ${quote(spec)} names more than one session`, {
      hint: "give more characters of the session id",
    });
  }
  throw new NotFoundError(`No agent session ${quote(spec)} is recorded in this store`, {
    hint: "`ctxsnap list --agent-session ID` takes the session_id of the hook's events",
  });
}

/** The prompts of the agent session `spec` names (see {@linkcode findAgentSession}). */
export function agentPrompts(store: Store, spec: string | null): AgentPrompts {
  const session = findAgentSession(store, spec);
  return { session, prompts: agentTurns(store, session.seq) };
}

/** Prompt `prompt` of an agent session, or null. */
export function agentPrompt(
  store: Store,
  session: AgentSessionRow,
  prompt: number,
): AgentTurnRow | null {
  return agentTurn(store, session.seq, prompt);
}

/** The events of an agent session, oldest first (the newest `limit`). */
export function agentSessionEvents(
  store: Store,
  session: AgentSessionRow,
  limit: number,
): AgentEventRow[] {
  return agentEvents(store, session.seq, limit);
}

/**
 * The snapshot holding the state before prompt `prompt` of the agent
 * session `spec` names (the latest when null).
 *
 * @throws {NotFoundError} When there is no such session or prompt, saying how many it has.
 */
export function snapshotBeforePrompt(store: Store, spec: string | null, prompt: number): string {
  const session = findAgentSession(store, spec);
  const turn = agentTurn(store, session.seq, prompt);
  if (turn === null) {
    throw new NotFoundError(
      `Agent session ${quote(session.session_id)} has no prompt ${prompt}: it has ${
        session.prompts === 1 ? "1 prompt" : `${session.prompts} prompts`
      }`,
      { hint: `list them with \`ctxsnap list --prompts --agent-session ${session.session_id}\`` },
    );
  }
  if (getSnapshotRow(store, turn.snapshot) === null) {
    throw new NotFoundError(
      `Prompt ${prompt} of agent session ${quote(session.session_id)} named snapshot ${
        quote(turn.snapshot.slice(0, 12))
      }, which was forgotten (by \`forget\` or the retention policy)`,
      { hint: "`ctxsnap list --prompts` marks the prompts whose state is still kept" },
    );
  }
  return turn.snapshot;
}
