// deno-lint-ignore-file no-console
/**
 * The mutation check (`deno task mutate`): proves that the tests named for a
 * defence fail when the defence goes. Each entry of
 * {@linkcode MUTATIONS} (scripts/mutations.ts) is a realistic slip (a check
 * skipped, a condition inverted, a flag dropped): one exact text of one file
 * and its replacement, and the test runs expected to fail.
 *
 * How it runs:
 *
 * 1. Every entry is checked first: its text must occur exactly once in its
 *    file, ids are unique, every test file exists. An entry that no longer
 *    applies is an error naming the file and the text, never a skip.
 * 2. The tree (the files `git ls-files` lists, tracked and untracked) is
 *    copied to one scratch directory per worker under the system temp
 *    directory. Mutations are applied only there, so the checkout is never
 *    left mutated, even if this process is killed; the copies are removed at
 *    the end (and on Ctrl-C or SIGTERM).
 * 3. Baseline: every test selection the list names runs once on the
 *    unmutated copy (grouped by file), and must pass and run at least one
 *    test; otherwise a failure under a mutation would prove nothing.
 * 4. Each mutation is applied on its own, its test runs (`deno test -A
 *    --no-check FILE --filter F`, one after another, stopping at the first
 *    that fails) and the file is put back. A mutation is caught when a run
 *    reports a failed test, or (for an entry with `timeoutMs`, whose defence
 *    stops a hang) when the run is killed at that bound; a run that fails
 *    without a test summary (the mutated module does not load) is an error of
 *    the entry, not a catch. Any other run is killed after 240 s
 *    (`CTXSNAP_MUTATE_RUN_TIMEOUT_MS`) and counts as caught by timeout.
 *
 * Exits 0 when every mutation is caught, 1 naming the survivors and the
 * entries in error. Flags: `--only ID[,ID…]`, `--jobs N` (default 2),
 * `--list` (print the ids and exit), `--keep` (leave the scratch copies).
 *
 * @example
 * ```ts ignore
 * // deno task mutate --only restore-keep-skipped --jobs 1
 * import { checkMutations } from "./mutate.ts";
 * import { MUTATIONS } from "./mutations.ts";
 * const problems = await checkMutations(".", MUTATIONS);
 * if (problems.length > 0) throw new Error(problems.join("\n"));
 * ```
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Mutation, MUTATIONS, type TestRun } from "./mutations.ts";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Longest one test run may take before it is killed (and counted as a catch by timeout). */
const RUN_TIMEOUT_MS = Number(Deno.env.get("CTXSNAP_MUTATE_RUN_TIMEOUT_MS") ?? 240_000);

/** How many times `needle` occurs in `haystack` (non-overlapping). */
function occurrences(haystack: string, needle: string): number {
  if (needle === "") return 0;
  let count = 0;
  for (
    let at = haystack.indexOf(needle);
    at >= 0;
    at = haystack.indexOf(needle, at + needle.length)
  ) {
    count++;
  }
  return count;
}

/**
 * The problems of a mutation list against the tree at `root`: duplicate or
 * malformed ids, a file or test file that does not exist, a text that does
 * not occur exactly once, a replacement equal to the text. Empty when every
 * entry applies.
 */
export async function checkMutations(root: string, list: readonly Mutation[]): Promise<string[]> {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const m of list) {
    if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(m.id)) problems.push(`${m.id}: id is not kebab-case`);
    if (seen.has(m.id)) problems.push(`${m.id}: duplicate id`);
    seen.add(m.id);
    if (m.find === m.replace) problems.push(`${m.id}: the replacement equals the text`);
    if (m.tests.length === 0) problems.push(`${m.id}: names no test`);
    for (const t of m.tests) {
      try {
        await Deno.stat(join(root, t.file));
      } catch {
        problems.push(`${m.id}: test file ${t.file} does not exist`);
      }
    }
    let text: string;
    try {
      text = await Deno.readTextFile(join(root, m.file));
    } catch {
      problems.push(`${m.id}: ${m.file} does not exist`);
      continue;
    }
    const n = occurrences(text, m.find);
    if (n !== 1) {
      problems.push(
        `${m.id}: ${m.file}: the text ${
          JSON.stringify(m.find)
        } occurs ${n} times (must be exactly once)`,
      );
    }
  }
  return problems;
}

/** The outcome of one `deno test` run. */
interface RunOutcome {
  /** "passed": ran tests, none failed; "failed": a test failed; "timeout"; "error": no summary. */
  verdict: "passed" | "failed" | "timeout" | "error";
  /** Tests that passed (from the summary). */
  passed: number;
  /** The last lines of the output, for reports. */
  tail: string;
  /** Milliseconds taken. */
  ms: number;
}

const children = new Set<Deno.ChildProcess>();

/** The page script's sources, bundled into `lib/view/_client_js.ts` by `scripts/build_client.ts`. */
const CLIENT_SOURCES = "lib/view/client/";

/** Rebuilds the bundled page script of the tree at `cwd`. */
async function rebuildClient(cwd: string): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/build_client.ts"],
    cwd,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`build_client failed in ${cwd}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

async function runTests(
  cwd: string,
  file: string,
  filter: string | undefined,
  timeoutMs: number = RUN_TIMEOUT_MS,
): Promise<RunOutcome> {
  const args = ["test", "-A", "--no-check", "--quiet", file];
  if (filter !== undefined) args.push("--filter", filter);
  const started = Date.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  children.add(child);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, timeoutMs);
  const out = await child.output();
  clearTimeout(timer);
  children.delete(child);
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  const tail = text.trimEnd().split("\n").slice(-12).join("\n");
  const ms = Date.now() - started;
  if (timedOut) return { verdict: "timeout", passed: 0, tail, ms };
  const summary = /^(ok|FAILED) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed/m.exec(text);
  if (summary === null) return { verdict: "error", passed: 0, tail, ms };
  const passed = Number(summary[2]);
  const failed = Number(summary[3]);
  if (failed > 0) return { verdict: "failed", passed, tail, ms };
  return { verdict: out.code === 0 ? "passed" : "error", passed, tail, ms };
}

/** Copies the files `git ls-files` lists (tracked, and untracked not ignored) into `dest`. */
async function copyTree(dest: string): Promise<void> {
  const out = await new Deno.Command("git", {
    args: ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    cwd: REPO,
    stdout: "piped",
  }).output();
  if (!out.success) throw new Error("git ls-files failed");
  const files = new TextDecoder().decode(out.stdout).split("\0").filter((f) => f !== "");
  const made = new Set<string>();
  for (const file of files) {
    const from = join(REPO, file);
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(from);
    } catch {
      continue; // deleted in the work tree
    }
    const dir = dirname(join(dest, file));
    if (!made.has(dir)) {
      await Deno.mkdir(dir, { recursive: true });
      made.add(dir);
    }
    if (info.isSymlink) await Deno.symlink(await Deno.readLink(from), join(dest, file));
    else if (info.isFile) await Deno.copyFile(from, join(dest, file));
  }
}

function parseArgs(
  args: string[],
): { only: Set<string> | null; jobs: number; list: boolean; keep: boolean } {
  let only: Set<string> | null = null;
  let jobs = 2;
  let list = false;
  let keep = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--only") only = new Set((args[++i] ?? "").split(",").filter((s) => s !== ""));
    else if (arg === "--jobs") jobs = Math.max(1, Number(args[++i]));
    else if (arg === "--list") list = true;
    else if (arg === "--keep") keep = true;
    else throw new Error(`unknown argument ${JSON.stringify(arg)}`);
  }
  return { only, jobs, list, keep };
}

function describe(t: TestRun): string {
  return t.filter === undefined ? t.file : `${t.file} --filter ${JSON.stringify(t.filter)}`;
}

/** Runs `work` over `items` with at most `jobs` at once; worker `w` gets its own index. */
async function pool<T>(
  items: readonly T[],
  jobs: number,
  work: (item: T, worker: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(jobs, items.length) }, async (_, worker) => {
      while (next < items.length) await work(items[next++]!, worker);
    }),
  );
}

async function main(): Promise<number> {
  const options = parseArgs(Deno.args);
  const list = MUTATIONS.filter((m) => options.only === null || options.only.has(m.id));
  if (options.only !== null) {
    for (const id of options.only) {
      if (!MUTATIONS.some((m) => m.id === id)) {
        console.error(`mutate: error: no mutation has the id ${JSON.stringify(id)}`);
        return 1;
      }
    }
  }
  if (options.list) {
    for (const m of list) console.log(`${m.id}\t${m.file}\t${m.tests.map(describe).join("; ")}`);
    return 0;
  }
  const problems = await checkMutations(REPO, MUTATIONS);
  if (problems.length > 0) {
    console.error("mutate: error: mutations that do not apply to this tree:");
    for (const p of problems) console.error(`  ${p}`);
    return 1;
  }

  const started = Date.now();
  const scratch = await Deno.makeTempDir({ prefix: "ctxsnap-mutate-" });
  const cleanup = () => {
    for (const child of children) {
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
    }
    if (!options.keep) {
      try {
        Deno.removeSync(scratch, { recursive: true });
      } catch { /* gone */ }
    }
  };
  const onSignal = () => {
    cleanup();
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  try {
    const trees = Array.from({ length: options.jobs }, (_, i) => join(scratch, `tree-${i}`));
    for (const tree of trees) await copyTree(tree);
    console.log(`mutate: ${list.length} mutations, ${options.jobs} at a time, in ${scratch}`);

    // Baseline: each test file once, filtered to every selection the list makes of it.
    const byFile = new Map<string, Set<string | undefined>>();
    for (const m of list) {
      for (const t of m.tests) {
        if (!byFile.has(t.file)) byFile.set(t.file, new Set());
        byFile.get(t.file)!.add(t.filter);
      }
    }
    const broken: string[] = [];
    await pool([...byFile], options.jobs, async ([file, filters], worker) => {
      const whole = filters.has(undefined);
      const filter = whole
        ? undefined
        : `/${
          [...filters].map((f) =>
            f!.startsWith("/") && f!.endsWith("/") ? f!.slice(1, -1) : escape(f!)
          )
            .join("|")
        }/`;
      const outcome = await runTests(trees[worker]!, file, filter);
      const label = filter === undefined ? file : `${file} (${filters.size} selections)`;
      if (outcome.verdict !== "passed") {
        broken.push(`${label}: ${outcome.verdict}\n${indent(outcome.tail)}`);
      }
      console.log(`mutate: baseline ${label}: ${outcome.verdict} in ${seconds(outcome.ms)}`);
    });
    // Every selection must run at least one test on its own.
    if (broken.length > 0) {
      console.error("mutate: error: the unmutated tree fails the tests the list names:");
      for (const b of broken) console.error(`  ${b}`);
      return 1;
    }

    const survivors: string[] = [];
    const errors: string[] = [];
    let done = 0;
    await pool(list, options.jobs, async (m, worker) => {
      const tree = trees[worker]!;
      const path = join(tree, m.file);
      const original = await Deno.readTextFile(path);
      const mutated = original.replace(m.find, () => m.replace);
      await Deno.writeTextFile(path, mutated);
      // The page script is bundled at build time: the tests see a mutation of its source once rebuilt.
      const bundled = m.file.startsWith(CLIENT_SOURCES);
      if (bundled) await rebuildClient(tree);
      const t0 = Date.now();
      let verdict = "survived";
      const notes: string[] = [];
      try {
        for (const t of m.tests) {
          const outcome = await runTests(tree, t.file, t.filter, m.timeoutMs ?? RUN_TIMEOUT_MS);
          if (outcome.verdict === "passed" && outcome.passed === 0) {
            errors.push(`${m.id}: ${describe(t)} selects no test`);
            verdict = "error";
            break;
          }
          if (outcome.verdict === "failed" || outcome.verdict === "timeout") {
            verdict = outcome.verdict === "failed" ? "caught" : "caught (timeout)";
            notes.push(describe(t));
            break;
          }
          if (outcome.verdict === "error") {
            errors.push(
              `${m.id}: ${
                describe(t)
              } ended without a test summary (does the mutated file load?)\n${
                indent(outcome.tail)
              }`,
            );
            verdict = "error";
            break;
          }
        }
      } finally {
        await Deno.writeTextFile(path, original);
        if (bundled) await rebuildClient(tree);
      }
      if (verdict === "survived") {
        survivors.push(`${m.id}: ${m.file}: ${m.tests.map(describe).join("; ")}`);
      }
      done++;
      console.log(
        `mutate: [${done}/${list.length}] ${m.id}: ${verdict}${
          notes.length ? ` by ${notes[0]}` : ""
        } (${seconds(Date.now() - t0)})`,
      );
    });

    const wall = seconds(Date.now() - started);
    if (errors.length > 0) {
      console.error(`mutate: error: ${errors.length} mutations could not be judged:`);
      for (const e of errors) console.error(`  ${e}`);
    }
    if (survivors.length > 0) {
      console.error(`mutate: ${survivors.length} mutations SURVIVED (no named test failed):`);
      for (const s of survivors) console.error(`  ${s}`);
    }
    console.log(
      `mutate: ${
        list.length - survivors.length - errors.length
      } caught, ${survivors.length} survived, ${errors.length} errors, in ${wall}`,
    );
    return survivors.length > 0 || errors.length > 0 ? 1 : 0;
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
    cleanup();
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

function indent(text: string): string {
  return text.split("\n").map((line) => `    ${line}`).join("\n");
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

if (import.meta.main) Deno.exit(await main());
