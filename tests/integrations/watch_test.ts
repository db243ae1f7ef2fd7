/**
 * `ctxsnap watch` as a real process: `create` and the
 * hook hand their checkpoints to it and it reads only what changed; its
 * files are private; a watch process killed with `kill -9` at any instant
 * of a checkpoint loses nothing (the client makes the checkpoint itself, the
 * store verifies, the snapshot holds exactly the workspace).
 *
 * `CTXSNAP_WATCH_KILLS` sets the kill -9 rounds (default 2; the long suite
 * runs more); `CTXSNAP_TEST_SEED` replays one.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import {
  CLI,
  CTXSNAP_BIN,
  expectCode,
  realDenoDir,
  type TempWorkspace,
  withStore,
} from "../_cli.ts";
import { exists, prng, seedFromEnv } from "../_util.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

interface Running {
  child: Deno.ChildProcess;
  ready: Any;
}

/** Starts `ctxsnap watch --json` in the workspace and waits for its ready document. */
async function startWatch(
  ws: TempWorkspace,
  env: Record<string, string> = {},
  cwd: string = ws.path,
): Promise<Running> {
  const child = new Deno.Command(CTXSNAP_BIN ?? Deno.execPath(), {
    args: CTXSNAP_BIN !== undefined
      ? ["watch", "--json"]
      : ["run", "-A", "--quiet", CLI, "watch", "--json"],
    cwd,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      DENO_DIR: realDenoDir(),
      NO_COLOR: "1",
      CTXSNAP_DAEMON: "off",
      HOME: ws.home,
      CTXSNAP_CONFIG_DIR: ws.configDir,
      ...env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  // The ready document is the one JSON document on stdout.
  const reader = child.stdout.getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`watch exited before it was ready: ${text}`);
    text += new TextDecoder().decode(value);
    try {
      const ready = JSON.parse(text);
      reader.releaseLock();
      return { child, ready };
    } catch {
      // Not whole yet.
    }
  }
}

async function stopWatch(running: Running): Promise<void> {
  try {
    running.child.kill("SIGTERM");
  } catch {
    // Already gone.
  }
  await running.child.stdout.cancel().catch(() => {});
  await running.child.status;
}

Deno.test("watch: create and the hook hand their checkpoints to it and only what changed is read", async () => {
  await withStore(async (ws) => {
    const running = await startWatch(ws);
    try {
      assertEquals(running.ready.watching, ws.path);
      assertEquals(running.ready.capture.mode, "events");
      // watch.json and the socket are private.
      const info = await Deno.lstat(join(ws.path, ".ctxsnap", "run", "watch.json"));
      assertEquals(info.mode! & 0o777, 0o600);
      assertEquals((await Deno.lstat(join(ws.path, ".ctxsnap", "run"))).mode! & 0o777, 0o700);

      const first = await ws.run(["create", "-m", "one", "--json"]);
      expectCode(first, 0, "create");
      assertEquals(first.json().via, "watch");
      assertEquals(first.json().capture.hashed, 0, "the watch already walked at start");
      await Deno.writeTextFile(join(ws.path, "src", "main.ts"), "console.log('delta');\n");
      const second = await ws.run(["create", "-m", "two", "--json"]);
      assertEquals([second.json().via, second.json().capture.hashed], ["watch", 1]);
      // What it recorded is what a walk of the workspace finds.
      const diff = await ws.run(["diff", second.json().id, "--json"]);
      assertEquals([diff.json().added, diff.json().changed, diff.json().removed], [[], [], []]);
      assert(/^op-[0-9a-f]{16}$/.test(second.json().operation), "an undoable create operation");
      // Nothing changed since: the head comes back and nothing is recorded,
      // unless --allow-unchanged asks for a snapshot anyway.
      const same = (await ws.run(["create", "-m", "same", "--json"])).json();
      assertEquals([same.via, same.created, same.id, same.operation], [
        "watch",
        false,
        second.json().id,
        null,
      ]);
      const forced = (await ws.run(["create", "-m", "same", "--allow-unchanged", "--json"])).json();
      assertEquals([forced.via, forced.created, forced.parent], ["watch", true, second.json().id]);
      assert(/^op-[0-9a-f]{16}$/.test(forced.operation), JSON.stringify(forced));

      // The hook, too; the transcript it names is kept by the watch process.
      const transcript = join(ws.home, ".claude", "projects", "-p", "s-1.jsonl");
      await Deno.mkdir(join(ws.home, ".claude", "projects", "-p"), { recursive: true });
      await Deno.writeTextFile(transcript, '{"type":"user"}\n');
      const event = JSON.stringify({
        session_id: "s-1",
        hook_event_name: "PostToolUse",
        tool_name: "Edit",
        tool_use_id: "toolu_1",
        cwd: ws.path,
        transcript_path: transcript,
      });
      const hooked = await ws.run(["hook", "claude-code", "--json"], { stdin: event });
      expectCode(hooked, 0, "hook");
      assertEquals(hooked.json().via, "watch");
      assertEquals([hooked.json().transcript.len, hooked.json().transcript.chain], [16, 1]);
      assertEquals([hooked.json().position, hooked.json().duplicate], [1, false]);
      // The event's record comes back through the watch process: a redelivery is known there.
      const redelivered = (await ws.run(["hook", "claude-code", "--json"], { stdin: event }))
        .json();
      assertEquals([redelivered.via, redelivered.id, redelivered.duplicate], [
        "watch",
        hooked.json().id,
        true,
      ]);

      // An error of the watch process is the command's error (exit 5).
      const conflict = await ws.run(["create", "--expect-head", first.json().id, "--json"]);
      expectCode(conflict, 5, "expect-head conflict through the watch");

      // Another config directory (which adopted the store): the watch
      // declines, create signs locally.
      const otherEnv = { env: { CTXSNAP_CONFIG_DIR: join(ws.root, "other-config") } };
      expectCode(await ws.run(["init", "--adopt"], otherEnv), 0, "adopt");
      await Deno.writeTextFile(join(ws.path, "a.txt"), "theirs\n"); // something to record
      const other = await ws.run(["create", "-m", "mine", "--json"], otherEnv);
      expectCode(other, 0, "create with another identity");
      assertEquals([other.json().via, other.json().created], ["local", true]);

      const status = await ws.run(["watch", "--status", "--json"]);
      expectCode(status, 0, "watch --status");
      assertEquals(status.json().pid, running.ready.pid);
      assert(status.json().checkpoints >= 2);

      // A second watch for the same store is refused.
      const again = await ws.run(["watch"], { mode: "subprocess" });
      expectCode(again, 5, "a second watch");

      expectCode(await ws.run(["watch", "--stop"]), 0, "watch --stop");
      assertEquals((await running.child.status).code, 0);
      // Gone: create works alone again; status says none runs.
      assertEquals((await ws.run(["create", "-m", "three", "--json"])).json().via, "local");
      expectCode(await ws.run(["watch", "--status"]), 4, "status without a watch");
      // Intact; one snapshot is signed by the other identity, not pinned here.
      expectCode(await ws.run(["verify", "--all"]), 3, "verify --all");
    } finally {
      await stopWatch(running);
    }
  });
});

Deno.test("watch: files that are not private to the user are not trusted", async () => {
  await withStore(async (ws) => {
    const running = await startWatch(ws);
    try {
      const run = join(ws.path, ".ctxsnap", "run");
      await Deno.chmod(join(run, "watch.json"), 0o644);
      const created = await ws.run(["create", "--json"]);
      assertEquals(created.json().via, "local", "a readable watch.json is ignored");
      await Deno.chmod(join(run, "watch.json"), 0o600);
      assertEquals((await ws.run(["create", "--json"])).json().via, "watch");
    } finally {
      await stopWatch(running);
    }
  });
});

/**
 * A fake watch process: a Unix socket at `socket` (mode 0600) that records
 * each request line and answers it with `answer` (null: closes at once).
 */
function fakeWatch(socket: string, answer: unknown): { received: string[]; close(): void } {
  const listener = Deno.listen({ transport: "unix", path: socket });
  Deno.chmodSync(socket, 0o600);
  const received: string[] = [];
  (async () => {
    for await (const connection of listener) {
      let text = "";
      const buffer = new Uint8Array(65536);
      for (;;) {
        const n = await connection.read(buffer).catch(() => null);
        if (n === null) break;
        text += new TextDecoder().decode(buffer.subarray(0, n));
        if (text.includes("\n")) break;
      }
      received.push(text);
      if (answer !== null) {
        await connection.write(new TextEncoder().encode(`${JSON.stringify(answer)}\n`)).catch(
          () => {},
        );
      }
      connection.close();
    }
  })().catch(() => {});
  return { received, close: () => listener.close() };
}

/** Plants a private `run/watch.json` in the store of `ws` naming `socket`. */
async function plantWatchJson(ws: TempWorkspace, socket: string): Promise<void> {
  const run = join(ws.path, ".ctxsnap", "run");
  await Deno.mkdir(run, { recursive: true, mode: 0o700 });
  await Deno.chmod(run, 0o700);
  await Deno.writeTextFile(
    join(run, "watch.json"),
    JSON.stringify({
      protocol: 1,
      pid: Deno.pid,
      token: "ab".repeat(32),
      socket,
      workspace: ws.path,
      store: join(ws.path, ".ctxsnap"),
      started_at: new Date().toISOString(),
      version: "0.1.0",
    }),
    { mode: 0o600 },
  );
  await Deno.chmod(join(run, "watch.json"), 0o600);
}

Deno.test("watch client: a watch.json naming a socket outside a private directory of this user is never contacted", async () => {
  await withStore(async (ws) => {
    const open = join(ws.root, "open");
    await Deno.mkdir(open);
    await Deno.chmod(open, 0o755);
    const fake = fakeWatch(join(open, "evil.sock"), null);
    try {
      await plantWatchJson(ws, join(open, "evil.sock"));
      const created = await ws.run(["create", "-m", "private reason", "--json"]);
      expectCode(created, 0, "create");
      assertEquals(created.json().via, "local");
      assertEquals(fake.received, [], "the reason was sent to a socket that is not ours");
    } finally {
      fake.close();
    }
  });
});

Deno.test("watch client: a watch process that closes the connection without answering is fallen back from: the checkpoint is made in-process", async () => {
  await withStore(async (ws) => {
    const socket = join(ws.path, ".ctxsnap", "run", "watch.sock");
    await Deno.mkdir(join(ws.path, ".ctxsnap", "run"), { mode: 0o700 });
    const fake = fakeWatch(socket, null); // reads the request, then closes without a word
    try {
      await plantWatchJson(ws, socket);
      const created = await ws.run(["create", "-m", "mine", "--json"]);
      assertEquals(fake.received.length, 1, "the fake watch process was asked");
      expectCode(created, 0, "create after a watch process that did not answer");
      assertEquals(created.json().via, "local");
      assertEquals((await ws.run(["list", "--json"])).json().snapshots.length, 1);
    } finally {
      fake.close();
    }
  });
});

Deno.test("watch client: an answer naming a snapshot this store does not hold (forged, another signer) is refused, not reported", async () => {
  await withStore(async (ws) => {
    // A validly signed snapshot of another store and key.
    const { Store } = await import("../../lib/repository/store.ts");
    const { createSnapshot } = await import("../../lib/history/create.ts");
    const { loadOrCreateIdentity } = await import("../../lib/keys/identity.ts");
    const other = join(ws.root, "other");
    await Deno.mkdir(other);
    const store = Store.init(join(other, ".ctxsnap"), other);
    const forged = await createSnapshot(store, await loadOrCreateIdentity(join(ws.root, "k")), {});
    store.close();
    const socket = join(ws.path, ".ctxsnap", "run", "watch.sock");
    await Deno.mkdir(join(ws.path, ".ctxsnap", "run"), { mode: 0o700 });
    const fake = fakeWatch(socket, {
      ok: true,
      result: {
        id: forged.id,
        created: true,
        envelope: forged.envelope,
        capture: null,
        secrets: [],
        operation: null,
      },
    });
    try {
      await plantWatchJson(ws, socket);
      const before = (await ws.run(["list", "--all", "--json"])).json().snapshots.length;
      const created = await ws.run(["create", "-m", "mine", "--json"]);
      assertEquals(fake.received.length, 1, "the fake watch process was asked");
      expectCode(created, 1, "a forged answer");
      assert(created.stderr.includes("watch process answered"), created.stderr);
      assert(!created.stdout.includes(forged.id), "the forged id was reported");
      assertEquals((await ws.run(["list", "--all", "--json"])).json().snapshots.length, before);
    } finally {
      fake.close();
    }
  });
});

Deno.test("watch: a socket path too long for run/ goes to a fresh private mkdtemp directory, which a squatter cannot take first", async () => {
  await withStore(async (ws) => {
    const deep = join(ws.path, "d".repeat(60), "e".repeat(40));
    await Deno.mkdir(deep, { recursive: true });
    expectCode(await ws.run(["init", "--nested"], { cwd: deep }), 0, "init");
    const tmp = join(ws.root, "tmp");
    await Deno.mkdir(tmp);
    // The name the old fallback used, taken first and left open to others.
    const uid = Deno.uid();
    await Deno.mkdir(join(tmp, `ctxsnap-${uid}`));
    await Deno.chmod(join(tmp, `ctxsnap-${uid}`), 0o777);
    const sockets: string[] = [];
    const envs: Record<string, string>[] = [
      { TMPDIR: tmp },
      { TMPDIR: tmp },
      { XDG_RUNTIME_DIR: join(ws.root, "xdg") },
    ];
    for (const env of envs) {
      if (env.XDG_RUNTIME_DIR !== undefined) await Deno.mkdir(env.XDG_RUNTIME_DIR, { mode: 0o700 });
      const running = await startWatch(ws, env, deep);
      try {
        const socket: string = running.ready.socket;
        sockets.push(socket);
        const dir = socket.slice(0, socket.lastIndexOf("/"));
        assert(dir !== join(tmp, `ctxsnap-${uid}`), "the predictable directory was used");
        assertEquals((await Deno.lstat(dir)).mode! & 0o777, 0o700);
        assert(dir.startsWith(env.XDG_RUNTIME_DIR ?? tmp), `${dir} under the runtime directory`);
        assertEquals(
          (await ws.run(["create", "-m", "via watch", "--json"], { cwd: deep })).json().via,
          "watch",
        );
      } finally {
        await stopWatch(running);
      }
      const gone = await Deno.lstat(sockets.at(-1)!.slice(0, sockets.at(-1)!.lastIndexOf("/")))
        .then(() => false, () => true);
      assert(gone, "the socket directory is removed on exit");
    }
    assert(sockets[0] !== sockets[1], "two runs chose the same directory");
  });
});

/** Sends raw bytes on the watch socket; returns the reply line parsed (null: closed without one). */
async function rawRequest(socket: string, bytes: Uint8Array): Promise<Any> {
  const connection = await Deno.connect({ transport: "unix", path: socket });
  try {
    // The server may answer (and close) before it has read everything.
    const writing = (async () => {
      for (let at = 0; at < bytes.byteLength;) at += await connection.write(bytes.subarray(at));
    })().catch(() => {});
    let text = "";
    const buffer = new Uint8Array(65536);
    for (;;) {
      const n = await connection.read(buffer).catch(() => null);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
      if (text.includes("\n")) break;
    }
    await writing;
    return text.includes("\n") ? JSON.parse(text.slice(0, text.indexOf("\n"))) : null;
  } finally {
    connection.close();
  }
}

Deno.test("watch: SIGTERM while clients hold connections open (one with half a request, one answered) closes them and exits, removing its socket and watch.json", async () => {
  await withStore(async (ws) => {
    const running = await startWatch(ws);
    const socket = running.ready.socket as string;
    // One client sends half a request and waits; another gets its answer and keeps its end open.
    const idle = await Deno.connect({ transport: "unix", path: socket });
    await idle.write(new TextEncoder().encode('{"protocol":1,"op":"sta'));
    const answered = await Deno.connect({ transport: "unix", path: socket });
    const info = JSON.parse(
      await Deno.readTextFile(join(ws.path, ".ctxsnap", "run", "watch.json")),
    );
    await answered.write(
      new TextEncoder().encode(
        `${JSON.stringify({ protocol: 1, token: info.token, op: "status", config_dir: null })}\n`,
      ),
    );
    const buffer = new Uint8Array(65536);
    let text = "";
    while (!text.includes("\n")) {
      const n = await answered.read(buffer);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
    assert(text.includes('"ok":true'), text);
    try {
      running.child.kill("SIGTERM");
      // A generous bound, not a timing claim: a process that survives SIGTERM never exits.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const status = await Promise.race([
        running.child.status,
        new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), 120_000)),
      ]);
      clearTimeout(timer);
      if (status === null) running.child.kill("SIGKILL");
      assert(status !== null, "the watch process did not exit after SIGTERM");
      assertEquals(status.code, 0);
      // The idle client sees its connection closed.
      assertEquals(await idle.read(buffer).catch(() => null), null);
      assert(!(await exists(join(ws.path, ".ctxsnap", "run", "watch.json"))), "watch.json left");
      assert(!(await exists(socket)), "socket left");
    } finally {
      idle.close();
      answered.close();
      await running.child.stdout.cancel().catch(() => {});
      await running.child.status;
    }
  });
});

Deno.test("watch: requests without its token, malformed, oversized or with unknown fields are refused and record nothing", async () => {
  await withStore(async (ws) => {
    const running = await startWatch(ws);
    try {
      const info = JSON.parse(
        await Deno.readTextFile(join(ws.path, ".ctxsnap", "run", "watch.json")),
      );
      const socket: string = running.ready.socket;
      assertEquals(info.socket, socket);
      const count = async () => (await ws.run(["list", "--all", "--json"])).json().snapshots.length;
      const before = await count();
      const args = {
        reason: "raw",
        context: null,
        workspace: true,
        source: null,
        session: null,
        branch: null,
        max_file_bytes: null,
        metadata: null,
        agent: null,
      };
      const request = (fields: Record<string, unknown>) =>
        new TextEncoder().encode(
          JSON.stringify({
            protocol: 1,
            token: info.token,
            op: "checkpoint",
            config_dir: ws.configDir,
            args,
            ...fields,
          }) + "\n",
        );
      const cases: [string, Uint8Array][] = [
        ["another token", request({ token: "0".repeat(64) })],
        ["no token", request({ token: undefined })],
        ["a short token", request({ token: info.token.slice(0, 63) })],
        ["malformed JSON", new TextEncoder().encode("{not json\n")],
        ["a duplicate key", new TextEncoder().encode('{"protocol":1,"protocol":1}\n')],
        ["an unknown field", request({ extra: true })],
        ["an unknown arg", request({ args: { ...args, exec: "sh" } })],
        ["an unknown op", request({ op: "restore" })],
        ["another protocol", request({ protocol: 2 })],
        ["a hostile branch name", request({ args: { ...args, branch: "../x" } })],
        ["a non-boolean allow_unchanged", request({ args: { ...args, allow_unchanged: "yes" } })],
        ["over 17 MiB", new Uint8Array(17 * 1024 * 1024 + 2).fill(0x20)],
      ];
      for (const [what, bytes] of cases) {
        const reply = await rawRequest(socket, bytes);
        assert(reply !== null, `${what}: an answer`);
        assertEquals(reply.ok, false, `${what}: ${JSON.stringify(reply)}`);
        assertEquals(reply.error?.code, "usage", `${what}: ${JSON.stringify(reply)}`);
      }
      assertEquals(await count(), before, "nothing recorded");
      // The same channel with the token and well-formed arguments does record.
      const good = await rawRequest(socket, request({}));
      assertEquals([good.ok, good.result?.created], [true, true], JSON.stringify(good));
      assertEquals(await count(), before + 1);
    } finally {
      await stopWatch(running);
    }
  });
});

function kills(): number {
  const raw = Number(Deno.env.get("CTXSNAP_WATCH_KILLS") ?? "2");
  return Number.isSafeInteger(raw) && raw > 0 ? raw : 2;
}

Deno.test("watch: kill -9 of the watch process during a checkpoint loses nothing", async () => {
  const seed = seedFromEnv();
  const rand = prng(seed);
  await withStore(async (ws) => {
    for (let round = 0; round < kills(); round++) {
      const running = await startWatch(ws);
      // Enough content that the checkpoint takes a while.
      await Deno.writeFile(
        join(ws.path, `big-${round}.bin`),
        crypto.getRandomValues(new Uint8Array(65536)).map((b) => b),
      );
      for (let i = 0; i < 50; i++) {
        await Deno.writeTextFile(
          join(ws.path, "src", `f${round}-${i}.txt`),
          `${round} ${i} ${rand()}\n`,
        );
      }
      const create = ws.run(["create", "-m", `round ${round}`, "--json"], { mode: "subprocess" });
      await new Promise((resolve) => setTimeout(resolve, Math.floor(rand() * 400)));
      running.child.kill("SIGKILL");
      await running.child.status;
      await running.child.stdout.cancel().catch(() => {});
      const result = await create;
      expectCode(result, 0, `seed ${seed}, round ${round}: create`);
      const id = result.json().id;
      // The checkpoint holds exactly the workspace, whoever made it.
      const diff = await ws.run(["diff", id, "--json"]);
      assertEquals(
        [diff.json().added, diff.json().changed, diff.json().removed],
        [[], [], []],
        `seed ${seed}, round ${round}: snapshot ${id} (${result.json().via})`,
      );
      expectCode(
        await ws.run(["verify", "--all"]),
        0,
        `seed ${seed}, round ${round}: verify --all`,
      );
    }
  });
});
