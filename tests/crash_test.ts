// deno-lint-ignore-file no-console
/**
 * Crash tests of issue 3, "Time travel" (DESIGN §3 invariants 2 and 5):
 * `kill -9` of a real `ctxsnap restore` or `ctxsnap create` process at seeded
 * random instants, then `recover` / `recover --abort`, `verify --all` and a
 * byte-for-byte comparison of the workspace with the old or the new state.
 *
 * CTXSNAP_CRASH_ITERATIONS (default 6) sets the kills per test;
 * CTXSNAP_TEST_SEED replays a printed seed.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { assert, assertEquals } from "./_assert.ts";
import { CLI, type CliResult, type TempWorkspace, tempWorkspace } from "./_cli.ts";

// ---------------------------------------------------------------------------
// helpers

const SMALL_FILES = 1500;
const DIRS = 30;

function iterations(): number {
  const raw = Number(Deno.env.get("CTXSNAP_CRASH_ITERATIONS") ?? "6");
  return Number.isSafeInteger(raw) && raw > 0 ? raw : 6;
}

function seedFromEnv(): number {
  const raw = Deno.env.get("CTXSNAP_TEST_SEED");
  if (raw !== undefined && /^\d+$/.test(raw)) return Number(raw);
  return Math.floor(Math.random() * 2 ** 31);
}

/** mulberry32: a small seeded PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function expectCode(result: CliResult, code: number, what: string): void {
  if (result.code !== code) {
    throw new Error(
      `${what}: expected exit ${code}, got ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}

// deno-lint-ignore no-explicit-any
async function runJson(ws: TempWorkspace, args: string[], code = 0): Promise<any> {
  const result = await ws.run([...args, "--json"]);
  expectCode(result, code, args.join(" "));
  return result.json();
}

async function snapshotIds(ws: TempWorkspace): Promise<string[]> {
  return ((await runJson(ws, ["list", "--all"])).snapshots as { id: string }[]).map((s) => s.id)
    .sort();
}

interface Op {
  id: string;
  kind: string;
  status: string;
  target: string | null;
}

async function operations(ws: TempWorkspace): Promise<Op[]> {
  return (await runJson(ws, ["log", "--all"])).operations as Op[];
}

/** A fingerprint of everything below `root` except `.ctxsnap`: path → kind, mode, hash. */
async function fingerprint(root: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  async function walk(rel: string): Promise<void> {
    for await (const item of Deno.readDir(rel === "" ? root : join(root, rel))) {
      if (rel === "" && item.name === ".ctxsnap") continue;
      const childRel = rel === "" ? item.name : `${rel}/${item.name}`;
      const abs = join(root, childRel);
      const info = await Deno.lstat(abs);
      if (info.isSymlink) out.set(childRel, `symlink ${await Deno.readLink(abs)}`);
      else if (info.isDirectory) {
        out.set(childRel, "dir");
        await walk(childRel);
      } else {
        const hash = createHash("sha256").update(await Deno.readFile(abs)).digest("hex");
        out.set(childRel, `file ${(info.mode! & 0o777).toString(8)} ${hash}`);
      }
    }
  }
  await walk("");
  return out;
}

function fingerprintDiff(actual: Map<string, string>, expected: Map<string, string>): string[] {
  const problems: string[] = [];
  for (const path of new Set([...actual.keys(), ...expected.keys()])) {
    const a = actual.get(path);
    const e = expected.get(path);
    if (a !== e) problems.push(`${path}: is ${a ?? "absent"}, expected ${e ?? "absent"}`);
  }
  return problems.sort();
}

/** Spawns the real CLI (same config dir as the workspace), returning the child. */
function spawnCli(ws: TempWorkspace, args: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, ...args],
    cwd: ws.path,
    env: { CTXSNAP_CONFIG_DIR: ws.configDir, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
}

/** Runs the CLI and SIGKILLs it after `delayMs` (if still running). Returns whether it was killed. */
async function runAndKill(
  ws: TempWorkspace,
  args: string[],
  delayMs: number,
): Promise<{ killed: boolean; code: number }> {
  const child = spawnCli(ws, args);
  let killed = false;
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
      killed = true;
    } catch {
      // Already exited.
    }
  }, delayMs);
  const status = await child.status;
  clearTimeout(timer);
  return { killed: killed && status.signal === "SIGKILL", code: status.code };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/**
 * Writes state "A" or "B" of the large workspace: SMALL_FILES small files in
 * DIRS directories, a few larger ones (one above 1 MiB), modes and symlinks.
 * B edits most files, deletes some, adds others and flips some modes. Every
 * directory keeps a `.keep` file in both states, so no restore empties a
 * directory (see the BUG about emptied directories in restore_test.ts).
 */
async function writeState(root: string, state: "A" | "B"): Promise<void> {
  const enc = new TextEncoder();
  for (let d = 0; d < DIRS; d++) {
    await Deno.mkdir(join(root, `d${d}`), { recursive: true });
    await Deno.writeTextFile(join(root, `d${d}/.keep`), "keep\n");
  }
  for (let i = 0; i < SMALL_FILES; i++) {
    const file = join(root, `d${i % DIRS}/f${i}.txt`);
    const present = state === "A" ? i % 17 !== 0 : i % 13 !== 0;
    if (!present) {
      await Deno.remove(file).catch(() => {});
      continue;
    }
    const text = state === "B" && i % 5 !== 0 ? `state B, file ${i}\n` : `file ${i}\n`;
    await Deno.writeFile(file, enc.encode(text.repeat(1 + (i % 7))));
    await Deno.chmod(file, state === "B" && i % 50 === 0 ? 0o755 : 0o644);
  }
  for (const [name, size] of [["large1.bin", 200_000], ["large2.bin", 600_000]] as const) {
    const data = new Uint8Array(size);
    for (let i = 0; i < size; i++) data[i] = (i * (state === "A" ? 7 : 11)) & 0xff;
    await Deno.writeFile(join(root, name), data);
  }
  const huge = new Uint8Array(1024 * 1024 + 1000);
  for (let i = 0; i < huge.length; i++) huge[i] = (i * (state === "A" ? 3 : 5) + 1) & 0xff;
  await Deno.writeFile(join(root, "huge.bin"), huge);
  await Deno.remove(join(root, "link")).catch(() => {});
  await Deno.symlink(state === "A" ? "d1/f1.txt" : "d2/f2.txt", join(root, "link"));
}

// ---------------------------------------------------------------------------
// kill -9 during restore

/**
 * Kills `restore` at random instants. After each kill: if an operation is
 * still `applying`, `create` is refused (exit 5, naming `ctxsnap recover`)
 * and `recover` (alternately plain and `--abort`) must end in the new or the
 * old state; otherwise the workspace must be the old state (killed before the
 * operation was recorded) or the new one (the restore finished). Then
 * `verify --all` passes and every snapshot reported before is still there.
 *
 * @param ignoreTempFiles when true, stray `.ctxsnap-tmp-*` files left in the
 *   workspace by a killed write are ignored in the comparison.
 */
async function killRestoreLoop(ignoreTempFiles: boolean): Promise<void> {
  const seed = seedFromEnv();
  const rounds = iterations();
  console.log(`kill -9 during restore: CTXSNAP_TEST_SEED=${seed}, ${rounds} iterations`);
  const rand = prng(seed);
  const ws = await tempWorkspace({});
  try {
    expectCode(await ws.run(["init"]), 0, "init");
    await writeState(ws.path, "A");
    const fpA = await fingerprint(ws.path);
    const sA = (await runJson(ws, ["create", "-m", "state A"])).id as string;
    await writeState(ws.path, "B");
    const fpB = await fingerprint(ws.path);
    const sB = (await runJson(ws, ["create", "-m", "state B"])).id as string;
    assert(fingerprintDiff(fpA, fpB).length > 1000, "states A and B barely differ");

    // One uninterrupted restore, to learn how long one takes.
    const full = await timed(async () => {
      const r = await runJson(ws, ["restore", sA]);
      assertEquals(r.plan.conflicts, []);
    });
    const startup = await timed(async () => {
      expectCode(await ws.run(["--version"]), 0, "--version");
    });
    let current: "A" | "B" = "A";
    const compare = (what: string, expected: Map<string, string>, actual: Map<string, string>) => {
      let problems = fingerprintDiff(actual, expected);
      if (ignoreTempFiles) {
        problems = problems.filter((p) => !/(^|\/)\.ctxsnap-tmp-[^/]*: /.test(p));
      }
      assert(
        problems.length === 0,
        `${what} (seed ${seed}): ${problems.length} differences:\n  ${
          problems.slice(0, 15).join("\n  ")
        }`,
      );
    };
    compare("after the uninterrupted restore", fpA, await fingerprint(ws.path));

    const outcomes: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const target: "A" | "B" = current === "A" ? "B" : "A";
      const targetId = target === "A" ? sA : sB;
      const before = await snapshotIds(ws);
      const opsBefore = await operations(ws);
      // Mostly after start-up, so that most kills land inside the restore.
      const delay = Math.floor(startup * 0.5 + rand() * (full * 1.1 - startup * 0.5));
      const { killed, code } = await runAndKill(ws, ["restore", targetId], delay);
      if (!killed) expectCode({ code, stdout: "", stderr: "", json: () => null }, 0, "restore");

      const ops = await operations(ws);
      const fresh = ops.filter((o) => !opsBefore.some((b) => b.id === o.id));
      assert(
        fresh.every((o) =>
          o.kind === "restore" && (o.status === "applying" || o.status === "done")
        ),
        `unexpected operations after the kill: ${JSON.stringify(fresh)}`,
      );
      const applying = fresh.find((o) => o.status === "applying");
      let expected: "A" | "B";
      let outcome: string;
      if (applying !== undefined) {
        const refused = await ws.run(["create", "-m", "must be refused"]);
        expectCode(refused, 5, "create with an unresolved restore");
        assert(refused.stderr.includes("ctxsnap recover"), `no recover hint: ${refused.stderr}`);
        const otherRestore = await ws.run(["restore", current === "A" ? sA : sB]);
        expectCode(otherRestore, 5, "restore with an unresolved restore");
        // gc meanwhile must keep what the unresolved operation needs.
        expectCode(await ws.run(["gc"]), 0, "gc with an unresolved restore");
        const abort = round % 2 === 1;
        const recovered = await runJson(ws, abort ? ["recover", "--abort"] : ["recover"]);
        assertEquals(recovered.operation, applying.id);
        assertEquals(recovered.status, abort ? "aborted" : "done");
        const again = await runJson(ws, ["recover"]);
        assertEquals(again.operation, null, "a second recover found something to do");
        expected = abort ? current : target;
        outcome = abort ? "aborted" : "recovered";
      } else if (fresh.some((o) => o.status === "done")) {
        expected = target;
        outcome = "finished";
      } else {
        expected = current;
        outcome = "not started";
      }
      outcomes.push(`${delay}ms:${outcome}`);
      compare(
        `round ${round}, killed after ${delay} ms, ${outcome}`,
        expected === "A" ? fpA : fpB,
        await fingerprint(ws.path),
      );
      assertEquals(
        (await operations(ws)).filter((o) => o.status === "applying"),
        [],
        "an operation is still unresolved",
      );
      expectCode(await ws.run(["verify", "--all"]), 0, `verify --all after round ${round}`);
      const after = new Set(await snapshotIds(ws));
      const lost = before.filter((id) => !after.has(id));
      assertEquals(lost, [], "snapshots reported before the kill are gone");
      current = expected;
    }
    console.log(`outcomes: ${outcomes.join(", ")}`);
    // The store still works: a snapshot of the final state, and one more restore.
    const last = (await runJson(ws, ["create", "-m", "after the crashes"])).id as string;
    expectCode(await ws.run(["verify", last]), 0, "verify the last snapshot");
    await runJson(ws, ["restore", current === "A" ? sB : sA]);
    compare("after a final restore", current === "A" ? fpB : fpA, await fingerprint(ws.path));
  } finally {
    await ws.cleanup();
  }
}

Deno.test({
  name:
    "kill -9 at random points of a large restore, then recover or recover --abort, ends exactly in the old or the new state",
  fn: () => killRestoreLoop(false),
});

Deno.test("kill -9 at random points of a large restore, then recover or recover --abort, ends in the old or the new state (ignoring stray temp files); verify --all passes", async () => {
  await killRestoreLoop(true);
});

// ---------------------------------------------------------------------------
// kill -9 during create

Deno.test("kill -9 at random points of create leaves a store that verify --all passes, with every earlier snapshot present", async () => {
  const seed = seedFromEnv();
  const rounds = Math.max(2, Math.ceil(iterations() * 2 / 3));
  console.log(`kill -9 during create: CTXSNAP_TEST_SEED=${seed}, ${rounds} iterations`);
  const rand = prng(seed);
  const ws = await tempWorkspace({});
  try {
    expectCode(await ws.run(["init"]), 0, "init");
    await writeState(ws.path, "A");
    let full = 0;
    full = await timed(async () => {
      await runJson(ws, ["create", "-m", "first"]);
    });
    const outcomes: string[] = [];
    for (let round = 0; round < rounds; round++) {
      // New content each round, so the capture has real work to do.
      for (let i = round; i < SMALL_FILES; i += 3) {
        await Deno.writeTextFile(
          join(ws.path, `d${i % DIRS}/f${i}.txt`),
          `round ${round}, file ${i}\n`,
        );
      }
      await Deno.writeFile(
        join(ws.path, `d0/round${round}.bin`),
        new Uint8Array(1024 * 1024 + round + 1).fill(round + 1),
      );
      const before = await snapshotIds(ws);
      const delay = Math.floor(rand() * full * 1.3);
      const { killed, code } = await runAndKill(ws, ["create", "-m", `round ${round}`], delay);
      if (!killed) expectCode({ code, stdout: "", stderr: "", json: () => null }, 0, "create");
      const after = await snapshotIds(ws);
      const added = after.filter((id) => !before.includes(id));
      outcomes.push(`${delay}ms:${killed ? "killed" : "finished"}+${added.length}`);
      assertEquals(before.filter((id) => !after.includes(id)), [], "an earlier snapshot is gone");
      assert(added.length <= 1, `${added.length} snapshots appeared`);
      if (!killed) assertEquals(added.length, 1, "a finished create recorded no snapshot");
      expectCode(await ws.run(["verify", "--all"]), 0, `verify --all after round ${round}`);
      // The store is not wedged: the next create succeeds and chains onto the head.
      const next = await runJson(ws, ["create", "-m", `after round ${round}`]);
      assert(next.parent === null || after.includes(next.parent), "parent is not a known snapshot");
    }
    console.log(`outcomes: ${outcomes.join(", ")}`);
    expectCode(await ws.run(["gc"]), 0, "gc after the crashes");
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all after gc");
  } finally {
    await ws.cleanup();
  }
});
