/**
 * The shape of a command and the shared plumbing every command uses:
 * argument parsing with `node:util` `parseArgs`, `--help`, store opening,
 * the signing identity and the trust policy.
 *
 * @example
 * ```ts
 * import { parseCommandArgs } from "./command.ts";
 * const parsed = parseCommandArgs({ name: "x", summary: "", usage: "", examples: [], options: { json: { type: "boolean" } }, positionals: "any", run: () => Promise.resolve(0) }, ["--json", "a"]);
 * console.assert(parsed.values.json === true && parsed.positionals[0] === "a");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import {
  ConfigError,
  IntegrityError,
  NotFoundError,
  quote,
  UsageError,
} from "../encoding/errors.ts";
import {
  configDir,
  type Identity,
  loadIdentityAsync,
  loadOrCreateIdentity,
} from "../crypto/identity.ts";
import { Keyring, readConfigTrustedKeys, readKeyFile, readTrustedKeys } from "../crypto/keyring.ts";
import { parsePublicKey } from "../crypto/ed25519.ts";
import { locateStore } from "../store/locate.ts";
import { Store } from "../store/store.ts";
import { resolveRevision } from "../snapshot/names.ts";
import { leanCtxIdsWithPrefix } from "../store/leanctx_rows.ts";
import { cwd, getEnv, viewStdin } from "../runtime.ts";
import type { Output } from "./output.ts";

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

/** A command of the CLI. */
export interface Command {
  /** Name as typed. */
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Usage line(s) after `ctxsnap `. */
  usage: string;
  /** Example invocations with a comment. */
  examples: string[];
  /** Command-specific options. */
  options: Record<string, OptionSpec>;
  /** How many positionals are allowed: a number, or "any". */
  positionals: number | "any";
  /** Runs the command; returns the exit status. */
  run(ctx: CommandContext, parsed: Parsed): Promise<number>;
}

/** Options every command accepts. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  json: { type: "boolean", help: "print one JSON document on stdout" },
  store: {
    type: "string",
    arg: "DIR",
    help: "use the store in DIR (default: nearest .ctxsnap/, or $CTXSNAP_STORE)",
  },
  quiet: { type: "boolean", short: "q", help: "no notes or progress on stderr" },
  help: { type: "boolean", short: "h", help: "show this help" },
};

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
  // Boolean options that may carry a value (`--session=replace`).
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
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/\. To specify a positional.*$/s, ""), {
      hint: `see \`ctxsnap ${command.name} --help\``,
    });
  }
  const positionals = parsed.positionals;
  if (
    parsed.values.help !== true && command.positionals !== "any" &&
    positionals.length > command.positionals
  ) {
    throw new UsageError(
      `Unexpected argument ${JSON.stringify(positionals[command.positionals])}`,
      {
        hint: `usage: ctxsnap ${command.usage.split("\n")[0]}`,
      },
    );
  }
  return { values: { ...parsed.values, ...valued } as Parsed["values"], positionals };
}

/** Renders `ctxsnap CMD --help`. */
export function helpText(command: Command): string {
  const lines = [`ctxsnap ${command.name} — ${command.summary}`, "", "Usage:"];
  for (const usage of command.usage.split("\n")) lines.push(`  ctxsnap ${usage}`);
  const render = (specs: Record<string, OptionSpec>) => {
    for (const [name, spec] of Object.entries(specs)) {
      if (spec.help === undefined) continue;
      const flag = `${spec.short ? `-${spec.short}, ` : "    "}--${name}${
        spec.arg ? ` ${spec.arg}` : ""
      }${spec.values ? `[=${spec.values.join("|")}]` : ""}`;
      lines.push(`  ${flag.padEnd(28)} ${spec.help}`);
    }
  };
  if (Object.keys(command.options).length > 0) {
    lines.push("", "Options:");
    render(command.options);
  }
  lines.push("", "Global options:");
  render(GLOBAL_OPTIONS);
  if (command.examples.length > 0) {
    lines.push("", "Examples:");
    for (const example of command.examples) lines.push(`  ${example}`);
  }
  return lines.join("\n");
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

/**
 * Opens the store this invocation refers to. It must be this user's: created
 * by `init` or adopted with `init --adopt` on this machine (registered in the
 * config directory), with safe paths and ctxsnap's exact schema; see
 * `lib/store/trust.ts`. Nothing is read from or written to a store that
 * fails, and nothing is repaired.
 */
export function openStore(ctx: CommandContext, options: { readOnly?: boolean } = {}): Store {
  const dir = locateStore({ store: ctx.store, cwd: ctx.cwd });
  const explicit = ctx.store !== undefined || (getEnv("CTXSNAP_STORE") ?? "") !== "";
  const registry = configDir();
  // A store found by walking up must also belong to the directory holding
  // it; it may not point capture and restore at some other directory.
  // Checked read-only, before anything is written.
  if (!explicit) {
    const probe = Store.open(dir, { readOnly: true, registry });
    const { workspaceRoot } = probe;
    if (workspaceRoot !== path.dirname(probe.dir)) {
      probe.close();
      throwForeign(dir, workspaceRoot);
    }
    if (options.readOnly) return probe; // already checked and open as asked
    probe.close();
  }
  return Store.open(dir, { ...options, registry });
}

function throwForeign(dir: string, workspaceRoot: string): never {
  throw new IntegrityError(
    `The store found at ${JSON.stringify(dir)} names another workspace, ${
      JSON.stringify(workspaceRoot)
    }`,
    {
      hint:
        "a store found by walking up must belong to the directory that holds it; pass --store DIR to use it anyway",
    },
  );
}

/** Loads this machine's identity, creating it on first use. */
export function identity(): Promise<Identity> {
  return loadOrCreateIdentity(configDir());
}

/**
 * Builds the trust policy: this machine's own key (if it exists), the
 * trusted-keys file, and `--trust KEY` values (hex, PEM text or a PEM file path).
 */
export async function trustPolicy(
  trust: string[],
  options: { config?: boolean; keysFile?: string } = {},
): Promise<Keyring> {
  const useConfig = options.config ?? true;
  const keys = useConfig ? readConfigTrustedKeys(configDir()) : [];
  if (options.keysFile !== undefined) {
    const file = userPath(options.keysFile);
    if (!fs.existsSync(file)) {
      throw new NotFoundError(`No trusted-keys file at ${JSON.stringify(options.keysFile)}`);
    }
    keys.push(...readTrustedKeys(file));
  }
  let own: Identity | null = null;
  if (useConfig) own = await ownIdentityIfPresent();
  const keyring = new Keyring(keys, own);
  for (const value of trust) keyring.add(readKeyArgument(value));
  return keyring;
}

/**
 * Reads `--trust`/`key trust` arguments: 64-hex, PEM text, or a path to a PEM
 * file (read as {@linkcode readKeyFile} does: a regular file, at most 64 KiB,
 * never a FIFO or a device). A value that is a key but not a valid Ed25519
 * public key, and a key file that cannot be used, are configuration errors
 * (exit 7); a value that is none of the three is a usage error (exit 2).
 */
export function readKeyArgument(value: string): Uint8Array {
  const hint =
    "pass the hex public key from `ctxsnap key show`, or the file from `ctxsnap key export`";
  const text = /^[0-9a-fA-F]{64}$/.test(value)
    ? value.toLowerCase()
    : value.includes("-----BEGIN")
    ? value
    : null;
  if (text !== null) {
    try {
      return parsePublicKey(text);
    } catch (error) {
      throw new ConfigError(
        `Key ${quote(value)} is not a valid Ed25519 public key: ${
          error instanceof Error ? error.message : error
        }`,
        { hint, cause: error },
      );
    }
  }
  const key = readKeyFile(userPath(value));
  if (key === null) {
    throw new UsageError(
      `Key ${quote(value)} is neither 64 hex characters, PEM text, nor an existing file`,
      { hint },
    );
  }
  return key;
}

async function ownIdentityIfPresent(): Promise<Identity | null> {
  try {
    return await loadIdentityAsync(configDir());
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
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
    throw new NotFoundError(
      `Cannot open ${JSON.stringify(pathOrDash)}: ${(error as Error).message}`,
    );
  }
  try {
    const buffer = new Uint8Array(64 * 1024);
    for (;;) {
      let n: number;
      try {
        n = fs.readSync(fd, buffer, 0, buffer.byteLength, null);
      } catch (error) {
        if ((error as { code?: string }).code === "EAGAIN") continue;
        if ((error as { code?: string }).code === "EOF") break;
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

/**
 * Resolves a revision the user typed (an id prefix, `HEAD`, `@`, a branch,
 * with `~N` and `@{TIME}`; see `lib/snapshot/names.ts`), warning on stderr
 * when a name is both a branch and an id prefix. `session` is the session
 * whose HEAD and branches names mean (default current); `before` applies
 * `--before TIME`.
 */
export function revision(
  ctx: CommandContext,
  store: Store,
  text: string,
  options: { session?: string | undefined; before?: string | undefined } = {},
): string {
  return resolveRevision(store, text, {
    ...(options.session !== undefined ? { session: options.session } : {}),
    ...(options.before !== undefined ? { before: options.before } : {}),
    onWarning: (message) => ctx.out.warn(message),
  });
}

/** A snapshot argument resolved: a ctxsnap snapshot, or an imported lean-ctx snapshot. */
export interface Target {
  /** Which kind of snapshot. */
  format: "ctxsnap" | "lean-ctx";
  /** Its full id. */
  id: string;
}

/**
 * Resolves a snapshot argument that may also name an imported lean-ctx
 * snapshot: an id prefix matching a lean-ctx snapshot is resolved across
 * both kinds (ambiguous across them: exit 2); anything else is a revision
 * (see {@linkcode revision}).
 */
export async function target(
  ctx: CommandContext,
  store: Store,
  text: string,
  options: { session?: string | undefined; before?: string | undefined } = {},
): Promise<Target> {
  const t = text.trim().toLowerCase();
  if (
    options.before === undefined && /^[0-9a-f]{4,64}$/.test(t) &&
    leanCtxIdsWithPrefix(store, t, 1).length > 0
  ) {
    const { resolveAnyId } = await import("../share/leanctx_store.ts");
    return resolveAnyId(store, text);
  }
  return { format: "ctxsnap", id: revision(ctx, store, text, options) };
}

/** Milliseconds since the epoch as an ISO 8601 UTC string (the JSON style), or null. */
export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

/** Shortens an id for people: the first 12 hex characters. */
export function short(id: string | null | undefined): string {
  return id === null || id === undefined ? "-" : id.slice(0, 12);
}
