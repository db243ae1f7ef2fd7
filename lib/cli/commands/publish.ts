/**
 * `ctxsnap publish`: write a snapshot (or a bundle with its workspace) to a portable file.
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { UsageError } from "../../encoding/errors.ts";
import { isTerminal } from "../../runtime.ts";
import type { Store } from "../../store/store.ts";
import {
  type Command,
  flag,
  intOption,
  openStore,
  revision,
  short,
  str,
  userPath,
} from "../command.ts";

function real(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** Whether `dir` is the workspace root or below it (where the next capture would store a file). */
function insideWorkspace(store: Store, dir: string): boolean {
  const relative = path.relative(real(store.workspaceRoot), real(dir));
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/**
 * Where a file goes: `--out FILE`; `--out DIR` (an existing directory, or a
 * path ending in `/`) for the default name there; without `--out` the
 * current directory, unless it is inside the workspace: then the store's
 * `published/` directory, so the next capture never picks the file up.
 */
function destination(store: Store, cwd: string, out: string | undefined): {
  file?: string;
  dir?: string;
} {
  if (out === undefined) {
    if (!insideWorkspace(store, cwd)) return { dir: cwd };
    const dir = path.join(store.dir, "published");
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return { dir };
  }
  const given = userPath(out);
  if (out.endsWith("/")) {
    fs.mkdirSync(given, { recursive: true });
    return { dir: given };
  }
  try {
    if (fs.statSync(given).isDirectory()) return { dir: given };
  } catch {
    // Not there yet: a file name.
  }
  return { file: given };
}

/** The `publish` command. */
export const publish: Command = {
  name: "publish",
  summary: "write a snapshot to a portable, verifiable file",
  usage: "publish REVISION [--out FILE|DIR|-] [--with-workspace] [--history N|--all]",
  examples: [
    "ctxsnap publish 3f2a                      # 3f2a….ctxsnapshot.json: the signed envelope, no file content",
    "ctxsnap publish HEAD --with-workspace --out /tmp/   # /tmp/<id12>.ctxbundle: envelope, tree and every file",
    "ctxsnap publish 3f2a --with-workspace --out - | ssh host ctxsnap import -",
  ],
  options: {
    out: {
      type: "string",
      arg: "FILE|DIR|-",
      help:
        "output file, directory, or - for stdout (default: here, or .ctxsnap/published/ inside the workspace)",
    },
    "with-workspace": { type: "boolean", help: "include the workspace files (a bundle)" },
    history: { type: "string", arg: "N", help: "include N ancestors (a bundle)" },
    all: { type: "boolean", help: "include every ancestor (a bundle)" },
  },
  positionals: 1,
  async run(ctx, parsed) {
    const prefix = parsed.positionals[0];
    if (prefix === undefined) throw new UsageError("publish needs a snapshot (an id, HEAD, …)");
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
      const id = revision(ctx, store, prefix);
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
      const result = publishToFile(store, id, { ...options, ...destination(store, ctx.cwd, out) });
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
