/**
 * Agent sessions, prompts and hook events as records (docs/FORMAT.md §16),
 * checked against a reference model: random interleavings of several agent
 * sessions (in this process, and as concurrent `ctxsnap hook` processes),
 * redelivered events, identical payloads at different times and edits
 * between events. The model says what each delivery must answer: its prompt
 * number (the N-th prompt the agent sent in that session), whether it is a
 * redelivery (only by the agent's ids, never by equal bytes), and what the
 * snapshot it is attached to holds.
 *
 * `CTXSNAP_AGENT_RUNS` sets the number of random runs (default 12 in
 * process, 1 with processes); `deno task test:long` runs more.
 *
 * @module
 */
import fc from "fast-check";
import { join } from "node:path";
import { assertEquals } from "../_assert.ts";
import { expectCode, withStore } from "../_cli.ts";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { toHex } from "../../lib/encoding/hex.ts";
import { Store } from "../../lib/repository/store.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import type { Signer } from "../../lib/format/envelope.ts";
import {
  agentPrompts,
  parseClaudeCodeEvent,
  recordAgentEvent,
  snapshotBeforePrompt,
} from "../../lib/history/agent.ts";
import { resolveRevision } from "../../lib/history/names.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const RUNS = Number(Deno.env.get("CTXSNAP_AGENT_RUNS") ?? "0");

/** One step of a random history. */
type Step =
  | { kind: "edit"; file: number; text: string }
  | { kind: "prompt"; session: number; withId: boolean }
  | { kind: "tool"; session: number }
  | { kind: "stop"; session: number }
  | { kind: "redeliver"; session: number; pick: number };

const stepArb = (sessions: number): fc.Arbitrary<Step> => {
  const s = fc.integer({ min: 0, max: sessions - 1 });
  return fc.oneof(
    fc.record({
      kind: fc.constant("edit" as const),
      file: fc.integer({ min: 0, max: 3 }),
      text: fc.constantFrom("x", "y", "z", "x\n", ""),
    }),
    fc.record({ kind: fc.constant("prompt" as const), session: s, withId: fc.boolean() }),
    fc.record({ kind: fc.constant("tool" as const), session: s }),
    fc.record({ kind: fc.constant("stop" as const), session: s }),
    fc.record({
      kind: fc.constant("redeliver" as const),
      session: s,
      pick: fc.nat(),
    }),
  );
};

/** What the model expects one delivery to answer. */
interface Expected {
  prompt: number | null;
  duplicate: boolean;
  /** For a redelivery: the index of the first delivery, whose snapshot it returns. */
  first: number | null;
  /** The workspace files (path → text) the snapshot must hold. */
  files: Record<string, string>;
}

/** The reference model: agent sessions as the agent sees them. */
class Model {
  prompts: number[];
  /** Per session: the deliveries that carry an agent id (their payload and index). */
  keyed: { payload: Record<string, unknown>; index: number }[][];
  /** Per session: the prompt ids sent, in order (null when the prompt had none). */
  promptIds: (string | null)[][];
  /** Per session: the delivery index of each prompt's first delivery. */
  promptDelivery: number[][];
  expected: Expected[] = [];
  files: Record<string, string> = {};
  private counter = 0;

  constructor(readonly sessions: string[]) {
    this.prompts = sessions.map(() => 0);
    this.keyed = sessions.map(() => []);
    this.promptIds = sessions.map(() => []);
    this.promptDelivery = sessions.map(() => []);
  }

  /** The payload for `step` (null for an edit) and records what it must answer. */
  deliver(step: Exclude<Step, { kind: "edit" }>): Record<string, unknown> {
    const i = step.session;
    const session_id = this.sessions[i]!;
    const index = this.expected.length;
    const lastPromptId = this.promptIds[i]!.at(-1) ?? null;
    const files = { ...this.files };
    if (step.kind === "redeliver" && this.keyed[i]!.length > 0) {
      const earlier = this.keyed[i]![step.pick % this.keyed[i]!.length]!;
      const first = this.expected[earlier.index]!;
      this.expected.push({
        prompt: first.prompt,
        duplicate: true,
        first: earlier.index,
        files: first.files,
      });
      return earlier.payload;
    }
    if (step.kind === "prompt" || step.kind === "redeliver") {
      // A redelivery with nothing to redeliver is a prompt without an id (bytes seen before).
      const withId = step.kind === "prompt" && step.withId;
      this.prompts[i]! += 1;
      const promptId = withId ? `p-${i}-${++this.counter}` : null;
      this.promptIds[i]!.push(promptId);
      this.promptDelivery[i]!.push(index);
      const payload: Record<string, unknown> = {
        session_id,
        hook_event_name: "UserPromptSubmit",
        prompt: "continue",
        ...(promptId === null ? {} : { prompt_id: promptId }),
      };
      this.expected.push({ prompt: this.prompts[i]!, duplicate: false, first: null, files });
      if (promptId !== null) this.keyed[i]!.push({ payload, index });
      return payload;
    }
    const prompt = this.prompts[i]! === 0 ? null : this.prompts[i]!;
    this.expected.push({ prompt, duplicate: false, first: null, files });
    if (step.kind === "tool") {
      const payload: Record<string, unknown> = {
        session_id,
        hook_event_name: "PostToolUse",
        tool_name: "Bash",
        tool_use_id: `toolu_${i}_${++this.counter}`,
        ...(lastPromptId === null ? {} : { prompt_id: lastPromptId }),
      };
      this.keyed[i]!.push({ payload, index });
      return payload;
    }
    // Identical bytes every time: never a retry.
    return { session_id, hook_event_name: "Stop", stop_hook_active: true };
  }
}

async function makeSigner(): Promise<Signer> {
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}

function filesOf(store: Store, id: string): Record<string, string> {
  const row = store.stmt("SELECT tree FROM snapshots WHERE id = ?").get(id) as { tree: string };
  const out: Record<string, string> = {};
  for (const entry of store.getTree(row.tree).entries) {
    if (entry.type === "file") out[entry.path] = entry.blob;
  }
  return out;
}

function blobs(files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(files).map(([p, text]) => [p, sha256Hex(new TextEncoder().encode(text))]),
  );
}

/** Checks what the store says after a history against the model. */
function checkEnd(store: Store, model: Model, ids: string[]): void {
  model.sessions.forEach((session, i) => {
    const listed = model.prompts[i] === 0 ? null : agentPrompts(store, session);
    assertEquals(listed?.prompts.map((p) => p.prompt_id) ?? [], model.promptIds[i], session);
    model.promptDelivery[i]!.forEach((index, n) => {
      assertEquals(snapshotBeforePrompt(store, session, n + 1), ids[index], `${session} ${n + 1}`);
      assertEquals(resolveRevision(store, `prompt:${n + 1}:${session}`), ids[index]);
    });
  });
}

Deno.test("property: agent events from interleaved sessions are numbered and attached as the reference model says (redeliveries by agent id only, equal bytes never a retry, edits captured)", async () => {
  const runs = RUNS > 0 ? RUNS : 12;
  const signer = await makeSigner();
  const arb = fc.array(stepArb(3), { minLength: 4, maxLength: 18 });
  await fc.assert(
    fc.asyncProperty(arb, async (steps) => {
      const dir = await Deno.makeTempDir({ prefix: "ctxsnap-agent-prop-" });
      const store = Store.init(join(dir, ".ctxsnap"), dir);
      try {
        const model = new Model(["sess-a", "sess-b", "sess-c"]);
        const ids: string[] = [];
        for (const step of steps) {
          if (step.kind === "edit") {
            await Deno.writeTextFile(join(dir, `f${step.file}.txt`), step.text);
            model.files[`f${step.file}.txt`] = step.text;
            continue;
          }
          const payload = model.deliver(step);
          const event = parseClaudeCodeEvent(
            new TextEncoder().encode(JSON.stringify({ ...payload, cwd: dir })),
            { recordPrompts: false },
          );
          const result = await recordAgentEvent(
            store,
            {},
            event,
            (o) => createSnapshot(store, signer, o),
          );
          const expected = model.expected[ids.length]!;
          assertEquals(result.agent.prompt, expected.prompt, JSON.stringify(payload));
          assertEquals(result.agent.duplicate, expected.duplicate, JSON.stringify(payload));
          assertEquals(result.agent.sessionId, payload.session_id);
          if (expected.first !== null) {
            assertEquals(result.id, ids[expected.first], "a redelivery returns the first snapshot");
            assertEquals(result.created, false);
          }
          assertEquals(filesOf(store, result.id), blobs(expected.files), "snapshot content");
          ids.push(result.id);
        }
        checkEnd(store, model, ids);
      } finally {
        store.close();
        await Deno.remove(dir, { recursive: true });
      }
    }),
    { numRuns: runs },
  );
});

Deno.test("recordAgentEvent() re-checks the event key inside the write transaction: a delivery that lands after the first look is taken for a redelivery, recorded once", async () => {
  const signer = await makeSigner();
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-agent-race-" });
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    await Deno.writeTextFile(join(dir, "a.txt"), "a\n");
    const event = parseClaudeCodeEvent(
      new TextEncoder().encode(JSON.stringify({
        session_id: "sess-race",
        cwd: dir,
        hook_event_name: "PostToolUse",
        tool_name: "Bash",
        tool_use_id: "toolu_race",
      })),
      { recordPrompts: false },
    );
    const create = (o: Parameters<typeof createSnapshot>[2]) => createSnapshot(store, signer, o);
    // The other delivery lands between this one's first look and its write transaction.
    let other: Awaited<ReturnType<typeof recordAgentEvent>> | null = null;
    const result = await recordAgentEvent(store, {}, event, async (o) => {
      if (other === null) {
        await Deno.writeTextFile(join(dir, "a.txt"), "b\n");
        other = await recordAgentEvent(store, {}, event, create);
      }
      return create(o);
    });
    assertEquals([other!.agent.duplicate, result.agent.duplicate], [false, true]);
    assertEquals(result.id, other!.id, "the first delivery's snapshot");
    const rows = store.db.prepare("SELECT count(*) AS n FROM agent_events").get() as { n: number };
    assertEquals(rows.n, 1, "the event is recorded once");
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("recordAgentEvent() numbers events inside the write transaction: another event of the session that lands after the first look comes before this one", async () => {
  const signer = await makeSigner();
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-agent-race-" });
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    const parse = (payload: Record<string, unknown>) =>
      parseClaudeCodeEvent(
        new TextEncoder().encode(JSON.stringify({ session_id: "sess-race", cwd: dir, ...payload })),
        { recordPrompts: false },
      );
    const create = (o: Parameters<typeof createSnapshot>[2]) => createSnapshot(store, signer, o);
    await recordAgentEvent(store, {}, parse({ hook_event_name: "UserPromptSubmit" }), create);
    // Parallel tool calls: the second's hook lands between the first's look and its transaction.
    let other: Awaited<ReturnType<typeof recordAgentEvent>> | null = null;
    const tool = (id: string) =>
      parse({ hook_event_name: "PostToolUse", tool_name: "Bash", tool_use_id: id });
    const first = await recordAgentEvent(store, {}, tool("toolu_one"), async (o) => {
      if (other === null) {
        await Deno.writeTextFile(join(dir, "b.txt"), "b\n");
        other = await recordAgentEvent(store, {}, tool("toolu_two"), create);
      }
      await Deno.writeTextFile(join(dir, "c.txt"), "c\n");
      return create(o);
    });
    assertEquals([other!.agent.duplicate, first.agent.duplicate], [false, false]);
    const rows = store.db.prepare(
      "SELECT position, tool_use_id FROM agent_events ORDER BY position",
    ).all() as { position: number; tool_use_id: string | null }[];
    assertEquals(rows.map((r) => [r.position, r.tool_use_id]), [
      [1, null],
      [2, "toolu_two"],
      [3, "toolu_one"],
    ]);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("property: three agent sessions hooked from concurrent processes keep their own prompt numbers, redeliveries and edits", async () => {
  const runs = RUNS > 0 ? Math.max(1, Math.floor(RUNS / 10)) : 1;
  const scripts = fc.sample(
    fc.array(
      fc.array(
        fc.oneof(
          fc.constant("prompt" as const),
          fc.constant("prompt-id" as const),
          fc.constant("tool" as const),
          fc.constant("stop" as const),
          fc.constant("redeliver" as const),
          fc.constant("edit" as const),
        ),
        { minLength: 3, maxLength: 5 },
      ),
      { minLength: 3, maxLength: 3 },
    ),
    { numRuns: runs, seed: Number(Deno.env.get("CTXSNAP_SEED") ?? "4242") },
  );
  for (const script of scripts) {
    await withStore(async (ws) => {
      const sessions = script.map((_, i) => `proc-sess-${i}`);
      // Each session edits only its own file, so what its snapshots hold of that file is known
      // whatever the other processes do meanwhile.
      const streams = script.map(async (steps, i) => {
        const model = new Model([sessions[i]!]);
        const own = `own-${i}.txt`;
        const answers: Any[] = [];
        let version = 0;
        for (const kind of steps) {
          if (kind === "edit") {
            version += 1;
            await Deno.writeTextFile(join(ws.path, own), `v${version}\n`);
            model.files[own] = `v${version}\n`;
            continue;
          }
          const step: Exclude<Step, { kind: "edit" }> = kind === "prompt-id"
            ? { kind: "prompt", session: 0, withId: true }
            : kind === "prompt"
            ? { kind: "prompt", session: 0, withId: false }
            : kind === "redeliver"
            ? { kind: "redeliver", session: 0, pick: version }
            : { kind, session: 0 };
          const payload = model.deliver(step);
          const send = () =>
            ws.run(["hook", "claude-code", "--json", "--strict"], {
              stdin: JSON.stringify({ ...payload, cwd: ws.path }),
              mode: "subprocess",
              // Six processes at once on a loaded machine: wait for the lock rather than fail.
              env: { CTXSNAP_BUSY_TIMEOUT_MS: "60000" },
            });
          // A tool event is delivered twice at once: one delivery records it, the other
          // returns the same snapshot as a redelivery.
          const results = await Promise.all(step.kind === "tool" ? [send(), send()] : [send()]);
          for (const result of results) {
            expectCode(result, 0, `${sessions[i]} ${JSON.stringify(payload)}`);
          }
          if (results.length === 2) {
            const [x, y] = results.map((r) => r.json());
            assertEquals(x.id, y.id, "a concurrent redelivery returns the same snapshot");
            assertEquals([x.duplicate, y.duplicate].sort(), [false, true]);
            assertEquals(x.prompt, y.prompt);
          }
          // Of a doubled delivery, the model's answer is the one that recorded the event.
          answers.push(
            results.length === 2 ? { ...results[0]!.json(), duplicate: false } : results[0]!.json(),
          );
        }
        return { model, answers, own };
      });
      const done = await Promise.all(streams);
      const store = Store.open(join(ws.path, ".ctxsnap"), { readOnly: true });
      try {
        for (const { model, answers, own } of done) {
          answers.forEach((answer, n) => {
            const expected = model.expected[n]!;
            assertEquals(answer.agent_session, model.sessions[0]);
            assertEquals([answer.prompt, answer.duplicate], [expected.prompt, expected.duplicate]);
            if (expected.first !== null) assertEquals(answer.id, answers[expected.first].id);
            const held = filesOf(store, answer.id)[own];
            const want = expected.files[own];
            assertEquals(
              held,
              want === undefined ? undefined : sha256Hex(new TextEncoder().encode(want)),
            );
          });
          checkEnd(store, model, answers.map((a) => a.id));
        }
      } finally {
        store.close();
      }
    });
  }
});

Deno.test("scenario: two Claude Code sessions in one repository, recorded event by event, each keep their own prompts", async () => {
  await withStore(async (ws) => {
    const A = "aaaaaaaa-0000-4000-8000-000000000001";
    const B = "bbbbbbbb-0000-4000-8000-000000000002";
    const hook = async (session: string, fields: Record<string, unknown>) => {
      const result = await ws.run(["hook", "claude-code", "--json"], {
        stdin: JSON.stringify({
          session_id: session,
          cwd: ws.path,
          transcript_path: `/home/u/.claude/projects/p/${session}.jsonl`,
          ...fields,
        }),
      });
      expectCode(result, 0, `${session} ${JSON.stringify(fields)}`);
      return result.json();
    };
    // The recorded interleaving of the report: B starts while A works.
    await hook(A, { hook_event_name: "SessionStart", source: "startup" });
    const a1 = await hook(A, { hook_event_name: "UserPromptSubmit", prompt_id: "a-1" });
    await hook(B, { hook_event_name: "SessionStart", source: "startup" });
    const b1 = await hook(B, { hook_event_name: "UserPromptSubmit", prompt_id: "b-1" });
    assertEquals([a1.prompt, b1.prompt, b1.duplicate], [1, 1, false]);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "A edits\n");
    const aTool = await hook(A, {
      hook_event_name: "PostToolUse",
      tool_name: "Edit",
      tool_use_id: "toolu_a1",
      prompt_id: "a-1",
    });
    assertEquals([aTool.prompt, aTool.created], [1, true]);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "A edits again\n");
    const aToolAgain = await hook(A, {
      hook_event_name: "PostToolUse",
      tool_name: "Edit",
      tool_use_id: "toolu_a1",
      prompt_id: "a-1",
    });
    assertEquals([aToolAgain.id, aToolAgain.duplicate], [aTool.id, true], "redelivered by id");
    const bTool = await hook(B, {
      hook_event_name: "PreToolUse",
      tool_name: "mcp__github__create_issue",
      tool_use_id: "toolu_b1",
      prompt_id: "b-1",
    });
    assertEquals(bTool.prompt, 1, "B's tool events carry B's prompt");
    const bStop = { hook_event_name: "Stop", stop_hook_active: true, prompt_id: "b-1" };
    await hook(B, bStop);
    await Deno.writeTextFile(join(ws.path, "b.md"), "edited between two identical Stops\n");
    const bStop2 = await hook(B, bStop);
    assertEquals([bStop2.created, bStop2.duplicate], [true, false], "the edit is captured");
    const b2 = await hook(B, { hook_event_name: "UserPromptSubmit", prompt_id: "b-2" });
    const a2 = await hook(A, { hook_event_name: "UserPromptSubmit", prompt_id: "a-2" });
    const b3 = await hook(B, { hook_event_name: "UserPromptSubmit", prompt_id: "b-3" });
    const b4 = await hook(B, { hook_event_name: "UserPromptSubmit", prompt_id: "b-4" });
    assertEquals([b2.prompt, a2.prompt, b3.prompt, b4.prompt], [2, 2, 3, 4]);
    await hook(A, {
      hook_event_name: "PostToolUseFailure",
      tool_name: "Bash",
      tool_use_id: "toolu_a2",
      prompt_id: "a-2",
    });
    await hook(A, { hook_event_name: "SessionEnd", reason: "prompt_input_exit" });

    const listB = await ws.run(["list", "--prompts", "--agent-session", B, "--json"]);
    expectCode(listB, 0, "list --prompts B");
    assertEquals(listB.json().prompts.map((p: Any) => p.prompt_id), ["b-1", "b-2", "b-3", "b-4"]);
    assertEquals(listB.json().agent_session.end_reason, null);
    const listA = await ws.run(["list", "--prompts", "--agent-session", "aaaaaaaa", "--json"]);
    assertEquals(listA.json().prompts.map((p: Any) => p.prompt_id), ["a-1", "a-2"]);
    assertEquals(listA.json().agent_session.end_reason, "prompt_input_exit");
    assertEquals(
      listA.json().agent_session.transcript_path,
      `/home/u/.claude/projects/p/${A}.jsonl`,
    );
    const p4 = await ws.run(["list", "--agent-session", B, "--prompt", "4", "--json"]);
    assertEquals(p4.json().snapshots[0].id, b4.id);
    const p3a = await ws.run(["list", "--agent-session", A, "--prompt", "3"]);
    expectCode(p3a, 4, "A has no prompt 3");
    // The latest agent session is A (its SessionEnd came last): prompt:2 is A's second prompt.
    const latest = await ws.run(["show", "prompt:2", "--json"]);
    assertEquals(latest.json().id, a2.id);
    const diff = await ws.run(["diff", `prompt:1:${B}`, `prompt:2:${B}`, "--json"]);
    expectCode(diff, 0, "diff between two prompts");
    assertEquals(diff.json().changed.sort(), ["a.txt", "b.md"]);
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all");
  });
});
