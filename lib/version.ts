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

// Replaced by the bundler (`scripts/_toolchain.ts` passes `--define`) with the
// commit the executable was built from; absent when running from source.
declare const __CTXSNAP_SOURCE__: string | undefined;

/**
 * The source this build was made from, as `--version` and `release.json`
 * name it: a 40-hex git commit (with `-dirty` when the tree had uncommitted
 * changes), `unknown (not a git checkout)` for a build from an exported tree,
 * or null when running from source (not a build).
 */
export const SOURCE: string | null = typeof __CTXSNAP_SOURCE__ === "string"
  ? __CTXSNAP_SOURCE__
  : null;

/** Format versions this build reads and writes. */
export const FORMATS: Readonly<Record<string, string>> = Object.freeze({
  snapshot: "ctxsnap.snapshot/v1, ctxsnap.snapshot/v2",
  tree: "1, 2",
  bundle: "ctxsnap.bundle/v1",
  store: "ctxsnap-store/1 (schema 10)",
  "lean-ctx": "CONTEXT_SNAPSHOT_V1 (schema_version 1)",
});
