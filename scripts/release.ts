// deno-lint-ignore-file no-console
/**
 * `deno task release`: from this one Linux x86-64 machine, the executables of
 * every release platform into `dist/release/`, with a `SHA256SUMS` file that
 * `sha256sum -c SHA256SUMS` checks:
 *
 *     ctxsnap-<version>-linux-x64
 *     ctxsnap-<version>-linux-arm64
 *     ctxsnap-<version>-darwin-arm64
 *     ctxsnap-<version>-darwin-x64
 *     ctxsnap-<version>-windows-x64.exe
 *
 * Each carries the runtime `RELEASE_RUNTIME` (scripts/_toolchain.ts) names
 * for its platform, from pinned, integrity-checked npm packages; one bundle
 * (esbuild) goes into all of them. The linux-x64 artifact is smoke-tested
 * here (`--version`); proving the others is `.ci/run`'s job (qemu, wine, the
 * Mach-O signature check). `release.json` beside them records, per artifact,
 * the runtime, its version, the size and the SHA-256.
 *
 * Usage:
 *
 *     deno task release [--runtime node|bun] [--only NAME,...] [--out DIR]
 *
 * `--runtime` overrides the choice for every platform (to gather evidence);
 * `--only` builds a subset (SHA256SUMS then lists only those).
 *
 * @module
 */
import { join, resolve } from "node:path";
import {
  BuildError,
  buildExecutable,
  BUN_VERSION,
  bundle,
  hostTarget,
  log,
  NODE_VERSION,
  RELEASE_RUNTIME,
  ROOT,
  smokeTest,
  sourceCommit,
  type Target,
  TARGETS,
} from "./_toolchain.ts";
import { VERSION } from "../lib/version.ts";
import { adhocSign } from "./_macho_sign.ts";
import { checkMachO } from "./check_macho.ts";

/** One built artifact, as `release.json` lists it. */
interface Artifact {
  file: string;
  target: Target["name"];
  runtime: "node" | "bun";
  runtime_version: string;
  bytes: number;
  sha256: string;
  /** macOS: who made the ad-hoc signature (`bun`, or `scripts/_macho_sign.ts`). */
  signed_by?: string;
}

/**
 * A macOS artifact must carry a valid ad-hoc signature (Apple Silicon runs
 * nothing else). Keeps the runtime's own when it checks out; otherwise signs
 * it here. Either way {@linkcode checkMachO} must then pass.
 */
async function ensureSigned(path: string, target: Target, runtime: string): Promise<string> {
  const arch = target.name === "darwin-arm64" ? "arm64" : "x86_64";
  const bytes = await Deno.readFile(path);
  try {
    checkMachO(bytes, arch);
    return runtime;
  } catch (error) {
    log(`${target.name}: ${(error as Error).message}; signing ad hoc`);
  }
  const signed = adhocSign(bytes, "ctxsnap");
  try {
    checkMachO(signed, arch);
  } catch (error) {
    throw new BuildError(`ad-hoc signature of ${path} does not check: ${(error as Error).message}`);
  }
  await Deno.writeFile(path, signed);
  return "scripts/_macho_sign.ts";
}

async function sha256File(path: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", (await Deno.readFile(path)) as BufferSource),
  );
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function parseArgs(argv: string[]): {
  runtime: "node" | "bun" | undefined;
  only: Set<string> | undefined;
  out: string;
} {
  let runtime: "node" | "bun" | undefined;
  let only: Set<string> | undefined;
  let out = join(ROOT, "dist", "release");
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes("=") ? arg.split("=", 2) as [string, string] : [arg];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new BuildError(`${flag} needs a value`);
      return v;
    };
    if (flag === "--runtime") {
      const v = value();
      if (v !== "node" && v !== "bun") throw new BuildError(`--runtime is node or bun, not ${v}`);
      runtime = v;
    } else if (flag === "--only") {
      only = new Set(value().split(","));
      for (const name of only) {
        if (!TARGETS.some((t) => t.name === name)) {
          throw new BuildError(
            `unknown target ${name}; one of ${TARGETS.map((t) => t.name).join(", ")}`,
          );
        }
      }
    } else if (flag === "--out") out = resolve(value());
    else if (flag === "-h" || flag === "--help") {
      console.log(
        "Usage: deno task release [--runtime node|bun] [--only NAME,...] [--out DIR]\n" +
          `targets: ${TARGETS.map((t) => t.name).join(", ")}`,
      );
      Deno.exit(0);
    } else throw new BuildError(`unknown argument: ${arg}`);
  }
  return { runtime, only, out };
}

async function release(argv: string[]): Promise<void> {
  const started = performance.now();
  const { runtime, only, out } = parseArgs(argv);
  const host = hostTarget();
  const targets = TARGETS.filter((t) => only === undefined || only.has(t.name));
  const work = await Deno.makeTempDir({ prefix: "ctxsnap-release-" });
  // Built into a staging dir beside the output, which replaces it only when all succeeded.
  const staging = `${out}.tmp-${Deno.pid}`;
  try {
    await Deno.mkdir(staging, { recursive: true });
    const bundled = await bundle(work);
    const artifacts: Artifact[] = [];
    for (const target of targets) {
      const chosen = runtime ?? RELEASE_RUNTIME[target.name];
      const file = `ctxsnap-${VERSION}-${target.name}${target.suffix}`;
      const path = join(staging, file);
      const t0 = performance.now();
      await buildExecutable(chosen, target, bundled, path, work);
      await Deno.chmod(path, 0o755);
      if (target.name === host.name) await smokeTest(path, chosen);
      const signedBy = target.name.startsWith("darwin-")
        ? await ensureSigned(path, target, chosen)
        : undefined;
      const bytes = (await Deno.stat(path)).size;
      artifacts.push({
        file,
        target: target.name,
        runtime: chosen,
        runtime_version: chosen === "node" ? NODE_VERSION : BUN_VERSION,
        bytes,
        sha256: await sha256File(path),
        ...(signedBy === undefined ? {} : { signed_by: signedBy }),
      });
      log(
        `${file}: ${chosen}, ${(bytes / 1024 / 1024).toFixed(1)} MiB, ${
          ((performance.now() - t0) / 1000).toFixed(1)
        }s`,
      );
    }
    // sha256sum's own format: hash, two spaces, name (read in text mode; same bytes on Linux).
    await Deno.writeTextFile(
      join(staging, "SHA256SUMS"),
      artifacts.map((a) => `${a.sha256}  ${a.file}\n`).join(""),
    );
    await Deno.writeTextFile(
      join(staging, "release.json"),
      JSON.stringify({ version: VERSION, source: await sourceCommit(), artifacts }, null, 2) +
        "\n",
    );
    await Deno.remove(out, { recursive: true }).catch(() => {});
    await Deno.rename(staging, out);
    log(
      `${artifacts.length} artifacts in ${out} in ${
        ((performance.now() - started) / 1000).toFixed(1)
      }s`,
    );
    console.log(artifacts.map((a) => `${a.sha256}  ${a.file}`).join("\n"));
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
    await Deno.remove(staging, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  try {
    await release(Deno.args);
  } catch (error) {
    if (error instanceof BuildError) {
      log(`error: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
}
