/**
 * The agents `ctxsnap hook <agent>` understands: for each, how its payload
 * is parsed into an {@linkcode AgentEvent} and what the hook answers on
 * standard output so that the agent is never blocked or fed text.
 *
 * - claude-code, codex: nothing (or one `{"systemMessage": …}` object).
 * - gemini-cli: `{}` (Gemini parses stderr when stdout is empty), or the
 *   `systemMessage` object.
 * - cursor: `{"permission":"allow"}` on permission events,
 *   `{"continue":true}` on `beforeSubmitPrompt`, else `{}`.
 * - opencode: nothing (the plugin ignores it).
 *
 * @example
 * ```ts
 * import { adapterFor } from "./adapters.ts";
 * if (adapterFor("cursor")?.answer("stop", null) !== "{}") throw new Error("answer");
 * ```
 * @module
 */
import { type AgentEvent, CLAUDE_CODE, parseClaudeCodeEvent } from "../../history/agent.ts";
import { CODEX, parseCodexEvent } from "./codex.ts";
import { CURSOR, cursorAnswer, parseCursorEvent } from "./cursor.ts";
import { GEMINI_CLI, parseGeminiEvent } from "./gemini_cli.ts";
import { OPENCODE, parseOpencodeEvent } from "./opencode.ts";

/** How one agent's hook events are read and answered. */
export interface AgentAdapter {
  /** The agent's name (`ctxsnap hook <name>`). */
  name: string;
  /** Parses one payload. @throws {UsageError} On anything it cannot map. */
  parse(bytes: Uint8Array, options: { recordPrompts: boolean }): AgentEvent;
  /**
   * What the hook prints on stdout for event `event` (null when the
   * payload could not be read), given the message for the user, if any;
   * null prints nothing.
   */
  answer(event: string | null, systemMessage: string | null): string | null;
}

const message = (text: string | null): string | null =>
  text === null ? null : JSON.stringify({ systemMessage: text });

const ADAPTERS: readonly AgentAdapter[] = [
  { name: CLAUDE_CODE, parse: parseClaudeCodeEvent, answer: (_e, m) => message(m) },
  { name: CODEX, parse: parseCodexEvent, answer: (_e, m) => message(m) },
  { name: GEMINI_CLI, parse: parseGeminiEvent, answer: (_e, m) => message(m) ?? "{}" },
  { name: CURSOR, parse: parseCursorEvent, answer: (e, _m) => e === null ? null : cursorAnswer(e) },
  { name: OPENCODE, parse: parseOpencodeEvent, answer: () => null },
];

/** The adapter of agent `name`, or null. */
export function adapterFor(name: string): AgentAdapter | null {
  return ADAPTERS.find((a) => a.name === name) ?? null;
}

/** The names of the agents with an adapter. */
export function adapterNames(): string[] {
  return ADAPTERS.map((a) => a.name);
}
