/**
 * Adopting a store this user did not create here: one committed into a
 * repository and cloned, copied from a backup, or moved. ctxsnap refuses such
 * a store until the user adopts it (see `lib/repository/trust.ts`).
 *
 * Adoption first checks everything it can without trusting the store: every
 * store path (`lstat`: real, owned by this user, not writable by others), the
 * exact schema, the format, that the store names the workspace it is
 * adopted for, and every object, snapshot signature and branch chain
 * (`verify --all`); a store that fails any check is refused. It then
 * describes what the user takes on: the snapshots and their untrusted
 * signers, unresolved operations, and sessions whose live state (task,
 * decisions, … which the next `create` signs in the user's name) is not
 * empty. It lists every file the store holds besides its core (the index,
 * its journal files and `objects/`): the transient `tmp/` and `run/` entries
 * are cleared (`run/` is kept while a watch process of this user answers on
 * it); every file that configures the store ({@linkcode CONFIG_FILES}: an
 * allow list `allow-secrets`, which re-includes secrets in captures, a
 * retention policy `retention`, which decides what the store forgets, a
 * transcript policy `transcripts`, a `daemon.conf`) and `published/` files
 * are refused unless the user keeps them explicitly (`keep`), and the allow
 * list's paths are shown either way.
 * Unless `dryRun`, it clears the stat cache (it describes files on another
 * machine, and capture trusts its hits), clears `tmp/` and `run/`, and
 * registers the store.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { isRegistered } from "../repository/trust.ts";
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
import * as fs from "node:fs";
import * as path from "node:path";
import { ConflictError, IntegrityError, quote, StoreTrustError, UsageError } from "../errors.ts";
import { ALLOW_SECRETS_FILE, readAllowSecrets } from "../repository/allow_secrets.ts";
import { Store } from "../repository/store.ts";
import {
  checkStorePaths,
  isRegistered,
  registerStore,
  STORE_ENTRIES,
} from "../repository/trust.ts";
import { sessionsWithLiveState } from "../repository/session_rows.ts";
import { unresolvedOperationIds } from "../repository/operations.ts";
import { clearStatCache } from "../repository/stat_cache.ts";
import { clearTreeCache } from "../repository/tree_cache.ts";
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
  untrustedSigners: string[];
  /** Operations left `applying` (recover or abort them after adopting). */
  unresolvedOperations: string[];
  /** Sessions whose live, unsigned state is not empty. */
  sessionsWithLiveState: string[];
  /** Whether it was registered (false for a dry run). */
  adopted: boolean;
  /** Whether this user had already created or adopted it here, before this call. */
  alreadyRegistered: boolean;
  /** Every file besides the core, sorted by path, and what adoption does with it. */
  extraFiles: ExtraFile[];
  /** The paths the store's allow list re-includes as captures, or null without one. */
  allowSecrets: string[] | null;
}

/** What adoption does with a store file that is not part of its core. */
export interface ExtraFile {
  /** Its path relative to the store directory. */
  path: string;
  /** `cleared` (transient), `kept` (the user asked), or `refused` (adoption stops). */
  action: "cleared" | "kept" | "refused";
}

/**
 * The store's files that configure its behaviour: every file entry of the
 * store folder besides the index and its journal files (`allow-secrets`,
 * `daemon.conf`, `retention`, `transcripts`).
 */
export const CONFIG_FILES: readonly string[] = Object.entries(STORE_ENTRIES)
  .filter(([name, kind]) => kind === "file" && !name.startsWith("index.db"))
  .map(([name]) => name).sort();

/** Store entries adoption may keep when the user names them (`init --adopt --keep NAME`). */
export const KEEPABLE: readonly string[] = [...CONFIG_FILES, "published"].sort();

/**
 * Lists the non-core files of the store in `dir` and what adoption does with
 * each. Of a store this user already created or adopted here (`mine`),
 * every file is theirs and kept.
 */
function extraFiles(
  dir: string,
  keep: ReadonlySet<string>,
  runInUse: boolean,
  mine = false,
): ExtraFile[] {
  const out: ExtraFile[] = [];
  const list = (name: string): string[] => {
    try {
      return fs.readdirSync(path.join(dir, name)).sort();
    } catch {
      return [];
    }
  };
  for (const entry of list("tmp")) out.push({ path: `tmp/${entry}`, action: "cleared" });
  for (const entry of list("run")) {
    out.push({ path: `run/${entry}`, action: runInUse ? "kept" : "cleared" });
  }
  // Every file that configures the store (what it captures, forgets, keeps of transcripts, whether
  // a watch starts): another's is never taken silently.
  for (const name of CONFIG_FILES) {
    if (fs.existsSync(path.join(dir, name))) {
      out.push({ path: name, action: keep.has(name) ? "kept" : "refused" });
    }
  }
  for (const entry of list("published")) {
    out.push({ path: `published/${entry}`, action: keep.has("published") ? "kept" : "refused" });
  }
  if (mine) { for (const file of out) file.action = "kept"; }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
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
  options: {
    dryRun?: boolean;
    keep?: readonly string[];
    /** A watch process of this user answers on the store's `run/` files: they are kept. */
    runInUse?: boolean;
  } = {},
): Promise<Adoption> {
  const storeDir = path.resolve(dir);
  checkStorePaths(storeDir);
  for (const name of options.keep ?? []) {
    if (!KEEPABLE.includes(name)) {
      throw new UsageError(`--keep takes ${KEEPABLE.join(" or ")}, not ${quote(name)}`);
    }
  }
  // A store already this user's (created or adopted here): its files are theirs, none cleared.
  const mine = isRegistered(configDir, storeDir);
  const extra = extraFiles(storeDir, new Set(options.keep ?? []), options.runInUse === true, mine);
  const allowList = fs.existsSync(path.join(storeDir, ALLOW_SECRETS_FILE))
    ? [...readAllowSecrets(storeDir)].sort()
    : null;
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
      untrustedSigners: [...untrusted].sort(),
      unresolvedOperations: unresolvedOperationIds(store),
      sessionsWithLiveState: sessionsWithLiveState(store),
      adopted: false,
      alreadyRegistered: mine,
      extraFiles: extra,
      allowSecrets: allowList,
    };
  } finally {
    store.close();
  }
  if (options.dryRun) return adoption;
  const refused = extra.filter((f) => f.action === "refused");
  if (refused.length > 0) {
    const names = [...new Set(refused.map((f) => f.path.split("/")[0]!))];
    throw new StoreTrustError(
      `The store at ${quote(storeDir)} holds ${names.map((n) => quote(n)).join(" and ")}, ` +
        `which you did not create${
          allowList === null
            ? ""
            : `; its allow list re-includes ${
              allowList.length === 0
                ? "nothing"
                : allowList.slice(0, 5).map((p) => quote(p)).join(", ")
            }${allowList.length > 5 ? ` and ${allowList.length - 5} more` : ""}`
        }`,
      {
        hint:
          `review ${names.join(" and ")} (\`ctxsnap init --adopt --dry-run\` lists them), then ` +
          `remove ${names.length > 1 ? "them" : "it"} or keep ${
            names.length > 1 ? "them" : "it"
          } with ${names.map((n) => `--keep ${n}`).join(" ")}`,
      },
    );
  }
  for (const file of extra) {
    // Transient files of another machine's processes: checked above (no link), removed.
    if (file.action === "cleared") {
      fs.rmSync(path.join(storeDir, ...file.path.split("/")), { recursive: true, force: true });
    }
  }
  const writable = Store.open(storeDir);
  try {
    writable.transaction("adopt", () => {
      clearStatCache(writable);
      clearTreeCache(writable);
    });
  } finally {
    writable.close();
  }
  registerStore(configDir, storeDir, "adopt");
  adoption.adopted = true;
  return adoption;
}
