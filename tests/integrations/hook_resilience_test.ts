/**
 * The agent hook never fails the agent: as a real process, whatever goes
 * wrong (a cold Deno cache with no network, a full disk, a store locked by
 * another process, a store being garbage-collected, ctxsnap missing) it
 * exits 0 with exactly one readable, escaped line on stderr, and the store
 * still verifies. `scripts/ctxsnap-hook` covers what happens before
 * ctxsnap's own code runs.
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
  REPO,
  type TempWorkspace,
  withStore,
} from "../_cli.ts";

const WRAPPER = join(REPO, "scripts", "ctxsnap-hook");
const FROM_SOURCE = CTXSNAP_BIN === undefined;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `argv` in the workspace with `stdin`, the workspace's config and HOME, and `env`. */
async function spawn(
  ws: TempWorkspace,
  argv: string[],
  stdin: string,
  env: Record<string, string> = {},
): Promise<Ran> {
  const child = new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    cwd: ws.path,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: ws.home,
      CTXSNAP_CONFIG_DIR: ws.configDir,
      DENO_DIR: realDenoDir(),
      DENO_NO_UPDATE_CHECK: "1",
      CTXSNAP_DAEMON: "off",
      ...env,
    },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** How the installed CLI runs (`deno install -g -A -q` writes this shim). */
function ctxsnapArgv(): string[] {
  return CTXSNAP_BIN !== undefined
    ? [CTXSNAP_BIN]
    : [Deno.execPath(), "run", "--allow-all", "--quiet", "--config", join(REPO, "deno.json"), CLI];
}

function event(ws: TempWorkspace, fields: Record<string, unknown> = {}): string {
  return JSON.stringify({
    session_id: "sess-resilience",
    cwd: ws.path,
    hook_event_name: "Stop",
    ...fields,
  });
}

/** Exactly one line, `ctxsnap hook: …`, with no control character but its newline. */
function assertOneLine(ran: Ran, what: string): string {
  assertEquals(ran.code, 0, `${what}: exit 0 (stderr: ${ran.stderr})`);
  const text = ran.stderr;
  assert(text.startsWith("ctxsnap hook: "), `${what}: ${text}`);
  assert(text.endsWith("\n") && text.indexOf("\n") === text.length - 1, `${what}: ${text}`);
  // deno-lint-ignore no-control-regex
  assert(!/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(text), `${what}: ${text}`);
  return text;
}

async function eventCount(ws: TempWorkspace): Promise<number> {
  const listed = await ws.run(["list", "--agent-session", "sess-resilience", "--json"]);
  return listed.code === 0 ? listed.json().snapshots.length : 0;
}

Deno.test({
  name: "hook: a cold Deno cache with no network exits 0 with one escaped line",
  ignore: !FROM_SOURCE,
  async fn() {
    await withStore(async (ws) => {
      const cold = join(ws.root, "cold-deno-dir");
      await Deno.mkdir(cold);
      const dead = "http://127.0.0.1:9";
      const ran = await spawn(ws, [...ctxsnapArgv(), "hook", "claude-code"], event(ws), {
        DENO_DIR: cold,
        HTTPS_PROXY: dead,
        HTTP_PROXY: dead,
        NPM_CONFIG_REGISTRY: `${dead}/`,
      });
      const line = assertOneLine(ran, "cold cache");
      assert(line.includes("nothing recorded, the agent continues"), line);
      assertEquals(ran.stdout, "");
    });
  },
});

Deno.test({
  name:
    "hook: a full disk (writes refused) exits 0 with one line, records nothing and the store verifies",
  ignore: Deno.build.os === "windows",
  async fn() {
    await withStore(async (ws) => {
      expectCode(await ws.run(["create", "-m", "base"]), 0, "create");
      await Deno.writeTextFile(join(ws.path, "a.txt"), "x".repeat(64 * 1024));
      // RLIMIT_FSIZE of one block: every write that grows a file fails (EFBIG, SIGXFSZ ignored).
      const argv = ctxsnapArgv().map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
      const ran = await spawn(
        ws,
        ["sh", "-c", `trap '' XFSZ; ulimit -f 1; exec ${argv} hook claude-code`],
        event(ws),
      );
      const line = assertOneLine(ran, "full disk");
      assert(line.includes("could not be written"), line);
      assertEquals(await eventCount(ws), 0, "nothing recorded");
      expectCode(await ws.run(["verify", "--all"]), 0, "the store still verifies");
    });
  },
});

Deno.test("hook: a store locked by another process (as gc holds it while collecting) exits 0 with one line", async () => {
  await withStore(async (ws) => {
    const index = join(ws.path, ".ctxsnap", "index.db");
    const locker = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { DatabaseSync } from "node:sqlite";
         const db = new DatabaseSync(${JSON.stringify(index)});
         db.exec("BEGIN EXCLUSIVE");
         console.log("locked");
         for await (const _ of Deno.stdin.readable) { /* hold until stdin closes */ }
         db.exec("ROLLBACK");`,
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = child(locker);
    assertEquals(await reader.firstLine(), "locked");
    try {
      const ran = await spawn(ws, [...ctxsnapArgv(), "hook", "claude-code"], event(ws), {
        CTXSNAP_BUSY_TIMEOUT_MS: "200",
      });
      // One note that it is trying again (for six busy timeouts), then the one line of the error.
      const [note, ...rest] = ran.stderr.split("\n");
      assertEquals(note, "ctxsnap: the store is busy; trying again for up to 2 s", ran.stderr);
      const line = assertOneLine({ ...ran, stderr: rest.join("\n") }, "locked store");
      assert(/busy/i.test(line), line);
    } finally {
      await locker.stdin.close();
      await locker.status;
      await reader.done();
    }
    assertEquals(await eventCount(ws), 0, "nothing recorded");
  });
});

/** Reads a child's stdout line by line. */
function child(
  process: Deno.ChildProcess,
): { firstLine(): Promise<string>; done(): Promise<void> } {
  const reader = process.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  return {
    async firstLine() {
      while (!buffered.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += value;
      }
      return buffered.split("\n")[0]!;
    },
    async done() {
      while (!(await reader.read()).done) { /* drain */ }
    },
  };
}

Deno.test("hook: events delivered while gc runs on the same store all exit 0, and the store verifies", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "base"]), 0, "create");
    const runs: Promise<Ran>[] = [];
    for (let i = 0; i < 3; i++) {
      await Deno.writeTextFile(join(ws.path, "a.txt"), `round ${i}\n`);
      runs.push(spawn(ws, [...ctxsnapArgv(), "gc"], ""));
      runs.push(
        spawn(
          ws,
          [...ctxsnapArgv(), "hook", "claude-code", "--json"],
          event(ws, { hook_event_name: "PostToolUse", tool_name: "Bash", tool_use_id: `t${i}` }),
        ),
      );
    }
    const results = await Promise.all(runs);
    results.forEach((r, i) => {
      if (i % 2 === 1) {
        assertEquals(r.code, 0, `hook ${i}: ${r.stderr}`);
        if (r.stderr !== "") assertOneLine(r, `hook ${i}`);
      }
    });
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all");
  });
});

Deno.test("scripts/ctxsnap-hook: ctxsnap missing, or a runtime that dies before ctxsnap runs, still exits 0 with one line; stdout passes through", async () => {
  await withStore(async (ws) => {
    const missing = await spawn(ws, ["sh", WRAPPER, "claude-code"], event(ws), {
      CTXSNAP_BIN: join(ws.root, "no-such-ctxsnap"),
    });
    const line = assertOneLine(missing, "missing");
    assert(line.includes("exited with status 127"), line);
    // A runtime killed before any ctxsnap code: status 1, colours and several lines.
    const dying = join(ws.root, "dying");
    await Deno.writeTextFile(
      dying,
      "#!/bin/sh\nprintf '\\033[31merror\\033[0m: boom\\n  at somewhere\\n' >&2\nexit 1\n",
    );
    await Deno.chmod(dying, 0o755);
    const died = await spawn(ws, ["sh", WRAPPER, "claude-code"], event(ws), { CTXSNAP_BIN: dying });
    const text = assertOneLine(died, "dying runtime");
    assert(text.includes("exited with status 1: error: boom | at somewhere"), text);
    const strict = await spawn(ws, ["sh", WRAPPER, "claude-code", "--strict"], event(ws), {
      CTXSNAP_BIN: dying,
    });
    assertEquals(strict.code, 1, "--strict keeps the status");
    // The real CLI through the wrapper: its JSON answer on stdout is untouched.
    const shim = join(ws.root, "ctxsnap-shim");
    const argv = ctxsnapArgv().map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
    await Deno.writeTextFile(shim, `#!/bin/sh\nexec ${argv} "$@"\n`);
    await Deno.chmod(shim, 0o755);
    await Deno.writeTextFile(join(ws.path, ".env"), "SECRET=1\n");
    const ok = await spawn(ws, ["sh", WRAPPER, "claude-code"], event(ws), { CTXSNAP_BIN: shim });
    assertEquals([ok.code, ok.stderr], [0, ""]);
    assert(JSON.parse(ok.stdout).systemMessage.includes('".env" (secret by name)'), ok.stdout);
  });
});
