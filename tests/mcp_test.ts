/**
 * `ctxsnap mcp` (issue 14 item 2), as a real process: the official
 * TypeScript SDK's client (`@modelcontextprotocol/sdk`) spawns the server
 * and calls every tool and resource; raw JSON-RPC lines test version
 * negotiation and the refusals of malformed or hostile input.
 *
 * @module
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { join } from "node:path";
import { assert, assertEquals } from "./_assert.ts";
import {
  CLI,
  CTXSNAP_BIN,
  expectCode,
  realDenoDir,
  type TempWorkspace,
  withStore,
} from "./_cli.ts";

/** The command that starts the server in a workspace, and its environment. */
function serverCommand(
  ws: TempWorkspace,
): { command: string; args: string[]; env: Record<string, string> } {
  return {
    command: CTXSNAP_BIN ?? Deno.execPath(),
    args: CTXSNAP_BIN !== undefined ? ["mcp"] : ["run", "-A", "--quiet", CLI, "mcp"],
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DENO_DIR: realDenoDir(),
      DENO_NO_UPDATE_CHECK: "1",
      NO_COLOR: "1",
      HOME: ws.home,
      CTXSNAP_CONFIG_DIR: ws.configDir,
    },
  };
}

async function withClient(
  ws: TempWorkspace,
  fn: (client: Client) => Promise<void>,
): Promise<void> {
  const { command, args, env } = serverCommand(ws);
  const transport = new StdioClientTransport({ command, args, env, cwd: ws.path, stderr: "pipe" });
  const client = new Client({ name: "ctxsnap-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    await fn(client);
  } finally {
    await client.close();
  }
}

// deno-lint-ignore no-explicit-any
type Any = any;

async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Any> {
  const result = await client.callTool({ name, arguments: args }) as Any;
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  // The text block carries the same document (backwards compatibility).
  assertEquals(JSON.parse(result.content[0].text), result.structuredContent, `${name} text`);
  return result.structuredContent;
}

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
      assertEquals(diff.changed, ["a.txt"]);
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
          "publish",
          "restore",
          "restore_preview",
          "session_update",
          "show",
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
      assertEquals(diff.changed, ["a.txt"]);

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
