/**
 * OpenCode plugin events (`ctxsnap hook opencode`) mapped to the
 * agent-session model (docs/FORMAT.md §16.4). OpenCode has no command
 * hooks: the plugin `ctxsnap hook install opencode` writes sends
 * `{hook_event_name, directory, data}` on standard input. The agent
 * session is `data.sessionID`; a prompt is named by the user message id
 * (`chat.message`'s `messageID`), a tool call by `callID`. Unknown event
 * names are refused. OpenCode keeps its conversation in SQLite, not a file:
 * no transcript is linked.
 *
 * @example
 * ```ts
 * import { parseOpencodeEvent } from "./opencode.ts";
 * const event = parseOpencodeEvent(new TextEncoder().encode(JSON.stringify({
 *   hook_event_name: "tool.execute.before", directory: "/tmp",
 *   data: { tool: "bash", sessionID: "ses_1", callID: "call_1", args: { command: "ls" } },
 * })), { recordPrompts: false });
 * if (event.kind !== "tool_pre" || event.tool_use_id !== "call_1") throw new Error("parse");
 * ```
 * @module
 */
import type { AgentEvent, AgentEventKind } from "../../history/agent.ts";
import { quote } from "../../errors.ts";
import { Payload } from "./_payload.ts";

/** The agent's name. */
export const OPENCODE = "opencode";

const KINDS: Readonly<Record<string, AgentEventKind>> = {
  "session.created": "session_start",
  "session.deleted": "session_end",
  "chat.message": "prompt",
  "tool.execute.before": "tool_pre",
  "tool.execute.after": "tool_post",
  "session.idle": "turn_end",
  "session.error": "turn_error",
  "session.compacted": "compact",
};

/** Longest list of message parts read. */
const MAX_PARTS = 1000;

/** Parses an OpenCode plugin event. @throws {UsageError} On anything it cannot map. */
export function parseOpencodeEvent(
  bytes: Uint8Array,
  options: { recordPrompts: boolean },
): AgentEvent {
  const p: Payload = Payload.parse(OPENCODE, bytes);
  const event = p.eventName("hook_event_name");
  const kind = KINDS[event];
  if (kind === undefined) p.bad(`${quote(event)} is not an event ctxsnap maps`);
  const data: Payload | null = p.object("data");
  if (data === null) p.bad("has no data object");
  let prompt: string | null = null;
  if (kind === "prompt" && options.recordPrompts) {
    const parts = data.o.parts;
    if (parts !== undefined && parts !== null) {
      if (!Array.isArray(parts) || parts.length > MAX_PARTS) p.bad('field "parts" is not a list');
      const texts: string[] = [];
      for (const part of parts) {
        if (part === null || typeof part !== "object" || Array.isArray(part)) {
          p.bad('field "parts" holds something other than objects');
        }
        const one = new Payload(OPENCODE, part as Record<string, unknown>);
        if (one.string("type") === "text") texts.push(one.prompt("text") ?? "");
      }
      prompt = texts.join("\n");
      if (prompt.length > 256 * 1024) p.bad("prompt text is longer than 262144 characters");
    }
  }
  return {
    harness: OPENCODE,
    kind,
    session_id: data.id("sessionID"),
    event,
    tool: kind.startsWith("tool_") ? data.label("tool", 256) : null,
    tool_use_id: kind.startsWith("tool_") ? data.id("callID") : null,
    prompt_id: kind === "prompt" ? data.id("messageID") : null,
    detail: null,
    prompt,
    cwd: p.path("directory"),
    transcript_path: null,
    command: null, // Bash commands are kept for Claude Code only (its tool_input is confirmed)
  };
}
