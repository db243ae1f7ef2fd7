/**
 * Forks an agent's transcript just before prompt N under a new session id
 * (docs/FORMAT.md §16.5): the new file is exactly the bytes of the
 * transcript up to the line that submitted prompt N, with only the session
 * identity rewritten, written next to the original under a new name. The
 * original is never opened for writing.
 *
 * | agent       | prompt line                                          | identity rewritten                | continue with            |
 * | ----------- | ---------------------------------------------------- | --------------------------------- | ------------------------ |
 * | claude-code | `type:"user"` with text, no `tool_result`, not meta  | top-level `sessionId` of each line| `claude --resume <id>`   |
 * | codex       | `response_item` `message` of role `user` (not `<environment_context>`/`<user_instructions>`) | `payload.id` of `session_meta` | `codex resume <id>` |
 * | gemini-cli  | a record of `type:"user"` (the first line of each id) | `sessionId` of the metadata line | `gemini --resume <id>`   |
 *
 * Claude Code's prompt N is the line whose `promptId` is the recorded
 * prompt id when there is one, else the N-th prompt line. Cursor and
 * OpenCode transcripts cannot be forked (`forkable` is false).
 *
 * A line is rewritten textually (`"sessionId":"<old>"` → `"sessionId":"<new>"`,
 * only the top-level occurrence, checked by parsing both) so every other
 * byte stays as the agent wrote it.
 *
 * @example
 * ```ts
 * import { forkTranscript } from "./fork.ts";
 * const enc = new TextEncoder();
 * const lines = [
 *   { type: "user", sessionId: "s1", uuid: "u1", message: { role: "user", content: "one" } },
 *   { type: "assistant", sessionId: "s1", uuid: "a1", message: { role: "assistant", content: [] } },
 *   { type: "user", sessionId: "s1", uuid: "u2", message: { role: "user", content: "two" } },
 * ].map((l) => JSON.stringify(l) + "\n").join("");
 * const fork = forkTranscript("claude-code", enc.encode(lines), "s1", 2, null, "s2");
 * if (fork.lines !== 2 || fork.promptText !== "two") throw new Error("fork");
 * ```
 * @module
 */
import { IntegrityError, NotFoundError, quote } from "../../errors.ts";

/** Agents whose transcripts can be forked. */
export const FORKABLE: readonly string[] = ["claude-code", "codex", "gemini-cli"];

/** A forked transcript, in memory. */
export interface TranscriptFork {
  /** The new file's bytes. */
  bytes: Uint8Array;
  /** Lines kept. */
  lines: number;
  /** The new session id. */
  sessionId: string;
  /** Prompt N's text as the transcript holds it, or null. */
  promptText: string | null;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Complete lines (`\n`-terminated) with their byte offsets; a partial last line is left out. */
function splitLines(bytes: Uint8Array): { start: number; end: number; value: unknown }[] {
  const decoder = new TextDecoder("utf-8", { fatal: false });
  const out: { start: number; end: number; value: unknown }[] = [];
  let start = 0;
  for (let i = 0; i < bytes.byteLength; i++) {
    if (bytes[i] !== 0x0a) continue;
    const text = decoder.decode(bytes.subarray(start, i));
    let value: unknown = null;
    try {
      value = text.trim() === "" ? null : JSON.parse(text);
    } catch {
      value = null;
    }
    out.push({ start, end: i + 1, value });
    start = i + 1;
  }
  return out;
}

const NOT_A_PROMPT =
  /^(<local-command-stdout>|<session-start-hook>|<tick>|<goal>|\[Request interrupted by user|<ide_opened_file>|<ide_selection>|<command-name>|<command-message>)/;

/** The text of a Claude Code line if it is a real user prompt, else null. */
export function claudePromptText(line: unknown): string | null {
  if (!isObject(line) || line.type !== "user" || line.isMeta === true) return null;
  if (line.isCompactSummary === true || line.isSidechain === true) return null;
  const message = line.message;
  if (!isObject(message)) return null;
  const content = message.content;
  let text: string | null = null;
  if (typeof content === "string") text = content;
  else if (Array.isArray(content)) {
    const parts: string[] = [];
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block.type === "tool_result") return null;
      if (block.type === "text" && typeof block.text === "string") parts.push(block.text);
    }
    if (parts.length === 0) return null;
    text = parts.join("\n");
  }
  if (text === null || NOT_A_PROMPT.test(text.trimStart())) return null;
  return text;
}

const CODEX_SCAFFOLDING = /^\s*<(environment_context|user_instructions|user_shell_command)>/;

function codexPromptText(line: unknown): string | null {
  if (!isObject(line) || line.type !== "response_item" || !isObject(line.payload)) return null;
  const p = line.payload;
  if (p.type !== "message" || p.role !== "user" || !Array.isArray(p.content)) return null;
  const parts: string[] = [];
  for (const block of p.content) {
    if (isObject(block) && block.type === "input_text" && typeof block.text === "string") {
      parts.push(block.text);
    }
  }
  const text = parts.join("\n");
  return parts.length === 0 || CODEX_SCAFFOLDING.test(text) ? null : text;
}

function geminiPrompt(line: unknown): { id: string; text: string } | null {
  if (!isObject(line) || line.type !== "user" || typeof line.id !== "string") return null;
  const content = line.content;
  let text = "";
  if (typeof content === "string") text = content;
  else if (Array.isArray(content)) {
    text = content.map((p) => isObject(p) && typeof p.text === "string" ? p.text : "").join("");
  }
  return { id: line.id, text };
}

/**
 * Rewrites the session id `oldId` to `newId` in one line's text, where
 * `get` reads it from the parsed line and `key` is its JSON key. Only the
 * occurrence that changes `get` is replaced; other bytes stay.
 */
function rewriteLine(
  text: string,
  key: string,
  oldId: string,
  newId: string,
  get: (value: Json) => unknown,
  set: (value: Json, id: string) => void,
): string {
  const original = JSON.parse(text) as Json;
  const expected = JSON.parse(text) as Json;
  set(expected, newId);
  const wanted = JSON.stringify(expected);
  const pattern = new RegExp(`"${key}"\\s*:\\s*"${oldId.replace(/[.]/g, "\\.")}"`, "g");
  for (const match of text.matchAll(pattern)) {
    const candidate = text.slice(0, match.index) +
      match[0].replace(`"${oldId}"`, JSON.stringify(newId)) +
      text.slice(match.index! + match[0].length);
    try {
      if (JSON.stringify(JSON.parse(candidate)) === wanted) return candidate;
    } catch {
      // not this occurrence
    }
  }
  if (get(original) !== oldId) return text;
  // The id is written in another form (escaped): write the line anew.
  return JSON.stringify(expected);
}

/**
 * Forks `source` (a transcript of `agent`, session `oldId`) just before
 * prompt `prompt` (1-based; Claude Code: or the line with `promptId`),
 * under `newId`.
 *
 * @throws {NotFoundError} When the transcript has no such prompt (it may
 * lag behind the hooks, or be from another session).
 */
export function forkTranscript(
  agent: string,
  source: Uint8Array,
  oldId: string,
  prompt: number,
  promptId: string | null,
  newId: string,
): TranscriptFork {
  const lines = splitLines(source);
  let cut = -1;
  let text: string | null = null;
  let count = 0;
  if (agent === "claude-code") {
    if (promptId !== null) {
      cut = lines.findIndex((l) =>
        claudePromptText(l.value) !== null && (l.value as Json).promptId === promptId
      );
    }
    if (cut < 0) {
      for (let i = 0; i < lines.length && cut < 0; i++) {
        if (claudePromptText(lines[i]!.value) !== null && ++count === prompt) cut = i;
      }
    }
    if (cut >= 0) text = claudePromptText(lines[cut]!.value);
  } else if (agent === "codex") {
    for (let i = 0; i < lines.length && cut < 0; i++) {
      if (codexPromptText(lines[i]!.value) !== null && ++count === prompt) cut = i;
    }
    if (cut >= 0) text = codexPromptText(lines[cut]!.value);
  } else if (agent === "gemini-cli") {
    const seen = new Set<string>();
    for (let i = 0; i < lines.length && cut < 0; i++) {
      const p = geminiPrompt(lines[i]!.value);
      if (p === null || seen.has(p.id)) continue;
      seen.add(p.id);
      if (++count === prompt) {
        cut = i;
        text = p.text;
      }
    }
  } else {
    throw new NotFoundError(`The transcripts of ${quote(agent)} cannot be forked`);
  }
  if (cut < 0) {
    throw new NotFoundError(
      `The transcript holds no prompt ${prompt} of session ${quote(oldId)} (it has ${count})`,
      { hint: "the agent may not have written it yet; resume prints the prompt to re-enter" },
    );
  }
  const decoder = new TextDecoder("utf-8", { fatal: false });
  const encoder = new TextEncoder();
  const parts: Uint8Array[] = [];
  let changed = 0;
  for (let i = 0; i < cut; i++) {
    const line = lines[i]!;
    const raw = source.subarray(line.start, line.end);
    const value = line.value;
    let rewritten: string | null = null;
    const body = () => decoder.decode(source.subarray(line.start, line.end - 1));
    if (agent === "claude-code" && isObject(value) && value.sessionId === oldId) {
      rewritten = rewriteLine(body(), "sessionId", oldId, newId, (v) => v.sessionId, (v, id) => {
        v.sessionId = id;
      });
    } else if (
      agent === "codex" && isObject(value) && value.type === "session_meta" &&
      isObject(value.payload) && value.payload.id === oldId
    ) {
      rewritten = rewriteLine(
        body(),
        "id",
        oldId,
        newId,
        (v) => (v.payload as Json).id,
        (v, id) => {
          (v.payload as Json).id = id;
        },
      );
    } else if (agent === "gemini-cli" && isObject(value) && value.sessionId === oldId) {
      rewritten = rewriteLine(body(), "sessionId", oldId, newId, (v) => v.sessionId, (v, id) => {
        v.sessionId = id;
      });
    }
    if (rewritten === null) parts.push(raw);
    else {
      changed++;
      parts.push(encoder.encode(rewritten + "\n"));
    }
  }
  if (changed === 0 && cut > 0) {
    throw new IntegrityError(
      `The transcript names no session ${quote(oldId)} before prompt ${prompt}: not forked`,
      { hint: "is it this agent session's transcript?" },
    );
  }
  const total = parts.reduce((n, p) => n + p.byteLength, 0);
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.byteLength;
  }
  return { bytes, lines: cut, sessionId: newId, promptText: text };
}

/** The file name of a fork of `original` (a basename) under `newId`. */
export function forkFileName(
  agent: string,
  original: string,
  oldId: string,
  newId: string,
): string {
  if (agent === "claude-code") return `${newId}.jsonl`;
  if (agent === "gemini-cli") {
    const short = oldId.slice(0, 8);
    return original.includes(short)
      ? original.replace(short, newId.slice(0, 8))
      : `session-${newId.slice(0, 8)}.jsonl`;
  }
  return original.includes(oldId)
    ? original.replace(oldId, newId)
    : `rollout-${new Date().toISOString().slice(0, 19).replaceAll(":", "-")}-${newId}.jsonl`;
}

/** The command that continues a forked session. */
export function continueCommand(agent: string, sessionId: string): string {
  return agent === "claude-code"
    ? `claude --resume ${sessionId}`
    : agent === "codex"
    ? `codex resume ${sessionId}`
    : `gemini --resume ${sessionId}`;
}
