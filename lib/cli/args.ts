/**
 * What every command needs and that costs nothing to load: the shape of a
 * command, argument parsing with `node:util` `parseArgs`, `--help`, user
 * paths and bounded input. The store, identity and trust helpers are in
 * `command.ts`, which re-exports all of this (so a command that needs only
 * these, and the dispatcher, load no store or crypto code).
 *
 * @example
 * ```ts
 * import { parseCommandArgs } from "./args.ts";
 * const parsed = parseCommandArgs({ name: "x", usage: "", examples: [], options: { json: { type: "boolean" } }, args: [{ name: "X", help: "", repeat: true }], run: () => Promise.resolve(0) }, ["--json", "a"]);
 * if (parsed.values.json !== true || parsed.positionals[0] !== "a") throw new Error("parse");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { errnoOf, openError, UsageError } from "../errors.ts";
import { cwd, viewStdin } from "../runtime.ts";
import type { Output } from "./output.ts";
import { GLOBAL_OPTIONS } from "./flags.ts";

/** One option of a command, as `parseArgs` takes it plus help text. */
export interface OptionSpec {
  /** Value kind. */
  type: "string" | "boolean";
  /** One-letter alias. */
  short?: string;
  /** Repeatable. */
  multiple?: boolean;
  /** Help text; omitted options are global. */
  help?: string;
  /** Placeholder for the value in help. */
  arg?: string;
  /**
   * For a boolean option: the values it may also take as `--name=VALUE`
   * (then {@linkcode Parsed.values} holds the string; bare `--name` is true).
   */
  values?: readonly string[];
}

/** One positional argument of a command. */
export interface ArgSpec {
  /** As usage shows it (`REVISION`, `FILE|-`). */
  name: string;
  /** Help text. */
  help: string;
  /** May be left out. */
  optional?: boolean;
  /** May be given more than once (only the last argument). */
  repeat?: boolean;
}

/** Everything a running command may use. */
export interface CommandContext {
  /** Output (the only place that prints). */
  out: Output;
  /** `--store` if given. */
  store: string | undefined;
  /** The working directory. */
  cwd: string;
}

/** Parsed arguments. */
export interface Parsed {
  /** Option values. */
  values: Record<string, string | boolean | string[] | undefined>;
  /** Positional arguments. */
  positionals: string[];
}

/**
 * A command of the CLI: one leaf of the command tree (`init`, `key show`,
 * `remote add`), declared as data. Its one-line summary lives in the
 * registry (`registry.ts`), which lists every command without loading it.
 */
export interface Command {
  /** Its path in the tree as typed: `restore`, or `key show` for a subcommand. */
  name: string;
  /** Usage line(s) after `ctxsnap `. */
  usage: string;
  /** Example invocations with a comment. */
  examples: string[];
  /**
   * Every option the command takes besides the global ones; any other is a
   * usage error. Shared options come from the groups of `flags.ts`, so a
   * flag has one type everywhere.
   */
  options: Record<string, OptionSpec>;
  /**
   * Flags this command used to take under another name, with their
   * replacement: the usage error for the old name says what to type instead.
   */
  renamed?: Record<string, string>;
  /**
   * The positional arguments, in order: one more than these is a usage
   * error, unless the last repeats.
   */
  args: readonly ArgSpec[];
  /**
   * Exit 0 even on failure (the error is still reported on stderr) unless
   * this flag is given: for hooks a harness runs, where a non-zero status
   * would block or fail the agent.
   */
  exitZeroUnless?: string;
  /** Runs the command; returns the exit status. */
  run(ctx: CommandContext, parsed: Parsed): Promise<number>;
}

export { GLOBAL_OPTIONS } from "./flags.ts";

/** Parses `argv` for `command`; unknown options and extra positionals are usage errors. */
export function parseCommandArgs(command: Command, argv: string[]): Parsed {
  const options: Record<
    string,
    { type: "string" | "boolean"; short?: string; multiple?: boolean }
  > = {};
  for (const [name, spec] of Object.entries({ ...GLOBAL_OPTIONS, ...command.options })) {
    options[name] = {
      type: spec.type,
      ...(spec.short ? { short: spec.short } : {}),
      ...(spec.multiple ? { multiple: true } : {}),
    };
  }
  // Boolean options that may carry a value (`--session-state=replace`).
  const valued: Record<string, string> = {};
  const args = argv.map((arg) => {
    const m = /^--([a-z][a-z-]*)=(.*)$/s.exec(arg);
    const spec = m === null ? undefined : command.options[m[1]!];
    if (m === null || spec?.values === undefined) return arg;
    if (!spec.values.includes(m[2]!)) {
      throw new UsageError(
        `--${m[1]} takes ${spec.values.map((v) => `=${v}`).join(" or ")}, not ${
          JSON.stringify(m[2])
        }`,
        { hint: `see \`ctxsnap ${command.name} --help\`` },
      );
    }
    valued[m[1]!] = m[2]!;
    return `--${m[1]}`;
  });
  // PEM text (`--trust "$(cat alice.pub.pem)"`, `key trust "$PEM"`) begins
  // with dashes, which parseArgs would read as an option: stand it in with a
  // token that cannot be one, and put it back after parsing.
  const pems: string[] = [];
  const token = (i: number) => `\u0001pem:${i}`;
  for (const [i, arg] of args.entries()) {
    if (arg.startsWith("-----BEGIN")) {
      args[i] = token(pems.length);
      pems.push(arg);
    }
  }
  const restore = (value: string) => {
    return value.startsWith("\u0001pem:") ? pems[Number(value.slice(5))] ?? value : value;
  };
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
    if (pems.length > 0) {
      parsed.positionals = parsed.positionals.map(restore);
      for (const [name, value] of Object.entries(parsed.values)) {
        (parsed.values as Record<string, unknown>)[name] = typeof value === "string"
          ? restore(value)
          : Array.isArray(value)
          ? value.map((v) => typeof v === "string" ? restore(v) : v)
          : value;
      }
    }
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify a positional.*$/s, "");
    const unknown = /^Unknown option '(-{1,2}[^']*)'$/.exec(message);
    const renamed = unknown === null
      ? undefined
      : command.renamed?.[unknown[1]!.replace(/^--/, "")];
    throw new UsageError(
      unknown === null
        ? message
        : `Option ${unknown[1]} does not apply to \`ctxsnap ${command.name}\``,
      {
        hint: renamed !== undefined
          ? `${unknown![1]} was renamed: use ${renamed}`
          : `see \`ctxsnap ${command.name} --help\` for the options it takes`,
      },
    );
  }
  const positionals = parsed.positionals;
  const most = command.args.at(-1)?.repeat === true ? Infinity : command.args.length;
  if (parsed.values.help !== true && positionals.length > most) {
    throw new UsageError(
      `Unexpected argument ${JSON.stringify(positionals[most])}`,
      {
        hint: `usage: ctxsnap ${command.usage.split("\n")[0]}`,
      },
    );
  }
  return { values: { ...parsed.values, ...valued } as Parsed["values"], positionals };
}

/** String option value, or undefined. */
export function str(parsed: Parsed, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : undefined;
}

/** Boolean option value. */
export function flag(parsed: Parsed, name: string): boolean {
  return parsed.values[name] === true;
}

/** Repeated string option values. */
export function list(parsed: Parsed, name: string): string[] {
  const value = parsed.values[name];
  return Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
}

/** Parses a whole number option within bounds. */
export function intOption(
  parsed: Parsed,
  name: string,
  min: number,
  max: number,
): number | undefined {
  const value = str(parsed, name);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `--${name} takes a whole number from ${min} to ${max}, not ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/** The process working directory. */
export function workingDir(): string {
  return cwd();
}

/**
 * A path the user typed, made absolute against the working directory the
 * command runs in (`-` stays `-`). Every user path goes through here before
 * it reaches the library, so an in-process run resolves it like a real one.
 */
export function userPath(p: string): string {
  return p === "-" ? p : path.resolve(cwd(), p);
}

/** Largest document read from a file or stdin by `--context` and friends. */
export const MAX_INPUT_BYTES: number = 16 * 1024 * 1024;

/** Reads a file, or stdin for `-`, refusing more than `maxBytes`. */
export function readInput(pathOrDash: string, maxBytes: number = MAX_INPUT_BYTES): Uint8Array {
  const given = pathOrDash === "-" ? viewStdin() : null;
  if (given !== null) {
    if (given.byteLength > maxBytes) {
      throw new UsageError(`Standard input is larger than ${maxBytes} bytes`);
    }
    return given;
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  let fd: number;
  try {
    fd = pathOrDash === "-" ? 0 : fs.openSync(userPath(pathOrDash), "r");
  } catch (error) {
    throw openError(pathOrDash, error);
  }
  try {
    const buffer = new Uint8Array(64 * 1024);
    for (;;) {
      let n: number;
      try {
        n = fs.readSync(fd, buffer, 0, buffer.byteLength, null);
      } catch (error) {
        if (errnoOf(error) === "EAGAIN") continue;
        if (errnoOf(error) === "EOF") break;
        throw error;
      }
      if (n === 0) break;
      total += n;
      if (total > maxBytes) {
        throw new UsageError(
          `${
            pathOrDash === "-" ? "Standard input" : JSON.stringify(pathOrDash)
          } is larger than ${maxBytes} bytes`,
        );
      }
      chunks.push(buffer.slice(0, n));
    }
  } finally {
    if (fd !== 0) fs.closeSync(fd);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** Milliseconds since the epoch as an ISO 8601 UTC string (the JSON style), or null. */
export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** Shortens an id for people: the first 12 hex characters. */
export function short(id: string | null | undefined): string {
  return id === null || id === undefined ? "-" : id.slice(0, 12);
}
