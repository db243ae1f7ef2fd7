/**
 * The official MCP TypeScript SDK client (`@modelcontextprotocol/sdk`)
 * connected to a real `ctxsnap mcp` process in a test workspace, shared by
 * the MCP test files.
 *
 * @module
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { assertEquals } from "./_assert.ts";
import { CLI, CTXSNAP_BIN, realDenoDir, type TempWorkspace } from "./_cli.ts";

export type { Client };

/** The command that starts the server in a workspace, and its environment. */
export function serverCommand(
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

/** Runs `fn` with an SDK client connected to `ctxsnap mcp` in `ws`. */
export async function withClient(
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
export type Any = any;

/** The longest answer (text) seen by {@linkcode call} and {@linkcode callRaw} in this process. */
export const largest: { chars: number; tool: string } = { chars: 0, tool: "" };

/** Calls a tool and returns the raw result, noting its size. */
export async function callRaw(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Any> {
  const result = await client.callTool({ name, arguments: args }) as Any;
  const chars = String(result.content?.[0]?.text ?? "").length;
  if (chars > largest.chars) Object.assign(largest, { chars, tool: name });
  return result;
}

/** Calls a tool that must succeed; returns its structured result. */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<Any> {
  const result = await callRaw(client, name, args);
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  // The text block carries the same document (backwards compatibility).
  assertEquals(JSON.parse(result.content[0].text), result.structuredContent, `${name} text`);
  return result.structuredContent;
}

/** Calls a tool that must fail; returns its error text. */
export async function callError(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<string> {
  const result = await callRaw(client, name, args);
  if (result.isError !== true) {
    throw new Error(`${name} ${JSON.stringify(args)} succeeded: ${JSON.stringify(result)}`);
  }
  return String(result.content[0].text);
}

/** Every item of a paged list: the first page's `items` (under `key`), then each `next_page`. */
export async function allPages(
  client: Client,
  first: Any,
  key: string,
): Promise<Any[]> {
  const items = [...first[key]];
  let cursor = first.next_cursor;
  while (cursor !== null) {
    const page = await call(client, "next_page", { cursor });
    assertEquals(page.offset, items.length, "pages follow each other");
    items.push(...page.items);
    cursor = page.next_cursor;
  }
  return items;
}
