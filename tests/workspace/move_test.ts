/**
 * Tests of three-way moves: the full base/disk/target matrix for
 * `restore` and `switch` against a small reference model, a property test
 * (random histories restore exactly, and a second restore plans nothing),
 * branch round trips that leak nothing, and mode convergence.
 *
 * Real stores, real files and symlinks in temporary directories, the library
 * called in-process (the matrix runs 125 cases in one workspace per run: the
 * cases use disjoint paths, so one move plans them all).
 *
 * `CTXSNAP_PROPERTY_RUNS` raises the property test's run count (default 8);
 * `CTXSNAP_PROPERTY_SEED` replays a printed seed.
 *
 * @module
 */
import fc from "fast-check";
import { join } from "node:path";
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import type { Identity } from "../../lib/keys/identity.ts";
import { ConflictError } from "../../lib/errors.ts";
import { restoreSnapshot } from "../../lib/workspace/move/restore.ts";
import { switchTo } from "../../lib/workspace/move/switch.ts";
import { forkBranch } from "../../lib/history/branch.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { diffTrees } from "../../lib/repository/diff.ts";
import { readEnvelope } from "../../lib/history/timeline.ts";
import { readBaseline } from "../../lib/repository/baseline.ts";
import { captureWorkspace } from "../../lib/workspace/capture.ts";
import { Store } from "../../lib/repository/store.ts";
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { exists } from "../_util.ts";

// ---------------------------------------------------------------------------
// The reference model

/** What one case path holds: nothing, file A, file B, a directory (holding `x`), a symlink. */
type State = "missing" | "A" | "B" | "dir" | "link";
const STATES: readonly State[] = ["missing", "A", "B", "dir", "link"];

/** The leaves a state puts under path `p`: `p` itself, or `p/x` for a directory. */
function leaves(state: State): Map<"self" | "x", string> {
  switch (state) {
    case "missing":
      return new Map();
    case "A":
      return new Map([["self", "file A"]]);
    case "B":
      return new Map([["self", "file B"]]);
    case "dir":
      return new Map([["x", "file D"]]);
    case "link":
      return new Map([["self", "link"]]);
  }
}

/** The model's answer for one case: the final leaves, or a conflict. */
type Outcome = { conflict: true } | { conflict: false; final: Map<"self" | "x", string> };

/**
 * The rules of docs/CLI.md "restore", leaf by leaf, written independently of
 * `lib/workspace/overwrite.ts`: disk = target: keep; target = base: keep the
 * disk (unless forced and the base tracks it); disk = base: take the target;
 * else a conflict (unless forced). A final state with both `p` and `p/x` is
 * a structural conflict, refused even when forced.
 */
function model(b: State, o: State, t: State, force: boolean): Outcome {
  const base = leaves(b);
  const disk = leaves(o);
  const target = leaves(t);
  const final = new Map<"self" | "x", string>();
  for (const leaf of ["self", "x"] as const) {
    const bv = base.get(leaf);
    const ov = disk.get(leaf);
    const tv = target.get(leaf);
    let v: string | undefined;
    if (ov === tv) v = ov;
    else if (tv === bv) v = force && bv !== undefined ? tv : ov;
    else if (ov === bv) v = tv;
    else if (force) v = tv;
    else return { conflict: true };
    if (v !== undefined) final.set(leaf, v);
  }
  if (final.has("self") && final.has("x")) return { conflict: true };
  return { conflict: false, final };
}

// ---------------------------------------------------------------------------
// Writing and reading case states

async function writeState(root: string, path: string, state: State): Promise<void> {
  const abs = join(root, path);
  await Deno.remove(abs, { recursive: true }).catch(() => {});
  if (state === "missing") return;
  if (state === "dir") {
    await Deno.mkdir(abs);
    await Deno.writeTextFile(join(abs, "x"), "D\n");
  } else if (state === "link") await Deno.symlink("target-of-link", abs);
  else await Deno.writeTextFile(abs, state === "A" ? "A\n" : "B\n");
}

/** The leaves at `path` on disk now, in the model's terms ("other" for anything unexpected). */
async function readLeaves(root: string, path: string): Promise<Map<"self" | "x", string>> {
  const out = new Map<"self" | "x", string>();
  const abs = join(root, path);
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(abs);
  } catch {
    return out;
  }
  if (info.isSymlink) {
    out.set("self", (await Deno.readLink(abs)) === "target-of-link" ? "link" : "other link");
  } else if (info.isFile) {
    const text = await Deno.readTextFile(abs);
    out.set("self", text === "A\n" ? "file A" : text === "B\n" ? "file B" : `other ${text}`);
  } else if (info.isDirectory) {
    const names = [...Deno.readDirSync(abs)].map((e) => e.name);
    if (names.length !== 1 || names[0] !== "x") out.set("self", `dir holding ${names.join(",")}`);
    else {
      const text = await Deno.readTextFile(join(abs, "x"));
      out.set("x", text === "D\n" ? "file D" : `other ${text}`);
    }
  }
  return out;
}

function show(m: Map<string, string>): string {
  return JSON.stringify([...m.entries()].sort());
}

interface Case {
  b: State;
  o: State;
  t: State;
  path: string;
}

const ALL_CASES: Case[] = STATES.flatMap((b) =>
  STATES.flatMap((o) => STATES.map((t) => ({ b, o, t, path: `${b}-${o}-${t}` })))
);

/** A workspace with a store, a signer, and the matrix's base and target recorded. */
interface Bench {
  root: string;
  ws: string;
  store: Store;
  me: Identity;
  /** The snapshot holding every case's target state (head of branch `target`). */
  target: string;
}

/**
 * Records the target states on branch `target`, then the base states on
 * `main` (the baseline), then writes the disk states.
 */
async function bench(cases: Case[]): Promise<Bench> {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-move-" });
  const ws = join(root, "ws");
  await Deno.mkdir(ws);
  const me = await loadOrCreateIdentity(join(root, "config"));
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  for (const c of cases) await writeState(ws, c.path, c.t);
  const target = (await createSnapshot(store, me, { branch: "target", reason: "targets" })).id;
  for (const c of cases) await writeState(ws, c.path, c.b);
  await createSnapshot(store, me, { reason: "bases", allowUnchanged: true });
  for (const c of cases) await writeState(ws, c.path, c.o);
  return { root, ws, store, me, target };
}

async function closeBench(b: Bench): Promise<void> {
  b.store.close();
  await Deno.remove(b.root, { recursive: true });
}

/** The cases a plan puts in conflict (any leaf of the case). */
function conflictedCases(conflicts: { path: string }[]): Set<string> {
  return new Set(conflicts.map((c) => c.path.split("/")[0]!));
}

type Mover = "restore" | "switch";

async function move(b: Bench, how: Mover, force: boolean, dryRun: boolean) {
  if (how === "restore") {
    const r = await restoreSnapshot(b.store, b.me, b.target, {
      workspace: true,
      force,
      dryRun,
    });
    return r.plan!;
  }
  const r = await switchTo(b.store, b.me, "target", { force, dryRun });
  return r.plan!;
}

async function matrix(how: Mover): Promise<void> {
  // 1. The dry-run plan of all 125 cases: conflicts exactly where the model has them.
  const all = await bench(ALL_CASES);
  try {
    const plan = await move(all, how, false, true);
    const got = conflictedCases(plan.conflicts);
    const problems: string[] = [];
    for (const c of ALL_CASES) {
      const expected = model(c.b, c.o, c.t, false).conflict;
      if (got.has(c.path) !== expected) {
        problems.push(`${c.path}: conflict ${got.has(c.path)}, the model says ${expected}`);
      }
    }
    assertEquals(problems, [], `${how} plan vs the model`);
    // Deleted on disk and changed in the target is a conflict with its own reason.
    const reason = plan.conflicts.find((c) => c.path === "A-missing-B")?.reason;
    assertEquals(reason, "deleted_on_disk_target_changed");
  } finally {
    await closeBench(all);
  }

  // 2. Applied to the cases without a conflict: the disk becomes the model's final state.
  for (const force of [false, true]) {
    const cases = ALL_CASES.filter((c) => !model(c.b, c.o, c.t, force).conflict);
    const b = await bench(cases);
    try {
      await move(b, how, force, false);
      const problems: string[] = [];
      for (const c of cases) {
        const want = (model(c.b, c.o, c.t, force) as { final: Map<"self" | "x", string> }).final;
        const have = await readLeaves(b.ws, c.path);
        if (show(have) !== show(want)) {
          problems.push(`${c.path}: disk ${show(have)}, the model says ${show(want)}`);
        }
      }
      assertEquals(problems, [], `${how}${force ? " --force" : ""} result vs the model`);
      // Converged: moving again plans nothing.
      const again = await move(b, how, false, true);
      assertEquals([again.writes, again.deletes, again.conflicts], [[], [], []], "a second move");
      // The baseline is the target's tree.
      assertEquals(
        readBaseline(b.store),
        (await readEnvelope(b.store, b.target)).body.workspace?.tree,
      );
    } finally {
      await closeBench(b);
    }
  }

  // 3. A case in conflict refuses the whole move and changes nothing.
  const refused = ALL_CASES.filter((c) => model(c.b, c.o, c.t, false).conflict).slice(0, 12);
  const b = await bench(refused);
  try {
    const before = await Promise.all(refused.map((c) => readLeaves(b.ws, c.path)));
    await assertRejects(() => move(b, how, false, false), ConflictError, "refused");
    const after = await Promise.all(refused.map((c) => readLeaves(b.ws, c.path)));
    assertEquals(after.map(show), before.map(show), "a refused move changed the disk");
  } finally {
    await closeBench(b);
  }
}

Deno.test("restore: every base/disk/target combination of missing, file A, file B, directory and symlink matches the reference model, with and without --force", async () => {
  await matrix("restore");
});

Deno.test("switch: every base/disk/target combination matches the same reference model, with and without --force", async () => {
  await matrix("switch");
});

// ---------------------------------------------------------------------------
// Property: random histories restore exactly

const RUNS = Number(Deno.env.get("CTXSNAP_PROPERTY_RUNS") ?? 8);
const SEED = Deno.env.get("CTXSNAP_PROPERTY_SEED");

/** One entry of a random workspace: a file (content, mode) or a symlink. */
type Entry = { kind: "file"; text: string; mode: number } | { kind: "link"; target: string };

const UNIVERSE = ["a.txt", "b.txt", "d", "d/x.txt", "d/y.txt", "e/f/g.txt", "link"] as const;

const entryArb: fc.Arbitrary<Entry> = fc.oneof(
  fc.record({
    kind: fc.constant("file" as const),
    text: fc.constantFrom("one\n", "two\n", "three\n", ""),
    mode: fc.constantFrom(0o644, 0o755, 0o600),
  }),
  fc.record({ kind: fc.constant("link" as const), target: fc.constantFrom("a.txt", "../out") }),
);

/** A workspace state: each path of the universe absent or an entry; `d` only without `d/…`. */
const stateArb: fc.Arbitrary<Map<string, Entry>> = fc.tuple(
  ...UNIVERSE.map(() => fc.option(entryArb, { nil: undefined })),
).map((values) => {
  const m = new Map<string, Entry>();
  UNIVERSE.forEach((p, i) => {
    if (values[i] !== undefined) m.set(p, values[i]!);
  });
  if (m.has("d") && (m.has("d/x.txt") || m.has("d/y.txt"))) m.delete("d");
  return m;
});

async function writeWorkspace(ws: string, state: Map<string, Entry>): Promise<void> {
  for (const item of Deno.readDirSync(ws)) {
    if (item.name !== ".ctxsnap") await Deno.remove(join(ws, item.name), { recursive: true });
  }
  for (const [path, entry] of state) {
    const abs = join(ws, path);
    await Deno.mkdir(join(abs, ".."), { recursive: true });
    if (entry.kind === "link") await Deno.symlink(entry.target, abs);
    else {
      await Deno.writeTextFile(abs, entry.text);
      await Deno.chmod(abs, entry.mode);
    }
  }
}

Deno.test("property: with random edits committed and no conflicts, restoring snapshot X and capturing again yields X's tree, and a second restore plans nothing", async () => {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-prop-" });
  const me = await loadOrCreateIdentity(join(root, "config"));
  let run = 0;
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stateArb, { minLength: 2, maxLength: 4 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        async (states, picks) => {
          const ws = join(root, `ws-${run++}`);
          await Deno.mkdir(ws);
          const store = Store.init(join(ws, ".ctxsnap"), ws);
          try {
            const ids: string[] = [];
            for (const state of states) {
              await writeWorkspace(ws, state);
              ids.push((await createSnapshot(store, me, { allowUnchanged: true })).id);
            }
            for (const pick of picks) {
              const x = ids[pick % ids.length]!;
              const result = await restoreSnapshot(store, me, x, { workspace: true });
              assertEquals(result.plan?.conflicts, []);
              const want = (await readEnvelope(store, x)).body.workspace!.tree;
              const now = captureWorkspace(store, { persist: false });
              assertEquals(now.treeId, want, "the workspace after restoring X is X's tree");
              const again = await restoreSnapshot(store, me, x, { workspace: true, dryRun: true });
              assertEquals([again.plan?.writes, again.plan?.deletes], [[], []], "a second plan");
              const diff = diffTrees(store.getTree(want), now.tree, { bIsDisk: true });
              assertEquals(diff, { added: [], changed: [], removed: [] }, "diff X");
              // A random edit, committed: the next restore has no conflict either.
              await Deno.remove(join(ws, "a.txt")).catch(() => {});
              await Deno.writeTextFile(join(ws, "a.txt"), `edit ${pick}\n`);
              ids.push((await createSnapshot(store, me, { allowUnchanged: true })).id);
            }
          } finally {
            store.close();
            await Deno.remove(ws, { recursive: true });
          }
        },
      ),
      { numRuns: RUNS, ...(SEED !== undefined ? { seed: Number(SEED) } : {}) },
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

// ---------------------------------------------------------------------------
// Branch round trips

async function tree(ws: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string) => {
    for await (const item of Deno.readDir(rel === "" ? ws : join(ws, rel))) {
      if (rel === "" && item.name === ".ctxsnap") continue;
      const path = rel === "" ? item.name : `${rel}/${item.name}`;
      const info = await Deno.lstat(join(ws, path));
      if (info.isDirectory) await walk(path);
      else if (info.isSymlink) out[path] = `-> ${await Deno.readLink(join(ws, path))}`;
      else out[path] = await Deno.readTextFile(join(ws, path));
    }
  };
  await walk("");
  return out;
}

Deno.test("branch round trips leak nothing: files created, changed or deleted on one branch stay there, and uncommitted edits travel as local changes", async () => {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-branch-" });
  try {
    const ws = join(root, "ws");
    await Deno.mkdir(ws);
    const me = await loadOrCreateIdentity(join(root, "config"));
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      await Deno.writeTextFile(join(ws, "shared.txt"), "shared\n");
      await Deno.writeTextFile(join(ws, "main-only.txt"), "main\n");
      await Deno.mkdir(join(ws, "docs"));
      await Deno.writeTextFile(join(ws, "docs/a.md"), "a\n");
      const base = await createSnapshot(store, me, { reason: "base" });
      const onMain = await tree(ws);
      forkBranch(store, base.id, "exp");

      const sw = await switchTo(store, me, "exp");
      assertEquals(sw.plan?.conflicts, [], "no false conflicts");
      await Deno.writeTextFile(join(ws, "exp-only.txt"), "exp\n");
      await Deno.writeTextFile(join(ws, "shared.txt"), "shared, changed on exp\n");
      await Deno.remove(join(ws, "main-only.txt"));
      await Deno.remove(join(ws, "docs"), { recursive: true });
      await Deno.mkdir(join(ws, "docs/deep"), { recursive: true });
      await Deno.writeTextFile(join(ws, "docs/deep/b.md"), "b\n");
      await createSnapshot(store, me, { reason: "exp work" });
      const onExp = await tree(ws);

      for (let round = 0; round < 2; round++) {
        const back = await switchTo(store, me, "main");
        assertEquals(back.plan?.conflicts, []);
        assertEquals(await tree(ws), onMain, `main after round ${round}`);
        assert(!(await exists(join(ws, "exp-only.txt"))), "exp-only.txt leaked into main");
        assert(!(await exists(join(ws, "docs/deep"))), "docs/deep leaked into main");
        const there = await switchTo(store, me, "exp");
        assertEquals(there.plan?.conflicts, []);
        assertEquals(await tree(ws), onExp, `exp after round ${round}`);
      }

      // An uncommitted edit to a file the other branch does not change travels with
      // the switch (a local change, as with git switch) and comes back.
      await Deno.writeTextFile(join(ws, "docs/deep/b.md"), "b, not committed\n");
      await assertRejects(
        () => switchTo(store, me, "main"),
        ConflictError,
        "in conflict",
      ); // main has no docs/deep/b.md: deleting an edited file is a conflict
      await Deno.writeTextFile(join(ws, "docs/deep/b.md"), "b\n");
      await Deno.writeTextFile(join(ws, "notes.txt"), "untracked\n");
      await switchTo(store, me, "main");
      assertEquals(await Deno.readTextFile(join(ws, "notes.txt")), "untracked\n");
      assertEquals(
        await tree(ws),
        { ...onMain, "notes.txt": "untracked\n" },
        "main plus the untracked file",
      );
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a pointer-only switch moves no file and keeps the baseline; the next create records the workspace onto the new branch", async () => {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-branch-" });
  try {
    const ws = join(root, "ws");
    await Deno.mkdir(ws);
    const me = await loadOrCreateIdentity(join(root, "config"));
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      await Deno.writeTextFile(join(ws, "a.txt"), "a\n");
      const base = await createSnapshot(store, me, {});
      forkBranch(store, base.id, "exp");
      await switchTo(store, me, "exp");
      await Deno.writeTextFile(join(ws, "b.txt"), "b\n");
      await createSnapshot(store, me, {});
      await switchTo(store, me, "main");
      const baseline = readBaseline(store);
      const result = await switchTo(store, me, "exp", { pointerOnly: true });
      assertEquals([result.workspace, result.plan], [false, null]);
      assert(!(await exists(join(ws, "b.txt"))), "a pointer-only switch wrote a file");
      assertEquals(readBaseline(store), baseline);
      const made = await createSnapshot(store, me, {});
      assertEquals(made.envelope.body.branch, "exp");
      assertEquals(
        store.getTree(made.envelope.body.workspace!.tree).entries.map((e) => e.path),
        ["a.txt"],
      );
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

// ---------------------------------------------------------------------------
// Convergence of modes

Deno.test("convergence: a setuid, setgid or world-writable file restores under the mode rule, and diff and a second restore then see no change", async () => {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-modes-" });
  try {
    const ws = join(root, "ws");
    await Deno.mkdir(ws);
    const me = await loadOrCreateIdentity(join(root, "config"));
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const modes: Record<string, number> = {
        "suid.sh": 0o4755,
        "sgid.sh": 0o2755,
        "open.txt": 0o777,
        "sticky": 0o1644,
      };
      for (const [name, mode] of Object.entries(modes)) {
        await Deno.writeTextFile(join(ws, name), `${name}\n`);
        await Deno.chmod(join(ws, name), mode);
      }
      const recorded = await createSnapshot(store, me, {});
      const entries = store.getTree(recorded.envelope.body.workspace!.tree).entries;
      const actual = Object.fromEntries(
        entries.map((e) => [e.path, e.type === "file" ? e.mode : -1]),
      );
      for (const name of Object.keys(modes)) {
        const mode = (await Deno.lstat(join(ws, name))).mode! & 0o7777;
        assertEquals(actual[name], mode, `${name} recorded as lstat reports it`);
      }
      for (const name of Object.keys(modes)) await Deno.writeTextFile(join(ws, name), "later\n");
      await createSnapshot(store, me, {});
      await restoreSnapshot(store, me, recorded.id, { workspace: true });
      const now = captureWorkspace(store, { persist: false }).tree;
      assertEquals(
        diffTrees(store.getTree(recorded.envelope.body.workspace!.tree), now, { bIsDisk: true }),
        { added: [], changed: [], removed: [] },
        "diff against the restored snapshot",
      );
      const again = await restoreSnapshot(store, me, recorded.id, {
        workspace: true,
        dryRun: true,
      });
      assertEquals([again.plan?.writes, again.plan?.deletes, again.plan?.conflicts], [[], [], []]);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("an empty directory where the target puts a file is a structural conflict, refused before any change even with --force", async () => {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-move-" });
  try {
    const ws = join(root, "ws");
    await Deno.mkdir(ws);
    const me = await loadOrCreateIdentity(join(root, "config"));
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      await Deno.writeTextFile(join(ws, "p"), "a file\n");
      await Deno.writeTextFile(join(ws, "q.txt"), "q\n");
      const withFile = await createSnapshot(store, me, {});
      await Deno.remove(join(ws, "p"));
      await createSnapshot(store, me, {});
      await Deno.mkdir(join(ws, "p/empty"), { recursive: true });
      for (const force of [false, true]) {
        const plan = await restoreSnapshot(store, me, withFile.id, { force, dryRun: true });
        assertEquals(plan.plan?.conflicts, [{ path: "p", reason: "directory_in_the_way" }]);
        await assertRejects(
          () => restoreSnapshot(store, me, withFile.id, { force }),
          ConflictError,
          "in conflict",
        );
      }
      assert((await Deno.lstat(join(ws, "p/empty"))).isDirectory, "the directory was touched");
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

// ---------------------------------------------------------------------------
// planMove() on its own (no disk probe): the capture's skipped records

Deno.test("planMove() keeps a path the capture skipped: a write above or below it is a structural conflict without a disk probe", async () => {
  const { planMove } = await import("../../lib/workspace/plan.ts");
  const file = (path: string) => ({
    path,
    type: "file" as const,
    blob: "1".repeat(64),
    size: 1,
    mode: 0o644,
  });
  const empty = { version: 1 as const, entries: [], skipped: [] };
  const plan = planMove({
    base: null,
    disk: {
      version: 1 as const,
      entries: [],
      skipped: [{ path: "d/.env", reason: "secret" }, { path: "pipe", reason: "special_file" }],
    },
    target: { version: 1 as const, entries: [file("d"), file("pipe/x")], skipped: [] },
  });
  assertEquals(plan.writes, []);
  assertEquals(
    plan.conflicts.map((c) => [c.path, c.reason]),
    [["d", "directory_in_the_way"], ["pipe/x", "parent_in_the_way"]],
  );
  // Without the skipped records, both writes would go ahead.
  const bare = planMove({
    base: null,
    disk: empty,
    target: { ...empty, entries: [file("d"), file("pipe/x")] },
  });
  assertEquals(bare.writes.map((w) => w.path), ["d", "pipe/x"]);
});

Deno.test("planMove() with a disk probe: something unrecorded at a path the target creates is in the way, never overwritten", async () => {
  const { planMove } = await import("../../lib/workspace/plan.ts");
  const file = (path: string) => ({
    path,
    type: "file" as const,
    blob: "1".repeat(64),
    size: 1,
    mode: 0o644,
  });
  const empty = { version: 1 as const, entries: [], skipped: [] };
  const probe = (kinds: Record<string, "directory" | "other">) => ({
    kindAt: (path: string) => kinds[path] ?? "none" as const,
    blockedParent: () => null,
  });
  // An ignored file (not in the capture, not skipped by it) where the target creates "a".
  const plan = planMove({
    base: null,
    disk: empty,
    target: { ...empty, entries: [file("a"), file("b")] },
    probe: probe({ a: "other" }),
  });
  assertEquals(plan.writes.map((w) => w.path), ["b"]);
  assertEquals(plan.conflicts.map((c) => [c.path, c.reason]), [["a", "untracked_in_the_way"]]);
  // A directory holding something recorded stays, and is in the way too.
  const dir = planMove({
    base: null,
    disk: { ...empty, entries: [file("d/x")] },
    target: { ...empty, entries: [file("d/x"), file("d")] },
    probe: probe({ d: "directory" }),
  });
  assert(dir.conflicts.some((c) => c.path === "d"), JSON.stringify(dir.conflicts));
});
