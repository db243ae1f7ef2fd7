// deno-lint-ignore-file no-console
/**
 * `deno task compile`: builds one self-contained executable for this
 * machine, `dist/ctxsnap`.
 *
 * Three ways, same sources (docs/DESIGN.md §10):
 *
 * 1. **deno** — `deno compile` onto Deno's `denort` base binary. Used when
 *    `DENORT_BIN` names one, or when `deno compile` can fetch it (tried with a
 *    short timeout; it fails within a second where there is no network).
 * 2. **bun** or **node** — the pinned, integrity-checked toolchain of
 *    `scripts/_toolchain.ts`: `esbuild` bundles `scripts/_node_entry.ts` into
 *    one CommonJS file, then `bun build --compile` or `node --build-sea` makes
 *    it an executable. Without `deno`, `auto` takes the runtime the release
 *    ships for linux-x64 (`RELEASE_RUNTIME`).
 *
 * Either way the result is smoke-tested (`--version` must name the runtime it
 * carries, with no `deno`, `node` or `bun` on `PATH`) before it replaces
 * `dist/ctxsnap`. `deno task release` builds every platform.
 *
 * Usage:
 *
 *     deno task compile [--runtime auto|deno|node|bun] [--out FILE]
 *
 * Environment:
 *
 * - `DENORT_BIN` — a `denort` base binary for `deno compile` (offline builds).
 * - `CTXSNAP_COMPILE_RUNTIME` — default for `--runtime` (`auto`).
 * - `CTXSNAP_DENO_COMPILE_TIMEOUT` — seconds `auto` gives `deno compile` to
 *   fetch `denort` before falling back (default 60).
 * - `CTXSNAP_TOOLCHAIN_DIR` — where the pinned npm packages are installed
 *   (default `dist/.toolchain` in the clone).
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import {
  BuildError,
  buildExecutable,
  bundle,
  hostTarget,
  log,
  RELEASE_RUNTIME,
  ROOT,
  run,
  type Runtime,
  smokeTest,
} from "./_toolchain.ts";

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
    // lib/workspace/io/safe_read.ts and safe_write.ts rely on to refuse symlink swaps)
    // only when all permissions are granted. Narrower flags would either break
    // those guarantees or have to be so broad as to mean the same thing.
    "--allow-all",
    // Started through a computed URL, so deno compile cannot find it by itself.
    "--include",
    "lib/repository/_zlib_worker.ts",
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
      console.log("Usage: deno task compile [--runtime auto|deno|node|bun] [--out FILE]");
      Deno.exit(0);
    } else throw new BuildError(`unknown argument: ${arg}`);
  }
  if (runtime !== "auto" && runtime !== "deno" && runtime !== "node" && runtime !== "bun") {
    throw new BuildError(`--runtime must be auto, deno, node or bun, not ${runtime}`);
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
          log(`${(error as Error).message}\nbuild: falling back to the pinned toolchain`);
        }
      } else if (runtime === "deno") {
        throw new BuildError("deno compile failed; set DENORT_BIN to a denort binary");
      }
    }
    if (!built) {
      await Deno.remove(temp).catch(() => {});
      const host = hostTarget();
      const runtimeOf = runtime === "node" || runtime === "bun"
        ? runtime
        : RELEASE_RUNTIME[host.name];
      const work = await Deno.makeTempDir({ prefix: "ctxsnap-build-" });
      try {
        await buildExecutable(runtimeOf, host, await bundle(work), temp, work);
      } finally {
        await Deno.remove(work, { recursive: true });
      }
      built = runtimeOf;
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
