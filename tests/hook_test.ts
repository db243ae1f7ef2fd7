/**
 * `ctxsnap hook claude-code` (issue 14 item 1), as a real process fed the
 * sample payloads in tests/fixtures/claude-code/ on standard input: one
 * checkpoint per event, retries return the same snapshot, prompts counted,
 * "the state before prompt N" listed and restored; malformed JSON, a missing
 * store, a bad cwd and oversized input are reported on stderr with exit 0
 * (the agent is never blocked), and with `--strict` fail.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "./_assert.ts";
import {
  type CliResult,
  expectCode,
  REPO,
  type TempWorkspace,
  tempWorkspace,
  withStore,
} from "./_cli.ts";
import { exists } from "./_util.ts";

const FIXTURES = join(REPO, "tests", "fixtures", "claude-code");
const SESSION = "3f6c0b0e-7b1c-4a35-9a53-2b1d6b2f9e10";

async function payload(name: string, cwd: string): Promise<string> {
  const text = await Deno.readTextFile(join(FIXTURES, `${name}.json`));
  return text.replaceAll("/PROJECT", cwd);
}

/** Runs the hook with `stdin` (a subprocess: standard input is the point). */
function hook(
  ws: TempWorkspace,
  stdin: string | Uint8Array,
  flags: string[] = [],
): Promise<CliResult> {
  return ws.run(["hook", "claude-code", ...flags], { stdin });
}

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("hook: one checkpoint per event keyed on the agent session, and the state before prompt N restores", async () => {
  await withStore(async (ws) => {
    const ids: Record<string, string> = {};
    const send = async (name: string, edit?: () => Promise<void>) => {
      await edit?.();
      const result = await hook(ws, await payload(name, ws.path), ["--json"]);
      expectCode(result, 0, name);
      ids[name] = result.json().id;
      return result.json();
    };
    const start = await send("session_start");
    assertEquals(start.prompt, null);
    const prompt1 = await send("user_prompt_submit_1");
    assertEquals(prompt1.prompt, 1);
    // Without prompt_id, the same bytes right after it are a retry of that prompt.
    const retried1 = await hook(ws, await payload("user_prompt_submit_1", ws.path), ["--json"]);
    assertEquals([retried1.json().id, retried1.json().created], [prompt1.id, false]);
    await send(
      "post_tool_use_write",
      () => Deno.writeTextFile(join(ws.path, "src/main.ts"), "console.log('delta');\n"),
    );
    await send("post_tool_use_bash", () => Deno.writeTextFile(join(ws.path, "a.txt"), "ALPHA\n"));
    await send("stop");
    const prompt2 = await send("user_prompt_submit_2");
    assertEquals(prompt2.prompt, 2);
    await send("post_tool_use_write", () => Deno.remove(join(ws.path, "b.md")));
    await send("pre_compact");
    await send("session_end");

    // A retried hook (same bytes) returns the snapshot it made the first time.
    for (const name of ["post_tool_use_bash", "user_prompt_submit_2"]) {
      const again = await hook(ws, await payload(name, ws.path), ["--json"]);
      expectCode(again, 0, `${name} again`);
      assertEquals(again.json().id, ids[name], `${name} retried`);
      assertEquals(again.json().created, false);
    }

    const listed = await ws.run(["list", "--agent-session", SESSION, "--json"]);
    expectCode(listed, 0, "list --agent-session");
    const items = listed.json().snapshots as Any[];
    const events = items.map((s) => s.agent.event).reverse();
    assert(events[0] === "SessionStart" && events.includes("PostToolUse"), events.join(","));
    assert(items.every((s) => s.agent.session_id === SESSION));
    const bash = items.find((s) => s.id === ids.post_tool_use_bash);
    assertEquals(bash.reason, "PostToolUse Bash");

    // The state before prompt 2, and going back to it.
    const before2 = await ws.run(["list", "--agent-session", SESSION, "--prompt", "2", "--json"]);
    assertEquals(before2.json().snapshots.map((s: Any) => s.id), [ids.user_prompt_submit_2]);
    expectCode(await ws.run(["restore", ids.user_prompt_submit_2!]), 0, "restore prompt 2");
    assertEquals(await Deno.readTextFile(join(ws.path, "b.md")), "# bravo\n");
    assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "ALPHA\n");

    // The body records the agent session and the prompt number; no prompt text.
    const shown = await ws.run(["show", ids.user_prompt_submit_1!, "--json"]);
    const body = shown.json().envelope.body;
    assertEquals(body.facets.metadata.agent, { harness: "claude-code", session_id: SESSION });
    assertEquals(body.cursors.message, 1);
    assertEquals(body.source.kind, "claude-code");
    assert(body.source.id.startsWith(`${SESSION}:UserPromptSubmit:`));
    assert(
      !JSON.stringify(shown.json()).includes("Rename the helper"),
      "prompt text kept only when asked",
    );
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all");
  });
});

Deno.test("hook: prompt text only with --record-prompts and nothing on stdout without --json", async () => {
  await withStore(async (ws) => {
    const quiet = await hook(ws, await payload("user_prompt_submit_1", ws.path));
    expectCode(quiet, 0, "hook");
    assertEquals(quiet.stdout, "");
    const recorded = await hook(ws, await payload("user_prompt_submit_2", ws.path), [
      "--record-prompts",
      "--json",
    ]);
    const shown = await ws.run(["show", recorded.json().id, "--json"]);
    assertEquals(shown.json().envelope.body.reason, "UserPromptSubmit: Now delete b.md");
  });
});

Deno.test("hook: problems go to stderr and exit 0, or fail with --strict", async () => {
  await withStore(async (ws) => {
    const before = (await ws.run(["list", "--all", "--json"])).json().snapshots.length;
    const cases: [string, string | Uint8Array, number][] = [
      ["malformed JSON", "{not json", 2],
      ["a duplicate key", '{"hook_event_name":"Stop","hook_event_name":"Stop"}', 2],
      ["no event name", `{"session_id":"x","cwd":${JSON.stringify(ws.path)}}`, 2],
      ["a session id with a colon", `{"session_id":"a:b","hook_event_name":"Stop"}`, 2],
      ["a relative cwd", '{"hook_event_name":"Stop","cwd":"relative/dir"}', 2],
      [
        "a cwd that is no directory",
        `{"hook_event_name":"Stop","cwd":${JSON.stringify(join(ws.path, "a.txt"))}}`,
        2,
      ],
      ["an array", "[]", 2],
      ["more than 4 MiB", new Uint8Array(4 * 1024 * 1024 + 1).fill(0x20), 2],
    ];
    for (const [what, stdin, strictCode] of cases) {
      const lenient = await hook(ws, stdin);
      expectCode(lenient, 0, what);
      assertEquals(lenient.stdout, "", `${what}: nothing on stdout`);
      assert(lenient.stderr.includes("ctxsnap: error:"), `${what}: ${lenient.stderr}`);
      expectCode(await hook(ws, stdin, ["--strict"]), strictCode, `${what} --strict`);
    }
    // An unknown harness or option is reported too, without failing the agent.
    expectCode(await ws.run(["hook", "cursor"], { stdin: "{}" }), 0, "unknown harness");
    expectCode(
      await ws.run(["hook", "claude-code", "--bogus"], { stdin: "{}" }),
      0,
      "unknown option",
    );
    assertEquals(
      (await ws.run(["list", "--all", "--json"])).json().snapshots.length,
      before,
      "nothing recorded",
    );
  });
});

Deno.test("hook: a missing store is reported and never created", async () => {
  const ws = await tempWorkspace();
  try {
    const result = await hook(ws, await payload("stop", ws.path));
    expectCode(result, 0, "hook without a store");
    assert(result.stderr.includes("No ctxsnap store"), result.stderr);
    assert(!(await exists(join(ws.path, ".ctxsnap"))), "no store created");
    expectCode(await hook(ws, await payload("stop", ws.path), ["--strict"]), 10, "--strict");
  } finally {
    await ws.cleanup();
  }
});
