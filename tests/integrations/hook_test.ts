/**
 * `ctxsnap hook claude-code`, as a real process fed the
 * sample payloads in tests/fixtures/claude-code/ on standard input: one
 * checkpoint per event, retries return the same snapshot, prompts counted,
 * "the state before prompt N" listed and restored; malformed JSON, a missing
 * store, a bad cwd and oversized input are reported on stderr with exit 0
 * (the agent is never blocked), and with `--strict` fail.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import {
  type CliResult,
  expectCode,
  REPO,
  type RunMode,
  type TempWorkspace,
  tempWorkspace,
  withStore,
} from "../_cli.ts";
import { exists } from "../_util.ts";

const FIXTURES = join(REPO, "tests", "fixtures", "claude-code");
const SESSION = "3f6c0b0e-7b1c-4a35-9a53-2b1d6b2f9e10";

async function payload(name: string, cwd: string): Promise<string> {
  const text = await Deno.readTextFile(join(FIXTURES, `${name}.json`));
  return text.replaceAll("/PROJECT", cwd);
}

/**
 * Runs the hook with `stdin`: in-process (the hook reads standard input
 * through the run's view of it), or as a subprocess where a real pipe on
 * descriptor 0 is the point (the first test, which also feeds a retry).
 */
function hook(
  ws: TempWorkspace,
  stdin: string | Uint8Array,
  flags: string[] = [],
  mode: RunMode = "in-process",
): Promise<CliResult> {
  return ws.run(["hook", "claude-code", ...flags], { stdin, mode });
}

// deno-lint-ignore no-explicit-any
type Any = any;

/** The hook's report: exactly one line, escaped (no control character but its newline). */
function assertOneLine(stderr: string, what: string): void {
  assert(stderr.startsWith("ctxsnap hook: error: "), `${what}: ${stderr}`);
  assert(stderr.endsWith("\n") && stderr.indexOf("\n") === stderr.length - 1, `${what}: ${stderr}`);
  // deno-lint-ignore no-control-regex
  assert(!/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(stderr), `${what}: ${stderr}`);
}

Deno.test("hook: each event is recorded against the snapshot holding the workspace after it, and the state before prompt N restores", async () => {
  await withStore(async (ws) => {
    const ids: Record<string, string> = {};
    const send = async (name: string, edit?: () => Promise<void>, callId?: string) => {
      await edit?.();
      let text = await payload(name, ws.path);
      if (callId !== undefined) text = text.replace(/"toolu_[^"]*"/, JSON.stringify(callId));
      const result = await hook(ws, text, ["--json"], "subprocess");
      expectCode(result, 0, name);
      ids[name] = result.json().id;
      return result.json();
    };
    const start = await send("session_start");
    assertEquals(start.prompt, null);
    const prompt1 = await send("user_prompt_submit_1");
    assertEquals(prompt1.prompt, 1);
    // Nothing changed since SessionStart: the same snapshot holds the state before prompt 1.
    assertEquals([prompt1.id, prompt1.created], [start.id, false]);
    // Without prompt_id, the same bytes again are a second prompt (a user typing "continue"
    // twice), never taken for a retry.
    const again1 = await hook(ws, await payload("user_prompt_submit_1", ws.path), ["--json"]);
    assertEquals([again1.json().prompt, again1.json().duplicate], [2, false]);
    await send(
      "post_tool_use_write",
      () => Deno.writeTextFile(join(ws.path, "src/main.ts"), "console.log('delta');\n"),
    );
    await send("post_tool_use_bash", () => Deno.writeTextFile(join(ws.path, "a.txt"), "ALPHA\n"));
    await send("stop");
    const prompt3 = await send("user_prompt_submit_2");
    assertEquals(prompt3.prompt, 3);
    const removed = await send(
      "post_tool_use_write",
      () => Deno.remove(join(ws.path, "b.md")),
      "toolu_02SecondWrite",
    );
    assertEquals([removed.created, removed.prompt], [true, 3]);
    await send("pre_compact");
    await send("session_end");

    // A redelivered event (same tool_use_id or prompt_id) returns the snapshot it was recorded with.
    for (const name of ["post_tool_use_bash", "user_prompt_submit_2"]) {
      const again = await hook(ws, await payload(name, ws.path), ["--json"]);
      expectCode(again, 0, `${name} again`);
      assertEquals(again.json().id, ids[name], `${name} retried`);
      assertEquals([again.json().created, again.json().duplicate], [false, true]);
    }

    const listed = await ws.run(["list", "--agent-session", SESSION, "--json"]);
    expectCode(listed, 0, "list --agent-session");
    const items = listed.json().snapshots as Any[];
    const events = items.map((s) => s.agent.event).reverse();
    assertEquals(events, [
      "SessionStart",
      "UserPromptSubmit",
      "UserPromptSubmit",
      "PostToolUse",
      "PostToolUse",
      "Stop",
      "UserPromptSubmit",
      "PostToolUse",
      "PreCompact",
      "SessionEnd",
    ]);
    assert(items.every((s) => s.agent.session_id === SESSION));
    const bash = items.find((s) => s.agent.tool === "Bash");
    assertEquals(bash.id, ids.post_tool_use_bash);
    // Stop found the workspace as Bash left it: the same snapshot, not a new one.
    const stop = items.find((s) => s.agent.event === "Stop");
    assertEquals([stop.id, stop.agent.created], [bash.id, false]);
    assertEquals(bash.reason, "PostToolUse Bash");
    assertEquals(bash.agent.tool_use_id, "toolu_01Hc8PZbQn4sJt6WfYy2DkR3");

    // The state before prompt 3, by list and by revision, and going back to it.
    const before3 = await ws.run(["list", "--agent-session", SESSION, "--prompt", "3", "--json"]);
    assertEquals(before3.json().snapshots.map((s: Any) => s.id), [ids.user_prompt_submit_2]);
    const shownRev = await ws.run(["show", `prompt:3:${SESSION.slice(0, 8)}`, "--json"]);
    assertEquals(shownRev.json().id, ids.user_prompt_submit_2);
    expectCode(await ws.run(["restore", "prompt:3"]), 0, "restore prompt 3");
    assertEquals(await Deno.readTextFile(join(ws.path, "b.md")), "# bravo\n");
    assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "ALPHA\n");
    const none = await ws.run(["list", "--agent-session", SESSION, "--prompt", "4"]);
    expectCode(none, 4, "no prompt 4 (not found)");
    assert(none.stderr.includes("has no prompt 4: it has 3 prompts"), none.stderr);

    // The body records the agent session and the prompt number; no prompt text, no digest.
    const shown = await ws.run(["show", ids.post_tool_use_bash!, "--json"]);
    const body = shown.json().envelope.body;
    assertEquals(body.facets.metadata.agent, {
      harness: "claude-code",
      session_id: SESSION,
      event: "PostToolUse",
      prompt: 2,
    });
    assertEquals(body.source, null);
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
    expectCode(recorded, 0, "hook --record-prompts");
    const listed = await ws.run(["list", "--agent-session", SESSION, "--prompt", "2", "--json"]);
    assertEquals(listed.json().snapshots[0].agent.text, "Now delete b.md");
    const first = await ws.run(["list", "--agent-session", SESSION, "--prompt", "1", "--json"]);
    assertEquals(first.json().snapshots[0].agent.text, null);
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
      assertOneLine(lenient.stderr, what);
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

Deno.test("hook: a store it did not create or adopt is never opened nor its watch.json followed (stderr, exit 0); mcp and watch refuse it", async () => {
  // Another user's store, unpacked into this workspace with its modes (an
  // archive keeps them; a git clone would not even make `run/` private),
  // with a `run/watch.json` naming a socket the "attacker" listens on.
  const origin = await tempWorkspace();
  const ws = await tempWorkspace();
  const listener = Deno.listen({ transport: "unix", path: join(ws.root, "evil.sock") });
  let connections = 0;
  const accepting = (async () => {
    for await (const connection of listener) {
      connections++;
      connection.close();
    }
  })();
  try {
    expectCode(await origin.run(["init"]), 0, "init elsewhere");
    expectCode(await origin.run(["create", "-m", "theirs"]), 0, "create elsewhere");
    const store = join(ws.path, ".ctxsnap");
    const copied = await new Deno.Command("cp", {
      args: ["-a", join(origin.path, ".ctxsnap"), store],
    }).output();
    assert(copied.success, "cp -a of the store");
    await Deno.mkdir(join(store, "run"), { mode: 0o700 });
    await Deno.chmod(join(store, "run"), 0o700);
    await Deno.writeTextFile(
      join(store, "run", "watch.json"),
      JSON.stringify({
        protocol: 1,
        pid: Deno.pid,
        token: "ab".repeat(32),
        socket: join(ws.root, "evil.sock"),
        workspace: ws.path,
        store,
        started_at: "2026-11-30T10:00:00.000Z",
        version: "0.1.0",
      }),
      { mode: 0o600 },
    );
    const files = async () => {
      const out = new Map<string, string>();
      const walk = async (dir: string) => {
        for await (const entry of Deno.readDir(dir)) {
          const abs = join(dir, entry.name);
          if (entry.isDirectory) await walk(abs);
          else {out.set(
              abs,
              entry.isFile
                ? Array.from(
                  new Uint8Array(await crypto.subtle.digest("SHA-256", await Deno.readFile(abs))),
                  (b) => b.toString(16).padStart(2, "0"),
                ).join("")
                : "",
            );}
        }
      };
      await walk(store);
      return out;
    };
    const before = await files();

    const lenient = await hook(ws, await payload("user_prompt_submit_1", ws.path), [
      "--record-prompts",
    ]);
    expectCode(lenient, 0, "hook on a store that is not this user's");
    // On stdout only the user's notice (Claude Code's systemMessage), never the store's content.
    const notice = JSON.parse(lenient.stdout) as Record<string, string>;
    assertEquals(Object.keys(notice), ["systemMessage"]);
    assert(
      notice.systemMessage!.startsWith("ctxsnap: no checkpoint was recorded: "),
      lenient.stdout,
    );
    assertOneLine(lenient.stderr, "a store not this user's");
    assert(lenient.stderr.includes("not created or adopted by you"), lenient.stderr);
    assert(lenient.stderr.includes("init --adopt"), lenient.stderr);
    expectCode(
      await hook(ws, await payload("stop", ws.path), ["--strict"]),
      1,
      "hook --strict on a store that is not this user's",
    );
    expectCode(await ws.run(["create", "-m", "x"]), 1, "create on a store that is not this user's");
    expectCode(await ws.run(["watch", "--status"]), 1, "watch --status");
    // The long-lived commands refuse it before serving (a subprocess: they would serve stdin).
    for (const args of [["watch"], ["mcp"]]) {
      const result = await ws.run(args, { mode: "subprocess", stdin: "", timeoutMs: 30_000 });
      expectCode(result, 1, args[0]!);
      assert(result.stderr.includes("init --adopt"), result.stderr);
    }
    assertEquals(connections, 0, "the socket its watch.json names was never connected to");
    assertEquals(await files(), before, "nothing in the store was written");
  } finally {
    listener.close();
    await accepting.catch(() => {});
    await ws.cleanup();
    await origin.cleanup();
  }
});

function git(cwd: string, ...args: string[]): void {
  const out = new Deno.Command("git", {
    args: ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

const AWS_KEY = "AKIAQ3EGRZ7XK5LMNP2W";

Deno.test("hook: tells the user once per agent session what a checkpoint left out (systemMessage on stdout, never to the model), --json carries it", async () => {
  await withStore(async (ws) => {
    await Deno.mkdir(join(ws.path, "testdata/tls"), { recursive: true });
    await Deno.writeTextFile(join(ws.path, "testdata/.env.test"), "DB=fixture\n");
    await Deno.writeTextFile(join(ws.path, "creds.txt"), `aws ${AWS_KEY}\n`);
    const send = (session: string, id: string, flags: string[] = []) =>
      hook(
        ws,
        JSON.stringify({
          session_id: session,
          cwd: ws.path,
          hook_event_name: "PostToolUse",
          tool_name: "Write",
          tool_use_id: id,
        }),
        flags,
      );
    const first = await send("sess-told", "toolu_1");
    expectCode(first, 0, "first");
    const message = JSON.parse(first.stdout).systemMessage as string;
    assertEquals(Object.keys(JSON.parse(first.stdout)), ["systemMessage"]);
    assert(message.includes('"testdata/.env.test" (secret by name)'), message);
    assert(message.includes('"creds.txt" (holds a key or token)'), message);
    assert(!message.includes(AWS_KEY), "the secret itself is never echoed");
    assert(!message.includes("\n"), "one line");
    // Told once: the next checkpoint of the session says nothing about them.
    await Deno.writeTextFile(join(ws.path, "a.txt"), "edited\n");
    const second = await send("sess-told", "toolu_2");
    assertEquals(second.stdout, "");
    // A new omission is told, alone.
    await Deno.writeTextFile(join(ws.path, "deploy.pem"), "not a key\n");
    const third = await send("sess-told", "toolu_3", ["--json"]);
    assertEquals(third.json().omitted, [{ path: "deploy.pem", reason: "secret" }]);
    // On an event whose systemMessage Claude Code discards, nothing is told, nor marked told.
    await Deno.writeTextFile(join(ws.path, "late.key"), "not a key\n");
    const ending = await hook(
      ws,
      JSON.stringify({ session_id: "sess-told", cwd: ws.path, hook_event_name: "PreCompact" }),
      ["--json"],
    );
    assertEquals(ending.json().omitted, []);
    const after = await send("sess-told", "toolu_5", ["--json"]);
    assertEquals(after.json().omitted, [{ path: "late.key", reason: "secret" }]);
    await Deno.remove(join(ws.path, "late.key"));
    // Another agent session is told everything once.
    const other = await send("sess-other", "toolu_4", ["--json"]);
    assertEquals(
      other.json().omitted.map((e: Any) => e.path).sort(),
      ["creds.txt", "deploy.pem", "testdata/.env.test"],
    );
  });
});

Deno.test("restore names every path that existed at the target but was never captured", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, ".env"), "TOKEN=local\n");
    await Deno.writeTextFile(join(ws.path, ".gitignore"), "build/\n");
    await Deno.mkdir(join(ws.path, "build"));
    await Deno.writeTextFile(join(ws.path, "build/out.js"), "x\n");
    const made = await ws.run([
      "hook",
      "claude-code",
      "--json",
    ], {
      stdin: JSON.stringify({
        session_id: "sess-clean",
        cwd: ws.path,
        hook_event_name: "UserPromptSubmit",
      }),
    });
    expectCode(made, 0, "hook");
    // The agent runs `git clean -fdx`: the .env and the build output are gone.
    await Deno.remove(join(ws.path, ".env"));
    await Deno.remove(join(ws.path, "build"), { recursive: true });
    const restored = await ws.run(["restore", "prompt:1", "--json"]);
    expectCode(restored, 0, "restore");
    assertEquals(restored.json().not_captured, [
      { path: ".env", reason: "secret" },
      { path: "build", reason: "ignored" },
    ]);
    const text = await ws.run(["restore", "prompt:1", "--dry-run"]);
    assert(text.stdout.includes("never captured"), text.stdout);
    assert(text.stdout.includes("not captured  .env  (secret)"), text.stdout);
    assert(!(await exists(join(ws.path, ".env"))), "nothing invented");
  });
});

Deno.test("a file git tracks whose name looks like a secret is still left out by name (and told); a real key in a tracked file is caught by content", async () => {
  await withStore(async (ws) => {
    await Deno.mkdir(join(ws.path, "testdata/tls"), { recursive: true });
    await Deno.writeTextFile(join(ws.path, "testdata/tls/server.key"), "fixture, not a key\n");
    await Deno.writeTextFile(join(ws.path, "fixtures.txt"), `key = "${AWS_KEY}"\n`);
    git(ws.path, "init", "-q");
    git(ws.path, "add", "testdata", "fixtures.txt", "a.txt");
    git(ws.path, "commit", "-q", "-m", "fixtures");
    const made = await ws.run(["create", "-m", "tracked", "--json"]);
    expectCode(made, 0, "create");
    const skipped = await ws.run(["show", made.json().id, "--skipped", "--json"]);
    const records = JSON.stringify(skipped.json());
    assert(records.includes('"path":"testdata/tls/server.key","reason":"secret"'), records);
    assert(records.includes('"path":"fixtures.txt","reason":"secret_content"'), records);
  });
});

Deno.test("hook: a byte-identical Stop after prompt 2 checkpoints prompt 2's end state, never taken for prompt 1's retry", async () => {
  await withStore(async (ws) => {
    const send = async (name: string) => {
      const result = await hook(ws, await payload(name, ws.path), ["--json"]);
      expectCode(result, 0, name);
      return result.json();
    };
    await send("session_start");
    await send("user_prompt_submit_1");
    await Deno.writeTextFile(join(ws.path, "a.txt"), "end of prompt 1\n");
    const stop1 = await send("stop");
    assertEquals([stop1.created, stop1.prompt], [true, 1]);
    await send("user_prompt_submit_2");
    await Deno.writeTextFile(join(ws.path, "a.txt"), "end of prompt 2\n");
    const stop2 = await send("stop"); // the very same bytes as the first Stop
    assertEquals([stop2.created, stop2.prompt], [true, 2]);
    assert(stop2.id !== stop1.id, "the second Stop returned the first Stop's snapshot");
    // The checkpoint holds prompt 2's end state.
    await Deno.writeTextFile(join(ws.path, "a.txt"), "later\n");
    expectCode(await ws.run(["restore", stop2.id, "--files", "--force"]), 0, "restore stop 2");
    assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "end of prompt 2\n");
    // The same bytes a third time are an event of their own, never a redelivery: nothing changed
    // since the restore, so it is attached to the snapshot holding the workspace now.
    const head = (await ws.run(["show", "HEAD", "--json"])).json().id;
    const again = await send("stop");
    assertEquals([again.id, again.created, again.duplicate], [head, false, false]);
  });
});

Deno.test("hook: PreToolUse and PostToolUse of one tool call are two events, the edit between them checkpointed, never a redelivery", async () => {
  await withStore(async (ws) => {
    expectCode(await hook(ws, await payload("user_prompt_submit_1", ws.path)), 0, "prompt");
    const post = JSON.parse(await payload("post_tool_use_write", ws.path));
    const { tool_response: _, ...pre } = { ...post, hook_event_name: "PreToolUse" };
    const before = await hook(ws, JSON.stringify(pre), ["--json"]);
    expectCode(before, 0, "PreToolUse");
    // The tool runs: the file it writes must be in the PostToolUse checkpoint.
    await Deno.writeTextFile(join(ws.path, "src/main.ts"), "console.log('delta');\n");
    const after = await hook(ws, JSON.stringify(post), ["--json"]);
    expectCode(after, 0, "PostToolUse");
    assertEquals([after.json().duplicate, after.json().created], [false, true]);
    assert(after.json().id !== before.json().id, "PostToolUse has its own snapshot");
    // Each is still recognised on redelivery, as itself.
    const again = await hook(ws, JSON.stringify(pre), ["--json"]);
    assertEquals([again.json().id, again.json().duplicate], [before.json().id, true]);
  });
});

Deno.test("hook: prompt:N alone names the latest agent session that has prompts; an event without session_id is refused in one line and records nothing; a forgotten prompt state says so", async () => {
  await withStore(async (ws) => {
    const send = async (name: string, session = SESSION) => {
      const text = (await payload(name, ws.path)).replaceAll(SESSION, session);
      const result = await hook(ws, text, ["--json"]);
      expectCode(result, 0, name);
      return result.json();
    };
    await send("session_start");
    const first = await send("user_prompt_submit_1");
    // Another agent session only starts: it has no prompt, so prompt:1 still names the first.
    await send("session_start", "cccccccc-0000-4000-8000-000000000000");
    const shown = await ws.run(["show", "prompt:1", "--json"]);
    expectCode(shown, 0, "show prompt:1");
    assertEquals(shown.json().id, first.id);
    assertEquals(shown.json().prompt, {
      number: 1,
      agent_session: SESSION,
      harness: "claude-code",
    });
    const said = await ws.run(["show", "prompt:1"]);
    assert(
      said.stdout.includes(`the state before prompt 1 of agent session ${SESSION} (claude-code)`),
      said.stdout,
    );
    // No session_id: one line on stderr, exit 0, nothing recorded, no session "-".
    const bare = await hook(ws, JSON.stringify({ hook_event_name: "Stop", cwd: ws.path }));
    expectCode(bare, 0, "an event without session_id");
    assertOneLine(bare.stderr, "an event without session_id");
    assert(bare.stderr.includes("has no session_id"), bare.stderr);
    const prompts = await ws.run(["list", "--prompts", "--json"]);
    assertEquals(prompts.json().agent_session.session_id, SESSION);
    // The state before prompt 1 forgotten: show, list --agent-session --prompt and list --prompts
    // all say so.
    await Deno.writeTextFile(join(ws.path, "later.txt"), "later\n");
    expectCode(await ws.run(["create", "-m", "later"]), 0, "create");
    const forget = await ws.run(["forget", first.id]);
    expectCode(forget, 0, "forget prompt 1's snapshot");
    const gone = await ws.run(["show", "prompt:1"]);
    expectCode(gone, 4, "show of a forgotten prompt state");
    assert(gone.stderr.includes("was forgotten"), gone.stderr);
    expectCode(
      await ws.run(["list", "--agent-session", SESSION, "--prompt", "1"]),
      4,
      "list --prompt of a forgotten state",
    );
    const listed = (await ws.run(["list", "--prompts", "--json"])).json();
    assertEquals(listed.prompts[0].forgotten, true);
  });
});

Deno.test("hook: list --agent-session shows each event at its own time, not the time of the older snapshot it names", async () => {
  await withStore(async (ws) => {
    const made = await ws.run(["create", "-m", "before the agent", "--json"]);
    expectCode(made, 0, "create");
    // The clock moves past the snapshot's second; the event then names that same snapshot.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const event = await hook(ws, await payload("user_prompt_submit_1", ws.path), ["--json"]);
    expectCode(event, 0, "UserPromptSubmit");
    assertEquals([event.json().id, event.json().created], [made.json().id, false]);
    const rows = await ws.run(["list", "--agent-session", SESSION, "--json"]);
    const row = rows.json().snapshots[0] as Any;
    assert(row.agent.at.slice(0, 19) !== row.created_at.slice(0, 19), JSON.stringify(row));
    const text = await ws.run(["list", "--agent-session", SESSION]);
    assert(text.stdout.includes(row.agent.at.replace("T", " ").slice(0, 19)), text.stdout);
  });
});
