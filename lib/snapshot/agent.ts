/**
 * Checkpoints of agent harness events (issue 14 item 1): what a Claude Code
 * hook event (docs/FORMAT.md §16) becomes in a snapshot, and how the
 * snapshots of one agent session are found again.
 *
 * An event is recorded with the source `claude-code:<session>:<event>:<key>`
 * (so a retried hook returns the snapshot it made the first time), the
 * reason `<event> [<tool>]` (and, when asked, the prompt's text), the agent
 * session in `facets.metadata.agent` and the number of the user's prompt the
 * agent is working on in `cursors.message` (the prompt submitted at
 * `UserPromptSubmit` counts from that event on). The key is the harness's
 * own id where the event has one (`tool_use_id`, `prompt_id`), else the
 * prompt number and a digest of the event's bytes: a retry sends the same
 * bytes.
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
import { quote, UsageError } from "../errors.ts";
import { sha256Hex } from "../crypto/hash.ts";
import type { Store } from "../store/store.ts";
import { snapshotsBySourcePrefix } from "../store/snapshot_rows.ts";
import type { ContextInput, CreateOptions } from "./create.ts";
import { selection } from "./timeline.ts";

/** The source kind of Claude Code events. */
export const CLAUDE_CODE = "claude-code";
/** Largest hook event read (bytes). */
export const MAX_EVENT_BYTES: number = 4 * 1024 * 1024;
/** Longest prompt text kept in a reason (characters). */
const MAX_PROMPT_IN_REASON = 1000;

/** The events a harness sends that carry a tool call (keyed by `tool_use_id`). */
const TOOL_EVENTS: ReadonlySet<string> = new Set([
  "PreToolUse",
  "PostToolUse",
  "PostToolUseFailure",
  "PermissionRequest",
]);

/** What ctxsnap keeps of one hook event, validated. */
export interface AgentEvent {
  /** The harness (`claude-code`). */
  harness: string;
  /** The agent's session id, or null when the event had none. */
  session_id: string | null;
  /** The event's name (`UserPromptSubmit`, `PostToolUse`, …). */
  event: string;
  /** The tool, for tool events. */
  tool: string | null;
  /** The harness's id of the tool call, if any. */
  tool_use_id: string | null;
  /** The harness's id of the prompt, if any. */
  prompt_id: string | null;
  /** `source` of SessionStart, `trigger` of PreCompact, `reason` of SessionEnd, if any. */
  detail: string | null;
  /** The prompt's text: only when the hook was asked to record prompts. */
  prompt: string | null;
  /** SHA-256 hex of the event's bytes (a retry sends the same bytes). */
  digest: string;
  /** The directory the event happened in (absolute), or null. */
  cwd: string | null;
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
  const cwd = optionalString(o, "cwd");
  if (cwd !== null && (!cwd.startsWith("/") || cwd.length > 4096 || cwd.includes("\0"))) {
    bad('field "cwd" is not an absolute path');
  }
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
    session_id: optionalId(o, "session_id"),
    event,
    tool: optionalLabel(o, "tool_name", 256),
    tool_use_id: optionalId(o, "tool_use_id"),
    prompt_id: optionalId(o, "prompt_id"),
    detail: detailKey === null ? null : optionalLabel(o, detailKey, 64),
    prompt: options.recordPrompts && prompt !== null && prompt.isWellFormed() ? prompt : null,
    digest: sha256Hex(bytes),
    cwd,
  };
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
    "session_id",
    "event",
    "tool",
    "tool_use_id",
    "prompt_id",
    "detail",
    "prompt",
    "digest",
    "cwd",
  ];
  for (const key of Object.keys(o)) if (!keys.includes(key)) bad(`has unknown field ${quote(key)}`);
  for (const key of keys) if (!Object.hasOwn(o, key)) bad(`lacks ${quote(key)}`);
  if (o.harness !== CLAUDE_CODE) bad(`harness ${quote(o.harness)} is unknown`);
  if (typeof o.event !== "string" || !EVENT_RE.test(o.event)) bad("name is not an event name");
  if (typeof o.digest !== "string" || !/^[0-9a-f]{64}$/.test(o.digest)) bad("digest is invalid");
  const event: AgentEvent = {
    harness: CLAUDE_CODE,
    session_id: optionalId(o, "session_id"),
    event: o.event,
    tool: optionalLabel(o, "tool", 256),
    tool_use_id: optionalId(o, "tool_use_id"),
    prompt_id: optionalId(o, "prompt_id"),
    detail: optionalLabel(o, "detail", 64),
    prompt: optionalString(o, "prompt"),
    digest: o.digest,
    cwd: optionalString(o, "cwd"),
  };
  if (event.prompt !== null && !event.prompt.isWellFormed()) bad("prompt is not text");
  return event;
}

/** What a snapshot of an agent event records besides the workspace and session. */
export interface AgentCheckpoint {
  /** The idempotency source. */
  source: { kind: string; id: string };
  /** The reason. */
  reason: string;
  /** `facets.metadata` entries. */
  metadata: Record<string, JsonValue>;
  /** The context input (the prompt number in `cursors.message`). */
  context: ContextInput;
}

/** One snapshot of an agent session (see {@linkcode agentSnapshots}). */
export interface AgentSnapshotRow {
  /** Snapshot id. */
  id: string;
  /** The event (from the source). */
  event: string;
  /** The source's id. */
  source_id: string;
}

/**
 * The snapshots of agent session `sessionId` in the ctxsnap session
 * `session`, oldest first (those whose source is `claude-code:<sessionId>:…`).
 */
export function agentSnapshots(
  store: Store,
  session: string | null,
  sessionId: string,
): AgentSnapshotRow[] {
  const prefix = `${sessionId}:`;
  return snapshotsBySourcePrefix(store, CLAUDE_CODE, prefix, session).map((row) => ({
    id: row.id,
    source_id: row.source_id,
    event: row.source_id.slice(prefix.length).split(":")[0] ?? "",
  }));
}

/**
 * What to record for `event` in the ctxsnap session `session`: its source,
 * reason, metadata and prompt number (see the module doc).
 */
export function agentCheckpoint(store: Store, session: string, event: AgentEvent): AgentCheckpoint {
  const sessionId = event.session_id ?? "-";
  const history = agentSnapshots(store, session, sessionId);
  const prompts = history.filter((row) => row.event === "UserPromptSubmit");
  let prompt = prompts.length;
  let key: string;
  const short = event.digest.slice(0, 16);
  if (TOOL_EVENTS.has(event.event) && event.tool_use_id !== null) {
    key = event.tool_use_id;
  } else if (event.event === "UserPromptSubmit") {
    prompt += 1;
    if (event.prompt_id !== null) {
      key = event.prompt_id;
    } else {
      // Without the harness's id: the same bytes as the latest recorded event
      // of this agent session, and it a prompt, is a retry of that prompt.
      const last = history[history.length - 1];
      const retry = last !== undefined && last.event === "UserPromptSubmit" &&
        last.source_id.endsWith(`.${short}`);
      if (retry) {
        prompt -= 1;
        key = last.source_id.slice(`${sessionId}:UserPromptSubmit:`.length);
      } else key = `${prompt}.${short}`;
    }
  } else {
    key = `${prompt}.${event.prompt_id === null ? "" : `${event.prompt_id}.`}${short}`;
  }
  const id = `${sessionId}:${event.event}:${key}`;
  if (id.length > 256) throw new UsageError("The hook event's ids are too long to key it");
  let reason = event.tool === null ? event.event : `${event.event} ${event.tool}`;
  if (event.detail !== null) reason += ` (${event.detail})`;
  if (event.prompt !== null) {
    const text = event.prompt.length > MAX_PROMPT_IN_REASON
      ? `${event.prompt.slice(0, MAX_PROMPT_IN_REASON)}…`
      : event.prompt;
    reason += `: ${text}`;
  }
  return {
    source: { kind: CLAUDE_CODE, id },
    reason: reason.slice(0, 1024),
    metadata: {
      agent: { harness: CLAUDE_CODE, session_id: event.session_id },
    },
    context: { cursors: { message: prompt === 0 ? null : prompt } },
  };
}

/**
 * `options` for `createSnapshot` with what `event` records (its source,
 * reason, metadata and prompt number) in the session `options` names.
 */
export function withAgentEvent<T extends CreateOptions>(
  store: Store,
  options: T,
  event: AgentEvent,
): T {
  const sel = selection(store, options.session, options.branch);
  const agent = agentCheckpoint(store, sel.session, event);
  const context: ContextInput = { ...(options.context ?? {}) };
  context.cursors = { ...(context.cursors ?? {}), ...agent.context.cursors };
  return {
    ...options,
    source: agent.source,
    reason: agent.reason,
    metadata: { ...(options.metadata ?? {}), ...agent.metadata },
    context,
  };
}
