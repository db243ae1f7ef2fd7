/**
 * Snapshot formats as adapters (`lib/share/formats/`): the core create and
 * restore paths load no lean-ctx code and a plain restore queries no
 * lean-ctx table; every command that takes a snapshot takes a stored
 * lean-ctx one (forget, diff, show, verify, restore, publish) or refuses it
 * with the reason (fork, materialize); the Replay view draws them.
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import { fromHex, toHex } from "../../lib/encoding/hex.ts";
import type { Signer } from "../../lib/format/envelope.ts";
import { leanCtxFileText, newLeanCtxSnapshot, signLeanCtx } from "../../lib/share/leanctx.ts";
import { findKept, formatNamed, keptFormats } from "../../lib/share/formats/registry.ts";
import { Store } from "../../lib/repository/store.ts";
import { assert, assertEquals } from "../_assert.ts";
import {
  type CliResult,
  expectCode,
  REPO,
  runMain,
  type TempWorkspace,
  withStore,
} from "../_cli.ts";

const LIB = join(REPO, "lib");
const SIGNER: Signer = await (async () => {
  const seed = fromHex("2c".repeat(32), 32);
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
})();

/** The modules `root` loads before running: its static imports, transitively (not `import()`). */
async function staticGraph(root: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", root],
    cwd: REPO,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
    }[];
  };
  const bySpecifier = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const todo = [new URL(`file://${join(REPO, root)}`).href];
  while (todo.length > 0) {
    const next = todo.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    for (const dep of bySpecifier.get(next)?.dependencies ?? []) {
      if (dep.code !== undefined && !dep.isDynamic) todo.push(dep.code.specifier);
    }
  }
  return [...seen].filter((s) => s.startsWith("file://")).map((s) =>
    fileURLToPath(s).slice(LIB.length + 1)
  );
}

const LEAN_CODE = /leanctx|share\/formats\//;

/** A signed lean-ctx file in `dir`, with a session slice and a git anchor; returns its path and id. */
async function leanFile(
  dir: string,
  task: string,
  signer: Signer = SIGNER,
): Promise<{ file: string; id: string }> {
  const lean = newLeanCtxSnapshot("2026-07-07T07:07:07Z", "3.9.18");
  lean.git = { commit: "abc1234", branch: "main", dirty: false };
  lean.session = {
    session_id: "s-1",
    task,
    decisions: ["keep tests real"],
    files_touched: ["src/parser.ts"],
    progress_pct: 60,
  };
  const signed = await signLeanCtx(lean, signer);
  const file = join(dir, `${signed.snapshot_id.slice(0, 12)}.ctxsnapshot.json`);
  await Deno.writeTextFile(file, leanCtxFileText(signed));
  return { file, id: signed.snapshot_id };
}

async function importLean(ws: TempWorkspace, task: string): Promise<string> {
  const { file, id } = await leanFile(ws.root, task);
  expectCode(await ws.run(["import", file, "--trust", SIGNER.publicKeyHex]), 0, "import lean-ctx");
  return id;
}

function count(ws: TempWorkspace, sql: string): number {
  const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"), { readOnly: true });
  try {
    return (db.prepare(sql).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

Deno.test("the core create, restore, switch and undo paths load no lean-ctx code (static import graph)", async () => {
  for (
    const root of [
      "lib/history/create.ts",
      "lib/workspace/move/restore.ts",
      "lib/workspace/move/switch.ts",
      "lib/workspace/move/undo.ts",
      "lib/cli/commands/create.ts",
      "lib/cli/commands/restore.ts",
    ]
  ) {
    const graph = await staticGraph(root);
    assert(graph.length > 5, `${root}: the graph was read (${graph.length} modules)`);
    const lean = graph.filter((m) => LEAN_CODE.test(m));
    assertEquals(lean, [], `${root} loads lean-ctx code`);
  }
  // The check can fail: lean-ctx's restore loads both the core and lean-ctx code.
  const lean = await staticGraph("lib/share/leanctx_restore.ts");
  assert(lean.includes("history/create.ts"), "the graph crosses folders");
  assert(lean.some((m) => LEAN_CODE.test(m)), "leanctx_restore.ts loads lean-ctx code");
  // Sharing asks the registry: verifying or importing a ctxsnap file loads no lean-ctx code.
  for (const root of ["lib/share/verify_file.ts", "lib/share/import.ts"]) {
    assertEquals((await staticGraph(root)).filter((m) => LEAN_CODE.test(m)), [], root);
  }
});

/** Runs `fn` recording every SQL statement the stores of this process prepare that names lean-ctx's table. */
async function leanQueriesDuring(fn: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const original = Object.getOwnPropertyDescriptor(Store.prototype, "stmt")!;
  Object.defineProperty(Store.prototype, "stmt", {
    ...original,
    value: function (this: Store, sql: string) {
      if (/leanctx/i.test(sql)) seen.push(sql.replace(/\s+/g, " ").trim());
      return original.value.call(this, sql);
    },
  });
  try {
    await fn();
  } finally {
    Object.defineProperty(Store.prototype, "stmt", original);
  }
  return seen;
}

Deno.test("a plain restore, create and show run no query against the lean-ctx table, even with lean-ctx snapshots stored", async () => {
  await withStore(async (ws) => {
    const first = jsonOf(await ws.run(["create", "-m", "one", "--json"]), "create").id;
    await Deno.writeTextFile(join(ws.path, "a.txt"), "alpha two\n");
    expectCode(await ws.run(["create", "-m", "two"]), 0, "create two");
    const lean = await importLean(ws, "resume the port");
    const run = (args: string[]) => runMain(args, { config: ws.configDir, cwd: ws.path });
    const plain = await leanQueriesDuring(async () => {
      expectCode(await run(["restore", first.slice(0, 8)]), 0, "restore by id prefix");
      expectCode(await run(["restore", "HEAD~2", "--dry-run"]), 0, "restore by name");
      expectCode(await run(["create", "-m", "three"]), 0, "create");
      expectCode(await run(["show", first.slice(0, 8)]), 0, "show by id prefix");
    });
    assertEquals(plain, [], "a plain restore, create or show queried the lean-ctx table");
    assertEquals(await Deno.readTextFile(join(ws.path, "a.txt")), "alpha\n");
    // The check can fail: naming a lean-ctx snapshot does query it.
    const named = await leanQueriesDuring(async () => {
      expectCode(await run(["show", lean.slice(0, 10)]), 0, "show of a lean-ctx id");
    });
    assert(named.length > 0, "show of a lean-ctx id recorded no lean-ctx query");
  });
});

/** The JSON result of a run that must exit 0. */
// deno-lint-ignore no-explicit-any
function jsonOf(run: CliResult, what: string): any {
  expectCode(run, 0, what);
  return run.json();
}

Deno.test("forget takes a lean-ctx id: the row leaves through a recorded forget, the rest of the store still verifies", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    const id = await importLean(ws, "resume the port");
    const dry = jsonOf(await ws.run(["forget", id.slice(0, 10), "--dry-run", "--json"]), "run");
    assertEquals(dry.forget, [id]);
    assertEquals(count(ws, "SELECT count(*) AS n FROM leanctx_snapshots"), 1, "dry run kept it");
    const done = jsonOf(await ws.run(["forget", id.slice(0, 10), "--json"]), "run");
    assertEquals(done.forgotten, [id]);
    assertEquals(count(ws, "SELECT count(*) AS n FROM leanctx_snapshots"), 0);
    assertEquals(
      count(ws, "SELECT count(*) AS n FROM operations WHERE kind = 'forget' AND status = 'done'"),
      1,
    );
    expectCode(await ws.run(["show", id.slice(0, 10)]), 4, "show after forget");
    const list = jsonOf(await ws.run(["list", "--all", "--json"]), "run");
    assert(list.snapshots.every((s: { id: string }) => s.id !== id), "still listed");
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all after forget");
  });
});

Deno.test("diff takes lean-ctx ids: its session slice against a snapshot, the workspace, or another lean-ctx snapshot", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["session", "set", "--task", "live task"]), 0, "session set");
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    const a = await importLean(ws, "resume the port");
    const b = await importLean(ws, "ship the port");
    const vsHead = jsonOf(await ws.run(["diff", a.slice(0, 10), "HEAD", "--json"]), "run");
    assertEquals(vsHead.a, a);
    assertEquals(vsHead.session.task, { from: "resume the port", to: "live task" });
    assert(vsHead.session.decisions.removed.includes("keep tests real"), JSON.stringify(vsHead));
    // A lean-ctx snapshot records no workspace: like a snapshot taken without one.
    assert(vsHead.added.includes("a.txt"), JSON.stringify(vsHead));
    const both = jsonOf(await ws.run(["diff", a, b, "--json"]), "run");
    assertEquals(both.session.task, { from: "resume the port", to: "ship the port" });
    assertEquals([both.added, both.changed, both.removed], [[], [], []]);
    expectCode(await ws.run(["diff", a.slice(0, 10)]), 0, "diff against the workspace");
  });
});

Deno.test("diff of a lean-ctx snapshot changed behind ctxsnap's back is refused (exit 1)", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    const a = await importLean(ws, "resume the port");
    const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"));
    try {
      const { editBehindCtxsnap } = await import("../_util.ts");
      editBehindCtxsnap(db, "leanctx_snapshots", () => {
        const row = db.prepare("SELECT file FROM leanctx_snapshots WHERE id = ?").get(a) as {
          file: Uint8Array;
        };
        const text = new TextDecoder().decode(row.file).replace(
          "resume the port",
          "resume the PORT",
        );
        db.prepare("UPDATE leanctx_snapshots SET file = ? WHERE id = ?").run(
          new TextEncoder().encode(text),
          a,
        );
      });
    } finally {
      db.close();
    }
    const run = await ws.run(["diff", a.slice(0, 10), "HEAD"]);
    expectCode(run, 1, "diff of a tampered lean-ctx snapshot");
    assert(!run.stdout.includes("PORT"), "printed what the tampered file says");
  });
});

Deno.test("fork and materialize refuse a lean-ctx id with the reason, changing nothing", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    const id = await importLean(ws, "resume the port");
    const branches = count(ws, "SELECT count(*) AS n FROM branches");
    const fork = await ws.run(["fork", id.slice(0, 10), "--name", "try"]);
    expectCode(fork, 2, "fork of a lean-ctx snapshot");
    assert(fork.stderr.includes("kept as itself"), fork.stderr);
    assert(fork.stderr.includes("hint: restore it"), fork.stderr);
    assertEquals(count(ws, "SELECT count(*) AS n FROM branches"), branches);
    const dest = join(ws.root, "out");
    const made = await ws.run(["materialize", id.slice(0, 10), dest]);
    expectCode(made, 2, "materialize of a lean-ctx snapshot");
    assert(made.stderr.includes("records no workspace"), made.stderr);
    let exists = true;
    try {
      await Deno.lstat(dest);
    } catch {
      exists = false;
    }
    assertEquals(exists, false, "materialize wrote its destination");
  });
});

Deno.test("show --skipped of a lean-ctx id is a usage error: it records no workspace", async () => {
  await withStore(async (ws) => {
    const id = await importLean(ws, "resume the port");
    const run = await ws.run(["show", id.slice(0, 10), "--skipped"]);
    expectCode(run, 2, "show --skipped of a lean-ctx snapshot");
    assert(run.stderr.includes("records no workspace"), run.stderr);
    expectCode(await ws.run(["show", id.slice(0, 10)]), 0, "show of it");
  });
});

Deno.test("the Replay view draws stored lean-ctx snapshots on their quarantine lane, checked, with their session slice", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    const id = await importLean(ws, "resume the port");
    const { timelineFromStore } = await import("../../lib/view/model.ts");
    const { Keyring } = await import("../../lib/keys/keyring.ts");
    const store = Store.open(join(ws.path, ".ctxsnap"), { readOnly: true });
    try {
      const pinned = new Keyring([]);
      pinned.add(SIGNER.publicKey);
      const data = await timelineFromStore(store, { kind: "all" }, pinned);
      const drawn = data.snapshots.find((s) => s.id === id);
      assert(drawn !== undefined, "the lean-ctx snapshot is not drawn");
      assertEquals(drawn.format, "lean-ctx");
      assertEquals(drawn.lane, `main/imported/${SIGNER.keyId}`);
      assertEquals(drawn.context.task, "resume the port");
      assertEquals(drawn.workspace, null);
      assertEquals(drawn.signer.status, "trusted");
      assertEquals(drawn.signer.public_key, SIGNER.publicKeyHex);
      assertEquals(data.snapshots.filter((s) => s.format === "ctxsnap").length, 1);
      const lane = data.branches.find((b) => b.lane === drawn.lane);
      assertEquals([lane?.kind, lane?.head], ["imported", id]);
      assertEquals(data.verification.trusted, 1, "the lean-ctx snapshot counts as trusted");
      // Unpinned: drawn, not trusted.
      const open = await timelineFromStore(
        store,
        { kind: "session", session: "main" },
        new Keyring([]),
      );
      assertEquals(open.snapshots.find((s) => s.id === id)?.signer.status, "untrusted");
      // Another branch's scope does not hold it.
      const main = await timelineFromStore(store, {
        kind: "branch",
        session: "main",
        branch: "main",
      }, pinned);
      assert(main.snapshots.every((s) => s.id !== id), "drawn on main");
    } finally {
      store.close();
    }
  });
});

Deno.test("an id prefix naming both a ctxsnap and a lean-ctx snapshot names the ctxsnap one, and more characters reach the lean-ctx one", async () => {
  await withStore(async (ws) => {
    const own = jsonOf(await ws.run(["create", "-m", "one", "--json"]), "create").id as string;
    // A stored lean-ctx row whose id shares the ctxsnap id's first 8 characters.
    const shadow = own.slice(0, 8) + "f".repeat(56);
    const store = Store.open(join(ws.path, ".ctxsnap"));
    try {
      const { insertLeanCtxRow } = await import("../../lib/repository/leanctx_rows.ts");
      store.transaction("test", () =>
        insertLeanCtxRow(store, {
          id: shadow,
          session: "main",
          branch: "imported/unsigned",
          key_id: null,
          created_at: "2026-01-01T00:00:00Z",
          file: new TextEncoder().encode("{}"),
        }));
    } finally {
      store.close();
    }
    const shown = jsonOf(await ws.run(["show", own.slice(0, 8), "--json"]), "show prefix");
    assertEquals(shown.id, own, "the imported row shadowed the user's snapshot");
    expectCode(await ws.run(["restore", own.slice(0, 8), "--dry-run"]), 0, "restore prefix");
    // Past the shared prefix the lean-ctx row is reached (and its bytes are refused: not a file).
    const lean = await ws.run(["show", shadow.slice(0, 12)]);
    expectCode(lean, 1, "show of the stored lean-ctx row");
  });
});

Deno.test("the format registry: a ctxsnap snapshot wins a prefix, a kept format is found only by its own ids, file sniffing", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    const id = await importLean(ws, "resume the port");
    const store = Store.open(join(ws.path, ".ctxsnap"), { readOnly: true });
    try {
      const found = await findKept(store, id.slice(0, 8).toUpperCase());
      assertEquals([found?.format.name, found?.id], ["lean-ctx", id]);
      assertEquals(await findKept(store, "not hex"), null);
      assertEquals(await findKept(store, "0000000000"), null);
    } finally {
      store.close();
    }
    const lean = (await keptFormats())[0]!;
    const own = await formatNamed("ctxsnap");
    const text = new TextEncoder().encode(
      await Deno.readTextFile((await leanFile(ws.root, "t")).file),
    );
    assertEquals([lean.sniff(text), own.kept, lean.kept], [true, false, true]);
  });
});
