/**
 * Adopting a store this user did not create here: one committed into a
 * repository and cloned, copied from a backup, or moved. ctxsnap refuses such
 * a store until the user adopts it (see `lib/store/trust.ts`).
 *
 * Adoption first checks everything it can without trusting the store: every
 * store path (`lstat`: real, owned by this user, not writable by others), the
 * exact schema, the format, that the store names the workspace it is
 * adopted for, and every object, snapshot signature and branch chain
 * (`verify --all`); a store that fails any check is refused. It then
 * describes what the user takes on: the snapshots and their untrusted
 * signers, unresolved operations, and sessions whose live state (task,
 * decisions, … which the next `create` signs in the user's name) is not
 * empty. Unless `dryRun`, it clears the stat cache (it describes files on
 * another machine, and capture trusts its hits) and registers the store.
 *
 * @example
 * ```ts
 * import { Store } from "../store/store.ts";
 * import { isRegistered } from "../store/trust.ts";
 * import { Keyring } from "../keys/keyring.ts";
 * import { adoptStore } from "./adopt.ts";
 * const ws = await Deno.makeTempDir();
 * const config = await Deno.makeTempDir();
 * Store.init(`${ws}/.ctxsnap`, ws).close();
 * const seen = await adoptStore(`${ws}/.ctxsnap`, ws, config, new Keyring([], null), { dryRun: true });
 * if (seen.snapshots !== 0 || isRegistered(config, `${ws}/.ctxsnap`)) throw new Error("dry run");
 * await adoptStore(`${ws}/.ctxsnap`, ws, config, new Keyring([], null));
 * if (!isRegistered(config, `${ws}/.ctxsnap`)) throw new Error("adopted");
 * ```
 * @module
 */
import * as path from "node:path";
import { ConflictError, IntegrityError, quote } from "../errors.ts";
import { Store } from "../store/store.ts";
import { checkStorePaths, registerStore } from "../store/trust.ts";
import { sessionsWithLiveState } from "../store/session_rows.ts";
import { unresolvedOperationIds } from "../store/operations.ts";
import { clearStatCache } from "../store/capture.ts";
import { type TrustPolicy, verifyAll } from "./verify.ts";

/** What an adopted store holds. */
export interface Adoption {
  /** The store directory. */
  store: string;
  /** The workspace it captures. */
  workspace: string;
  /** Snapshots it holds (all verified). */
  snapshots: number;
  /** Key ids of valid signers this user does not trust. */
  untrusted_signers: string[];
  /** Operations left `applying` (recover or abort them after adopting). */
  unresolved_operations: string[];
  /** Sessions whose live, unsigned state is not empty. */
  sessions_with_live_state: string[];
  /** Whether it was registered (false for a dry run). */
  adopted: boolean;
}

/**
 * Checks the store in `dir` for workspace `workspace` and, unless `dryRun`,
 * registers it as this user's in config directory `configDir`.
 */
export async function adoptStore(
  dir: string,
  workspace: string,
  configDir: string,
  trust: TrustPolicy,
  options: { dryRun?: boolean } = {},
): Promise<Adoption> {
  const storeDir = path.resolve(dir);
  checkStorePaths(storeDir);
  const store = Store.open(storeDir, { readOnly: true });
  let adoption: Adoption;
  try {
    if (store.workspaceRoot !== path.resolve(workspace)) {
      throw new ConflictError(
        `The store at ${quote(storeDir)} belongs to the workspace ${quote(store.workspaceRoot)}`,
        { hint: "adopt it from that workspace, or use another --store for this one" },
      );
    }
    const report = await verifyAll(store, trust);
    const problems = [
      ...report.problems,
      ...report.snapshots.filter((s) => !s.valid).map((s) =>
        `snapshot ${s.id}: ${s.problems.join("; ")}`
      ),
    ];
    if (problems.length > 0) {
      throw new IntegrityError(
        `The store at ${quote(storeDir)} does not verify (${problems.length} problem(s)): ${
          problems.slice(0, 3).join(", ")
        }`,
        { hint: "do not adopt it" },
      );
    }
    const untrusted = new Set<string>();
    for (const s of report.snapshots) if (!s.trusted && s.keyId !== null) untrusted.add(s.keyId);
    adoption = {
      store: storeDir,
      workspace: store.workspaceRoot,
      snapshots: report.snapshots.length,
      untrusted_signers: [...untrusted].sort(),
      unresolved_operations: unresolvedOperationIds(store),
      sessions_with_live_state: sessionsWithLiveState(store),
      adopted: false,
    };
  } finally {
    store.close();
  }
  if (options.dryRun) return adoption;
  const writable = Store.open(storeDir);
  try {
    writable.transaction("adopt", () => clearStatCache(writable));
  } finally {
    writable.close();
  }
  registerStore(configDir, storeDir, "adopt");
  adoption.adopted = true;
  return adoption;
}
