/**
 * `ctxsnap publish`: write a snapshot (or a bundle with its workspace) to a portable file.
 * @module
 */
import { UsageError } from "../../encoding/errors.ts";
import { resolveSnapshotId } from "../../snapshot/timeline.ts";
import { isTerminal } from "../../runtime.ts";
import { type Command, flag, intOption, openStore, short, str, userPath } from "../command.ts";

/** The `publish` command. */
export const publish: Command = {
  name: "publish",
  summary: "write a snapshot to a portable, verifiable file",
  usage: "publish ID [--out FILE|-] [--with-workspace] [--history N|--all]",
  examples: [
    "ctxsnap publish 3f2a                      # 3f2a….ctxsnapshot.json: the signed envelope, no file content",
    "ctxsnap publish 3f2a --with-workspace     # 3f2a….ctxbundle: envelope, tree and every file",
    "ctxsnap publish 3f2a --with-workspace --out - | ssh host ctxsnap import -",
  ],
  options: {
    out: {
      type: "string",
      arg: "FILE|-",
      help: "output file, or - for stdout (default: <id12>.ctxsnapshot.json / .ctxbundle here)",
    },
    "with-workspace": { type: "boolean", help: "include the workspace files (a bundle)" },
    history: { type: "string", arg: "N", help: "include N ancestors (a bundle)" },
    all: { type: "boolean", help: "include every ancestor (a bundle)" },
  },
  positionals: 1,
  async run(ctx, parsed) {
    const prefix = parsed.positionals[0];
    if (prefix === undefined) throw new UsageError("publish needs a snapshot ID");
    const n = intOption(parsed, "history", 0, 1_000_000);
    if (n !== undefined && flag(parsed, "all")) {
      throw new UsageError("use --history N or --all, not both");
    }
    const history = flag(parsed, "all") ? "all" as const : n ?? 0;
    const { planPublish, publishToFile, writePublished } = await import(
      "../../share/publish.ts"
    );
    const store = openStore(ctx, { readOnly: true });
    try {
      const id = resolveSnapshotId(store, prefix);
      const options = { withWorkspace: flag(parsed, "with-workspace"), history };
      const out = str(parsed, "out");
      if (out === "-") {
        const plan = planPublish(store, id, options);
        if (plan.kind === "bundle" && isTerminal(1)) {
          throw new UsageError("Refusing to write a binary bundle to a terminal", {
            hint: "redirect stdout to a file or a pipe, or use --out FILE",
          });
        }
        writePublished(store, plan, (chunk) => ctx.out.raw(chunk));
        return 0;
      }
      const result = publishToFile(
        store,
        id,
        out === undefined ? { ...options, dir: ctx.cwd } : { ...options, file: userPath(out) },
      );
      ctx.out.result(
        result,
        () =>
          `Wrote ${result.path}\n  ${result.kind}, ${result.snapshots.length} snapshot(s)` +
          (result.kind === "bundle" ? `, ${result.blobs} file contents` : ", no file content") +
          `, ${result.bytes} bytes; primary ${short(id)}`,
      );
      return 0;
    } finally {
      store.close();
    }
  },
};
