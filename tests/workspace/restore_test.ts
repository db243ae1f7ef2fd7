// deno-lint-ignore-file no-console
/**
 * Tests of three-way restore, safe apply, session
 * merge, `--git`, branches and forks, undo, materialize and the operations
 * log. Real `cli.ts` subprocesses, real SQLite stores, real git, real files
 * and symlinks in temporary directories; the 20-snapshot round trip drives
 * the library directly.
 *
 * The random workspace history is seeded; set CTXSNAP_TEST_SEED to replay a
 * printed seed.
 *
 * @module
 */
import { join } from "node:path";
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { restoreSnapshot } from "../../lib/workspace/move/restore.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { readEnvelope } from "../../lib/history/timeline.ts";
import { Store } from "../../lib/repository/store.ts";
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { ConflictError } from "../../lib/errors.ts";
import { expectCode, type TempWorkspace, withStore } from "../_cli.ts";
import { exists, prng, seedFromEnv } from "../_util.ts";

const encoder = new TextEncoder();

// ---------------------------------------------------------------------------
// helpers

/** One non-directory entry of a directory tree, or a directory. */
type Node =
  | { kind: "file"; mode: number; data: Uint8Array }
  | { kind: "symlink"; target: string }
  | { kind: "dir" };

/** Everything below `root` (not following symlinks), ignoring `.ctxsnap` at the top. */
async function readState(where: string | TempWorkspace): Promise<Map<string, Node>> {
  const root = typeof where === "string" ? where : where.path;
  const out = new Map<string, Node>();
  async function walk(rel: string): Promise<void> {
    const abs = rel === "" ? root : join(root, rel);
    for await (const item of Deno.readDir(abs)) {
      if (rel === "" && item.name === ".ctxsnap") continue;
      const childRel = rel === "" ? item.name : `${rel}/${item.name}`;
      const childAbs = join(root, childRel);
      const info = await Deno.lstat(childAbs);
      if (info.isSymlink) {
        out.set(childRel, { kind: "symlink", target: await Deno.readLink(childAbs) });
      } else if (info.isDirectory) {
        out.set(childRel, { kind: "dir" });
        await walk(childRel);
      } else if (info.isFile) {
        out.set(childRel, {
          kind: "file",
          mode: info.mode! & 0o777,
          data: await Deno.readFile(childAbs),
        });
      } else {
        out.set(childRel, { kind: "dir" }); // not expected in these tests
      }
    }
  }
  await walk("");
  return out;
}

function describe(node: Node | undefined): string {
  if (node === undefined) return "absent";
  if (node.kind === "dir") return "dir";
  if (node.kind === "symlink") return `symlink -> ${node.target}`;
  const text = node.data.byteLength > 40
    ? `${node.data.byteLength} bytes`
    : JSON.stringify(new TextDecoder().decode(node.data));
  return `file ${node.mode.toString(8)} ${text}`;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameNode(a: Node | undefined, b: Node | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.kind !== b.kind) return false;
  if (a.kind === "symlink") return a.target === (b as typeof a).target;
  if (a.kind === "file") {
    const f = b as typeof a;
    return a.mode === f.mode && sameBytes(a.data, f.data);
  }
  return true;
}

/** Lists the paths where two states differ (empty when byte-for-byte equal). */
function stateDiff(actual: Map<string, Node>, expected: Map<string, Node>): string[] {
  const problems: string[] = [];
  for (const path of new Set([...actual.keys(), ...expected.keys()])) {
    const a = actual.get(path);
    const e = expected.get(path);
    if (!sameNode(a, e)) problems.push(`${path}: is ${describe(a)}, expected ${describe(e)}`);
  }
  return problems.sort();
}

function assertSameState(actual: Map<string, Node>, expected: Map<string, Node>, what: string) {
  const problems = stateDiff(actual, expected);
  assert(problems.length === 0, `${what}: the trees differ:\n  ${problems.join("\n  ")}`);
}

/** Copies a tree recursively: files with their modes, symlinks as symlinks. */
async function copyTree(src: string, dest: string): Promise<void> {
  await Deno.mkdir(dest, { recursive: true });
  for await (const item of Deno.readDir(src)) {
    if (item.name === ".ctxsnap") continue;
    const from = join(src, item.name);
    const to = join(dest, item.name);
    const info = await Deno.lstat(from);
    if (info.isSymlink) await Deno.symlink(await Deno.readLink(from), to);
    else if (info.isDirectory) await copyTree(from, to);
    else {
      await Deno.copyFile(from, to);
      await Deno.chmod(to, info.mode! & 0o777);
    }
  }
}

/** `ctxsnap create --json -m MSG ...args`, expecting success; returns the id. */
async function create(ws: TempWorkspace, msg: string, ...args: string[]): Promise<string> {
  const result = await ws.run(["create", "--json", "-m", msg, ...args]);
  expectCode(result, 0, `create ${msg}`);
  const id = result.json().id;
  assert(typeof id === "string" && /^[0-9a-f]{64}$/.test(id), `create printed no id`);
  return id;
}

// deno-lint-ignore no-explicit-any
async function runJson(ws: TempWorkspace, args: string[], code = 0): Promise<any> {
  const result = await ws.run([...args, "--json"]);
  expectCode(result, code, args.join(" "));
  return result.json();
}

async function write(ws: TempWorkspace, rel: string, text: string): Promise<void> {
  const file = join(ws.path, rel);
  await Deno.mkdir(join(file, ".."), { recursive: true });
  await Deno.writeTextFile(file, text);
}

function read(ws: TempWorkspace, rel: string): Promise<string> {
  return Deno.readTextFile(join(ws.path, rel));
}

async function snapshotIds(ws: TempWorkspace): Promise<string[]> {
  const doc = await runJson(ws, ["list", "--all"]);
  return (doc.snapshots as { id: string }[]).map((s) => s.id).sort();
}

// ---------------------------------------------------------------------------
// three-way restore

Deno.test("an edit made outside ctxsnap after the baseline is a conflict (exit 5), is not overwritten, and --force saves it in a pre-restore snapshot first", async () => {
  await withStore(async (ws) => {
    const s1 = await create(ws, "v1");
    await write(ws, "a.txt", "version two\n");
    const s2 = await create(ws, "v2");
    await write(ws, "a.txt", "edited outside ctxsnap\n");
    const before = await snapshotIds(ws);

    const refused = await ws.run(["restore", s1]);
    expectCode(refused, 5, "restore over an outside edit");
    assert(refused.stderr.includes("a.txt"), `stderr names no path: ${refused.stderr}`);
    assertEquals(await read(ws, "a.txt"), "edited outside ctxsnap\n");

    const refusedJson = await ws.run(["restore", s1, "--json"]);
    expectCode(refusedJson, 5, "restore --json over an outside edit");
    const error = refusedJson.json().error;
    assertEquals(error.exit, 5);
    assert(String(error.message).includes("a.txt"), `JSON error names no path: ${error.message}`);
    assertEquals(await read(ws, "a.txt"), "edited outside ctxsnap\n");
    assertEquals(await snapshotIds(ws), before, "a refused restore recorded a snapshot");

    // The dry run shows the whole plan, and exits 5 because the real run would refuse.
    const dry = await runJson(ws, ["restore", s1, "--dry-run"], 5);
    assertEquals(dry.would_refuse.map((r: { reason: string }) => r.reason), ["conflicts"]);
    const plan = dry.plan;
    assertEquals(plan.conflicts, [{ path: "a.txt", reason: "changed_since_baseline" }]);
    assertEquals(plan.writes, []);
    assertEquals(await read(ws, "a.txt"), "edited outside ctxsnap\n");

    const forced = await runJson(ws, ["restore", s1, "--force"]);
    assertEquals(await read(ws, "a.txt"), "alpha\n");
    const pre = forced.pre_restore as string;
    assert(typeof pre === "string" && pre !== s1 && pre !== s2, "no pre-restore snapshot");
    const shown = await runJson(ws, ["show", pre]);
    assertEquals(shown.envelope.body.reason, "pre-restore");
    assertEquals(shown.envelope.body.parent, s2);
    const dest = join(ws.root, "pre");
    expectCode(await ws.run(["materialize", pre, dest]), 0, "materialize pre-restore");
    assertEquals(await Deno.readTextFile(join(dest, "a.txt")), "edited outside ctxsnap\n");

    const restoreSnap = await runJson(ws, ["show", forced.snapshot]);
    assertEquals(restoreSnap.envelope.body.facets.metadata.reverted_to, s1);
    assertEquals(restoreSnap.envelope.body.parent, pre);
  });
});

Deno.test("an untracked new file survives a restore and is listed as preserved", async () => {
  await withStore(async (ws) => {
    const s1 = await create(ws, "v1");
    await write(ws, "b.md", "# bravo two\n");
    await create(ws, "v2");
    await write(ws, "notes/untracked.txt", "mine, not ctxsnap's\n");
    const result = await runJson(ws, ["restore", s1]);
    assert(result.plan.preserved.includes("notes/untracked.txt"), JSON.stringify(result.plan));
    assertEquals(await read(ws, "notes/untracked.txt"), "mine, not ctxsnap's\n");
    assertEquals(await read(ws, "b.md"), "# bravo\n");
  });
});

Deno.test("a managed file the target omits is deleted only when unchanged since the baseline", async () => {
  await withStore(async (ws) => {
    await write(ws, "deep/keep.txt", "keeps deep/ non-empty\n");
    const s1 = await create(ws, "without c and d");
    await write(ws, "c.txt", "c\n");
    await write(ws, "deep/d.txt", "d\n");
    await create(ws, "with c and d");
    await write(ws, "deep/d.txt", "d changed outside\n");

    const plan = (await runJson(ws, ["restore", s1, "--dry-run"], 5)).plan;
    assertEquals(plan.deletes, ["c.txt"]);
    assertEquals(plan.conflicts, [{ path: "deep/d.txt", reason: "deleted_target_changed" }]);

    const refused = await ws.run(["restore", s1]);
    expectCode(refused, 5, "restore deleting a changed file");
    assert(refused.stderr.includes("deep/d.txt"), refused.stderr);
    assertEquals(await read(ws, "c.txt"), "c\n");
    assertEquals(await read(ws, "deep/d.txt"), "d changed outside\n");

    // Put d back as the baseline recorded it: now both are deletable.
    await write(ws, "deep/d.txt", "d\n");
    const applied = await runJson(ws, ["restore", s1]);
    assertEquals([...applied.plan.deletes].sort(), ["c.txt", "deep/d.txt"]);
    assert(!(await exists(join(ws.path, "c.txt"))), "c.txt survived");
    assert(!(await exists(join(ws.path, "deep/d.txt"))), "deep/d.txt survived");
    assertEquals(await read(ws, "deep/keep.txt"), "keeps deep/ non-empty\n");
  });
});

Deno.test({
  name:
    "a restore deleting the last file of a directory removes the file and the emptied directory",
  async fn() {
    await withStore(async (ws) => {
      const s1 = await create(ws, "without sub/");
      await write(ws, "sub/inner/x.txt", "x\n");
      await create(ws, "with sub/inner/x.txt");
      const result = await ws.run(["restore", s1, "--json"]);
      expectCode(result, 0, "restore deleting sub/inner/x.txt");
      assertEquals(result.json().plan.deletes, ["sub/inner/x.txt"]);
      assert(!(await exists(join(ws.path, "sub"))), "the emptied directory sub/ survived");
    });
  },
});

// ---------------------------------------------------------------------------
// 20 successive snapshots, restored in random order

/**
 * Takes 20 snapshots of a workspace changed at random between them (adds,
 * edits, same-size edits, deletes, renames, mode changes, symlinks, a file
 * turned symlink, nested dirs, a > 1 MiB file), copying the workspace at each
 * capture; then restores them in a seeded random order and compares. With
 * `keepDirs`, every directory holds a permanent `.keep` file so no restore
 * ever empties a directory.
 */
async function roundTrip20(keepDirs: boolean): Promise<void> {
  const seed = seedFromEnv();
  console.log(`20-snapshot round trip (keepDirs=${keepDirs}): CTXSNAP_TEST_SEED=${seed}`);
  const rand = prng(seed);
  const pick = <T>(items: T[]): T => items[Math.floor(rand() * items.length)]!;
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-restore20-" }));
  const ws = join(root, "ws");
  await Deno.mkdir(ws);
  const me = await loadOrCreateIdentity(join(root, "config"));
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  try {
    let counter = 0;
    const randomBytes = (max: number) => {
      const n = Math.floor(rand() * max);
      const bytes = new Uint8Array(n);
      for (let i = 0; i < n; i++) bytes[i] = Math.floor(rand() * 256);
      return bytes;
    };
    const dirs = ["", "", "d1", "d1/d2", "d3", "d1/d2/d4/d5"];
    const newPath = () => {
      const dir = pick(dirs);
      return dir === "" ? `f${counter++}` : `${dir}/f${counter++}`;
    };
    const abs = (rel: string) => join(ws, rel);
    const writeFile = async (rel: string, data: Uint8Array, mode = 0o644) => {
      await Deno.mkdir(join(abs(rel), ".."), { recursive: true });
      await Deno.writeFile(abs(rel), data);
      await Deno.chmod(abs(rel), mode);
    };
    /** Removes empty directories up from rel's parent (a capture cannot record them). */
    const prune = async (rel: string) => {
      let dir = rel.includes("/") ? rel.slice(0, rel.lastIndexOf("/")) : "";
      while (dir !== "") {
        let empty = true;
        for await (const _ of Deno.readDir(abs(dir))) {
          empty = false;
          break;
        }
        if (!empty) break;
        await Deno.remove(abs(dir));
        dir = dir.includes("/") ? dir.slice(0, dir.lastIndexOf("/")) : "";
      }
    };
    const entries = async () => {
      const state = await readState(ws);
      const files = [...state].filter(([p, n]) =>
        n.kind === "file" && p !== "big.bin" && !p.endsWith(".keep")
      )
        .map(([p]) => p);
      const links = [...state].filter(([, n]) => n.kind === "symlink").map(([p]) => p);
      return { files, links };
    };
    const big = new Uint8Array(1024 * 1024 + 300_000);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31 + seed) & 0xff;

    // The initial workspace.
    if (keepDirs) {
      for (const dir of ["d1", "d1/d2", "d3", "d1/d2/d4", "d1/d2/d4/d5"]) {
        await writeFile(`${dir}/.keep`, encoder.encode(`${dir}\n`));
      }
    }
    await writeFile("README.md", encoder.encode("# project\n"));
    await writeFile("run.sh", encoder.encode("#!/bin/sh\necho hi\n"), 0o755);
    await writeFile("d1/a.txt", encoder.encode("a\n"));
    await writeFile("d1/d2/b.txt", encoder.encode("b\n"));
    await writeFile("empty.txt", new Uint8Array(0));
    await writeFile("big.bin", big);
    await Deno.symlink("d1/a.txt", abs("link-to-a"));
    await Deno.symlink("d1", abs("link-to-dir"));
    await Deno.symlink("../outside/nowhere", abs("dangling"));

    type Op = () => Promise<void>;
    const ops: Record<string, Op> = {
      async add() {
        await writeFile(newPath(), randomBytes(3000));
      },
      async edit() {
        const { files } = await entries();
        if (files.length === 0) return ops.add!();
        const target = pick(files);
        const mode = (await Deno.lstat(abs(target))).mode! & 0o777;
        await writeFile(target, randomBytes(2000), mode);
      },
      async editSameSize() {
        const { files } = await entries();
        if (files.length === 0) return ops.add!();
        const target = pick(files);
        const data = await Deno.readFile(abs(target));
        if (data.length === 0) return ops.edit!();
        const at = Math.floor(rand() * data.length);
        data[at] = data[at]! ^ 0x5a;
        await Deno.writeFile(abs(target), data);
      },
      async remove() {
        const { files, links } = await entries();
        const all = [...files, ...links];
        if (all.length < 3) return ops.add!();
        const target = pick(all);
        await Deno.remove(abs(target));
        await prune(target);
      },
      async rename() {
        const { files } = await entries();
        if (files.length === 0) return ops.add!();
        const from = pick(files);
        const to = newPath();
        await Deno.mkdir(join(abs(to), ".."), { recursive: true });
        await Deno.rename(abs(from), abs(to));
        await prune(from);
      },
      async chmod() {
        const { files } = await entries();
        if (files.length === 0) return ops.add!();
        const target = pick(files);
        const mode = (await Deno.lstat(abs(target))).mode! & 0o777;
        await Deno.chmod(abs(target), mode === 0o755 ? 0o600 : mode === 0o600 ? 0o644 : 0o755);
      },
      async symlink() {
        const { files } = await entries();
        const target = rand() < 0.5 && files.length > 0
          ? `./${pick(files).split("/").pop()}`
          : pick(["../nowhere", "/definitely/not/here", "d1", "spaces in target"]);
        const at = newPath();
        await Deno.mkdir(join(abs(at), ".."), { recursive: true });
        await Deno.symlink(target, abs(at));
      },
      async retarget() {
        const { links } = await entries();
        if (links.length === 0) return ops.symlink!();
        const at = pick(links);
        await Deno.remove(abs(at));
        await Deno.symlink(`retargeted-${counter++}`, abs(at));
      },
      async fileToSymlink() {
        const { files } = await entries();
        if (files.length === 0) return ops.symlink!();
        const at = pick(files);
        await Deno.remove(abs(at));
        await Deno.symlink("was-a-file", abs(at));
      },
      async big() {
        const data = await Deno.readFile(abs("big.bin"));
        const grown = new Uint8Array(data.length + Math.floor(rand() * 5000) - 2500);
        grown.set(data.subarray(0, Math.min(data.length, grown.length)));
        const at = Math.floor(rand() * grown.length);
        grown[at] = grown[at]! ^ 0xff;
        await Deno.writeFile(abs("big.bin"), grown);
      },
    };
    const kinds = Object.keys(ops);

    const ids: string[] = [];
    const copies: string[] = [];
    for (let step = 0; step < 20; step++) {
      if (step > 0) {
        await ops[kinds[step % kinds.length]!]!();
        const extra = 1 + Math.floor(rand() * 3);
        for (let i = 0; i < extra; i++) await ops[pick(kinds)]!();
      }
      // Random edits may cancel out: record the step even when nothing changed.
      const snap = await createSnapshot(store, me, {
        reason: `step ${step}`,
        allowUnchanged: true,
      });
      ids.push(snap.id);
      const copy = join(root, `copy-${step}`);
      await copyTree(ws, copy);
      copies.push(copy);
      // The copy is faithful to the workspace at capture time.
      assertSameState(await readState(copy), await readState(ws), `copy ${step}`);
    }
    assertEquals(new Set(ids).size, 20, "20 distinct snapshots");

    const order = [...ids.keys()];
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const index of order) {
      const result = await restoreSnapshot(store, me, ids[index]!);
      assertEquals(result.plan?.conflicts ?? [], [], `restore of step ${index} had conflicts`);
      assertSameState(
        await readState(ws),
        await readState(copies[index]!),
        `after restoring step ${index} (seed ${seed}, order ${order.join(",")})`,
      );
      assert(result.snapshot !== null, "no snapshot recorded the restore");
      const recorded = await readEnvelope(store, result.snapshot);
      assertEquals(recorded.body.facets.metadata.reverted_to, ids[index]);
      assertEquals(
        recorded.body.workspace?.tree,
        (await readEnvelope(store, ids[index]!)).body.workspace?.tree,
      );
    }
  } finally {
    store.close();
    await Deno.remove(root, { recursive: true });
  }
}

// The two 20-snapshot histories are the slowest restore tests: the long suite runs them
// (`CTXSNAP_LONG=1`, set by `deno task test:long`), keeping `deno task test` under its budget.
const LONG = Deno.env.get("CTXSNAP_LONG") === "1";

Deno.test({
  name:
    "restoring each of 20 successive snapshots of a changing workspace (no directory ever emptied), in random order, reproduces it byte for byte",
  ignore: !LONG,
  fn: () => roundTrip20(true),
});

Deno.test({
  name:
    "restoring each of 20 successive snapshots of a changing workspace, in random order, reproduces it byte for byte",
  ignore: !LONG,
  fn: () => roundTrip20(false),
});

// ---------------------------------------------------------------------------
// safe apply

/**
 * Snapshots `a/x` twice (`s1`, then the baseline with other content), then
 * replaces directory `a` with a symlink to a directory outside the workspace.
 */
async function snapshotThenSymlinkParent(
  ws: TempWorkspace,
): Promise<{ s1: string; outside: string }> {
  await write(ws, "a/x", "inside\n");
  const s1 = await create(ws, "a/x");
  await write(ws, "a/x", "inside, later\n");
  await create(ws, "a/x later");
  const outside = join(ws.root, "outside");
  await Deno.mkdir(outside);
  await Deno.remove(join(ws.path, "a"), { recursive: true });
  await Deno.symlink(outside, join(ws.path, "a"));
  return { s1, outside };
}

Deno.test("a symlinked directory in the way of a/x makes the restore refuse (exit 5), even with --force, writing nothing outside", async () => {
  await withStore(async (ws) => {
    const { s1, outside } = await snapshotThenSymlinkParent(ws);

    const plain = await ws.run(["restore", s1]);
    expectCode(plain, 5, "restore through a symlinked directory");
    assert(plain.stderr.includes("a/x"), plain.stderr);
    const forced = await ws.run(["restore", s1, "--force"]);
    expectCode(forced, 5, "restore --force through a symlinked directory");
    assertEquals([...Deno.readDirSync(outside)], [], "something was written outside");
    assertEquals(await Deno.readLink(join(ws.path, "a")), outside);
  });
});

Deno.test("an ignored symlinked directory in the way of a/x is refused before any change, writes nothing outside and blocks nothing", async () => {
  await withStore(async (ws) => {
    const { s1, outside } = await snapshotThenSymlinkParent(ws);
    // The capture cannot see `a` now: only the on-disk parent check can.
    await write(ws, ".ctxsnapignore", "a\n");

    const result = await ws.run(["restore", s1, "--force"]);
    expectCode(result, 5, "restore --force through an ignored symlinked directory");
    assert(
      result.stderr.includes("a/x") && result.stderr.includes("parent in the way"),
      result.stderr,
    );
    assertEquals([...Deno.readDirSync(outside)], [], "something was written outside");
    assertEquals(await Deno.readLink(join(ws.path, "a")), outside);
    const ops = (await runJson(ws, ["log", "--all"])).operations as { status: string }[];
    assertEquals(ops.filter((o) => o.status === "applying"), []);
    expectCode(await ws.run(["create", "-m", "after"]), 0, "create after the refused restore");
  });
});

Deno.test("a symlink planted at a file's destination is replaced by the file, not written through", async () => {
  await withStore(async (ws) => {
    await write(ws, "f.txt", "one\n");
    const s1 = await create(ws, "one");
    await write(ws, "f.txt", "two\n");
    await create(ws, "two");
    const victim = join(ws.root, "victim.txt");
    await Deno.writeTextFile(victim, "do not touch\n");
    await Deno.remove(join(ws.path, "f.txt"));
    await Deno.symlink(victim, join(ws.path, "f.txt"));

    expectCode(await ws.run(["restore", s1]), 5, "restore over a planted symlink");
    assertEquals(await Deno.readLink(join(ws.path, "f.txt")), victim);
    const forced = await runJson(ws, ["restore", s1, "--force"]);
    assert(forced.pre_restore !== null, "no pre-restore snapshot");
    assertEquals(await Deno.readTextFile(victim), "do not touch\n");
    const info = await Deno.lstat(join(ws.path, "f.txt"));
    assert(info.isFile && !info.isSymlink, "f.txt is not a regular file");
    assertEquals(await read(ws, "f.txt"), "one\n");
    // The planted symlink itself is kept in the pre-restore snapshot.
    const shown = await runJson(ws, ["show", forced.pre_restore]);
    assertEquals(shown.envelope.body.reason, "pre-restore");
    const dest = join(ws.root, "pre");
    expectCode(await ws.run(["materialize", forced.pre_restore, dest, "f.txt"]), 0, "materialize");
    assertEquals(await Deno.readLink(join(dest, "f.txt")), victim);
  });
});

Deno.test("restore brings back a 0755 script's mode and symlink target texts", async () => {
  await withStore(async (ws) => {
    await write(ws, "run.sh", "#!/bin/sh\necho ok\n");
    await Deno.chmod(join(ws.path, "run.sh"), 0o755);
    await Deno.symlink("run.sh", join(ws.path, "link"));
    await Deno.symlink("../../no/such/target", join(ws.path, "dangling"));
    const s1 = await create(ws, "modes");
    const expected = await readState(ws);

    await Deno.chmod(join(ws.path, "run.sh"), 0o644);
    await Deno.remove(join(ws.path, "link"));
    await Deno.symlink("a.txt", join(ws.path, "link"));
    await Deno.remove(join(ws.path, "dangling"));
    await Deno.writeTextFile(join(ws.path, "dangling"), "now a file\n");
    await create(ws, "changed");

    await runJson(ws, ["restore", s1]);
    assertEquals((await Deno.lstat(join(ws.path, "run.sh"))).mode! & 0o777, 0o755);
    assertEquals(await Deno.readLink(join(ws.path, "link")), "run.sh");
    assertEquals(await Deno.readLink(join(ws.path, "dangling")), "../../no/such/target");
    assertSameState(await readState(ws), expected, "after restoring modes and symlinks");
  });
});

// ---------------------------------------------------------------------------
// session merge

Deno.test("restore merges the session: task replaced when non-empty, lists de-duplicated, findings and knowledge merged", async () => {
  await withStore(async (ws) => {
    const recorded = {
      task: "task from the snapshot",
      progress_pct: 70,
      decisions: ["D1", "D2"],
      files_touched: ["src/a.ts", "src/b.ts"],
      findings: ["F1"],
      knowledge: ["K1"],
    };
    const withContext = await ws.run(["create", "--json", "-m", "ctx", "--context", "-"], {
      stdin: JSON.stringify(recorded),
    });
    expectCode(withContext, 0, "create --context -");
    const snap = withContext.json().id as string;

    // A different live state.
    expectCode(await ws.run(["session", "set", "--task", "live task", "--progress", "10"]), 0, "");
    expectCode(await ws.run(["session", "decide", "D2"]), 0, "decide");
    expectCode(await ws.run(["session", "decide", "D3"]), 0, "decide");
    expectCode(await ws.run(["session", "touch", "src/b.ts", "src/c.ts"]), 0, "touch");
    expectCode(await ws.run(["session", "finding", "F0"]), 0, "finding");

    const result = await runJson(ws, ["restore", snap, "--session-state"]);
    assertEquals(result.session.mode, "merge");
    const state = (await runJson(ws, ["session", "show"])).state;
    assertEquals(state.task, "task from the snapshot");
    assertEquals(state.progress_pct, 70);
    assertEquals(state.decisions, ["D2", "D3", "D1"]);
    assertEquals(state.files_touched, ["src/b.ts", "src/c.ts", "src/a.ts"]);
    assertEquals(state.findings, ["F0", "F1"]);
    assertEquals(state.knowledge, ["K1"]);

    // A snapshot with an empty task leaves the live task alone.
    const empty = await ws.run(["create", "--json", "--context", "-"], {
      stdin: JSON.stringify({ task: "", decisions: ["D4"] }),
    });
    expectCode(empty, 0, "create with an empty task");
    await runJson(ws, ["restore", empty.json().id, "--session-state"]);
    const after = (await runJson(ws, ["session", "show"])).state;
    assertEquals(after.task, "task from the snapshot");
    assertEquals(after.decisions, ["D2", "D3", "D1", "D4"]);
  });
});

Deno.test("restore merges every session field by one rule: a progress the snapshot left at 0 keeps the live progress, like an empty task", async () => {
  await withStore(async (ws) => {
    const before = await create(ws, "nothing set yet");
    expectCode(await ws.run(["session", "set", "--task", "live", "--progress", "60"]), 0, "set");
    expectCode(await ws.run(["session", "decide", "D1"]), 0, "decide");
    const result = await runJson(ws, ["restore", before, "--session-state"]);
    assertEquals(result.session.change.progress_pct, null, "the plan changes no progress");
    const state = (await runJson(ws, ["session", "show"])).state;
    assertEquals([state.task, state.progress_pct, state.decisions], ["live", 60, ["D1"]]);

    // A progress the snapshot did set is brought back, like a task it set.
    const set = await ws.run(["create", "--json", "--context", "-"], {
      stdin: JSON.stringify({ task: "then", progress_pct: 30 }),
    });
    expectCode(set, 0, "create --context");
    expectCode(await ws.run(["session", "set", "--task", "now", "--progress", "80"]), 0, "set");
    await runJson(ws, ["restore", set.json().id, "--session-state"]);
    const back = (await runJson(ws, ["session", "show"])).state;
    assertEquals([back.task, back.progress_pct], ["then", 30]);
  });
});

Deno.test("restore --workspace leaves the live session untouched and --session leaves files untouched", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["session", "set", "--task", "old task"]), 0, "set");
    expectCode(await ws.run(["session", "decide", "old decision"]), 0, "decide");
    const s1 = await create(ws, "old");
    // The live session and the files move on.
    await write(ws, "a.txt", "new alpha\n");
    await write(ws, "added.txt", "added\n");
    expectCode(await ws.run(["session", "set", "--task", "new task"]), 0, "set");
    await create(ws, "new");
    const liveBefore = (await runJson(ws, ["session", "show"])).state;

    const workspaceOnly = await runJson(ws, ["restore", s1, "--files"]);
    assertEquals(workspaceOnly.session, null);
    assertEquals((await runJson(ws, ["session", "show"])).state, liveBefore);
    assertEquals(await read(ws, "a.txt"), "alpha\n");
    assert(!(await exists(join(ws.path, "added.txt"))), "added.txt survived the restore");

    // Edit files (even conflicting ones): --session must not touch them.
    await write(ws, "a.txt", "edited after\n");
    await write(ws, "b.md", "edited b\n");
    const filesBefore = await readState(ws);
    const sessionOnly = await runJson(ws, ["restore", s1, "--session-state"]);
    assertEquals(sessionOnly.session.mode, "merge");
    assertEquals(sessionOnly.plan, null);
    assertSameState(await readState(ws), filesBefore, "after restore --session");
    assertEquals((await runJson(ws, ["session", "show"])).state.task, "old task");
  });
});

// ---------------------------------------------------------------------------
// --git

const GIT_ENV = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
};

function git(ws: TempWorkspace, ...args: string[]): string {
  const out = new Deno.Command("git", {
    args,
    cwd: ws.path,
    env: { ...GIT_ENV, HOME: ws.home },
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout).trim();
}

/** A git work tree with two commits and a snapshot of each; .ctxsnap is excluded. */
async function withGitStore(
  fn: (ws: TempWorkspace, c: { c1: string; c2: string; s1: string; s2: string }) => Promise<void>,
): Promise<void> {
  await withStore(async (ws) => {
    git(ws, "init", "-q", "-b", "main");
    await Deno.writeTextFile(join(ws.path, ".git/info/exclude"), ".ctxsnap/\n");
    git(ws, "add", "-A");
    git(ws, "commit", "-q", "-m", "one");
    const c1 = git(ws, "rev-parse", "HEAD");
    expectCode(await ws.run(["session", "set", "--task", "task at s1"]), 0, "set");
    const s1 = await create(ws, "at c1");
    await write(ws, "a.txt", "alpha two\n");
    git(ws, "commit", "-q", "-am", "two");
    const c2 = git(ws, "rev-parse", "HEAD");
    const s2 = await create(ws, "at c2");
    expectCode(await ws.run(["session", "set", "--task", "live task"]), 0, "set");
    await fn(ws, { c1, c2, s1, s2 });
  });
}

async function everything(ws: TempWorkspace) {
  return {
    session: (await runJson(ws, ["session", "show"])).state,
    snapshots: await snapshotIds(ws),
    operations: (await runJson(ws, ["log", "--all"])).operations,
    files: await readState(ws),
  };
}

async function assertDirtyGuard(ws: TempWorkspace, target: string, head: string, what: string) {
  const before = await everything(ws);
  const result = await ws.run(["restore", target, "--git"]);
  expectCode(result, 5, `restore --git with ${what}`);
  assert(result.stderr.includes("ctxsnap: hint:"), `no hint: ${result.stderr}`);
  const after = await everything(ws);
  assertEquals(after.session, before.session, `${what}: the session changed`);
  assertEquals(after.snapshots, before.snapshots, `${what}: a snapshot was recorded`);
  assertEquals(after.operations, before.operations, `${what}: an operation was recorded`);
  assertSameState(after.files, before.files, `${what}: the workspace changed`);
  assertEquals(git(ws, "rev-parse", "HEAD"), head, `${what}: HEAD moved`);
}

Deno.test("restore --git with a modified tracked file exits 5 and changes neither session, files, snapshots nor HEAD", async () => {
  await withGitStore(async (ws, { c2, s1 }) => {
    await write(ws, "b.md", "dirty tracked edit\n");
    await assertDirtyGuard(ws, s1, c2, "a modified tracked file");
  });
});

Deno.test("restore --git with only an untracked file exits 5 and changes neither session, files, snapshots nor HEAD", async () => {
  await withGitStore(async (ws, { c2, s1 }) => {
    await write(ws, "untracked.txt", "new\n");
    await assertDirtyGuard(ws, s1, c2, "an untracked file");
  });
});

Deno.test("restore --git on a clean tree checks out the snapshot's commit detached and restores files and session", async () => {
  await withGitStore(async (ws, { c1, s1 }) => {
    const result = await runJson(ws, ["restore", s1, "--git"]);
    assertEquals(result.git_commit, c1);
    assertEquals(git(ws, "rev-parse", "HEAD"), c1);
    const symbolic = new Deno.Command("git", {
      args: ["symbolic-ref", "-q", "HEAD"],
      cwd: ws.path,
      stdout: "null",
      stderr: "null",
    }).outputSync();
    assert(!symbolic.success, "HEAD is not detached");
    assertEquals(await read(ws, "a.txt"), "alpha\n");
    assertEquals((await runJson(ws, ["session", "show"])).state.task, "task at s1");
    const recorded = await runJson(ws, ["show", result.snapshot]);
    assertEquals(recorded.envelope.body.facets.metadata.reverted_to, s1);
  });
});

function headRef(ws: TempWorkspace): string | null {
  const out = new Deno.Command("git", {
    args: ["symbolic-ref", "-q", "HEAD"],
    cwd: ws.path,
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
}

Deno.test("undo of restore --git switches HEAD back to the branch it was on, files and git status clean; redo detaches it again", async () => {
  await withGitStore(async (ws, { c1, c2, s1 }) => {
    await runJson(ws, ["restore", s1, "--git"]);
    assertEquals(headRef(ws), null, "the restore detached HEAD");
    const undone = await runJson(ws, ["undo"]);
    assertEquals(undone.git, {
      to: "main",
      from: c1,
      moved: true,
      reason: null,
      detail: null,
      hint: null,
    });
    assertEquals(headRef(ws), "refs/heads/main");
    assertEquals(git(ws, "rev-parse", "HEAD"), c2);
    assertEquals(await read(ws, "a.txt"), "alpha two\n");
    assertEquals(git(ws, "status", "--porcelain"), "", "git status after the undo");
    const text = await ws.run(["redo"]);
    expectCode(text, 0, "redo");
    assert(
      text.stdout.includes(`git: switched HEAD back to commit ${c1.slice(0, 12)} (detached)`),
      text.stdout,
    );
    assertEquals(headRef(ws), null, "the redo detached HEAD again");
    assertEquals(git(ws, "rev-parse", "HEAD"), c1);
    assertEquals(await read(ws, "a.txt"), "alpha\n");
    assertEquals(git(ws, "status", "--porcelain"), "", "git status after the redo");
    const again = await ws.run(["undo"]);
    assert(again.stdout.includes("git: switched HEAD back to branch main"), again.stdout);
    assertEquals(headRef(ws), "refs/heads/main");
  });
});

Deno.test("undo of restore --git that git refuses to switch back says so and how (git switch BRANCH); one moved since is left alone", async () => {
  await withGitStore(async (ws, { c1, s1 }) => {
    await runJson(ws, ["restore", s1, "--git"]);
    await write(ws, "a.txt", "edited while detached\n");
    const undone = await ws.run(["undo", "--force"]);
    expectCode(undone, 0, "undo");
    assertEquals(headRef(ws), null, "HEAD moved over a local change");
    assertEquals(git(ws, "rev-parse", "HEAD"), c1);
    assert(undone.stdout.includes("git: HEAD stays on commit"), undone.stdout);
    assert(undone.stdout.includes("git refused to switch"), undone.stdout);
    assert(
      undone.stdout.includes("commit or stash your changes, then: git switch main"),
      undone.stdout,
    );
    assertEquals(await read(ws, "a.txt"), "edited while detached\n", "the local change is kept");
  });
  await withGitStore(async (ws, { s1 }) => {
    await runJson(ws, ["restore", s1, "--git"]);
    git(ws, "switch", "-q", "-c", "elsewhere");
    const undone = await runJson(ws, ["undo"]);
    assertEquals([undone.git.moved, undone.git.reason], [false, "head_moved"]);
    assertEquals(headRef(ws), "refs/heads/elsewhere");
  });
});

Deno.test("restore says when the agent committed and switched branch since the target, and what --git would do; --git then checks the anchor out", async () => {
  await withGitStore(async (ws, { c1, s1 }) => {
    // The agent branches off, edits, commits.
    git(ws, "checkout", "-q", "-b", "agent/feature");
    await write(ws, "a.txt", "agent's alpha\n");
    git(ws, "commit", "-q", "-am", "agent");
    const agentCommit = git(ws, "rev-parse", "HEAD");
    await create(ws, "after the agent");

    const dry = await runJson(ws, ["restore", s1, "--dry-run"]);
    assertEquals(dry.git.anchor, { commit: c1, branch: "main" });
    assertEquals(dry.git.head, { commit: agentCommit, branch: "agent/feature" });
    assertEquals([dry.git.differs, dry.git.with_git, dry.git.blocking], [true, "checkout", 0]);
    const text = await ws.run(["restore", s1, "--dry-run"]);
    expectCode(text, 0, "restore --dry-run");
    assert(text.stdout.includes("HEAD is on agent/feature at"), text.stdout);
    assert(
      text.stdout.includes(`the snapshot was taken on main at ${c1.slice(0, 12)}`),
      text.stdout,
    );
    assert(text.stdout.includes("with --git, restore checks out"), text.stdout);

    // --git: the files and HEAD go back to the anchor, detached.
    const restored = await runJson(ws, ["restore", s1, "--git"]);
    assertEquals(restored.git_commit, c1);
    assertEquals(git(ws, "rev-parse", "HEAD"), c1);
    assertEquals(await read(ws, "a.txt"), "alpha\n");
    assertEquals(git(ws, "status", "--porcelain"), "", "the work tree is exactly the commit");
    // The agent's work is still in git.
    assertEquals(git(ws, "rev-parse", "agent/feature"), agentCommit);
  });
});

Deno.test("restore without --git leaves HEAD on the agent's branch and says so, and what --git would refuse", async () => {
  await withGitStore(async (ws, { c1, s1 }) => {
    git(ws, "checkout", "-q", "-b", "agent/feature");
    await write(ws, "a.txt", "agent's alpha\n");
    git(ws, "commit", "-q", "-am", "agent");
    await write(ws, "scratch.txt", "uncommitted\n");
    await create(ws, "after the agent");

    const result = await ws.run(["restore", s1]);
    expectCode(result, 0, "restore");
    assert(result.stdout.includes("HEAD is on agent/feature at"), result.stdout);
    assert(result.stdout.includes("HEAD was not moved; --git would refuse: 1"), result.stdout);
    assert(result.stdout.includes("scratch.txt"), result.stdout);
    assertEquals(git(ws, "rev-parse", "--abbrev-ref", "HEAD"), "agent/feature");
    assertEquals(await read(ws, "a.txt"), "alpha\n");
    const json = (await runJson(ws, ["undo"])).reverts.kind;
    assertEquals(json, "restore");
    const again = await runJson(ws, ["restore", s1, "--dry-run"]);
    assertEquals(again.git.anchor.commit, c1);
    assertEquals([again.git.with_git, again.git.blocking_paths], ["refuse", ["scratch.txt"]]);
  });
});

Deno.test("restore --git does not count files git ignores, nor untracked files ctxsnap does not capture (node_modules)", async () => {
  await withGitStore(async (ws, { c1, s1 }) => {
    await write(ws, ".gitignore", "build/\n");
    git(ws, "add", ".gitignore");
    git(ws, "commit", "-q", "-m", "ignore build");
    await create(ws, "with .gitignore");
    // Untracked and not ignored by git, but never captured by ctxsnap: many paths.
    for (let i = 0; i < 300; i++) await write(ws, `node_modules/p${i % 7}/f${i}.js`, `${i}\n`);
    for (let i = 0; i < 20; i++) await write(ws, `build/out${i}.o`, "obj\n");

    const dry = await runJson(ws, ["restore", s1, "--git", "--dry-run"]);
    assertEquals([dry.git.with_git, dry.git.blocking, dry.would_refuse], ["checkout", 0, []]);
    const restored = await runJson(ws, ["restore", s1, "--git"]);
    assertEquals(restored.git_commit, c1);
    assertEquals(git(ws, "rev-parse", "HEAD"), c1);
    assertEquals(await read(ws, "node_modules/p3/f10.js"), "10\n", "node_modules untouched");
    assertEquals(await read(ws, "build/out3.o"), "obj\n", "ignored files untouched");
  });
});

Deno.test("restore --dry-run --git over a dirty tree shows the whole plan and exits 5, changing nothing", async () => {
  await withGitStore(async (ws, { c2, s1 }) => {
    await write(ws, "untracked.txt", "new\n");
    const before = await everything(ws);
    const dry = await runJson(ws, ["restore", s1, "--git", "--dry-run"], 5);
    assertEquals(dry.plan.writes, [{ path: "a.txt", action: "replace", type: "file" }]);
    assertEquals(dry.plan.preserved, ["untracked.txt"]);
    assertEquals(dry.session.change.task, { from: "live task", to: "task at s1" });
    assertEquals(dry.would_refuse.map((r: { reason: string }) => r.reason), ["git_dirty"]);
    assert(String(dry.would_refuse[0].message).includes("untracked.txt"), dry.would_refuse[0]);
    assertEquals(dry.git.blocking_paths, ["untracked.txt"]);
    const text = await ws.run(["restore", s1, "--git", "--dry-run"]);
    expectCode(text, 5, "restore --git --dry-run, text");
    assert(text.stdout.includes("replace  a.txt"), text.stdout);
    assert(
      text.stdout.includes("the restore would be refused: The git work tree has 1"),
      text.stdout,
    );
    const after = await everything(ws);
    assertEquals(after.snapshots, before.snapshots);
    assertEquals(after.operations, before.operations);
    assertSameState(after.files, before.files, "a dry run changed the workspace");
    assertEquals(git(ws, "rev-parse", "HEAD"), c2);
  });
});

Deno.test("restore --git of a snapshot taken outside git refuses with a clear error", async () => {
  await withStore(async (ws) => {
    const s1 = await create(ws, "no git");
    assertEquals((await runJson(ws, ["show", s1])).envelope.body.git, null);
    await write(ws, "a.txt", "changed\n");
    await create(ws, "two");
    const before = await everything(ws);
    const result = await ws.run(["restore", s1, "--git"]);
    assert(result.code !== 0, `restore --git without an anchor succeeded: ${result.stdout}`);
    assert(result.stderr.includes("git anchor"), `unclear error: ${result.stderr}`);
    const after = await everything(ws);
    assertSameState(after.files, before.files, "the workspace changed");
    assertEquals(after.snapshots, before.snapshots);
  });
});

// ---------------------------------------------------------------------------
// branches, undo, materialize, log

Deno.test("fork makes a branch whose head is the id; after switching, create's parent is that id; branch list shows both", async () => {
  await withStore(async (ws) => {
    const s1 = await create(ws, "one");
    await write(ws, "a.txt", "two\n");
    const s2 = await create(ws, "two");
    const fork = await runJson(ws, ["fork", s1.slice(0, 8), "--name", "exp"]);
    assertEquals(fork.head, s1);
    assertEquals(fork.branch, "exp");
    const duplicate = await ws.run(["fork", s1, "--name", "exp"]);
    expectCode(duplicate, 5, "forking onto an existing branch name");

    await runJson(ws, ["branch", "switch", "exp"]);
    await write(ws, "exp.txt", "experiment\n");
    const created = await runJson(ws, ["create", "-m", "on exp"]);
    assertEquals(created.parent, s1);
    assertEquals(created.branch, "exp");

    const list = await runJson(ws, ["branch", "list"]);
    assertEquals(list.current, "exp");
    const byName = Object.fromEntries(
      (list.branches as { name: string; head: string; current: boolean }[]).map((b) => [b.name, b]),
    );
    assertEquals(byName.main?.head, s2);
    assertEquals(byName.main?.current, false);
    assertEquals(byName.exp?.head, created.id);
    assertEquals(byName.exp?.current, true);
    expectCode(await ws.run(["branch", "switch", "nope"]), 4, "switching to a missing branch");
  });
});

Deno.test("undo returns the workspace byte for byte to the state before the last restore", async () => {
  await withStore(async (ws) => {
    const s1 = await create(ws, "one");
    await write(ws, "a.txt", "two\n");
    await write(ws, "src/added.txt", "added in two\n");
    await Deno.symlink("a.txt", join(ws.path, "ln"));
    const s2 = await create(ws, "two");
    const beforeRestore = await readState(ws);

    await runJson(ws, ["restore", s1]);
    assertEquals(await read(ws, "a.txt"), "alpha\n");
    assert(!(await exists(join(ws.path, "src/added.txt"))), "restore kept src/added.txt");

    const undone = await runJson(ws, ["undo"]);
    assertEquals(undone.reverts.kind, "restore");
    assertSameState(await readState(ws), beforeRestore, "after undo");
    assertEquals((await runJson(ws, ["show", "HEAD"])).id, s2, "the head is back at s2");
  });
});

Deno.test("undo with nothing left in the operations log exits 4", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["undo"]), 4, "undo in a new store");
    await create(ws, "one");
    expectCode(await ws.run(["undo"]), 0, "undo the create");
    expectCode(await ws.run(["undo"]), 4, "undo with nothing left to undo");
  });
});

Deno.test("materialize writes the tree or selected paths, deletes nothing, and refuses a differing file with nothing written", async () => {
  await withStore(async (ws) => {
    await Deno.chmod(join(ws.path, "src/main.ts"), 0o755);
    await Deno.symlink("b.md", join(ws.path, "link"));
    const s1 = await create(ws, "one");
    const expected = await readState(ws);
    await write(ws, "a.txt", "later\n");
    await create(ws, "two");

    const full = join(ws.root, "full");
    expectCode(await ws.run(["materialize", s1, full]), 0, "materialize all");
    assertSameState(await readState(full), expected, "materialized tree");

    const partial = join(ws.root, "partial");
    await Deno.mkdir(partial);
    await Deno.writeTextFile(join(partial, "keep.txt"), "already here\n");
    const result = await runJson(ws, ["materialize", s1, partial, "src", "link"]);
    assertEquals([...result.written].sort(), ["link", "src/main.ts"]);
    const got = await readState(partial);
    assertEquals([...got.keys()].sort(), ["keep.txt", "link", "src", "src/main.ts"]);
    assertEquals(await Deno.readTextFile(join(partial, "keep.txt")), "already here\n");
    assertEquals((await Deno.lstat(join(partial, "src/main.ts"))).mode! & 0o777, 0o755);
    // Again: everything identical, nothing rewritten, still fine.
    expectCode(await ws.run(["materialize", s1, partial, "src"]), 0, "materialize again");

    const clash = join(ws.root, "clash");
    await Deno.mkdir(clash);
    await Deno.writeTextFile(join(clash, "a.txt"), "different\n");
    const refused = await ws.run(["materialize", s1, clash]);
    expectCode(refused, 5, "materialize onto a differing file");
    assert(refused.stderr.includes("a.txt"), refused.stderr);
    const left = await readState(clash);
    assertEquals([...left.keys()], ["a.txt"], "materialize wrote something before refusing");
    assertEquals(await Deno.readTextFile(join(clash, "a.txt")), "different\n");
  });
});

Deno.test("log --json records restore, fork, forget and gc operations as done", async () => {
  await withStore(async (ws) => {
    const s1 = await create(ws, "one");
    await write(ws, "a.txt", "two\n");
    await create(ws, "two");
    const restored = await runJson(ws, ["restore", s1]);
    await runJson(ws, ["fork", restored.snapshot, "--name", "side"]);
    await write(ws, "a.txt", "three\n");
    await create(ws, "three");
    await runJson(ws, ["forget", "--keep-last", "2"]);
    await runJson(ws, ["gc"]);
    const ops = (await runJson(ws, ["log", "--all"])).operations as {
      kind: string;
      status: string;
      target: string | null;
    }[];
    for (const kind of ["restore", "fork", "forget", "gc"]) {
      const found = ops.filter((o) => o.kind === kind);
      assert(found.length > 0, `no ${kind} operation in ${JSON.stringify(ops)}`);
      assert(found.every((o) => o.status === "done"), `${kind} not done: ${JSON.stringify(found)}`);
    }
    assertEquals(ops.find((o) => o.kind === "restore")?.target, s1);
    // The default log (current session and store-wide) shows them too.
    const local = (await runJson(ws, ["log"])).operations as { kind: string }[];
    assert(local.some((o) => o.kind === "restore") && local.some((o) => o.kind === "gc"));
  });
});

Deno.test("restore --git refuses to overwrite an edited file that git ignores but ctxsnap captures", async () => {
  await withStore(async (ws) => {
    const git = (...args: string[]) =>
      new Deno.Command("git", { args, cwd: ws.path, stdout: "null", stderr: "null" }).outputSync();
    git("init", "-q");
    git("config", "user.email", "t@example.invalid");
    git("config", "user.name", "t");
    await Deno.writeTextFile(join(ws.path, ".git/info/exclude"), "TODO.md\n.ctxsnap\n");
    await write(ws, "TODO.md", "todo v1\n");
    git("add", "-A");
    git("commit", "-q", "-m", "one");
    const s1 = await create(ws, "one");
    await write(ws, "code.txt", "v2\n");
    git("add", "-A");
    git("commit", "-q", "-m", "two");
    await write(ws, "TODO.md", "todo v2\n");
    await create(ws, "two");
    await write(ws, "TODO.md", "todo v3 unsaved work\n");
    const refused = await ws.run(["restore", s1, "--git"]);
    expectCode(refused, 5, "restore --git over an edited ignored file");
    assertEquals(await read(ws, "TODO.md"), "todo v3 unsaved work\n");
    const forced = await runJson(ws, ["restore", s1, "--git", "--force"]);
    assert(forced.pre_restore !== null, "no pre-restore snapshot");
    const dest = join(ws.root, "saved");
    expectCode(
      await ws.run(["materialize", forced.pre_restore, dest, "TODO.md"]),
      0,
      "materialize",
    );
    assertEquals(await Deno.readTextFile(join(dest, "TODO.md")), "todo v3 unsaved work\n");
  });
});

Deno.test("a file saved between planning and applying a restore is a conflict, never overwritten", async () => {
  const root = await Deno.makeTempDir();
  try {
    const ws = join(root, "ws");
    await Deno.mkdir(ws);
    const me = await loadOrCreateIdentity(join(root, "config"));
    await Deno.writeTextFile(join(ws, "a.txt"), "v1\n");
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const s1 = await createSnapshot(store, me, { reason: "v1" });
      await Deno.writeTextFile(join(ws, "a.txt"), "v2\n");
      await createSnapshot(store, me, { reason: "v2" });
      // An editor saves a.txt after the plan was made, just before the apply.
      const original = store.transaction.bind(store);
      store.transaction = (<T>(what: string, fn: () => T): T => {
        if (what === "restore") Deno.writeTextFileSync(join(ws, "a.txt"), "v3 saved meanwhile\n");
        return original(what, fn);
      }) as typeof store.transaction;
      await assertRejects(() => restoreSnapshot(store, me, s1.id), ConflictError, "changed while");
      assertEquals(await Deno.readTextFile(join(ws, "a.txt")), "v3 saved meanwhile\n");
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
