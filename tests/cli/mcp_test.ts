/**
 * `ctxsnap mcp`, as a real process: the official
 * TypeScript SDK's client (`@modelcontextprotocol/sdk`) spawns the server
 * and calls every tool and resource; raw JSON-RPC lines test version
 * negotiation and the refusals of malformed or hostile input.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { expectCode, type TempWorkspace, withStore } from "../_cli.ts";
import { type Any, call, callError, callRaw, serverCommand, withClient } from "../_mcp.ts";

/** The bound on every answer, in characters. */
const BOUND = 10_000;

Deno.test("mcp: agent_prompts lists an agent session's prompts, and prompt:N names the state before one in show and diff", async () => {
  await withStore(async (ws) => {
    const event = (fields: Record<string, unknown>) =>
      JSON.stringify({ session_id: "sess-mcp-1", cwd: ws.path, ...fields });
    const hook = async (fields: Record<string, unknown>) =>
      expectCode(
        await ws.run(["hook", "claude-code"], { stdin: event(fields) }),
        0,
        JSON.stringify(fields),
      );
    await hook({ hook_event_name: "UserPromptSubmit", prompt_id: "p-1" });
    await Deno.writeTextFile(join(ws.path, "a.txt"), "changed by the agent\n");
    await hook({ hook_event_name: "PostToolUse", tool_name: "Edit", tool_use_id: "toolu_1" });
    await hook({ hook_event_name: "UserPromptSubmit", prompt_id: "p-2" });
    await withClient(ws, async (client) => {
      const listed = await call(client, "agent_prompts", {});
      assertEquals(listed.agent_session.session_id, "sess-mcp-1");
      assertEquals(listed.prompts.map((p: Any) => [p.prompt, p.prompt_id]), [[1, "p-1"], [
        2,
        "p-2",
      ]]);
      assert(listed.prompts[0].snapshot !== listed.prompts[1].snapshot);
      const shown = await call(client, "show", { id: "prompt:1" });
      assertEquals(shown.id, listed.prompts[0].snapshot);
      const diff = await call(client, "diff", { from: "prompt:1:sess-mcp", to: "prompt:2" });
      assertEquals(diff.counts.changed, 1);
      assertEquals(diff.changes.map((c: Any) => c.path), ["a.txt"]);
      // Bounded: 21 long prompts listed at the largest limit stay under 10,000 characters.
      for (let i = 3; i <= 21; i++) {
        await ws.run(["hook", "claude-code", "--record-prompts"], {
          stdin: event({ hook_event_name: "UserPromptSubmit", prompt: `${i} ${"x".repeat(2000)}` }),
        });
      }
      const big = await client.callTool({ name: "agent_prompts", arguments: { limit: 20 } }) as Any;
      assert(big.content[0].text.length < 10_000, `${big.content[0].text.length} characters`);
      assertEquals(big.structuredContent.prompts.length, 20);
      assertEquals(big.structuredContent.omitted_earlier, 1);
      const missing = await client.callTool({
        name: "agent_prompts",
        arguments: { agent_session: "nope" },
      }) as Any;
      assert(missing.isError === true);
    });
  });
});

Deno.test("mcp: the SDK client checkpoints, lists, shows, diffs, edits the session, restores, verifies and publishes", async () => {
  await withStore(async (ws) => {
    await withClient(ws, async (client) => {
      assertEquals(client.getServerVersion()?.name, "ctxsnap");
      const capabilities = client.getServerCapabilities();
      assert(capabilities?.tools !== undefined && capabilities?.resources !== undefined);

      const { tools } = await client.listTools();
      assertEquals(
        tools.map((t: { name: string }) => t.name).sort(),
        [
          "agent_prompts",
          "checkpoint",
          "diff",
          "list",
          "next_page",
          "publish",
          "read_file",
          "redo",
          "restore",
          "restore_preview",
          "session_update",
          "show",
          "undo",
          "verify",
        ],
      );
      for (const tool of tools) {
        assert(tool.outputSchema !== undefined, `${tool.name} has an output schema`);
      }

      const first = await call(client, "checkpoint", { reason: "before the edit" });
      assert(/^[0-9a-f]{64}$/.test(first.id) && first.created === true);
      assertEquals(first.capture.files, 3);
      // Nothing changed: nothing is read again.
      const again = await call(client, "checkpoint", { reason: "again" });
      assertEquals(again.capture.hashed, 0);

      await Deno.writeTextFile(join(ws.path, "a.txt"), "alpha, edited\n");
      const second = await call(client, "checkpoint", { reason: "after the edit" });
      assertEquals(second.capture.hashed, 1, "only the edited file is read");
      assert(second.id !== first.id);

      const retried = await call(client, "checkpoint", { source: "turn:7" });
      const same = await call(client, "checkpoint", { source: "turn:7" });
      assertEquals(same.id, retried.id, "the same source returns the same checkpoint");
      assertEquals(same.created, false);

      const listed = await call(client, "list", { limit: 10 });
      assert(listed.snapshots.some((s: Any) => s.id === first.id));
      assertEquals((await call(client, "show", { id: first.id })).id, first.id);

      const diff = await call(client, "diff", { from: first.id.slice(0, 12), to: second.id });
      assertEquals(diff.changes, [{ path: "a.txt", change: "changed" }]);
      assertEquals(diff.counts, { added: 0, changed: 1, removed: 0 });
      assertEquals(diff.next_cursor, null);

      const session = await call(client, "session_update", {
        task: "fix the parser",
        progress_pct: 40,
        decision: "keep the old API",
        finding: "the lexer is fine",
        knowledge: "tests live in tests/",
      });
      assertEquals(session.state.task, "fix the parser");
      assertEquals(session.state.progress_pct, 40);
      assertEquals(session.state.decisions, ["keep the old API"]);

      const preview = await call(client, "restore_preview", { id: first.id });
      assert(JSON.stringify(preview).includes("a.txt"), "the plan names the file");
      assertEquals(
        await Deno.readTextFile(join(ws.path, "a.txt")),
        "alpha, edited\n",
        "a preview changes nothing",
      );

      // Without confirm: refused, nothing changed.
      const refused = await client.callTool({
        name: "restore",
        arguments: { id: first.id },
      }) as Any;
      assert(refused.isError === true && refused.structuredContent === undefined);
      assert(String(refused.content[0].text).includes("confirm"));
      assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "alpha, edited\n");

      await call(client, "restore", { id: first.id, confirm: true });
      assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "alpha\n");

      const verified = await call(client, "verify", { all: true });
      assertEquals(verified.ok, true);

      const published = await call(client, "publish", { id: first.id });
      assert(String(published.path).startsWith(ws.path), "written in the workspace");
      await Deno.stat(published.path);
      const outside = await client.callTool({
        name: "publish",
        arguments: { id: first.id, out: "../escape.json" },
      }) as Any;
      assert(outside.isError === true, "never outside the workspace");

      const { resources } = await client.listResources();
      assertEquals(resources.map((r: { uri: string }) => r.uri).sort(), [
        "ctxsnap://head",
        "ctxsnap://session",
        "ctxsnap://timeline",
      ]);
      const timeline = await client.readResource({ uri: "ctxsnap://timeline" }) as Any;
      assert(JSON.parse(timeline.contents[0].text).snapshots.length >= 3);
      const head = JSON.parse(
        (await client.readResource({ uri: "ctxsnap://head" }) as Any).contents[0].text,
      );
      assertEquals(head.id, (await call(client, "list", { limit: 1 })).snapshots[0].id);
      let missing: unknown = null;
      try {
        await client.readResource({ uri: "ctxsnap://nothing" });
      } catch (error) {
        missing = error;
      }
      assert(String(missing).includes("-32002"), `unknown resource: ${missing}`);
    });
    // The store verifies from the command line too.
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all");
  });
});

Deno.test("mcp: read_file reads a file as a snapshot recorded it, in bounded parts; binary files are marked, symlinks give their target, missing paths are named", async () => {
  await withStore(async (ws) => {
    const long = Array.from({ length: 3000 }, (_, i) => `línea ${i} — ✓\n`).join("");
    await Deno.writeTextFile(join(ws.path, "long.txt"), long);
    await Deno.writeFile(join(ws.path, "blob.bin"), new Uint8Array([0x89, 0x50, 0, 1, 2, 0xff]));
    await Deno.symlink("a.txt", join(ws.path, "link"));
    // A NUL in the first bytes makes the whole file binary, at any offset.
    await Deno.writeTextFile(join(ws.path, "nul_head.bin"), `\0${"x".repeat(100)}`);
    await withClient(ws, async (client) => {
      const s1 = (await call(client, "checkpoint", { reason: "files" })).id;
      await Deno.writeTextFile(join(ws.path, "a.txt"), "changed after\n");
      await call(client, "checkpoint", { reason: "later" });

      const a = await call(client, "read_file", { id: s1.slice(0, 8), path: "a.txt" });
      assertEquals([a.content, a.binary, a.type, a.size, a.next_offset], [
        "alpha\n",
        false,
        "file",
        6,
        null,
      ]);
      // Part by part, each within the bound, the whole text comes back exactly.
      const bytes = new TextEncoder().encode(long).byteLength;
      let text = "";
      let offset: number | null = 0;
      let parts = 0;
      while (offset !== null) {
        const raw = await callRaw(client, "read_file", { id: s1, path: "./long.txt", offset });
        assert(String(raw.content[0].text).length <= BOUND, "a part stays under the bound");
        const part = raw.structuredContent;
        assertEquals(part.offset, offset, "parts follow each other");
        text += part.content;
        offset = part.next_offset;
        parts++;
      }
      assertEquals(text, long);
      assert(parts >= Math.ceil(bytes / 8000), `${parts} parts`);

      const bin = await call(client, "read_file", { id: s1, path: "blob.bin" });
      assertEquals([bin.binary, bin.content, bin.size], [true, null, 6]);
      const tail = await call(client, "read_file", { id: s1, path: "nul_head.bin", offset: 10 });
      assertEquals([tail.binary, tail.content], [true, null], "a part past the NUL is shown");
      const link = await call(client, "read_file", { id: s1, path: "link" });
      assertEquals([link.type, link.content], ["symlink", "a.txt"]);

      assert((await callError(client, "read_file", { id: s1, path: "nope.txt" }))
        .includes(`No file "nope.txt" in snapshot ${s1.slice(0, 12)}`));
      assert((await callError(client, "read_file", { id: s1, path: "src" }))
        .includes("is a directory"));
      assert((await callError(client, "read_file", { id: s1, path: "../etc/passwd" }))
        .includes("relative to the workspace"));
      assert((await callError(client, "read_file", { id: "zzzz", path: "a.txt" }))
        .startsWith('No snapshot "zzzz"'));
    });
  });
});

Deno.test("mcp: errors name what is missing and speak in tool arguments, never command-line flags", async () => {
  await withStore(async (ws) => {
    await withClient(ws, async (client) => {
      const s1 = (await call(client, "checkpoint", { reason: "one" })).id;
      await Deno.writeTextFile(join(ws.path, "a.txt"), "two\n");
      await call(client, "checkpoint", { reason: "two" });
      await Deno.writeTextFile(join(ws.path, "a.txt"), "edited outside\n");

      for (
        const [name, args] of [
          ["verify", { id: "zzzz" }],
          ["show", { id: "zzzz" }],
          ["diff", { from: "HEAD", to: "zzzz" }],
          ["restore_preview", { id: "zzzz" }],
          ["restore", { id: "zzzz", confirm: true }],
          ["publish", { id: "zzzz" }],
        ] as const
      ) {
        const text = await callError(client, name, args);
        assert(text.startsWith('No snapshot "zzzz"'), `${name}: ${text}`);
        assert(!text.includes("No file at"), `${name}: ${text}`);
      }

      // The real restore refuses the conflict; its hint names tool arguments.
      const refused = await callError(client, "restore", { id: s1, confirm: true });
      assert(refused.includes("a.txt"), refused);
      assert(refused.includes("force: true") && refused.includes("restore_preview"), refused);
      assert(!/--[a-z]/.test(refused), `a command-line flag: ${refused}`);
      // The preview shows the refusal too, and how to go ahead.
      const preview = await call(client, "restore_preview", { id: s1 });
      assertEquals(preview.would_refuse.length, 1);
      assert(!/--[a-z]/.test(JSON.stringify(preview.would_refuse)), preview.would_refuse);
      const forced = await call(client, "restore", { id: s1, confirm: true, force: true });
      assert(typeof forced.pre_restore === "string", "force first saves the current content");
      assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "alpha\n");

      const cursor = await callError(client, "next_page", { cursor: "0123456789abcdef.0" });
      assert(cursor.includes("No paged answer"), cursor);
      assert(!/--[a-z]/.test(cursor), cursor);
      const redo = await callError(client, "redo", {});
      assert(redo.includes("Nothing to redo") && redo.includes("the undo tool"), redo);
      assert(!/--[a-z]|ctxsnap/.test(redo), redo);
    });
  });
});

Deno.test("mcp: restore_preview says where git HEAD is against the snapshot's commit after the agent committed on a new branch, and restore with git: true checks that commit out", async () => {
  await withStore(async (ws) => {
    const git = (...args: string[]) => {
      const out = new Deno.Command("git", {
        args,
        cwd: ws.path,
        env: {
          GIT_AUTHOR_NAME: "t",
          GIT_AUTHOR_EMAIL: "t@example.invalid",
          GIT_COMMITTER_NAME: "t",
          GIT_COMMITTER_EMAIL: "t@example.invalid",
          GIT_CONFIG_NOSYSTEM: "1",
          HOME: ws.home,
        },
      }).outputSync();
      assert(out.success, new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout).trim();
    };
    git("init", "-q", "-b", "main");
    await Deno.writeTextFile(join(ws.path, ".git/info/exclude"), ".ctxsnap/\n");
    git("add", "-A");
    git("commit", "-q", "-m", "one");
    const c1 = git("rev-parse", "HEAD");
    await withClient(ws, async (client) => {
      const before = (await call(client, "checkpoint", { reason: "prompt 1" })).id;
      git("checkout", "-q", "-b", "agent");
      await Deno.writeTextFile(join(ws.path, "a.txt"), "agent\n");
      git("commit", "-q", "-am", "agent");
      await call(client, "checkpoint", { reason: "prompt 2" });

      const preview = await call(client, "restore_preview", { id: before });
      assertEquals(preview.git.anchor, { commit: c1, branch: "main" });
      assertEquals([preview.git.head.branch, preview.git.differs], ["agent", true]);
      assertEquals(preview.git.with_git, "checkout");
      await call(client, "restore", { id: before, confirm: true, git: true });
      assertEquals(git("rev-parse", "HEAD"), c1);
      assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "alpha\n");
    });
  });
});

Deno.test("mcp: a restore keeps the progress session_update set, as it keeps the task and decisions", async () => {
  await withStore(async (ws) => {
    await withClient(ws, async (client) => {
      const before = (await call(client, "checkpoint", { reason: "before the session" })).id;
      await call(client, "session_update", {
        task: "port the parser",
        progress_pct: 60,
        decision: "keep the old API",
      });
      await call(client, "restore", { id: before, confirm: true });
      const state = (await call(client, "session_update", {})).state;
      assertEquals(state.task, "port the parser");
      assertEquals(state.progress_pct, 60);
      assertEquals(state.decisions, ["keep the old API"]);
    });
  });
});

Deno.test("mcp: arguments are checked against the declared schemas", async () => {
  await withStore(async (ws) => {
    await withClient(ws, async (client) => {
      for (
        const [name, args] of [
          ["show", {}],
          ["show", { id: "--all" }],
          ["show", { id: "3f2a", extra: 1 }],
          ["checkpoint", { reason: "x".repeat(1025) }],
          ["list", { limit: 0 }],
          ["session_update", { progress_pct: 101 }],
          ["restore", { id: "3f2a", confirm: false }],
        ] as [string, Record<string, unknown>][]
      ) {
        const result = await client.callTool({ name, arguments: args }) as Any;
        assert(result.isError === true, `${name} ${JSON.stringify(args)} must be refused`);
        assert(
          String(result.content[0].text).startsWith("Invalid arguments"),
          result.content[0].text,
        );
      }
      let unknown: unknown = null;
      try {
        await client.callTool({ name: "rm_rf", arguments: {} });
      } catch (error) {
        unknown = error;
      }
      assert(String(unknown).includes("-32602"), `unknown tool: ${unknown}`);
    });
  });
});

Deno.test("mcp: a model chooses data, never paths (verify opens no file; publish writes only a new file below the workspace, through no symlink, outside .git and .ctxsnap)", async () => {
  await withStore(async (ws) => {
    const secret = "top-secret-config-7f3a";
    await Deno.mkdir(join(ws.root, "private"));
    await Deno.writeTextFile(join(ws.root, "private", "config.json"), `{"token":"${secret}"}`);
    await Deno.mkdir(join(ws.home, ".ssh"), { recursive: true });
    await Deno.symlink(join(ws.home, ".ssh"), join(ws.path, "docs"));
    await Deno.mkdir(join(ws.path, ".git"));
    await Deno.writeTextFile(join(ws.path, "taken.ctxbundle"), "mine\n");
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    await withClient(ws, async (client) => {
      const head = (await call(client, "list", { limit: 1 })).snapshots[0].id as string;
      const refused = async (name: string, args: Record<string, unknown>, why: string) => {
        const result = await client.callTool({ name, arguments: args }) as Any;
        assert(result.isError === true, `${why}: ${JSON.stringify(result)}`);
        const text = String(result.content[0].text);
        assert(!text.includes(secret), `${why}: a file's content was echoed: ${text}`);
        return text;
      };
      // verify takes snapshots only: a path-like id is never opened, nor is standard input.
      for (const id of ["a/../../private/config.json", "dev/stdin", "proc/self/fd/0"]) {
        // Resolved as a snapshot name, and not found: never taken for a file.
        const text = await refused("verify", { id }, id);
        const quoted = JSON.stringify(id);
        assert(
          text.startsWith(`No snapshot ${quoted}`) ||
            text.startsWith(`${quoted} is not a snapshot id`),
          text,
        );
      }
      assertEquals((await call(client, "verify", { id: head.slice(0, 8) })).valid, true);
      // publish: never through a symlink, into .git or .ctxsnap, over a file, or as any name.
      for (
        const out of [
          "docs/authorized_keys.ctxbundle",
          "docs/new/x.ctxbundle",
          ".git/x.ctxbundle",
          ".GIT/hooks/x.ctxbundle",
          ".ctxsnap/published/x.ctxbundle",
          ".CtxSnap/x.ctxsnapshot.json",
          "taken.ctxbundle",
          "docs/authorized_keys",
          "../escape.ctxbundle",
        ]
      ) {
        await refused("publish", { id: head, with_workspace: true, out }, out);
      }
      assertEquals([...Deno.readDirSync(join(ws.home, ".ssh"))], [], "nothing written through");
      assertEquals([...Deno.readDirSync(join(ws.path, ".git"))], []);
      assertEquals(await Deno.readTextFile(join(ws.path, "taken.ctxbundle")), "mine\n");
      const written = await call(client, "publish", {
        id: head,
        with_workspace: true,
        out: "review/new.ctxbundle",
      });
      assertEquals(written.path, join(ws.path, "review", "new.ctxbundle"));
      expectCode(await ws.run(["verify", written.path]), 0, "the bundle verifies");
    });
  });
});

/** Starts the server and exchanges raw lines with it. */
async function rawSession(ws: TempWorkspace, lines: string[]): Promise<Any[]> {
  const { command, args, env } = serverCommand(ws);
  const child = new Deno.Command(command, {
    args,
    env,
    clearEnv: true,
    cwd: ws.path,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  for (const line of lines) await writer.write(new TextEncoder().encode(line));
  await writer.close();
  const output = await child.output();
  assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
  const text = new TextDecoder().decode(output.stdout);
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

const init = (version: string, id: number | string = 1) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: {
      protocolVersion: version,
      capabilities: {},
      clientInfo: { name: "raw", version: "1" },
    },
  }) + "\n";

Deno.test("mcp: protocol version negotiation and malformed messages", async () => {
  await withStore(async (ws) => {
    // An old version the server speaks is answered with that version; its tools have no output schemas.
    const old = await rawSession(ws, [
      init("2024-11-05"),
      '{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
      '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n',
    ]);
    assertEquals(old[0].result.protocolVersion, "2024-11-05");
    assert(old[1].result.tools.every((t: Any) => t.outputSchema === undefined));

    // A version it does not speak: the newest it does.
    const future = await rawSession(ws, [init("2099-01-01")]);
    assertEquals(future[0].result.protocolVersion, "2025-11-25");

    const replies = await rawSession(ws, [
      '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n', // before initialize
      "this is not json\n",
      '{"jsonrpc":"2.0","id":2,"id":3,"method":"ping"}\n', // duplicate key
      init("2025-06-18", 4),
      '{"jsonrpc":"2.0","id":5,"method":"no/such"}\n',
      '{"jsonrpc":"1.0","id":6,"method":"ping"}\n',
      '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}\n',
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}\n',
      `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"pad":"${
        "x".repeat(4 * 1024 * 1024)
      }"}}\n`,
      '[{"jsonrpc":"2.0","id":9,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled"}]\n',
      '{"jsonrpc":"2.0","id":10,"method":"ping"}\n',
    ]);
    const codes = replies.map((r) => Array.isArray(r) ? "batch" : r.error?.code ?? "ok");
    assertEquals(codes, [
      -32600,
      -32700,
      -32700,
      "ok",
      -32601,
      -32600,
      -32600,
      -32602,
      -32600,
      "batch",
      "ok",
    ]);
    assertEquals(replies[9], [{ jsonrpc: "2.0", id: 9, result: {} }]);
  });
});

Deno.test("mcp: restore never overwrites an edit made since the last checkpoint (a conflict, reported as an error, the edit kept)", async () => {
  await withStore(async (ws) => {
    await withClient(ws, async (client) => {
      const first = await call(client, "checkpoint", { reason: "first" });
      await Deno.writeTextFile(join(ws.path, "a.txt"), "alpha two\n");
      await call(client, "checkpoint", { reason: "second" });
      // The user edits a.txt after the last checkpoint; a restore would overwrite it.
      await Deno.writeTextFile(join(ws.path, "a.txt"), "the user's unsaved work\n");
      const result = await client.callTool({
        name: "restore",
        arguments: { id: first.id, confirm: true },
      }) as Any;
      assert(result.isError === true, `restore over an edit: ${JSON.stringify(result.content)}`);
      assert(/conflict/i.test(String(result.content[0].text)), String(result.content[0].text));
      assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "the user's unsaved work\n");
    });
  });
});
