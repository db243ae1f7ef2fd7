/**
 * The ctxsnap version and the format versions it reads and writes.
 *
 * @example
 * ```ts
 * import { VERSION } from "./version.ts";
 * if (!(/^\d+\.\d+\.\d+/.test(VERSION))) throw new Error("Example failed");
 * ```
 * @module
 */

/** The ctxsnap release version. */
export const VERSION = "0.1.0";

/** Format versions this build reads and writes. */
export const FORMATS: Readonly<Record<string, string>> = Object.freeze({
  snapshot: "ctxsnap.snapshot/v1, ctxsnap.snapshot/v2",
  tree: "1, 2",
  bundle: "ctxsnap.bundle/v1",
  store: "ctxsnap-store/1 (schema 4)",
  "lean-ctx": "CONTEXT_SNAPSHOT_V1 (schema_version 1)",
});
