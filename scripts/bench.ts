// deno-lint-ignore-file no-console
/**
 * Benchmarks: ctxsnap against git, restic, sha256sum and minisign on the same
 * data in one run. Every figure is the median of whole-process runs after a
 * warm-up; results are printed as ratios. Benchmarks never run in tests.
 *
 * Usage:
 *   deno task bench                      # every section
 *   deno task bench -- --only capture    # capture,secrets,verify,restore,scale,large,size,remote,startup,memory,manifest,agent,agent_sessions,gc,retention,chunks,release,timeline,replay,soak,trees,daemon
 *   deno task bench -- --runs 7 --quick  # fewer/smaller data sets
 *
 * The real source tree is Debian's `/usr/lib/python3` (about 2.9k files of
 * Python packages and their compiled bytecode, present wherever python3 is),
 * else npm's own package tree (about 2k files), or `--tree DIR`.
 * @module
 */
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { isSecretPath } from "../lib/workspace/io/capture_policy.ts";
import { SecretScanner } from "../lib/workspace/io/secret_scan.ts";
import { TarWriter } from "../lib/format/tar.ts";
import { Store } from "../lib/repository/store.ts";
import { captureWorkspace } from "../lib/workspace/capture.ts";
import { DAEMON_V8_FLAGS } from "../lib/integrations/watch/daemon.ts";
import process from "node:process";

const args = parseArgs({
  // `deno task bench -- --only x` passes the `--` through.
  args: Deno.args[0] === "--" ? Deno.args.slice(1) : Deno.args,
  options: {
    only: { type: "string" },
    runs: { type: "string", default: "5" },
    tree: { type: "string" },
    quick: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
});
const RUNS = Math.max(1, Number(args.values.runs));
const QUICK = args.values.quick === true;
const only = new Set((args.values.only ?? "").split(",").filter((s) => s !== ""));
const want = (name: string) => only.size === 0 || only.has(name);
const CLI = fileURLToPath(new URL("../cli.ts", import.meta.url));
const REPO = fileURLToPath(new URL("..", import.meta.url));
const root = await Deno.makeTempDir({ prefix: "ctxsnap-bench-" });
const env = {
  CTXSNAP_CONFIG_DIR: `${root}/config`,
  NO_COLOR: "1",
  // No background watch process unless a section starts one itself.
  CTXSNAP_DAEMON: "off",
  RESTIC_PASSWORD: "bench",
  GIT_AUTHOR_NAME: "bench",
  GIT_AUTHOR_EMAIL: "bench@example.invalid",
  GIT_COMMITTER_NAME: "bench",
  GIT_COMMITTER_EMAIL: "bench@example.invalid",
};
const results: Record<string, unknown> = {};

async function have(tool: string): Promise<boolean> {
  try {
    const out = await new Deno.Command("sh", { args: ["-c", `command -v ${tool}`], stdout: "null" })
      .output();
    return out.success;
  } catch {
    return false;
  }
}

interface Run {
  ms: number;
  /** User + system CPU time of the process and its children (GNU time), or NaN. */
  cpuMs: number;
  stdout: string;
  stderr: string;
}

const GNU_TIME = await Deno.stat("/usr/bin/time").then(() => "/usr/bin/time", () => null);
const timeFile = `${root}/cpu-time`;

async function run(cmd: string[], options: { cwd?: string; check?: boolean } = {}): Promise<Run> {
  const argv = GNU_TIME ? [GNU_TIME, "-f", "%U %S", "-o", timeFile, ...cmd] : cmd;
  const started = performance.now();
  const out = await new Deno.Command(argv[0]!, {
    args: argv.slice(1),
    cwd: options.cwd ?? root,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const ms = performance.now() - started;
  let cpuMs = NaN;
  if (GNU_TIME) {
    const [user, system] = (await Deno.readTextFile(timeFile)).trim().split(/\s+/).slice(-2);
    cpuMs = (Number(user) + Number(system)) * 1000;
  }
  const result = {
    ms,
    cpuMs,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
  if ((options.check ?? true) && !out.success) {
    throw new Error(`${cmd.join(" ")} failed (${out.code}): ${result.stderr.slice(0, 2000)}`);
  }
  return result;
}

const sh = (script: string, cwd?: string) => run(["sh", "-c", script], cwd ? { cwd } : {});
const ctxsnap = (argv: string[], cwd?: string) =>
  run([Deno.execPath(), "run", "-A", CLI, ...argv], cwd ? { cwd } : {});

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Median wall time of RUNS timed runs after one warm-up; `setup` runs untimed before each. */
async function measure(
  setup: (i: number) => Promise<void>,
  timed: (i: number) => Promise<Run>,
): Promise<number> {
  await setup(-1);
  await timed(-1);
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await setup(i);
    times.push((await timed(i)).ms);
  }
  return median(times);
}

/** One side of an interleaved comparison: untimed `setup`, then the timed run. */
interface Subject {
  setup: (i: number) => Promise<void>;
  timed: (i: number) => Promise<Run>;
}

/**
 * Like {@linkcode measure} for several subjects at once, interleaved: each
 * round runs every subject once, so a machine that speeds up or slows down
 * during the benchmark (a shared virtual machine does) affects all alike.
 * Returns each subject's median wall and CPU time.
 */
async function interleaved<K extends string>(
  subjects: Record<K, Subject>,
): Promise<Record<K, { wall: number; cpu: number }>> {
  const names = Object.keys(subjects) as K[];
  const walls = new Map<K, number[]>(names.map((k) => [k, []]));
  const cpus = new Map<K, number[]>(names.map((k) => [k, []]));
  for (let i = -1; i < RUNS; i++) {
    for (const name of names) {
      await subjects[name].setup(i);
      const result = await subjects[name].timed(i);
      if (i < 0) continue; // warm-up
      walls.get(name)!.push(result.ms);
      cpus.get(name)!.push(result.cpuMs);
    }
  }
  return Object.fromEntries(
    names.map((k) => [k, { wall: median(walls.get(k)!), cpu: median(cpus.get(k)!) }]),
  ) as Record<K, { wall: number; cpu: number }>;
}

/** Peak RSS in MiB of one run, from GNU time (`check: false` for a run expected to fail). */
async function peakRss(cmd: string[], cwd?: string, check = true): Promise<number> {
  const out = await run(["/usr/bin/time", "-f", "RSS_KB=%M", ...cmd], {
    ...(cwd ? { cwd } : {}),
    check,
  });
  const match = /RSS_KB=(\d+)/.exec(out.stderr);
  return match ? Number(match[1]) / 1024 : NaN;
}

/** Peak RSS in MiB of one `ctxsnap` run. */
const ctxsnapRss = (argv: string[]) => peakRss([Deno.execPath(), "run", "-A", CLI, ...argv]);

function fmt(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`;
}

function times(r: number): string {
  return r >= 1 ? `${r.toFixed(2)}× faster` : `${(1 / r).toFixed(2)}× slower`;
}

/** Prints wall-time medians and their ratio, and CPU-time medians when `cpu` is given. */
function ratio(
  name: string,
  ours: number,
  theirs: number,
  what: string,
  cpu?: [number, number],
): void {
  console.log(
    `  ${name.padEnd(44)} ctxsnap ${fmt(ours).padStart(9)}   ${what} ${fmt(theirs).padStart(9)}   ${
      times(theirs / ours)
    }`,
  );
  if (cpu && cpu.every(Number.isFinite)) {
    console.log(
      `  ${"".padEnd(44)}     cpu ${fmt(cpu[0]).padStart(9)}   ${"cpu".padStart(what.length)} ${
        fmt(cpu[1]).padStart(9)
      }   (user + system)`,
    );
  }
}

async function copyTree(from: string, to: string): Promise<void> {
  await sh(`mkdir -p '${to}' && cp -a '${from}/.' '${to}/'`);
}

async function generateTree(dir: string, files: number): Promise<void> {
  // Small text files in a directory fan-out of 100 per directory.
  await Deno.mkdir(dir, { recursive: true });
  const encoder = new TextEncoder();
  for (let i = 0; i < files; i++) {
    const sub = `${dir}/d${Math.floor(i / 100)}`;
    if (i % 100 === 0) await Deno.mkdir(sub, { recursive: true });
    await Deno.writeFile(`${sub}/f${i}.txt`, encoder.encode(`file ${i}\n${"x".repeat(i % 300)}\n`));
  }
}

async function du(dir: string): Promise<number> {
  const out = await sh(`du -sb '${dir}' | cut -f1`);
  return Number(out.stdout.trim());
}

console.log(`ctxsnap benchmarks — ${new Date().toISOString()}`);
console.log(
  `machine: ${(await sh("nproc")).stdout.trim()} cores, ${(await sh("uname -srm")).stdout.trim()}`,
);
console.log(`deno ${Deno.version.deno}; runs: median of ${RUNS} after a warm-up; data in ${root}`);

const source = args.values.tree ??
  (await Deno.stat("/usr/lib/python3").then(
    () => "/usr/lib/python3",
    () => "/usr/lib/node_modules/npm",
  ));
const tree = `${root}/tree`;
await copyTree(source, tree);
// ctxsnap skips node_modules/, __pycache__/ and .venv/ by default: rename those
// directories so every tool sees the same files. Drop the tree's own ignore
// files and the files ctxsnap never captures (secrets by name such as *.pem,
// or by content such as a private-key block).
await sh(
  `cd '${tree}' && find . -depth -type d \\( -name node_modules -o -name __pycache__ -o -name .venv \\) ` +
    `-exec sh -c 'mv "$1" "$(dirname "$1")/vendored-$(basename "$1")"' _ {} \\; ` +
    `&& find . \\( -name .gitignore -o -name .npmignore -o -name .ctxsnapignore \\) -delete`,
);
const removed: string[] = [];
for (const path of (await sh(`cd '${tree}' && find . -type f`)).stdout.trim().split("\n")) {
  const scanner = new SecretScanner();
  if (!isSecretPath(path.slice(2))) scanner.update(await Deno.readFile(`${tree}/${path}`));
  if (isSecretPath(path.slice(2)) || scanner.found !== null) {
    await Deno.remove(`${tree}/${path}`);
    removed.push(path.slice(2));
  }
}
const treeFiles = Number((await sh(`find '${tree}' -type f | wc -l`)).stdout.trim());
const treeBytes = await du(tree);
console.log(
  `real tree: ${source} — ${treeFiles} files, ${(treeBytes / 1048576).toFixed(1)} MiB` +
    (removed.length ? ` (left out, as ctxsnap does: ${removed.join(", ")})` : "") + "\n",
);
const hasRestic = await have("restic");

if (want("capture")) {
  console.log("capture (whole process, fresh store / repository each run)");
  let n = 0;
  const store = () => `${root}/store-${n}`;
  const firstRuns = await interleaved({
    ctxsnap: {
      setup: async () => {
        n++;
        await ctxsnap(["--store", store(), "init", "--workspace", tree]);
      },
      timed: () => ctxsnap(["--store", store(), "create", "-m", "bench"]),
    },
    git: {
      setup: async () => {
        n++;
        await sh(`git init -q --bare '${store()}'`);
      },
      timed: () =>
        sh(
          `GIT_DIR='${store()}' GIT_WORK_TREE='${tree}' sh -c 'git add -A && git write-tree' >/dev/null`,
        ),
    },
    ...(hasRestic
      ? {
        restic: {
          setup: async () => {
            n++;
            await run(["restic", "init", "--quiet", "-r", store()]);
          },
          timed: () => run(["restic", "backup", "--quiet", "-r", store(), "."], { cwd: tree }),
        },
      }
      : {}),
  } as Record<string, Subject>);
  const first = firstRuns.ctxsnap!;
  for (const other of ["git", "restic"]) {
    const theirs = firstRuns[other];
    if (theirs === undefined) continue;
    ratio(
      `first capture vs ${other === "git" ? "git add -A && write-tree" : "restic backup"}`,
      first.wall,
      theirs.wall,
      other,
      [first.cpu, theirs.cpu],
    );
    results[`${other}_first_ms`] = theirs.wall;
    results[`${other}_first_cpu_ms`] = theirs.cpu;
  }
  results.first_capture_ms = first.wall;
  results.first_capture_cpu_ms = first.cpu;
  // Unchanged recapture: one store, files older than the racy window.
  await sh(`find '${tree}' -exec touch -h -d '2 minutes ago' {} +`);
  await new Promise((r) => setTimeout(r, 1100));
  n++;
  const warm = store();
  await ctxsnap(["--store", warm, "init", "--workspace", tree]);
  await ctxsnap(["--store", warm, "create", "-m", "warm"]);
  const again = await measure(
    async () => {},
    () => ctxsnap(["--store", warm, "create", "-m", "again", "--json"]),
  );
  const last = JSON.parse((await ctxsnap(["--store", warm, "create", "--json"])).stdout);
  n++;
  const gitWarm = store();
  await sh(
    `git init -q --bare '${gitWarm}' && GIT_DIR='${gitWarm}' GIT_WORK_TREE='${tree}' git add -A`,
  );
  const gitAgain = await measure(
    async () => {},
    () =>
      sh(
        `GIT_DIR='${gitWarm}' GIT_WORK_TREE='${tree}' sh -c 'git add -A && git write-tree' >/dev/null`,
      ),
  );
  const startup = await measure(() => Promise.resolve(), () => ctxsnap(["--version"]));
  ratio("unchanged recapture vs git (unchanged)", again, gitAgain, "git");
  console.log(
    `    recapture read ${last.capture.hashed} files, reused ${last.capture.reused}; ` +
      `runtime start-up (ctxsnap --version) ${fmt(startup)}; ` +
      `per file beyond start-up ${((again - startup) * 1000 / treeFiles).toFixed(1)} µs`,
  );
  results.recapture_ms = again;
  results.git_recapture_ms = gitAgain;
  results.startup_ms = startup;
  results.recapture_hashed = last.capture.hashed;
  console.log();
}

if (want("secrets")) {
  // In-process, so the figures are the capture's own, without the runtime's start-up.
  console.log("secret detection by content: first capture of the tree with and without the scan");
  const capture = async (scan: boolean, i: number) => {
    const dir = `${root}/secrets-${scan ? "scan" : "plain"}-${i}`;
    const store = Store.init(dir, tree);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const result = store.transaction(
      "capture",
      () => captureWorkspace(store, { scanContent: scan }),
    );
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    store.close();
    await Deno.remove(dir, { recursive: true });
    return { ms, cpuMs: (cpu.user + cpu.system) / 1000, files: result.stats.files };
  };
  await capture(true, -1);
  await capture(false, -1);
  const walls: Record<string, number[]> = { scan: [], plain: [] };
  const cpus: Record<string, number[]> = { scan: [], plain: [] };
  for (let i = 0; i < RUNS; i++) {
    // Alternate which goes first, so drift on a shared machine affects both alike.
    for (const scan of i % 2 === 0 ? [true, false] : [false, true]) {
      const run = await capture(scan, i);
      walls[scan ? "scan" : "plain"]!.push(run.ms);
      cpus[scan ? "scan" : "plain"]!.push(run.cpuMs);
    }
  }
  // The scanner alone, over every file's bytes in memory.
  const files: Uint8Array[] = [];
  for (const path of (await sh(`cd '${tree}' && find . -type f`)).stdout.trim().split("\n")) {
    files.push(await Deno.readFile(`${tree}/${path}`));
  }
  const bytes = files.reduce((n, f) => n + f.length, 0);
  const scanTimes: number[] = [];
  const scanCpus: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (const file of files) new SecretScanner().update(file);
    scanTimes.push(performance.now() - t0);
    const cpu = process.cpuUsage(cpu0);
    scanCpus.push((cpu.user + cpu.system) / 1000);
  }
  const scanMs = median(scanTimes);
  const scanOnlyCpu = median(scanCpus);
  const [scanWall, plainWall] = [median(walls.scan!), median(walls.plain!)];
  const [scanCpu, plainCpu] = [median(cpus.scan!), median(cpus.plain!)];
  console.log(
    `  capture with detection ${fmt(scanWall)} (cpu ${fmt(scanCpu)}), without ${fmt(plainWall)} ` +
      `(cpu ${fmt(plainCpu)}): ${(scanWall / plainWall).toFixed(2)}× wall, ${
        (scanCpu / plainCpu).toFixed(2)
      }× cpu`,
  );
  console.log(
    `  the scanner alone: ${fmt(scanMs)} (cpu ${fmt(scanOnlyCpu)}) for ${files.length} files, ${
      (bytes / 1048576).toFixed(1)
    } MiB: ${(bytes / 1048576 / (scanOnlyCpu / 1000)).toFixed(0)} MiB/s of CPU time\n`,
  );
  Object.assign(results, {
    secrets_scan_ms: scanWall,
    secrets_plain_ms: plainWall,
    secrets_scan_cpu_ms: scanCpu,
    secrets_plain_cpu_ms: plainCpu,
    secrets_scanner_cpu_ms: scanOnlyCpu,
    secrets_scanner_mib_s: bytes / 1048576 / (scanOnlyCpu / 1000),
  });
}

if (want("verify")) {
  console.log("verify --all hashing throughput vs sha256sum over the same bytes");
  const big = `${root}/hash-ws`;
  await Deno.mkdir(big, { recursive: true });
  const mib = QUICK ? 256 : 1024;
  await sh(`head -c ${mib}M /dev/urandom > '${big}/data.bin'`);
  const store = `${root}/verify-store`;
  await ctxsnap(["--store", store, "init", "--workspace", big]);
  const made = JSON.parse(
    (await ctxsnap(["--store", store, "create", "-m", "verify", "--max-file-size", "4G", "--json"]))
      .stdout,
  );
  if (made.workspace.files !== 1) throw new Error("the data file was not captured");
  const ours = await measure(
    () => Promise.resolve(),
    () => ctxsnap(["--store", store, "verify", "--all"]),
  );
  const theirs = await measure(
    () => Promise.resolve(),
    () => sh(`sha256sum '${big}/data.bin' >/dev/null`),
  );
  const ourRate = mib / (ours / 1000);
  const theirRate = mib / (theirs / 1000);
  console.log(
    `  ${mib} MiB: ctxsnap ${ourRate.toFixed(0)} MiB/s, sha256sum ${
      theirRate.toFixed(0)
    } MiB/s → ` +
      `${(100 * ourRate / theirRate).toFixed(0)}% of sha256sum\n`,
  );
  results.verify_mib_s = ourRate;
  results.sha256sum_mib_s = theirRate;
  await Deno.remove(big, { recursive: true });
}

if (want("restore")) {
  console.log("restore of the real tree into an empty directory");
  const store = `${root}/restore-store`;
  await ctxsnap(["--store", store, "init", "--workspace", tree]);
  const snap = JSON.parse((await ctxsnap(["--store", store, "create", "--json"])).stdout);
  const repo = `${root}/restic-restore`;
  if (hasRestic) {
    await run(["restic", "init", "--quiet", "-r", repo]);
    await run(["restic", "backup", "--quiet", "-r", repo, "."], { cwd: tree });
  }
  let n = 0;
  let lastOut = "";
  const next = () => {
    n++;
    return Promise.resolve();
  };
  const runs = await interleaved({
    ctxsnap: {
      setup: next,
      timed: () =>
        ctxsnap(["--store", store, "materialize", snap.id, lastOut = `${root}/out-${n}`]),
    },
    ...(hasRestic
      ? {
        restic: {
          setup: next,
          timed: () =>
            run([
              "restic",
              "restore",
              "--quiet",
              "-r",
              repo,
              "latest",
              "--target",
              `${root}/out-${n}`,
            ]),
        },
      }
      : {}),
  } as Record<string, Subject>);
  await sh(`diff -r '${tree}' '${lastOut}' >/dev/null`);
  const ours = runs.ctxsnap!;
  const theirs = runs.restic;
  if (theirs) {
    ratio("restore (materialize) vs restic restore", ours.wall, theirs.wall, "restic", [
      ours.cpu,
      theirs.cpu,
    ]);
    results.restic_restore_ms = theirs.wall;
    results.restic_restore_cpu_ms = theirs.cpu;
  } else console.log(`  ctxsnap ${fmt(ours.wall)} (restic not installed)`);
  results.restore_ms = ours.wall;
  results.restore_cpu_ms = ours.cpu;
  console.log();
}

if (want("scale")) {
  console.log("capture of generated trees of small files (linearity)");
  const sizes = QUICK ? [10_000, 30_000] : [10_000, 30_000, 100_000];
  const rows: string[] = [];
  for (const files of sizes) {
    const dir = `${root}/gen-${files}`;
    await generateTree(dir, files);
    const store = `${root}/gen-store-${files}`;
    await ctxsnap(["--store", store, "init", "--workspace", dir]);
    const t = (await ctxsnap(["--store", store, "create", "-m", "scale"])).ms;
    rows.push(
      `  ${String(files).padStart(7)} files: ${fmt(t).padStart(9)}  (${
        (t * 1000 / files).toFixed(1)
      } µs/file)`,
    );
    results[`scale_${files}_ms`] = t;
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(store, { recursive: true });
  }
  console.log(rows.join("\n") + "\n");
}

if (want("large") && (await have("/usr/bin/time"))) {
  const gib = QUICK ? 1 : 2;
  console.log(`a workspace holding one ${gib} GiB file: peak RSS per command`);
  const ws = `${root}/large-ws`;
  await Deno.mkdir(ws, { recursive: true });
  await sh(`head -c ${gib}G /dev/urandom > '${ws}/big.bin'`);
  const store = `${root}/large-store`;
  await ctxsnap(["--store", store, "init", "--workspace", ws]);
  const create = await ctxsnapRss([
    "--store",
    store,
    "create",
    "-m",
    "large",
    "--max-file-size",
    "4G",
  ]);
  const listed =
    JSON.parse((await ctxsnap(["--store", store, "list", "--json"])).stdout).snapshots[0];
  if (listed.workspace?.files !== 1) throw new Error(`the ${gib} GiB file was not captured`);
  const id = listed.id;
  const verify = await ctxsnapRss(["--store", store, "verify", "--all"]);
  const publish = await ctxsnapRss([
    "--store",
    store,
    "publish",
    id,
    "--with-workspace",
    "--out",
    `${root}/large.ctxbundle`,
  ]);
  const store2 = `${root}/large-store2`;
  await Deno.mkdir(`${root}/large-ws2`, { recursive: true });
  await ctxsnap(["--store", store2, "init", "--workspace", `${root}/large-ws2`]);
  const imp = await ctxsnapRss(["--store", store2, "import", `${root}/large.ctxbundle`]);
  const restore = await ctxsnapRss(["--store", store2, "materialize", id, `${root}/large-out`]);
  console.log(
    `  create ${create.toFixed(0)} MiB, verify --all ${verify.toFixed(0)} MiB, publish ${
      publish.toFixed(0)
    } MiB, ` +
      `import ${imp.toFixed(0)} MiB, restore ${restore.toFixed(0)} MiB (target < 256 MiB)\n`,
  );
  Object.assign(results, { large_rss_mib: { create, verify, publish, import: imp, restore } });
  for (
    const p of [
      ws,
      store,
      store2,
      `${root}/large.ctxbundle`,
      `${root}/large-out`,
      `${root}/large-ws2`,
    ]
  ) {
    await Deno.remove(p, { recursive: true }).catch(() => {});
  }
}

if (want("chunks")) {
  // Issue 25, content-defined chunks: one byte changed in the middle of a
  // 120 MB file, and what the second checkpoint adds to the store.
  console.log("chunks: one byte changed in a 120 MB file");
  const ws = `${root}/chunks-ws`;
  await Deno.mkdir(ws, { recursive: true });
  await sh(`head -c 120000000 /dev/urandom > '${ws}/big.bin'`);
  await ctxsnap(["init"], ws);
  const first = await ctxsnap(["create", "-m", "first"], ws);
  const before = await du(`${ws}/.ctxsnap`);
  await sh(
    `printf 'x' | dd of='${ws}/big.bin' bs=1 seek=60000000 conv=notrunc status=none`,
  );
  const second = await ctxsnap(["create", "-m", "one byte"], ws);
  const after = await du(`${ws}/.ctxsnap`);
  console.log(
    `  du .ctxsnap: ${(before / 1048576).toFixed(1)} MiB after the first capture (${
      fmt(first.ms)
    }), ` +
      `${(after / 1048576).toFixed(1)} MiB after the one-byte change (${fmt(second.ms)}): ` +
      `+${((after - before) / 1048576).toFixed(2)} MiB (target ≤ 2 MiB)\n`,
  );
  Object.assign(results, {
    chunks: { before, after, first_ms: first.ms, second_ms: second.ms },
  });
  await Deno.remove(ws, { recursive: true }).catch(() => {});
}

if (want("size") && hasRestic) {
  console.log("store size after capturing successive commits of a real repository (this one)");
  const commits = (await sh(`git -C '${REPO}' rev-list --reverse HEAD | tail -30`)).stdout.trim()
    .split("\n");
  const ws = `${root}/size-ws`;
  const store = `${root}/size-store`;
  const repo = `${root}/size-restic`;
  await run(["git", "clone", "-q", REPO, ws]);
  await ctxsnap(["--store", store, "init", "--workspace", ws]);
  await run(["restic", "init", "--quiet", "-r", repo]);
  for (const commit of commits) {
    await run(["git", "-C", ws, "checkout", "-q", "--detach", commit]);
    await ctxsnap(["--store", store, "create", "-m", commit]);
    await run(["restic", "backup", "--quiet", "-r", repo, "--exclude", ".git", "."], { cwd: ws });
  }
  const ours = await du(store);
  const theirs = await du(repo);
  console.log(
    `  ${commits.length} commits: ctxsnap ${(ours / 1024).toFixed(0)} KiB, restic ${
      (theirs / 1024).toFixed(0)
    } KiB → ` +
      `${(ours / theirs).toFixed(2)}× restic\n`,
  );
  Object.assign(results, {
    size_bytes: ours,
    restic_size_bytes: theirs,
    size_commits: commits.length,
  });
}

/**
 * A TLS-terminating proxy in front of the S3 server that counts the bytes
 * (of HTTP, after TLS) each way: both tools talk to the server through it, so
 * "bytes sent" includes all of HTTP for both. TLS because restic's S3 client
 * signs payloads in aws-chunked form over plain HTTP, which Swift's s3api
 * refuses; over HTTPS both tools send plain signed or unsigned payloads.
 */
function countingProxy(
  target: URL,
  tls: { cert: string; key: string },
): { endpoint: string; sent: number; received: number; close(): void } {
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, ...tls });
  const counts = {
    endpoint: `https://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    sent: 0,
    received: 0,
    close: () => listener.close(),
  };
  const pump = async (from: Deno.Conn, to: Deno.Conn, key: "sent" | "received") => {
    const buffer = new Uint8Array(64 * 1024);
    for (;;) {
      const n = await from.read(buffer).catch(() => null);
      if (n === null) break;
      counts[key] += n;
      let done = 0;
      while (done < n) done += await to.write(buffer.subarray(done, n));
    }
    await to.closeWrite().catch(() => {});
  };
  (async () => {
    for await (const conn of listener) {
      (async () => {
        const upstream = await Deno.connect({
          hostname: target.hostname,
          port: Number(target.port),
        });
        await Promise.all([pump(conn, upstream, "sent"), pump(upstream, conn, "received")]);
        conn.close();
        upstream.close();
      })().catch(() => {});
    }
  })().catch(() => {});
  return counts;
}

/** A throwaway CA and a server certificate for 127.0.0.1 (openssl), for the proxy. */
async function testCertificates(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  await Deno.mkdir(dir, { recursive: true });
  const ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  await sh(
    `cd '${dir}' && openssl req -x509 ${ec} -keyout ca.key -out ca.pem -days 2 -subj /CN=bench-ca 2>/dev/null` +
      ` && openssl req ${ec} -keyout key.pem -out req.csr -subj /CN=127.0.0.1 2>/dev/null` +
      ` && printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > ext.cnf` +
      ` && openssl x509 -req -in req.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cert.pem -days 2 -extfile ext.cnf 2>/dev/null`,
  );
  return {
    ca: `${dir}/ca.pem`,
    cert: await Deno.readTextFile(`${dir}/cert.pem`),
    key: await Deno.readTextFile(`${dir}/key.pem`),
  };
}

if (want("remote") && hasRestic) {
  console.log(
    `remote: push and pull ${
      QUICK ? 10 : 30
    } successive commits of this repository through OpenStack Swift's S3 API, vs restic`,
  );
  const started = await run(["bash", `${REPO}/scripts/swift.sh`, "start"], { check: false });
  if (started.stdout.trim() === "") {
    console.log(`  skipped: scripts/swift.sh start failed (${started.stderr.trim()})\n`);
  } else {
    const settings = new Map(
      started.stdout.trim().split("\n").map((l) => l.split("=", 2) as [string, string]),
    );
    const { S3Backend } = await import("../lib/remote/s3_backend.ts");
    const bucket = `bench-${crypto.randomUUID().slice(0, 8)}`;
    await new S3Backend({
      endpoint: new URL(settings.get("AWS_ENDPOINT_URL")!),
      bucket,
      prefix: "",
      region: "us-east-1",
      pathStyle: true,
      credentials: {
        accessKeyId: settings.get("AWS_ACCESS_KEY_ID")!,
        secretAccessKey: settings.get("AWS_SECRET_ACCESS_KEY")!,
      },
    }).createBucket();
    const certs = await testCertificates(`${root}/tls`);
    const proxy = countingProxy(new URL(settings.get("AWS_ENDPOINT_URL")!), certs);
    Object.assign(env, {
      DENO_CERT: certs.ca,
      AWS_ACCESS_KEY_ID: settings.get("AWS_ACCESS_KEY_ID")!,
      AWS_SECRET_ACCESS_KEY: settings.get("AWS_SECRET_ACCESS_KEY")!,
      AWS_REGION: "us-east-1",
    });
    // --quick: 10 commits instead of 30.
    const commits =
      (await sh(`git -C '${REPO}' rev-list --reverse HEAD | tail -${QUICK ? 10 : 30}`))
        .stdout.trim().split("\n");
    const ws = `${root}/remote-ws`;
    const wsB = `${root}/remote-ws-b`;
    await run(["git", "clone", "-q", REPO, ws]);
    await Deno.mkdir(wsB);
    const storeA = `${root}/remote-store-a`;
    const storeB = `${root}/remote-store-b`;
    const configB = `${root}/config-b`;
    await ctxsnap(["--store", storeA, "init", "--workspace", ws]);
    const key = JSON.parse((await ctxsnap(["key", "show", "--json"])).stdout).public_key;
    const url = `s3://${bucket}/ctxsnap`;
    await ctxsnap([
      "--store",
      storeA,
      "remote",
      "add",
      "origin",
      url,
      "--endpoint",
      proxy.endpoint,
    ]);
    const asB = (argv: string[]) =>
      run(["env", `CTXSNAP_CONFIG_DIR=${configB}`, Deno.execPath(), "run", "-A", CLI, ...argv]);
    await asB(["--store", storeB, "init", "--workspace", wsB]);
    await asB(["--store", storeB, "remote", "add", "origin", url, "--endpoint", proxy.endpoint]);
    const repo = `-r s3:${proxy.endpoint}/${bucket}/restic --cacert '${certs.ca}'`;
    await sh(`restic ${repo} init --quiet`);
    interface Step {
      ms: number;
      bytes: number;
    }
    const rows: Record<string, Step[]> = {
      create: [],
      push: [],
      pull: [],
      restic_backup: [],
      restic_restore: [],
    };
    const through = async (fn: () => Promise<Run>, dir: "sent" | "received") => {
      const before = proxy[dir];
      const result = await fn();
      return { ms: result.ms, bytes: proxy[dir] - before };
    };
    for (const [i, commit] of commits.entries()) {
      await run(["git", "-C", ws, "checkout", "-q", "--detach", commit]);
      rows.create!.push(
        await through(() => ctxsnap(["--store", storeA, "create", "-m", commit]), "sent"),
      );
      rows.push!.push(await through(() => ctxsnap(["--store", storeA, "push"]), "sent"));
      rows.pull!.push(
        await through(() => asB(["--store", storeB, "pull", "--trust", key]), "received"),
      );
      rows.restic_backup!.push(
        await through(() => sh(`restic ${repo} backup --quiet --exclude .git .`, ws), "sent"),
      );
      const target = `${root}/restic-restore-${i}`;
      rows.restic_restore!.push(
        await through(
          () => sh(`restic ${repo} restore latest --quiet --target '${target}'`),
          "received",
        ),
      );
      await Deno.remove(target, { recursive: true }).catch(() => {});
    }
    proxy.close();
    const kib = (b: number) => `${(b / 1024).toFixed(0)} KiB`;
    const summary = (name: string) => {
      const steps = rows[name]!;
      const rest = steps.slice(1);
      return {
        first_ms: steps[0]!.ms,
        first_bytes: steps[0]!.bytes,
        incremental_median_ms: median(rest.map((s) => s.ms)),
        incremental_median_bytes: median(rest.map((s) => s.bytes)),
        total_ms: steps.reduce((n, s) => n + s.ms, 0),
        total_bytes: steps.reduce((n, s) => n + s.bytes, 0),
      };
    };
    const push = summary("push");
    const create = summary("create");
    const pull = summary("pull");
    const backup = summary("restic_backup");
    const restore = summary("restic_restore");
    const line = (
      what: string,
      ours: ReturnType<typeof summary>,
      theirs: ReturnType<typeof summary>,
      other: string,
    ) => {
      ratio(`${what}, first`, ours.first_ms, theirs.first_ms, other);
      console.log(
        `  ${"".padEnd(44)}   bytes ${kib(ours.first_bytes).padStart(9)}   ${
          "bytes".padStart(other.length)
        } ${kib(theirs.first_bytes).padStart(9)}   ${
          (ours.first_bytes / theirs.first_bytes).toFixed(2)
        }×`,
      );
      ratio(
        `${what}, incremental (median of ${commits.length - 1})`,
        ours.incremental_median_ms,
        theirs.incremental_median_ms,
        other,
      );
      console.log(
        `  ${"".padEnd(44)}   bytes ${kib(ours.incremental_median_bytes).padStart(9)}   ${
          "bytes".padStart(other.length)
        } ${kib(theirs.incremental_median_bytes).padStart(9)}   ${
          (ours.incremental_median_bytes / theirs.incremental_median_bytes).toFixed(2)
        }×`,
      );
      console.log(
        `  ${"".padEnd(44)}   all ${commits.length}: ${fmt(ours.total_ms)}, ${
          kib(ours.total_bytes)
        } vs ${fmt(theirs.total_ms)}, ${kib(theirs.total_bytes)}`,
      );
    };
    line("push vs restic backup", push, backup, "restic");
    const createPush = {
      ...push,
      first_ms: push.first_ms + create.first_ms,
      incremental_median_ms: median(
        rows.push!.slice(1).map((s, i) => s.ms + rows.create![i + 1]!.ms),
      ),
      total_ms: push.total_ms + create.total_ms,
    };
    line("create + push vs restic backup", createPush, backup, "restic");
    line("pull vs restic restore", pull, restore, "restic");
    console.log();
    for (const name of ["DENO_CERT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"]) {
      delete (env as Record<string, string>)[name];
    }
    Object.assign(results, {
      remote: {
        commits: commits.length,
        push,
        create,
        pull,
        restic_backup: backup,
        restic_restore: restore,
      },
    });
  }
}

if (want("startup")) {
  console.log("start-up to exit: verify of a published snapshot vs minisign -V");
  const ws = `${root}/pub-ws`;
  await Deno.mkdir(ws, { recursive: true });
  await Deno.writeTextFile(`${ws}/a.txt`, "hello\n");
  const store = `${root}/pub-store`;
  await ctxsnap(["--store", store, "init", "--workspace", ws]);
  const snap = JSON.parse((await ctxsnap(["--store", store, "create", "--json"])).stdout);
  const pub =
    JSON.parse((await ctxsnap(["--store", store, "publish", snap.id, "--json"], root)).stdout).path;
  const key = JSON.parse((await ctxsnap(["key", "show", "--json"])).stdout).public_key;
  const binary = `${REPO}/dist/ctxsnap`;
  const hasBinary = await Deno.stat(binary).then(() => true, () => false);
  const verifier = hasBinary ? [binary] : [Deno.execPath(), "run", "--allow-read", CLI];
  const ours = await measure(
    async () => {},
    () => run([...verifier, "verify", pub, "--trust", key]),
  );
  if (await have("minisign")) {
    await sh(
      `cd '${root}' && printf '\\n\\n' | minisign -G -W -p mk.pub -s mk.key -f >/dev/null 2>&1 || minisign -G -W -p mk.pub -s mk.key >/dev/null`,
    );
    await sh(`cd '${root}' && minisign -S -s mk.key -m '${pub}' >/dev/null`);
    const theirs = await measure(
      async () => {},
      () => sh(`minisign -V -p '${root}/mk.pub' -m '${pub}' >/dev/null`),
    );
    ratio(
      `verify ${hasBinary ? "(dist/ctxsnap)" : "(deno run)"} vs minisign -V`,
      ours,
      theirs,
      "minisign",
    );
    results.minisign_ms = theirs;
  } else console.log(`  ctxsnap verify ${fmt(ours)} (minisign not installed)`);
  results.verify_file_ms = ours;
  if (hasBinary) {
    console.log(
      `  dist/ctxsnap size: ${((await Deno.stat(binary)).size / 1048576).toFixed(1)} MiB`,
    );
  }
  console.log();
}

if (want("agent")) {
  // Issue 14: a checkpoint through `ctxsnap mcp` (a JSON-RPC tools/call round
  // trip to the long-lived server) on an unchanged tree and after a one-file
  // edit, CLI `create` on an unchanged tree (alone, and handed to a running
  // `ctxsnap watch`), and `ctxsnap --version` against an empty Deno script;
  // git's `add -A && write-tree` on the same tree in the same rounds.
  console.log("agent checkpoints (issue 14), interleaved rounds on the real tree");
  const ws = `${root}/agent-ws`;
  await copyTree(tree, ws);
  const gitDir = `${root}/agent-git`;
  // The store lives in the workspace (as `ctxsnap init` makes it): git leaves it out.
  await sh(
    `git init -q --bare '${gitDir}' && mkdir -p '${gitDir}/info' && echo /.ctxsnap/ >> '${gitDir}/info/exclude'`,
  );
  const gitCmd =
    `GIT_DIR='${gitDir}' GIT_WORK_TREE='${ws}' sh -c 'git add -A && git write-tree' >/dev/null`;
  await sh(gitCmd);
  await ctxsnap(["init"], ws);
  await ctxsnap(["create", "-m", "first"], ws);
  // Files older than the racy window, as in the capture section.
  await sh(`find '${ws}' -path '${ws}/.ctxsnap' -prune -o -exec touch -h -d '2 minutes ago' {} +`);
  await sh(gitCmd);
  await new Promise((r) => setTimeout(r, 1100));
  const files = (await sh(`cd '${ws}' && find . -name '*.py' -type f | head -50`)).stdout.trim()
    .split("\n").map((f) => `${ws}/${f.slice(2)}`);
  const edit = async (i: number) => {
    const file = files[Math.abs(i) % files.length]!;
    await Deno.writeTextFile(file, `# edit ${i} ${Date.now()}\n`, { append: true });
  };

  const empty = `${root}/empty.ts`;
  await Deno.writeTextFile(empty, "");
  // No long-lived process yet: create walks the tree itself.
  const alone = await interleaved({
    git: { setup: async () => {}, timed: () => sh(gitCmd) },
    create: {
      setup: async () => {},
      timed: () => ctxsnap(["create", "-m", "bench", "--json"], ws),
    },
    version: { setup: async () => {}, timed: () => ctxsnap(["--version"]) },
    empty_deno: { setup: async () => {}, timed: () => run([Deno.execPath(), "run", "-A", empty]) },
  });

  // A raw JSON-RPC client (no SDK on the clock): one line out, one line back.
  const server = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, "mcp"],
    cwd: ws,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = server.stdin.getWriter();
  const reader = server.stdout.getReader();
  let buffered = "";
  let nextId = 1;
  const rpc = async (method: string, params: unknown) => {
    const id = nextId++;
    await writer.write(
      new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n"),
    );
    for (;;) {
      const newline = buffered.indexOf("\n");
      if (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        return JSON.parse(line);
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("ctxsnap mcp exited");
      buffered += new TextDecoder().decode(value);
    }
  };
  const serverCpu = async () => {
    const stat = (await Deno.readTextFile(`/proc/${server.pid}/stat`)).split(") ")[1]!.split(" ");
    return (Number(stat[11]) + Number(stat[12])) * 10; // utime + stime, in ms at 100 Hz
  };
  await rpc("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "bench", version: "1" },
  });
  await writer.write(
    new TextEncoder().encode('{"jsonrpc":"2.0","method":"notifications/initialized"}\n'),
  );
  const checkpoint = async (): Promise<Run> => {
    const cpuBefore = await serverCpu();
    const started = performance.now();
    const reply = await rpc("tools/call", { name: "checkpoint", arguments: { reason: "bench" } });
    const ms = performance.now() - started;
    if (reply.result?.isError !== undefined || reply.error) {
      throw new Error(`checkpoint failed: ${JSON.stringify(reply).slice(0, 500)}`);
    }
    return { ms, cpuMs: (await serverCpu()) - cpuBefore, stdout: "", stderr: "" };
  };
  const lastCapture = { hashed: -1 };
  const mcpEdit = async (): Promise<Run> => {
    const result = await checkpoint();
    return result;
  };
  const rounds = await interleaved({
    git: { setup: async () => {}, timed: () => sh(gitCmd) },
    mcp_unchanged: { setup: async () => {}, timed: checkpoint },
    git_edit: { setup: edit, timed: () => sh(gitCmd) },
    mcp_edit: { setup: (i) => edit(i + 1000), timed: mcpEdit },
  });
  // The last one-file-edit checkpoint read exactly one file.
  await edit(99999);
  const probe = await rpc("tools/call", { name: "checkpoint", arguments: {} });
  lastCapture.hashed = probe.result.structuredContent.capture.hashed;
  // CLI create handed to the MCP server (it serves the watch socket too).
  const handed = await measure(async () => {}, () => ctxsnap(["create", "--json"], ws));
  const via = JSON.parse((await ctxsnap(["create", "--json"], ws)).stdout).via;
  await writer.close();
  await server.status;
  const r = {
    ...rounds,
    create: alone.create,
    version: alone.version,
    empty_deno: alone.empty_deno,
  };
  const gitAlone = alone.git;
  ratio(
    "MCP checkpoint, unchanged tree vs git (unchanged)",
    r.mcp_unchanged.wall,
    r.git.wall,
    "git",
    [
      r.mcp_unchanged.cpu,
      r.git.cpu,
    ],
  );
  ratio(
    "MCP checkpoint after a one-file edit vs git (same edit)",
    r.mcp_edit.wall,
    r.git_edit.wall,
    "git",
    [
      r.mcp_edit.cpu,
      r.git_edit.cpu,
    ],
  );
  ratio("CLI create, unchanged tree, no watch vs git", r.create.wall, gitAlone.wall, "git", [
    r.create.cpu,
    gitAlone.cpu,
  ]);
  ratio(`CLI create, unchanged, handed off (${via}) vs git`, handed, r.git.wall, "git");
  ratio("ctxsnap --version vs an empty Deno script", r.version.wall, r.empty_deno.wall, "deno", [
    r.version.cpu,
    r.empty_deno.cpu,
  ]);
  console.log(
    `    targets: MCP ≤ 0.5× git (${(r.mcp_unchanged.wall / r.git.wall).toFixed(2)}×, ` +
      `${
        (r.mcp_edit.wall / r.git_edit.wall).toFixed(2)
      }× after an edit, reading ${lastCapture.hashed} file); ` +
      `create ≤ 6× git (${(r.create.wall / gitAlone.wall).toFixed(2)}×; handed off ${
        (handed / r.git.wall).toFixed(2)
      }×); --version ≤ 1.5× (${(r.version.wall / r.empty_deno.wall).toFixed(2)}×)\n`,
  );
  Object.assign(results, {
    agent: {
      git_ms: r.git,
      git_alone_ms: gitAlone,
      git_edit_ms: r.git_edit,
      mcp_unchanged_ms: r.mcp_unchanged,
      mcp_edit_ms: r.mcp_edit,
      create_ms: r.create,
      create_handed_ms: handed,
      version_ms: r.version,
      empty_deno_ms: r.empty_deno,
    },
  });
}

if (want("agent_sessions")) {
  // Issue 23: the latency of one agent hook event (`ctxsnap hook claude-code`
  // as Claude Code runs it: a process per event, the event JSON on stdin),
  // each after an edit of one file, for one agent session alone and for two
  // sessions sending events at the same time; without and with a running
  // `ctxsnap watch`. Target: two sessions ≤ 1.5× one session per event.
  console.log("agent hook events (issue 23): per-event latency, one session vs two at once");
  const ws = `${root}/sessions-ws`;
  await copyTree(tree, ws);
  await ctxsnap(["init"], ws);
  await ctxsnap(["create", "-m", "first"], ws);
  const count = QUICK ? 3 : Math.max(4, RUNS * 2);
  let serial = 0;
  const hookEvent = async (session: string, i: number): Promise<number> => {
    await Deno.writeTextFile(`${ws}/bench-${session}.txt`, `edit ${i} ${Date.now()}\n`);
    const payload = JSON.stringify({
      session_id: session,
      cwd: ws,
      hook_event_name: i % 4 === 0 ? "UserPromptSubmit" : "PostToolUse",
      ...(i % 4 === 0 ? {} : { tool_name: "Bash", tool_use_id: `toolu_${session}_${++serial}` }),
    });
    const started = performance.now();
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", CLI, "hook", "claude-code", "--strict"],
      cwd: ws,
      env,
      stdin: "piped",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(payload));
    await writer.close();
    const out = await child.output();
    const ms = performance.now() - started;
    if (!out.success) throw new Error(`hook failed: ${new TextDecoder().decode(out.stderr)}`);
    return ms;
  };
  const stream = async (session: string): Promise<number[]> => {
    const times: number[] = [];
    await hookEvent(session, 0); // warm-up
    for (let i = 1; i <= count; i++) times.push(await hookEvent(session, i));
    return times;
  };
  const measureSessions = async (label: string) => {
    const one = median(await stream(`${label}-solo`));
    const pair = await Promise.all([stream(`${label}-a`), stream(`${label}-b`)]);
    const two = median(pair.flat());
    console.log(
      `  ${label}: one session ${fmt(one)} per event; two at once ${fmt(two)} per event ` +
        `(${(two / one).toFixed(2)}×; target ≤ 1.5×)`,
    );
    return { one_ms: one, two_ms: two, ratio: two / one, events_per_session: count };
  };
  const noWatch = await measureSessions("no-watch");
  const watch = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, "watch"],
    cwd: ws,
    env,
    stdout: "null",
    stderr: "null",
  }).spawn();
  for (
    let tries = 0;
    (await ctxsnap(["watch", "--status"], ws).catch(() => null)) === null;
    tries++
  ) {
    if (tries > 600) throw new Error("ctxsnap watch did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  const withWatch = await measureSessions("watch");
  await ctxsnap(["watch", "--stop"], ws);
  await watch.status;
  console.log(`  (${count} events per session after a warm-up; ${treeFiles} files)\n`);
  Object.assign(results, { agent_sessions: { no_watch: noWatch, watch: withWatch } });
}

if (want("gc")) {
  // Issue 25, "disk comes back": a workspace whose files churn leaves
  // forgotten snapshots' objects in index.db; `du` of the store before and
  // after `forget --keep-last 1 && gc`.
  console.log("gc: disk comes back (du of the store before and after forget + gc)");
  const ws = `${root}/gc-ws`;
  await copyTree(tree, ws);
  await ctxsnap(["init"], ws);
  await ctxsnap(["create", "-m", "first"], ws);
  const churn = QUICK ? 5 : 20;
  const files = (await sh(`cd '${ws}' && find . -name '*.py' -type f | head -300`)).stdout.trim()
    .split("\n").map((f) => `${ws}/${f.slice(2)}`);
  for (let round = 0; round < churn; round++) {
    for (const file of files) {
      await Deno.writeTextFile(file, `# churn ${round} ${file}\n`, { append: true });
    }
    await ctxsnap(["create", "-m", `churn ${round}`], ws);
  }
  const store = `${ws}/.ctxsnap`;
  const index = async () => (await Deno.stat(`${store}/index.db`)).size;
  const before = { du: await du(store), index: await index() };
  await ctxsnap(["forget", "--keep-last", "1"], ws);
  const afterForget = { du: await du(store), index: await index() };
  const gc = JSON.parse((await ctxsnap(["gc", "--json"], ws)).stdout);
  const after = { du: await du(store), index: await index() };
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  console.log(
    `  ${churn} checkpoints each changing ${files.length} files; forget --keep-last 1 && gc:\n` +
      `    du .ctxsnap: ${mib(before.du)} before, ${mib(afterForget.du)} after forget, ` +
      `${mib(after.du)} after gc (index.db ${mib(before.index)} → ${mib(after.index)}; ` +
      `gc freed ${gc.blobs} blobs, ${gc.trees} trees, ${gc.index.free_pages_before} index pages, ` +
      `mode ${gc.index.mode})\n`,
  );
  Object.assign(results, {
    gc_disk: { before, after_forget: afterForget, after, gc },
  });
}

if (want("retention")) {
  // Issue 25, retention: a long agent run through `ctxsnap mcp` (checkpoints
  // with a source, each after a one-file edit) under the default policy; the
  // snapshot count and `du` of the store every tenth of the run.
  const total = QUICK ? 200 : 1000;
  console.log(`retention: a ${total}-checkpoint agent run under the default policy`);
  const ws = `${root}/retention-ws`;
  await generateTree(ws, 2000);
  await ctxsnap(["init"], ws);
  const server = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", CLI, "mcp"],
    cwd: ws,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = server.stdin.getWriter();
  const reader = server.stdout.getReader();
  let buffered = "";
  let nextId = 1;
  const rpc = async (method: string, params: unknown) => {
    const id = nextId++;
    await writer.write(
      new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n"),
    );
    for (;;) {
      const newline = buffered.indexOf("\n");
      if (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        return JSON.parse(line);
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("ctxsnap mcp exited");
      buffered += new TextDecoder().decode(value);
    }
  };
  await rpc("initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "bench", version: "1" },
  });
  await writer.write(
    new TextEncoder().encode('{"jsonrpc":"2.0","method":"notifications/initialized"}\n'),
  );
  const samples: { checkpoints: number; snapshots: number; du: number; ms: number }[] = [];
  const started = performance.now();
  for (let i = 1; i <= total; i++) {
    const file = `${ws}/d${i % 20}/f${(i % 20) * 100 + (i % 100)}.txt`;
    await Deno.writeTextFile(file, `edit ${i}\n`, { append: true });
    const reply = await rpc("tools/call", {
      name: "checkpoint",
      arguments: { reason: `turn ${i}`, source: `bench:turn-${i}` },
    });
    if (reply.result?.isError !== undefined || reply.error) {
      throw new Error(`checkpoint failed: ${JSON.stringify(reply).slice(0, 500)}`);
    }
    if (i % (total / 10) === 0) {
      const listed = JSON.parse((await ctxsnap(["list", "--all", "--json"], ws)).stdout);
      samples.push({
        checkpoints: i,
        snapshots: listed.snapshots.length,
        du: await du(`${ws}/.ctxsnap`),
        ms: performance.now() - started,
      });
    }
  }
  await writer.close();
  await server.status;
  for (const s of samples) {
    console.log(
      `  after ${String(s.checkpoints).padStart(5)} checkpoints: ${
        String(s.snapshots).padStart(4)
      } snapshots kept, du .ctxsnap ${(s.du / 1048576).toFixed(1)} MiB (${fmt(s.ms)} so far)`,
    );
  }
  console.log("");
  Object.assign(results, { retention: samples });
}

if (want("release")) {
  console.log("release artifacts (deno task release): verify, start-up, size, batch verify");
  const manifest = `${REPO}/dist/release/release.json`;
  const artifacts: { file: string; target: string; runtime: string; bytes: number }[] = await Deno
    .readTextFile(manifest).then((t) => JSON.parse(t).artifacts, () => []);
  const host = artifacts.find((a) => a.target === "linux-x64");
  if (host === undefined) {
    console.log(
      "  no dist/release/release.json with a linux-x64 artifact: run deno task release\n",
    );
  } else {
    const bin = `${REPO}/dist/release/${host.file}`;
    // A published snapshot, and a minisign signature of the very same file.
    const ws = `${root}/rel-ws`;
    await Deno.mkdir(ws, { recursive: true });
    await Deno.writeTextFile(`${ws}/a.txt`, "hello\n");
    const store = `${root}/rel-store`;
    await run([bin, "--store", store, "init", "--workspace", ws]);
    const snap = JSON.parse((await run([bin, "--store", store, "create", "--json"])).stdout);
    const pub = `${root}/rel.ctxsnapshot.json`;
    await run([bin, "--store", store, "publish", snap.id, "--out", pub]);
    const key = JSON.parse((await run([bin, "key", "show", "--json"])).stdout).public_key;
    const bytes = (await Deno.stat(pub)).size;
    const others: Record<string, Subject> = {};
    const node = `${REPO}/dist/ctxsnap`;
    const nodeName = await run([node, "--version"], { check: false }).then(
      (r) => /\((\w+) [^)]*\)/.exec(r.stdout)?.[1],
      () => undefined,
    );
    if (nodeName !== undefined && nodeName !== host.runtime) {
      others[`dist/ctxsnap (${nodeName})`] = {
        setup: async () => {},
        timed: () => run([node, "verify", pub, "--trust", key]),
      };
    }
    if (await have("minisign")) {
      await sh(
        `cd '${root}' && (printf '\\n\\n' | minisign -G -W -p rk.pub -s rk.key -f >/dev/null 2>&1 || minisign -G -W -p rk.pub -s rk.key >/dev/null) && minisign -S -s rk.key -m '${pub}' >/dev/null`,
      );
      others.minisign = {
        setup: async () => {},
        // Run directly, as ctxsnap is (no shell in between).
        timed: () => run(["minisign", "-V", "-p", `${root}/rk.pub`, "-m", pub]),
      };
    }
    const got = await interleaved<string>({
      release: { setup: async () => {}, timed: () => run([bin, "verify", pub, "--trust", key]) },
      ...others,
    });
    console.log(`  verify of a published snapshot (${bytes} bytes), median of ${RUNS}:`);
    for (const [name, t] of Object.entries(got)) {
      console.log(
        `    ${(name === "release" ? `${host.file} (${host.runtime})` : name).padEnd(40)} ${
          fmt(t.wall).padStart(8)
        }  cpu ${fmt(t.cpu).padStart(8)}`,
      );
    }
    if (got.minisign) {
      const r = got.release!.wall / got.minisign.wall;
      console.log(`    release binary / minisign -V: ${r.toFixed(1)}× (target at most 15×)`);
      results.release_vs_minisign = r;
    }
    results.release_verify = got;

    const startup = await interleaved<string>({
      [host.file]: { setup: async () => {}, timed: () => run([bin, "--version"]) },
      ...(nodeName !== undefined && nodeName !== host.runtime
        ? {
          [`dist/ctxsnap (${nodeName})`]: {
            setup: async () => {},
            timed: () => run([node, "--version"]),
          },
        }
        : {}),
    });
    console.log(`  start-up (--version) and size:`);
    for (const a of artifacts) {
      const t = startup[a.file];
      console.log(
        `    ${a.file.padEnd(36)} ${a.runtime.padEnd(5)} ${
          (a.bytes / 1048576).toFixed(1).padStart(6)
        } MiB  ${t ? `${fmt(t.wall)} (cpu ${fmt(t.cpu)})` : "(not run here)"}`,
      );
    }
    if (nodeName !== undefined && nodeName !== host.runtime) {
      const t = startup[`dist/ctxsnap (${nodeName})`]!;
      const size = (await Deno.stat(node)).size / 1048576;
      console.log(
        `    ${"dist/ctxsnap".padEnd(36)} ${nodeName.padEnd(5)} ${
          size.toFixed(1).padStart(6)
        } MiB  ${fmt(t.wall)} (cpu ${fmt(t.cpu)})`,
      );
    }
    results.release_startup = startup;
    results.release_sizes = Object.fromEntries(artifacts.map((a) => [a.file, a.bytes]));

    // 100 files: copies of the published snapshot (verify caches nothing between files).
    const files: string[] = [];
    await Deno.mkdir(`${root}/batch`);
    for (let i = 0; i < 100; i++) {
      files.push(`${root}/batch/s${i}.ctxsnapshot.json`);
      await Deno.copyFile(pub, files.at(-1)!);
    }
    const list = files.map((f) => `'${f}'`).join(" ");
    const batch = await interleaved({
      one: {
        setup: async () => {},
        timed: () => run([bin, "verify", ...files, "--trust", key]),
      },
      hundred: {
        setup: async () => {},
        timed: () =>
          sh(`for f in ${list}; do '${bin}' verify "$f" --trust ${key} >/dev/null || exit 1; done`),
      },
    });
    ratio("verify 100 files: one run vs 100 runs", batch.one.wall, batch.hundred.wall, "100 runs", [
      batch.one.cpu,
      batch.hundred.cpu,
    ]);
    results.release_batch = batch;
  }
  console.log();
}

if (want("timeline")) {
  const total = QUICK ? 200 : 1000;
  console.log(`timeline page of ${total} snapshots (branches, forks, restores; 40 text files)`);
  const { Store } = await import("../lib/repository/store.ts");
  const { createSnapshot } = await import("../lib/history/create.ts");
  const { forkBranch } = await import("../lib/history/branch.ts");
  const { switchTo } = await import("../lib/workspace/move/switch.ts");
  const { restoreSnapshot } = await import("../lib/workspace/move/restore.ts");
  const { loadOrCreateIdentity } = await import("../lib/keys/identity.ts");
  const ws = `${root}/timeline-ws`;
  await Deno.mkdir(ws, { recursive: true });
  const files = Array.from(
    { length: 40 },
    (_, f) => Array.from({ length: 30 }, (_, l) => `file ${f} line ${l}: some text`),
  );
  const writeFile = (f: number) =>
    Deno.writeTextFile(`${ws}/f${f}.txt`, files[f]!.join("\n") + "\n");
  for (let f = 0; f < files.length; f++) await writeFile(f);
  // The same successive states as one git history, for `git log --patch`.
  const fastImport: string[] = [];
  const gitCommit = (i: number, changed: number[]) => {
    fastImport.push(`commit refs/heads/main`, `committer b <b@x.invalid> ${1e9 + i} +0000`);
    fastImport.push(`data <<EOM`, `step ${i}`, `EOM`);
    for (const f of changed) {
      const text = files[f]!.join("\n") + "\n";
      fastImport.push(
        `M 644 inline f${f}.txt`,
        `data ${new TextEncoder().encode(text).length}`,
        text,
      );
    }
  };
  const me = await loadOrCreateIdentity(`${root}/config`);
  const store = Store.init(`${ws}/.ctxsnap`, ws);
  const started = performance.now();
  let made = 0;
  let restores = 0;
  let forks = 0;
  const step = async (branchLabel: string) => {
    const f = made % files.length;
    files[f]![made % 30] = `file ${f} line ${made % 30}: changed at step ${made} on ${branchLabel}`;
    await writeFile(f);
    const snap = await createSnapshot(store, me, {
      reason: `step ${made}`,
      context: {
        task: `benchmark task ${Math.floor(made / 100)}`,
        progress_pct: made % 101,
        decisions: made % 10 === 0 ? [`decision at ${made}`] : [],
        findings: [`finding ${made}`],
      },
    });
    gitCommit(made, [f]);
    made++;
    return snap.id;
  };
  gitCommit(-1, files.map((_, f) => f));
  while (made < total) {
    const id = await step("main");
    if (made % 200 === 100 && made + 12 < total) {
      // A fork with ten snapshots, then back to main (its files come back by restore).
      forkBranch(store, id, `exp-${++forks}`);
      await switchTo(store, me, `exp-${forks}`, { pointerOnly: true });
      for (let k = 0; k < 10; k++) await step(`exp-${forks}`);
      await switchTo(store, me, "main", { pointerOnly: true });
      await restoreSnapshot(store, me, id, { force: true });
      restores++;
      made++;
    }
  }
  store.close();
  console.log(
    `  built in ${
      fmt(performance.now() - started)
    }: ${made} snapshots, ${forks} forks, ${restores} restores`,
  );
  await sh(`git init -q '${ws}-git'`);
  await Deno.writeTextFile(`${root}/fast-import`, fastImport.join("\n") + "\n");
  await sh(`git -C '${ws}-git' fast-import --quiet < '${root}/fast-import'`);

  const page = `${root}/timeline.html`;
  const times = await interleaved({
    ctxsnap: {
      setup: async () => {},
      timed: () => ctxsnap(["--store", `${ws}/.ctxsnap`, "timeline", "--html", page, "--all"]),
    },
    git: {
      setup: async () => {},
      timed: () =>
        sh(`git -C '${ws}-git' log --all --graph --stat --patch > '${root}/git-log.txt'`),
    },
  });
  ratio(
    `timeline --html vs git log --graph --stat --patch`,
    times.ctxsnap.wall,
    times.git.wall,
    "git",
    [times.ctxsnap.cpu, times.git.cpu],
  );
  const html = await Deno.readTextFile(page);
  const size = new TextEncoder().encode(html).length;
  const data = html.slice(html.indexOf('id="ctxsnap-data">') + 18, html.indexOf("</script>"));
  const parsed = JSON.parse(data);
  console.log(
    `  page ${(size / 1048576).toFixed(2)} MiB (data ${(data.length / 1048576).toFixed(2)} MiB: ` +
      `${parsed.snapshots.length} snapshots, ${Object.keys(parsed.trees).length} trees, ` +
      `${Object.keys(parsed.diffs).length} diffs); git log output ` +
      `${((await Deno.stat(`${root}/git-log.txt`)).size / 1048576).toFixed(2)} MiB`,
  );

  // Time to first render in headless Chromium, from navigation start.
  const { chromium } = await import("playwright-core");
  type Browser = Awaited<ReturnType<typeof chromium.launch>>;
  /**
   * Loads `file` in a fresh context (its own renderer process) and returns when
   * the first render reached the screen (ms from navigation start), when the DOM
   * was built, and the renderer process's CPU time by then (Chromium's
   * `ProcessTime` metric, which other load on the machine inflates much less than
   * wall time).
   */
  const load = async (
    browser: Browser,
    file: string,
  ): Promise<{ painted: number; built: number; cpu: number }> => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    try {
      const tab = await context.newPage();
      // Injected by the driver (outside the page's CSP): when the page marks its
      // first render, note the time after the next frame was produced.
      await tab.addInitScript(`new PerformanceObserver((list) => {
        for (const e of list.getEntries()) if (e.name === "ctxsnap-rendered")
          requestAnimationFrame(() => setTimeout(() => { globalThis.__painted = performance.now(); }, 0));
      }).observe({ entryTypes: ["mark"] });`);
      await tab.goto(`file://${file}`);
      // A function, not a string: the page's policy forbids eval, which a string predicate needs.
      await tab.waitForFunction(() =>
        (globalThis as { __painted?: number }).__painted !== undefined
      );
      const t = await tab.evaluate(
        `[performance.getEntriesByName("ctxsnap-rendered")[0].startTime, globalThis.__painted]`,
      ) as [number, number];
      const cdp = await context.newCDPSession(tab);
      await cdp.send("Performance.enable");
      const { metrics } = await cdp.send("Performance.getMetrics");
      const cpu = (metrics.find((m) => m.name === "ProcessTime")?.value ?? NaN) * 1000;
      return { painted: t[1], built: t[0], cpu };
    } finally {
      await context.close();
    }
  };
  // The same measure for a page that only marks itself rendered: the renderer's own start.
  const emptyPage = `${root}/empty.html`;
  await Deno.writeTextFile(
    emptyPage,
    `<!DOCTYPE html><title>empty</title><p>empty</p><script>performance.mark("ctxsnap-rendered")</script>`,
  );
  /** Medians over RUNS loads (after a warm-up) in a browser started from `executable`. */
  const renders = async (executable: string) => {
    const browser = await chromium.launch({
      executablePath: executable,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    const page_: { painted: number; built: number; cpu: number }[] = [];
    const empty: number[] = [];
    try {
      for (let i = -1; i < RUNS; i++) {
        const one = await load(browser, page);
        const blank = await load(browser, emptyPage);
        if (i < 0) continue;
        page_.push(one);
        empty.push(blank.cpu);
      }
    } finally {
      await browser.close();
    }
    return {
      painted: median(page_.map((r) => r.painted)),
      built: median(page_.map((r) => r.built)),
      cpu: median(page_.map((r) => r.cpu)),
      emptyCpu: median(empty),
    };
  };
  const loadavg = async () => (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
  const plain = await renders("/usr/bin/chromium");
  console.log(
    `  time to first render in headless Chromium: ${fmt(plain.painted)} on screen (DOM built at ${
      fmt(plain.built)
    }); target < 1 s: ${plain.painted < 1000 ? "met" : "NOT met"}; load average ${await loadavg()}`,
  );
  console.log(
    `  renderer CPU by then: ${fmt(plain.cpu)}, of which ${fmt(plain.cpu - plain.emptyCpu)} ` +
      `beyond an empty page (${fmt(plain.emptyCpu)})`,
  );
  // On a machine shared with other jobs, the same with the browser ahead of them (nice -10).
  let niced: Awaited<ReturnType<typeof renders>> | null = null;
  if ((await run(["nice", "-n", "-10", "true"], { check: false })).stderr === "") {
    const wrapper = `${root}/chromium-nice`;
    await Deno.writeTextFile(wrapper, `#!/bin/sh\nexec nice -n -10 /usr/bin/chromium "$@"\n`);
    await Deno.chmod(wrapper, 0o755);
    niced = await renders(wrapper);
    console.log(
      `  the same with the browser at nice -10: ${fmt(niced.painted)} on screen (DOM built at ${
        fmt(niced.built)
      }); target < 1 s: ${
        niced.painted < 1000 ? "met" : "NOT met"
      }; load average ${await loadavg()}`,
    );
  }
  console.log();
  const first = plain.painted;
  results.timeline = {
    snapshots: parsed.snapshots.length,
    page_bytes: size,
    data_bytes: data.length,
    timeline_html_ms: times.ctxsnap.wall,
    git_log_ms: times.git.wall,
    first_render_ms: first,
    dom_built_ms: plain.built,
    renderer_cpu_ms: plain.cpu,
    empty_page_renderer_cpu_ms: plain.emptyCpu,
    first_render_niced_ms: niced?.painted ?? null,
  };
}

if (want("replay")) {
  // Replay by prompt: the page size of an agent history on a std-like repository, and the time
  // to first render of 10,000 snapshots (built as view data: recording 10,000 real events would
  // take most of an hour here; the page cannot tell the difference).
  const total = QUICK ? 2000 : 10_000;
  console.log(
    `replay page: size of 82 agent snapshots of a 2,800-file repository; render of ${total}`,
  );
  const { Store } = await import("../lib/repository/store.ts");
  const { stdTree, writeTree } = await import("../tests/_std_tree.ts");
  const { makeSigner, recordInterleaved } = await import("../tests/_agent_history.ts");
  const { timelineFromStore, TIMELINE_SCHEMA, DEFAULT_LIMITS } = await import(
    "../lib/view/model.ts"
  );
  const { renderPage } = await import("../lib/view/html.ts");
  const trust = { isTrusted: () => false, nameOf: () => null };
  const ws = `${root}/replay-ws`;
  const tree = stdTree();
  await writeTree(ws, tree);
  const store = Store.init(`${ws}/.ctxsnap`, ws);
  const made = performance.now();
  await recordInterleaved(store, await makeSigner(), ws, {
    snapshots: 82,
    paths: [...tree.keys()].filter((p) => p.endsWith(".ts")),
  });
  const data = await timelineFromStore(store, { kind: "all" }, trust);
  store.close();
  const small = renderPage(data);
  const bytes = (text: string) => new TextEncoder().encode(text).length;
  console.log(
    `  82 snapshots of ${tree.size} files (2 interleaved agent sessions, recorded in ${
      fmt(performance.now() - made)
    }): page ${(bytes(small) / 1048576).toFixed(2)} MiB; target < 1.5 MB: ${
      bytes(small) < 1.5e6 ? "met" : "NOT met"
    } (trees ${(JSON.stringify(data.trees).length / 1048576).toFixed(2)} MiB, diffs ${
      (JSON.stringify(data.diffs).length / 1048576).toFixed(2)
    } MiB, snapshots ${(JSON.stringify(data.snapshots).length / 1048576).toFixed(2)} MiB)`,
  );

  // 10,000 snapshots: three agent sessions taking turns on one branch of a 200-file workspace,
  // each prompt a UserPromptSubmit, an Edit of one file and a Bash command.
  const hex = (n: number, salt: number) =>
    (n * 2654435761 + salt).toString(16).padStart(16, "0").repeat(4).slice(0, 64);
  const sessionIds = ["sess-alpha", "sess-beta", "sess-gamma"];
  const files = Array.from({ length: 200 }, (_, i) => `src/module_${i}/file_${i}.ts`);
  const blob = new Map(files.map((f, i) => [f, hex(i, 7)]));
  type Data = Awaited<ReturnType<typeof timelineFromStore>>;
  const snapshots: Data["snapshots"] = [];
  const trees: Data["trees"] = {};
  const sessions: Data["agent_sessions"] = sessionIds.map((id) => ({
    harness: "claude-code",
    session_id: id,
    lane: `agent:claude-code/${id}`,
    ctx_session: "main",
    first_event_at: new Date(1.7e12).toISOString(),
    last_event_at: new Date(1.7e12).toISOString(),
    end_reason: null,
    from_records: true,
    before_first_prompt: [],
    prompts: [],
  }));
  const signer = {
    key_id: hex(1, 1).slice(0, 16),
    public_key: hex(2, 2),
    name: null,
    id_matches: true,
    signature_valid: true,
    trusted: false,
    status: "untrusted" as const,
  };
  let parent: string | null = null;
  let parentTree: string | null = null;
  for (let i = 0; i < total; i++) {
    const step = i % 3; // 0 prompt, 1 edit, 2 bash
    const turn = Math.floor(i / 3);
    const session = sessions[turn % sessionIds.length]!;
    const prompt = Math.floor(turn / sessionIds.length) + 1;
    const id = hex(i, 11);
    const at = new Date(1.7e12 + i * 1000).toISOString();
    const changed = files[(i * 7) % files.length]!;
    let treeId: string;
    let changes: { added: string[]; changed: string[]; removed: string[] };
    if (parentTree === null) {
      treeId = hex(i, 13);
      trees[treeId] = {
        base: null,
        set: files.map((f) => [f, "file", blob.get(f)!, 1000, 0o644]),
        unset: [],
        skipped: [],
        skipped_total: 0,
      };
      changes = { added: [...files], changed: [], removed: [] };
    } else if (step === 0) {
      treeId = parentTree;
      changes = { added: [], changed: [], removed: [] };
    } else {
      treeId = hex(i, 13);
      const now = hex(i, 17);
      trees[treeId] = {
        base: parentTree,
        set: [[changed, "file", now, 1000 + i, 0o644]],
        unset: [],
        skipped: null,
        skipped_total: 0,
      };
      data.diffs[`${blob.get(changed)}..${now}`] = {
        status: "text",
        old_size: 1000,
        new_size: 1000 + i,
        added: 1,
        removed: 1,
        hunks: [{
          old_start: 1,
          old_lines: 1,
          new_start: 1,
          new_lines: 1,
          lines: [`-old line of ${changed}`, `+line changed at step ${i}`],
        }],
        exact: true,
        truncated_lines: 0,
      };
      blob.set(changed, now);
      changes = { added: [], changed: [changed], removed: [] };
    }
    const kind = step === 0 ? "UserPromptSubmit" : "PostToolUse";
    const tool = step === 1 ? "Edit" : step === 2 ? "Bash" : null;
    snapshots.push(
      {
        id,
        format: "ctxsnap",
        parent,
        session: "main",
        branch: "main",
        lane: "main/main",
        created_at: at,
        reason: tool === null
          ? `${kind}: prompt ${prompt} of ${session.session_id}`
          : `${kind} ${tool}`,
        source: null,
        reverted_to: null,
        pre_restore_for: null,
        imported: false,
        readable: true,
        context: {
          task: "",
          progress_pct: 0,
          decisions: [],
          files_touched: [],
          findings: [],
          knowledge: [],
          extensions: {},
        },
        cursors: null,
        facets: {
          metadata: {
            agent: { harness: "claude-code", session_id: session.session_id, event: kind, prompt },
          },
        },
        slices: null,
        git: null,
        workspace: { tree: treeId, files: files.length, bytes: files.length * 1000, skipped: 0 },
        tree: treeId,
        tool: { name: "ctxsnap", version: "bench" },
        signer,
        problems: [],
        changes,
        parent_tree: parentTree,
        agent: { harness: "claude-code", session_id: session.session_id, event: kind, prompt },
      } as Data["snapshots"][number],
    );
    if (step === 0) {
      session.prompts.push({
        prompt,
        text: `prompt ${prompt} of ${session.session_id}: change ${changed}`,
        at,
        before: id,
        events: [],
        conversation: null,
        resume: `ctxsnap resume --agent-session ${session.session_id} --prompt ${prompt}`,
      });
    }
    session.prompts.at(-1)?.events.push({
      position: i + 1,
      kind,
      tool,
      command: step === 2 ? `deno test -A ${changed}` : null,
      prompt,
      snapshot: id,
      created: true,
      at,
    });
    parent = id;
    parentTree = treeId;
  }
  const big: Data = {
    schema: TIMELINE_SCHEMA,
    generated_at: new Date().toISOString(),
    tool: { name: "ctxsnap", version: "bench" },
    source: {
      kind: "store",
      scope: "all",
      session: null,
      branch: null,
      file: null,
      primary: null,
      with_workspace: true,
    },
    live: false,
    verification: { trusted: 0, untrusted: total, invalid: 0 },
    branches: [{
      session: "main",
      name: "main",
      lane: "main/main",
      head: parent,
      base: null,
      kind: "branch",
      current: true,
    }],
    snapshots,
    trees,
    diffs: data.diffs,
    limits: { ...DEFAULT_LIMITS },
    notes: [],
    agent_sessions: sessions,
  };
  const pages = {
    prompts: `${root}/replay-prompts.html`,
    snapshots: `${root}/replay-snapshots.html`,
  };
  await Deno.writeTextFile(pages.prompts, renderPage(big));
  await Deno.writeTextFile(pages.snapshots, renderPage({ ...big, agent_sessions: [] }));
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
  const replay: Record<string, unknown> = { page_82_bytes: bytes(small) };
  try {
    for (const [mode, file] of Object.entries(pages)) {
      const painted: number[] = [];
      const cpu: number[] = [];
      for (let i = -1; i < RUNS; i++) {
        const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
        try {
          const tab = await context.newPage();
          // Injected by the driver (outside the page's CSP), as in the timeline section.
          await tab.addInitScript(`new PerformanceObserver((list) => {
            for (const e of list.getEntries()) if (e.name === "ctxsnap-rendered")
              requestAnimationFrame(() => setTimeout(() => { globalThis.__painted = performance.now(); }, 0));
          }).observe({ entryTypes: ["mark"] });`);
          await tab.goto(`file://${file}`);
          await tab.waitForFunction(() =>
            (globalThis as { __painted?: number }).__painted !== undefined
          );
          const t = await tab.evaluate(`globalThis.__painted`) as number;
          // The renderer's CPU time by then: much less inflated than wall time by other load.
          const cdp = await context.newCDPSession(tab);
          await cdp.send("Performance.enable");
          const { metrics } = await cdp.send("Performance.getMetrics");
          const ms = (metrics.find((m) => m.name === "ProcessTime")?.value ?? NaN) * 1000;
          if (i >= 0) {
            painted.push(t);
            cpu.push(ms);
          }
        } finally {
          await context.close();
        }
      }
      const size = (await Deno.stat(file)).size;
      console.log(
        `  ${total} snapshots, opened ${mode === "prompts" ? "by prompt" : "by snapshot"} (page ${
          (size / 1048576).toFixed(1)
        } MiB): first render on screen in ${
          fmt(median(painted))
        } (median of ${RUNS}); target < 1 s: ${
          median(painted) < 1000 ? "met" : "NOT met"
        }; renderer CPU ${fmt(median(cpu))}; load average ${
          (await Deno.readTextFile("/proc/loadavg")).split(" ")[0]
        }`,
      );
      replay[`render_${mode}_ms`] = median(painted);
      replay[`renderer_cpu_${mode}_ms`] = median(cpu);
      replay[`page_${mode}_bytes`] = size;
    }
  } finally {
    await browser.close();
  }
  results.replay = replay;
  console.log();
}

if (want("memory") && (await have("/usr/bin/time"))) {
  const gib = QUICK ? 0.25 : 1;
  console.log(`peak RSS publishing and importing a bundle of a ${gib} GiB workspace (256 files)`);
  const ws = `${root}/mem-ws`;
  await Deno.mkdir(ws, { recursive: true });
  const per = Math.round((gib * 1024) / 256);
  await sh(`for i in $(seq 1 256); do head -c ${per}M /dev/urandom > '${ws}'/f$i.bin; done`);
  const store = `${root}/mem-store`;
  await ctxsnap(["--store", store, "init", "--workspace", ws]);
  const id = JSON.parse((await ctxsnap(["--store", store, "create", "--json"])).stdout).id;
  const publish = await ctxsnapRss([
    "--store",
    store,
    "publish",
    id,
    "--with-workspace",
    "--out",
    `${root}/mem.ctxbundle`,
  ]);
  await Deno.mkdir(`${root}/mem-ws2`);
  await ctxsnap(["--store", `${root}/mem-store2`, "init", "--workspace", `${root}/mem-ws2`]);
  const imp = await ctxsnapRss([
    "--store",
    `${root}/mem-store2`,
    "import",
    `${root}/mem.ctxbundle`,
  ]);
  console.log(`  publish ${publish.toFixed(0)} MiB, import ${imp.toFixed(0)} MiB\n`);
  Object.assign(results, { memory_rss_mib: { publish, import: imp, workspace_gib: gib } });
}

if (want("manifest") && (await have("/usr/bin/time"))) {
  // A bundle holding only a huge, well-formed manifest: it lists one snapshot and
  // ~800k blobs, then ends. The reader validates the whole manifest before it
  // finds the first listed member missing, so the peak is the manifest's cost.
  const mib = QUICK ? 16 : 64;
  console.log(`peak RSS verifying a bundle whose only member is a ${mib} MiB manifest`);
  const hex = (n: number) => n.toString(16).padStart(64, "0");
  const head = `{"blobs":[`;
  const tail = `],"format":"ctxsnap.bundle/v1","primary":"${"a".repeat(64)}","snapshots":["${
    "a".repeat(64)
  }"],"trees":[],"workspace":true}`;
  const parts: string[] = [];
  let length = head.length + tail.length;
  for (let i = 0; length < mib * 1024 * 1024; i++) {
    const record = `${i === 0 ? "" : ","}{"id":"${hex(i)}","size":${1000 + i}}`;
    parts.push(record);
    length += record.length;
  }
  const manifest = new TextEncoder().encode(head + parts.join("") + tail);
  const file = await Deno.open(`${root}/manifest.ctxbundle`, { write: true, create: true });
  const tar = new TarWriter((chunk) => {
    let at = 0;
    while (at < chunk.length) at += file.writeSync(chunk.subarray(at));
  });
  tar.addFile("ctxsnap-bundle.json", manifest);
  tar.finish();
  file.close();
  const rss = await peakRss(
    [Deno.execPath(), "run", "-A", CLI, "verify", `${root}/manifest.ctxbundle`],
    undefined,
    false,
  );
  const baseline = await peakRss([Deno.execPath(), "run", "-A", CLI, "--version"]);
  console.log(
    `  ${parts.length} blob records, ${(manifest.length / 1048576).toFixed(1)} MiB: ` +
      `verify ${rss.toFixed(0)} MiB (ctxsnap --version ${
        baseline.toFixed(0)
      } MiB; target < 256 MiB)\n`,
  );
  Object.assign(results, {
    manifest_rss_mib: { verify: rss, version: baseline, manifest_mib: manifest.length / 1048576 },
  });
}

if (want("soak")) {
  // Issue 28: the soak of scripts/_soak.ts (agent hooks, creates, kill -9, gc, forget,
  // verify --all, list and push at once on one store) as a measure of what holds under load.
  const { runSoak, soakFigures } = await import("./_soak.ts");
  const seconds = QUICK ? 20 : 60;
  console.log(`soak: 3 agent sessions' hooks and every other loop at once for ${seconds} s`);
  const result = await runSoak({
    durationMs: seconds * 1000,
    agents: 3,
    seed: 28,
    files: QUICK ? 300 : 1000,
  });
  const figures = soakFigures(result);
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  console.log(
    `  ${figures.hooks.count} hook events in ${(result.elapsedMs / 1000).toFixed(1)} s: ` +
      `${figures.eventsPerSecond.toFixed(2)} events/s held; hook latency p50 ${
        ms(figures.hooks.p50)
      }, p99 ${
        ms(figures.hooks.p99)
      }; ${figures.hooks.retried} tried a busy store again, ${figures.hooks.busy} gave up busy (exit 0)`,
  );
  console.log(
    `  ${figures.commands.count} processes: ${figures.commands.waited} waited for a busy store ` +
      `(${
        (100 * figures.commands.waited / figures.commands.count).toFixed(0)
      }%), ${figures.commands.busy} gave up (exit 6), ${figures.commands.killed} killed by the soak`,
  );
  for (const [loop, entry] of Object.entries(figures.loops)) {
    console.log(
      `    ${loop.padEnd(7)} ${String(entry.count).padStart(4)}  ${JSON.stringify(entry.codes)}`,
    );
  }
  console.log(
    `  ${result.reported.size} reported snapshots; ${
      result.failures.length === 0 ? "every promise held" : `${result.failures.length} FAILURES`
    }\n`,
  );
  for (const failure of result.failures) console.log(`  FAIL ${failure.split("\n")[0]}`);
  Object.assign(results, { soak: { seconds, ...figures, failures: result.failures.length } });
}

if (want("trees") && (await have("/usr/bin/time"))) {
  // Directory trees on a generated tree: 16 × 16 × 16 directories, 61 files
  // in each leaf (249,856 files; 2,500 with --quick). A one-file change must
  // add at most 64 KiB and 20 ms of tree work; a diff of snapshots one file
  // apart must read O(depth) trees; the first capture should stay under 256 MiB.
  const fan = QUICK ? 5 : 16;
  const perLeaf = QUICK ? 20 : 61;
  const ws = `${root}/trees-ws`;
  const store = `${root}/trees-store`;
  const encoder = new TextEncoder();
  let files = 0;
  for (let a = 0; a < fan; a++) {
    for (let b = 0; b < fan; b++) {
      for (let c = 0; c < fan; c++) {
        const dir = `${ws}/a${a}/b${b}/c${c}`;
        await Deno.mkdir(dir, { recursive: true });
        for (let f = 0; f < perLeaf; f++) {
          await Deno.writeFile(
            `${dir}/f${f}.txt`,
            encoder.encode(`file ${files}\n${"x".repeat(files % 300)}\n`),
          );
          files++;
        }
      }
    }
  }
  // CTXSNAP_BENCH_BIN measures a release executable instead of `deno run cli.ts`.
  const bin = Deno.env.get("CTXSNAP_BENCH_BIN");
  const exe = bin ? [bin] : [Deno.execPath(), "run", "-A", CLI];
  const cli = (argv: string[]) => run([...exe, "--store", store, ...argv]);
  console.log(
    `directory trees: ${files} files in ${fan ** 3} leaf directories (depth 4), ${
      bin ? `executable ${bin}` : "deno run cli.ts"
    }`,
  );
  // git on the same tree, as the issue's baseline: a bare GIT_DIR, so the tree holds no .git.
  const gitDir = `${root}/trees-git`;
  await run(["git", "init", "-q", "--bare", gitDir]);
  const gitCmd =
    `GIT_DIR='${gitDir}' GIT_WORK_TREE='${ws}' sh -c 'git add -A && git write-tree' >/dev/null`;
  const tGit = performance.now();
  const gitFirstRss = await peakRss(["sh", "-c", gitCmd]);
  const gitFirstMs = performance.now() - tGit;
  const gitUnchanged = await measure(() => Promise.resolve(), () => sh(gitCmd));
  await cli(["init", "--workspace", ws]);
  const tFirst = performance.now();
  const firstRss = await peakRss([...exe, "--store", store, "create", "-m", "first"]);
  const firstMs = performance.now() - tFirst;
  const unchangedRss = await peakRss([...exe, "--store", store, "create", "-m", "unchanged"]);
  const storeBytes = async () => await du(store);
  const before = await storeBytes();
  await Deno.writeTextFile(`${ws}/a${fan - 1}/b${fan - 2}/c${fan - 3}/f5.txt`, "edited once\n");
  const oneFile = await cli(["create", "-m", "one file", "--json"]);
  const afterOne = await storeBytes();
  const unchanged = await measure(
    () => Promise.resolve(),
    () => cli(["create", "-m", "again"]),
  );
  // In process: the incremental capture of a watch, and the diff.
  const { IncrementalCapture } = await import("../lib/workspace/incremental.ts");
  const { diffStoredTrees } = await import("../lib/repository/diff.ts");
  const opened = Store.open(`${store}`);
  const incremental = new IncrementalCapture(opened);
  const engine = incremental as unknown as { writeDirs: () => string };
  const writeDirs = engine.writeDirs.bind(incremental);
  let treeMs = 0;
  engine.writeDirs = () => {
    const t = performance.now();
    const id = writeDirs();
    treeMs += performance.now() - t;
    return id;
  };
  const treeRowBytes = () => (opened.db.prepare(
    "SELECT coalesce(sum(length(data)), 0) AS n, count(*) AS c FROM objects WHERE kind = 'tree'",
  ).get() as { n: number; c: number });
  const t0 = performance.now();
  const full = opened.transaction("capture", () => incremental.capture());
  const fullMs = performance.now() - t0;
  const rowsBefore = treeRowBytes();
  const captures: number[] = [];
  const treeWork: number[] = [];
  for (let i = 0; i < 5; i++) {
    await Deno.writeTextFile(`${ws}/a${i}/b${i}/c${i}/f${i}.txt`, `edit ${i}\n`);
    treeMs = 0;
    const t = performance.now();
    opened.transaction("capture", () => incremental.capture());
    captures.push(performance.now() - t);
    treeWork.push(treeMs);
  }
  const rowsAfter = treeRowBytes();
  incremental.close();
  const idOne = JSON.parse(oneFile.stdout).id as string;
  const rowTree = (id: string) =>
    (opened.db.prepare("SELECT tree FROM snapshots WHERE id = ?").get(id) as { tree: string }).tree;
  const parentOf = (id: string) =>
    (opened.db.prepare("SELECT parent FROM snapshots WHERE id = ?").get(id) as { parent: string })
      .parent;
  const parentOne = parentOf(idOne);
  opened.treeReads = 0;
  const td = performance.now();
  const diffed = diffStoredTrees(opened, rowTree(parentOne), rowTree(idOne));
  const diffMs = performance.now() - td;
  const diffReads = opened.treeReads;
  opened.close();
  const cliDiff = await measure(
    () => Promise.resolve(),
    () => cli(["diff", parentOne, idOne]),
  );
  void full;
  console.log(
    `  first capture (CLI create): peak RSS ${firstRss.toFixed(0)} MiB (target < 256 MiB); ` +
      `${fmt(firstMs)} (under /usr/bin/time); git add -A && write-tree ${fmt(gitFirstMs)}, ` +
      `${gitFirstRss.toFixed(0)} MiB: ${times(gitFirstMs / firstMs)}`,
  );
  console.log(
    `  unchanged create: ${fmt(unchanged)} (median), peak RSS ${unchangedRss.toFixed(0)} MiB; ` +
      `git unchanged ${fmt(gitUnchanged)}: ${times(gitUnchanged / unchanged)}`,
  );
  console.log(
    `  one-file checkpoint (CLI create): store grew ${
      afterOne - before
    } bytes (du -sb; target ≤ 65536)`,
  );
  console.log(
    `  watch-style incremental capture of a one-file edit: ${
      fmt(median(captures))
    } (median of 5), tree work ${median(treeWork).toFixed(1)} ms (target ≤ 20 ms); ` +
      `trees added ${rowsAfter.c - rowsBefore.c} rows, ${
        ((rowsAfter.n - rowsBefore.n) / 5 / 1024).toFixed(1)
      } KiB per edit; the first (full-walk) capture in process ${fmt(fullMs)}`,
  );
  console.log(
    `  diff of snapshots one file apart: ${diffReads} tree reads, ${
      diffMs.toFixed(1)
    } ms in process ` +
      `(${diffed.diff.changed.length} changed); CLI diff ${fmt(cliDiff)}\n`,
  );
  Object.assign(results, {
    trees: {
      files,
      first_create_rss_mib: firstRss,
      first_create_ms: firstMs,
      git_first_ms: gitFirstMs,
      git_first_rss_mib: gitFirstRss,
      unchanged_create_ms: unchanged,
      unchanged_create_rss_mib: unchangedRss,
      git_unchanged_ms: gitUnchanged,
      one_file_store_growth_bytes: afterOne - before,
      incremental_capture_ms: median(captures),
      tree_work_ms: median(treeWork),
      tree_bytes_per_edit: (rowsAfter.n - rowsBefore.n) / 5,
      diff_tree_reads: diffReads,
      diff_ms: diffMs,
      cli_diff_ms: cliDiff,
    },
  });
}

if (want("daemon")) {
  // Issue 26: the on-demand watch process and Claude Code's HTTP hooks, against
  // `git add -A && git write-tree` on the same tree in the same run. The tree is
  // generated (CTXSNAP_BENCH_DAEMON_FILES files, default 43,000; --quick 5,000) in
  // directories of 100; CTXSNAP_BENCH_BIN names a release executable to measure
  // instead of `deno run cli.ts`.
  const files = Number(Deno.env.get("CTXSNAP_BENCH_DAEMON_FILES") ?? (QUICK ? 5000 : 43000));
  const bin = Deno.env.get("CTXSNAP_BENCH_BIN");
  const exe = bin ? [bin] : [Deno.execPath(), "run", "-A", CLI];
  const label = bin ? `executable ${bin}` : "deno run cli.ts";
  console.log(`daemon and HTTP hooks (issue 26): ${files} files, ${label}`);
  const ws = `${root}/daemon-ws`;
  for (let i = 0; i < files; i++) {
    const dir = `${ws}/d${Math.floor(i / 100)}`;
    if (i % 100 === 0) await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(`${dir}/f${i}.txt`, `file ${i}\n`.repeat(1 + (i % 200)));
  }
  const gitDir = `${root}/daemon-git`;
  await run(["git", "init", "-q", "--bare", gitDir]);
  // The store lives in the workspace, and `ctxsnap init` keeps it out of git's
  // view (info/exclude): so does the baseline, or git would hash index.db too.
  await Deno.writeTextFile(`${gitDir}/info/exclude`, ".ctxsnap/\n");
  const gitCmd =
    `GIT_DIR='${gitDir}' GIT_WORK_TREE='${ws}' sh -c 'git add -A && git write-tree' >/dev/null`;
  const cli = (argv: string[]) => run([...exe, ...argv], { cwd: ws });
  await cli(["init"]);
  // First capture (each once, fresh).
  const gitFirst = (await sh(gitCmd)).ms;
  const firstCapture = (await cli(["create", "-m", "first"])).ms;
  const gitUnchanged = await measure(async () => {}, () => sh(gitCmd));
  const createAlone = await measure(async () => {}, () => cli(["create"]));
  let edits = 0;
  const edit = async () => {
    edits += 1;
    await Deno.writeTextFile(`${ws}/d0/f0.txt`, `edit ${edits}\n`);
  };
  const gitEdit = await measure(edit, () => sh(gitCmd));
  // The HTTP hooks, and a watch process serving them (as SessionStart would start it).
  await cli(["hook", "install", "claude-code", "--http"]);
  const conf = JSON.parse(await Deno.readTextFile(`${ws}/.ctxsnap/run/http.json`));
  // Started as `startDaemon` starts one (its V8 flags on Deno), timed until
  // it answers: its first walk is done before it listens.
  const startedAt = performance.now();
  const daemon = new Deno.Command(exe[0]!, {
    args: [...exe.slice(1), "watch", "--daemon"],
    cwd: ws,
    env: { ...env, DENO_V8_FLAGS: DAEMON_V8_FLAGS },
    stdout: "null",
    stderr: "null",
  }).spawn();
  for (let tries = 0;; tries++) {
    const status = await run([...exe, "watch", "status", "--json"], { cwd: ws, check: false });
    if (status.stdout.includes('"http": "http')) break;
    if (tries > 3000) throw new Error("the watch process did not start");
  }
  const watchStart = performance.now() - startedAt;
  const cpuOf = async () => {
    // utime + stime of the watch process, in clock ticks (USER_HZ, 100 on Linux).
    const stat = await Deno.readTextFile(`/proc/${daemon.pid}/stat`).catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  const watchStartCpu = await cpuOf();
  let call = 0;
  const post = async (session = "bench-1"): Promise<number> => {
    call += 1;
    const body = JSON.stringify({
      session_id: session,
      hook_event_name: "PostToolUse",
      tool_name: "Edit",
      tool_use_id: `toolu_${session}_${call}`,
      cwd: ws,
    });
    const started = performance.now();
    const response = await fetch(`http://127.0.0.1:${conf.port}/hook/claude-code`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${conf.token}` },
      body,
    });
    await response.arrayBuffer();
    const ms = performance.now() - started;
    if (!response.ok) throw new Error(`HTTP hook answered ${response.status}`);
    return ms;
  };
  const pct = (values: number[], p: number) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
  };
  await post();
  const unchanged: number[] = [];
  for (let i = 0; i < 50; i++) unchanged.push(await post());
  const edited: number[] = [];
  for (let i = 0; i < 20; i++) {
    await edit();
    edited.push(await post());
  }
  // Two sessions' events at once, per event.
  const both: number[] = [];
  for (let i = 0; i < 20; i++) {
    await edit();
    const [a, b] = await Promise.all([post("bench-1"), post("bench-2")]);
    both.push(a!, b!);
  }
  // The command hook handed to the running watch process.
  let hookCall = 0;
  const commandHook = await measure(
    async () => {
      hookCall += 1;
      await Deno.writeTextFile(
        `${root}/event.json`,
        JSON.stringify({
          session_id: "bench-cmd",
          hook_event_name: "PostToolUse",
          tool_name: "Edit",
          tool_use_id: `toolu_cmd_${hookCall}`,
          cwd: ws,
        }),
      );
    },
    () =>
      run([
        "sh",
        "-c",
        `${exe.map((a) => `'${a}'`).join(" ")} hook claude-code --strict < '${root}/event.json'`,
      ], {
        cwd: ws,
      }),
  );
  const statusText = await Deno.readTextFile(`/proc/${daemon.pid}/status`).catch(() => "");
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(statusText)?.[1] ?? NaN);
  const rss = kib("VmRSS") / 1024;
  const hwm = kib("VmHWM") / 1024;
  await run([...exe, "watch", "stop"], { cwd: ws });
  await daemon.status;
  const row = (name: string, ms: number, git: number) =>
    console.log(`  ${name}: ${fmt(ms)} vs git ${fmt(git)} = ${(ms / git).toFixed(3)}× git`);
  row("HTTP hook, unchanged tree (p50)", pct(unchanged, 50), gitUnchanged);
  console.log(`    p99 ${fmt(pct(unchanged, 99))}`);
  row("HTTP hook after a one-file edit (p50)", pct(edited, 50), gitEdit);
  console.log(`    p99 ${fmt(pct(edited, 99))}`);
  row("command hook with the watch running", commandHook, gitUnchanged);
  row("create, no watch, unchanged", createAlone, gitUnchanged);
  console.log(
    `  first capture: ${fmt(firstCapture)} vs git ${fmt(gitFirst)} = ${
      (gitFirst / firstCapture).toFixed(2)
    }× faster than git`,
  );
  console.log(
    `  two sessions at once, per event p50 ${fmt(pct(both, 50))} vs one session ${
      fmt(pct(edited, 50))
    } = ${(pct(both, 50) / pct(edited, 50)).toFixed(2)}×`,
  );
  console.log(
    `  watch process start (first walk included): ${fmt(watchStart)} wall, ${
      fmt(watchStartCpu)
    } CPU`,
  );
  console.log(`  watch process RSS ${rss.toFixed(0)} MiB (peak ${hwm.toFixed(0)} MiB)\n`);
  Object.assign(results, {
    daemon: {
      files,
      runtime: label,
      git_unchanged_ms: gitUnchanged,
      git_edit_ms: gitEdit,
      git_first_ms: gitFirst,
      http_unchanged_p50_ms: pct(unchanged, 50),
      http_unchanged_p99_ms: pct(unchanged, 99),
      http_edit_p50_ms: pct(edited, 50),
      http_edit_p99_ms: pct(edited, 99),
      two_sessions_p50_ms: pct(both, 50),
      command_hook_ms: commandHook,
      create_no_watch_ms: createAlone,
      first_capture_ms: firstCapture,
      watch_start_ms: watchStart,
      watch_start_cpu_ms: watchStartCpu,
      watch_rss_mib: rss,
      watch_peak_rss_mib: hwm,
    },
  });
}

console.log("JSON " + JSON.stringify(results));
if (args.values.keep) console.log(`kept ${root}`);
else await Deno.remove(root, { recursive: true });
