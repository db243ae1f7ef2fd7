/**
 * The watch process nobody has to manage, as real processes: `create` and
 * the hook start one in the background; at most one serves a store; it
 * exits after its idle time; `kill -9` leaves files the next one recovers
 * from; `CTXSNAP_DAEMON=off` and `daemon.conf` turn it off; `watch status`
 * and `watch stop` show and end it; results are the same with or without it;
 * and Claude Code's installed settings (`hook install claude-code --http`),
 * driven as Claude Code drives them, record every event through it.
 *
 * Every test stops (or kills) each watch process it started, whatever
 * happens; nothing waits on a timer, only on a condition.
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
import { prng, seedFromEnv } from "../_util.ts";
import { DAEMON_V8_FLAGS, daemonEnvironment } from "../../lib/integrations/watch/daemon.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

/** The environment of a CLI process that may start a daemon. */
function daemonEnv(ws: TempWorkspace, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    DENO_DIR: realDenoDir(),
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
    HOME: ws.home,
    CTXSNAP_CONFIG_DIR: ws.configDir,
    CTXSNAP_DAEMON: "on",
    ...extra,
  };
}

/** Runs the CLI as a real process (so it can start itself again), daemons allowed. */
async function ctxsnap(
  ws: TempWorkspace,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string; json(): Any }> {
  const [command, ...argv] = CTXSNAP_BIN !== undefined
    ? [CTXSNAP_BIN, ...args]
    : [Deno.execPath(), "run", "-A", "--quiet", CLI, ...args];
  const child = new Deno.Command(command!, {
    args: argv,
    cwd: opts.cwd ?? ws.path,
    env: daemonEnv(ws, opts.env),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(opts.stdin ?? ""));
  await writer.close();
  const out = await child.output();
  const stdout = new TextDecoder().decode(out.stdout);
  return {
    code: out.code,
    stdout,
    stderr: new TextDecoder().decode(out.stderr),
    json: () => JSON.parse(stdout),
  };
}

function runDir(ws: TempWorkspace): string {
  return join(ws.path, ".ctxsnap", "run");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

/** Waits until `watch status` answers (a daemon serves the store); its status document. */
async function waitForDaemon(ws: TempWorkspace, notPid?: number): Promise<Any> {
  for (;;) {
    const status = await ctxsnap(ws, ["watch", "status", "--json"], {
      env: { CTXSNAP_DAEMON: "off" },
    });
    if (status.code === 0 && status.json().pid !== notPid) return status.json();
    // Waiting on the condition: the daemon writes watch.json once it has walked.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Stops whatever daemon serves the store, and kills any pid in `pids` still alive. */
async function stopAll(ws: TempWorkspace, pids: number[]): Promise<void> {
  await ctxsnap(ws, ["watch", "stop"], { env: { CTXSNAP_DAEMON: "off" } }).catch(() => {});
  try {
    const lock = (await Deno.readTextFile(join(runDir(ws), "watch.lock"))).trim();
    pids.push(Number(lock));
  } catch {
    // No lock.
  }
  for (const pid of pids) {
    if (pid > 0 && alive(pid)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
  }
}

Deno.test("daemon: the first create starts a watch in the background, the next is handed to it, and watch status / watch stop show and end it", async () => {
  await withStore(async (ws) => {
    const pids: number[] = [];
    try {
      const first = await ctxsnap(ws, ["create", "-m", "one", "--json"]);
      expectCode(first as Any, 0, "create");
      assertEquals(first.json().via, "local");
      const status = await waitForDaemon(ws);
      pids.push(status.pid);
      assertEquals(status.workspace, ws.path);
      assertEquals(status.capture.mode, "events");
      assertEquals(status.http, null, "no HTTP hooks before they are installed");
      // Its files are private; it logs into run/.
      for (const name of ["watch.json", "watch.lock", "daemon.log"]) {
        assertEquals((await Deno.lstat(join(runDir(ws), name))).mode! & 0o777, 0o600, name);
      }
      await Deno.writeTextFile(join(ws.path, "a.txt"), "changed\n");
      const second = await ctxsnap(ws, ["create", "-m", "two", "--json"]);
      assertEquals([second.json().via, second.json().capture.hashed], ["watch", 1]);
      // A hook event too.
      const event = JSON.stringify({
        session_id: "s-d",
        hook_event_name: "Stop",
        cwd: ws.path,
      });
      const hooked = await ctxsnap(ws, ["hook", "claude-code", "--json"], { stdin: event });
      assertEquals(hooked.json().via, "watch");

      const text = await ctxsnap(ws, ["watch", "status"]);
      assert(text.stdout.includes(`watch process ${status.pid}`), text.stdout);
      const stop = await ctxsnap(ws, ["watch", "stop", "--json"]);
      expectCode(stop as Any, 0, "watch stop");
      assertEquals([stop.json().pid, stop.json().stopped], [status.pid, true]);
      // Gone, and its files with it (the log stays).
      assertEquals(await exists(join(runDir(ws), "watch.json")), false);
      assertEquals(await exists(join(runDir(ws), "watch.lock")), false);
      const none = await ctxsnap(ws, ["watch", "status", "--json"], {
        env: { CTXSNAP_DAEMON: "off" },
      });
      assertEquals(none.code, 4);
      assertEquals((await ctxsnap(ws, ["verify", "--all"])).code, 0);
    } finally {
      await stopAll(ws, pids);
    }
  });
});

Deno.test("daemon: CTXSNAP_DAEMON=off, or enabled = false in the store's daemon.conf, starts none", async () => {
  await withStore(async (ws) => {
    const pids: number[] = [];
    try {
      const off = await ctxsnap(ws, ["create", "-m", "one", "--json"], {
        env: { CTXSNAP_DAEMON: "off" },
      });
      assertEquals(off.json().via, "local");
      // The log is opened before a daemon is started: no log, no daemon.
      assertEquals(await exists(join(runDir(ws), "daemon.log")), false);
      await Deno.writeTextFile(
        join(ws.path, ".ctxsnap", "daemon.conf"),
        "# no background watch here\nenabled = false\n",
      );
      await Deno.writeTextFile(join(ws.path, "a.txt"), "changed\n");
      const conf = await ctxsnap(ws, ["create", "-m", "two", "--json"], {
        env: { CTXSNAP_DAEMON: "" },
      });
      assertEquals([conf.code, conf.json().via], [0, "local"]);
      assertEquals(await exists(join(runDir(ws), "daemon.log")), false);
      // A daemon.conf that cannot be read starts none either; the checkpoint is made.
      await Deno.writeTextFile(join(ws.path, ".ctxsnap", "daemon.conf"), "start = always\n");
      await Deno.writeTextFile(join(ws.path, "a.txt"), "again\n");
      const bad = await ctxsnap(ws, ["create", "-m", "three", "--json"], {
        env: { CTXSNAP_DAEMON: "" },
      });
      assertEquals([bad.code, bad.json().via], [0, "local"]);
      assertEquals(await exists(join(runDir(ws), "daemon.log")), false);
      // And watch itself reports it.
      const watch = await ctxsnap(ws, ["watch", "--idle-timeout", "1s"], {
        env: { CTXSNAP_DAEMON: "off" },
      });
      assertEquals(watch.code, 7, watch.stderr);
      assert(watch.stderr.includes("daemon.conf line 1"), watch.stderr);
    } finally {
      await stopAll(ws, pids);
    }
  });
});

Deno.test("daemon: at most one per store: of two started at once, one serves and the other exits 0", async () => {
  await withStore(async (ws) => {
    const pids: number[] = [];
    try {
      const start = () =>
        ctxsnap(ws, ["watch", "--daemon", "--idle-timeout", "10m", "--json"], {
          env: { CTXSNAP_DAEMON: "off" },
        });
      // Both run until stopped or refused; the one refused finishes first.
      const a = start();
      const b = start();
      const first = await Promise.race([a, b]);
      assertEquals(first.code, 0);
      assert(first.stderr.includes("already serves"), first.stderr);
      const status = await waitForDaemon(ws);
      pids.push(status.pid);
      expectCode(
        await ctxsnap(ws, ["watch", "stop"], { env: { CTXSNAP_DAEMON: "off" } }) as Any,
        0,
        "stop",
      );
      const [ra, rb] = await Promise.all([a, b]);
      assertEquals([ra.code, rb.code], [0, 0]);
      // Started by hand (not --daemon), a second is an error (exit 5).
      const running = start();
      const served = await waitForDaemon(ws);
      pids.push(served.pid);
      const manual = await ctxsnap(ws, ["watch"], { env: { CTXSNAP_DAEMON: "off" } });
      assertEquals(manual.code, 5, manual.stderr);
      await ctxsnap(ws, ["watch", "stop"], { env: { CTXSNAP_DAEMON: "off" } });
      assertEquals((await running).code, 0);
    } finally {
      await stopAll(ws, pids);
    }
  });
});

Deno.test("daemon: it exits by itself after its idle time and removes its files", async () => {
  await withStore(async (ws) => {
    const pids: number[] = [];
    try {
      const run = await ctxsnap(ws, ["watch", "--daemon", "--idle-timeout", "200ms"], {
        env: { CTXSNAP_DAEMON: "off" },
      });
      assertEquals(run.code, 0, run.stderr);
      assert(run.stderr.includes("stopping: idle"), run.stderr);
      for (const name of ["watch.json", "watch.lock", "watch.sock"]) {
        assertEquals(await exists(join(runDir(ws), name)), false, name);
      }
    } finally {
      await stopAll(ws, pids);
    }
  });
});

Deno.test("daemon: after kill -9 (stale socket, watch.json and lock) the next create works alone and a fresh one takes over", async () => {
  await withStore(async (ws) => {
    const pids: number[] = [];
    try {
      await ctxsnap(ws, ["create", "-m", "one"]);
      const first = await waitForDaemon(ws);
      pids.push(first.pid);
      Deno.kill(first.pid, "SIGKILL");
      while (alive(first.pid)) await new Promise((resolve) => setTimeout(resolve, 20));
      // What it left behind.
      for (const name of ["watch.json", "watch.lock", "watch.sock"]) {
        assert(await exists(join(runDir(ws), name)), name);
      }
      await Deno.writeTextFile(join(ws.path, "a.txt"), "after the kill\n");
      const made = await ctxsnap(ws, ["create", "-m", "two", "--json"]);
      assertEquals([made.code, made.json().via], [0, "local"]);
      const second = await waitForDaemon(ws, first.pid);
      pids.push(second.pid);
      assert(second.pid !== first.pid);
      await Deno.writeTextFile(join(ws.path, "a.txt"), "handed\n");
      const handed = await ctxsnap(ws, ["create", "-m", "three", "--json"]);
      assertEquals(handed.json().via, "watch");
      assertEquals((await ctxsnap(ws, ["verify", "--all"])).code, 0);
    } finally {
      await stopAll(ws, pids);
    }
  });
});

Deno.test("daemon: hook and create results are the same with or without it (random edits and events)", async () => {
  const seed = seedFromEnv();
  const rounds = Number(Deno.env.get("CTXSNAP_DAEMON_ROUNDS") ?? "6");
  await withStore(async (withDaemon) => {
    await withStore(async (alone) => {
      const pids: number[] = [];
      try {
        const rand = prng(seed);
        const trees: Record<string, string[]> = { daemon: [], alone: [] };
        const outcomes: Record<string, string[]> = { daemon: [], alone: [] };
        let started = false;
        for (let round = 0; round < rounds; round++) {
          // The same edit in both workspaces.
          const name = ["a.txt", "b.md", "src/main.ts", `new${Math.floor(rand() * 3)}.txt`][
            Math.floor(rand() * 4)
          ]!;
          const text = `round ${round} ${Math.floor(rand() * 1000)}\n`;
          const remove = rand() < 0.2;
          const asHook = rand() < 0.6;
          const event = (cwd: string) =>
            JSON.stringify({
              session_id: "s-prop",
              hook_event_name: round % 3 === 0 ? "UserPromptSubmit" : "PostToolUse",
              ...(round % 3 === 0 ? { prompt: `p${round}`, prompt_id: `pid-${round}` } : {
                tool_name: "Edit",
                tool_use_id: `toolu_${round}`,
              }),
              cwd,
            });
          for (const [key, ws] of [["daemon", withDaemon], ["alone", alone]] as const) {
            const file = join(ws.path, name);
            if (remove) await Deno.remove(file).catch(() => {});
            else await Deno.writeTextFile(file, text);
            const env = { CTXSNAP_DAEMON: key === "daemon" ? "on" : "off" };
            const result = asHook
              ? await ctxsnap(ws, ["hook", "claude-code", "--json"], {
                stdin: event(ws.path),
                env,
              })
              : await ctxsnap(ws, ["create", "-m", `r${round}`, "--json"], { env });
            assertEquals(result.code, 0, result.stderr);
            const json = result.json();
            const shown = await ctxsnap(ws, ["show", json.id, "--json"], { env });
            trees[key]!.push(shown.json().workspace?.tree ?? "none");
            outcomes[key]!.push(
              JSON.stringify(
                asHook
                  ? [json.created, json.position, json.prompt, json.duplicate, json.omitted]
                  : [json.created, json.workspace?.files],
              ),
            );
            if (key === "daemon" && !started) {
              // From the second round on, checkpoints go through it.
              pids.push((await waitForDaemon(ws)).pid);
              started = true;
            }
          }
        }
        assertEquals(trees.daemon, trees.alone, `seed ${seed}`);
        assertEquals(outcomes.daemon, outcomes.alone, `seed ${seed}`);
      } finally {
        await stopAll(withDaemon, pids);
      }
    });
  });
});

/** Interpolates `$VAR` / `${VAR}` in a header value as Claude Code does (only allowed names). */
function interpolate(value: string, allowed: string[], env: Record<string, string>): string {
  return value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_, a, b) => {
      const name = (a ?? b) as string;
      return allowed.includes(name) ? env[name] ?? "" : "";
    },
  );
}

Deno.test("claude code over HTTP: init, hook install claude-code --http, then the installed settings driven as Claude Code drives them record every event through the daemon", async () => {
  await withStore(async (ws) => {
    const pids: number[] = [];
    try {
      // `ctxsnap` on PATH, as the command hooks name it.
      const bin = join(ws.root, "bin");
      await Deno.mkdir(bin);
      const wrapper = CTXSNAP_BIN !== undefined
        ? `#!/bin/sh\nexec ${JSON.stringify(CTXSNAP_BIN)} "$@"\n`
        : `#!/bin/sh\nexec ${JSON.stringify(Deno.execPath())} run -A --quiet ${
          JSON.stringify(CLI)
        } "$@"\n`;
      await Deno.writeTextFile(join(bin, "ctxsnap"), wrapper, { mode: 0o755 });
      const path = `${bin}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`;

      const dry = await ctxsnap(ws, ["hook", "install", "claude-code", "--http", "--dry-run"]);
      assertEquals(dry.code, 0, dry.stderr);
      assertEquals(await exists(join(ws.path, ".claude", "settings.local.json")), false);
      const install = await ctxsnap(ws, ["hook", "install", "claude-code", "--http", "--json"]);
      assertEquals(install.code, 0, install.stderr);
      const settingsFile = join(ws.path, ".claude", "settings.local.json");
      assertEquals((await Deno.lstat(settingsFile)).mode! & 0o777, 0o600);
      const settings = JSON.parse(await Deno.readTextFile(settingsFile));
      // SessionStart cannot be HTTP; the committed settings file is not written.
      assertEquals(settings.hooks.SessionStart[0].hooks[0].type, "command");
      assertEquals(settings.hooks.PostToolUse[0].hooks[0].type, "http");
      assertEquals(await exists(join(ws.path, ".claude", "settings.json")), false);

      const claudeEnv: Record<string, string> = { ...daemonEnv(ws), PATH: path };
      const replies: string[] = [];
      /** Runs every handler of `name` as Claude Code would; returns what each answered. */
      const fire = async (name: string, fields: Record<string, unknown>) => {
        const payload = JSON.stringify({
          session_id: "cc-session-1",
          transcript_path: join(ws.root, "t.jsonl"),
          cwd: ws.path,
          hook_event_name: name,
          ...fields,
        });
        for (const group of settings.hooks[name] ?? []) {
          for (const handler of group.hooks) {
            if (handler.type === "command") {
              const out = await new Deno.Command("sh", {
                args: ["-c", handler.command],
                cwd: ws.path,
                env: { ...claudeEnv, CLAUDE_PROJECT_DIR: ws.path },
                clearEnv: true,
                stdin: "piped",
                stdout: "piped",
                stderr: "piped",
              }).spawn();
              const w = out.stdin.getWriter();
              await w.write(new TextEncoder().encode(payload));
              await w.close();
              const done = await out.output();
              assertEquals(done.code, 0, new TextDecoder().decode(done.stderr));
              replies.push(`${name}:command:${new TextDecoder().decode(done.stdout)}`);
            } else {
              const headers: Record<string, string> = { "Content-Type": "application/json" };
              for (const [k, v] of Object.entries(handler.headers ?? {})) {
                headers[k] = interpolate(v as string, handler.allowedEnvVars ?? [], claudeEnv);
              }
              const response = await fetch(handler.url, {
                method: "POST",
                headers,
                body: payload,
              });
              const body = await response.text();
              assert(response.ok, `${name}: ${response.status}`);
              // Empty, or a JSON object: plain text would be an error in Claude Code.
              assert(body === "" || typeof JSON.parse(body) === "object", body);
              replies.push(`${name}:http:${response.status}`);
            }
          }
        }
      };
      await fire("SessionStart", { source: "startup" });
      // The SessionStart command hook started the daemon, serving HTTP.
      const status = await waitForDaemon(ws);
      pids.push(status.pid);
      assert(typeof status.http === "string" && status.http.startsWith("http://127.0.0.1:"));
      await fire("UserPromptSubmit", { prompt: "add a file", prompt_id: "p-1" });
      await fire("PreToolUse", {
        tool_name: "Write",
        tool_use_id: "toolu_w1",
        tool_input: { file_path: join(ws.path, "new.txt"), content: "new\n" },
        prompt_id: "p-1",
      });
      await Deno.writeTextFile(join(ws.path, "new.txt"), "new\n");
      await fire("PostToolUse", {
        tool_name: "Write",
        tool_use_id: "toolu_w1",
        tool_input: { file_path: join(ws.path, "new.txt"), content: "new\n" },
        tool_response: { success: true },
        prompt_id: "p-1",
      });
      await fire("Stop", { stop_hook_active: false, prompt_id: "p-1" });
      await fire("SessionEnd", { reason: "prompt_input_exit" });
      assertEquals(replies.filter((r) => r.includes(":http:")).length, 4, replies.join("\n"));

      // Every event recorded in order, the edit in PostToolUse's checkpoint.
      const listed = await ctxsnap(ws, ["list", "--agent-session", "cc-session-1", "--json"]);
      assertEquals(listed.code, 0, listed.stderr);
      const events = JSON.stringify(listed.json());
      for (
        const name of ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
      ) {
        assert(events.includes(name), `${name} missing: ${events.slice(0, 2000)}`);
      }
      const after = await ctxsnap(ws, ["watch", "status", "--json"], {
        env: { CTXSNAP_DAEMON: "off" },
      });
      assertEquals(after.json().pid, status.pid, "one daemon served the whole session");
      // SessionStart was made before it ran (and started it); the five after it went through it.
      assert(after.json().checkpoints >= 5, JSON.stringify(after.json()));
      // The token never entered a snapshot: the settings file is left out as a secret.
      const shown = await ctxsnap(ws, ["show", "HEAD", "--skipped", "--json"]);
      assert(shown.stdout.includes("settings.local.json"), shown.stdout.slice(0, 2000));
      // Installing again changes nothing.
      const again = await ctxsnap(ws, ["hook", "install", "claude-code", "--http", "--json"]);
      assertEquals(again.json().written, false);
    } finally {
      await stopAll(ws, pids);
    }
  });
});

Deno.test("daemonEnvironment() gives a watch process on Deno its V8 flags after the user's own", () => {
  const before = Deno.env.get("DENO_V8_FLAGS");
  try {
    Deno.env.delete("DENO_V8_FLAGS");
    assertEquals(daemonEnvironment().DENO_V8_FLAGS, DAEMON_V8_FLAGS);
    Deno.env.set("DENO_V8_FLAGS", "--max-old-space-size=4096");
    const env = daemonEnvironment();
    assertEquals(env.DENO_V8_FLAGS, `--max-old-space-size=4096,${DAEMON_V8_FLAGS}`);
    assertEquals(env.PATH, Deno.env.get("PATH"), "the rest of the environment is kept");
  } finally {
    if (before === undefined) Deno.env.delete("DENO_V8_FLAGS");
    else Deno.env.set("DENO_V8_FLAGS", before);
  }
});
