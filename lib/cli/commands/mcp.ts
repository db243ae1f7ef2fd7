/**
 * `ctxsnap mcp`: a Model Context Protocol server on stdin/stdout for the
 * store of the working directory (see `lib/cli/mcp/server.ts`). It keeps the
 * store open and watches the workspace, so a checkpoint costs what changed;
 * while no `ctxsnap watch` runs, it also serves `ctxsnap create` and the hook
 * the way `ctxsnap watch` does.
 * @module
 */
import process from "node:process";
import { CtxsnapError } from "../../errors.ts";
import { environment } from "../../runtime.ts";
import { type Command, type CommandContext, identity, openStore, str } from "../command.ts";
import { CAPTURE_FLAGS, sizeOption } from "../flags.ts";

/** The `mcp` command. */
export const mcp: Command = {
  name: "mcp",
  usage: "mcp [--max-file-size SIZE]",
  examples: [
    "claude mcp add ctxsnap -- ctxsnap mcp            # register with Claude Code (run in the project)",
    '{"mcpServers":{"ctxsnap":{"command":"ctxsnap","args":["mcp"]}}}   # .mcp.json',
  ],
  options: {
    ...CAPTURE_FLAGS,
  },
  args: [],
  run: (ctx, parsed) => serve(ctx, sizeOption(str(parsed, "max-file-size"))),
};

async function serve(ctx: CommandContext, maxFileBytes: number | undefined): Promise<number> {
  const [{ WatchService }, { WatchServer }, { McpServer, serveLines }] = await Promise.all([
    import("../../integrations/watch/service.ts"),
    import("../../integrations/watch/server.ts"),
    import("../mcp/server.ts"),
  ]);
  const signer = await identity();
  const store = openStore(ctx);
  const service = new WatchService(store, signer, {
    ...(maxFileBytes !== undefined ? { maxFileBytes } : {}),
  });
  let socket: Awaited<ReturnType<typeof WatchServer.start>> | null = null;
  let hooks: { close(): Promise<void> } | null = null;
  try {
    await service.warm();
    try {
      socket = await WatchServer.start(service);
    } catch (error) {
      // Another watch process serves this store: create and hooks go there.
      if (!(error instanceof CtxsnapError)) throw error;
      ctx.out.note(`not serving create and hooks: ${error.message}`);
    }
    // Serving the store's watch socket, it serves its Claude Code HTTP hooks too (the two go together).
    if (socket !== null) hooks = await serveHttpHooks(ctx, service, socket);
    const { main } = await import("../main.ts");
    const workspace = store.workspaceRoot;
    const server = new McpServer({
      storeDir: store.dir,
      workspace,
      service,
      store,
      async cli(argv) {
        const out: string[] = [];
        const err: string[] = [];
        const decoder = new TextDecoder();
        const code = await main(argv, {
          write: (fd, text) =>
            (fd === 1 ? out : err).push(typeof text === "string" ? text : decoder.decode(text)),
          env: environment() as Record<string, string>,
          cwd: workspace,
        });
        return { code, stdout: out.join(""), stderr: err.join("") };
      },
    }, (message) => ctx.out.raw(`${JSON.stringify(message)}\n`));
    await serveLines(process.stdin as AsyncIterable<Uint8Array>, server);
    return 0;
  } finally {
    await hooks?.close();
    await socket?.close();
    service.close();
    store.close();
  }
}

/** Starts the store's HTTP hooks when it has them (`run/http.json`); null otherwise or on failure. */
async function serveHttpHooks(
  ctx: CommandContext,
  service: import("../../integrations/watch/service.ts").WatchService,
  socket: import("../../integrations/watch/server.ts").WatchServer,
): Promise<{ close(): Promise<void> } | null> {
  const http = await import("../../integrations/watch/http_hooks.ts");
  const conf = http.readHttpConf(service.store.dir);
  if (conf === null) return null;
  const { hookBusyBudgetMs } = await import("../_checkpoint.ts");
  try {
    const hooks = await http.HookHttpServer.start(service, conf, {
      onRequest: () => socket.touch(),
      onProblem: (error) =>
        ctx.out.note(`hook event not recorded: ${(error as Error).message ?? String(error)}`),
      busyBudgetMs: hookBusyBudgetMs(),
    });
    socket.http = hooks.url;
    return hooks;
  } catch (error) {
    ctx.out.note(`cannot serve HTTP hooks on 127.0.0.1:${conf.port}: ${(error as Error).message}`);
    return null;
  }
}
