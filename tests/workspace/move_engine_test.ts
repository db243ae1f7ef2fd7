/**
 * The move engine's cost, pinned: how many times each command walks the
 * workspace (`walksStarted()`, counted in `walkWorkspace`) and opens the
 * store (`Store.opens`), run in-process through the command line.
 */
import { assert, assertEquals } from "./../_assert.ts";
import { join } from "node:path";
import { CTXSNAP_BIN, expectCode, type TempWorkspace, withStore } from "../_cli.ts";
import { walksStarted } from "../../lib/workspace/io/walk.ts";
import { Store } from "../../lib/repository/store.ts";

const inProcess = CTXSNAP_BIN === undefined && Deno.env.get("CTXSNAP_FORCE_SUBPROCESS") !== "1";

interface Cost {
  walks: number;
  opens: number;
}

async function cost(ws: TempWorkspace, args: string[]): Promise<Cost> {
  const walks = walksStarted();
  const opens = Store.opens;
  expectCode(await ws.run(args), 0, args.join(" "));
  return { walks: walksStarted() - walks, opens: Store.opens - opens };
}

function git(cwd: string, ...args: string[]): void {
  const out = new Deno.Command("git", {
    args: ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args],
    cwd,
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** Two snapshots (a.txt v1, v2); returns the first's id. */
async function twoSnapshots(ws: TempWorkspace): Promise<string> {
  await Deno.writeTextFile(join(ws.path, "a.txt"), "v1\n");
  const first = (await ws.run(["create", "-m", "v1", "--json"])).json().id as string;
  await Deno.writeTextFile(join(ws.path, "a.txt"), "v2\n");
  expectCode(await ws.run(["create", "-m", "v2"]), 0, "create v2");
  return first;
}

Deno.test({
  name: "restore walks the workspace at most twice and opens the store once",
  ignore: !inProcess,
  async fn() {
    await withStore(async (ws) => {
      const first = await twoSnapshots(ws);
      assertEquals(await cost(ws, ["restore", first]), { walks: 2, opens: 1 }, "restore");
      // Nothing to write: one walk.
      assertEquals(await cost(ws, ["restore", first]), { walks: 1, opens: 1 }, "nothing to write");
      assertEquals(
        await cost(ws, ["restore", first, "--session-state"]),
        { walks: 1, opens: 1 },
        "session only",
      );
      // --force over a local edit: the saved snapshot is the record walk.
      const head = (await ws.run(["list", "--json"])).json();
      assert(head !== null);
      expectCode(await ws.run(["restore", "HEAD~1"]), 0, "restore v2 back");
      await Deno.writeTextFile(join(ws.path, "a.txt"), "local edit\n");
      assertEquals(
        await cost(ws, ["restore", first, "--force"]),
        { walks: 2, opens: 1 },
        "restore --force",
      );
      assertEquals(
        await cost(ws, ["restore", first, "--dry-run"]),
        { walks: 1, opens: 1 },
        "dry run",
      );
    });
  },
});

Deno.test({
  name:
    "restore --git walks the workspace twice: before the checkout, and once after it for the plan and the record",
  ignore: !inProcess,
  async fn() {
    await withStore(async (ws) => {
      git(ws.path, "init", "-q", "-b", "main");
      // Git ignores notes.txt, ctxsnap captures it: after the checkout the restore still writes it.
      await Deno.writeTextFile(join(ws.path, ".git", "info", "exclude"), ".ctxsnap\nnotes.txt\n");
      await Deno.writeTextFile(join(ws.path, "a.txt"), "v1\n");
      await Deno.writeTextFile(join(ws.path, "notes.txt"), "n1\n");
      git(ws.path, "add", "a.txt", "b.md", "src");
      git(ws.path, "commit", "-qm", "one");
      const first = (await ws.run(["create", "-m", "v1", "--json"])).json().id as string;
      await Deno.writeTextFile(join(ws.path, "a.txt"), "v2\n");
      await Deno.writeTextFile(join(ws.path, "notes.txt"), "n2\n");
      git(ws.path, "commit", "-qam", "two");
      expectCode(await ws.run(["create", "-m", "v2"]), 0, "create v2");
      assertEquals(await cost(ws, ["restore", first, "--git"]), { walks: 2, opens: 1 });
      assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "v1\n", "git checked it out");
      assertEquals(await Deno.readTextFile(join(ws.path, "notes.txt")), "n1\n", "ctxsnap wrote it");
    });
  },
});

Deno.test({
  name: "switch, undo, redo, recover, materialize and create: walks and store opens",
  ignore: !inProcess,
  async fn() {
    await withStore(async (ws) => {
      const first = await twoSnapshots(ws);
      expectCode(await ws.run(["fork", first, "--name", "exp"]), 0, "fork");
      assertEquals(await cost(ws, ["switch", "exp"]), { walks: 2, opens: 1 }, "switch");
      assertEquals(await cost(ws, ["switch", "main"]), { walks: 2, opens: 1 }, "switch back");
      await Deno.writeTextFile(join(ws.path, "a.txt"), "v3\n");
      assertEquals(await cost(ws, ["create", "-m", "v3"]), { walks: 1, opens: 1 }, "create");
      // Undo of a create moves no files: no walk.
      assertEquals(await cost(ws, ["undo"]), { walks: 0, opens: 1 }, "undo create");
      assertEquals(await cost(ws, ["redo"]), { walks: 0, opens: 1 }, "redo create");
      assertEquals(await cost(ws, ["restore", first]), { walks: 2, opens: 1 }, "restore");
      assertEquals(await cost(ws, ["undo"]), { walks: 2, opens: 1 }, "undo");
      assertEquals(await cost(ws, ["redo"]), { walks: 2, opens: 1 }, "redo");
      const dest = join(ws.path, "..", "out");
      assertEquals(
        await cost(ws, ["materialize", first, dest]),
        { walks: 0, opens: 1 },
        "materialize",
      );
      // An interrupted restore: recorded, not applied.
      const store = Store.open(join(ws.path, ".ctxsnap"));
      try {
        const { planPhase, recordPhase } = await import("../../lib/workspace/move/move.ts");
        const { readEnvelope } = await import("../../lib/history/timeline.ts");
        const target = await readEnvelope(store, first);
        const tree = target.body.workspace!.tree;
        const { plan, disk } = planPhase(store, store.getTree(tree));
        recordPhase(store, {
          kind: "restore",
          session: "main",
          branch: "main",
          source: null,
          target: first,
          targetTree: tree,
          plan,
          planned: disk,
          baseline: tree,
          sessions: ["main"],
          extra: {
            session: true,
            session_mode: "merge",
            pre_restore: null,
            git_commit: null,
            git_back: null,
          },
        });
      } finally {
        store.close();
      }
      assertEquals(await cost(ws, ["recover"]), { walks: 0, opens: 1 }, "recover");
      assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "v1\n");
    });
  },
});

Deno.test({
  name:
    "a restore with nothing to write stores every file it records: a new local file is walked and kept",
  ignore: !inProcess,
  async fn() {
    await withStore(async (ws) => {
      await twoSnapshots(ws);
      // Not in the store yet: the plan's walk cannot stand in for the record walk.
      await Deno.writeTextFile(join(ws.path, "new.txt"), "only on disk\n");
      assertEquals(await cost(ws, ["restore", "HEAD"]), { walks: 2, opens: 1 });
      assertEquals(await Deno.readTextFile(join(ws.path, "new.txt")), "only on disk\n");
      expectCode(await ws.run(["verify", "--all"]), 0, "verify --all");
    });
  },
});
