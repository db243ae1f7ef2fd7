/**
 * The thin runtime seam: the only module that may touch `Deno.*`.
 *
 * Everything else uses web standards and `node:` built-ins so the same sources
 * run under Deno and inside a Node.js single executable.
 *
 * @example
 * ```ts
 * import { getEnv } from "./runtime.ts";
 * const home = getEnv("HOME");
 * ```
 * @module
 */
import process from "node:process";

/** Returns an environment variable, or `undefined` when unset or not permitted. */
export function getEnv(name: string): string | undefined {
  try {
    return process.env[name];
  } catch {
    return undefined;
  }
}

/** Returns the command-line arguments after the script name. */
export function args(): string[] {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  if (deno?.args) return [...deno.args];
  return process.argv.slice(2);
}

/** Names the runtime executing this code, e.g. `deno 2.9.6` or `node v20.20.2`. */
export function runtimeName(): string {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  if (deno?.version?.deno) return `deno ${deno.version.deno}`;
  return `node ${process.version}`;
}

/** Whether file descriptor 0, 1 or 2 is a terminal. */
export function isTerminal(fd: 0 | 1 | 2): boolean {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  try {
    if (deno) {
      const stream = fd === 0 ? deno.stdin : fd === 1 ? deno.stdout : deno.stderr;
      return stream.isTerminal();
    }
    const stream = fd === 0 ? process.stdin : fd === 1 ? process.stdout : process.stderr;
    return Boolean((stream as { isTTY?: boolean }).isTTY);
  } catch {
    return false;
  }
}

/** Exits the process with `code` after flushing nothing further. */
export function exit(code: number): never {
  process.exit(code);
}

/** Current working directory. */
export function cwd(): string {
  try {
    return process.cwd();
  } catch {
    return "."; // no permission to read the working directory's path
  }
}
