/**
 * Opening and creating stores for the library (`openStore`, `initStore`),
 * re-exported by `mod.ts` and `api/snapshot.ts`. The rules are the ones the
 * command line follows (`lib/app/workspace.ts`).
 *
 * @module
 */
import type { Store, StoreOpenOptions } from "../lib/repository/store.ts";
import { initWorkspace, openStoreAt } from "../lib/app/workspace.ts";

/**
 * Opens the store in `dir` (a `.ctxsnap` directory), after checking its
 * paths and schema; with `registry` (a config directory, as `configDir()`
 * returns) it must also be registered there as this user's.
 */
export function openStore(dir: string, options: StoreOpenOptions = {}): Store {
  return openStoreAt(dir, options);
}

/**
 * Creates (or reopens) a store in `dir` capturing the workspace at
 * `workspace`, by the rules `ctxsnap init` follows: a workspace inside the
 * workspace of a store in a parent directory is refused (`ConflictError`)
 * unless `nested`; the store is kept out of git (`.git/info/exclude`); with
 * `registry` a store it creates is registered there, and an existing one is
 * reopened only if registered (`StoreTrustError` otherwise).
 */
export function initStore(
  dir: string,
  workspace: string,
  options: { registry?: string; nested?: boolean } = {},
): Store {
  return initWorkspace(dir, workspace, options).store;
}
