/**
 * The soak: ctxsnap run the way an agent harness runs it, everything at once
 * on one store, as real processes, for a bounded time. Shared by the long
 * test (`tests/history/soak_test.ts`, `deno task test:long`, `deno task stress`) and
 * the benchmark (`deno task bench -- --only soak`).
 *
 * At once, each in its own loop of real `ctxsnap` processes until the time is
 * up: several Claude Code sessions sending hook events (`ctxsnap hook
 * claude-code`, the public interface, payloads from tests/fixtures) while
 * their agent edits files; a `create` loop; a `create` killed with SIGKILL at
 * a random instant; `gc`; `forget` of scratch branches (each holding a large
 * file only it references, so gc unlinks object files); `verify --all`;
 * `list --all`; `push` to a file remote. Afterwards `recover`, a final
 * `verify --all` and `list --all` settle what held.
 *
 * @example
 * ```ts
 * import { percentile } from "./_soak.ts";
 * if (percentile([5, 1, 3, 2, 4], 0.5) !== 3) throw new Error("the median of 1..5 is 3");
 * ```
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(REPO, "cli.ts");
const FIXTURES = join(REPO, "tests", "fixtures", "claude-code");

/** What to run. */
export interface SoakOptions {
  /** How long the loops run, in milliseconds. */
  durationMs: number;
  /** Agent sessions sending hook events in parallel. */
  agents: number;
  /** Seed of the random kill instants and edits. */
  seed: number;
  /** Files in the generated workspace (besides the agents' own). */
  files: number;
  /** The command that runs ctxsnap: default `deno run -A --quiet cli.ts`. */
  command?: string[];
  /** Called with a line of progress now and then. */
  log?: (line: string) => void;
}

/** One finished `ctxsnap` process. */
export interface SoakRun {
  /** The loop it belongs to (`hook`, `create`, `kill`, `gc`, `forget`, `verify`, `list`, `push`). */
  loop: string;
  /** Its arguments. */
  args: string[];
  /** Exit status (null when killed). */
  code: number | null;
  /** Wall time in milliseconds, process start to exit. */
  ms: number;
  /** Whether it said it waited for a busy store. */
  waited: boolean;
  stdout: string;
  stderr: string;
}

/** What happened, and what held. */
export interface SoakResult {
  /** Every process run while the loops ran. */
  runs: SoakRun[];
  /** How long the loops ran, in milliseconds. */
  elapsedMs: number;
  /** Snapshot ids that commands reported (hooks and creates), still expected. */
  reported: Set<string>;
  /** Broken promises found while it ran or at the end (empty when everything held). */
  failures: string[];
  /** The final `verify --all`, `recover` and `list --all`. */
  final: { verify: SoakRun; recover: SoakRun; list: SoakRun; log: SoakRun };
}

/** The `q` quantile (0..1) of `values` by the nearest-rank method. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1]!;
}

function prng(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
}

/** A command that gave up on a busy store (a hook reports it and exits 0). */
const BUSY = /error: The store is busy/;

const EVENTS = [
  "session_start",
  "user_prompt_submit_1",
  "post_tool_use_write",
  "post_tool_use_bash",
  "stop",
  "user_prompt_submit_2",
  "post_tool_use_write",
  "pre_compact",
  "stop",
  "session_end",
];

/** What a failed command's JSON says was wrong (verify's problems), else its first bytes. */
function verdictOf(stdout: string): string {
  try {
    const doc = JSON.parse(stdout);
    if (Array.isArray(doc?.problems)) {
      const invalid = (doc.snapshots ?? []).filter((s: { valid?: boolean }) => s.valid === false)
        .map((s: { id: string; problems: string[] }) => `${s.id}: ${s.problems.join("; ")}`);
      return JSON.stringify({ problems: doc.problems, invalid });
    }
  } catch {
    // Not JSON: shown as it is.
  }
  return stdout.slice(0, 1500);
}

/** Runs the soak in a fresh temp directory (removed afterwards) and returns what happened. */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const log = options.log ?? (() => {});
  const random = prng(options.seed);
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-soak-" }));
  const ws = join(root, "ws");
  const remote = join(root, "remote");
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: join(root, "home"),
    CTXSNAP_CONFIG_DIR: join(root, "config"),
    // Every wait for another process's lock is said, so it can be counted.
    CTXSNAP_WAIT_NOTE_MS: "0",
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
  };
  // Children share this process's module and npm cache, whatever HOME they get.
  env.DENO_DIR = Deno.env.get("DENO_DIR") ?? JSON.parse(
    new TextDecoder().decode(
      (await new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stderr: "null" })
        .output()).stdout,
    ),
  ).denoDir;
  const base = options.command ?? [Deno.execPath(), "run", "-A", "--quiet", CLI];
  const runs: SoakRun[] = [];
  const failures: string[] = [];
  const reported = new Set<string>();
  const fail = (what: string, run?: SoakRun) => {
    failures.push(
      run === undefined ? what : `${what}: ctxsnap ${run.args.join(" ")} exited ${run.code}\n` +
        `stdout: ${verdictOf(run.stdout)}\nstderr: ${run.stderr.slice(0, 1500)}`,
    );
  };

  async function ctxsnap(
    loop: string,
    args: string[],
    opts: { stdin?: string; killAfterMs?: number } = {},
  ): Promise<SoakRun> {
    const started = performance.now();
    const child = new Deno.Command(base[0]!, {
      args: [...base.slice(1), ...args],
      cwd: ws,
      env,
      clearEnv: true,
      stdin: opts.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    if (opts.stdin !== undefined) {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(opts.stdin)).catch(() => {});
      await writer.close().catch(() => {});
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (opts.killAfterMs !== undefined) {
      timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // Already exited.
        }
      }, opts.killAfterMs);
    }
    const out = await child.output();
    clearTimeout(timer);
    const stderr = new TextDecoder().decode(out.stderr);
    const run: SoakRun = {
      loop,
      args,
      code: out.signal === null ? out.code : null,
      ms: performance.now() - started,
      waited: /waited \d+ ms for a busy store/.test(stderr) || out.code === 6,
      stdout: new TextDecoder().decode(out.stdout),
      stderr,
    };
    return run;
  }
  const idOf = (run: SoakRun): string | null => {
    try {
      const id = JSON.parse(run.stdout).id;
      return typeof id === "string" && /^[0-9a-f]{64}$/.test(id) ? id : null;
    } catch {
      return null;
    }
  };

  try {
    // The workspace: nested text files, one large file (an object file), the agents' files.
    await Deno.mkdir(join(root, "home"));
    for (let i = 0; i < options.files; i++) {
      const dir = join(ws, `src/m${i % 12}`);
      await Deno.mkdir(dir, { recursive: true });
      await Deno.writeTextFile(join(dir, `f${i}.ts`), `export const v${i} = ${i};\n`.repeat(20));
    }
    await Deno.mkdir(join(ws, "agents"), { recursive: true });
    await Deno.writeFile(join(ws, "large.bin"), new Uint8Array(1536 * 1024).fill(7));
    for (
      const [args, what] of [
        [["init"], "init"],
        [["create", "-m", "soak start", "--json"], "first create"],
        [["remote", "add", "origin", `file://${remote}`], "remote add"],
      ] as const
    ) {
      const run = await ctxsnap("setup", [...args]);
      if (run.code !== 0) {
        fail(`setup (${what}) failed`, run);
        throw new Error(failures.join("\n"));
      }
      const id = idOf(run);
      if (id !== null) reported.add(id);
    }

    const started = performance.now();
    const deadline = started + options.durationMs;
    const going = () => performance.now() < deadline;
    const record = (run: SoakRun) => {
      runs.push(run);
      if (runs.length % 50 === 0) {
        log(`${runs.length} processes, ${((performance.now() - started) / 1000).toFixed(0)} s`);
      }
      return run;
    };
    const allow = (run: SoakRun, codes: number[], what: string) => {
      if (run.code === null || !codes.includes(run.code)) fail(what, run);
    };

    const agent = async (n: number) => {
      const session = crypto.randomUUID();
      const file = join(ws, "agents", `agent-${n}.txt`);
      let round = 0;
      while (going()) {
        round++;
        for (const event of EVENTS) {
          if (!going()) break;
          if (event.startsWith("post_tool_use")) {
            await Deno.writeTextFile(file, `agent ${n} round ${round} ${random()}\n`);
          }
          const text = (await Deno.readTextFile(join(FIXTURES, `${event}.json`)))
            .replaceAll("/PROJECT", ws)
            .replaceAll("3f6c0b0e-7b1c-4a35-9a53-2b1d6b2f9e10", session)
            .replaceAll('"prompt":"', `"prompt":"round ${round}: `);
          const run = record(
            await ctxsnap("hook", ["hook", "claude-code", "--json"], { stdin: text }),
          );
          if (run.code !== 0) fail(`a hook failed the agent (${event})`, run);
          const id = idOf(run);
          if (id !== null) reported.add(id);
          else if (!BUSY.test(run.stderr)) fail(`a hook reported no snapshot (${event})`, run);
        }
      }
    };
    const creates = async () => {
      let n = 0;
      while (going()) {
        await Deno.writeTextFile(join(ws, "loop.txt"), `create ${++n}\n`);
        const run = record(await ctxsnap("create", ["create", "-m", `loop ${n}`, "--json"]));
        allow(run, [0, 6], "create");
        const id = run.code === 0 ? idOf(run) : null;
        if (id !== null) reported.add(id);
      }
    };
    const kills = async () => {
      let n = 0;
      while (going()) {
        await Deno.writeTextFile(join(ws, "killed.txt"), `killed ${++n} ${random()}\n`);
        const run = record(
          await ctxsnap("kill", ["create", "-m", `killed ${n}`, "--json"], {
            killAfterMs: Math.floor(random() * 3000),
          }),
        );
        if (run.code !== null) {
          allow(run, [0, 6], "create (to be killed) finished");
          const id = run.code === 0 ? idOf(run) : null;
          if (id !== null) reported.add(id);
        }
      }
    };
    const forgets = async () => {
      let n = 0;
      while (going()) {
        const branch = `scratch-${++n}`;
        const big = join(ws, `scratch-${n}.bin`);
        // A large file (an object file of its own) that only this branch references.
        const bytes = new Uint8Array(1100 * 1024);
        for (let at = 0; at < bytes.length; at += 65536) {
          crypto.getRandomValues(bytes.subarray(at, Math.min(bytes.length, at + 65536)));
        }
        await Deno.writeFile(big, bytes);
        const made = record(
          await ctxsnap("forget", ["create", "--branch", branch, "-m", branch, "--json"]),
        );
        await Deno.remove(big);
        allow(made, [0, 6], "create on a scratch branch");
        if (made.code !== 0) continue;
        const run = record(await ctxsnap("forget", ["forget", "--branch", branch, "--json"]));
        allow(run, [0, 6], "forget");
      }
    };
    const loop = (name: string, args: string[], codes: number[]) => async () => {
      while (going()) allow(record(await ctxsnap(name, args)), codes, name);
    };
    const lists = async () => {
      while (going()) {
        const expected = new Set(reported);
        const run = record(await ctxsnap("list", ["list", "--all", "--json"]));
        allow(run, [0, 6], "list");
        if (run.code !== 0) continue;
        const listed = new Set(
          (JSON.parse(run.stdout).snapshots as { id: string }[]).map((s) => s.id),
        );
        for (const id of expected) {
          if (!listed.has(id)) fail(`list --all misses reported snapshot ${id}`, run);
        }
      }
    };
    await Promise.all([
      ...Array.from({ length: options.agents }, (_, n) => agent(n)),
      creates(),
      kills(),
      forgets(),
      loop("gc", ["gc", "--json"], [0, 6])(),
      loop("verify", ["verify", "--all", "--json"], [0, 6])(),
      lists(),
      loop("push", ["push", "origin", "--json"], [0, 6])(),
    ]);
    const elapsedMs = performance.now() - started;
    log(`${runs.length} processes in ${(elapsedMs / 1000).toFixed(1)} s; settling`);

    // Afterwards: nothing unresolved, everything reported listed and intact.
    const recover = await ctxsnap("final", ["recover", "--json"]);
    if (recover.code !== 0) fail("recover", recover);
    const oplog = await ctxsnap("final", ["log", "--all", "--json"]);
    if (oplog.code !== 0) fail("log --all", oplog);
    else {
      for (const op of JSON.parse(oplog.stdout).operations as { id: string; status: string }[]) {
        if (op.status === "applying" || op.status === "planned") {
          fail(`operation ${op.id} is still ${op.status} after recover`);
        }
      }
    }
    const verify = await ctxsnap("final", ["verify", "--all", "--json"]);
    if (verify.code !== 0) fail("the final verify --all", verify);
    const list = await ctxsnap("final", ["list", "--all", "--json"]);
    if (list.code !== 0) fail("the final list --all", list);
    else {
      const listed = new Set(
        (JSON.parse(list.stdout).snapshots as { id: string }[]).map((s) => s.id),
      );
      for (const id of reported) {
        if (!listed.has(id)) fail(`reported snapshot ${id} is no longer listed`);
      }
    }
    if (verify.code === 0) {
      const checked = new Map(
        (JSON.parse(verify.stdout).snapshots as { id: string; valid: boolean }[]).map((
          s,
        ) => [s.id, s.valid]),
      );
      for (const id of reported) {
        if (checked.get(id) !== true) fail(`reported snapshot ${id} is not intact`);
      }
    }
    return { runs, elapsedMs, reported, failures, final: { verify, recover, list, log: oplog } };
  } finally {
    await new Deno.Command("chmod", { args: ["-R", "u+rwX", root] }).output().catch(() => {});
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

/** The figures of a soak: events per second held, hook latency, how often commands waited. */
export interface SoakFigures {
  /** Hook events answered per second of the run. */
  eventsPerSecond: number;
  /**
   * Hook processes run; hook latency (whole process) at p50 and p99, in ms;
   * hooks that tried a busy store again; hooks that gave up busy (exit 0).
   */
  hooks: { count: number; p50: number; p99: number; retried: number; busy: number };
  /** Processes of every loop, how many said they waited for a busy store, and how many gave up (6). */
  commands: { count: number; waited: number; busy: number; killed: number };
  /** Per loop: processes and exit statuses seen. */
  loops: Record<string, { count: number; codes: Record<string, number> }>;
}

/** Sums up a soak's runs. */
export function soakFigures(result: SoakResult): SoakFigures {
  const hooks = result.runs.filter((r) => r.loop === "hook");
  const loops: SoakFigures["loops"] = {};
  for (const run of result.runs) {
    const entry = loops[run.loop] ??= { count: 0, codes: {} };
    entry.count++;
    const code = run.code === null ? "killed" : String(run.code);
    entry.codes[code] = (entry.codes[code] ?? 0) + 1;
  }
  return {
    eventsPerSecond: hooks.length / (result.elapsedMs / 1000),
    hooks: {
      count: hooks.length,
      p50: percentile(hooks.map((r) => r.ms), 0.5),
      p99: percentile(hooks.map((r) => r.ms), 0.99),
      retried: hooks.filter((r) => r.stderr.includes("trying again")).length,
      busy: hooks.filter((r) => BUSY.test(r.stderr)).length,
    },
    commands: {
      count: result.runs.length,
      waited: result.runs.filter((r) => r.waited).length,
      busy: result.runs.filter((r) => r.code === 6).length,
      killed: result.runs.filter((r) => r.code === null).length,
    },
    loops,
  };
}
