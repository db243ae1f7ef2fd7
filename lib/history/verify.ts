/**
 * Verifying stored snapshots: integrity (id recomputed, the index row agrees
 * with the body, the tree and every blob present and hashing to their ids)
 * and origin (signature valid, signer trusted). `verifyAll` also re-hashes
 * every object and walks the hash chain of every branch.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { verifyAll } from "./verify.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const report = await verifyAll(store, { isTrusted: () => false, nameOf: () => null });
 * if (!(report.problems.length === 0)) throw new Error("Example failed");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { CtxsnapError } from "../errors.ts";
import type { Store } from "../repository/store.ts";
import { snapshotIds } from "../repository/snapshot_rows.ts";
import { forgottenIds } from "../repository/forgotten.ts";
import type { TreeManifest } from "../format/tree.ts";
import type { DirTree } from "../format/dir_tree.ts";
import { checkDirTree, type DirTreeFacts } from "../format/tree_object.ts";
import { checkEnvelope, type Envelope } from "../format/envelope.ts";
import { branchChain, getSnapshotRow, listBranches, readEnvelopeUnverified } from "./timeline.ts";

/** Decides whether a signer is trusted and what it is called. */
export interface TrustPolicy {
  /** Whether signatures by this key (id, and the full public key in hex) count as trusted. */
  isTrusted(keyId: string, publicKeyHex?: string): boolean;
  /** The signer's trusted name, or null. */
  nameOf(keyId: string): string | null;
}

/** The outcome of verifying one snapshot. */
export interface SnapshotReport {
  /** Snapshot id. */
  id: string;
  /** Integrity and signature both hold. */
  valid: boolean;
  /** Valid and the signer is trusted. */
  trusted: boolean;
  /** Signer key id (null if the envelope could not be read). */
  keyId: string | null;
  /** Signer name from the trusted keys, or null. */
  signer: string | null;
  /** Workspace files and bytes checked. */
  checked: { files: number; bytes: number };
  /** Whether the snapshot carries workspace content in this store. */
  hasWorkspace: boolean;
  /** What is wrong, empty when valid. */
  problems: string[];
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Whether the blob a file entry names is present, sound and of the size the
 * entry records, each blob decided once per run (`seenBlobs`).
 */
function entryBlobOk(
  store: Store,
  blob: string,
  size: number,
  seenBlobs: Map<string, boolean>,
): boolean {
  let ok = seenBlobs.get(blob);
  if (ok === undefined) {
    ok = blobHolds(store, blob);
    if (ok) {
      ok = store.objectSize(blob) === size;
    }
    seenBlobs.set(blob, ok);
  }
  return ok;
}

function blobProblem(path: string, blob: string): string {
  return `blob of ${JSON.stringify(path)} (${blob}) is missing or corrupt`;
}

/**
 * Verifies a flat (version 1) tree's blobs, re-hashing each once;
 * `seenBlobs` lets callers skip blobs already checked in this run.
 */
function checkFlatTree(
  store: Store,
  tree: TreeManifest,
  problems: string[],
  seenBlobs: Map<string, boolean>,
): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const entry of tree.entries) {
    if (entry.type !== "file") continue;
    files += 1;
    bytes += entry.size;
    if (!entryBlobOk(store, entry.blob, entry.size, seenBlobs)) {
      problems.push(blobProblem(entry.path, entry.blob));
    }
  }
  return { files, bytes };
}

/**
 * Verifies the tree `rootId` of a snapshot: the hierarchy as `Store.getTree`
 * checks it and every blob below it. A directory tree is checked without
 * expanding it (`checkDirTree`): a subtree already in `seenTrees` (checked
 * for an earlier snapshot in this run) is not read again, and its verdict
 * (`flagged` when a blob below it is bad) and totals are reused. Only when
 * something is bad are the flagged subtrees read again, to name the paths.
 */
function checkTree(
  store: Store,
  rootId: string,
  problems: string[],
  seenBlobs: Map<string, boolean>,
  seenTrees: Map<string, DirTreeFacts>,
): { files: number; bytes: number } {
  const read = (id: string) => store.getTreeObject(id).tree;
  let facts = seenTrees.get(rootId);
  if (facts === undefined) {
    const root = read(rootId);
    if (root.version === 1) return checkFlatTree(store, root, problems, seenBlobs);
    facts = checkDirTree(rootId, root, read, {
      memo: seenTrees,
      visit: (_id, dir) => {
        let bad = false;
        for (const entry of dir.entries) {
          if (entry.type !== "file") continue;
          if (!entryBlobOk(store, entry.blob, entry.size, seenBlobs)) bad = true;
        }
        return bad;
      },
    });
  }
  if (facts.flagged) {
    const name = (dir: DirTree, prefix: string): void => {
      for (const entry of dir.entries) {
        const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
        if (entry.type === "file") {
          if (!entryBlobOk(store, entry.blob, entry.size, seenBlobs)) {
            problems.push(blobProblem(path, entry.blob));
          }
        } else if (entry.type === "tree" && seenTrees.get(entry.tree)?.flagged === true) {
          name(read(entry.tree) as DirTree, path);
        }
      }
    };
    name(read(rootId) as DirTree, "");
  }
  return { files: facts.files, bytes: facts.bytes };
}

/**
 * Whether a blob the reader's state names is present and sound. The reader
 * is pinned to one committed state (`Store.readAsync`), but object files are
 * not: a file a concurrent gc unlinked after that state was taken is checked
 * again against the latest state, where its row is gone (`Store.blobSoundNow`),
 * so a correct gc is never reported as damage. A row missing from the
 * reader's own state is damage.
 */
function blobHolds(store: Store, id: string, seen?: Map<string, boolean>): boolean {
  if (store.checkBlob(id, seen)) return true;
  return store.hasObject(id) && store.blobSoundNow(id);
}

/**
 * Verifies one stored snapshot, reading one committed state of the store
 * (`Store.readAsync`). Callers verifying several snapshots pass the same
 * `seenBlobs` (blob verdicts) and `seenTrees` (directory trees checked, with
 * their verdicts and totals) to each, so a blob is re-hashed and a directory
 * read once: verifying a snapshot one file apart from one already verified
 * reads only the directories on that file's path.
 */
export function verifySnapshot(
  store: Store,
  id: string,
  trust: TrustPolicy,
  seenBlobs: Map<string, boolean> = new Map(),
  seenTrees: Map<string, DirTreeFacts> = new Map(),
): Promise<SnapshotReport> {
  return store.readAsync(() => verifyOne(store, id, trust, seenBlobs, seenTrees));
}

async function verifyOne(
  store: Store,
  id: string,
  trust: TrustPolicy,
  seenBlobs: Map<string, boolean>,
  seenTrees: Map<string, DirTreeFacts>,
): Promise<SnapshotReport> {
  const report: SnapshotReport = {
    id,
    valid: false,
    trusted: false,
    keyId: null,
    signer: null,
    checked: { files: 0, bytes: 0 },
    hasWorkspace: false,
    problems: [],
  };
  let envelope: Envelope;
  try {
    envelope = readEnvelopeUnverified(store, id); // checked and reported below
  } catch (error) {
    report.problems.push(`envelope: ${message(error)}`);
    return report;
  }
  report.keyId = envelope.signature.key_id;
  report.signer = trust.nameOf(envelope.signature.key_id);
  const check = await checkEnvelope(envelope);
  if (!check.idMatches) {
    report.problems.push(`id does not match the body (body hashes to ${check.computedId})`);
  }
  if (!check.signatureValid) report.problems.push("signature does not verify");
  const row = getSnapshotRow(store, id);
  const body = envelope.body;
  if (
    row === null || row.session !== body.session || row.branch !== body.branch ||
    row.parent !== body.parent || row.tree !== (body.workspace?.tree ?? null) ||
    row.key_id !== envelope.signature.key_id || row.created_at !== body.created_at
  ) {
    report.problems.push("index row disagrees with the signed body");
  }
  if (body.workspace !== null) {
    try {
      const problems: string[] = [];
      report.checked = checkTree(store, body.workspace.tree, problems, seenBlobs, seenTrees);
      report.hasWorkspace = true;
      report.problems.push(...problems);
      if (
        report.checked.files !== body.workspace.files ||
        report.checked.bytes !== body.workspace.bytes
      ) {
        report.problems.push("workspace counts disagree with the tree");
      }
    } catch (error) {
      if (!(error instanceof CtxsnapError)) throw error;
      if (error.code === "not_found" && row?.imported === 1) {
        // Imported as an envelope only: there is no content to check, by design.
        report.hasWorkspace = false;
      } else {
        report.problems.push(`tree ${body.workspace.tree}: ${message(error)}`);
      }
    }
  }
  report.valid = report.problems.length === 0;
  report.trusted = report.valid && trust.isTrusted(
    envelope.signature.key_id,
    envelope.signature.public_key,
  );
  return report;
}

/** The outcome of {@linkcode verifyAll}. */
export interface StoreReport {
  /** One report per snapshot, oldest first. */
  snapshots: SnapshotReport[];
  /** Objects re-hashed. */
  objects: { checked: number; corrupt: string[] };
  /** Branches whose chain was walked. */
  branches: number;
  /** Store-level problems (corrupt objects, broken chains). */
  problems: string[];
}

/**
 * Verifies every object, every snapshot and every branch chain, all in one
 * committed state of the store (`Store.readAsync`): a checkpoint, forget or
 * gc that commits meanwhile is not seen half done, so what it reports is
 * damage, not a concurrent writer (docs/DESIGN.md §3.4).
 */
export function verifyAll(
  store: Store,
  trust: TrustPolicy,
  onProgress?: (done: number, total: number) => void,
): Promise<StoreReport> {
  return store.readAsync(() => verifyEverything(store, trust, onProgress));
}

/**
 * A seam for tests: `beforeBranches` runs after the snapshots are verified and
 * before the branch heads are read, where another process may commit.
 */
export const verifyHooks: { beforeBranches?: () => void | Promise<void> } = {};

async function verifyEverything(
  store: Store,
  trust: TrustPolicy,
  onProgress?: (done: number, total: number) => void,
): Promise<StoreReport> {
  const problems: string[] = [];
  const corrupt: string[] = [];
  const seenBlobs = new Map<string, boolean>();
  const seenTrees = new Map<string, DirTreeFacts>();
  const listed = store.listObjects();
  // Chunked blobs last, so each reuses its chunks' verdicts instead of
  // re-hashing them (its own whole-file hash is still checked).
  const chunkedIds = store.chunkedBlobIds();
  const blobs = [
    ...listed.filter((object) => object.kind === "blob" && !chunkedIds.has(object.id)),
    ...listed.filter((object) => object.kind === "blob" && chunkedIds.has(object.id)),
  ];
  const total = listed.length;
  let done = 0;
  const damaged = (object: { id: string; kind: string }) => {
    corrupt.push(object.id);
    problems.push(`${object.kind} ${object.id} is corrupt or missing`);
  };
  for (const object of blobs) {
    const ok = blobHolds(store, object.id, seenBlobs);
    seenBlobs.set(object.id, ok);
    if (!ok) damaged(object);
    onProgress?.(++done, total);
  }
  // The snapshots' trees are read (re-hashed and validated) while their
  // snapshots are verified, each distinct directory once across all of them
  // (`seenTrees`); only trees no snapshot reached are read afterwards.
  const ids = snapshotIds(store);
  const snapshots: SnapshotReport[] = [];
  for (const id of ids) {
    snapshots.push(await verifyOne(store, id, trust, seenBlobs, seenTrees));
  }
  for (const object of listed) {
    if (object.kind === "blob") continue;
    if (!seenTrees.has(object.id)) {
      try {
        // One object: the hierarchy below a root is checked with its snapshot.
        store.getTreeObject(object.id);
      } catch (error) {
        if (!(error instanceof CtxsnapError)) throw error;
        damaged(object);
      }
    }
    onProgress?.(++done, total);
  }
  const known = new Set(ids);
  const forgotten = new Set(forgottenIds(store));
  await verifyHooks.beforeBranches?.();
  const branches = listBranches(store);
  for (const branch of branches) {
    if (branch.head !== null && !known.has(branch.head)) {
      problems.push(
        `branch ${branch.session}/${branch.name} points at missing snapshot ${branch.head}`,
      );
      continue;
    }
    for (const id of branchChain(store, branch.session, branch.name)) {
      const row = getSnapshotRow(store, id);
      const parent = row?.parent ?? null;
      // An imported history may start mid-chain: its first parent was never sent.
      if (parent !== null && !known.has(parent) && !forgotten.has(parent) && row?.imported !== 1) {
        problems.push(`snapshot ${id} names missing parent ${parent}`);
      }
    }
  }
  return {
    snapshots,
    objects: { checked: listed.length, corrupt },
    branches: branches.length,
    problems,
  };
}
