/**
 * Private helpers to inspect `node:fs` errors.
 *
 * @example
 * ```ts
 * import { errnoOf, reasonOf } from "./_errno.ts";
 * const error = Object.assign(new Error("nope"), { code: "ENOENT" });
 * console.assert(errnoOf(error) === "ENOENT");
 * console.assert(reasonOf(new Error("boom")) === "boom");
 * ```
 * @module
 */

/** The `code` of a `node:fs` error (`"ENOENT"`, `"ELOOP"`, ...), or `undefined`. */
export function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** A short reason for an error message: the errno code when there is one, else the message. */
export function reasonOf(error: unknown): string {
  return errnoOf(error) ?? (error instanceof Error ? error.message : String(error));
}
