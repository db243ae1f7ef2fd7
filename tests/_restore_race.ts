/**
 * The restore race shared by tests/security/hostile_repo_test.ts (a few rounds) and
 * tests/repository/concurrency_test.ts (many runs under a CPU hog): a child process
 * swaps a directory of the workspace for a symlink to outside and back while
 * restores write and delete in it. Every wait is on a condition (a signal
 * file appearing, or the swapper having exited), never on a timer, so load
 * can slow the race down but not fail it.
 *
 * @module
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../lib/crypto/ed25519.ts";
import { toHex } from "../lib/encoding/hex.ts";
import { createSnapshot } from "../lib/history/create.ts";
import type { Signer } from "../lib/format/envelope.ts";
import { Store } from "../lib/repository/store.ts";
import { recover } from "../lib/workspace/move/recover.ts";
import { restoreSnapshot } from "../lib/workspace/move/restore.ts";
import { assert, assertEquals } from "./_assert.ts";

/**
 * While `<signals>/go` exists, swaps `<ws>/dir/sub` for a symlink to
 * `outside` and back as fast as it can; writes `<signals>/going` after the
 * first flip of a burst and `<signals>/idle` once a burst is over (the
 * directory back in place). Prints the number of flips when `<signals>/stop`
 * appears, or exits when the test process is gone. It never dies of a lost race: a directory the restore made in the
 * gap is moved aside (`stray-N`) before the original is put back.
 */
const RESTORE_SWAPPER = `
const [ws, outside, signals, parent] = Deno.args;
const orphaned = () => { try { Deno.statSync("/proc/" + parent); return false; } catch { return true; } };
const victim = ws + "/dir/sub";
const parked = ws + "/parked";
const link = ws + "/link.tmp";
const has = (name) => { try { Deno.statSync(signals + "/" + name); return true; } catch { return false; } };
const pause = new Int32Array(new SharedArrayBuffer(4));
let flips = 0;
let strays = 0;
let burst = 0;
const putBack = () => {
  for (;;) {
    try { Deno.renameSync(parked, victim); return; } catch { /* something is at victim */ }
    try { Deno.lstatSync(parked); } catch { return; } // nothing to put back
    try { Deno.removeSync(victim); } catch { /* a directory, or gone */ }
    try { Deno.renameSync(victim, ws + "/stray-" + strays++); } catch { /* gone */ }
  }
};
for (;;) {
  if (has("stop")) break;
  if (!has("go")) {
    if (orphaned()) break; // the test process died: never outlive it
    if (burst > 0) { burst = 0; Deno.writeTextFileSync(signals + "/idle", ""); }
    Atomics.wait(pause, 0, 0, 1);
    continue;
  }
  try { Deno.renameSync(victim, parked); } catch { continue; }
  try {
    Deno.symlinkSync(outside, link);
    Deno.renameSync(link, victim);
    Deno.removeSync(victim);
  } catch {
    // The restore made a new directory in the gap: move it aside.
    try { Deno.removeSync(link); } catch { /* not there */ }
    try { Deno.renameSync(victim, ws + "/stray-" + strays++); } catch { /* not there */ }
  }
  putBack();
  flips++;
  if (burst++ === 0) Deno.writeTextFileSync(signals + "/going", "");
}
console.log(flips);
`;

/** Whether process `pid` has exited (gone, or a zombie not yet reaped). */
function exited(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
  } catch {
    return true;
  }
}

/** Waits until `file` exists; throws if the swapper `pid` exits first. No deadline. */
function waitForFileSync(file: string, pid: number): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (!fs.existsSync(file)) {
    if (exited(pid)) throw new Error(`the swapper exited before ${file} appeared`);
    Atomics.wait(pause, 0, 0, 1);
  }
}

async function makeSigner(): Promise<Signer> {
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}

/** What one run of {@linkcode restoreSwapRace} saw. */
export interface RaceResult {
  /** Swaps the child made. */
  flips: number;
  /** How each restore ended (`restored`, or the error's name and message). */
  outcomes: Record<string, number>;
}

/**
 * Runs `rounds` restores (alternating between two snapshots of 300 files in
 * `dir/sub`) while a child swaps `dir/sub` for a symlink to a directory
 * outside the workspace; asserts nothing outside changed and that, once the
 * swapping stops, `recover --abort` and a restore bring the workspace back.
 */
export async function restoreSwapRace(rounds: number): Promise<RaceResult> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-race-" }));
  try {
    const ws = join(root, "ws");
    const outside = join(root, "outside");
    const signals = join(root, "signals");
    fs.mkdirSync(join(ws, "dir", "sub"), { recursive: true });
    fs.mkdirSync(outside);
    fs.mkdirSync(signals);
    const names = Array.from({ length: 200 }, (_, i) => `f${String(i).padStart(3, "0")}.txt`);
    const doomed = Array.from({ length: 100 }, (_, i) => `del-${String(i).padStart(3, "0")}.txt`);
    for (const name of [...names, ...doomed]) fs.writeFileSync(join(outside, name), "SENTINEL\n");
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    let child: Deno.ChildProcess | null = null;
    try {
      const signer = await makeSigner();
      for (const name of [...names, ...doomed]) {
        fs.writeFileSync(join(ws, "dir", "sub", name), `A ${name}\n`);
      }
      const a = await createSnapshot(store, signer, { reason: "A" });
      for (const name of doomed) fs.rmSync(join(ws, "dir", "sub", name));
      for (const name of names) fs.writeFileSync(join(ws, "dir", "sub", name), `B ${name}\n`);
      const b = await createSnapshot(store, signer, { reason: "B" });
      const script = join(root, "swapper.ts");
      fs.writeFileSync(script, RESTORE_SWAPPER);
      child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--quiet", script, ws, outside, signals, String(Deno.pid)],
        stdin: "null",
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      const pid = child.pid;
      const outcomes: Record<string, number> = {};
      const note = (what: string) => outcomes[what] = (outcomes[what] ?? 0) + 1;
      for (let i = 0; i < rounds; i++) {
        // Quiet workspace: end whatever the last round left, then plan and start.
        await recover(store, signer, { abort: true, force: true });
        let started = false;
        try {
          await restoreSnapshot(store, signer, i % 2 === 0 ? a.id : b.id, {
            force: true,
            onProgress: () => {
              if (started) return;
              started = true;
              // The plan is made and the operation recorded: start swapping now.
              fs.rmSync(join(signals, "going"), { force: true });
              fs.rmSync(join(signals, "idle"), { force: true });
              fs.writeFileSync(join(signals, "go"), "");
              waitForFileSync(join(signals, "going"), pid);
            },
          });
          note("restored");
        } catch (error) {
          note(`${(error as Error).name}: ${(error as Error).message.replace(/".*"/g, "…")}`);
        } finally {
          if (started) {
            fs.rmSync(join(signals, "go"));
            waitForFileSync(join(signals, "idle"), pid);
          }
        }
      }
      fs.writeFileSync(join(signals, "stop"), "");
      const out = await child.output();
      child = null;
      assert(out.success, "the swapper failed");
      const flips = Number(new TextDecoder().decode(out.stdout).trim());
      assert(flips >= rounds, `only ${flips} flips: the race was not exercised`);
      // Whatever happened, nothing outside changed...
      assertEquals(fs.readdirSync(outside).sort(), [...names, ...doomed].sort());
      for (const name of [...names, ...doomed]) {
        assertEquals(fs.readFileSync(join(outside, name), "utf8"), "SENTINEL\n", name);
      }
      // ...and once the swapping stops, what a restore left behind can be ended.
      await recover(store, signer, { abort: true, force: true });
      await restoreSnapshot(store, signer, a.id, { force: true });
      for (const name of [...names, ...doomed]) {
        assertEquals(fs.readFileSync(join(ws, "dir", "sub", name), "utf8"), `A ${name}\n`);
      }
      return { flips, outcomes };
    } finally {
      if (child !== null) {
        fs.writeFileSync(join(signals, "stop"), "");
        await child.output();
      }
      store.close();
    }
  } finally {
    await new Deno.Command("chmod", { args: ["-R", "u+rwX", root] }).output();
    await Deno.remove(root, { recursive: true });
  }
}
