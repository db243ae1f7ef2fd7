/**
 * The application layer's rules for opening and creating a workspace's
 * store, which the command line and the library (`mod.ts`'s `openStore`
 * and `initStore`) both follow:
 *
 * - creating: a store is never created inside the workspace of another
 *   store in a parent directory unless asked (`nested`); an existing store
 *   is reopened only if this user created or adopted it here (with a
 *   registry); a new store is registered as this user's (with a registry)
 *   and kept out of git (`.git/info/exclude`).
 * - opening: a store found by walking up from a directory must belong to
 *   the directory that holds it; with a registry it must be registered.
 *
 * @example
 * ```ts
 * import { initWorkspace } from "./workspace.ts";
 * const ws = await Deno.makeTempDir();
 * const { store, created } = initWorkspace(`${ws}/.ctxsnap`, ws);
 * store.close();
 * await Deno.mkdir(`${ws}/sub`);
 * let refused = false;
 * try {
 *   initWorkspace(`${ws}/sub/.ctxsnap`, `${ws}/sub`);
 * } catch {
 *   refused = true; // inside the workspace of the store above
 * }
 * if (!created || !refused) throw new Error("initWorkspace");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConflictError, quote, StoreTrustError } from "../errors.ts";
import { getEnv } from "../runtime.ts";
import { DEFAULT_STORE_NAME, locateStore } from "../repository/locate.ts";
import { INDEX_FILE, Store, type StoreOpenOptions } from "../repository/store.ts";
import { checkStorePaths, isRegistered, registerStore } from "../repository/trust.ts";
import { excludeStoreFromGit } from "../integrations/git/git_exclude.ts";

/** How {@linkcode initWorkspace} creates or reopens a store. */
export interface InitWorkspaceOptions {
  /**
   * The config directory whose registry records this user's stores: a new
   * store is registered there, and an existing one must be registered to
   * be reopened. Without it, neither.
   */
  registry?: string;
  /** Create the store even inside the workspace of a store in a parent directory. */
  nested?: boolean;
}

/** What {@linkcode initWorkspace} did. */
export interface InitWorkspaceResult {
  /** The store, open. */
  store: Store;
  /** Whether it was created (false: an existing store reopened). */
  created: boolean;
  /** The git exclude file the store was added to, or null (not a git work tree, or already there). */
  gitExclude: string | null;
}

/** The nearest store in a directory above `workspace`, or null. */
export function enclosingStore(workspace: string): string | null {
  let dir = path.dirname(path.resolve(workspace));
  for (;;) {
    const candidate = path.join(dir, DEFAULT_STORE_NAME);
    if (fs.existsSync(path.join(candidate, INDEX_FILE))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/**
 * Creates the store in `dir` capturing the workspace at `workspace`, or
 * reopens it if it exists, following this module's rules; throws
 * {@linkcode ConflictError} for a nested store not asked for and
 * {@linkcode StoreTrustError} for an existing store this user did not make
 * or adopt here. Nothing is written when it refuses.
 */
export function initWorkspace(
  dir: string,
  workspace: string,
  options: InitWorkspaceOptions = {},
): InitWorkspaceResult {
  const existed = fs.existsSync(path.join(dir, INDEX_FILE));
  const outer = existed ? null : enclosingStore(workspace);
  if (outer !== null && options.nested !== true) {
    throw new ConflictError(
      `${quote(workspace)} is inside the workspace of the store at ${quote(outer)}`,
      {
        hint: "run ctxsnap from there (it finds that store by walking up), or pass --nested " +
          "to give this directory a store of its own",
      },
    );
  }
  if (existed && options.registry !== undefined) {
    // Someone else's store, or this one copied or moved: never taken over silently.
    checkStorePaths(dir);
    if (!isRegistered(options.registry, dir)) {
      throw new StoreTrustError(
        `A store already exists at ${
          JSON.stringify(path.resolve(dir))
        }, but you did not create or adopt it on this machine`,
        {
          hint:
            "look at it with `ctxsnap init --adopt --dry-run`, then `ctxsnap init --adopt` to use it",
        },
      );
    }
  }
  const store = Store.init(dir, workspace);
  try {
    if (!existed && options.registry !== undefined) {
      registerStore(options.registry, store.dir, "init");
    }
    const gitExclude = excludeStoreFromGit(store.workspaceRoot, store.dir);
    return { store, created: !existed, gitExclude };
  } catch (error) {
    store.close();
    throw error;
  }
}

/** Where {@linkcode openWorkspace} looks for the store, and how it opens it. */
export interface OpenWorkspaceOptions {
  /** The store directory, if named (`--store`); else `$CTXSNAP_STORE`, else found by walking up. */
  store?: string | undefined;
  /** The directory to walk up from. */
  cwd: string;
  /** The config directory whose registry must list the store (see `lib/repository/trust.ts`). */
  registry?: string;
  /** Open read-only. */
  readOnly?: boolean;
}

/**
 * Opens the store a directory belongs to: `store` if given, else
 * `$CTXSNAP_STORE`, else the nearest `.ctxsnap/` walking up from `cwd`,
 * which must belong to the directory holding it (it may not point capture
 * and restore at some other directory); with `registry` it must be
 * registered as this user's. Nothing is read from or written to a store
 * that fails, and nothing is repaired.
 */
export function openWorkspace(options: OpenWorkspaceOptions): Store {
  const dir = locateStore({ store: options.store, cwd: options.cwd });
  const explicit = options.store !== undefined || (getEnv("CTXSNAP_STORE") ?? "") !== "";
  const registry = options.registry === undefined ? {} : { registry: options.registry };
  const readOnly = options.readOnly === true ? { readOnly: true } : {};
  // A store found by walking up must also belong to the directory holding it;
  // it may not point capture and restore at some other directory. Checked by
  // the one open, read only, before anything is written.
  if (!explicit) {
    return Store.open(dir, {
      ...readOnly,
      ...registry,
      owner: path.dirname(path.resolve(dir)),
      ...(options.readOnly === true ? { brief: false } : {}),
    });
  }
  return Store.open(dir, { ...readOnly, ...registry });
}

/**
 * Opens the store in `dir` (a `.ctxsnap` directory) named explicitly,
 * after checking its paths and schema; with `registry` it must also be
 * registered there as this user's.
 */
export function openStoreAt(dir: string, options: StoreOpenOptions = {}): Store {
  return Store.open(dir, options);
}
