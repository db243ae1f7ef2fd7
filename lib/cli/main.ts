/**
 * The command-line dispatcher: finds the command, parses its arguments,
 * runs it, and maps every error to a message and an exit status.
 *
 * @example
 * ```ts
 * import { main } from "./main.ts";
 * const status = await main(["--version"], () => {});
 * if (!(status === 0)) throw new Error("Example failed");
 * ```
 * @module
 */
import { CtxsnapError, UsageError } from "../errors.ts";
import { cwd, environment, getEnv, runtimeName, withProcessView } from "../runtime.ts";
import { FORMATS, SOURCE, VERSION } from "../version.ts";
import type { Command } from "./args.ts";
import { Output, type Writer } from "./output.ts";
import { COMMANDS, GROUPS, resolveCommand, subcommandsOf } from "./registry.ts";

export { COMMANDS, GROUPS } from "./registry.ts";
export type { CommandEntry, GroupEntry } from "./registry.ts";

/**
 * A raw SQLite failure that escaped a command (a read outside a
 * transaction meeting a writer's lock, say) as the typed error it means:
 * busy is exit 6 wherever it happens. Other errors pass through.
 */
async function typed(error: unknown): Promise<unknown> {
  if (error instanceof CtxsnapError || !(error instanceof Error)) return error;
  if (!/database|SQLITE|locked|disk I\/O/i.test(error.message)) return error;
  const { mapSqliteError } = await import("../repository/store.ts");
  return mapSqliteError(error, "the command");
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
    cwd: opts.cwd ?? cwd(),
    ...(opts.stdin ? { stdin: opts.stdin } : {}),
  }, () => run(argv, opts.write));
}

async function run(argv: string[], write: Writer | undefined): Promise<number> {
  const { globals, name, rest } = splitArgv(argv);
  const json = globals.includes("--json") || rest.includes("--json");
  const quiet = globals.includes("--quiet") || globals.includes("-q") || rest.includes("--quiet") ||
    rest.includes("-q");
  const out = new Output({ json, quiet, ...(write ? { write } : {}) });
  let loaded: Command | undefined;
  let failed = false;
  let waits: typeof import("../repository/waits.ts") | undefined;
  try {
    if (globals.includes("--version") || name === "version") {
      const info = { version: VERSION, source: SOURCE, runtime: runtimeName(), formats: FORMATS };
      out.result(
        info,
        () =>
          `ctxsnap ${VERSION} (${info.runtime})\nsource ${
            SOURCE ?? "not a build (running from the source tree)"
          }\nreads ${Object.entries(FORMATS).map(([k, v]) => `${k} ${v}`).join(", ")}`,
      );
      return 0;
    }
    if (name === undefined || name === "help") {
      const help = await import("./help.ts");
      if (name === "help" && rest.some((a) => !a.startsWith("-"))) {
        const [top = "", ...more] = rest.filter((a) => !a.startsWith("-"));
        return await showHelp(out, top, more);
      }
      out.result(help.overviewJson(), () => help.overviewText());
      return name === undefined && !globals.includes("--help") && !globals.includes("-h") ? 2 : 0;
    }
    const found = resolveCommand(name, rest);
    if (found.entry === undefined) {
      throw new UsageError(`Unknown command ${JSON.stringify(name)}`, {
        hint: "run `ctxsnap --help` to list commands",
      });
    }
    const asksHelp = [...globals, ...rest].some((a) => a === "--help" || a === "-h");
    const groupOnly = GROUPS.some((g) => g.name === name);
    if (asksHelp && groupOnly && found.rest.length === rest.length) {
      return await showHelp(out, name, []);
    }
    const { parseCommandArgs, workingDir } = await import("./args.ts");
    const command = loaded = await found.entry.load();
    if (found.word !== undefined && command.args.length === 0) {
      throw new UsageError(`Unknown ${name} subcommand ${JSON.stringify(found.word)}`, {
        hint: `one of: ${subcommandsOf(name).map((s) => s.name.slice(name.length + 1)).join(", ")}`,
      });
    }
    let parsed;
    try {
      parsed = parseCommandArgs(command, [...globals, ...found.rest]);
    } catch (error) {
      throw await withOwner(error, command.name);
    }
    if (parsed.values.help === true) {
      const { helpJson, helpText } = await import("./help.ts");
      out.result(helpJson(command), () => helpText(command));
      return 0;
    }
    const store = typeof parsed.values.store === "string" ? parsed.values.store : undefined;
    waits = await import("../repository/waits.ts");
    waits.resetStoreWaits();
    return await command.run({ out, store: store ?? undefined, cwd: workingDir() }, parsed);
  } catch (error) {
    failed = true;
    if (getEnv("CTXSNAP_DEBUG") && error instanceof Error) out.warn(error.stack ?? "");
    // A hook a harness runs reports problems in one line and does not fail
    // the agent, whatever went wrong (even loading the command itself).
    // (`hook install`, run by a person, fails like any command.)
    const lenient = name === "hook" && rest[0] === "install"
      ? undefined
      : loaded?.exitZeroUnless ?? (name === "hook" ? "--strict" : undefined);
    if (lenient !== undefined && !rest.includes(lenient)) {
      out.errorLine(await typed(error), `ctxsnap ${name}`);
      return 0;
    }
    return out.error(await typed(error));
  } finally {
    if (!failed && waits !== undefined) noteWaits(out, waits.storeWaits());
  }
}

/**
 * A flag refused by a subcommand (`key show --force`) that a sibling takes
 * (`key import`): the hint says which, so the user finds the right command.
 */
async function withOwner(error: unknown, name: string): Promise<unknown> {
  const flag = /^Option (--[a-z][a-z-]*) does not apply/.exec(
    error instanceof UsageError ? error.message : "",
  )?.[1];
  const top = name.split(" ")[0]!;
  const siblings = COMMANDS.filter((c) =>
    c.name !== name && (c.name === top || c.name.startsWith(`${top} `))
  );
  if (
    flag === undefined || siblings.length === 0 || (error as UsageError).hint?.includes("renamed")
  ) {
    return error;
  }
  const owners: string[] = [];
  for (const sibling of siblings) {
    if ((await sibling.load()).options[flag.slice(2)] !== undefined) owners.push(sibling.name);
  }
  if (owners.length === 0) return error;
  return new UsageError((error as UsageError).message, {
    hint: `${flag} is an option of ${
      owners.map((o) => `\`ctxsnap ${o}\``).join(" and ")
    }; see \`ctxsnap ${name} --help\` for the options of this one`,
  });
}

/** `ctxsnap help TOP [SUB]` and `ctxsnap GROUP --help`: a command's, subcommand's or group's help. */
async function showHelp(out: Output, top: string, more: string[]): Promise<number> {
  const help = await import("./help.ts");
  const found = resolveCommand(top, more);
  const known = COMMANDS.some((c) => c.name === top || c.name.startsWith(`${top} `));
  if (
    !known || found.entry === undefined || (more.length > 0 && found.rest.length === more.length)
  ) {
    throw new UsageError(`No command ${JSON.stringify([top, ...more].join(" "))}`, {
      hint: "run `ctxsnap --help` to list commands",
    });
  }
  if (more.length === 0 && GROUPS.some((g) => g.name === top)) {
    const group = await help.groupHelp(top);
    out.result(group.json, () => group.text);
    return 0;
  }
  const command = await found.entry.load();
  out.result(help.helpJson(command), () => help.helpText(command));
  return 0;
}

/**
 * Says so when this command waited for another process's hold on the store
 * for at least `CTXSNAP_WAIT_NOTE_MS` (default 1000) in all: the command
 * succeeded, only later (a wait past the busy timeout is exit 6 instead).
 */
function noteWaits(out: Output, waits: { count: number; ms: number }): void {
  if (waits.count === 0) return;
  const raw = Number(getEnv("CTXSNAP_WAIT_NOTE_MS") ?? "1000");
  const threshold = Number.isFinite(raw) && raw >= 0 ? raw : 1000;
  if (waits.ms < threshold) return;
  out.note(
    `waited ${waits.ms} ms for a busy store (${waits.count} wait${
      waits.count === 1 ? "" : "s"
    } for another ctxsnap process)`,
  );
}
