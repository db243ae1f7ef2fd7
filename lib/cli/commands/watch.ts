/**
 * `ctxsnap watch`: a long-lived process that keeps the store open, watches
 * the workspace for changes and makes checkpoints for `ctxsnap create` and
 * the agent hook, re-reading only what changed.
 * @module
 */
import process from "node:process";
import { NotFoundError, quote } from "../../errors.ts";
import { configDir } from "../../keys/config_dir.ts";
import { locateStore } from "../../repository/locate.ts";
import { checkRegistered } from "../../repository/trust.ts";
import { askWatch } from "../../integrations/watch/client.ts";
import { type Command, flag, identity, openStore, str } from "../command.ts";
import { CAPTURE_FLAGS, sizeOption } from "../flags.ts";

/** The `watch` command. */
export const watch: Command = {
  name: "watch",
  usage: "watch [--max-file-size SIZE]\nwatch --status\nwatch --stop",
  examples: [
    "ctxsnap watch &                 # then: ctxsnap create, and hooks, hand their checkpoints to it",
    "ctxsnap watch --status --json   # is one running for this store? how does it capture?",
    "ctxsnap watch --stop            # ask it to exit",
  ],
  options: {
    status: { type: "boolean", help: "report the watch process serving this store (exit 4: none)" },
    stop: {
      type: "boolean",
      help: "ask the watch process serving this store to exit (exit 4: none)",
    },
    ...CAPTURE_FLAGS,
  },
  args: [],
  async run(ctx, parsed) {
    if (flag(parsed, "status") || flag(parsed, "stop")) {
      const op = flag(parsed, "stop") ? "stop" : "status";
      const storeDir = locateStore({ store: ctx.store, cwd: ctx.cwd });
      checkRegistered(configDir(), storeDir); // only this user's store names a watch to ask
      const answer = await askWatch(storeDir, op, null, { timeoutMs: 10_000 });
      if (answer === null) {
        throw new NotFoundError(`No watch process serves the store ${quote(storeDir)}`, {
          hint: "start one with `ctxsnap watch`",
        });
      }
      const result = { ...answer.result, socket: answer.info.socket };
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
    const [{ captureStatusWire, WatchService }, { WatchServer }] = await Promise.all([
      import("../../integrations/watch/service.ts"),
      import("../../integrations/watch/server.ts"),
    ]);
    const signer = await identity();
    const store = openStore(ctx);
    const service = new WatchService(store, signer, {
      ...(maxFileBytes !== undefined ? { maxFileBytes } : {}),
    });
    let server: Awaited<ReturnType<typeof WatchServer.start>> | null = null;
    try {
      await service.warm();
      server = await WatchServer.start(service);
      const status = service.status();
      ctx.out.result(
        {
          watching: status.workspace,
          store: status.store,
          pid: server.info.pid,
          socket: server.info.socket,
          key_id: status.keyId,
          capture: captureStatusWire(status.capture),
        },
        () =>
          `watching ${status.workspace} (pid ${server!.info.pid}; ${
            status.capture.mode === "events"
              ? `${status.capture.watched} directories`
              : `every checkpoint walks: ${status.capture.reason}`
          })`,
      );
      await stopped(server.stopRequested);
      return 0;
    } finally {
      await server?.close();
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
