/**
 * Helpers for subprocess tests of the command line: run the real `cli.ts`
 * under Deno with an isolated config dir and HOME, and make temporary
 * workspaces with a few files.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Absolute path of the repository root. */
export const REPO: string = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** Absolute path of the CLI entry point. */
export const CLI: string = join(REPO, "cli.ts");

/** What one CLI run produced. */
export interface CliResult {
  /** Exit status. */
  code: number;
  /** Standard output, decoded. */
  stdout: string;
  /** Standard output as bytes (bundles written to `-`). */
  stdoutBytes?: Uint8Array;
  /** Standard error, decoded. */
  stderr: string;
  /** Standard output parsed as one JSON document. */
  // deno-lint-ignore no-explicit-any
  json(): any;
}

/** Options for {@linkcode runCli}. */
export interface RunOptions {
  /** Working directory. */
  cwd: string;
  /** Extra or overriding environment variables. */
  env?: Record<string, string>;
  /** Bytes or text fed to standard input (otherwise stdin is empty). */
  stdin?: string | Uint8Array;
  /** Kill the process after this many milliseconds (default 60 s). */
  timeoutMs?: number;
  /** Deno permission flags instead of `-A` (implies a subprocess). */
  permissions?: string[];
  /** Force a subprocess where the process boundary is the point (see {@linkcode RunMode}). */
  mode?: RunMode;
}

/** Config and HOME dirs of each temp workspace, by workspace root. */
const homes = new Map<string, { config: string; home: string }>();

let denoDir: string | undefined;

/** The DENO_DIR of this process, so child processes reuse the npm cache with a temp HOME. */
export function realDenoDir(): string {
  if (denoDir !== undefined) return denoDir;
  const fromEnv = Deno.env.get("DENO_DIR");
  if (fromEnv) return (denoDir = fromEnv);
  const out = new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stderr: "null" })
    .outputSync();
  denoDir = JSON.parse(new TextDecoder().decode(out.stdout)).denoDir as string;
  return denoDir;
}

function dirsFor(cwd: string): { config: string; home: string } | undefined {
  let dir = resolve(cwd);
  for (;;) {
    const found = homes.get(dir);
    if (found) return found;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/**
 * How {@linkcode runCli} runs the command line:
 * - `in-process` (the default): `main()` from `lib/cli/main.ts` in this
 *   isolate, with the environment, working directory and stdin of the run;
 * - `subprocess`: `deno run -A cli.ts` as a child process, for runs where the
 *   process boundary is the point (stdin streaming, permissions, kill -9,
 *   locks), and for every run when `CTXSNAP_TEST_SUBPROCESS=1`;
 * - with `CTXSNAP_BIN=/path/to/ctxsnap` every run spawns that executable
 *   (the CLI suite against a compiled binary).
 */
export type RunMode = "in-process" | "subprocess";

/** The executable every run spawns, from `CTXSNAP_BIN`, or undefined. */
export const CTXSNAP_BIN: string | undefined = Deno.env.get("CTXSNAP_BIN") || undefined;

/**
 * Whether tests that pass Deno permission flags must skip themselves: true
 * when `CTXSNAP_BIN` is set, since a compiled binary has no permission
 * sandbox to apply them to. Such tests use it as their `ignore` condition.
 */
export const NEEDS_DENO_PERMISSIONS: boolean = CTXSNAP_BIN !== undefined;

/**
 * The command line that runs ctxsnap as a child process with `args`:
 * `CTXSNAP_BIN ARGS…` when set, else `deno run -A --quiet cli.ts ARGS…`.
 * For tests that spawn the CLI themselves (kill -9, a terminal, another user).
 */
export function cliCommand(args: string[]): [string, ...string[]] {
  return CTXSNAP_BIN !== undefined
    ? [CTXSNAP_BIN, ...args]
    : [Deno.execPath(), "run", "-A", "--quiet", CLI, ...args];
}
const FORCE_SUBPROCESS = CTXSNAP_BIN !== undefined ||
  Deno.env.get("CTXSNAP_TEST_SUBPROCESS") === "1";

function resultOf(args: string[], code: number, out: Uint8Array, err: Uint8Array): CliResult {
  const stdout = new TextDecoder().decode(out);
  const stderr = new TextDecoder().decode(err);
  return {
    code,
    stdout,
    stdoutBytes: out,
    stderr,
    json() {
      try {
        return JSON.parse(stdout);
      } catch (error) {
        throw new Error(
          `ctxsnap ${args.join(" ")} (exit ${code}) printed no JSON: ${
            (error as Error).message
          }\nstdout: ${stdout}\nstderr: ${stderr}`,
        );
      }
    },
  };
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

async function runInProcess(
  args: string[],
  cwd: string,
  env: Record<string, string>,
  stdin: Uint8Array | undefined,
): Promise<CliResult> {
  const { main } = await import("../lib/cli/main.ts");
  const streams: Record<1 | 2, Uint8Array[]> = { 1: [], 2: [] };
  const encoder = new TextEncoder();
  const code = await main(args, {
    write: (fd, text) =>
      streams[fd].push(typeof text === "string" ? encoder.encode(text) : text.slice()),
    env,
    cwd: resolve(cwd),
    ...(stdin ? { stdin } : {}),
  });
  return resultOf(args, code, concat(streams[1]), concat(streams[2]));
}

/**
 * Runs the command line with `args` in `opts.cwd` and a clean environment:
 * PATH, DENO_DIR, NO_COLOR=1, HOME and CTXSNAP_CONFIG_DIR of the temp
 * workspace containing `cwd` (see {@linkcode tempWorkspace}), then `opts.env`.
 * In-process unless `opts.mode`, `opts.permissions`, `opts.stdin` or the
 * environment (see {@linkcode RunMode}) ask for a subprocess.
 */
export async function runCli(args: string[], opts: RunOptions): Promise<CliResult> {
  const dirs = dirsFor(opts.cwd);
  const env: Record<string, string> = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    DENO_DIR: realDenoDir(),
    NO_COLOR: "1",
    CTXSNAP_DAEMON: "off",
    DENO_NO_UPDATE_CHECK: "1",
    ...(dirs ? { HOME: dirs.home, CTXSNAP_CONFIG_DIR: dirs.config } : {}),
    ...(opts.env ?? {}),
  };
  if (env.CTXSNAP_CONFIG_DIR === undefined || env.HOME === undefined) {
    throw new Error(
      `runCli: ${opts.cwd} is not inside a tempWorkspace(); pass HOME and CTXSNAP_CONFIG_DIR`,
    );
  }
  const stdin = typeof opts.stdin === "string" ? new TextEncoder().encode(opts.stdin) : opts.stdin;
  if (CTXSNAP_BIN !== undefined && opts.permissions !== undefined) {
    throw new Error(
      `runCli: Deno permission flags (${
        opts.permissions.join(" ")
      }) cannot apply to CTXSNAP_BIN; skip this test when NEEDS_DENO_PERMISSIONS`,
    );
  }
  // Standard input is a process boundary (`-` sources read descriptor 0):
  // given bytes run in-process only when the caller says the command reads
  // them through the run's view of stdin (`readInput`), with mode "in-process".
  const subprocess = FORCE_SUBPROCESS || opts.mode === "subprocess" ||
    opts.permissions !== undefined || (stdin !== undefined && opts.mode !== "in-process");
  if (!subprocess) return await runInProcess(args, opts.cwd, env, stdin);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 60_000);
  try {
    const [command, ...argv] = opts.permissions === undefined
      ? cliCommand(args)
      : [Deno.execPath(), "run", ...opts.permissions, "--quiet", CLI, ...args];
    const child = new Deno.Command(command, {
      args: argv,
      cwd: opts.cwd,
      env,
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      signal: controller.signal,
    }).spawn();
    const writer = child.stdin.getWriter();
    try {
      if (stdin !== undefined) await writer.write(stdin);
      await writer.close();
    } catch {
      // The child may exit without reading its input.
    }
    const output = await child.output();
    if (controller.signal.aborted) {
      throw new Error(`ctxsnap ${args.join(" ")} timed out after ${opts.timeoutMs ?? 60_000} ms`);
    }
    return resultOf(args, output.code, output.stdout, output.stderr);
  } finally {
    clearTimeout(timer);
  }
}

/** Options of {@linkcode runMain}. */
export interface MainRunOptions {
  /** The config dir (`CTXSNAP_CONFIG_DIR`) of the run. */
  config: string;
  /** The working directory (default: this process's). */
  cwd?: string;
  /** Extra or overriding environment variables. */
  env?: Record<string, string>;
}

/**
 * Runs `main(args)` in-process with this process's environment minus every
 * `CTXSNAP_*` variable, plus `CTXSNAP_CONFIG_DIR=opts.config` and `opts.env`
 * — seen by this run only (never `Deno.env.set`, which every test file
 * running in parallel in this process would see).
 */
export async function runMain(args: string[], opts: MainRunOptions): Promise<CliResult> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(Deno.env.toObject())) {
    if (!name.startsWith("CTXSNAP_")) env[name] = value;
  }
  env.CTXSNAP_CONFIG_DIR = opts.config;
  Object.assign(env, opts.env ?? {});
  return await runInProcess(args, opts.cwd ?? Deno.cwd(), env, undefined);
}

/** A temporary workspace, with its own config dir and HOME. */
export interface TempWorkspace {
  /** The temp directory holding everything below. */
  root: string;
  /** The workspace directory (holds `a.txt`, `b.md`, `src/main.ts`). */
  path: string;
  /** CTXSNAP_CONFIG_DIR used by {@linkcode runCli} for this workspace. */
  configDir: string;
  /** HOME used by {@linkcode runCli} for this workspace. */
  home: string;
  /** Runs the CLI in the workspace (or `opts.cwd`). */
  run(args: string[], opts?: Partial<RunOptions>): Promise<CliResult>;
  /** Removes everything. */
  cleanup(): Promise<void>;
}

/** The files every temp workspace starts with. */
export const WORKSPACE_FILES: Readonly<Record<string, string>> = {
  "a.txt": "alpha\n",
  "b.md": "# bravo\n",
  "src/main.ts": "console.log('charlie');\n",
};

/** Creates a temp dir with a workspace holding {@linkcode WORKSPACE_FILES}. */
export async function tempWorkspace(
  files: Record<string, string> = WORKSPACE_FILES,
): Promise<TempWorkspace> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-cli-test-" }));
  const path = join(root, "ws");
  const configDir = join(root, "config");
  const home = join(root, "home");
  await Deno.mkdir(path);
  await Deno.mkdir(home);
  for (const [name, text] of Object.entries(files)) {
    const file = join(path, name);
    await Deno.mkdir(dirname(file), { recursive: true });
    await Deno.writeTextFile(file, text);
  }
  homes.set(root, { config: configDir, home });
  return {
    root,
    path,
    configDir,
    home,
    run: (args, opts = {}) => runCli(args, { cwd: path, ...opts }),
    async cleanup() {
      homes.delete(root);
      // Make read-only object files and dirs removable.
      await new Deno.Command("chmod", { args: ["-R", "u+rwX", root] }).output();
      await Deno.remove(root, { recursive: true });
    },
  };
}

/** Runs `fn` with a fresh workspace (holding `files`) on which `ctxsnap init` succeeded. */
export async function withStore(
  fn: (ws: TempWorkspace) => Promise<void>,
  files?: Record<string, string>,
): Promise<void> {
  const ws = await tempWorkspace(files);
  try {
    expectCode(await ws.run(["init"]), 0, "init");
    await fn(ws);
  } finally {
    await ws.cleanup();
  }
}

/** Fails with the command's output (trimmed) unless it exited with `code`. */
export function expectCode(result: CliResult, code: number, what: string): void {
  if (result.code !== code) {
    throw new Error(
      `${what}: expected exit ${code}, got ${result.code}\nstdout: ${
        result.stdout.slice(0, 2000)
      }\nstderr: ${result.stderr.slice(0, 2000)}`,
    );
  }
}
