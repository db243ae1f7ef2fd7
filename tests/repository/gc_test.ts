// deno-lint-ignore-file no-console
/**
 * Tests of `forget` and `gc` (docs/DESIGN.md §3 invariants 3
 * and 4) through the real command line on real SQLite stores, including two
 * real processes racing: one capturing, one forgetting and collecting.
 *
 * CTXSNAP_GC_RACE_ITERATIONS (default 15) sets the iterations of each loop of
 * the race.
 *
 * @module
 */
import { writeObjectBytes } from "../_objects.ts";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../_assert.ts";
import { expectCode, type TempWorkspace, withStore } from "../_cli.ts";

// ---------------------------------------------------------------------------
// helpers

// deno-lint-ignore no-explicit-any
async function runJson(ws: TempWorkspace, args: string[], code = 0): Promise<any> {
  const result = await ws.run([...args, "--json"]);
  expectCode(result, code, args.join(" "));
  return result.json();
}

async function create(ws: TempWorkspace, msg: string): Promise<string> {
  return (await runJson(ws, ["create", "-m", msg])).id as string;
}

async function snapshotIds(ws: TempWorkspace): Promise<string[]> {
  return ((await runJson(ws, ["list", "--all"])).snapshots as { id: string }[]).map((s) => s.id)
    .sort();
}

async function chain(ws: TempWorkspace): Promise<string[]> {
  return ((await runJson(ws, ["list"])).snapshots as { id: string }[]).map((s) => s.id);
}

async function verifyAll(ws: TempWorkspace, what: string): Promise<void> {
  expectCode(await ws.run(["verify", "--all"]), 0, `verify --all ${what}`);
}

function sha256(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

interface ObjectRow {
  id: string;
  kind: string;
  encoding: string;
}

/** The objects table, read through a real SQLite connection. */
function objects(ws: TempWorkspace): Map<string, ObjectRow> {
  const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"), { readOnly: true });
  try {
    const rows = db.prepare("SELECT id, kind, encoding FROM objects")
      .all() as unknown as ObjectRow[];
    return new Map(rows.map((r) => [r.id, { ...r }]));
  } finally {
    db.close();
  }
}

function treeOf(ws: TempWorkspace, id: string): string {
  const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"), { readOnly: true });
  try {
    const row = db.prepare("SELECT tree FROM snapshots WHERE id = ?").get(id) as
      | { tree: string }
      | undefined;
    if (row === undefined) throw new Error(`no snapshot row ${id}`);
    return row.tree;
  } finally {
    db.close();
  }
}

function bigBytes(size: number, salt: number): Uint8Array {
  const data = new Uint8Array(size);
  let x = salt * 2654435761 >>> 0;
  for (let i = 0; i < size; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    data[i] = x >>> 24;
  }
  return data;
}

// ---------------------------------------------------------------------------
// gc

Deno.test("gc keeps blobs shared with retained snapshots, removes unshared ones, and --dry-run deletes nothing", async () => {
  await withStore(async (ws) => {
    const bigShared = bigBytes(1024 * 1024 + 4096, 1);
    const bigOnly1 = bigBytes(1024 * 1024 + 8192, 2);
    await Deno.writeTextFile(join(ws.path, "shared.txt"), "in both snapshots\n");
    await Deno.writeFile(join(ws.path, "big-shared.bin"), bigShared);
    await Deno.writeTextFile(join(ws.path, "only1.txt"), "only in the first snapshot\n");
    await Deno.writeFile(join(ws.path, "big-only1.bin"), bigOnly1);
    const s1 = await create(ws, "one");
    const tree1 = treeOf(ws, s1);
    await Deno.remove(join(ws.path, "only1.txt"));
    await Deno.remove(join(ws.path, "big-only1.bin"));
    await Deno.writeTextFile(join(ws.path, "only2.txt"), "only in the second snapshot\n");
    const s2 = await create(ws, "two");
    const tree2 = treeOf(ws, s2);

    const ids = {
      shared: sha256("in both snapshots\n"),
      bigShared: sha256(bigShared),
      only1: sha256("only in the first snapshot\n"),
      bigOnly1: sha256(bigOnly1),
      only2: sha256("only in the second snapshot\n"),
    };
    const before = objects(ws);
    for (const [name, id] of Object.entries(ids)) assert(before.has(id), `${name} not stored`);
    assert(before.has(tree1) && before.has(tree2), "trees not stored");
    // Large blobs are stored as content-defined chunks (FORMAT.md 8.6), each chunk a blob.
    assertEquals(before.get(ids.bigOnly1)?.encoding, "chunks");
    assertEquals(before.get(ids.bigShared)?.encoding, "chunks");

    // Nothing is garbage while both snapshots are retained.
    const idle = await runJson(ws, ["gc"]);
    assertEquals([idle.trees, idle.blobs], [0, 0]);
    assertEquals([...objects(ws).keys()].sort(), [...before.keys()].sort());

    await runJson(ws, ["forget", s1]);
    const dry = await runJson(ws, ["gc", "--dry-run"]);
    assertEquals(dry.dry_run, true);
    assertEquals(dry.trees, 1);
    // only1, bigOnly1 and bigOnly1's chunks (a chunk is at most 1 MiB: at least two).
    assert(dry.blobs >= 4, `dry run counts ${dry.blobs} blobs`);
    assert(dry.bytes >= bigOnly1.length, `dry run reports ${dry.bytes} bytes`);
    assertEquals([...objects(ws).keys()].sort(), [...before.keys()].sort(), "dry run deleted");

    const done = await runJson(ws, ["gc"]);
    assertEquals([done.trees, done.blobs, done.bytes], [dry.trees, dry.blobs, dry.bytes]);
    const after = objects(ws);
    assert(after.has(ids.shared), "gc removed a blob shared with the retained snapshot");
    assert(after.has(ids.bigShared), "gc removed a big blob shared with the retained snapshot");
    assert(after.has(ids.only2), "gc removed a blob of the retained snapshot");
    assert(after.has(tree2), "gc removed the retained tree");
    assert(!after.has(ids.only1), "gc kept an unshared blob");
    assert(!after.has(ids.bigOnly1), "gc kept an unshared big blob");
    assert(!after.has(tree1), "gc kept the forgotten tree");
    assertEquals(after.size, before.size - 1 - dry.blobs);
    await verifyAll(ws, "after gc");
    expectCode(await ws.run(["verify", s2]), 0, "verify the retained snapshot");

    // The retained snapshot still restores byte for byte.
    const dest = join(ws.root, "out");
    expectCode(await ws.run(["materialize", s2, dest]), 0, "materialize after gc");
    assertEquals(await Deno.readFile(join(dest, "big-shared.bin")), bigShared);
  });
});

Deno.test("a malformed reachable tree stops gc (and gc --dry-run) with nothing deleted", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, "garbage.txt"), "to be collected\n");
    const s1 = await create(ws, "one");
    await Deno.remove(join(ws.path, "garbage.txt"));
    const s2 = await create(ws, "two");
    await runJson(ws, ["forget", s1]);
    const tree2 = treeOf(ws, s2);
    const before = objects(ws);
    assert(before.has(tree2), "tree2 is not stored");

    const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"));
    try {
      writeObjectBytes(db, tree2, new TextEncoder().encode('{"version":1,"entries":[{"path":'));
    } finally {
      db.close();
    }

    const dry = await ws.run(["gc", "--dry-run"]);
    assert(dry.code !== 0, `gc --dry-run accepted a malformed tree: ${dry.stdout}`);
    const result = await ws.run(["gc"]);
    expectCode(result, 1, "gc with a malformed reachable tree");
    assert(result.stderr.includes(tree2.slice(0, 12)), `gc names no tree: ${result.stderr}`);
    assertEquals([...objects(ws).keys()].sort(), [...before.keys()].sort(), "gc deleted objects");
    assert(objects(ws).has(sha256("to be collected\n")), "the garbage blob went anyway");
    const ops = (await runJson(ws, ["log", "--all"])).operations as { kind: string }[];
    assert(!ops.some((o) => o.kind === "gc"), "a failed gc was logged as an operation");
    const verify = await ws.run(["verify", "--all"]);
    expectCode(verify, 1, "verify --all with the corrupted tree");
  });
});

// ---------------------------------------------------------------------------
// forget

Deno.test("forget of a branch head is refused (exit 5) and removes nothing", async () => {
  await withStore(async (ws) => {
    const s1 = await create(ws, "one");
    await Deno.writeTextFile(join(ws.path, "a.txt"), "two\n");
    const s2 = await create(ws, "two");
    const refused = await ws.run(["forget", s2]);
    expectCode(refused, 5, "forget the head of main");
    assert(refused.stderr.includes("head"), refused.stderr);
    await runJson(ws, ["fork", s1, "--name", "side"]);
    expectCode(await ws.run(["forget", s1]), 5, "forget the head of a fork");
    expectCode(await ws.run(["forget", s1, s2]), 5, "forget two heads at once");
    assertEquals(await snapshotIds(ws), [s1, s2].sort());
  });
});

Deno.test("forget --keep-last N keeps the newest N of the branch; --dry-run forgets nothing; verify --all passes with forgotten parents", async () => {
  await withStore(async (ws) => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      await Deno.writeTextFile(join(ws.path, "a.txt"), `version ${i}\n`);
      made.push(await create(ws, `v${i}`));
    }
    const dry = await runJson(ws, ["forget", "--keep-last", "2", "--dry-run"]);
    assertEquals([...dry.forget].sort(), made.slice(0, 3).sort());
    assertEquals(await snapshotIds(ws), [...made].sort(), "dry run forgot something");

    const done = await runJson(ws, ["forget", "--keep-last", "2"]);
    assertEquals([...done.forgotten].sort(), made.slice(0, 3).sort());
    assertEquals(await chain(ws), [made[4], made[3]]);
    assertEquals(await snapshotIds(ws), made.slice(3).sort());
    await verifyAll(ws, "with forgotten parents");
    await runJson(ws, ["gc"]);
    await verifyAll(ws, "after forget and gc");
    // The chain keeps growing normally.
    await Deno.writeTextFile(join(ws.path, "a.txt"), "version 5\n");
    const next = await runJson(ws, ["create", "-m", "v5"]);
    assertEquals(next.parent, made[4]);
    await verifyAll(ws, "after a new snapshot");
  });
});

Deno.test("forget --branch B removes B's snapshots and the branch, leaving main intact", async () => {
  await withStore(async (ws) => {
    const m1 = await create(ws, "m1");
    await Deno.writeTextFile(join(ws.path, "a.txt"), "m2\n");
    const m2 = await create(ws, "m2");
    await runJson(ws, ["fork", m1, "--name", "exp"]);
    await runJson(ws, ["branch", "switch", "exp"]);
    await Deno.writeTextFile(join(ws.path, "exp.txt"), "e1\n");
    const e1 = await create(ws, "e1");
    await Deno.writeTextFile(join(ws.path, "exp.txt"), "e2\n");
    const e2 = await create(ws, "e2");
    await runJson(ws, ["branch", "switch", "main"]);

    const dry = await runJson(ws, ["forget", "--branch", "exp", "--dry-run"]);
    assertEquals([...dry.forget].sort(), [e1, e2].sort());
    const done = await runJson(ws, ["forget", "--branch", "exp"]);
    assertEquals([...done.forgotten].sort(), [e1, e2].sort());
    assertEquals(done.branches, ["exp"]);
    assertEquals(await snapshotIds(ws), [m1, m2].sort());
    const branches = (await runJson(ws, ["branch", "list"])).branches as { name: string }[];
    assertEquals(branches.map((b) => b.name), ["main"]);
    expectCode(await ws.run(["forget", "--branch", "nope"]), 2, "forget a missing branch");
    const gc = await runJson(ws, ["gc"]);
    assert(gc.blobs >= 1, "the exp-only blobs were not collected");
    await verifyAll(ws, "after forgetting a branch and gc");
  });
});

// ---------------------------------------------------------------------------
// capture racing forget + gc

Deno.test("a process capturing while another forgets and collects never leaves a snapshot failing verify", async () => {
  const raw = Number(Deno.env.get("CTXSNAP_GC_RACE_ITERATIONS") ?? "15");
  const iterations = Number.isSafeInteger(raw) && raw > 0 ? raw : 15;
  console.log(`gc race: ${iterations} iterations per process`);
  await withStore(async (ws) => {
    // Enough files that a capture takes a while; a constant shared part.
    for (let i = 0; i < 150; i++) {
      await Deno.mkdir(join(ws.path, `shared/d${i % 10}`), { recursive: true });
      await Deno.writeTextFile(join(ws.path, `shared/d${i % 10}/f${i}.txt`), `shared ${i}\n`);
    }
    await Deno.mkdir(join(ws.path, "churn"));
    const first = await create(ws, "start");

    const reported: string[] = [first];
    const createCodes: number[] = [];
    const cleanerCodes: { cmd: string; code: number; stderr: string }[] = [];
    const creator = async () => {
      for (let i = 0; i < iterations; i++) {
        // Unique content each time, so every forgotten snapshot leaves garbage.
        for (let j = 0; j < 20; j++) {
          await Deno.writeTextFile(join(ws.path, `churn/c${j}.txt`), `iteration ${i} file ${j}\n`);
        }
        await Deno.writeFile(join(ws.path, "churn/big.bin"), bigBytes(300_000, i + 10));
        const result = await ws.run(["create", "--json", "-m", `iteration ${i}`]);
        createCodes.push(result.code);
        if (result.code === 0) reported.push(result.json().id);
        else if (result.code !== 6) {
          throw new Error(`create exited ${result.code}: ${result.stderr}`);
        }
      }
    };
    const cleaner = async () => {
      for (let i = 0; i < iterations; i++) {
        for (const cmd of [["forget", "--keep-last", "2"], ["gc"]]) {
          const result = await ws.run(cmd);
          cleanerCodes.push({ cmd: cmd.join(" "), code: result.code, stderr: result.stderr });
        }
      }
    };
    await Promise.all([creator(), cleaner()]);

    const count = (codes: number[], code: number) => codes.filter((c) => c === code).length;
    const cleaned = cleanerCodes.map((c) => c.code);
    console.log(
      `create: ${count(createCodes, 0)} ok, ${count(createCodes, 6)} busy; ` +
        `forget/gc: ${count(cleaned, 0)} ok, ${count(cleaned, 6)} busy`,
    );
    const bad = cleanerCodes.filter((c) => c.code !== 0 && c.code !== 6);
    assertEquals(bad, [], "forget/gc exited with something other than 0 or 6");
    assert(createCodes.every((c) => c === 0 || c === 6), `create codes ${createCodes}`);
    assert(createCodes.some((c) => c === 0), "no create succeeded");
    assert(cleanerCodes.some((c) => c.cmd === "gc" && c.code === 0), "no gc succeeded");

    await verifyAll(ws, "after the race");
    const present = new Set(await snapshotIds(ws));
    const survivors = reported.filter((id) => present.has(id));
    assert(survivors.length >= 2, `only ${survivors.length} reported snapshots survive`);
    for (const id of survivors) {
      expectCode(await ws.run(["verify", id]), 0, `verify ${id}`);
    }
    // One more collection, then the newest snapshot still materializes.
    await runJson(ws, ["gc"]);
    await verifyAll(ws, "after a final gc");
    const newest = (await chain(ws))[0]!;
    const dest = join(ws.root, "out");
    expectCode(await ws.run(["materialize", newest, dest]), 0, "materialize the newest");
    assertEquals(
      await Deno.readTextFile(join(dest, "shared/d3/f13.txt")),
      "shared 13\n",
    );
  });
});

// ---------------------------------------------------------------------------
// disk comes back: gc returns the index's free pages

function indexPragma(ws: TempWorkspace, name: string): number {
  const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"), { readOnly: true });
  try {
    const row = db.prepare(`PRAGMA ${name}`).get() as Record<string, number>;
    return Number(Object.values(row)[0]);
  } finally {
    db.close();
  }
}

async function indexSize(ws: TempWorkspace): Promise<number> {
  return (await Deno.stat(join(ws.path, ".ctxsnap", "index.db"))).size;
}

/** Writes `count` incompressible inline-sized files under `churn/`, salted by `round`. */
async function writeChurn(ws: TempWorkspace, round: number, count = 20): Promise<void> {
  await Deno.mkdir(join(ws.path, "churn"), { recursive: true });
  for (let j = 0; j < count; j++) {
    await Deno.writeFile(join(ws.path, `churn/f${j}.bin`), bigBytes(100_000, round * 1000 + j));
  }
}

Deno.test("gc after forget hands the freed index pages back: index.db shrinks and verify passes", async () => {
  await withStore(async (ws) => {
    assertEquals(indexPragma(ws, "auto_vacuum"), 2, "a new store uses incremental vacuum");
    await writeChurn(ws, 1);
    await create(ws, "one");
    await writeChurn(ws, 2);
    const kept = await create(ws, "two");
    const before = await indexSize(ws);
    await runJson(ws, ["forget", "--keep-last", "1"]);
    const result = await runJson(ws, ["gc"]);
    assertEquals(result.blobs, 20, "the first round's blobs go");
    assertEquals(result.index.mode, "incremental");
    assert(result.index.free_pages_before > 400, `free pages ${result.index.free_pages_before}`);
    assertEquals(result.index.free_pages_after, 0);
    const after = await indexSize(ws);
    assert(
      after < before - 1_500_000,
      `index.db ${before} → ${after} bytes: about 2 MB of blobs were freed`,
    );
    assertEquals(indexPragma(ws, "freelist_count"), 0);
    await verifyAll(ws, "after gc returned pages");
    const dest = join(ws.root, "out");
    expectCode(await ws.run(["materialize", kept, dest]), 0, "materialize the kept snapshot");
    assertEquals(await Deno.readFile(join(dest, "churn/f7.bin")), bigBytes(100_000, 2007));
  });
});

Deno.test("gc switches a store made without auto_vacuum to incremental vacuum once and shrinks it", async () => {
  await withStore(async (ws) => {
    await writeChurn(ws, 1);
    await create(ws, "one");
    await writeChurn(ws, 2);
    await create(ws, "two");
    // The index as earlier releases made it: auto_vacuum NONE.
    const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"));
    db.exec("PRAGMA auto_vacuum = NONE");
    db.exec("VACUUM");
    db.close();
    assertEquals(indexPragma(ws, "auto_vacuum"), 0);
    await runJson(ws, ["forget", "--keep-last", "1"]);
    const before = await indexSize(ws);
    const first = await runJson(ws, ["gc"]);
    assertEquals(first.index.mode, "full", "the first gc switches the mode with VACUUM");
    assertEquals(indexPragma(ws, "auto_vacuum"), 2);
    const after = await indexSize(ws);
    assert(after < before - 1_500_000, `index.db ${before} → ${after} bytes`);
    await verifyAll(ws, "after the switch");
    // From then on gc returns pages in steps.
    await writeChurn(ws, 3);
    await create(ws, "three");
    await runJson(ws, ["forget", "--keep-last", "1"]);
    const second = await runJson(ws, ["gc"]);
    assertEquals(second.index.mode, "incremental");
    assertEquals(second.index.free_pages_after, 0);
    await verifyAll(ws, "after an incremental gc");
  });
});
