/**
 * Gemini CLI hook events (`ctxsnap hook gemini-cli`) mapped to the
 * agent-session model (docs/FORMAT.md §16.4). Gemini CLI gives no prompt or
 * tool-call id to hooks, so its prompts are numbered by `BeforeAgent` (once
 * per prompt) and no delivery is ever taken for a retry. Events the
 * adapter cannot map (`BeforeModel`, `AfterModel`, `BeforeToolSelection`,
 * `Notification`, unknown names) are refused.
 *
 * @example
 * ```ts
 * import { parseGeminiEvent } from "./gemini_cli.ts";
 * const event = parseGeminiEvent(new TextEncoder().encode(JSON.stringify({
 *   session_id: "a1b2", hook_event_name: "BeforeAgent", cwd: "/tmp", prompt: "hi",
 * })), { recordPrompts: true });
 * if (event.kind !== "prompt" || event.prompt !== "hi") throw new Error("parse");
 * ```
 * @module
 */
import type { AgentEvent, AgentEventKind } from "../../history/agent.ts";
import { quote } from "../../errors.ts";
import { Payload } from "./_payload.ts";

/** The agent's name. */
export const GEMINI_CLI = "gemini-cli";

const KINDS: Readonly<Record<string, AgentEventKind>> = {
  SessionStart: "session_start",
  SessionEnd: "session_end",
  BeforeAgent: "prompt",
  BeforeTool: "tool_pre",
  AfterTool: "tool_post",
  AfterAgent: "turn_end",
  PreCompress: "compact",
};

/** Parses a Gemini CLI hook event. @throws {UsageError} On anything it cannot map. */
export function parseGeminiEvent(
  bytes: Uint8Array,
  options: { recordPrompts: boolean },
): AgentEvent {
  const p: Payload = Payload.parse(GEMINI_CLI, bytes);
  const event = p.eventName("hook_event_name");
  let kind = KINDS[event];
  if (kind === undefined) p.bad(`${quote(event)} is not an event ctxsnap maps`);
  const response = event === "AfterTool" ? p.object("tool_response") : null;
  if (response !== null && response.string("error") !== null) kind = "tool_error";
  const prompt = kind === "prompt" ? p.prompt("prompt") : null;
  return {
    harness: GEMINI_CLI,
    kind,
    session_id: p.id("session_id"),
    event,
    tool: kind.startsWith("tool_") ? p.label("tool_name", 256) : null,
    tool_use_id: null,
    prompt_id: null,
    detail: event === "SessionStart"
      ? p.label("source", 64)
      : event === "SessionEnd"
      ? p.label("reason", 64)
      : event === "PreCompress"
      ? p.label("trigger", 64)
      : null,
    prompt: options.recordPrompts ? prompt : null,
    cwd: p.path("cwd"),
    transcript_path: p.path("transcript_path", true),
    command: null, // Bash commands are kept for Claude Code only (its tool_input is confirmed)
  };
}
