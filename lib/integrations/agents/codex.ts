/**
 * Codex hook events (`ctxsnap hook codex`) mapped to the agent-session
 * model (docs/FORMAT.md §16.4). A prompt is named by Codex's `turn_id`, a
 * tool call by `tool_use_id`: a redelivery with the same ids is a retry.
 * Unknown event names are refused.
 *
 * @example
 * ```ts
 * import { parseCodexEvent } from "./codex.ts";
 * const event = parseCodexEvent(new TextEncoder().encode(JSON.stringify({
 *   session_id: "019d", turn_id: "t1", hook_event_name: "UserPromptSubmit", cwd: "/tmp",
 * })), { recordPrompts: false });
 * if (event.kind !== "prompt" || event.prompt_id !== "t1") throw new Error("parse");
 * ```
 * @module
 */
import type { AgentEvent, AgentEventKind } from "../../history/agent.ts";
import { quote } from "../../errors.ts";
import { Payload } from "./_payload.ts";

/** The agent's name. */
export const CODEX = "codex";

const KINDS: Readonly<Record<string, AgentEventKind>> = {
  SessionStart: "session_start",
  SessionEnd: "session_end",
  UserPromptSubmit: "prompt",
  PreToolUse: "tool_pre",
  PostToolUse: "tool_post",
  PermissionRequest: "permission",
  Stop: "turn_end",
  StopFailure: "turn_error",
  Interrupt: "turn_error",
  PreCompact: "compact",
  PostCompact: "compact",
  SubagentStart: "subagent",
  SubagentStop: "subagent",
};

/** Parses a Codex hook event. @throws {UsageError} On anything it cannot map. */
export function parseCodexEvent(
  bytes: Uint8Array,
  options: { recordPrompts: boolean },
): AgentEvent {
  const p: Payload = Payload.parse(CODEX, bytes);
  const event = p.eventName("hook_event_name");
  const kind = KINDS[event];
  if (kind === undefined) p.bad(`${quote(event)} is not an event ctxsnap maps`);
  const prompt = kind === "prompt" ? p.prompt("prompt") : null;
  return {
    harness: CODEX,
    kind,
    session_id: p.id("session_id"),
    event,
    tool: p.label("tool_name", 256),
    tool_use_id: p.id("tool_use_id"),
    prompt_id: p.id("turn_id"),
    detail: event === "SessionStart"
      ? p.label("source", 64)
      : event === "SessionEnd"
      ? p.label("reason", 64)
      : kind === "compact"
      ? p.label("trigger", 64)
      : null,
    prompt: options.recordPrompts ? prompt : null,
    cwd: p.path("cwd"),
    transcript_path: p.path("transcript_path", true),
    command: null, // Bash commands are kept for Claude Code only (its tool_input is confirmed)
  };
}
