/**
 * The agent view of the history in text (`ctxsnap log --prompts`,
 * `lib/history/prompt_log.ts`): one line per prompt of every agent session,
 * interleaved as submitted, with the tools used, the Bash commands the hook
 * kept and the files changed; hostile prompt text is escaped.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { expectCode, type TempWorkspace, withStore } from "../_cli.ts";

async function hook(ws: TempWorkspace, payload: Record<string, unknown>, record = true) {
  const flags = record ? ["--record-prompts"] : [];
  const run = await ws.run(["hook", "claude-code", ...flags], {
    stdin: JSON.stringify({ cwd: ws.path, ...payload }),
  });
  expectCode(run, 0, `hook ${JSON.stringify(payload)}`);
}

/** Two sessions taking turns: each prompt edits a file and runs a Bash command. */
async function interleaved(
  ws: TempWorkspace,
  record = true,
  text = (s: string, n: number) => `${s} ${n}`,
  rounds = 2,
) {
  let tool = 0;
  for (let n = 1; n <= rounds; n++) {
    for (const session of ["sess-a", "sess-b"]) {
      await hook(ws, {
        session_id: session,
        hook_event_name: "UserPromptSubmit",
        prompt: text(session, n),
      }, record);
      await Deno.writeTextFile(join(ws.path, `${session}.txt`), `${session} at ${n}\n`);
      await hook(ws, {
        session_id: session,
        hook_event_name: "PostToolUse",
        tool_name: "Write",
        tool_use_id: `t${++tool}`,
      }, record);
      await hook(ws, {
        session_id: session,
        hook_event_name: "PostToolUse",
        tool_name: "Bash",
        tool_use_id: `t${++tool}`,
        tool_input: { command: `echo ${session} ${n}` },
      }, record);
    }
  }
}

Deno.test("log --prompts: one line per prompt, interleaved sessions each named, with the tools used and the files changed", async () => {
  await withStore(async (ws) => {
    await interleaved(ws);
    const text = await ws.run(["log", "--prompts"]);
    expectCode(text, 0, "log --prompts");
    const lines = text.stdout.trimEnd().split("\n");
    assertEquals(lines.length, 4, text.stdout);
    assertEquals(
      lines.map((l) => /(sess-[ab] #\d)/.exec(l)?.[1]),
      ["sess-a #1", "sess-b #1", "sess-a #2", "sess-b #2"],
    );
    for (const line of lines) assert(line.includes("Write, Bash"), line);
    assert(lines[0]!.includes("+1 ~0 −0  sess-a.txt"), lines[0]);
    assert(lines[2]!.includes("+0 ~1 −0  sess-a.txt"), lines[2]);
    assert(lines[3]!.endsWith(`"sess-b 2"`), lines[3]);
    const json = await ws.run(["log", "--prompts", "--agent-session", "sess-b", "--json"]);
    expectCode(json, 0, "log --prompts --json");
    const doc = json.json();
    assertEquals(doc.prompts.map((p: { prompt: number }) => p.prompt), [1, 2]);
    assertEquals(doc.prompts[1].commands, ["echo sess-b 2"]);
    assertEquals(doc.prompts[1].tools, [{ tool: "Write", count: 1 }, { tool: "Bash", count: 1 }]);
    assertEquals(doc.prompts[1].files, { added: [], changed: ["sess-b.txt"], removed: [] });
    assertEquals(doc.prompts[1].resume, "ctxsnap resume --agent-session sess-b --prompt 2");
    const last = await ws.run(["log", "--prompts", "--limit", "1"]);
    assertEquals(last.stdout.trimEnd().split("\n").length, 1);
  });
});

Deno.test("log --prompts escapes hostile prompt text: a newline that would forge a line, bidi overrides and control characters", async () => {
  await withStore(async (ws) => {
    const forged = "\n2026-01-01 00:00:00  sess-z #9  no tools  +0 ~0 −0";
    await interleaved(ws, true, (s, n) => `${s} ${n} \u202Egnp.exe\u001b[31m\u0007${forged}`, 1);
    const text = await ws.run(["log", "--prompts"]);
    expectCode(text, 0, "log --prompts");
    assertEquals(text.stdout.trimEnd().split("\n").length, 2, "one line per prompt");
    for (const c of ["\u202E", "\u001b", "\u0007"]) {
      assert(!text.stdout.includes(c), JSON.stringify(text.stdout));
    }
    assert(text.stdout.includes("gnp.exe"), text.stdout);
  });
});

Deno.test("the hook keeps a Bash command only with --record-prompts", async () => {
  await withStore(async (ws) => {
    await interleaved(ws, false, undefined, 1);
    const doc = (await ws.run(["log", "--prompts", "--json"])).json();
    assertEquals(doc.prompts.length, 2);
    for (const p of doc.prompts) {
      assertEquals(p.commands, []);
      assertEquals(p.text, null);
    }
  });
});

Deno.test("log refuses --agent-session without --prompts, and --prompts with --all", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["log", "--agent-session", "sess-a"]), 2, "--agent-session alone");
    expectCode(await ws.run(["log", "--prompts", "--all"]), 2, "--prompts --all");
  });
});
