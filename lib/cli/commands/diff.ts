/**
 * `ctxsnap diff`: what changed between two snapshots, or a snapshot and now.
 * @module
 */
import { UsageError } from "../../errors.ts";
import { captureWorkspace } from "../../store/capture.ts";
import type { Store } from "../../store/store.ts";
import type { TreeManifest } from "../../store/tree.ts";
import { diffTrees } from "../../snapshot/diff.ts";
import { readEnvelope, resolveSnapshotId } from "../../snapshot/timeline.ts";
import { type Command, openStore, short } from "../command.ts";
import { esc } from "../output.ts";

const EMPTY: TreeManifest = { version: 1, entries: [], skipped: [] };

async function treeOf(store: Store, id: string): Promise<TreeManifest> {
  const body = (await readEnvelope(store, id)).body; // id and signature checked
  return body.workspace === null ? EMPTY : store.getTree(body.workspace.tree);
}

/** The `diff` command. */
export const diff: Command = {
  name: "diff",
  summary: "list files added, changed and removed between snapshots",
  usage: "diff A [B]",
  examples: [
    "ctxsnap diff 3f2a9c            # snapshot A against the workspace as it is now",
    "ctxsnap diff 3f2a9c 81bd04 --json",
  ],
  options: {},
  positionals: 2,
  async run(ctx, parsed) {
    const [a, b] = parsed.positionals;
    if (a === undefined) throw new UsageError("diff needs at least one snapshot ID");
    const store = openStore(ctx, { readOnly: true });
    try {
      const idA = resolveSnapshotId(store, a);
      const idB = b === undefined ? null : resolveSnapshotId(store, b);
      const left = await treeOf(store, idA);
      const right = idB === null
        ? captureWorkspace(store, { persist: false }).tree
        : await treeOf(store, idB);
      const result = diffTrees(left, right);
      ctx.out.result({ a: idA, b: idB ?? "workspace", ...result }, () => {
        const lines = [`diff ${short(idA)} → ${idB === null ? "workspace" : short(idB)}`];
        for (const path of result.added) lines.push(`A ${esc(path)}`);
        for (const path of result.changed) lines.push(`M ${esc(path)}`);
        for (const path of result.removed) lines.push(`D ${esc(path)}`);
        if (lines.length === 1) lines.push("no differences");
        return lines.join("\n");
      });
      return 0;
    } finally {
      store.close();
    }
  },
};
