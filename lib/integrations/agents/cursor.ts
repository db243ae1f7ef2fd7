/**
 * Cursor hook events (`ctxsnap hook cursor`) mapped to the agent-session
 * model (docs/FORMAT.md §16.4). The agent session is `conversation_id`; a
 * prompt is named by `generation_id` (that it changes with each user
 * message is unconfirmed); a tool call by `tool_use_id` where Cursor gives
 * one (`preToolUse`, `postToolUse`, `postToolUseFailure`), so shell, MCP and
 * file events are never taken for retries. The directory is `cwd`, else the
 * first of `workspace_roots`. Unknown event names are refused.
 *
 * @example
 * ```ts
 * import { cursorAnswer, parseCursorEvent } from "./cursor.ts";
 * const event = parseCursorEvent(new TextEncoder().encode(JSON.stringify({
 *   conversation_id: "c1", generation_id: "g1", hook_event_name: "beforeShellExecution",
 *   command: "ls", cwd: "/tmp",
 * })), { recordPrompts: false });
 * if (event.kind !== "tool_pre" || cursorAnswer(event.event) !== '{"permission":"allow"}') {
 *   throw new Error("parse");
 * }
 * ```
 * @module
 */
import type { AgentEvent, AgentEventKind } from "../../history/agent.ts";
import { quote } from "../../errors.ts";
import { Payload } from "./_payload.ts";

/** The agent's name. */
export const CURSOR = "cursor";

const KINDS: Readonly<Record<string, [AgentEventKind, string | null]>> = {
  sessionStart: ["session_start", null],
  sessionEnd: ["session_end", null],
  beforeSubmitPrompt: ["prompt", null],
  preToolUse: ["tool_pre", null],
  postToolUse: ["tool_post", null],
  postToolUseFailure: ["tool_error", null],
  beforeShellExecution: ["tool_pre", "Shell"],
  afterShellExecution: ["tool_post", "Shell"],
  beforeMCPExecution: ["tool_pre", null],
  afterMCPExecution: ["tool_post", null],
  beforeReadFile: ["tool_pre", "Read"],
  afterFileEdit: ["tool_post", "Edit"],
  stop: ["turn_end", null],
  preCompact: ["compact", null],
  subagentStart: ["subagent", null],
  subagentStop: ["subagent", null],
};

/** Events whose answer is a permission (always `allow`: ctxsnap never blocks). */
const PERMISSION_EVENTS: ReadonlySet<string> = new Set([
  "preToolUse",
  "beforeShellExecution",
  "beforeMCPExecution",
  "beforeReadFile",
]);

/** What the hook prints for Cursor's event `event` (never a refusal). */
export function cursorAnswer(event: string): string {
  if (PERMISSION_EVENTS.has(event)) return '{"permission":"allow"}';
  if (event === "beforeSubmitPrompt") return '{"continue":true}';
  return "{}";
}

/** Parses a Cursor hook event. @throws {UsageError} On anything it cannot map. */
export function parseCursorEvent(
  bytes: Uint8Array,
  options: { recordPrompts: boolean },
): AgentEvent {
  const p: Payload = Payload.parse(CURSOR, bytes);
  const event = p.eventName("hook_event_name");
  const mapped = KINDS[event];
  if (mapped === undefined) p.bad(`${quote(event)} is not an event ctxsnap maps`);
  let [kind, impliedTool] = mapped;
  const status = event === "stop" ? p.label("status", 64) : null;
  if (status === "error") kind = "turn_error";
  const prompt = kind === "prompt" ? p.prompt("prompt") : null;
  const generic = event === "preToolUse" || event === "postToolUse" ||
    event === "postToolUseFailure";
  return {
    harness: CURSOR,
    kind,
    session_id: p.id("conversation_id"),
    event,
    tool: impliedTool ?? (kind.startsWith("tool_") ? p.label("tool_name", 256) : null),
    tool_use_id: generic ? p.id("tool_use_id") : null,
    prompt_id: p.id("generation_id"),
    detail: status ?? (event === "sessionEnd" ? p.label("reason", 64) : null),
    prompt: options.recordPrompts ? prompt : null,
    cwd: p.path("cwd") ?? p.firstPath("workspace_roots"),
    transcript_path: p.path("transcript_path", true),
    command: null, // Bash commands are kept for Claude Code only (its tool_input is confirmed)
  };
}
