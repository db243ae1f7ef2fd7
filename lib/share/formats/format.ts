/**
 * The snapshot format adapter: what ctxsnap needs from a snapshot format to
 * take its files and its stored snapshots everywhere a command takes a
 * snapshot. ctxsnap's own format (`ctxsnap.ts`) is the native one: its
 * snapshots live on the timeline, and creating, restoring, publishing and
 * verifying them is the core (`lib/history`, `lib/workspace`, `lib/share`).
 * A second format is *kept as itself* (`lean-ctx.ts`): its files are
 * verified by its own rules, stored as their exact bytes on a quarantine
 * branch, and never become the parent of a ctxsnap snapshot, so the core
 * never reads them.
 *
 * Every format answers {@linkcode SnapshotFormat}: sniff a file, describe a
 * stored snapshot in the terms every command shares (context, git anchor,
 * tree), and list its stored snapshots. A kept format also answers
 * {@linkcode KeptFormat}: verify and import its files, show, re-check,
 * restore the session of, export and forget its stored snapshots. Commands
 * hold no branch on a format's name: they find the format through
 * `registry.ts`, which loads a kept format's code only when a file or a
 * stored id belongs to it.
 *
 * @example
 * ```ts
 * import { formatNamed } from "./registry.ts";
 * const lean = await formatNamed("lean-ctx");
 * if (!lean.sniff(new TextEncoder().encode('{"schema_version": 1}'))) throw new Error("sniff");
 * const own = await formatNamed("ctxsnap");
 * if (own.sniff(new TextEncoder().encode("plain text"))) throw new Error("neither JSON nor tar");
 * ```
 * @module
 */
import type { CtxsnapError, IntegrityError } from "../../errors.ts";
import type { JsonValue } from "../../encoding/canonical_json.ts";
import type { SnapshotContext } from "../../format/body.ts";
import type { Signer } from "../../format/envelope.ts";
import type { SnapshotSummary } from "../../format/summary_shape.ts";
import type { Store } from "../../repository/store.ts";
import type { TrustPolicy } from "../../history/verify.ts";
import type { AnyFileReport } from "../verify_file.ts";
import type { AnyImportResult } from "../import.ts";

/** The formats ctxsnap reads and writes: the `format` field of every JSON result. */
export type FormatName = "ctxsnap" | "lean-ctx";

/** A result ready for a command to print: the `--json` document and the human text. */
export interface Presented {
  /** The JSON document (snake_case keys, full ids). */
  document: Record<string, unknown>;
  /** The human text, every string from a file escaped. */
  text: () => string;
  /** The error the command ends with (an untrusted verdict: exit 3), or null. */
  error: CtxsnapError | null;
}

/** A stored snapshot of any format, in the terms every command shares. */
export interface StoredSnapshot extends SnapshotSummary {
  /** The session context it records (a kept format's session slice, mapped). */
  context: SnapshotContext;
  /** The workspace tree, or null when it records none (a lean-ctx snapshot never does). */
  tree: string | null;
  /** The tool that wrote it. */
  tool: { name: string; version: string } | null;
  /** Its `roi`, `lineage` and `ledger` slices when it has any, else null. */
  slices: Record<string, JsonValue> | null;
}

/** Which stored snapshots {@linkcode SnapshotFormat.list} returns. */
export interface StoredFilter {
  /** Only this session. */
  session?: string;
  /** Only this branch (with `session`). */
  branch?: string;
}

/** What every snapshot format answers. */
export interface SnapshotFormat {
  /** Its name. */
  readonly name: FormatName;
  /** Whether this format's code keeps its files as themselves (not ctxsnap). */
  readonly kept: boolean;
  /**
   * Whether `bytes` (a whole JSON file, or the first bytes of any file) is
   * meant as this format. Kept formats are asked first: ctxsnap's own answers
   * for any JSON object or tar archive.
   */
  sniff(bytes: Uint8Array): boolean;
  /** Stored ids starting with `prefix` (lowercase hex), at most `limit`. */
  idsWithPrefix(store: Store, prefix: string, limit: number): string[];
  /** A stored snapshot (full id), read and checked as this format reads it. */
  describe(store: Store, id: string): Promise<StoredSnapshot>;
  /**
   * Stored snapshots, newest first (a kept format: newest import first), read
   * as stored: a listing describes and vouches for nothing (`readable` false
   * when the stored bytes no longer parse).
   */
  list(store: Store, filter: StoredFilter): Promise<StoredSnapshot[]>;
}

/** One stored snapshot's verdict in `verify --all`. */
export interface StoredVerdict {
  /** The id. */
  id: string;
  /** `trusted`, `untrusted`, `unsigned` or `tampered`. */
  verdict: "trusted" | "untrusted" | "unsigned" | "tampered";
  /** Signer key id, or null. */
  keyId: string | null;
  /** Signer public key (hex), or null. */
  publicKey: string | null;
  /** Signer's trusted name, or null. */
  signer: string | null;
  /** What is wrong, empty when intact. */
  problems: string[];
}

/** A file written by {@linkcode KeptFormat.export}. */
export interface ExportedFile {
  /** The id of the snapshot in the file. */
  id: string;
  /** The file's text. */
  text: string;
  /** The file name it is written under in a directory. */
  fileName: string;
  /** The signer's public key (hex) and key id. */
  signer: { public_key: string; key_id: string };
  /** Whether it was signed now with the user's key. */
  signedNow: boolean;
}

/** Options of {@linkcode KeptFormat.restoreSession}. */
export interface SessionRestoreOptions {
  /** Also check out the snapshot's git anchor (detached). */
  git: boolean;
  /** Only plan. */
  dryRun: boolean;
  /** The branch that records the restore (default the session's current). */
  branch?: string;
}

/** What a format kept as itself answers on top of {@linkcode SnapshotFormat}. */
export interface KeptFormat extends SnapshotFormat {
  /** Its name (never `ctxsnap`). */
  readonly name: Exclude<FormatName, "ctxsnap">;
  /** The human name of its file format, e.g. `lean-ctx CONTEXT_SNAPSHOT_V1`. */
  readonly title: string;
  /** The largest file of this format read (a whole JSON document). */
  readonly maxFileBytes: number;
  /** Checks a whole file of this format (`verify FILE`): the report, never throwing on tampering. */
  checkFile(bytes: Uint8Array, trust: TrustPolicy): Promise<AnyFileReport>;
  /** Imports a whole file of this format as itself (`import FILE`); refusals throw, writing nothing. */
  importFile(
    store: Store,
    bytes: Uint8Array,
    trust: TrustPolicy,
    options: { allowUntrusted?: boolean; session?: string },
  ): Promise<AnyImportResult>;
  /** A verified file of this format presented for `verify FILE`, with the tamper verdict. */
  presentFileCheck(
    report: AnyFileReport,
    trust: TrustPolicy,
  ): { tampered: IntegrityError | null; presented: Presented; line: string };
  /** A verified file's content for `show FILE` (after {@linkcode presentFileCheck}). */
  presentFileContent(report: AnyFileReport, trust: TrustPolicy): Presented;
  /** What `import FILE` did, presented. */
  presentImport(result: AnyImportResult, trust: TrustPolicy): Presented;
  /** `show ID` of a stored snapshot. */
  show(store: Store, id: string, trust: TrustPolicy): Promise<Presented>;
  /** `verify ID`: the stored bytes re-checked. */
  verifyStored(store: Store, id: string, trust: TrustPolicy): Promise<Presented>;
  /** `verify --all`: every stored snapshot re-checked, oldest first. */
  verifyAll(store: Store, trust: TrustPolicy): Promise<StoredVerdict[]>;
  /** `restore ID`: merges its session into the live one (and with `git`, checks out its anchor). */
  restoreSession(
    store: Store,
    signer: Signer,
    id: string,
    options: SessionRestoreOptions,
  ): Promise<Presented>;
  /** The file of a stored snapshot of either format, in this format. */
  export(store: Store, signer: Signer, source: { format: FormatName; id: string }): Promise<
    ExportedFile
  >;
  /**
   * Reads this format's signing key file (`key import --lean-ctx FILE`): the
   * Ed25519 seed, and whether group or others may read the file.
   */
  readSigningKeyFile(file: string): { seed: Uint8Array; looseMode: boolean };
  /** Why a snapshot of this format cannot head a ctxsnap branch (`fork`): the refusal's text. */
  readonly notABranchHead: string;
}
