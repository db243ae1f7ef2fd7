/**
 * `ctxsnap hook gemini-cli|codex|cursor|opencode` fed each agent's recorded
 * payloads (tests/fixtures/agents/): events mapped to the one agent-session
 * model, prompts numbered by each agent's way of naming a turn, retries
 * recognised by the agent's own ids (and never where it gives none), what
 * each agent expects on stdout, and one test per refusal of hostile input
 * (exit 0, one escaped stderr line, nothing recorded).
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../_assert.ts";
import { type CliResult, expectCode, type TempWorkspace, withStore } from "../../_cli.ts";
import { fixture, hook, queryStore } from "./_session.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

async function send(ws: TempWorkspace, agent: string, name: string, flags = ["--json"]) {
  const result = await hook(ws, agent, await fixture(ws, agent, `${name}.json`), flags);
  expectCode(result, 0, `${agent} ${name}`);
  assertEquals(result.stderr, "", `${agent} ${name}`);
  return flags.includes("--json") ? result.json() : result;
}

function events(ws: TempWorkspace): { kind: string; model_kind: string; prompt: number | null }[] {
  return queryStore(
    ws,
    "SELECT kind, model_kind, prompt FROM agent_events ORDER BY seq",
  ) as { kind: string; model_kind: string; prompt: number | null }[];
}

/** A refusal: exit 0, one escaped line on stderr, no event recorded. */
function assertRefused(ws: TempWorkspace, result: CliResult, what: string, includes: string): void {
  expectCode(result, 0, what);
  assert(result.stderr.startsWith("ctxsnap hook: error: "), `${what}: ${result.stderr}`);
  assertEquals(result.stderr.indexOf("\n"), result.stderr.length - 1, what);
  assert(result.stderr.includes(includes), `${what}: ${result.stderr}`);
  assertEquals(queryStore(ws, "SELECT * FROM agent_events").length, 0, what);
}

Deno.test("hook gemini-cli: BeforeAgent numbers the prompts, AfterTool with an error is a tool error, equal bytes are never a retry, stdout is {}", async () => {
  await withStore(async (ws) => {
    await send(ws, "gemini-cli", "session_start");
    assertEquals((await send(ws, "gemini-cli", "before_agent_1")).prompt, 1);
    await send(ws, "gemini-cli", "before_tool_1");
    await Deno.writeTextFile(join(ws.path, "a.txt"), "edited\n");
    const after = await send(ws, "gemini-cli", "after_tool_1");
    assertEquals([after.prompt, after.created, after.duplicate], [1, true, false]);
    // Gemini gives no tool-call id: the same bytes again are another event.
    const again = await send(ws, "gemini-cli", "after_tool_1");
    assertEquals([again.duplicate, again.position], [false, after.position + 1]);
    await send(ws, "gemini-cli", "after_tool_error");
    await send(ws, "gemini-cli", "after_agent_1");
    assertEquals((await send(ws, "gemini-cli", "before_agent_2")).prompt, 2);
    await send(ws, "gemini-cli", "pre_compress");
    const text = await send(ws, "gemini-cli", "session_end", []) as CliResult;
    assertEquals(text.stdout, "{}\n");
    assertEquals(events(ws).map((e) => e.model_kind), [
      "session_start",
      "prompt",
      "tool_pre",
      "tool_post",
      "tool_post",
      "tool_error",
      "turn_end",
      "prompt",
      "compact",
      "session_end",
    ]);
    const listed = await ws.run(["list", "--prompts", "--agent-session", "a1b2c3d4", "--json"]);
    expectCode(listed, 0, "list");
  });
});

Deno.test("hook codex: turn_id names the prompt, a redelivered prompt or tool call is a retry, stdout stays empty", async () => {
  await withStore(async (ws) => {
    await send(ws, "codex", "session_start");
    const p1 = await send(ws, "codex", "prompt_1");
    assertEquals(p1.prompt, 1);
    const pre = await send(ws, "codex", "pre_patch_1");
    assertEquals(pre.prompt, 1);
    const retry = await send(ws, "codex", "pre_patch_1");
    assertEquals([retry.duplicate, retry.id, retry.position], [true, pre.id, pre.position]);
    const promptRetry = await send(ws, "codex", "prompt_1");
    assertEquals([promptRetry.duplicate, promptRetry.prompt], [true, 1]);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "patched\n");
    assertEquals((await send(ws, "codex", "post_patch_1")).created, true);
    const bash = await send(ws, "codex", "post_bash_1");
    assertEquals(bash.transcript, null);
    await send(ws, "codex", "stop_1");
    assertEquals((await send(ws, "codex", "prompt_2")).prompt, 2);
    const text = await send(ws, "codex", "interrupt", []) as CliResult;
    assertEquals(text.stdout, "");
    assertEquals(events(ws).at(-1), { kind: "Interrupt", model_kind: "turn_error", prompt: 2 });
  });
});

Deno.test("hook cursor: conversation_id is the session, generation_id the prompt, tool_use_id retries only where Cursor gives one, and every answer allows", async () => {
  await withStore(async (ws) => {
    await send(ws, "cursor", "session_start");
    const p1 = await send(ws, "cursor", "before_submit_prompt_1", []) as CliResult;
    assertEquals(p1.stdout, '{"continue":true}\n');
    const pre = await send(ws, "cursor", "pre_tool_use_1", []) as CliResult;
    assertEquals(pre.stdout, '{"permission":"allow"}\n');
    const retry = await send(ws, "cursor", "pre_tool_use_1");
    assertEquals([retry.duplicate, retry.prompt], [true, 1]);
    // Shell events carry no call id: the same bytes twice are two events.
    const shell1 = await send(ws, "cursor", "before_shell_1");
    const shell2 = await send(ws, "cursor", "before_shell_1");
    assertEquals([shell1.duplicate, shell2.duplicate], [false, false]);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "edited\n");
    const edit = await send(ws, "cursor", "after_file_edit_1");
    assertEquals([edit.created, edit.prompt], [true, 1]);
    await send(ws, "cursor", "stop_1");
    assertEquals((await send(ws, "cursor", "before_submit_prompt_2")).prompt, 2);
    const again = await send(ws, "cursor", "before_submit_prompt_2");
    assertEquals([again.duplicate, again.prompt], [true, 2]);
    await send(ws, "cursor", "stop_error_2");
    const end = await send(ws, "cursor", "session_end", []) as CliResult;
    assertEquals(end.stdout, "{}\n");
    const kinds = events(ws).map((e) => e.model_kind);
    assertEquals(kinds.slice(-3), ["prompt", "turn_error", "session_end"]);
    const sessions = queryStore(ws, "SELECT harness, session_id, cwd FROM agent_sessions") as Any[];
    assertEquals(sessions, [{
      harness: "cursor",
      session_id: "6f0c2a4e-1b3d-4e5f-8a9b-0c1d2e3f4a5b",
      cwd: ws.path,
    }]);
  });
});

Deno.test("hook opencode: the plugin's events map to the model, the user message id names the prompt, callID retries", async () => {
  await withStore(async (ws) => {
    await send(ws, "opencode", "session_created");
    const p1 = await send(ws, "opencode", "chat_message_1", ["--json", "--record-prompts"]);
    assertEquals(p1.prompt, 1);
    const before = await send(ws, "opencode", "tool_before_1");
    const retry = await send(ws, "opencode", "tool_before_1");
    assertEquals([retry.duplicate, retry.id], [true, before.id]);
    await Deno.writeTextFile(join(ws.path, "README.md"), "# readme\n");
    assertEquals((await send(ws, "opencode", "tool_after_1")).created, true);
    await send(ws, "opencode", "session_idle_1");
    assertEquals((await send(ws, "opencode", "chat_message_2")).prompt, 2);
    assertEquals((await send(ws, "opencode", "chat_message_2")).duplicate, true);
    const text = await send(ws, "opencode", "session_error", []) as CliResult;
    assertEquals(text.stdout, "");
    const turns = queryStore(ws, "SELECT prompt, prompt_id, text FROM agent_turns") as Any[];
    assertEquals(turns, [
      { prompt: 1, prompt_id: "msg_01J0A", text: "Add a README section" },
      { prompt: 2, prompt_id: "msg_01J0B", text: null },
    ]);
  });
});

Deno.test("hook gemini-cli refuses an event it cannot map (BeforeModel), answering {} all the same", async () => {
  await withStore(async (ws) => {
    const result = await hook(
      ws,
      "gemini-cli",
      await fixture(ws, "gemini-cli", "before_model.json"),
      [],
    );
    assertRefused(ws, result, "BeforeModel", "is not an event ctxsnap maps");
    assertEquals(result.stdout, "{}\n");
  });
});

Deno.test("hook codex refuses an event name it does not know", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "codex", "stop_1.json"));
    payload.hook_event_name = "TurnAborted";
    assertRefused(ws, await hook(ws, "codex", JSON.stringify(payload)), "unknown", "TurnAborted");
  });
});

Deno.test("hook cursor refuses afterAgentResponse (unconfirmed fields) and prints no answer", async () => {
  await withStore(async (ws) => {
    const result = await hook(
      ws,
      "cursor",
      await fixture(ws, "cursor", "after_agent_response.json"),
      [],
    );
    assertRefused(ws, result, "afterAgentResponse", "is not an event ctxsnap maps");
    assertEquals(result.stdout, "");
  });
});

Deno.test("hook opencode refuses an event without a session (file.edited)", async () => {
  await withStore(async (ws) => {
    const result = await hook(ws, "opencode", await fixture(ws, "opencode", "file_edited.json"));
    assertRefused(ws, result, "file.edited", "is not an event ctxsnap maps");
  });
});

Deno.test("hook gemini-cli refuses a payload larger than 4 MiB", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "gemini-cli", "before_agent_1.json"));
    payload.prompt = "x".repeat(4 * 1024 * 1024);
    assertRefused(ws, await hook(ws, "gemini-cli", JSON.stringify(payload)), "large", "larger");
  });
});

Deno.test("hook codex refuses a payload that is not JSON", async () => {
  await withStore(async (ws) => {
    assertRefused(ws, await hook(ws, "codex", '{"session_id": '), "not JSON", "not valid JSON");
  });
});

Deno.test("hook cursor refuses a payload that is not an object", async () => {
  await withStore(async (ws) => {
    assertRefused(ws, await hook(ws, "cursor", "[1, 2]"), "array", "is not an object");
  });
});

Deno.test("hook gemini-cli refuses a session_id that is not an id", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "gemini-cli", "session_start.json"));
    payload.session_id = "../../etc";
    assertRefused(ws, await hook(ws, "gemini-cli", JSON.stringify(payload)), "id", "session_id");
  });
});

Deno.test("hook codex refuses a relative cwd", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "codex", "prompt_1.json"));
    payload.cwd = "app";
    assertRefused(ws, await hook(ws, "codex", JSON.stringify(payload)), "cwd", "absolute path");
  });
});

Deno.test("hook codex refuses a tool name holding control characters", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "codex", "pre_patch_1.json"));
    payload.tool_name = "Bash\u001b[2J";
    assertRefused(ws, await hook(ws, "codex", JSON.stringify(payload)), "tool", "tool_name");
  });
});

Deno.test("hook cursor refuses a prompt that is not a string", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "cursor", "before_submit_prompt_1.json"));
    payload.prompt = { text: "x" };
    assertRefused(ws, await hook(ws, "cursor", JSON.stringify(payload)), "prompt", "prompt");
  });
});

Deno.test("hook cursor refuses workspace_roots that is not a list", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "cursor", "stop_1.json"));
    payload.workspace_roots = "/etc";
    assertRefused(
      ws,
      await hook(ws, "cursor", JSON.stringify(payload)),
      "roots",
      "workspace_roots",
    );
  });
});

Deno.test("hook opencode refuses data that is not an object", async () => {
  await withStore(async (ws) => {
    const payload = { hook_event_name: "session.idle", directory: ws.path, data: "ses_1" };
    assertRefused(ws, await hook(ws, "opencode", JSON.stringify(payload)), "data", "data");
  });
});

Deno.test("hook opencode refuses message parts that are not objects", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "opencode", "chat_message_1.json"));
    payload.data.parts = ["text"];
    const result = await hook(ws, "opencode", JSON.stringify(payload), ["--record-prompts"]);
    assertRefused(ws, result, "parts", "parts");
  });
});

Deno.test("hook cursor refuses an event without conversation_id (nothing to number)", async () => {
  await withStore(async (ws) => {
    const payload = JSON.parse(await fixture(ws, "cursor", "stop_1.json"));
    delete payload.conversation_id;
    assertRefused(
      ws,
      await hook(ws, "cursor", JSON.stringify(payload)),
      "no session",
      "session_id",
    );
  });
});
