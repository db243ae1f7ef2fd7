/**
 * `ctxsnap watch`: a long-lived process that keeps the store open, watches
 * the workspace for changes and makes checkpoints for `ctxsnap create` and
 * the agent hooks (on its socket, and Claude Code's HTTP hooks on
 * 127.0.0.1 once `ctxsnap hook install claude-code --http` made their port
 * and token), re-reading only what changed. `create` and the hook start one
 * in the background when none runs (`--daemon`: it exits after an idle time
 * and logs into the store's `run/daemon.log`); `watch status` and
 * `watch stop` show and end it.
 * @module
 */
import process from "node:process";
import { ConflictError, CtxsnapError, NotFoundError, quote, UsageError } from "../../errors.ts";
import { configDir } from "../../keys/config_dir.ts";
import { locateStore } from "../../repository/locate.ts";
import { checkRegistered } from "../../repository/trust.ts";
import { askWatch } from "../../integrations/watch/client.ts";
import { type Command, flag, identity, openStore, str } from "../command.ts";
import { CAPTURE_FLAGS, sizeOption } from "../flags.ts";
import { hookBusyBudgetMs } from "../_checkpoint.ts";

/** The `watch` command. */
export const watch: Command = {
  name: "watch",
  usage:
    "watch [--max-file-size SIZE] [--idle-timeout DURATION] [--daemon]\nwatch status\nwatch stop",
  examples: [
    "ctxsnap watch &                 # then: ctxsnap create, and hooks, hand their checkpoints to it",
    "ctxsnap watch status --json     # is one running for this store? how does it capture?",
    "ctxsnap watch stop              # ask it to exit",
    "CTXSNAP_DAEMON=off ctxsnap create   # never start one in the background",
  ],
  options: {
    "idle-timeout": {
      type: "string",
      arg: "DURATION",
      help: "exit after this long without a request (e.g. 30m; default: never)",
    },
    daemon: {
      type: "boolean",
      help: "started in the background: exit quietly when another serves the store",
    },
    status: { type: "boolean", help: "report the watch process serving this store (exit 4: none)" },
    stop: {
      type: "boolean",
      help: "ask the watch process serving this store to exit (exit 4: none)",
    },
    ...CAPTURE_FLAGS,
  },
  args: [{
    name: "status|stop",
    help: "report or end the watch process (default: run one)",
    optional: true,
  }],
  async run(ctx, parsed) {
    const action = parsed.positionals[0];
    if (action !== undefined && action !== "status" && action !== "stop") {
      throw new UsageError(`Unknown watch action ${quote(action)}`, {
        hint: "ctxsnap watch [status|stop]",
      });
    }
    if (action !== undefined || flag(parsed, "status") || flag(parsed, "stop")) {
      const op = action ?? (flag(parsed, "stop") ? "stop" : "status");
      const storeDir = locateStore({ store: ctx.store, cwd: ctx.cwd });
      checkRegistered(configDir(), storeDir); // only this user's store names a watch to ask
      const answer = await askWatch(storeDir, op, null, { timeoutMs: 10_000 });
      if (answer === null) {
        throw new NotFoundError(`No watch process serves the store ${quote(storeDir)}`, {
          hint: "start one with `ctxsnap watch`",
        });
      }
      const result: Record<string, unknown> = { ...answer.result, socket: answer.info.socket };
      if (op === "stop") {
        // Wait (briefly) until it has let go of the store, so what follows starts afresh.
        const { alive } = await import("../../integrations/watch/daemon.ts");
        const until = Date.now() + 10_000;
        while (alive(answer.info.pid) && Date.now() < until) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        result.stopped = !alive(answer.info.pid);
      }
      ctx.out.result(
        result,
        () =>
          op === "stop"
            ? `asked the watch process (pid ${answer.info.pid}) to stop`
            : statusText(result),
      );
      return 0;
    }
    const maxFileBytes = sizeOption(str(parsed, "max-file-size"));
    const daemon = flag(parsed, "daemon");
    const [
      { captureStatusWire, WatchService },
      { WatchServer },
      http,
      { parseDuration, acquireLock, daemonSettings },
    ] = await Promise
      .all([
        import("../../integrations/watch/service.ts"),
        import("../../integrations/watch/server.ts"),
        import("../../integrations/watch/http_hooks.ts"),
        import("../../integrations/watch/daemon.ts"),
      ]);
    const idle = str(parsed, "idle-timeout");
    const signer = await identity();
    const store = openStore(ctx);
    let idleMs: number | undefined;
    try {
      // A daemon.conf that cannot be used is reported here (exit 7), not guessed around.
      const settings = daemonSettings(store.dir);
      idleMs = idle !== undefined ? parseDuration(idle) : daemon ? settings.idleMs : undefined;
    } catch (error) {
      store.close();
      throw error;
    }
    // At most one per store, taken before the first walk (two hook events at once start two).
    let lock: ReturnType<typeof acquireLock>;
    try {
      lock = acquireLock(store.dir);
    } catch (error) {
      store.close();
      throw error;
    }
    if (typeof lock === "number") {
      store.close();
      const message = `A watch process (pid ${lock}) already serves the store ${
        quote(ctx.store ?? store.dir)
      }`;
      if (daemon) {
        ctx.out.note(message);
        return 0;
      }
      throw new ConflictError(message, { hint: "stop it first: ctxsnap watch stop" });
    }
    const release = lock;
    const service = new WatchService(store, signer, {
      ...(maxFileBytes !== undefined ? { maxFileBytes } : {}),
    });
    let server: Awaited<ReturnType<typeof WatchServer.start>> | null = null;
    let hooks: Awaited<ReturnType<typeof http.HookHttpServer.start>> | null = null;
    try {
      await service.warm();
      try {
        server = await WatchServer.start(service, {
          lock: release,
          ...(idleMs !== undefined ? { idleMs } : {}),
        });
      } catch (error) {
        if (daemon && error instanceof CtxsnapError && error.code === "conflict") {
          ctx.out.note(error.message);
          return 0;
        }
        throw error;
      }
      const conf = http.readHttpConf(store.dir);
      if (conf !== null) {
        const watchServer = server;
        try {
          hooks = await http.HookHttpServer.start(service, conf, {
            onRequest: () => watchServer.touch(),
            onProblem: (error) =>
              ctx.out.note(
                `${new Date().toISOString()} hook event not recorded: ${problem(error)}`,
              ),
            busyBudgetMs: hookBusyBudgetMs(),
          });
          server.http = hooks.url;
        } catch (error) {
          ctx.out.note(
            `cannot serve HTTP hooks on 127.0.0.1:${conf.port}: ${
              problem(error)
            }; Claude Code's HTTP hook events are not recorded until the port is free`,
          );
        }
      }
      const status = service.status();
      ctx.out.result(
        {
          watching: status.workspace,
          store: status.store,
          pid: server.info.pid,
          socket: server.info.socket,
          key_id: status.keyId,
          capture: captureStatusWire(status.capture),
          http: hooks?.url ?? null,
          idle_timeout_ms: idleMs ?? null,
        },
        () =>
          `watching ${status.workspace} (pid ${server!.info.pid}; ${
            status.capture.mode === "events"
              ? `${status.capture.watched} directories`
              : `every checkpoint walks: ${status.capture.reason}`
          })`,
      );
      await stopped(server.stopRequested);
      if (server.stopReason !== null) {
        ctx.out.note(`stopping: ${server.stopReason} (${new Date().toISOString()})`);
      }
      return 0;
    } finally {
      await hooks?.close();
      await server?.close();
      if (server === null) release();
      const status = service.status();
      service.close();
      store.close();
      ctx.out.note(
        `watch stopped after ${status.checkpoints} checkpoint(s), ${status.capture.incremental} incremental and ${status.capture.fullWalks} full walk(s)`,
      );
    }
  },
};

/** Resolves on SIGINT, SIGTERM, SIGHUP or a stop request. */
function stopped(requested: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
    const done = () => {
      for (const signal of signals) process.off(signal, done);
      resolve();
    };
    for (const signal of signals) process.on(signal, done);
    requested.then(done);
  });
}

function problem(error: unknown): string {
  return JSON.stringify(error instanceof Error ? error.message : String(error));
}

function statusText(result: Record<string, unknown>): string {
  const capture = result.capture as Record<string, unknown> | undefined;
  return [
    `watch process ${result.pid}, started ${result.started_at}`,
    `  workspace ${result.workspace}`,
    `  ${result.checkpoints} checkpoint(s); captures: ${capture?.incremental} incremental, ${capture?.full_walks} full walk(s)`,
    `  ${
      capture?.mode === "events"
        ? `events from ${capture?.watched} directories`
        : `every checkpoint walks: ${capture?.reason}`
    }`,
  ].join("\n");
}
