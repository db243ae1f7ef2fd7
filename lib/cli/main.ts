/**
 * The command-line dispatcher: finds the command, parses its arguments,
 * runs it, and maps every error to a message and an exit status.
 *
 * @example
 * ```ts
 * import { main } from "./main.ts";
 * const status = await main(["--version"], () => {});
 * console.assert(status === 0);
 * ```
 * @module
 */
import { EXIT_MEANINGS, UsageError } from "../encoding/errors.ts";
import { environment, getEnv, runtimeName, withProcessView } from "../runtime.ts";
import { FORMATS, VERSION } from "../version.ts";
import { type Command, helpText, parseCommandArgs, workingDir } from "./command.ts";
import { Output, type Writer } from "./output.ts";
import { create } from "./commands/create.ts";
import { diff } from "./commands/diff.ts";
import { init } from "./commands/init.ts";
import { key } from "./commands/key.ts";
import { list } from "./commands/list.ts";
import { session } from "./commands/session.ts";
import { show } from "./commands/show.ts";
import { verify } from "./commands/verify.ts";
import { restore } from "./commands/restore.ts";
import { redo, undo } from "./commands/undo.ts";
import { switchCommand } from "./commands/switch.ts";
import { recover } from "./commands/recover.ts";
import { branch, fork } from "./commands/branch.ts";
import { log } from "./commands/log.ts";
import { forget } from "./commands/forget.ts";
import { gc } from "./commands/gc.ts";
import { materialize } from "./commands/materialize.ts";
import { publish } from "./commands/publish.ts";
import { importCommand } from "./commands/import.ts";
import { clone, pull, push, remote } from "./commands/remote.ts";
import { timeline } from "./commands/timeline.ts";
import { serve } from "./commands/serve.ts";

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly Command[] = [
  init,
  create,
  list,
  show,
  verify,
  diff,
  restore,
  switchCommand,
  recover,
  undo,
  redo,
  branch,
  fork,
  log,
  timeline,
  serve,
  forget,
  gc,
  materialize,
  publish,
  importCommand,
  remote,
  push,
  pull,
  clone,
  session,
  key,
];

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "ctxsnap — a context time machine for agent and research workspaces",
    "",
    "Usage: ctxsnap [--store DIR] [--json] COMMAND [ARGS]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Run `ctxsnap COMMAND --help` for a command's options and examples.",
    "",
    "Exit status:",
    ...EXIT_MEANINGS.map((m) => `  ${String(m.exit).padEnd(4)}${m.meaning}`),
  ].join("\n");
}

/** Splits global options that appear before the command name. */
function splitArgv(
  argv: string[],
): { globals: string[]; name: string | undefined; rest: string[] } {
  const globals: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const arg = argv[i]!;
    if (arg === "--store") {
      globals.push(arg, argv[i + 1] ?? "");
      i += 2;
    } else if (
      arg.startsWith("--store=") ||
      ["--json", "--quiet", "-q", "--help", "-h", "--version"].includes(arg)
    ) {
      globals.push(arg);
      i += 1;
    } else break;
  }
  return { globals, name: argv[i], rest: argv.slice(i + 1) };
}

/**
 * How {@linkcode main} runs in-process (tests, and harnesses embedding the CLI):
 * where output goes, and the environment, working directory and standard
 * input it sees instead of the process's own (see `withProcessView`).
 */
export interface MainOptions {
  /** Receives stdout (1) and stderr (2). */
  write: Writer;
  /** The whole environment the run sees (default: the process's). */
  env?: Readonly<Record<string, string>>;
  /** The working directory, absolute (default: the process's). */
  cwd?: string;
  /** Standard input's bytes (default: empty, with `env` or `cwd` given). */
  stdin?: Uint8Array;
}

/**
 * Runs the CLI with `argv`; returns the exit status. Pass a {@linkcode Writer}
 * (or {@linkcode MainOptions}) to run in-process: output goes to it, and with
 * `env`/`cwd` the run sees them instead of the process's own.
 */
export function main(argv: string[], options?: Writer | MainOptions): Promise<number> {
  const opts: MainOptions | undefined = typeof options === "function"
    ? { write: options }
    : options;
  if (opts === undefined || (opts.env === undefined && opts.cwd === undefined)) {
    return run(argv, opts?.write);
  }
  return withProcessView({
    env: opts.env ?? environment() as Record<string, string>,
    cwd: opts.cwd ?? workingDir(),
    ...(opts.stdin ? { stdin: opts.stdin } : {}),
  }, () => run(argv, opts.write));
}

async function run(argv: string[], write: Writer | undefined): Promise<number> {
  const { globals, name, rest } = splitArgv(argv);
  const json = globals.includes("--json") || rest.includes("--json");
  const quiet = globals.includes("--quiet") || globals.includes("-q") || rest.includes("--quiet") ||
    rest.includes("-q");
  const out = new Output({ json, quiet, ...(write ? { write } : {}) });
  try {
    if (globals.includes("--version") || name === "version") {
      const info = { version: VERSION, runtime: runtimeName(), formats: FORMATS };
      out.result(
        info,
        () =>
          `ctxsnap ${VERSION} (${info.runtime})\nreads ${
            Object.entries(FORMATS).map(([k, v]) => `${k} ${v}`).join(", ")
          }`,
      );
      return 0;
    }
    if (name === undefined || name === "help") {
      const target = name === "help" ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
      out.result(
        { commands: COMMANDS.map((c) => ({ name: c.name, summary: c.summary })) },
        () => target ? helpText(target) : overview(),
      );
      return name === undefined && !globals.includes("--help") && !globals.includes("-h") ? 2 : 0;
    }
    const command = COMMANDS.find((c) => c.name === name);
    if (command === undefined) {
      throw new UsageError(`Unknown command ${JSON.stringify(name)}`, {
        hint: "run `ctxsnap --help` to list commands",
      });
    }
    const parsed = parseCommandArgs(command, [...globals, ...rest]);
    if (parsed.values.help === true) {
      out.result(
        { command: command.name, usage: command.usage, examples: command.examples },
        () => helpText(command),
      );
      return 0;
    }
    const store = typeof parsed.values.store === "string" ? parsed.values.store : undefined;
    return await command.run({ out, store: store ?? undefined, cwd: workingDir() }, parsed);
  } catch (error) {
    if (getEnv("CTXSNAP_DEBUG") && error instanceof Error) out.warn(error.stack ?? "");
    return out.error(error);
  }
}
