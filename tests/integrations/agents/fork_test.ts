/**
 * `forkTranscript()` against transcripts in each agent's real format
 * (tests/fixtures/agents/*\/transcript.jsonl): the fork is exactly the bytes
 * before prompt N with only the session identity rewritten.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals, assertThrows } from "../../_assert.ts";
import { NotFoundError } from "../../../lib/errors.ts";
import {
  claudePromptText,
  forkFileName,
  forkTranscript,
} from "../../../lib/integrations/agents/fork.ts";
import { AGENT_FIXTURES, CLAUDE_SESSION } from "./_session.ts";

const NEW = "11111111-2222-4333-8444-555555555555";
const enc = new TextEncoder();
const dec = new TextDecoder();

async function lines(agent: string): Promise<string[]> {
  const text = await Deno.readTextFile(join(AGENT_FIXTURES, agent, "transcript.jsonl"));
  return text.split("\n").filter((l) => l !== "").map((l) => l + "\n");
}

Deno.test("forkTranscript() of a Claude Code transcript before prompt 2 is the prefix with each line's sessionId rewritten", async () => {
  const all = await lines("claude-code");
  const fork = forkTranscript(
    "claude-code",
    enc.encode(all.join("")),
    CLAUDE_SESSION,
    2,
    null,
    NEW,
  );
  const expected = all.slice(0, 6).map((l) =>
    l.replace(`"sessionId":"${CLAUDE_SESSION}"`, `"sessionId":"${NEW}"`)
  ).join("");
  assertEquals(dec.decode(fork.bytes), expected);
  assertEquals(fork.lines, 6);
  assert(fork.promptText?.startsWith("Run the tests"));
});

Deno.test("forkTranscript() finds Claude Code's prompt by its promptId before counting", async () => {
  const all = await lines("claude-code");
  // The recorded prompt 3 names the third prompt's promptId even where ctxsnap's count differs.
  const fork = forkTranscript(
    "claude-code",
    enc.encode(all.join("")),
    CLAUDE_SESSION,
    7,
    "9f3b2d71-8a0c-4c55-b1de-0c6f5e2a7b33",
    NEW,
  );
  assertEquals(fork.lines, 10);
  assertEquals(fork.promptText, "Now delete the notes file");
});

Deno.test("forkTranscript() never takes a tool result, a meta line or a command envelope for a prompt", () => {
  assertEquals(
    claudePromptText({
      type: "user",
      message: { content: [{ type: "tool_result", tool_use_id: "t", content: "x" }] },
    }),
    null,
  );
  assertEquals(claudePromptText({ type: "user", isMeta: true, message: { content: "x" } }), null);
  assertEquals(
    claudePromptText({ type: "user", message: { content: "<command-name>/clear</command-name>" } }),
    null,
  );
  assertEquals(claudePromptText({ type: "user", message: { content: "real" } }), "real");
});

Deno.test("forkTranscript() of a transcript that does not reach prompt N is refused (NotFoundError)", async () => {
  const all = await lines("claude-code");
  assertThrows(
    () => forkTranscript("claude-code", enc.encode(all.join("")), CLAUDE_SESSION, 4, null, NEW),
    NotFoundError,
    "holds no prompt 4",
  );
});

Deno.test("forkTranscript() leaves out a partial last line the agent is still writing", async () => {
  const all = await lines("claude-code");
  const partial = all.slice(0, 7).join("") + all[7]!.slice(0, 20);
  const fork = forkTranscript("claude-code", enc.encode(partial), CLAUDE_SESSION, 2, null, NEW);
  assertEquals(fork.lines, 6);
});

Deno.test("forkTranscript() of a Codex rollout before prompt 2 rewrites only session_meta's id, skipping scaffolding messages", async () => {
  const all = await lines("codex");
  const old = "019d036d-5a11-7c00-9e0a-2f4bd1c0a001";
  const fork = forkTranscript("codex", enc.encode(all.join("")), old, 2, null, NEW);
  // Line 9 is the second real user message (line 1 is <environment_context>).
  const expected = [all[0]!.replace(`"id":"${old}"`, `"id":"${NEW}"`), ...all.slice(1, 9)].join("");
  assertEquals(dec.decode(fork.bytes), expected);
  assertEquals(fork.promptText, "now add docs");
  assertEquals(
    forkFileName("codex", `rollout-2026-08-20T10-02-51-${old}.jsonl`, old, NEW),
    `rollout-2026-08-20T10-02-51-${NEW}.jsonl`,
  );
});

Deno.test("forkTranscript() of a Gemini CLI transcript counts a re-appended message once and rewrites the metadata's sessionId", async () => {
  const all = await lines("gemini-cli");
  const old = "a1b2c3d4-e5f6-7890-abcd-ef1234567890";
  const fork = forkTranscript("gemini-cli", enc.encode(all.join("")), old, 2, null, NEW);
  const expected = [
    all[0]!.replace(`"sessionId":"${old}"`, `"sessionId":"${NEW}"`),
    ...all.slice(1, 5),
  ]
    .join("");
  assertEquals(dec.decode(fork.bytes), expected);
  assertEquals(
    forkFileName("gemini-cli", "session-2026-08-20T10-15-a1b2c3d4.jsonl", old, NEW),
    "session-2026-08-20T10-15-11111111.jsonl",
  );
});

Deno.test("forkTranscript() refuses a transcript that never names the session", async () => {
  const all = await lines("claude-code");
  assertThrows(
    () => forkTranscript("claude-code", enc.encode(all.join("")), "another-session", 2, null, NEW),
    Error,
    "names no session",
  );
});
