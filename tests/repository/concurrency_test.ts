// deno-lint-ignore-file no-console
/**
 * Concurrency tests (docs/DESIGN.md §3 invariants 2–4, §7 exit 6):
 * several real `ctxsnap` processes creating, listing, forgetting and
 * collecting on one store at once, and a store whose write lock is held by
 * another process reported as busy (exit 6 with a hint) only after the busy
 * timeout.
 *
 * CTXSNAP_RACE_ITERATIONS (default 15) sets how many snapshots each creator
 * attempts.
 *
 * @module
 */
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../_assert.ts";
import type { CliResult, TempWorkspace } from "../_cli.ts";
import { expectCode as expectExit, tempWorkspace, withStore } from "../_cli.ts";

function iterations(): number {
  const raw = Number(Deno.env.get("CTXSNAP_RACE_ITERATIONS") ?? "15");
  return Number.isSafeInteger(raw) && raw > 0 ? raw : 15;
}

function describe(args: string[], result: CliResult): string {
  return `ctxsnap ${
    args.join(" ")
  } → exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
}

function expectCode(args: string[], result: CliResult, code: number): void {
  if (result.code !== code) throw new Error(`expected exit ${code}: ${describe(args, result)}`);
}

/** A failure must be a one-line diagnosis with a hint, never a crash. */
function assertCleanError(args: string[], result: CliResult): void {
  const text = describe(args, result);
  assert(result.stderr.includes("ctxsnap: error:"), `no "ctxsnap: error:" line: ${text}`);
  assert(result.stderr.includes("ctxsnap: hint:"), `no "ctxsnap: hint:" line: ${text}`);
  assert(!/Uncaught|\n\s+at /.test(result.stderr), `stack trace on stderr: ${text}`);
}

/** Exit 0, or exit 6 reported cleanly; anything else fails the test. */
function expectOkOrBusy(args: string[], result: CliResult): boolean {
  if (result.code === 0) return true;
  if (result.code === 6) {
    assertCleanError(args, result);
    return false;
  }
  throw new Error(`expected exit 0 or 6: ${describe(args, result)}`);
}

for (const busyMs of ["20000", "20"]) {
  Deno.test({
    name:
      `concurrency: creators, a lister and a forget+gc loop share one store (busy timeout ${busyMs} ms); nothing is lost`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const ws = await tempWorkspace();
      try {
        expectCode(["init"], await ws.run(["init"]), 0);
        const first = await ws.run(["create", "-m", "seed", "--json"]);
        expectCode(["create"], first, 0);
        const reported = new Set<string>([first.json().id as string]);
        const forgotten = new Set<string>();
        const busy = { create: 0, list: 0, forget: 0, gc: 0 };
        const n = iterations();
        let creatorsDone = false;

        // 20 s: nobody should time out; 20 ms: many runs hit exit 6, which must be clean.
        const env = { CTXSNAP_BUSY_TIMEOUT_MS: busyMs };
        const creator = async (who: number, branch: string | null) => {
          for (let k = 0; k < n; k++) {
            await Deno.writeTextFile(
              join(ws.path, `creator-${who}.txt`),
              `creator ${who} round ${k}\n`,
            );
            // Another creator may have captured this change already: record anyway.
            const args = ["create", "-m", `c${who}-${k}`, "--allow-unchanged", "--json"];
            if (branch !== null) args.push("--branch", branch);
            const result = await ws.run(args, { env, timeoutMs: 120_000, mode: "subprocess" });
            if (expectOkOrBusy(args, result)) {
              const out = result.json();
              assertEquals(out.created, true, describe(args, result));
              reported.add(out.id as string);
            } else busy.create++;
          }
        };
        const lister = async () => {
          while (!creatorsDone) {
            const args = ["list", "--all", "--json"];
            const result = await ws.run(args, { env, timeoutMs: 120_000, mode: "subprocess" });
            if (expectOkOrBusy(args, result)) {
              assert(Array.isArray(result.json().snapshots), describe(args, result));
            } else busy.list++;
          }
        };
        const collector = async () => {
          while (!creatorsDone) {
            const forgetArgs = ["forget", "--keep-last", "2", "--json"];
            const f = await ws.run(forgetArgs, { env, timeoutMs: 120_000, mode: "subprocess" });
            if (expectOkOrBusy(forgetArgs, f)) {
              for (const id of f.json().forgotten as string[]) forgotten.add(id);
            } else busy.forget++;
            const gcArgs = ["gc", "--json"];
            const g = await ws.run(gcArgs, { env, timeoutMs: 120_000, mode: "subprocess" });
            if (!expectOkOrBusy(gcArgs, g)) busy.gc++;
          }
        };

        const started = performance.now();
        const background = [lister(), collector()];
        try {
          await Promise.all([creator(1, null), creator(2, null), creator(3, "side")]);
        } finally {
          creatorsDone = true;
          await Promise.allSettled(background);
        }
        await Promise.all(background); // surface their assertion failures
        console.log(
          `  ${reported.size} snapshots reported, ${forgotten.size} forgotten, busy ${
            JSON.stringify(busy)
          }, ${Math.round(performance.now() - started)} ms`,
        );

        // No reported snapshot is missing unless a forget removed it.
        const list = await ws.run(["list", "--all", "--json"]);
        expectCode(["list"], list, 0);
        const present = new Set((list.json().snapshots as { id: string }[]).map((s) => s.id));
        for (const id of reported) {
          assert(
            present.has(id) || forgotten.has(id),
            `snapshot ${id} was reported by create, never forgotten, and is gone`,
          );
        }
        for (const id of forgotten) assert(!present.has(id), `forgotten ${id} is still listed`);
        // Every snapshot in the store was reported by someone.
        for (const id of present) assert(reported.has(id), `unexpected snapshot ${id}`);

        // Heads are consistent: every branch head exists; the side branch kept its work.
        const branches = await ws.run(["branch", "--json"]);
        expectCode(["branch"], branches, 0);
        const heads = branches.json().branches as { name: string; head: string | null }[];
        assert(heads.some((b) => b.name === "side"), JSON.stringify(heads));
        for (const b of heads) {
          assert(b.head !== null && present.has(b.head), `head of ${b.name} is ${b.head}`);
        }
        const verify = await ws.run(["verify", "--all", "--json"]);
        expectCode(["verify", "--all"], verify, 0);
        assertEquals(verify.json().ok, true);
        // Everything still restores: the head's content is all there after gc.
        const gc = await ws.run(["gc", "--json"]);
        expectCode(["gc"], gc, 0);
        expectCode(["verify", "--all"], await ws.run(["verify", "--all"]), 0);
      } finally {
        await ws.cleanup();
      }
    },
  });
}

async function timed(ws: TempWorkspace, args: string[], env: Record<string, string>) {
  const started = performance.now();
  const result = await ws.run(args, { env, mode: "subprocess" });
  return { result, ms: performance.now() - started };
}

// Both journal modes: at rest the index is in rollback-journal mode (Store.close
// leaves it so), and switching to WAL needs a lock SQLite will not wait for, so
// the store retries that switch until the busy deadline.
for (const mode of ["rollback journal", "WAL"] as const) {
  Deno.test({
    name: `concurrency: a held write lock (${mode}) is exit 6 with a hint, after the timeout`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const ws = await tempWorkspace();
      try {
        expectCode(["init"], await ws.run(["init"]), 0);
        expectCode(["create"], await ws.run(["create", "-m", "before"]), 0);
        const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"));
        let held = true;
        try {
          if (mode === "WAL") db.exec("PRAGMA journal_mode = WAL");
          db.exec("BEGIN IMMEDIATE");

          const args = ["create", "-m", "blocked"];
          const fast = await timed(ws, args, { CTXSNAP_BUSY_TIMEOUT_MS: "300" });
          expectCode(args, fast.result, 6);
          assertCleanError(args, fast.result);
          assert(fast.ms >= 250, `busy reported after ${fast.ms} ms, before the 300 ms timeout`);

          // A longer timeout is honoured too (CLI start-up alone is well under this).
          const slow = await timed(ws, args, { CTXSNAP_BUSY_TIMEOUT_MS: "1500" });
          expectCode(args, slow.result, 6);
          assertCleanError(args, slow.result);
          assert(slow.ms >= 1500, `busy reported after ${slow.ms} ms, before the 1500 ms timeout`);

          // Readers are not blocked by a writer.
          const list = await ws.run(["list", "--json"], {
            env: { CTXSNAP_BUSY_TIMEOUT_MS: "300" },
            mode: "subprocess",
          });
          expectCode(["list"], list, 0);
          assertEquals(list.json().snapshots.length, 1);

          db.exec("ROLLBACK");
          db.close();
          held = false;
          const after = await ws.run(["create", "-m", "after", "--allow-unchanged", "--json"], {
            env: { CTXSNAP_BUSY_TIMEOUT_MS: "300" },
          });
          expectCode(["create"], after, 0);
          const listed = await ws.run(["list", "--json"]);
          assertEquals(listed.json().snapshots.length, 2);
          expectCode(["verify", "--all"], await ws.run(["verify", "--all"]), 0);
        } finally {
          if (held) {
            try {
              db.exec("ROLLBACK");
            } catch { /* already ended */ }
            db.close();
          }
        }
      } finally {
        await ws.cleanup();
      }
    },
  });
}

Deno.test({
  name: "concurrency: a write lock held in rollback-journal mode is exit 6 with a hint, no crash",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace();
    try {
      expectCode(["init"], await ws.run(["init"]), 0);
      const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"));
      try {
        assertEquals(
          (db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode,
          "delete",
        );
        db.exec("BEGIN IMMEDIATE");
        for (const args of [["create", "-m", "blocked"], ["forget", "--keep-last", "1"], ["gc"]]) {
          const result = await ws.run(args, {
            env: { CTXSNAP_BUSY_TIMEOUT_MS: "300" },
            mode: "subprocess",
          });
          expectCode(args, result, 6);
          assertCleanError(args, result);
        }
        db.exec("ROLLBACK");
      } finally {
        db.close();
      }
      expectCode(["create"], await ws.run(["create", "-m", "after"]), 0);
    } finally {
      await ws.cleanup();
    }
  },
});

Deno.test({
  name:
    "races: the directory-swap restore race passes 50 times in a row under a CPU hog (no timer decides it)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { restoreSwapRace } = await import("../_restore_race.ts");
    const repeats = Number(Deno.env.get("CTXSNAP_RESTORE_RACE_REPEATS") ?? "50");
    // One busy loop per core, for as long as the runs take.
    const hogs = Array.from(
      { length: navigator.hardwareConcurrency },
      () =>
        new Deno.Command("sh", {
          args: ["-c", "while :; do :; done"],
          stdin: "null",
          stdout: "null",
          stderr: "null",
        }).spawn(),
    );
    let flips = 0;
    try {
      for (let i = 0; i < repeats; i++) flips += (await restoreSwapRace(2)).flips;
    } finally {
      for (const hog of hogs) hog.kill("SIGKILL");
      await Promise.all(hogs.map((hog) => hog.status));
    }
    assert(flips >= 2 * repeats, `${flips} flips over ${repeats} runs`);
  },
});

// ---------------------------------------------------------------------------
// gc returning index pages beside a concurrent create

/** Deterministic incompressible bytes. */
function noise(size: number, salt: number): Uint8Array {
  const data = new Uint8Array(size);
  let x = salt * 2654435761 >>> 0;
  for (let i = 0; i < size; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    data[i] = x >>> 24;
  }
  return data;
}

async function writeChurn(ws: TempWorkspace, round: number, count: number): Promise<void> {
  await Deno.mkdir(join(ws.path, "churn"), { recursive: true });
  for (let j = 0; j < count; j++) {
    await Deno.writeFile(join(ws.path, `churn/f${j}.bin`), noise(100_000, round * 1000 + j));
  }
}

Deno.test("gc returning pages while another process creates: every create succeeds and every snapshot it reported verifies", async () => {
  await withStore(async (ws) => {
    const env = { CTXSNAP_BUSY_TIMEOUT_MS: "60000" };
    await writeChurn(ws, 0, 20);
    const seed = await ws.run(["create", "--json", "-m", "seed"]);
    expectExit(seed, 0, "seed");
    const reported = [seed.json().id as string];
    let creating = true;
    const creator = async () => {
      try {
        for (let round = 1; round <= 5; round++) {
          await writeChurn(ws, round, 20);
          const result = await ws.run(["create", "--json", "-m", `round ${round}`], {
            env,
            mode: "subprocess",
          });
          expectExit(result, 0, `create round ${round} beside gc`);
          reported.push(result.json().id);
        }
      } finally {
        creating = false;
      }
    };
    const returned: number[] = [];
    const cleaner = async () => {
      while (creating) {
        for (const cmd of [["forget", "--keep-last", "1"], ["gc"]]) {
          const result = await ws.run([...cmd, "--json"], { env, mode: "subprocess" });
          expectExit(result, 0, cmd.join(" "));
          if (cmd[0] === "gc") returned.push(result.json().index.free_pages_before);
        }
      }
    };
    await Promise.all([creator(), cleaner()]);
    assertEquals(reported.length, 6, "every create reported a snapshot");
    assert(returned.length > 0, "gc ran");
    const final = await ws.run(["gc", "--json"]);
    expectExit(final, 0, "final gc");
    assertEquals(final.json().index.free_pages_after, 0);
    expectExit(await ws.run(["verify", "--all"]), 0, "verify --all after gc raced creates");
    const newest = reported.at(-1)!;
    expectExit(await ws.run(["verify", newest]), 0, "verify the newest");
    const dest = join(ws.root, "out");
    expectExit(await ws.run(["materialize", newest, dest]), 0, "materialize the newest");
    assertEquals(await Deno.readFile(join(dest, "churn/f3.bin")), noise(100_000, 5003));
  });
});
