/**
 * Finding a store: `--store DIR`, else `CTXSNAP_STORE`, else the nearest
 * `.ctxsnap/` walking up from the current directory, the way git finds `.git`.
 *
 * @example
 * ```ts
 * import { locateStore } from "./locate.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.mkdir(`${dir}/.ctxsnap`);
 * await Deno.writeFile(`${dir}/.ctxsnap/index.db`, new Uint8Array());
 * await Deno.mkdir(`${dir}/a/b`, { recursive: true });
 * if (!(locateStore({ cwd: `${dir}/a/b` }) === `${dir}/.ctxsnap`)) throw new Error("Example failed");
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { NoStoreError } from "../errors.ts";
import { getEnv } from "../runtime.ts";
import { INDEX_FILE } from "./_names.ts";

/** The default store directory name at a workspace root. */
export const DEFAULT_STORE_NAME = ".ctxsnap";

/** Where to look for a store. */
export interface LocateOptions {
  /** An explicit store directory (`--store`). */
  store?: string | undefined;
  /** Directory to start walking up from. */
  cwd: string;
}

/**
 * Returns the store directory to use, or throws {@linkcode NoStoreError}.
 * An explicit `store` (or `CTXSNAP_STORE`) is returned as given, resolved.
 */
export function locateStore(options: LocateOptions): string {
  const explicit = options.store ?? getEnv("CTXSNAP_STORE");
  if (explicit !== undefined && explicit !== "") return path.resolve(options.cwd, explicit);
  let dir = path.resolve(options.cwd);
  for (;;) {
    const candidate = path.join(dir, DEFAULT_STORE_NAME);
    if (fs.existsSync(path.join(candidate, INDEX_FILE))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new NoStoreError(`No ctxsnap store in ${JSON.stringify(options.cwd)} or any parent`, {
    hint: "run `ctxsnap init` at the workspace root, or pass --store DIR",
  });
}

/** The store directory `init` creates when none is named: `<cwd>/.ctxsnap`. */
export function defaultStoreFor(cwd: string, store?: string): string {
  const explicit = store ?? getEnv("CTXSNAP_STORE");
  if (explicit !== undefined && explicit !== "") return path.resolve(cwd, explicit);
  return path.join(path.resolve(cwd), DEFAULT_STORE_NAME);
}
