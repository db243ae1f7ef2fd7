/**
 * lean-ctx snapshots in a store: importing a verified file as itself (its
 * exact bytes, id and signature, so it stays verifiable as a lean-ctx file),
 * reading and re-checking stored ones. (An id typed by a person is resolved
 * by `formats/registry.ts`.)
 *
 * An import lands on the quarantine branch `imported/<key id>` of its signer
 * (`imported/unsigned` for an unsigned file) in the current session, like
 * every import, and never moves a branch head: a lean-ctx snapshot is never
 * the parent of a ctxsnap snapshot. Importing the same id again changes
 * nothing.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { importLeanCtx, readLeanCtx } from "./leanctx_store.ts";
 * import { leanCtxFileText, newLeanCtxSnapshot, signLeanCtx } from "./leanctx.ts";
 * import { generateSeed, keyIdOf, publicKeyFromSeed } from "../crypto/ed25519.ts";
 * import { toHex } from "../encoding/hex.ts";
 * import { Keyring } from "../keys/keyring.ts";
 * const seed = generateSeed();
 * const publicKey = await publicKeyFromSeed(seed);
 * const signer = { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
 * const file = new TextEncoder().encode(
 *   leanCtxFileText(await signLeanCtx(newLeanCtxSnapshot("2026-01-01T00:00:00Z", "9.9.9"), signer)),
 * );
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const trust = new Keyring([]);
 * trust.add(publicKey);
 * const first = await importLeanCtx(store, file, trust);
 * const again = await importLeanCtx(store, file, trust);
 * if (first.alreadyPresent || !again.alreadyPresent) throw new Error("idempotence");
 * if (readLeanCtx(store, first.id).row.branch !== `imported/${signer.keyId}`) throw new Error("branch");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { IntegrityError, NotFoundError, quote, UntrustedError } from "../errors.ts";
import { parseRawDocument } from "./_leanctx_json.ts";
import { assertResolved, finishOperation, startOperation } from "../repository/operations.ts";
import {
  insertLeanCtxRow,
  type LeanCtxRow,
  leanCtxRow,
  leanCtxRows,
} from "../repository/leanctx_rows.ts";
import type { Store } from "../repository/store.ts";
import { currentSelection } from "../history/timeline.ts";
import type { TrustPolicy } from "../history/verify.ts";
import {
  checkLeanCtx,
  checkLeanCtxBytes,
  type LeanCtxCheck,
  leanCtxFromRaw,
  type LeanCtxSnapshot,
  type LeanCtxVerdict,
  leanCtxVerdict,
  MAX_LEANCTX_BYTES,
  MAX_LEANCTX_DEPTH,
  tamperedChecks,
} from "./leanctx.ts";
import { quarantineBranch } from "./import.ts";

/** The quarantine branch of unsigned lean-ctx snapshots. */
export const UNSIGNED_BRANCH = "imported/unsigned";

/** What {@linkcode importLeanCtx} did. */
export interface LeanCtxImportResult {
  /** The lean-ctx id. */
  id: string;
  /** The check of the file. */
  check: LeanCtxCheck;
  /** The verdict under the trust policy (never `tampered`: that throws). */
  verdict: LeanCtxVerdict;
  /** Whether the id was already stored (then nothing was written). */
  alreadyPresent: boolean;
  /** The session it landed in. */
  session: string;
  /** Its quarantine branch. */
  branch: string;
  /** The import operation, or null when nothing changed. */
  operation: string | null;
}

/**
 * Imports the lean-ctx file `bytes`. A tampered file throws (exit 1), an
 * unsigned one or one by an unpinned signer throws {@linkcode UntrustedError}
 * (exit 3) unless `allowUntrusted`; nothing is written then.
 */
export async function importLeanCtx(
  store: Store,
  bytes: Uint8Array,
  trust: TrustPolicy,
  options: { allowUntrusted?: boolean; session?: string } = {},
): Promise<LeanCtxImportResult> {
  const check = await checkLeanCtxBytes(bytes);
  const verdict = leanCtxVerdict(check, trust);
  const id = check.snapshot.snapshot_id;
  if (verdict === "tampered") {
    throw new IntegrityError(
      `lean-ctx snapshot ${quote(id)} is tampered (${
        tamperedChecks(check).join(" and ")
      } check failed); nothing was imported`,
    );
  }
  if (verdict !== "trusted" && !options.allowUntrusted) {
    throw new UntrustedError(
      verdict === "unsigned"
        ? `lean-ctx snapshot ${id.slice(0, 12)} is intact but unsigned; nothing was imported`
        : `lean-ctx snapshot ${
          id.slice(0, 12)
        } is intact but signed by untrusted key ${check.keyId}; nothing was imported`,
      {
        hint: verdict === "unsigned"
          ? "pass --allow-untrusted to import it unsigned"
          : "trust the signer (`ctxsnap key trust KEY --name N`, or --trust KEY), or pass --allow-untrusted",
      },
    );
  }
  const session = options.session ?? currentSelection(store).session;
  const branch = check.keyId === null ? UNSIGNED_BRANCH : quarantineBranch(check.keyId);
  const result: LeanCtxImportResult = {
    id,
    check,
    verdict,
    alreadyPresent: true,
    session,
    branch,
    operation: null,
  };
  const existing = leanCtxRow(store, id);
  if (existing !== null) return { ...result, session: existing.session, branch: existing.branch };
  return store.transaction("import", () => {
    assertResolved(store, session);
    if (
      !insertLeanCtxRow(store, {
        id,
        session,
        branch,
        key_id: check.keyId,
        created_at: check.snapshot.created_at,
        file: bytes,
      })
    ) return result;
    const op = startOperation(store, {
      kind: "import",
      session,
      branch,
      source: null,
      target: id,
      plan: { kind: "lean-ctx", snapshots: [id], workspace: false, blobs: 0 },
    });
    finishOperation(store, op.id, "done");
    return { ...result, alreadyPresent: false, operation: op.id };
  });
}

/** A stored lean-ctx snapshot, parsed. */
export interface StoredLeanCtx {
  /** The index row (with the file's bytes). */
  row: LeanCtxRow;
  /** The snapshot, strictly parsed from the stored bytes. */
  snapshot: LeanCtxSnapshot;
}

/**
 * Reads a stored lean-ctx snapshot by full id: parses its bytes strictly and
 * requires the file to name the same id (not checking the id hash or the
 * signature: see {@linkcode checkStoredLeanCtx}).
 */
export function readLeanCtx(store: Store, id: string): StoredLeanCtx {
  const row = leanCtxRow(store, id);
  if (row === null) throw new NotFoundError(`No lean-ctx snapshot ${quote(id)}`);
  const doc = parseRawDocument(row.file, {
    maxBytes: MAX_LEANCTX_BYTES,
    maxDepth: MAX_LEANCTX_DEPTH,
  });
  const snapshot = leanCtxFromRaw(doc.value);
  if (snapshot.snapshot_id !== id) {
    throw new IntegrityError(
      `Stored lean-ctx snapshot ${quote(id)} holds a file for ${quote(snapshot.snapshot_id)}`,
    );
  }
  return { row, snapshot };
}

/** Re-checks a stored lean-ctx snapshot from its bytes (structure, id, signature). */
export async function checkStoredLeanCtx(store: Store, id: string): Promise<LeanCtxCheck> {
  const row = leanCtxRow(store, id);
  if (row === null) throw new NotFoundError(`No lean-ctx snapshot ${quote(id)}`);
  const doc = parseRawDocument(row.file, {
    maxBytes: MAX_LEANCTX_BYTES,
    maxDepth: MAX_LEANCTX_DEPTH,
  });
  const check = await checkLeanCtx(leanCtxFromRaw(doc.value), doc.text);
  if (check.snapshot.snapshot_id !== id) {
    throw new IntegrityError(
      `Stored lean-ctx snapshot ${quote(id)} holds a file for ${quote(check.snapshot.snapshot_id)}`,
    );
  }
  return check;
}

/** One stored lean-ctx snapshot's verdict in `verify --all`. */
export interface StoredLeanCtxReport {
  /** The id. */
  id: string;
  /** The verdict (`tampered` also when the stored bytes cannot be read). */
  verdict: LeanCtxVerdict;
  /** Signer key id, or null. */
  keyId: string | null;
  /** Signer public key (hex) as the file names it, or null. */
  publicKey: string | null;
  /** Signer's trusted name, or null. */
  signer: string | null;
  /** What is wrong, empty when intact. */
  problems: string[];
}

/** Re-checks every stored lean-ctx snapshot, oldest first. */
export async function verifyStoredLeanCtx(
  store: Store,
  trust: TrustPolicy,
): Promise<StoredLeanCtxReport[]> {
  const reports: StoredLeanCtxReport[] = [];
  for (const row of leanCtxRows(store, {}).reverse()) {
    const report: StoredLeanCtxReport = {
      id: row.id,
      verdict: "tampered",
      keyId: row.key_id,
      publicKey: null,
      signer: null,
      problems: [],
    };
    try {
      const check = await checkStoredLeanCtx(store, row.id);
      report.verdict = leanCtxVerdict(check, trust);
      report.keyId = check.keyId;
      report.publicKey = check.snapshot.signature?.public_key ?? null;
      if (check.keyId !== row.key_id) {
        report.verdict = "tampered";
        report.problems.push(`the index names signer ${row.key_id}, the file ${check.keyId}`);
      }
      for (const failed of tamperedChecks(check)) report.problems.push(`${failed} check failed`);
    } catch (error) {
      report.problems.push(error instanceof Error ? error.message : String(error));
    }
    report.signer = report.keyId === null ? null : trust.nameOf(report.keyId);
    reports.push(report);
  }
  return reports;
}

/** A stored snapshot of either format, as `publish --format lean-ctx` takes it. */
export interface ResolvedId {
  /** Which table holds it. */
  format: "ctxsnap" | "lean-ctx";
  /** The full id. */
  id: string;
}
