/**
 * `ctxsnap serve`: the timeline page, live, on 127.0.0.1 with a random port
 * and token; read-only. Runs until interrupted (Ctrl-C, SIGTERM).
 * @module
 */
import process from "node:process";
import { type Command, list, openStore, str, trustPolicy } from "../command.ts";
import { storeScope, VIEW_OPTIONS } from "../_view.ts";

/** The `serve` command. */
export const serve: Command = {
  name: "serve",
  usage: "serve [--session S] [--branch B] [--all] [--trust KEY]...",
  examples: [
    "ctxsnap serve                 # prints http://127.0.0.1:PORT/TOKEN/; Ctrl-C stops",
    'ctxsnap serve --all --json    # {"url": …} once listening',
  ],
  options: {
    ...VIEW_OPTIONS,
  },
  args: [],
  async run(ctx, parsed) {
    const store = openStore(ctx, { readOnly: true });
    try {
      const scope = storeScope(store, parsed);
      const keysFile = str(parsed, "trusted-keys");
      const trust = await trustPolicy(
        list(parsed, "trust"),
        keysFile === undefined ? {} : { keysFile },
      );
      const { serveTimeline } = await import("../../view/serve.ts");
      const server = await serveTimeline(store, scope, trust);
      ctx.out.result(
        { url: server.url, host: "127.0.0.1", port: server.port, scope, read_only: true },
        () =>
          `Serving the timeline at ${server.url}\n` +
          "Read-only, on this machine only; anyone with this URL can read the timeline. Ctrl-C stops.",
      );
      await new Promise<void>((resolve) => {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      });
      await server.close();
      return 0;
    } finally {
      store.close();
    }
  },
};
