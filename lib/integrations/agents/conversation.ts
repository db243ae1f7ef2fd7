/**
 * A checkpoint's conversation slice (`ctxsnap show`, docs/CLI.md): what the
 * agent's kept transcript gained between the previous event of its agent
 * session and the last event attached to the snapshot: the prompt, the
 * assistant's text and its tool calls, read from the copy the store kept
 * (checked against the recorded SHA-256), never from the agent's file.
 *
 * Transcripts lag behind hooks (Claude Code writes asynchronously), so a
 * slice holds what the file held when the events were delivered. Bounded:
 * at most 256 KiB of transcript per slice, 100 items, 2,000 characters per
 * item; the caller escapes the text before printing it.
 *
 * Readers per format: Claude Code (`type` user/assistant, content blocks
 * `text`/`tool_use`), Codex rollouts (`response_item` messages,
 * `function_call`, `custom_tool_call`), Gemini CLI (`user`/`gemini`
 * records with `toolCalls`), Cursor (`role` + Anthropic-style content,
 * unconfirmed). Lines they do not know are skipped.
 *
 * @example
 * ```ts
 * import { conversationItems } from "./conversation.ts";
 * const line = JSON.stringify({ type: "assistant", message: { content: [
 *   { type: "text", text: "Done." }, { type: "tool_use", name: "Bash", input: { command: "ls" } },
 * ] } }) + "\n";
 * const items = conversationItems("claude-code", new TextEncoder().encode(line));
 * if (items[1]?.tool !== "Bash" || items[1]?.text !== "ls") throw new Error("items");
 * ```
 * @module
 */
import type { Store } from "../../repository/store.ts";
import {
  agentEvents,
  agentEventsOfSnapshot,
  agentSessionBySeq,
  agentSessionRow,
  transcriptEventBefore,
} from "../../repository/agent_rows.ts";
import { keptTranscript } from "../../history/transcript.ts";
import { scanText } from "../../workspace/io/secret_scan.ts";
import { claudePromptText } from "./fork.ts";

/** One item of a conversation. */
export interface ConversationItem {
  /** `user` (a prompt), `assistant` (its text) or `tool` (a tool call). */
  role: "user" | "assistant" | "tool";
  /** The text (a tool call: its command, path or compact input). */
  text: string;
  /** The tool's name, for tool calls. */
  tool?: string;
}

/** The conversation slice of one agent session at a snapshot. */
export interface ConversationSlice {
  /** The agent. */
  agent: string;
  /** The agent session. */
  agent_session: string;
  /** Byte range of the transcript shown. */
  from: number;
  /** End of that range. */
  to: number;
  /** The items, in order. */
  items: ConversationItem[];
  /** True when the slice was cut to its bounds. */
  truncated: boolean;
}

const MAX_SLICE_BYTES = 256 * 1024;
const MAX_ITEMS = 100;
const MAX_TEXT = 2000;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  v !== null && typeof v === "object" && !Array.isArray(v);

function clip(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}

function toolText(input: unknown): string {
  if (isObject(input)) {
    for (const key of ["command", "file_path", "filePath", "path", "pattern", "url", "query"]) {
      if (typeof input[key] === "string") return input[key] as string;
    }
  }
  if (typeof input === "string") {
    try {
      return toolText(JSON.parse(input));
    } catch {
      return input;
    }
  }
  return JSON.stringify(input) ?? "";
}

function blocks(content: unknown, role: "user" | "assistant", out: ConversationItem[]): void {
  if (typeof content === "string") {
    if (content.trim() !== "") out.push({ role, text: content });
    return;
  }
  if (!Array.isArray(content)) return;
  for (const block of content) {
    if (!isObject(block)) continue;
    if ((block.type === "text" || block.type === "output_text") && typeof block.text === "string") {
      if (role === "assistant" && block.text.trim() !== "") out.push({ role, text: block.text });
    } else if (block.type === "tool_use" && typeof block.name === "string") {
      out.push({ role: "tool", tool: block.name, text: toolText(block.input) });
    }
  }
}

function lineItems(agent: string, value: unknown, out: ConversationItem[]): void {
  if (!isObject(value)) return;
  if (agent === "claude-code") {
    const prompt = claudePromptText(value);
    if (prompt !== null) out.push({ role: "user", text: prompt });
    else if (value.type === "assistant" && isObject(value.message)) {
      blocks(value.message.content, "assistant", out);
    }
  } else if (agent === "codex") {
    const p = value.payload;
    if (value.type !== "response_item" || !isObject(p)) return;
    if (p.type === "message" && Array.isArray(p.content)) {
      const texts = p.content.filter((b) =>
        isObject(b) && (b.type === "input_text" || b.type === "output_text") &&
        typeof b.text === "string"
      ).map((b) => (b as Json).text as string).join("\n");
      if (texts === "" || /^\s*<(environment_context|user_instructions)>/.test(texts)) return;
      if (p.role === "user") out.push({ role: "user", text: texts });
      else if (p.role === "assistant") out.push({ role: "assistant", text: texts });
    } else if (
      (p.type === "function_call" || p.type === "custom_tool_call") && typeof p.name === "string"
    ) {
      out.push({ role: "tool", tool: p.name, text: toolText(p.arguments ?? p.input) });
    }
  } else if (agent === "gemini-cli") {
    const text = typeof value.content === "string"
      ? value.content
      : Array.isArray(value.content)
      ? value.content.map((p) => isObject(p) && typeof p.text === "string" ? p.text : "").join("")
      : "";
    if (value.type === "user" && text !== "") out.push({ role: "user", text });
    if (value.type === "gemini") {
      if (text !== "") out.push({ role: "assistant", text });
      if (Array.isArray(value.toolCalls)) {
        for (const call of value.toolCalls) {
          if (isObject(call) && typeof call.name === "string") {
            out.push({ role: "tool", tool: call.name, text: toolText(call.args) });
          }
        }
      }
    }
  } else if (agent === "cursor") {
    const role = value.role;
    const message = isObject(value.message) ? value.message : value;
    if (role === "user") {
      const text = typeof message.content === "string"
        ? message.content
        : Array.isArray(message.content)
        ? message.content.map((b) => isObject(b) && typeof b.text === "string" ? b.text : "")
          .join("")
        : "";
      if (text !== "") out.push({ role: "user", text });
    } else if (role === "assistant") blocks(message.content, "assistant", out);
  }
}

/** The conversation items in `bytes` (complete lines of a transcript of `agent`). */
export function conversationItems(agent: string, bytes: Uint8Array): ConversationItem[] {
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  const out: ConversationItem[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    lineItems(agent, value, out);
  }
  return out.map((item) => ({ ...item, text: clip(item.text) }));
}

/** The conversation slice the Replay view shows for one prompt (`lib/view/model.ts`'s source). */
export interface PromptConversation {
  /** Messages in order: the prompt, the assistant's text, its tool calls. */
  messages: { role: "user" | "assistant" | "tool_use"; text: string; tool: string | null }[];
  /** Messages left out past the bound. */
  truncated: number;
}

/**
 * The conversation of prompt `prompt` of an agent session, from the kept
 * transcript: what was appended from the last event before the prompt to
 * its last event (bounded as {@linkcode conversationSlices} is), or null when
 * the session or its transcript is not kept. Every byte comes from the
 * store's segments, checked against the recorded prefix hash.
 */
export function promptConversation(
  store: Store,
  harness: string,
  sessionId: string,
  prompt: number,
): PromptConversation | null {
  const session = agentSessionRow(store, harness, sessionId);
  if (session === null) return null;
  const mine = agentEvents(store, session.seq, 1_000_000).filter((e) => e.prompt === prompt);
  const last = mine.filter((e) => e.transcript_chain !== null && e.transcript_len !== null).at(-1);
  if (last === undefined) return null;
  const before = transcriptEventBefore(store, session.seq, mine[0]!.position);
  let from = before !== null && before.transcript_chain === last.transcript_chain
    ? before.transcript_len ?? 0
    : 0;
  const to = last.transcript_len!;
  if (from > to) from = 0;
  if (to - from > MAX_SLICE_BYTES) from = to - MAX_SLICE_BYTES;
  let bytes: Uint8Array;
  try {
    bytes = keptTranscript(store, session.seq, last.transcript_chain!, to, last.transcript_sha256!);
  } catch {
    return null; // altered or missing segments: nothing from them is shown
  }
  let start = from;
  if (start > 0 && bytes[start - 1] !== 0x0a) {
    const nl = bytes.indexOf(0x0a, start);
    start = nl < 0 ? to : nl + 1;
  }
  const items = conversationItems(session.harness, bytes.subarray(start, to));
  const kept = items.slice(-MAX_ITEMS);
  return {
    messages: kept.map((item) => ({
      role: item.role === "tool" ? "tool_use" : item.role,
      text: item.text,
      tool: item.tool ?? null,
    })),
    truncated: items.length - kept.length,
  };
}

/** The conversation slices of the agent events attached to snapshot `id` (one per agent session). */
export function conversationSlices(store: Store, id: string): ConversationSlice[] {
  const events = agentEventsOfSnapshot(store, id);
  const sessions = [...new Set(events.map((e) => e.agent_session))];
  const slices: ConversationSlice[] = [];
  for (const seq of sessions) {
    const mine = events.filter((e) => e.agent_session === seq);
    const last = mine.filter((e) => e.transcript_chain !== null && e.transcript_len !== null).at(
      -1,
    );
    const session = agentSessionBySeq(store, seq);
    if (last === undefined || session === null) continue;
    const before = transcriptEventBefore(store, seq, mine[0]!.position);
    let from = before !== null && before.transcript_chain === last.transcript_chain
      ? before.transcript_len ?? 0
      : 0;
    const to = last.transcript_len!;
    if (from > to) from = 0;
    let truncated = false;
    if (to - from > MAX_SLICE_BYTES) {
      from = to - MAX_SLICE_BYTES;
      truncated = true;
    }
    const bytes = keptTranscript(store, seq, last.transcript_chain!, to, last.transcript_sha256!);
    let start = from;
    // Start at a line: skip a partial first line.
    if (start > 0 && bytes[start - 1] !== 0x0a) {
      const nl = bytes.indexOf(0x0a, start);
      start = nl < 0 ? to : nl + 1;
    }
    let items = conversationItems(session.harness, bytes.subarray(start, to));
    if (items.length > MAX_ITEMS) {
      items = items.slice(items.length - MAX_ITEMS);
      truncated = true;
    }
    slices.push({
      agent: session.harness,
      agent_session: session.session_id,
      from,
      to,
      items,
      truncated,
    });
  }
  return slices;
}

/**
 * `text` with what the secret scanner finds redacted: each line holding a
 * secret becomes `[redacted: <kind>]`; a secret only the whole text shows
 * (a private key across lines) redacts the whole text. Returns the kinds.
 */
export function redactSecrets(text: string): { text: string; redacted: string[] } {
  if (scanText(text) === null) return { text, redacted: [] };
  const redacted: string[] = [];
  const lines = text.split("\n").map((line) => {
    const kind = scanText(line);
    if (kind === null) return line;
    redacted.push(kind);
    return `[redacted: ${kind}]`;
  });
  const joined = lines.join("\n");
  const left = scanText(joined);
  if (left !== null) return { text: `[redacted: ${left}]`, redacted: [...redacted, left] };
  return { text: joined, redacted };
}

/** One line of a conversation export: an item of a snapshot's slice, redacted. */
export interface ConversationExportLine {
  /** The snapshot. */
  snapshot: string;
  /** The agent. */
  agent: string;
  /** The agent session. */
  agent_session: string;
  /** `user`, `assistant` or `tool`. */
  role: ConversationItem["role"];
  /** The tool, for tool calls. */
  tool: string | null;
  /** The text, secrets redacted. */
  text: string;
}

/**
 * The conversation slices of `ids` as JSON lines (one
 * {@linkcode ConversationExportLine} each), every text run through the
 * secret scanner and redacted (`publish --with-conversation`).
 */
export function conversationExport(
  store: Store,
  ids: readonly string[],
): { text: string; items: number; redacted: number } {
  let text = "";
  let items = 0;
  let redacted = 0;
  for (const id of ids) {
    for (const slice of conversationSlices(store, id)) {
      for (const item of slice.items) {
        const clean = redactSecrets(item.text);
        const tool = item.tool === undefined ? null : redactSecrets(item.tool);
        redacted += clean.redacted.length + (tool?.redacted.length ?? 0);
        const line: ConversationExportLine = {
          snapshot: id,
          agent: slice.agent,
          agent_session: slice.agent_session,
          role: item.role,
          tool: tool?.text ?? null,
          text: clean.text,
        };
        text += JSON.stringify(line) + "\n";
        items++;
      }
    }
  }
  return { text, items, redacted };
}
