/**
 * `ctxsnap resume` and the transcripts behind it: a recorded Claude Code
 * session with a transcript in the real format is resumed from prompt 3
 * (files and conversation as they were before it); transcripts are linked
 * at each event and kept as appended segments; `show` prints a
 * checkpoint's conversation slice, escaped.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../_assert.ts";
import { expectCode, withStore } from "../../_cli.ts";
import { exists } from "../../_util.ts";
import {
  CLAUDE_SESSION,
  claudeTranscriptPath,
  fixture,
  hook,
  queryStore,
  recordClaudeSession,
  transcriptLines,
  writeTranscript,
} from "./_session.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("resume: a recorded Claude Code session resumes from prompt 3 with the files and the conversation as they were before it", async () => {
  await withStore(async (ws) => {
    await recordClaudeSession(ws);
    const path = claudeTranscriptPath(ws);
    const original = await Deno.readFile(path);
    const notes = join(ws.path, "notes.txt");
    assertEquals(await exists(notes), false);

    const result = await ws.run([
      "resume",
      "--agent-session",
      CLAUDE_SESSION,
      "--prompt",
      "3",
      "--json",
    ]);
    expectCode(result, 0, "resume");
    const r = result.json();
    assert(/^[0-9a-f-]{36}$/.test(r.session_id), r.session_id);
    assert(r.session_id !== CLAUDE_SESSION);
    assertEquals(
      r.transcript_path,
      join(ws.home, ".claude/projects/-project", `${r.session_id}.jsonl`),
    );
    assertEquals(r.continue_command, `claude --resume ${r.session_id}`);
    assertEquals(r.prompt_text, "Now delete the notes file");
    // Files: the state before prompt 3 (notes.txt with two lines, deleted by prompt 3).
    assertEquals(await Deno.readTextFile(notes), "one\ntwo\n");
    // Conversation: exactly the transcript's prefix before prompt 3's line, with only the session
    // id rewritten (prompt 2's text, which quotes the old id, is left alone).
    const lines = await transcriptLines(ws, "claude-code");
    const expected = lines.slice(0, 10).map((l) =>
      l.replace(`"sessionId":"${CLAUDE_SESSION}"`, `"sessionId":"${r.session_id}"`)
    ).join("");
    assertEquals(await Deno.readTextFile(r.transcript_path), expected);
    assert(expected.includes(`the session id ${CLAUDE_SESSION} stays`));
    assertEquals((await Deno.stat(r.transcript_path)).mode! & 0o777, 0o600);
    // The original transcript is never modified.
    assertEquals(await Deno.readFile(path), original);
    // Undoable: undo brings back the workspace the resume replaced.
    expectCode(await ws.run(["undo"]), 0, "undo");
    assertEquals(await exists(notes), false);
  });
});

Deno.test("resume --dry-run plans the restore and names no written fork: nothing changes", async () => {
  await withStore(async (ws) => {
    await recordClaudeSession(ws);
    const dir = join(ws.home, ".claude/projects/-project");
    const before = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    const result = await ws.run([
      "resume",
      "--agent-session",
      CLAUDE_SESSION.slice(0, 8),
      "--prompt",
      "2",
      "--dry-run",
    ]);
    expectCode(result, 0, "dry run");
    assert(result.stdout.includes("would fork the conversation (6 lines)"), result.stdout);
    assert(result.stdout.includes("continue with: claude --resume "), result.stdout);
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name).sort(), before);
    assertEquals(await exists(join(ws.path, "notes.txt")), false);
  });
});

Deno.test("resume of a prompt the session does not have is refused, nothing restored or written", async () => {
  await withStore(async (ws) => {
    await recordClaudeSession(ws);
    const result = await ws.run(["resume", "--agent-session", CLAUDE_SESSION, "--prompt", "9"]);
    expectCode(result, 4, "no prompt 9");
    assert(result.stderr.includes("has no prompt 9: it has 3 prompts"), result.stderr);
    assertEquals(await exists(join(ws.path, "notes.txt")), false);
  });
});

Deno.test("hook: each event links the transcript's path, length and prefix SHA-256, and the store keeps only the appended bytes", async () => {
  await withStore(async (ws) => {
    const results = await recordClaudeSession(ws);
    const path = claudeTranscriptPath(ws);
    const bytes = await Deno.readFile(path);
    const stop3 = results.stop_3!.transcript as Any;
    assertEquals(stop3.path, path);
    assertEquals(stop3.len, bytes.byteLength);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    assertEquals(stop3.sha256, [...digest].map((b) => b.toString(16).padStart(2, "0")).join(""));
    assertEquals(stop3.restarted, false);
    // SessionStart came before the agent wrote the file.
    assertEquals((results.session_start!.transcript as Any).refused, "unreadable");
    const rows = queryStore(
      ws,
      "SELECT chain, start, length FROM agent_transcripts ORDER BY chain, start",
    ) as { chain: number; start: number; length: number }[];
    // One chain of contiguous segments, together exactly the file: no copies.
    let at = 0;
    for (const row of rows) {
      assertEquals([row.chain, row.start], [1, at]);
      at += row.length;
    }
    assertEquals(at, bytes.byteLength);
  });
});

Deno.test("hook: a transcript that no longer starts with the kept bytes starts a new segment chain and says so", async () => {
  await withStore(async (ws) => {
    const lines = await transcriptLines(ws, "claude-code");
    const path = claudeTranscriptPath(ws);
    await writeTranscript(path, lines, 2);
    expectCode(
      await hook(ws, "claude-code", await fixture(ws, "claude-code", "prompt_1.json")),
      0,
      "prompt 1",
    );
    // Rewritten in place (not an append): the old bytes are not trusted.
    await Deno.writeTextFile(path, lines.slice(1, 4).join(""));
    const result = await hook(
      ws,
      "claude-code",
      await fixture(ws, "claude-code", "stop_1.json"),
      [],
    );
    expectCode(result, 0, "stop");
    assert(result.stderr.includes("no longer starts with the bytes kept before"), result.stderr);
    const rows = queryStore(ws, "SELECT chain, start FROM agent_transcripts ORDER BY chain") as {
      chain: number;
      start: number;
    }[];
    assertEquals(rows.map((r) => [r.chain, r.start]), [[1, 0], [2, 0]]);
  });
});

Deno.test("hook: a transcript_path outside the agent's transcript directory is never read", async () => {
  await withStore(async (ws) => {
    const secret = join(ws.home, ".ssh", "id_ed25519.jsonl");
    await Deno.mkdir(join(ws.home, ".ssh"), { recursive: true });
    await Deno.writeTextFile(secret, '{"private":"key"}\n');
    const payload = JSON.parse(await fixture(ws, "claude-code", "prompt_1.json"));
    payload.transcript_path = secret;
    const result = await hook(ws, "claude-code", JSON.stringify(payload));
    expectCode(result, 0, "hook");
    assertEquals(result.json().transcript.refused, "outside");
    assertEquals(result.json().transcript.len, null);
    assertEquals(queryStore(ws, "SELECT * FROM agent_transcripts").length, 0);
  });
});

Deno.test("hook: a transcript reached through a symbolic link out of the agent's directory is never read", async () => {
  await withStore(async (ws) => {
    const outside = join(ws.root, "elsewhere");
    await Deno.mkdir(outside);
    await Deno.writeTextFile(join(outside, "x.jsonl"), '{"a":1}\n');
    await Deno.mkdir(join(ws.home, ".claude", "projects"), { recursive: true });
    await Deno.symlink(outside, join(ws.home, ".claude", "projects", "-link"));
    const payload = JSON.parse(await fixture(ws, "claude-code", "prompt_1.json"));
    payload.transcript_path = join(ws.home, ".claude", "projects", "-link", "x.jsonl");
    const result = await hook(ws, "claude-code", JSON.stringify(payload));
    expectCode(result, 0, "hook");
    assertEquals(result.json().transcript.refused, "outside");
    assertEquals(queryStore(ws, "SELECT * FROM agent_transcripts").length, 0);
  });
});

Deno.test("hook: `capture off` in the store's transcripts file keeps no transcript, only its path", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, ".ctxsnap", "transcripts"), "capture off\n", {
      mode: 0o600,
    });
    await Deno.chmod(join(ws.path, ".ctxsnap", "transcripts"), 0o600);
    const results = await recordClaudeSession(ws);
    assertEquals((results.stop_3!.transcript as Any).refused, "off");
    assertEquals(queryStore(ws, "SELECT * FROM agent_transcripts").length, 0);
    const events = queryStore(
      ws,
      "SELECT transcript_path, transcript_len FROM agent_events WHERE kind = 'Stop'",
    ) as { transcript_path: string; transcript_len: number | null }[];
    assertEquals(events[0]!.transcript_len, null);
    assertEquals(events[0]!.transcript_path, claudeTranscriptPath(ws));
    // Resume still forks, from the agent's own file.
    const result = await ws.run(["resume", "--prompt", "3", "--json"]);
    expectCode(result, 0, "resume");
    assertEquals(result.json().fork.source, "agent_file");
  });
});

Deno.test("show prints a checkpoint's conversation slice: the prompt, the assistant's text and its tool calls", async () => {
  await withStore(async (ws) => {
    const results = await recordClaudeSession(ws);
    const id = results.post_bash_2!.id as string;
    const shown = await ws.run(["show", id]);
    expectCode(shown, 0, "show");
    assert(shown.stdout.includes("  tool Bash: echo two >> notes.txt"), shown.stdout);
    assert(shown.stdout.includes("  assistant: Appended a line."), shown.stdout);
    assert(shown.stdout.includes("  user: Now delete the notes file"), shown.stdout);
    const json = await ws.run(["show", id, "--json"]);
    const slice = json.json().conversation[0];
    assertEquals(slice.agent_session, CLAUDE_SESSION);
    assertEquals(slice.items.map((i: Any) => i.role), ["tool", "assistant", "user"]);
  });
});

Deno.test("show renders hostile conversation text as text: control characters and newlines escaped", async () => {
  await withStore(async (ws) => {
    const path = claudeTranscriptPath(ws);
    const hostile = {
      type: "assistant",
      sessionId: CLAUDE_SESSION,
      uuid: "a-x",
      message: {
        role: "assistant",
        content: [{ type: "text", text: "\u001b[2J\u001b[31mverified\nsignature OK\u202e" }],
      },
    };
    await writeTranscript(path, [JSON.stringify(hostile) + "\n"], 1);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "changed\n");
    const result = await hook(ws, "claude-code", await fixture(ws, "claude-code", "stop_1.json"));
    expectCode(result, 0, "hook");
    const shown = await ws.run(["show", result.json().id]);
    expectCode(shown, 0, "show");
    // deno-lint-ignore no-control-regex
    assert(!/[\u001b\u202e]/.test(shown.stdout), shown.stdout);
    assert(!shown.stdout.includes("\nsignature OK"), shown.stdout);
    assert(shown.stdout.includes("  assistant: "), shown.stdout);
  });
});

Deno.test("resume of an agent whose transcript cannot be forked restores the files and prints the prompt to re-enter", async () => {
  await withStore(async (ws) => {
    const send = async (name: string) => {
      const result = await hook(ws, "opencode", await fixture(ws, "opencode", `${name}.json`), [
        "--json",
        "--record-prompts",
      ]);
      expectCode(result, 0, name);
    };
    await send("session_created");
    await send("chat_message_1");
    await Deno.writeTextFile(join(ws.path, "README.md"), "# changed\n");
    await send("tool_after_1");
    const result = await ws.run(["resume", "--agent-session", "ses_7a1f3c2b9e0d", "--prompt", "1"]);
    expectCode(result, 0, "resume");
    assert(result.stdout.includes("opencode transcripts cannot be forked"), result.stdout);
    assert(result.stdout.includes("prompt 1 to re-enter: Add a README section"), result.stdout);
    assertEquals(await exists(join(ws.path, "README.md")), false);
  });
});

/** Records prompts 1 and 2 and prompt 3's submission while the transcript lags (10 lines). */
async function recordLagging(
  ws: Parameters<Parameters<typeof withStore>[0]>[0],
): Promise<string[]> {
  const lines = await transcriptLines(ws, "claude-code");
  const path = claudeTranscriptPath(ws);
  for (const [name, n] of [["prompt_1", 2], ["prompt_2", 7], ["prompt_3", 10]] as const) {
    await writeTranscript(path, lines, n);
    expectCode(
      await hook(ws, "claude-code", await fixture(ws, "claude-code", `${name}.json`)),
      0,
      name,
    );
  }
  return lines;
}

Deno.test("resume forks from the agent's file when the kept copy ends before the prompt and the file still starts with it", async () => {
  await withStore(async (ws) => {
    const lines = await recordLagging(ws);
    // The agent writes prompt 3's line after the hook ran.
    await writeTranscript(claudeTranscriptPath(ws), lines, 12);
    const result = await ws.run(["resume", "--prompt", "3", "--json"]);
    expectCode(result, 0, "resume");
    const r = result.json();
    assertEquals([r.fork.source, r.fork.lines], ["agent_file", 10]);
  });
});

Deno.test("resume never forks a grown agent file that no longer starts with the kept bytes", async () => {
  await withStore(async (ws) => {
    const lines = await recordLagging(ws);
    await writeTranscript(claudeTranscriptPath(ws), [lines[1]!, ...lines.slice(0, 12)], 13);
    const result = await ws.run(["resume", "--prompt", "3", "--json"]);
    expectCode(result, 0, "resume");
    assertEquals(result.json().fork, null);
    assert(result.json().no_fork_reason.includes("holds no prompt 3"), result.stdout);
  });
});

Deno.test("resume of a Codex session writes a rollout fork under a new id and prints codex resume", async () => {
  await withStore(async (ws) => {
    const lines = await transcriptLines(ws, "codex");
    const rollout = join(
      ws.home,
      ".codex/sessions/2026/08/20/rollout-2026-08-20T10-02-51-019d036d-5a11-7c00-9e0a-2f4bd1c0a001.jsonl",
    );
    const send = async (name: string, n: number) => {
      await writeTranscript(rollout, lines, n);
      expectCode(await hook(ws, "codex", await fixture(ws, "codex", `${name}.json`)), 0, name);
    };
    await send("session_start", 2);
    await send("prompt_1", 5);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "patched\n");
    await send("post_patch_1", 7);
    await send("stop_1", 8);
    await send("prompt_2", 10);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "docs\n");
    await send("stop_1", 11);
    const result = await ws.run(["resume", "--prompt", "2", "--json"]);
    expectCode(result, 0, "resume");
    const r = result.json();
    assertEquals(r.continue_command, `codex resume ${r.session_id}`);
    assert(r.transcript_path.endsWith(`rollout-2026-08-20T10-02-51-${r.session_id}.jsonl`));
    const old = "019d036d-5a11-7c00-9e0a-2f4bd1c0a001";
    const expected = [
      lines[0]!.replace(`"id":"${old}"`, `"id":"${r.session_id}"`),
      ...lines.slice(1, 9),
    ]
      .join("");
    assertEquals(await Deno.readTextFile(r.transcript_path), expected);
    assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "patched\n");
  });
});

Deno.test("resume of a Gemini CLI session forks its chat file under a new id and prints gemini --resume", async () => {
  await withStore(async (ws) => {
    const lines = await transcriptLines(ws, "gemini-cli");
    const chat = join(ws.home, ".gemini/tmp/app-3f/chats/session-2026-08-20T10-15-a1b2c3d4.jsonl");
    const send = async (name: string, n: number) => {
      await writeTranscript(chat, lines, n);
      expectCode(
        await hook(ws, "gemini-cli", await fixture(ws, "gemini-cli", `${name}.json`)),
        0,
        name,
      );
    };
    await send("session_start", 1);
    await send("before_agent_1", 2);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "retry\n");
    await send("after_tool_1", 4);
    await send("after_agent_1", 5);
    await send("before_agent_2", 6);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "test\n");
    await send("after_agent_1", 7);
    const r = (await ws.run(["resume", "--prompt", "2", "--json"])).json();
    assertEquals(r.continue_command, `gemini --resume ${r.session_id}`);
    assert(
      r.transcript_path.endsWith(`session-2026-08-20T10-15-${r.session_id.slice(0, 8)}.jsonl`),
    );
    const old = "a1b2c3d4-e5f6-7890-abcd-ef1234567890";
    const expected = [
      lines[0]!.replace(`"sessionId":"${old}"`, `"sessionId":"${r.session_id}"`),
      ...lines.slice(1, 5),
    ].join("");
    assertEquals(await Deno.readTextFile(r.transcript_path), expected);
    assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "retry\n");
  });
});
