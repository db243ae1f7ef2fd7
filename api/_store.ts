/**
 * Opening and creating stores for the library (`openStore`, `initStore`),
 * re-exported by `mod.ts` and `api/snapshot.ts`.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Store, type StoreOpenOptions } from "../lib/repository/store.ts";
import { registerStore } from "../lib/repository/trust.ts";

/**
 * Opens the store in `dir` (a `.ctxsnap` directory), after checking its
 * paths and schema; with `registry` (a config directory, as `configDir()`
 * returns) it must also be registered there as this user's.
 */
export function openStore(dir: string, options: StoreOpenOptions = {}): Store {
  return Store.open(dir, options);
}

/**
 * Creates (or reopens) a store in `dir` capturing the workspace at
 * `workspace`; with `registry` a store it creates is registered there.
 */
export function initStore(
  dir: string,
  workspace: string,
  options: { registry?: string } = {},
): Store {
  const created = !existsSync(join(dir, "index.db"));
  const store = Store.init(dir, workspace);
  if (created && options.registry !== undefined) {
    registerStore(options.registry, store.dir, "init");
  }
  return store;
}
