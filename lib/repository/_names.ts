/**
 * Names inside a store directory that code outside the store module needs
 * without loading it (store discovery).
 *
 * @example
 * ```ts
 * import { INDEX_FILE } from "./_names.ts";
 * if (INDEX_FILE !== "index.db") throw new Error("name");
 * ```
 * @module
 */

/** The name of the index database inside a store directory. */
export const INDEX_FILE = "index.db";
