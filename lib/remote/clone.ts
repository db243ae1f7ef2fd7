/**
 * `clone`: a new workspace and store from a remote. It creates `DIR` (which
 * must not exist, or be empty), a store in `DIR/.ctxsnap` for it, the remote
 * `origin`, pulls (verifying everything, as `pull` does), then restores one
 * ref's head into the workspace with the ordinary three-way restore (which
 * records a `restore` snapshot on the new store's `main`, signed by this
 * machine, so later restores have a baseline).
 *
 * The ref restored is the newest (by its record's time) among the pulled
 * refs of trusted signers on branch `main`, or of `--branch B`, optionally
 * only of one signer; a remote with no such ref gives an empty workspace and
 * says so. With `--allow-untrusted` an unpinned signer's refs land (on their
 * quarantine branches) but are never checked out: the user restores one
 * explicitly after reviewing it. A failed
 * clone removes what it created.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { pickRef } from "./clone.ts";
 * const ref = (branch: string, createdAt: string) => ({
 *   keyId: "0123456789abcdef", session: "main", branch, seq: 1, head: "ab".repeat(32),
 *   createdAt, localBranch: `origin/0123456789abcdef/${branch}`, status: "updated" as const,
 *   reason: null, trusted: true,
 * });
 * const picked = pickRef([ref("exp", "2026-01-02T00:00:00.000Z"), ref("main", "2026-01-01T00:00:00.000Z")], {});
 * if (picked?.branch !== "main") throw new Error("main is preferred");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConflictError, quote } from "../errors.ts";
import type { Identity } from "../keys/identity.ts";
import { Store } from "../repository/store.ts";
import { registerStore } from "../repository/trust.ts";
import type { TrustPolicy } from "../history/verify.ts";
import { type RestoreResult, restoreSnapshot } from "../workspace/move/restore.ts";
import { addRemote, openBackend, type RemoteConfig } from "./remote_config.ts";
import { pull, type PulledRef, type PullResult } from "./pull.ts";

/** Options of {@linkcode clone}. */
export interface CloneOptions {
  /** Remote name (default `origin`). */
  name?: string;
  /** S3 endpoint, region and addressing (stored with the remote). */
  endpoint?: string | null;
  /** S3 region. */
  region?: string | null;
  /** Path-style addressing. */
  pathStyle?: boolean | null;
  /** Quarantine unpinned signers too. */
  allowUntrusted?: boolean;
  /** Restore a ref of this branch (default `main`, else any). */
  branch?: string;
  /** Restore only a ref of this signer (key id or a prefix of it). */
  signer?: string;
  /** Progress of the pull. */
  onProgress?: (phase: string, done: number, total: number) => void;
  /**
   * The config directory to register the new store in (see
   * `lib/repository/trust.ts`), so this user's later commands accept it.
   */
  registry?: string;
}

/** What {@linkcode clone} did. */
export interface CloneResult {
  /** The workspace. */
  workspace: string;
  /** The store. */
  store: string;
  /** The remote added. */
  remote: RemoteConfig;
  /** The pull. */
  pull: PullResult;
  /** The ref restored, or null. */
  restored: PulledRef | null;
  /** The restore, or null. */
  restore: RestoreResult | null;
}

/**
 * The ref a clone restores: the newest trusted ref of branch `main` (or
 * `options.branch`), else the newest trusted ref of any branch; never a ref
 * of a signer the trust policy does not accept.
 */
export function pickRef(
  refs: PulledRef[],
  options: { branch?: string; signer?: string },
): PulledRef | null {
  const usable = refs.filter((r) =>
    (r.status === "updated" || r.status === "unchanged") && r.head !== null && r.trusted &&
    (options.signer === undefined || r.keyId.startsWith(options.signer))
  );
  const wanted = options.branch ?? "main";
  const onBranch = usable.filter((r) => r.branch === wanted);
  const pool = onBranch.length > 0 || options.branch !== undefined ? onBranch : usable;
  const sorted = [...pool].sort((a, b) => (a.createdAt ?? "") < (b.createdAt ?? "") ? 1 : -1);
  return sorted[0] ?? null;
}

/** Clones `url` into `dir`. */
export async function clone(
  url: string,
  dir: string,
  signer: Identity,
  trust: TrustPolicy,
  options: CloneOptions = {},
): Promise<CloneResult> {
  const workspace = path.resolve(dir);
  let created = false;
  if (fs.existsSync(workspace)) {
    if (!fs.statSync(workspace).isDirectory() || fs.readdirSync(workspace).length > 0) {
      throw new ConflictError(`${quote(workspace)} exists and is not an empty directory`, {
        hint: "clone into a new directory",
      });
    }
  } else {
    fs.mkdirSync(workspace, { recursive: true });
    created = true;
  }
  const storeDir = path.join(workspace, ".ctxsnap");
  let store: Store | null = null;
  try {
    store = Store.init(storeDir, workspace);
    if (options.registry !== undefined) registerStore(options.registry, store.dir, "init");
    const remote = addRemote(store, {
      name: options.name ?? "origin",
      url,
      endpoint: options.endpoint ?? null,
      region: options.region ?? null,
      pathStyle: options.pathStyle ?? null,
    });
    const pulled = await pull(store, openBackend(remote), trust, remote.name, {
      ...(options.allowUntrusted ? { allowUntrusted: true } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    const picked = pickRef(pulled.refs, options);
    const restore = picked === null ? null : await restoreSnapshot(store, signer, picked.head!, {});
    return { workspace, store: storeDir, remote, pull: pulled, restored: picked, restore };
  } catch (error) {
    store?.close();
    store = null;
    if (created) fs.rmSync(workspace, { recursive: true, force: true });
    else {
      for (const name of fs.readdirSync(workspace)) {
        fs.rmSync(path.join(workspace, name), { recursive: true, force: true });
      }
    }
    throw error;
  } finally {
    store?.close();
  }
}
