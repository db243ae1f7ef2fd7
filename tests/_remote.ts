// deno-lint-ignore-file no-console
/**
 * Helpers of the remote tests (`tests/remote/remote_test.ts` with `file://`,
 * `tests/remote/swift_suite.ts` with a real S3 server): machines with their
 * own store and key, byte-for-byte tree comparison, a real CLI subprocess
 * that can be killed, and the two end-to-end scenarios both suites run
 * against their remote: kill -9 during push and pull, and two users pushing
 * at once.
 *
 * @module
 */
import { join } from "node:path";
import { type Identity, loadOrCreateIdentity } from "../lib/keys/identity.ts";
import { Keyring } from "../lib/keys/keyring.ts";
import { sha256Hex } from "../lib/crypto/hash.ts";
import { Store } from "../lib/repository/store.ts";
import { createSnapshot } from "../lib/history/create.ts";
import { verifyAll } from "../lib/history/verify.ts";
import type { Backend } from "../lib/remote/backend.ts";
import { objectKey } from "../lib/remote/layout.ts";
import { loadRemoteIndex } from "../lib/remote/_remote_index.ts";
import { pull, type PulledRef, type PullResult } from "../lib/remote/pull.ts";
import { assert, assertEquals } from "./_assert.ts";
import { CLI, expectCode, realDenoDir, type TempWorkspace, tempWorkspace } from "./_cli.ts";
import { prng, seedFromEnv } from "./_util.ts";

/** A workspace, its store and its own key: one user's machine, in-process. */
export interface Machine {
  /** Temp directory holding everything. */
  root: string;
  /** The workspace. */
  ws: string;
  /** Its store. */
  store: Store;
  /** Its identity. */
  me: Identity;
  /** Closes the store and removes everything. */
  close(): Promise<void>;
}

/** Files a machine starts with by default. */
export const FILES: Record<string, string> = {
  "a.txt": "alpha\n",
  "notes/b.md": "# bravo\n" + "words ".repeat(400),
  "src/main.ts": "console.log('charlie');\n",
};

/** Creates a machine whose workspace holds `files`. */
export async function machine(
  files: Record<string, string | Uint8Array> = FILES,
): Promise<Machine> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-remote-" }));
  const ws = join(root, "ws");
  await Deno.mkdir(ws);
  for (const [name, content] of Object.entries(files)) {
    await Deno.mkdir(join(ws, name, ".."), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(join(ws, name), content);
    else await Deno.writeFile(join(ws, name), content);
  }
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  const me = await loadOrCreateIdentity(join(root, "config"));
  return {
    root,
    ws,
    store,
    me,
    async close() {
      store.close();
      await new Deno.Command("chmod", { args: ["-R", "u+rwX", root] }).output();
      await Deno.remove(root, { recursive: true });
    },
  };
}

/** A keyring of `m`'s own key plus `others` pinned. */
export function trusting(m: Machine, ...others: Machine[]): Keyring {
  const keyring = new Keyring([], m.me);
  for (const other of others) keyring.add(other.me.publicKey);
  return keyring;
}

/** Rows a pull may add: snapshots, objects, branches and operations. */
export function counts(store: Store): Record<string, number> {
  const count = (table: string) =>
    (store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  return {
    snapshots: count("snapshots"),
    objects: count("objects"),
    branches: count("branches"),
    operations: count("operations"),
  };
}

/** Every regular file and symlink under `dir` (without `.ctxsnap`), with its mode and content hash. */
export async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string) => {
    for await (const entry of Deno.readDir(join(dir, rel))) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (path === ".ctxsnap") continue;
      const full = join(dir, path);
      const stat = await Deno.lstat(full);
      if (entry.isSymlink) out[path] = `link:${await Deno.readLink(full)}`;
      else if (entry.isDirectory) await walk(path);
      else {out[path] = `${(stat.mode! & 0o777).toString(8)}:${
          sha256Hex(await Deno.readFile(full))
        }`;}
    }
  };
  await walk("");
  return out;
}

/** Creates a snapshot of the machine's workspace. */
export async function snap(m: Machine, reason = "work"): Promise<string> {
  return (await createSnapshot(m.store, m.me, { reason })).id;
}

/** `verify --all` finds nothing wrong. */
export async function assertVerifies(store: Store, trust: Keyring): Promise<void> {
  const report = await verifyAll(store, trust);
  assertEquals(report.problems, [], "verify --all");
  for (const s of report.snapshots) assertEquals(s.problems, [], `snapshot ${s.id}`);
}

/** The ref of signer `keyId` in a pull result. */
export function refOf(result: PullResult, keyId: string): PulledRef {
  const ref = result.refs.find((r) => r.keyId === keyId);
  assert(ref !== undefined, `no ref of ${keyId} in ${JSON.stringify(result.refs)}`);
  return ref;
}

/** The public key (hex) of a CLI workspace's identity. */
export function pubKey(ws: TempWorkspace): Promise<string> {
  return ws.run(["key", "show", "--json"]).then((r) => r.json().public_key as string);
}

/** Spawns the real CLI in `ws` (its config dir and HOME, plus `env`). */
export function spawnCli(
  ws: TempWorkspace,
  args: string[],
  env: Record<string, string> = {},
): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, ...args],
    cwd: ws.path,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DENO_DIR: realDenoDir(),
      HOME: ws.home,
      CTXSNAP_CONFIG_DIR: ws.configDir,
      NO_COLOR: "1",
      CTXSNAP_DAEMON: "off",
      DENO_NO_UPDATE_CHECK: "1",
      ...env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Runs the CLI and SIGKILLs it after `delayMs` if it is still running; true when it was killed. */
export async function runAndKill(
  ws: TempWorkspace,
  args: string[],
  delayMs: number,
  env: Record<string, string> = {},
): Promise<boolean> {
  const child = spawnCli(ws, args, env);
  let killed = false;
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
      killed = true;
    } catch {
      // Already exited.
    }
  }, delayMs);
  const status = await child.output();
  clearTimeout(timer);
  return killed && status.signal === "SIGKILL";
}

/**
 * What a reader can see on the remote must be whole: every envelope's tree is
 * there, and a fresh store pulls every ref without a refusal, and verifies.
 */
export async function assertRemoteConsistent(
  backend: Backend,
  trustKey: Uint8Array,
): Promise<void> {
  for (const info of await backend.list("snapshots/")) {
    const bytes = await backend.get(info.key, 4 * 1024 * 1024);
    const body = JSON.parse(new TextDecoder().decode(bytes!)).body;
    if (body.workspace === null) continue;
    const tree = body.workspace.tree;
    const packed = (await loadRemoteIndex(backend, 4)).byId.get(tree);
    assert(
      packed?.entry.kind === "tree" || (await backend.head(objectKey(tree))) !== null,
      `tree of ${info.key}`,
    );
  }
  const checker = await machine({});
  try {
    const keyring = trusting(checker);
    keyring.add(trustKey);
    const result = await pull(checker.store, backend, keyring, "origin");
    for (const ref of result.refs) assertEquals([ref.status, ref.reason], ["updated", null]);
    await assertVerifies(checker.store, keyring);
  } finally {
    await checker.close();
  }
}

/** Where the scenarios push: a URL the CLI takes, how to reach it in-process, and its settings. */
export interface RemoteTarget {
  /** The remote URL (`file://…` or `s3://…`). */
  url: string;
  /** Extra `remote add` options (`--endpoint …`). */
  addArgs: string[];
  /** Environment for the CLI (credentials). */
  env: Record<string, string>;
  /** The same remote in-process. */
  backend(): Backend;
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g)!, (h) => parseInt(h, 16));
}

/**
 * kill -9 of a real `push` and of a real `pull` at random instants, `rounds`
 * times: after each kill the remote is consistent (a fresh store pulls every
 * ref whole) and both stores verify; the reruns complete; at the end the
 * puller materializes the pusher's workspace byte for byte. Each round adds a
 * blob of `largeBytes` (multipart when over 16 MiB).
 */
export async function killDuringPushAndPull(
  target: RemoteTarget,
  options: { rounds: number; largeBytes: number },
): Promise<void> {
  const seed = seedFromEnv();
  const random = prng(seed);
  console.log(`kill -9 during push and pull: CTXSNAP_TEST_SEED=${seed}, ${options.rounds} rounds`);
  const files: Record<string, string> = {};
  for (let i = 0; i < 300; i++) files[`src/f${i}.txt`] = `file ${i}\n`.repeat(50 + i);
  const alice = await tempWorkspace(files);
  const bob = await tempWorkspace({});
  const env = target.env;
  try {
    for (const ws of [alice, bob]) {
      expectCode(await ws.run(["init"], { env }), 0, "init");
      expectCode(
        await ws.run(["remote", "add", "origin", target.url, ...target.addArgs], { env }),
        0,
        "remote add",
      );
    }
    const aliceKey = await pubKey(alice);
    for (let round = 0; round < options.rounds; round++) {
      const large = new Uint8Array(options.largeBytes).map((_, i) => (i * (round + 3)) & 255);
      await Deno.writeFile(join(alice.path, "large.bin"), large);
      for (let i = 0; i < 40; i++) {
        await Deno.writeTextFile(
          join(alice.path, `src/f${i}.txt`),
          `round ${round} ${i}\n`.repeat(99),
        );
      }
      const head =
        (await alice.run(["create", "-m", `round ${round}`, "--json"], { env })).json().id;
      const delay = 150 + Math.floor(random() * 1500);
      const killed = await runAndKill(alice, ["push"], delay, env);
      await assertRemoteConsistent(target.backend(), hexBytes(aliceKey));
      expectCode(await alice.run(["verify", "--all"], { env }), 0, `verify (round ${round})`);
      const rerun = await alice.run(["push", "--json"], { env });
      expectCode(rerun, 0, `push rerun (round ${round}, killed: ${killed} after ${delay} ms)`);
      assertEquals(rerun.json().refs[0].head, head);

      const pullDelay = 150 + Math.floor(random() * 1200);
      const pullKilled = await runAndKill(bob, ["pull", "--trust", aliceKey], pullDelay, env);
      expectCode(
        await bob.run(["verify", "--all", "--trust", aliceKey], { env }),
        0,
        `verify after a pull (killed: ${pullKilled} after ${pullDelay} ms)`,
      );
      const pulled = await bob.run(["pull", "--trust", aliceKey, "--json"], { env });
      expectCode(pulled, 0, `pull rerun (round ${round})`);
      assertEquals(pulled.json().refs[0].head, head);
    }
    const branches = (await bob.run(["branch", "--json"], { env })).json().branches;
    const tracking = branches.find((b: { name: string }) => b.name.startsWith("origin/"));
    const out = join(bob.root, "out");
    expectCode(await bob.run(["materialize", tracking.head, out], { env }), 0, "materialize");
    assertEquals(await tree(out), await tree(alice.path));
  } finally {
    await alice.cleanup();
    await bob.cleanup();
  }
}

/**
 * Two users with different keys push to one remote at the same instant, then
 * pull each other: both land, both stores verify, each has its own ref series.
 */
export async function twoUsersAtOnce(target: RemoteTarget): Promise<void> {
  const alice = await tempWorkspace({ "alice.txt": "from alice\n", "shared.txt": "same\n" });
  const bob = await tempWorkspace({ "bob.txt": "from bob\n", "shared.txt": "same\n" });
  const env = target.env;
  try {
    for (const ws of [alice, bob]) {
      expectCode(await ws.run(["init"], { env }), 0, "init");
      expectCode(
        await ws.run(["remote", "add", "origin", target.url, ...target.addArgs], { env }),
        0,
        "remote add",
      );
      expectCode(await ws.run(["create", "-m", "one"], { env }), 0, "create");
    }
    const [a, b] = await Promise.all([
      spawnCli(alice, ["push", "--json"], env).output(),
      spawnCli(bob, ["push", "--json"], env).output(),
    ]);
    const decoder = new TextDecoder();
    assertEquals([a.code, b.code], [0, 0], decoder.decode(a.stderr) + decoder.decode(b.stderr));
    const [aliceKey, bobKey] = [await pubKey(alice), await pubKey(bob)];
    const [pa, pb] = await Promise.all([
      alice.run(["pull", "--trust", bobKey, "--json"], { env }),
      bob.run(["pull", "--trust", aliceKey, "--json"], { env }),
    ]);
    expectCode(pa, 0, "alice pulls");
    expectCode(pb, 0, "bob pulls");
    const statuses = (r: typeof pa) =>
      r.json().refs.map((ref: { status: string }) => ref.status).sort();
    assertEquals(statuses(pa), ["updated", "updated"]);
    assertEquals(statuses(pb), ["updated", "updated"]);
    expectCode(await alice.run(["verify", "--all", "--trust", bobKey], { env }), 0, "verify");
    expectCode(await bob.run(["verify", "--all", "--trust", aliceKey], { env }), 0, "verify");
    // Each signer has its own ref series: nothing was overwritten.
    const refs = (await target.backend().list("refs/")).map((o) => o.key.split("/")[1]);
    assertEquals(new Set(refs).size, 2);
  } finally {
    await alice.cleanup();
    await bob.cleanup();
  }
}
