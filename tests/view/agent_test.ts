/**
 * The agent part of the timeline data (`lib/view/_agent.ts`): agent sessions
 * with their prompts and events from the store's records, limited to the
 * snapshots in view; grouping from signed metadata alone, whose shape is
 * checked; and the per-step diff bound that keeps a large repository's page
 * small.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { Store } from "../../lib/repository/store.ts";
import { deliver, makeSigner, recordInterleaved } from "../_agent_history.ts";
import { timelineFromStore } from "../../lib/view/model.ts";
import { agentOfBody, agentSessionsFromSnapshots } from "../../lib/view/_agent.ts";

const trust = { isTrusted: () => false, nameOf: () => null };

async function agentStore(
  files: Record<string, string>,
  fn: (store: Store, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-agent-view-" });
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(join(dir, name), text);
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    await fn(store, dir);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("timelineFromStore() groups agent events by session and prompt, with tools, the kept Bash command and the resume command", async () => {
  await agentStore({ "a.ts": "a\n", "b.ts": "b\n" }, async (store, dir) => {
    const ids = await recordInterleaved(store, await makeSigner(), dir, {
      snapshots: 8,
      sessions: ["sess-a", "sess-b"],
      paths: ["a.ts", "b.ts"],
    });
    const data = await timelineFromStore(store, { kind: "all" }, trust);
    assertEquals(data.agent_sessions.map((s) => s.lane), [
      "agent:claude-code/sess-a",
      "agent:claude-code/sess-b",
    ]);
    const a = data.agent_sessions[0]!;
    assertEquals(a.from_records, true);
    const first = a.prompts[0]!;
    assertEquals(first.prompt, 1);
    assertEquals(first.text, "prompt 1 of sess-a");
    assertEquals(first.before, ids[0]);
    assertEquals(first.resume, "ctxsnap resume --agent-session sess-a --prompt 1");
    assertEquals(first.conversation, null);
    assertEquals(first.events.map((e) => [e.kind, e.tool]), [
      ["UserPromptSubmit", null],
      ["PostToolUse", "Edit"],
      ["PostToolUse", "Bash"],
    ]);
    assert(first.events[2]!.command!.startsWith("deno test -A "), "the Bash command");
    // Each snapshot an agent event made names its session and prompt.
    const made = data.snapshots.filter((s) => s.agent !== null);
    assertEquals(made.length, data.snapshots.length);
    assertEquals(made[3]!.agent, {
      harness: "claude-code",
      session_id: "sess-b",
      event: "PostToolUse",
      prompt: 1,
    });
  });
});

Deno.test("timelineFromStore() fills the conversation slice from a conversation source where one is kept", async () => {
  await agentStore({ "a.ts": "a\n" }, async (store, dir) => {
    const signer = await makeSigner();
    await deliver(store, signer, dir, {
      session_id: "s1",
      hook_event_name: "UserPromptSubmit",
      prompt: "hi",
    });
    const data = await timelineFromStore(store, { kind: "all" }, trust, {
      conversation: (_harness, session, prompt) =>
        session === "s1" && prompt === 1
          ? { messages: [{ role: "assistant", text: "</script>", tool: null }], truncated: 0 }
          : null,
    });
    assertEquals(data.agent_sessions[0]!.prompts[0]!.conversation?.messages[0]?.text, "</script>");
  });
});

Deno.test("agentOfBody() takes a snapshot's agent metadata only in its documented shape", () => {
  const good = { harness: "claude-code", session_id: "s1", event: "Stop", prompt: 2 };
  assertEquals(agentOfBody({ agent: good }), good);
  assertEquals(agentOfBody({ agent: { ...good, prompt: null } })?.prompt, null);
  for (
    const bad of [
      { ...good, session_id: "<script>" },
      { ...good, session_id: "s1\u202E" },
      { ...good, harness: "Claude Code" },
      { ...good, event: "Stop;rm" },
      { ...good, prompt: 0 },
      { ...good, prompt: 1.5 },
      { ...good, prompt: "2" },
      [good],
      "claude-code",
    ]
  ) {
    assertEquals(agentOfBody({ agent: bad as never }), null, JSON.stringify(bad));
  }
  assertEquals(agentOfBody({}), null);
});

Deno.test("agentSessionsFromSnapshots() groups a file's snapshots by session and prompt, without text", async () => {
  await agentStore({ "a.ts": "a\n", "b.ts": "b\n" }, async (store, dir) => {
    await recordInterleaved(store, await makeSigner(), dir, {
      snapshots: 6,
      sessions: ["sess-a", "sess-b"],
      paths: ["a.ts", "b.ts"],
    });
    const data = await timelineFromStore(store, { kind: "all" }, trust);
    const grouped = agentSessionsFromSnapshots(data.snapshots);
    assertEquals(grouped.map((s) => [s.session_id, s.from_records]), [
      ["sess-a", false],
      ["sess-b", false],
    ]);
    // The same prompts as the store's records, as far as snapshots were made for them.
    const fromRecords = data.agent_sessions.map((s) => s.prompts.map((p) => p.prompt));
    assertEquals(grouped.map((s) => s.prompts.map((p) => p.prompt)), fromRecords);
    assertEquals(grouped[0]!.prompts[0]!.text, null);
    assertEquals(grouped[0]!.prompts[0]!.before, data.snapshots[0]!.id);
  });
});

Deno.test("a step changing more files than max_diffs_per_step carries no diffs in the page, and a note says so", async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 12; i++) files[`f${i}.txt`] = `file ${i}\n`;
  await agentStore(files, async (store, dir) => {
    const signer = await makeSigner();
    await deliver(store, signer, dir, { session_id: "s1", hook_event_name: "UserPromptSubmit" });
    await Deno.writeTextFile(join(dir, "f0.txt"), "changed\n");
    await deliver(store, signer, dir, {
      session_id: "s1",
      hook_event_name: "PostToolUse",
      tool_name: "Edit",
      tool_use_id: "t1",
    });
    const data = await timelineFromStore(store, { kind: "all" }, trust, {
      limits: { max_diffs_per_step: 5 },
    });
    // The first snapshot adds 12 files: over the bound, none of them diffed; the edit is.
    assertEquals(Object.keys(data.diffs).length, 1);
    assertEquals(Object.values(data.diffs)[0]!.added, 1);
    assert(data.notes.some((n) => n.includes("more than 5 files")), data.notes.join("; "));
    assertEquals(data.snapshots[0]!.changes?.added.length, 12, "its files are still listed");
  });
});
