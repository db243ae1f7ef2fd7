/**
 * A Model Context Protocol server over stdio, written by hand: JSON-RPC 2.0,
 * one message per line (layer: cli). It negotiates the protocol version as
 * the specification says (the client's version when supported, else the
 * newest this server speaks), lists and calls the tools of `tools.ts` with
 * structured results and output schemas, and serves the timeline, the head
 * and the session as resources. Why it does not use the SDK is in
 * docs/DESIGN.md, "MCP server".
 *
 * No tool or resource answer is longer than `MAX_ANSWER_CHARS` (10,000)
 * characters: the tools page their long lists, and whatever is still too
 * long is cut here (`_bound.ts`).
 *
 * Everything from the client is untrusted: a line is at most
 * {@linkcode MAX_MESSAGE_BYTES}, parsed strictly (no duplicate keys), every
 * field checked; tool arguments are checked against the declared schemas.
 *
 * @example
 * ```ts
 * import { McpServer } from "./server.ts";
 * const sent: unknown[] = [];
 * const server = new McpServer(null, (message) => sent.push(message));
 * await server.receive(new TextEncoder().encode(JSON.stringify({
 *   jsonrpc: "2.0", id: 1, method: "initialize",
 *   params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
 * })));
 * const reply = sent[0] as { result: { protocolVersion: string } };
 * if (reply.result.protocolVersion !== "2025-06-18") throw new Error("negotiation");
 * ```
 * @module
 */
import { type JsonValue, parseJson } from "../../encoding/canonical_json.ts";
import { VERSION } from "../../version.ts";
import { checkArguments } from "./schema.ts";
import { fit, MAX_ANSWER_CHARS } from "./_bound.ts";
import { RESOURCES, type ToolContext, TOOLS } from "./tools.ts";

/** Protocol versions this server speaks, newest first. */
export const PROTOCOL_VERSIONS: readonly string[] = [
  "2025-11-25",
  "2025-06-18",
  "2025-03-26",
  "2024-11-05",
];
/** The oldest version with structured tool results and output schemas. */
const STRUCTURED_SINCE = "2025-06-18";
/** Largest message (one line) accepted. */
export const MAX_MESSAGE_BYTES: number = 4 * 1024 * 1024;

const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const RESOURCE_NOT_FOUND = -32002;

type Id = string | number;

class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: JsonValue) {
    super(message);
  }
}

const INSTRUCTIONS = "ctxsnap checkpoints this workspace and session into signed snapshots. " +
  "Call `checkpoint` before and after risky changes (it is cheap: only what changed is read), " +
  "`session_update` to record the task, decisions and findings, `list`/`show`/`diff`/" +
  "`read_file` to look back, `restore_preview` then `restore` (confirm: true) to go back " +
  "without losing work, and `undo`/`redo` to revert the last operation. Long answers are " +
  "paged: pass an answer's next_cursor to `next_page`.";

/** One MCP session: receives messages, sends responses through `send`. */
export class McpServer {
  private version: string | null = null;
  private initialized = false;

  /** `ctx` runs tools (null: lifecycle only, for tests of the protocol). */
  constructor(
    private readonly ctx: ToolContext | null,
    private readonly send: (message: Record<string, unknown> | Record<string, unknown>[]) => void,
  ) {}

  /** Handles one line (a message or a batch). */
  async receive(line: Uint8Array): Promise<void> {
    let value: unknown;
    try {
      value = parseJson(line, { maxBytes: MAX_MESSAGE_BYTES, integersOnly: false });
    } catch (error) {
      this.send(
        failure(null, new RpcError(PARSE_ERROR, `Parse error: ${(error as Error).message}`)),
      );
      return;
    }
    if (Array.isArray(value)) {
      if (value.length === 0) {
        this.send(failure(null, new RpcError(INVALID_REQUEST, "Empty batch")));
        return;
      }
      const replies: Record<string, unknown>[] = [];
      for (const message of value) {
        const reply = await this.handle(message);
        if (reply !== null) replies.push(reply);
      }
      if (replies.length > 0) this.send(replies);
      return;
    }
    const reply = await this.handle(value);
    if (reply !== null) this.send(reply);
  }

  /** Tells that the input ended with an unfinished or oversized line. */
  tooLarge(): void {
    this.send(
      failure(
        null,
        new RpcError(INVALID_REQUEST, `Message larger than ${MAX_MESSAGE_BYTES} bytes`),
      ),
    );
  }

  private async handle(message: unknown): Promise<Record<string, unknown> | null> {
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      return failure(null, new RpcError(INVALID_REQUEST, "A message must be an object"));
    }
    const m = message as Record<string, unknown>;
    const hasId = Object.hasOwn(m, "id");
    const id = m.id;
    const validId = typeof id === "string" || (typeof id === "number" && Number.isSafeInteger(id));
    if (m.jsonrpc !== "2.0") {
      return failure(
        validId ? id as Id : null,
        new RpcError(INVALID_REQUEST, 'jsonrpc must be "2.0"'),
      );
    }
    if (typeof m.method !== "string") {
      // A response to a request this server never sends: nothing to do.
      if (Object.hasOwn(m, "result") || Object.hasOwn(m, "error")) return null;
      return failure(validId ? id as Id : null, new RpcError(INVALID_REQUEST, "method is missing"));
    }
    if (hasId && !validId) {
      return failure(null, new RpcError(INVALID_REQUEST, "id must be a string or an integer"));
    }
    if (
      Object.hasOwn(m, "params") &&
      (m.params === null || typeof m.params !== "object" || Array.isArray(m.params))
    ) {
      return hasId
        ? failure(id as Id, new RpcError(INVALID_PARAMS, "params must be an object"))
        : null;
    }
    const params = (m.params ?? {}) as Record<string, unknown>;
    if (!hasId) {
      this.notification(m.method);
      return null;
    }
    try {
      return { jsonrpc: "2.0", id, result: await this.request(m.method, params) };
    } catch (error) {
      if (error instanceof RpcError) return failure(id as Id, error);
      return failure(
        id as Id,
        new RpcError(INTERNAL_ERROR, error instanceof Error ? error.message : String(error)),
      );
    }
  }

  private notification(method: string): void {
    if (method === "notifications/initialized" && this.version !== null) this.initialized = true;
    // notifications/cancelled and others: nothing to undo here.
  }

  private async request(method: string, params: Record<string, unknown>): Promise<unknown> {
    if (method === "initialize") return this.initialize(params);
    if (method === "ping") return {};
    if (this.version === null) {
      throw new RpcError(INVALID_REQUEST, `The session is not initialized: send initialize first`);
    }
    const structured = this.version >= STRUCTURED_SINCE;
    switch (method) {
      case "tools/list":
        return {
          tools: TOOLS.map((tool) => ({
            name: tool.name,
            ...(structured ? { title: tool.title } : {}),
            description: tool.description,
            inputSchema: tool.inputSchema,
            ...(structured ? { outputSchema: tool.outputSchema } : {}),
            annotations: tool.annotations,
          })),
        };
      case "tools/call":
        return await this.callTool(params, structured);
      case "resources/list":
        return {
          resources: RESOURCES.map((r) => ({
            uri: r.uri,
            name: r.name,
            description: r.description,
            mimeType: "application/json",
          })),
        };
      case "resources/templates/list":
        return { resourceTemplates: [] };
      case "resources/read":
        return await this.readResource(params);
      default:
        throw new RpcError(METHOD_NOT_FOUND, `Method not found: ${method.slice(0, 100)}`);
    }
  }

  private initialize(params: Record<string, unknown>): unknown {
    if (this.version !== null) throw new RpcError(INVALID_REQUEST, "Already initialized");
    const asked = params.protocolVersion;
    if (typeof asked !== "string" || asked.length > 64) {
      throw new RpcError(INVALID_PARAMS, "protocolVersion must be a string");
    }
    if (
      params.capabilities !== undefined &&
      (typeof params.capabilities !== "object" || params.capabilities === null)
    ) {
      throw new RpcError(INVALID_PARAMS, "capabilities must be an object");
    }
    // The client's version when this server speaks it, else the newest it does.
    this.version = PROTOCOL_VERSIONS.includes(asked) ? asked : PROTOCOL_VERSIONS[0]!;
    return {
      protocolVersion: this.version,
      capabilities: {
        tools: { listChanged: false },
        resources: { subscribe: false, listChanged: false },
      },
      serverInfo: { name: "ctxsnap", version: VERSION },
      instructions: INSTRUCTIONS,
    };
  }

  private async callTool(params: Record<string, unknown>, structured: boolean): Promise<unknown> {
    const name = params.name;
    if (typeof name !== "string") throw new RpcError(INVALID_PARAMS, "name must be a string");
    const tool = TOOLS.find((t) => t.name === name);
    if (tool === undefined) {
      throw new RpcError(INVALID_PARAMS, `Unknown tool: ${name.slice(0, 100)}`);
    }
    const args = params.arguments ?? {};
    const problem = checkArguments(tool.inputSchema, args);
    if (problem !== null) {
      return { content: [{ type: "text", text: `Invalid arguments: ${problem}` }], isError: true };
    }
    if (this.ctx === null) throw new RpcError(INTERNAL_ERROR, "No store");
    const outcome = await tool.run(this.ctx, args as Record<string, unknown>);
    if (!outcome.ok) {
      const text = outcome.message.length > MAX_ANSWER_CHARS
        ? `${outcome.message.slice(0, MAX_ANSWER_CHARS - 1)}…`
        : outcome.message;
      return { content: [{ type: "text", text }], isError: true };
    }
    // Every answer within the bound, whatever the tool built.
    const value = fit(outcome.value);
    return {
      content: [{ type: "text", text: JSON.stringify(value) }],
      ...(structured ? { structuredContent: value } : {}),
    };
  }

  private async readResource(params: Record<string, unknown>): Promise<unknown> {
    const uri = params.uri;
    if (typeof uri !== "string") throw new RpcError(INVALID_PARAMS, "uri must be a string");
    const resource = RESOURCES.find((r) => r.uri === uri);
    if (resource === undefined) {
      throw new RpcError(RESOURCE_NOT_FOUND, "Resource not found", { uri: uri.slice(0, 1000) });
    }
    if (this.ctx === null) throw new RpcError(INTERNAL_ERROR, "No store");
    const outcome = await resource.read(this.ctx);
    if (!outcome.ok) throw new RpcError(INTERNAL_ERROR, outcome.message);
    return {
      contents: [{ uri, mimeType: "application/json", text: JSON.stringify(fit(outcome.value)) }],
    };
  }
}

function failure(id: Id | null, error: RpcError): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: error.code,
      message: error.message,
      ...(error.data !== undefined ? { data: error.data } : {}),
    },
  };
}

/**
 * Splits a byte stream into lines of at most {@linkcode MAX_MESSAGE_BYTES}
 * and hands each to `server` in order; an oversized line is skipped with an
 * error. Resolves when the input ends and every line was handled.
 */
export async function serveLines(
  input: AsyncIterable<Uint8Array>,
  server: McpServer,
): Promise<void> {
  let pending: Uint8Array[] = [];
  let size = 0;
  let skipping = false;
  const flush = async () => {
    const line = new Uint8Array(size);
    let offset = 0;
    for (const piece of pending) {
      line.set(piece, offset);
      offset += piece.byteLength;
    }
    pending = [];
    size = 0;
    // Tolerate CRLF and blank lines.
    const end = line.byteLength > 0 && line[line.byteLength - 1] === 0x0d
      ? line.byteLength - 1
      : line.byteLength;
    if (end > 0) await server.receive(line.subarray(0, end));
  };
  for await (const chunk of input) {
    let start = 0;
    while (start < chunk.byteLength) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline < 0 ? chunk.byteLength : newline;
      if (!skipping) {
        const piece = chunk.subarray(start, end);
        if (size + piece.byteLength > MAX_MESSAGE_BYTES) {
          skipping = true;
          pending = [];
          size = 0;
          server.tooLarge();
        } else {
          pending.push(piece.slice());
          size += piece.byteLength;
        }
      }
      if (newline < 0) break;
      if (skipping) skipping = false;
      else await flush();
      start = newline + 1;
    }
  }
  if (!skipping && size > 0) await flush();
}
