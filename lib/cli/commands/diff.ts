/**
 * `ctxsnap diff`: what changed between two snapshots, or a snapshot and now:
 * files (names, `--stat`, `--patch`) and the session.
 * @module
 */
import { captureWorkspace } from "../../store/capture.ts";
import type { Store } from "../../store/store.ts";
import type { TreeManifest } from "../../store/tree.ts";
import type { SnapshotContext } from "../../snapshot/body.ts";
import { diffTrees } from "../../snapshot/diff.ts";
import { readSessionState, sessionChange } from "../../snapshot/session_state.ts";
import { readEnvelope, selection } from "../../snapshot/timeline.ts";
import { type Command, openStore, revision, short, str } from "../command.ts";
import { esc } from "../output.ts";

const EMPTY: TreeManifest = { version: 1, entries: [], skipped: [] };

async function sideOf(
  store: Store,
  id: string,
): Promise<{ tree: TreeManifest; context: SnapshotContext }> {
  const body = (await readEnvelope(store, id)).body; // id and signature checked
  return {
    tree: body.workspace === null ? EMPTY : store.getTree(body.workspace.tree),
    context: body.context,
  };
}

/** The `diff` command. */
export const diff: Command = {
  name: "diff",
  summary: "show what changed between snapshots: files and session",
  usage: "diff A [B] [--session S]",
  examples: [
    "ctxsnap diff HEAD              # the head against the workspace as it is now",
    "ctxsnap diff 3f2a9c 81bd04 --json",
    "ctxsnap diff HEAD~1 HEAD       # what the last snapshot changed, session included",
  ],
  options: {
    session: { type: "string", arg: "S", help: "session whose HEAD and branches names mean" },
  },
  positionals: 2,
  async run(ctx, parsed) {
    const [a, b] = parsed.positionals;
    const store = openStore(ctx, { readOnly: true });
    try {
      const session = str(parsed, "session");
      const idA = revision(ctx, store, a ?? "HEAD", { session });
      const idB = b === undefined ? null : revision(ctx, store, b, { session });
      const left = await sideOf(store, idA);
      const right = idB === null
        ? {
          tree: captureWorkspace(store, { persist: false }).tree,
          context: readSessionState(store, selection(store, session).session),
        }
        : await sideOf(store, idB);
      const files = diffTrees(left.tree, right.tree, { bIsDisk: idB === null });
      const sessionDiff = sessionChange(left.context, right.context);
      ctx.out.result({ a: idA, b: idB ?? "workspace", ...files, session: sessionDiff }, () => {
        const lines = [`diff ${short(idA)} → ${idB === null ? "workspace" : short(idB)}`];
        for (const path of files.added) lines.push(`A ${esc(path)}`);
        for (const path of files.changed) lines.push(`M ${esc(path)}`);
        for (const path of files.removed) lines.push(`D ${esc(path)}`);
        const s = sessionDiff;
        if (s.task) {
          lines.push(
            `session task: ${esc(JSON.stringify(s.task.from))} → ${esc(JSON.stringify(s.task.to))}`,
          );
        }
        if (s.progress_pct) {
          lines.push(`session progress: ${s.progress_pct.from}% → ${s.progress_pct.to}%`);
        }
        for (const name of ["decisions", "findings", "knowledge", "files_touched"] as const) {
          for (const item of s[name].added) lines.push(`session ${name} + ${esc(item)}`);
          for (const item of s[name].removed) lines.push(`session ${name} - ${esc(item)}`);
        }
        const ext = s.extensions;
        for (const n of ext.added) lines.push(`session extension + ${esc(n)}`);
        for (const n of ext.changed) lines.push(`session extension ~ ${esc(n)}`);
        for (const n of ext.removed) lines.push(`session extension - ${esc(n)}`);
        if (lines.length === 1) lines.push("no differences");
        return lines.join("\n");
      });
      return 0;
    } finally {
      store.close();
    }
  },
};
