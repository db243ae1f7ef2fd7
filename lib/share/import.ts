/**
 * Importing a published snapshot or a bundle into a store. Everything is
 * verified before anything is written (a first read-only pass); then a second
 * pass re-verifies while writing, inside one transaction. Imported snapshots
 * land on a quarantine branch `imported/<key_id>` of their session and never
 * move the current head. Importing the same file again changes nothing.
 * {@linkcode importAnyFile} also takes a lean-ctx snapshot file, kept as
 * itself (see `leanctx_store.ts`).
 *
 * @example
 * ```ts
 * import { quarantineBranch } from "./import.ts";
 * if (!(quarantineBranch("0123456789abcdef") === "imported/0123456789abcdef")) throw new Error("Example failed");
 * ```
 * @module
 */
import * as fs from "node:fs";
import { IntegrityError, UntrustedError } from "../errors.ts";
import { assertResolved } from "../repository/operations.ts";
import { beginChange, endChange } from "../history/oplog.ts";
import { INLINE_BLOB_MAX, type Store } from "../repository/store.ts";
import {
  ensureBranch,
  getBranch,
  hasSnapshot,
  insertSnapshot,
  isAncestor,
  moveHead,
} from "../history/timeline.ts";
import type { TrustPolicy } from "../history/verify.ts";
import type { DirTreeFacts } from "../format/tree_object.ts";
import type { BundleVisitor } from "../format/bundle.ts";
import { fdWriter } from "./publish.ts";
import { fdReader } from "../format/tar.ts";
import { type FileReport, openSource, sniffKind, verifyStream } from "./verify_file.ts";
import type { LeanCtxImportResult } from "./leanctx_store.ts";
import type { KeptFormat } from "./formats/format.ts";

interface PendingBlob {
  id: string;
  chunks: Uint8Array[];
  temp: string | null;
  fd: number | null;
}

function isFifo(source: string): boolean {
  try {
    return fs.statSync(source).isFIFO();
  } catch {
    return false; // openSource reports it
  }
}

/** The quarantine branch for snapshots signed by `keyId`. */
export function quarantineBranch(keyId: string): string {
  return `imported/${keyId}`;
}

/** What {@linkcode importFile} did. */
export interface ImportResult {
  /** The verification report. */
  report: FileReport;
  /** Snapshots newly added. */
  imported: string[];
  /** Snapshots that were already present. */
  present: string[];
  /** Whether everything was already present. */
  alreadyPresent: boolean;
  /** Session and quarantine branch. */
  session: string;
  /** Quarantine branch name. */
  branch: string;
  /** The quarantine branch's head after the import. */
  head: string | null;
  /**
   * Whether the head moved to the primary. It never moves back: an import
   * of a snapshot already in the head's history (an ancestor) leaves it.
   */
  headMoved: boolean;
  /** Blobs newly stored. */
  blobs: number;
  /** Operation id, or null when nothing changed. */
  operation: string | null;
}

/** Copies a stream (stdin, a FIFO) into a temp file in the store, so it can be read twice. */
function spool(store: Store, source: string): { path: string; fd: number } {
  const input = openSource(source);
  const temp = store.tempPath();
  // Kept open and read through this descriptor: a concurrent gc sweeping
  // tmp/ can unlink the name, never the data.
  const fd = fs.openSync(
    temp,
    fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_RDWR | fs.constants.O_NOFOLLOW,
    0o600,
  );
  try {
    const read = fdReader(input);
    const write = fdWriter(fd);
    const buffer = new Uint8Array(1024 * 1024);
    for (;;) {
      const n = read(buffer);
      if (n === 0) break;
      write(buffer.subarray(0, n));
    }
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(temp, { force: true });
    throw error;
  } finally {
    if (input !== 0) fs.closeSync(input);
  }
  return { path: temp, fd };
}

/** A reader from offset 0 of `fd` that does not move the descriptor's own position. */
function readerFromStart(fd: number): (buffer: Uint8Array) => number {
  let position = 0;
  return (buffer) => {
    const n = fs.readSync(fd, buffer, 0, buffer.length, position);
    position += n;
    return n;
  };
}

/** Identity of an open file, to notice it being rewritten between passes. */
interface FileIdentity {
  /** Device, inode, size and modification time. */
  key: string;
  /** Link count: renaming another file over the path unlinks this one, changing its ctime. */
  nlink: number;
  /** Status-change time. */
  ctimeMs: number;
}

function fileIdentity(fd: number): FileIdentity {
  const s = fs.fstatSync(fd);
  return { key: `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`, nlink: s.nlink, ctimeMs: s.ctimeMs };
}

/**
 * Whether the open file was written since `before`: another size or mtime,
 * or another ctime while its link count stayed (a path swapped away only
 * unlinks the file, which changes its ctime but not a byte of it).
 */
function rewritten(before: FileIdentity, now: FileIdentity): boolean {
  return now.key !== before.key || (now.nlink === before.nlink && now.ctimeMs !== before.ctimeMs);
}

/**
 * Imports `source` (a path, or `-`) into `store`. Tampered input throws
 * (exit 1) with nothing written; an untrusted signer throws
 * {@linkcode UntrustedError} (exit 3) unless `allowUntrusted`.
 */
export function importFile(
  store: Store,
  source: string,
  trust: TrustPolicy,
  options: ImportOptions = {},
): Promise<ImportResult> {
  return withSource(store, source, (fd) => importFrom(store, fd, trust, options));
}

/** Options of {@linkcode importFile} and {@linkcode importAnyFile}. */
export interface ImportOptions {
  /** Import an unsigned file or one by an unpinned signer (still verified). */
  allowUntrusted?: boolean;
  /** Progress callback while storing blobs. */
  onProgress?: (done: number, total: number) => void;
}

/** What {@linkcode importAnyFile} did, per format. */
export type AnyImportResult =
  | { format: "ctxsnap"; result: ImportResult }
  | { format: "lean-ctx"; result: LeanCtxImportResult };

/**
 * Imports a ctxsnap file (published snapshot or bundle) or a lean-ctx
 * snapshot file, recognised by content (docs/FORMAT.md §5). Same rules as
 * {@linkcode importFile}; a lean-ctx file is kept as itself (§12).
 */
export function importAnyFile(
  store: Store,
  source: string,
  trust: TrustPolicy,
  options: ImportOptions = {},
): Promise<AnyImportResult> {
  return withSource(store, source, async (fd) => {
    const kept = await keptFileAt(fd);
    if (kept !== null) return await kept.format.importFile(store, kept.bytes, trust, options);
    return { format: "ctxsnap", result: await importFrom(store, fd, trust, options) };
  });
}

/**
 * The whole file and its format when it is a JSON document of a format kept
 * as itself (lean-ctx, found through `formats/registry.ts`), else null.
 */
async function keptFileAt(
  fd: number,
): Promise<{ format: KeptFormat; bytes: Uint8Array } | null> {
  const read = readerFromStart(fd);
  const head = new Uint8Array(512);
  const n = read(head);
  if (sniffKind(head.subarray(0, n)) !== "snapshot") return null;
  const { keptFormats, sniffKept } = await import("./formats/registry.ts");
  const max = Math.max(...(await keptFormats()).map((f) => f.maxFileBytes));
  const bytes = new Uint8Array(max + 1);
  let got = 0;
  for (;;) {
    const m = fs.readSync(fd, bytes, got, bytes.length - got, got);
    if (m === 0) break;
    got += m;
    if (got === bytes.length) return null; // too large for every reader: pass 1 says so
  }
  const file = bytes.slice(0, got);
  const format = await sniffKept(file);
  return format === null || file.length > format.maxFileBytes ? null : { format, bytes: file };
}

/** Opens `source` (spooling stdin or a FIFO into the store), runs `fn`, then cleans up. */
async function withSource<T>(
  store: Store,
  source: string,
  fn: (fd: number) => Promise<T>,
): Promise<T> {
  const stream = source === "-" || isFifo(source);
  const spooled = stream ? spool(store, source) : null;
  // Both passes read the same open file, so swapping the path between them
  // changes nothing; rewriting the file in place is caught below.
  const fd = spooled?.fd ?? openSource(source);
  try {
    return await fn(fd);
  } finally {
    if (fd !== 0) fs.closeSync(fd);
    if (spooled !== null) fs.rmSync(spooled.path, { force: true });
  }
}

async function importFrom(
  store: Store,
  fd: number,
  trust: TrustPolicy,
  options: ImportOptions,
): Promise<ImportResult> {
  const before = fileIdentity(fd);
  // Pass 1: verify everything, write nothing.
  const report = await verifyStream(readerFromStart(fd), trust);
  if (!report.valid) {
    const bad = report.snapshots.filter((s) => !s.valid).map((s) => s.id.slice(0, 12));
    throw new IntegrityError(
      `Signature of snapshot ${bad.join(", ")} does not verify; nothing was imported`,
      { check: "signature", at: `snapshot ${bad[0]}` },
    );
  }
  if (!report.trusted && !options.allowUntrusted) {
    const keys = [...new Set(report.snapshots.filter((s) => !s.trusted).map((s) => s.keyId))];
    throw new UntrustedError(
      `The file is intact but signed by untrusted key ${keys.join(", ")}; nothing was imported`,
      {
        hint:
          "trust the signer (`ctxsnap key trust KEY --name N`, or --trust KEY), or pass --allow-untrusted",
      },
    );
  }
  const primary = report.primary;
  const session = primary.body.session;
  const branch = quarantineBranch(primary.signature.key_id);
  const ids = report.snapshots.map((s) => s.id);
  const present = ids.filter((id) => hasSnapshot(store, id));
  const treesPresent = !report.withWorkspace ||
    report.envelopes.every((e) =>
      e.body.workspace === null || store.hasObject(e.body.workspace.tree)
    );
  if (present.length === ids.length && treesPresent) {
    return {
      report,
      imported: [],
      present,
      alreadyPresent: true,
      session,
      branch,
      head: getBranch(store, session, branch)?.head ?? null,
      headMoved: false,
      blobs: 0,
      operation: null,
    };
  }

  // Pass 2: re-verify while writing, all in one transaction.
  return await store.transactionAsync("import", async () => {
    assertResolved(store, session);
    const imported: string[] = [];
    let blobs = 0;
    let seenBlobs = 0;
    const state: { pending: PendingBlob | null } = { pending: null };
    let position = 0;
    const visitor: BundleVisitor = {
      snapshot(envelope, valid) {
        // Exactly what pass 1 verified, in the same order, or nothing.
        const expected = report.envelopes[position++];
        if (
          !valid || envelope.id !== expected?.id ||
          envelope.signature.public_key !== expected.signature.public_key
        ) {
          throw new IntegrityError(`The file changed between verifying and importing it`);
        }
        if (insertSnapshot(store, envelope, true)) imported.push(envelope.id);
      },
      tree(id, _tree, bytes) {
        // The reader checked the bytes against the id and validated them.
        store.putTreeBytes(id, bytes);
      },
      blobStart(id, size) {
        if (store.hasObject(id)) return null;
        if (size <= INLINE_BLOB_MAX) {
          const chunks: Uint8Array[] = [];
          state.pending = { id, chunks, temp: null, fd: null };
          return (chunk) => chunks.push(chunk.slice());
        }
        const temp = store.tempPath();
        const fd = fs.openSync(
          temp,
          fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY |
            fs.constants.O_NOFOLLOW,
          0o600,
        );
        state.pending = { id, chunks: [], temp, fd };
        return fdWriter(fd);
      },
      blobEnd(id, size) {
        options.onProgress?.(++seenBlobs, report.blobCount);
        const p = state.pending;
        state.pending = null;
        if (p === null || p.id !== id) return; // already present
        blobs += 1;
        if (p.temp !== null && p.fd !== null) {
          fs.fsyncSync(p.fd);
          fs.closeSync(p.fd);
          store.adoptBlobFile(p.temp, id, size);
          return;
        }
        const data = new Uint8Array(size);
        let at = 0;
        for (const chunk of p.chunks) {
          data.set(chunk, at);
          at += chunk.length;
        }
        store.putBlob(data, id);
      },
    };
    try {
      if (rewritten(before, fileIdentity(fd))) {
        throw new IntegrityError(`The file changed between verifying and importing it`);
      }
      await verifyStream(readerFromStart(fd), trust, visitor);
      if (position !== ids.length || !hasSnapshot(store, primary.id)) {
        throw new IntegrityError(`The file changed between verifying and importing it`);
      }
      if (report.withWorkspace) {
        // Each root's whole hierarchy obeys the manifest rules (paths, totals)
        // before anything commits; a directory shared by several roots is
        // checked (read) once.
        const roots = new Set(report.envelopes.flatMap((e) => e.body.workspace?.tree ?? []));
        const memo = new Map<string, DirTreeFacts>();
        for (const root of roots) store.checkTree(root, { memo });
      }
    } catch (error) {
      const p = state.pending;
      if (p !== null && p.fd !== null) fs.closeSync(p.fd);
      if (p !== null && p.temp !== null) fs.rmSync(p.temp, { force: true });
      throw error;
    }
    // The quarantine head never moves back: not to the primary when the
    // primary is already in the head's history (an older import).
    const pending = beginChange(store, [session]);
    const head = ensureBranch(store, session, branch);
    const forward = head.head === null || !isAncestor(store, primary.id, head.head);
    if (forward && head.head !== primary.id) {
      moveHead(store, session, branch, head.head, primary.id);
    }
    const operation = endChange(store, pending, {
      kind: "import",
      session,
      branch,
      source: head.head,
      target: primary.id,
      plan: {
        kind: report.kind,
        snapshots: ids,
        workspace: report.withWorkspace,
        blobs,
        head_moved: forward,
      },
    }, { always: true });
    return {
      report,
      imported,
      present,
      alreadyPresent: false,
      session,
      branch,
      head: forward ? primary.id : head.head,
      headMoved: forward && head.head !== primary.id,
      blobs,
      operation,
    };
  });
}
