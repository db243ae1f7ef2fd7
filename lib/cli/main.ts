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
import { CtxsnapError, EXIT_MEANINGS, UsageError } from "../errors.ts";
import { cwd, environment, getEnv, runtimeName, withProcessView } from "../runtime.ts";
import { FORMATS, SOURCE, VERSION } from "../version.ts";
import type { Command } from "./args.ts";
import { Output, type Writer } from "./output.ts";

/**
 * A command as the dispatcher knows it before loading it: each command's
 * module (and what it imports: the store, crypto, capture) is loaded only
 * when that command runs, so `--version` and `--help` load almost nothing.
 */
export interface CommandEntry {
  /** Name as typed. */
  name: string;
  /** One line for the command list (the command's own `summary`). */
  summary: string;
  /** Loads the command. */
  load(): Promise<Command>;
}

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "init",
    summary: "create a store for this workspace, or adopt one you did not create here",
    load: async () => (await import("./commands/init.ts")).init,
  },
  {
    name: "create",
    summary: "capture the workspace and session into a signed snapshot",
    load: async () => (await import("./commands/create.ts")).create,
  },
  {
    name: "list",
    summary: "list snapshots, newest first",
    load: async () => (await import("./commands/list.ts")).list,
  },
  {
    name: "show",
    summary: "show what a snapshot recorded",
    load: async () => (await import("./commands/show.ts")).show,
  },
  {
    name: "verify",
    summary: "check snapshots: id, signature, signer trust, tree and every blob",
    load: async () => (await import("./commands/verify.ts")).verify,
  },
  {
    name: "diff",
    summary: "show what changed between snapshots: files and session",
    load: async () => (await import("./commands/diff.ts")).diff,
  },
  {
    name: "restore",
    summary: "restore a snapshot's workspace and session, three-way, losing nothing",
    load: async () => (await import("./commands/restore.ts")).restore,
  },
  {
    name: "switch",
    summary: "switch to a branch, moving the workspace files to its head (three-way)",
    load: async () => (await import("./commands/switch.ts")).switchCommand,
  },
  {
    name: "recover",
    summary: "finish an interrupted restore, switch, undo or redo, or --abort it",
    load: async () => (await import("./commands/recover.ts")).recover,
  },
  {
    name: "undo",
    summary: "revert the last operation that changed the workspace, the session or a branch",
    load: async () => (await import("./commands/undo.ts")).undo,
  },
  {
    name: "redo",
    summary: "re-apply the operation the last undo reverted",
    load: async () => (await import("./commands/undo.ts")).redo,
  },
  {
    name: "branch",
    summary: "list branches, or switch to one (moving the workspace)",
    load: async () => (await import("./commands/branch.ts")).branch,
  },
  {
    name: "fork",
    summary: "start a new branch at a snapshot",
    load: async () => (await import("./commands/branch.ts")).fork,
  },
  {
    name: "log",
    summary:
      "show the operations log: creates, restores, switches, undos, edits, forks, imports, gc",
    load: async () => (await import("./commands/log.ts")).log,
  },
  {
    name: "timeline",
    summary: "write the timeline as one self-contained HTML page (graph, context, signers, diffs)",
    load: async () => (await import("./commands/timeline.ts")).timeline,
  },
  {
    name: "serve",
    summary: "serve the timeline page live on 127.0.0.1 (read-only, token in the URL)",
    load: async () => (await import("./commands/serve.ts")).serve,
  },
  {
    name: "forget",
    summary: "remove snapshots (objects are freed by gc)",
    load: async () => (await import("./commands/forget.ts")).forget,
  },
  {
    name: "gc",
    summary: "remove trees and blobs that no retained snapshot references; return the disk",
    load: async () => (await import("./commands/gc.ts")).gc,
  },
  {
    name: "materialize",
    summary: "write a snapshot's tree, or some paths of it, into a directory (deletes nothing)",
    load: async () => (await import("./commands/materialize.ts")).materialize,
  },
  {
    name: "publish",
    summary: "write a snapshot to a portable, verifiable file",
    load: async () => (await import("./commands/publish.ts")).publish,
  },
  {
    name: "import",
    summary:
      "verify a published snapshot, bundle or lean-ctx snapshot, then add it on a quarantine branch",
    load: async () => (await import("./commands/import.ts")).importCommand,
  },
  {
    name: "remote",
    summary: "add, list or remove the remotes snapshots are pushed to and pulled from",
    load: async () => (await import("./commands/remote.ts")).remote,
  },
  {
    name: "push",
    summary: "upload snapshots and a signed ref to a remote",
    load: async () => (await import("./commands/remote.ts")).push,
  },
  {
    name: "pull",
    summary: "download, verify and quarantine what a remote has that this store lacks",
    load: async () => (await import("./commands/remote.ts")).pull,
  },
  {
    name: "clone",
    summary: "create a workspace and store from a remote",
    load: async () => (await import("./commands/remote.ts")).clone,
  },
  {
    name: "session",
    summary: "show or edit the live session state that the next snapshot records",
    load: async () => (await import("./commands/session.ts")).session,
  },
  {
    name: "key",
    summary: "show, export or import (from lean-ctx) this machine's key; manage trusted keys",
    load: async () => (await import("./commands/key.ts")).key,
  },
  {
    name: "watch",
    summary:
      "watch the workspace and make checkpoints for create and hooks at the speed of a change",
    load: async () => (await import("./commands/watch.ts")).watch,
  },
  {
    name: "hook",
    summary: "checkpoint for an agent harness's hook event (JSON on stdin); never fails the agent",
    load: async () => (await import("./commands/hook.ts")).hook,
  },
  {
    name: "mcp",
    summary: "serve the store to an agent over the Model Context Protocol (stdio)",
    load: async () => (await import("./commands/mcp.ts")).mcp,
  },
];

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
      const entry = name === "help" ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
      const target = await entry?.load();
      const { helpText } = await import("./args.ts");
      out.result(
        { commands: COMMANDS.map((c) => ({ name: c.name, summary: c.summary })) },
        () => target ? helpText(target) : overview(),
      );
      return name === undefined && !globals.includes("--help") && !globals.includes("-h") ? 2 : 0;
    }
    const entry = COMMANDS.find((c) => c.name === name);
    if (entry === undefined) {
      throw new UsageError(`Unknown command ${JSON.stringify(name)}`, {
        hint: "run `ctxsnap --help` to list commands",
      });
    }
    const { helpText, parseCommandArgs, workingDir } = await import("./args.ts");
    const command = loaded = await entry.load();
    const parsed = parseCommandArgs(command, [...globals, ...rest]);
    if (parsed.values.help === true) {
      out.result(
        { command: command.name, usage: command.usage, examples: command.examples },
        () => helpText(command),
      );
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
