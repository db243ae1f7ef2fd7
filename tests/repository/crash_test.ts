// deno-lint-ignore-file no-console
/**
 * Crash tests (docs/DESIGN.md §3 invariants 2 and 5), and `kill -9` of a real `ctxsnap restore`, `create`, `import`,
 * `forget` or `gc` process at seeded random instants, then `recover` /
 * `recover --abort`, `verify --all` and byte-for-byte comparisons of the
 * workspace or materialized snapshots with the old or the new state.
 *
 * CTXSNAP_CRASH_ITERATIONS (default 6) sets the kills per test (create: two
 * thirds of it, forget: twice it); CTXSNAP_TEST_SEED replays a printed seed.
 * Import, forget and gc are short next to Deno's start-up, so every other kill
 * of theirs is timed from the command's first write below the store.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type Identity, loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { publishToFile } from "../../lib/share/publish.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { forgetSnapshots, planForget } from "../../lib/history/forget.ts";
import { Store } from "../../lib/repository/store.ts";
import { registerStore } from "../../lib/repository/trust.ts";
import { assert, assertEquals } from "../_assert.ts";
import {
  cliCommand,
  type CliResult,
  expectCode,
  type TempWorkspace,
  tempWorkspace,
} from "../_cli.ts";
import { prng, seedFromEnv } from "../_util.ts";

// ---------------------------------------------------------------------------
// helpers

const SMALL_FILES = 1500;
const DIRS = 30;

function iterations(): number {
  const raw = Number(Deno.env.get("CTXSNAP_CRASH_ITERATIONS") ?? "6");
  return Number.isSafeInteger(raw) && raw > 0 ? raw : 6;
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
  const [command, ...argv] = cliCommand(args);
  return new Deno.Command(command, {
    args: argv,
    cwd: ws.path,
    env: {
      CTXSNAP_CONFIG_DIR: ws.configDir,
      NO_COLOR: "1",
      DENO_NO_UPDATE_CHECK: "1",
      CTXSNAP_DAEMON: "off",
    },
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
  // 2 MiB of compressible text that differs, so a restore between the states
  // inflates and hashes on the worker (lib/workspace/file_writes.ts).
  for (let j = 0; j < 4; j++) {
    const lines = Array.from({ length: 20_000 }, (_, k) => `state ${state} file ${j} line ${k}\n`);
    await Deno.writeTextFile(join(root, `text${j}.log`), lines.join("").slice(0, 512 * 1024));
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
    await writeTextLogs(ws.path, -1);
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
      await writeTextLogs(ws.path, round);
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

Deno.test("kill -9 at random points of a chunked capture of a 24 MiB file leaves a store that verify --all passes, and the next capture stores the file whole", async () => {
  const seed = seedFromEnv();
  const rounds = Math.max(2, Math.ceil(iterations() / 2));
  console.log(`kill -9 during a chunked capture: CTXSNAP_TEST_SEED=${seed}, ${rounds} iterations`);
  const rand = prng(seed);
  const ws = await tempWorkspace({});
  try {
    expectCode(await ws.run(["init"]), 0, "init");
    const noise = (round: number) => {
      const out = new Uint8Array(24 * 1024 * 1024);
      let x = (round + 1) * 2654435761 >>> 0;
      for (let i = 0; i < out.length; i++) {
        x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
        out[i] = x >>> 24;
      }
      return out;
    };
    await Deno.writeFile(join(ws.path, "large.bin"), noise(-1));
    const full = await timed(async () => {
      await runJson(ws, ["create", "-m", "first"]);
    });
    const outcomes: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const bytes = noise(round);
      await Deno.writeFile(join(ws.path, "large.bin"), bytes);
      const before = await snapshotIds(ws);
      const delay = Math.floor(rand() * full * 1.3);
      const { killed, code } = await runAndKill(ws, ["create", "-m", `round ${round}`], delay);
      if (!killed) expectCode({ code, stdout: "", stderr: "", json: () => null }, 0, "create");
      const after = await snapshotIds(ws);
      const added = after.filter((id) => !before.includes(id));
      outcomes.push(`${delay}ms:${killed ? "killed" : "finished"}+${added.length}`);
      assertEquals(before.filter((id) => !after.includes(id)), [], "an earlier snapshot is gone");
      assert(added.length <= 1, `${added.length} snapshots appeared`);
      expectCode(await ws.run(["verify", "--all"]), 0, `verify --all after round ${round}`);
      const next = await runJson(ws, ["create", "-m", `after round ${round}`, "--allow-unchanged"]);
      const dest = join(ws.root, `out-${round}`);
      expectCode(await ws.run(["materialize", next.id, dest]), 0, "materialize the next capture");
      assert(
        bytesEqual(await Deno.readFile(join(dest, "large.bin")), bytes),
        `round ${round}: the large file does not come back byte for byte`,
      );
      await Deno.remove(dest, { recursive: true });
    }
    console.log(`outcomes: ${outcomes.join(", ")}`);
    expectCode(await ws.run(["gc"]), 0, "gc after the crashes");
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all after gc");
  } finally {
    await ws.cleanup();
  }
});

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * 3 MiB of new compressible inline content for `round`, so that a capture
 * compresses on the worker (lib/repository/zlib_pool.ts) and a kill can land then.
 */
async function writeTextLogs(root: string, round: number): Promise<void> {
  for (let j = 0; j < 6; j++) {
    const lines = Array.from({ length: 20_000 }, (_, k) => `round ${round} file ${j} line ${k}\n`);
    await Deno.writeTextFile(join(root, `d1/text${j}.log`), lines.join("").slice(0, 512 * 1024));
  }
}

// ---------------------------------------------------------------------------
// helpers for import, forget and gc

const MIB = 1024 * 1024;

function storeDir(ws: TempWorkspace): string {
  return join(ws.path, ".ctxsnap");
}

/** Opens the workspace's store in this process, with the workspace's signing identity. */
async function withStore<T>(
  ws: TempWorkspace,
  fn: (store: Store, me: Identity) => Promise<T>,
  init = false,
): Promise<T> {
  const me = await loadOrCreateIdentity(ws.configDir);
  const store = init ? Store.init(storeDir(ws), ws.path) : Store.open(storeDir(ws));
  // Created here as `ctxsnap init` would: registered, so the CLI runs below may use it.
  if (init) registerStore(ws.configDir, storeDir(ws), "init");
  try {
    return await fn(store, me);
  } finally {
    store.close();
  }
}

/** A one-line stand-in for a CliResult, to check a raw exit code with expectCode. */
function exited(code: number): CliResult {
  return { code, stdout: "", stderr: "", json: () => null };
}

/** Bytes of a deterministic pseudo-random pattern (incompressible enough to stay distinct). */
function pattern(size: number, salt: number): Uint8Array {
  const data = new Uint8Array(size);
  const rand = prng(salt);
  for (let i = 0; i < size; i += 4) {
    const word = Math.floor(rand() * 2 ** 32);
    data[i] = word & 0xff;
    if (i + 1 < size) data[i + 1] = (word >>> 8) & 0xff;
    if (i + 2 < size) data[i + 2] = (word >>> 16) & 0xff;
    if (i + 3 < size) data[i + 3] = (word >>> 24) & 0xff;
  }
  return data;
}

/**
 * Problems of the store's object files against the objects table: a file in
 * `objects/` without a row (or named wrongly, or for an inline row), a
 * file-backed row without its file, and anything left in `tmp/` but `stamp`.
 * Call it only when no process has the store open.
 */
async function objectFileProblems(ws: TempWorkspace): Promise<string[]> {
  const dir = storeDir(ws);
  const db = new DatabaseSync(join(dir, "index.db"), { readOnly: true });
  let rows: Map<string, string>;
  try {
    rows = new Map(
      (db.prepare("SELECT id, encoding FROM objects").all() as { id: string; encoding: string }[])
        .map((r) => [r.id, r.encoding]),
    );
  } finally {
    db.close();
  }
  const problems: string[] = [];
  const files = new Set<string>();
  for await (const prefix of Deno.readDir(join(dir, "objects"))) {
    if (!prefix.isDirectory) {
      problems.push(`objects/${prefix.name}: not a prefix directory`);
      continue;
    }
    for await (const item of Deno.readDir(join(dir, "objects", prefix.name))) {
      const rel = `objects/${prefix.name}/${item.name}`;
      if (!/^[0-9a-f]{64}$/.test(item.name) || !item.name.startsWith(prefix.name)) {
        problems.push(`${rel}: not an object file name`);
        continue;
      }
      files.add(item.name);
      const encoding = rows.get(item.name);
      if (encoding === undefined) problems.push(`${rel}: file without an objects row`);
      else if (encoding !== "file") problems.push(`${rel}: file for an inline (${encoding}) row`);
    }
  }
  for (const [id, encoding] of rows) {
    if (encoding === "file" && !files.has(id)) problems.push(`${id}: file-backed row, no file`);
  }
  for await (const item of Deno.readDir(join(dir, "tmp"))) {
    if (item.name !== "stamp") problems.push(`tmp/${item.name}: left over`);
  }
  return problems.sort();
}

/** Materializes snapshot `id` of `ws` into a fresh directory and compares it with `expected`. */
async function assertMaterializes(
  ws: TempWorkspace,
  id: string,
  expected: Map<string, string>,
  what: string,
): Promise<void> {
  const dest = join(ws.root, `materialized-${crypto.randomUUID()}`);
  try {
    expectCode(await ws.run(["materialize", id, dest]), 0, `materialize ${what}`);
    const problems = fingerprintDiff(await fingerprint(dest), expected);
    assert(
      problems.length === 0,
      `${what}: ${problems.length} differences:\n  ${problems.slice(0, 15).join("\n  ")}`,
    );
  } finally {
    await Deno.remove(dest, { recursive: true }).catch(() => {});
  }
}

/** A kill delay between 40 % and 110 % of one unkilled run (start-up included). */
function killDelay(rand: () => number, full: number): number {
  return Math.floor(full * (0.4 + rand() * 0.7));
}

/**
 * Runs the CLI and SIGKILLs it `delayMs` after its first write below the
 * store directory (`null`: never), so that kills land in the command's work
 * rather than in Deno's start-up, which takes most of a short command's time.
 * Also returns `work`: the milliseconds from that first write to the exit.
 */
async function runAndKillInWork(
  ws: TempWorkspace,
  args: string[],
  delayMs: number | null,
): Promise<{ killed: boolean; code: number; work: number }> {
  const watcher = Deno.watchFs(storeDir(ws), { recursive: true });
  const child = spawnCli(ws, args);
  let killed = false;
  let firstWrite: number | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const armed = (async () => {
    for await (const event of watcher) {
      if (event.kind !== "create" && event.kind !== "modify") continue;
      firstWrite = performance.now();
      if (delayMs !== null) {
        timer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
            killed = true;
          } catch {
            // Already exited.
          }
        }, delayMs);
      }
      return;
    }
  })();
  const status = await child.status;
  const end = performance.now();
  clearTimeout(timer);
  watcher.close();
  await armed;
  return {
    killed: killed && status.signal === "SIGKILL",
    code: status.code,
    work: firstWrite === null ? 0 : end - firstWrite,
  };
}

/**
 * One seeded kill of `args`: even rounds count the delay from the spawn (40 %
 * to 110 % of the measured run `full`), odd rounds from the command's first
 * store write (0 to 110 % of the measured `work` after it).
 */
async function seededKill(
  ws: TempWorkspace,
  args: string[],
  rand: () => number,
  round: number,
  measured: { full: number; work: number },
): Promise<{ killed: boolean; code: number; delay: string }> {
  if (round % 2 === 0) {
    const delay = killDelay(rand, measured.full);
    return { ...await runAndKill(ws, args, delay), delay: `${delay}ms` };
  }
  const delay = Math.floor(rand() * measured.work * 1.1);
  return { ...await runAndKillInWork(ws, args, delay), delay: `write+${delay}ms` };
}

/** Runs `args` unkilled, timing the whole run and the work after the first store write. */
async function measure(
  ws: TempWorkspace,
  args: string[],
): Promise<{ full: number; work: number }> {
  const start = performance.now();
  const { code, work } = await runAndKillInWork(ws, args, null);
  const full = performance.now() - start;
  expectCode(exited(code), 0, `uninterrupted ${args.join(" ")}`);
  assert(work > 0, `${args.join(" ")} wrote nothing below the store`);
  return { full, work };
}

// ---------------------------------------------------------------------------
// kill -9 during import

const IMPORT_FILES = 800;

/** Variant `v` of a workspace of IMPORT_FILES small files and two files above 1 MiB. */
async function writeImportWorkspace(root: string, v: number): Promise<void> {
  for (let d = 0; d < 20; d++) await Deno.mkdir(join(root, `d${d}`), { recursive: true });
  for (let i = 0; i < IMPORT_FILES; i++) {
    const text = (v > 0 && i % 3 === 0 ? `variant ${v}, file ${i}\n` : `file ${i}\n`)
      .repeat(1 + (i % 5));
    await Deno.writeTextFile(join(root, `d${i % 20}/g${i}.txt`), text);
  }
  await Deno.writeFile(join(root, "big1.bin"), pattern(MIB + 1000, 1000 + v));
  await Deno.writeFile(join(root, "big2.bin"), pattern(MIB + 5000, 2000 + v));
}

Deno.test("kill -9 at random points of import of a large bundle leaves it fully present or absent; verify --all --trust passes; gc leaves no stray object file", async () => {
  const seed = seedFromEnv();
  const rounds = iterations();
  console.log(`kill -9 during import: CTXSNAP_TEST_SEED=${seed}, ${rounds} iterations`);
  const rand = prng(seed);
  const alice = await tempWorkspace({});
  const bob = await tempWorkspace({});
  try {
    // Alice: two snapshots of a large workspace, published as one bundle with history.
    await writeImportWorkspace(alice.path, 0);
    await writeImportWorkspace(alice.path, 1);
    const fpPrimary = await fingerprint(alice.path);
    const { bundle, ids, primary, key } = await withStore(alice, async (store, me) => {
      await writeImportWorkspace(alice.path, 0);
      const first = await createSnapshot(store, me, { reason: "alice 0" });
      await writeImportWorkspace(alice.path, 1);
      const second = await createSnapshot(store, me, { reason: "alice 1" });
      const file = join(alice.root, "alice.ctxbundle");
      const published = await publishToFile(store, second.id, {
        file,
        withWorkspace: true,
        history: "all",
      });
      assertEquals([...published.snapshots].sort(), [first.id, second.id].sort());
      return {
        bundle: file,
        ids: [first.id, second.id].sort(),
        primary: second.id,
        key: me.publicKeyHex,
      };
    }, true);
    assertEquals(fingerprintDiff(await fingerprint(alice.path), fpPrimary), []);

    /** A fresh store for Bob holding one snapshot of his own. */
    const freshBob = async (): Promise<string> => {
      await Deno.remove(storeDir(bob), { recursive: true }).catch(() => {});
      return await withStore(bob, async (store, me) => {
        return (await createSnapshot(store, me, { reason: "bob's own" })).id;
      }, true);
    };
    const importArgs = ["import", bundle, "--trust", key];

    // One uninterrupted import, to learn how long one takes.
    await freshBob();
    const measured = await measure(bob, importArgs);
    assertEquals((await snapshotIds(bob)).filter((id) => ids.includes(id)), ids);
    const fileBlobs = await withStore(bob, (store) =>
      Promise.resolve(
        (store.stmt("SELECT count(*) AS n FROM objects WHERE encoding = 'chunks'").get() as {
          n: number;
        }).n,
      ));
    assert(fileBlobs >= 4, `only ${fileBlobs} chunked blobs were imported`);

    const outcomes: string[] = [];
    for (let round = 0; round < rounds; round++) {
      const own = await freshBob();
      const { killed, code, delay } = await seededKill(bob, importArgs, rand, round, measured);
      if (!killed) expectCode(exited(code), 0, "import");
      const what = `round ${round}, kill after ${delay} (seed ${seed})`;

      expectCode(
        await bob.run(["verify", "--all", "--trust", key]),
        0,
        `verify --all --trust after the kill, ${what}`,
      );
      const after = await snapshotIds(bob);
      assert(after.includes(own), `${what}: Bob's own snapshot is gone`);
      const present = ids.filter((id) => after.includes(id));
      assert(
        present.length === 0 || present.length === ids.length,
        `${what}: a partial import: ${present.length} of ${ids.length} snapshots present`,
      );
      if (!killed) assertEquals(present, ids, `${what}: a finished import is not present`);
      assertEquals(after.length, 1 + present.length, `${what}: unexpected snapshots`);
      const again = await runJson(bob, [...importArgs]);
      if (present.length === 0) {
        assertEquals([...again.imported].sort(), ids, `${what}: the second import`);
        outcomes.push(`${delay}:absent`);
      } else {
        assertEquals(again.already_present, true, `${what}: the second import`);
        outcomes.push(`${delay}:${killed ? "present" : "finished"}`);
      }
      await assertMaterializes(bob, primary, fpPrimary, `the imported primary, ${what}`);
      expectCode(await bob.run(["gc"]), 0, `gc, ${what}`);
      assertEquals(await objectFileProblems(bob), [], `${what}: object files after gc`);
      expectCode(
        await bob.run(["verify", "--all", "--trust", key]),
        0,
        `verify --all --trust after gc, ${what}`,
      );
    }
    console.log(
      `one run: ${Math.round(measured.full)} ms, ${
        Math.round(measured.work)
      } ms after its first store write; outcomes: ${outcomes.join(", ")}`,
    );
  } finally {
    await alice.cleanup();
    await bob.cleanup();
  }
});

// ---------------------------------------------------------------------------
// kill -9 during forget

Deno.test("kill -9 at random points of forget --keep-last 1 forgets all or none of the selection and nothing else; verify --all passes", async () => {
  const seed = seedFromEnv();
  const rounds = iterations() * 2;
  const perRound = 200;
  console.log(`kill -9 during forget: CTXSNAP_TEST_SEED=${seed}, ${rounds} iterations`);
  const rand = prng(seed);
  const ws = await tempWorkspace();
  try {
    /** Adds `n` no-workspace snapshots to main (in one transaction) and returns the selection. */
    const grow = (n: number): Promise<{ selected: string[]; all: string[] }> =>
      withStore(ws, async (store, me) => {
        await store.transactionAsync("setup", async () => {
          for (let i = 0; i < n; i++) {
            await createSnapshot(store, me, {
              reason: `filler ${i}`,
              workspace: false,
              allowUnchanged: true,
            });
          }
        });
        const all = (store.stmt("SELECT id FROM snapshots").all() as { id: string }[]).map((r) =>
          r.id
        ).sort();
        // The plan also names the already-forgotten parent of the oldest
        // retained snapshot (branchChain follows a dangling parent id); only
        // rows that exist can be forgotten.
        const selected = planForget(store, { keepLast: 1 }).filter((id) => all.includes(id));
        return { selected, all };
      });
    // Another branch with a workspace snapshot: never selected by keep-last on main.
    const side = await withStore(ws, async (store, me) => {
      const made = [];
      for (let i = 0; i < 3; i++) {
        made.push((await createSnapshot(store, me, { reason: `side ${i}`, branch: "side" })).id);
      }
      return made;
    }, true);

    // One uninterrupted forget, to learn how long one takes.
    let plan = await grow(perRound);
    const measured = await measure(ws, ["forget", "--keep-last", "1"]);
    let current = await snapshotIds(ws);
    assertEquals(plan.selected.filter((id) => current.includes(id)), [], "forget left some");
    assert(side.every((id) => current.includes(id)), "forget removed a side snapshot");

    const outcomes: string[] = [];
    for (let round = 0; round < rounds; round++) {
      // Top up after a completed forget; after a kill that forgot nothing,
      // the same selection is tried again.
      plan = await grow(round === 0 || outcomes.at(-1)?.endsWith("all") ? perRound : 0);
      assert(plan.selected.length >= perRound, `only ${plan.selected.length} selected`);
      const keep = plan.all.filter((id) => !plan.selected.includes(id));
      const forgetsBefore = (await operations(ws)).filter((o) => o.kind === "forget").length;
      const { killed, code, delay } = await seededKill(
        ws,
        ["forget", "--keep-last", "1"],
        rand,
        round,
        measured,
      );
      if (!killed) expectCode(exited(code), 0, "forget");
      const what = `round ${round}, kill after ${delay} (seed ${seed})`;

      expectCode(await ws.run(["verify", "--all"]), 0, `verify --all, ${what}`);
      current = await snapshotIds(ws);
      const lost = keep.filter((id) => !current.includes(id));
      assertEquals(lost, [], `${what}: snapshots not selected are gone`);
      const gone = plan.selected.filter((id) => !current.includes(id));
      assert(
        gone.length === 0 || gone.length === plan.selected.length,
        `${what}: a partial forget: ${gone.length} of ${plan.selected.length} gone (${
          gone.map((id) => `${id.slice(0, 12)} at ${plan.selected.indexOf(id)}`).join(", ")
        }); outcomes ${outcomes.join(", ")}; operations ${
          JSON.stringify((await operations(ws)).slice(-4))
        }`,
      );
      if (!killed) assertEquals(gone.length, plan.selected.length, `${what}: finished forget`);
      const forgets = (await operations(ws)).filter((o) => o.kind === "forget");
      assert(
        forgets.every((o) => o.status === "done"),
        `${what}: forget operations: ${JSON.stringify(forgets)}`,
      );
      assertEquals(
        forgets.length - forgetsBefore,
        gone.length > 0 ? 1 : 0,
        `${what}: forget operations recorded`,
      );
      outcomes.push(
        `${delay}:${killed ? "killed" : "finished"}+${gone.length > 0 ? "all" : "none"}`,
      );
    }
    console.log(
      `one run: ${Math.round(measured.full)} ms, ${
        Math.round(measured.work)
      } ms after its first store write; outcomes: ${outcomes.join(", ")}`,
    );
    // The store still works: create, forget and gc.
    await runJson(ws, ["create", "-m", "after the crashes", "--no-workspace"]);
    expectCode(await ws.run(["forget", "--keep-last", "1"]), 0, "a final forget");
    expectCode(await ws.run(["gc"]), 0, "gc after the crashes");
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all at the end");
  } finally {
    await ws.cleanup();
  }
});

// ---------------------------------------------------------------------------
// kill -9 during gc

const GC_SMALL = 300;
const GC_GARBAGE_SNAPSHOTS = 3;
const GC_BIG_PER_SNAPSHOT = 8;

Deno.test("kill -9 at random points of gc keeps every retained snapshot materializing byte for byte; verify --all passes; a second gc leaves no object file without a row", async () => {
  const seed = seedFromEnv();
  const rounds = iterations();
  console.log(`kill -9 during gc: CTXSNAP_TEST_SEED=${seed}, ${rounds} iterations`);
  const rand = prng(seed);
  const ws = await tempWorkspace({});
  try {
    const writeSmall = async (tag: string, every: number) => {
      for (let d = 0; d < 10; d++) await Deno.mkdir(join(ws.path, `s${d}`), { recursive: true });
      for (let i = 0; i < GC_SMALL; i += every) {
        await Deno.writeTextFile(join(ws.path, `s${i % 10}/f${i}.txt`), `${tag}, file ${i}\n`);
      }
    };
    // Two retained snapshots on main, sharing most small files, each with big files.
    const retained = new Map<string, Map<string, string>>();
    await writeSmall("kept", 1);
    await Deno.writeFile(join(ws.path, "kept1.bin"), pattern(MIB + 100, 1));
    const fp1 = await fingerprint(ws.path);
    const first = await withStore(ws, async (store, me) => {
      return (await createSnapshot(store, me, { reason: "kept 1" })).id;
    }, true);
    retained.set(first, fp1);
    await writeSmall("kept second", 4);
    await Deno.writeFile(join(ws.path, "kept2.bin"), pattern(MIB + 200, 2));
    const fp2 = await fingerprint(ws.path);
    const second = await withStore(ws, async (store, me) => {
      return (await createSnapshot(store, me, { reason: "kept 2" })).id;
    });
    retained.set(second, fp2);

    let salt = 100;
    /**
     * Creates garbage: GC_GARBAGE_SNAPSHOTS snapshots on branch `scratch`,
     * each with new small files and GC_BIG_PER_SNAPSHOT new files above
     * 1 MiB (sharing the rest with the retained ones), then forgets the
     * branch. Restores the workspace to the second retained state.
     */
    const makeGarbage = async (round: number): Promise<void> => {
      await withStore(ws, async (store, me) => {
        for (let g = 0; g < GC_GARBAGE_SNAPSHOTS; g++) {
          await writeSmall(`garbage ${round}.${g}`, 3);
          for (let b = 0; b < GC_BIG_PER_SNAPSHOT; b++) {
            await Deno.writeFile(join(ws.path, `junk${b}.bin`), pattern(MIB + 300 + b, salt++));
          }
          await createSnapshot(store, me, { reason: `garbage ${round}.${g}`, branch: "scratch" });
        }
        const doomed = planForget(store, { branch: "scratch" });
        assertEquals(doomed.length, GC_GARBAGE_SNAPSHOTS, "garbage selection");
        const session =
          (store.stmt("SELECT session FROM snapshots WHERE id = ?").get(doomed[0]!) as {
            session: string;
          }).session;
        forgetSnapshots(store, doomed, { deleteBranch: { session, branch: "scratch" } });
      });
      for (let b = 0; b < GC_BIG_PER_SNAPSHOT; b++) {
        await Deno.remove(join(ws.path, `junk${b}.bin`));
      }
      await writeSmall("kept", 1);
      await writeSmall("kept second", 4);
      assertEquals(fingerprintDiff(await fingerprint(ws.path), fp2), [], "workspace reset");
      // The last garbage capture was the workspace baseline (gc keeps that): a
      // checkpoint of the reset workspace (unchanged since "kept 2": nothing is
      // added) moves the baseline back.
      await withStore(ws, async (store, me) => {
        const made = await createSnapshot(store, me, { reason: "reset" });
        assertEquals([made.created, made.id], [false, second], "the reset workspace");
      });
    };

    // One uninterrupted gc, to learn how long one takes.
    await makeGarbage(-1);
    const fileBacked = () =>
      withStore(ws, (store) =>
        Promise.resolve(
          (store.stmt("SELECT count(*) AS n FROM objects WHERE encoding = 'chunks'").get() as {
            n: number;
          }).n,
        ));
    const big = await fileBacked();
    const measured = await measure(ws, ["gc"]);
    const freed = big - await fileBacked();
    assert(
      freed >= GC_GARBAGE_SNAPSHOTS * GC_BIG_PER_SNAPSHOT,
      `gc freed only ${freed} chunked blobs`,
    );
    assertEquals(await objectFileProblems(ws), [], "object files after an uninterrupted gc");

    const outcomes: string[] = [];
    for (let round = 0; round < rounds; round++) {
      await makeGarbage(round);
      const before = await snapshotIds(ws);
      const gcsBefore = (await operations(ws)).filter((o) => o.kind === "gc").length;
      const { killed, code, delay } = await seededKill(ws, ["gc"], rand, round, measured);
      if (!killed) expectCode(exited(code), 0, "gc");
      const what = `round ${round}, kill after ${delay} (seed ${seed})`;

      expectCode(await ws.run(["verify", "--all"]), 0, `verify --all, ${what}`);
      // Where the kill landed: before the rows were deleted, between the two
      // transactions (object files without rows), or after the sweep.
      const gcs = (await operations(ws)).filter((o) => o.kind === "gc");
      assert(
        gcs.every((o) => o.status === "done"),
        `${what}: gc operations ${JSON.stringify(gcs)}`,
      );
      const strays = (await objectFileProblems(ws)).filter((p) =>
        p.includes("without an objects row")
      );
      outcomes.push(
        `${delay}:${killed ? "killed" : "finished"}+${
          gcs.length === gcsBefore ? "none" : strays.length > 0 ? `${strays.length} strays` : "all"
        }`,
      );
      if (!killed) assertEquals(strays, [], `${what}: a finished gc left stray files`);
      assertEquals(await snapshotIds(ws), before, `${what}: snapshots changed`);
      for (const [id, fp] of retained) {
        await assertMaterializes(ws, id, fp, `retained ${id.slice(0, 12)}, ${what}`);
      }
      const again = await runJson(ws, ["gc"]);
      if (!killed) assertEquals([again.trees, again.blobs], [0, 0], `${what}: second gc`);
      assertEquals(await objectFileProblems(ws), [], `${what}: object files after a second gc`);
      expectCode(await ws.run(["verify", "--all"]), 0, `verify --all after gc, ${what}`);
    }
    console.log(
      `one run: ${Math.round(measured.full)} ms, ${
        Math.round(measured.work)
      } ms after its first store write; outcomes: ${outcomes.join(", ")}`,
    );
  } finally {
    await ws.cleanup();
  }
});

Deno.test("a read-only command recovers the index after a writer was killed mid-transaction", async () => {
  const ws = await tempWorkspace();
  try {
    expectCode(await ws.run(["init"]), 0, "init");
    expectCode(await ws.run(["create", "-m", "before"]), 0, "create");
    const db = join(ws.path, ".ctxsnap", "index.db");
    // A writer dies mid-transaction, leaving a hot journal to roll back.
    const script = `
      import { DatabaseSync } from "node:sqlite";
      const db = new DatabaseSync(${JSON.stringify(db)});
      // As the index rests between commands: rollback-journal mode.
      db.exec("PRAGMA journal_mode = DELETE");
      db.exec("PRAGMA cache_size = 5"); // spill uncommitted pages: a hot journal
      for (let i = 0; i < 20; i++) db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").run("c" + i, "y".repeat(3000));
      db.exec("BEGIN IMMEDIATE");
      for (let i = 0; i < 400; i++) db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").run("k" + i, "x".repeat(3000));
      console.log("ready");
      await new Promise(() => {});
    `;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["eval", script],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const reader = child.stdout.getReader();
    await reader.read(); // "ready"
    child.kill("SIGKILL");
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all after a killed writer");
    expectCode(await ws.run(["list"]), 0, "list after a killed writer");
  } finally {
    await ws.cleanup();
  }
});
