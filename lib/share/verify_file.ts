/**
 * Offline verification of a published snapshot (`.ctxsnapshot.json`) or a
 * bundle (`.ctxbundle`): no store, no config, no writes, no network. It checks
 * the format version, canonical form, every id and hash, every signature, and
 * whether each signer is trusted. {@linkcode verifyAnyFile} also recognises a
 * lean-ctx snapshot file by its content and checks it (see `leanctx.ts`).
 *
 * @example
 * ```ts
 * import { sniffKind } from "./verify_file.ts";
 * if (!(sniffKind(new TextEncoder().encode('  {"id":')) === "snapshot")) throw new Error("Example failed");
 * ```
 * @module
 */
import * as fs from "node:fs";
import { IntegrityError, NotFoundError, openError, quote } from "../errors.ts";
import {
  checkEnvelope,
  type Envelope,
  MAX_ENVELOPE_BYTES,
  parseEnvelope,
} from "../format/envelope.ts";
import type { TrustPolicy } from "../history/verify.ts";
import { type BundleVisitor, readBundle } from "../format/bundle.ts";
import type { LeanCtxCheck, LeanCtxVerdict } from "./leanctx.ts";
import { fdReader } from "../format/tar.ts";

/** A readable source: a path, or `-` for standard input. */
export type FileSource = string;

/** One snapshot's verdict inside a file. */
export interface FileSnapshotReport {
  /** Snapshot id. */
  id: string;
  /** Signer key id. */
  keyId: string;
  /** Signer's trusted name, or null. */
  signer: string | null;
  /** Signature valid (and id matching). */
  valid: boolean;
  /** Valid and the signer trusted. */
  trusted: boolean;
}

/** What {@linkcode verifyFile} found. */
export interface FileReport {
  /** `snapshot` (one envelope) or `bundle`. */
  kind: "snapshot" | "bundle";
  /** The primary envelope. */
  primary: Envelope;
  /** Every envelope, oldest first. */
  envelopes: Envelope[];
  /** Every snapshot in the file, oldest first. */
  snapshots: FileSnapshotReport[];
  /** Whether workspace content is included (bundles only). */
  withWorkspace: boolean;
  /** Bytes of blob content checked. */
  blobBytes: number;
  /** Number of blobs checked. */
  blobCount: number;
  /** Every signature valid. */
  valid: boolean;
  /** Valid and every signer trusted. */
  trusted: boolean;
}

/** Guesses the file kind from its first bytes. */
export function sniffKind(head: Uint8Array): "snapshot" | "bundle" | null {
  let i = 0;
  while (
    i < head.length &&
    (head[i] === 0x20 || head[i] === 0x0a || head[i] === 0x0d || head[i] === 0x09)
  ) i++;
  if (head[i] === 0x7b) return "snapshot";
  if (head.length >= 262 && new TextDecoder().decode(head.subarray(257, 262)) === "ustar") {
    return "bundle";
  }
  return null;
}

/** A reader that first replays `prefix`, then continues from `read`. */
function withPrefix(
  prefix: Uint8Array,
  read: (buffer: Uint8Array) => number,
): (buffer: Uint8Array) => number {
  let offset = 0;
  return (buffer) => {
    if (offset < prefix.length) {
      const n = Math.min(buffer.length, prefix.length - offset);
      buffer.set(prefix.subarray(offset, offset + n));
      offset += n;
      return n;
    }
    return read(buffer);
  };
}

/** Opens a source for reading; the caller closes the fd (0 is stdin and is not closed). */
export function openSource(source: FileSource): number {
  if (source === "-") return 0;
  let fd: number;
  try {
    fd = fs.openSync(source, "r");
  } catch (error) {
    throw openError(source, error);
  }
  const stat = fs.fstatSync(fd);
  if (!stat.isFile() && !stat.isFIFO()) {
    fs.closeSync(fd);
    throw new NotFoundError(`${quote(source)} is not a file`, {
      hint: "name a .ctxsnapshot.json or .ctxbundle file, or - for standard input",
    });
  }
  return fd;
}

function readUpTo(read: (buffer: Uint8Array) => number, max: number): Uint8Array {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const buffer = new Uint8Array(64 * 1024);
  for (;;) {
    const n = read(buffer);
    if (n === 0) break;
    total += n;
    if (total > max) throw new IntegrityError(`The snapshot file is larger than ${max} bytes`);
    chunks.push(buffer.slice(0, n));
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/**
 * Verifies a file read through `read`. Structural problems and tampering
 * throw ({@linkcode IntegrityError}, exit 1); signature and trust verdicts
 * are returned.
 */
export async function verifyStream(
  read: (buffer: Uint8Array) => number,
  trust: TrustPolicy,
  visitor: BundleVisitor = {},
): Promise<FileReport> {
  const head = new Uint8Array(512);
  let got = 0;
  while (got < head.length) {
    const n = read(head.subarray(got));
    if (n === 0) break;
    got += n;
  }
  const prefix = head.subarray(0, got);
  const kind = sniffKind(prefix);
  if (kind === null) {
    throw new IntegrityError("The file is neither a published snapshot nor a ctxsnap bundle", {
      hint: "expected a .ctxsnapshot.json or .ctxbundle file",
      check: "format",
    });
  }
  const reader = withPrefix(prefix, read);
  const verdict = (envelope: Envelope, valid: boolean): FileSnapshotReport => {
    const keyId = envelope.signature.key_id;
    return {
      id: envelope.id,
      keyId,
      signer: trust.nameOf(keyId),
      valid,
      trusted: valid && trust.isTrusted(keyId, envelope.signature.public_key),
    };
  };
  if (kind === "snapshot") {
    let envelope: Envelope;
    try {
      envelope = parseEnvelope(readUpTo(reader, MAX_ENVELOPE_BYTES));
    } catch (error) {
      if (error instanceof IntegrityError) error.check ??= "envelope";
      throw error;
    }
    const check = await checkEnvelope(envelope);
    if (!check.idMatches) {
      throw new IntegrityError(
        `Snapshot ${
          quote(envelope.id)
        } does not match its body (the body hashes to ${check.computedId})`,
        { check: "id", at: envelope.id },
      );
    }
    const report = verdict(envelope, check.signatureValid);
    await visitor.snapshot?.(envelope, check.signatureValid);
    return {
      kind,
      primary: envelope,
      envelopes: [envelope],
      snapshots: [report],
      withWorkspace: false,
      blobBytes: 0,
      blobCount: 0,
      valid: report.valid,
      trusted: report.trusted,
    };
  }
  const summary = await readBundle(reader, visitor);
  const bad = new Set(summary.badSignatures);
  const snapshots = summary.envelopes.map((e) => verdict(e, !bad.has(e.id)));
  const valid = snapshots.every((s) => s.valid);
  return {
    kind,
    primary: summary.envelopes[summary.envelopes.length - 1]!,
    envelopes: summary.envelopes,
    snapshots,
    withWorkspace: summary.manifest.workspace,
    blobBytes: summary.blobBytes,
    blobCount: summary.manifest.blobs,
    valid,
    trusted: valid && snapshots.every((s) => s.trusted),
  };
}

/** What {@linkcode verifyAnyFile} found: a ctxsnap file's report, or a lean-ctx file's check. */
export type AnyFileReport =
  | { format: "ctxsnap"; report: FileReport }
  | {
    format: "lean-ctx";
    /** The check: structure passed; id, signature and layout are verdicts. */
    check: LeanCtxCheck;
    /** Tampered, unsigned, or whether the signer is pinned. */
    verdict: LeanCtxVerdict;
    /** The signer's trusted name, or null. */
    signer: string | null;
  };

/**
 * Verifies a ctxsnap file (published snapshot or bundle) or a lean-ctx
 * snapshot file, recognised by content (docs/FORMAT.md §5): a JSON object
 * with a top-level `schema_version` is lean-ctx. Writes nothing.
 */
export async function verifyAnyFile(
  source: FileSource,
  trust: TrustPolicy,
  visitor: BundleVisitor = {},
): Promise<AnyFileReport> {
  const fd = openSource(source);
  try {
    const read = fdReader(fd);
    const head = new Uint8Array(512);
    let got = 0;
    while (got < head.length) {
      const n = read(head.subarray(got));
      if (n === 0) break;
      got += n;
    }
    const prefix = head.subarray(0, got);
    if (sniffKind(prefix) !== "snapshot") {
      return {
        format: "ctxsnap",
        report: await verifyStream(withPrefix(prefix, read), trust, visitor),
      };
    }
    const bytes = readUpTo(withPrefix(prefix, read), MAX_ENVELOPE_BYTES);
    // A JSON document: a published ctxsnap envelope, or a file of a format kept as itself.
    const { sniffKept } = await import("./formats/registry.ts");
    const kept = await sniffKept(bytes);
    if (kept === null) {
      let offset = 0;
      const replay = (buffer: Uint8Array): number => {
        const n = Math.min(buffer.length, bytes.length - offset);
        buffer.set(bytes.subarray(offset, offset + n));
        offset += n;
        return n;
      };
      return { format: "ctxsnap", report: await verifyStream(replay, trust, visitor) };
    }
    return await kept.checkFile(bytes, trust);
  } finally {
    if (fd !== 0) fs.closeSync(fd);
  }
}

/** Verifies a file (or `-` for stdin). Writes nothing. */
export async function verifyFile(source: FileSource, trust: TrustPolicy): Promise<FileReport> {
  const fd = openSource(source);
  try {
    return await verifyStream(fdReader(fd), trust);
  } finally {
    if (fd !== 0) fs.closeSync(fd);
  }
}
