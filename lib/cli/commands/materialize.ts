/**
 * `ctxsnap materialize`: write a snapshot's files into a directory.
 * @module
 */
import * as path from "node:path";
import { UsageError } from "../../errors.ts";
import { readEnvelope } from "../../history/timeline.ts";
import { type Command, openStore, short, target } from "../command.ts";
import { esc } from "../output.ts";

/** The `materialize` command. */
export const materialize: Command = {
  name: "materialize",
  usage: "materialize REVISION DEST [PATH...]",
  examples: [
    "ctxsnap materialize 3f2a /tmp/old-state",
    "ctxsnap materialize 3f2a ./out src/parser.ts docs",
  ],
  options: {},
  args: [{ name: "REVISION", help: "the snapshot to write out" }, {
    name: "DEST",
    help: "the directory to write into (created if missing)",
  }, {
    name: "PATH",
    help: "only these paths of the snapshot, and everything below them",
    optional: true,
    repeat: true,
  }],
  async run(ctx, parsed) {
    const [prefix, dest, ...paths] = parsed.positionals;
    if (prefix === undefined || dest === undefined) {
      throw new UsageError("materialize needs ID and DEST");
    }
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return await store.readAsync(async () => {
        const found = await target(ctx, store, prefix);
        const id = found.id;
        if (found.kept !== null) {
          throw new UsageError(
            `Snapshot ${
              short(id)
            } is a ${found.format} snapshot, which records no workspace: there are no files to write`,
            { hint: `\`ctxsnap show ${short(id)}\` prints what it recorded` },
          );
        }
        const tree = (await readEnvelope(store, id)).body.workspace?.tree;
        if (tree === undefined) throw new UsageError(`Snapshot ${short(id)} recorded no workspace`);
        const { materialize: materializeTree } = await import(
          "../../workspace/move/materialize.ts"
        );
        const result = materializeTree(store, tree, path.resolve(ctx.cwd, dest), paths);
        ctx.out.result(
          { id, dest: path.resolve(ctx.cwd, dest), ...result },
          () =>
            `Wrote ${result.written.length} path(s) into ${esc(dest)}${
              result.identical.length ? `; ${result.identical.length} already identical` : ""
            }.`,
        );
        return 0;
      });
    } finally {
      store.close();
    }
  },
};
