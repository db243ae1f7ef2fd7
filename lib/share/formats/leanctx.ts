/**
 * lean-ctx's `CONTEXT_SNAPSHOT_V1` as a {@linkcode KeptFormat}: a format
 * ctxsnap keeps as itself (docs/FORMAT.md §12, docs/DESIGN.md "Snapshot
 * formats"). Everything the commands do with a lean-ctx file or a stored
 * lean-ctx snapshot goes through this object: the reader and checks
 * (`../leanctx.ts`), the store (`../leanctx_store.ts`), the session restore
 * (`../leanctx_restore.ts`), the export (`../leanctx_export.ts`), and what
 * the commands print about them (human lines with every string from a file
 * escaped, JSON in the shared style: snake_case keys, ISO-8601 times, full
 * ids, a `u64` above 2^53 − 1 as a decimal string so no JSON reader loses
 * digits).
 *
 * Loaded only through `registry.ts`, when a file or an id is lean-ctx's.
 *
 * @example
 * ```ts
 * import { leanCtxFormat, u64Json } from "./leanctx.ts";
 * if (!leanCtxFormat.sniff(new TextEncoder().encode('{"schema_version": 1}'))) throw new Error("sniff");
 * if (u64Json(2n ** 60n) !== "1152921504606846976") throw new Error("u64 as text");
 * ```
 * @module
 */
import {
  type CtxsnapError,
  escapeText,
  IntegrityError,
  quote,
  UntrustedError,
  UsageError,
} from "../../errors.ts";
import type { JsonValue } from "../../encoding/canonical_json.ts";
import { fromHex } from "../../encoding/hex.ts";
import { keyIdOf } from "../../crypto/ed25519.ts";
import { emptyContext, type SnapshotContext } from "../../format/body.ts";
import type { Signer } from "../../format/envelope.ts";
import { tally } from "../../format/slices.ts";
import { leanCtxIdsWithPrefix, leanCtxRows } from "../../repository/leanctx_rows.ts";
import type { Store } from "../../repository/store.ts";
import type { TrustPolicy } from "../../history/verify.ts";
import type { AnyFileReport } from "../verify_file.ts";
import type { AnyImportResult } from "../import.ts";
import {
  checkLeanCtxBytes,
  formatF64,
  type LeanCtxCheck,
  type LeanCtxSnapshot,
  type LeanCtxVerdict,
  leanCtxVerdict,
  looksLikeLeanCtx,
  MAX_LEANCTX_BYTES,
  tamperedChecks,
} from "../leanctx.ts";
import {
  checkStoredLeanCtx,
  importLeanCtx,
  readLeanCtx,
  verifyStoredLeanCtx,
} from "../leanctx_store.ts";
import { readLeanCtxSeedFile } from "../leanctx_key.ts";
import type { KeptFormat, Presented, StoredSnapshot } from "./format.ts";

const TITLE = "lean-ctx CONTEXT_SNAPSHOT_V1";

function shown(text: string | null): string {
  return text === null || text === "" ? "-" : escapeText(text);
}

function short(id: string | null): string {
  return id === null ? "-" : id.slice(0, 12);
}

/** A u64 for JSON: a number when it is a safe integer, else its decimal string. */
export function u64Json(value: bigint): number | string {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
}

function roiJson(s: LeanCtxSnapshot): Record<string, JsonValue> {
  return {
    input_tokens: u64Json(s.roi.input_tokens),
    output_tokens: u64Json(s.roi.output_tokens),
    tokens_saved: u64Json(s.roi.tokens_saved),
    compression_rate: s.roi.compression_rate,
  };
}

function lineageJson(s: LeanCtxSnapshot): Record<string, JsonValue> {
  return {
    items_recorded: u64Json(s.lineage.items_recorded),
    items: s.lineage.items.map((i) => ({
      ...i,
      seq: u64Json(i.seq),
      input_tokens: u64Json(i.input_tokens),
      output_tokens: u64Json(i.output_tokens),
    })),
  };
}

function ledgerJson(s: LeanCtxSnapshot): Record<string, JsonValue> {
  return {
    window_size: u64Json(s.ledger.window_size),
    total_tokens_sent: u64Json(s.ledger.total_tokens_sent),
    total_tokens_saved: u64Json(s.ledger.total_tokens_saved),
    items: s.ledger.items.map((i) => ({
      ...i,
      sent_tokens: u64Json(i.sent_tokens),
      original_tokens: u64Json(i.original_tokens),
    })),
  };
}

/** The whole snapshot as JSON in the shared style. */
export function leanCtxJson(s: LeanCtxSnapshot): Record<string, unknown> {
  return {
    schema_version: s.schema_version,
    snapshot_id: s.snapshot_id,
    parent_id: s.parent_id,
    created_at: s.created_at,
    lean_ctx_version: s.lean_ctx_version,
    git: s.git,
    project: s.project,
    roi: roiJson(s),
    lineage: lineageJson(s),
    ledger: ledgerJson(s),
    session: s.session,
    signature: s.signature,
  };
}

function sum(values: readonly bigint[]): bigint {
  return values.reduce((a, b) => a + b, 0n);
}

function listSection(lines: string[], title: string, items: readonly string[]): void {
  if (items.length === 0) return;
  lines.push(`${title}:`);
  for (const item of items) lines.push(`  - ${escapeText(item)}`);
}

/** The human lines of a lean-ctx snapshot's content (what `show` prints after the header). */
export function leanCtxContentLines(s: LeanCtxSnapshot): string[] {
  const lines = [
    `git        ${shown(s.git.commit)} ${
      s.git.branch === null ? "(no branch)" : escapeText(s.git.branch)
    } ${s.git.dirty ? "dirty" : "clean"}`,
    `project    root ${shown(s.project.root_hash)}  identity ${shown(s.project.identity_hash)}`,
  ];
  if (s.session === null) lines.push("session    none");
  else {
    lines.push(
      `session    ${shown(s.session.session_id)}`,
      `task       ${shown(s.session.task)}`,
      `progress   ${s.session.progress_pct === null ? "-" : `${s.session.progress_pct}%`}`,
    );
    listSection(lines, "decisions", s.session.decisions);
    listSection(lines, "files touched", s.session.files_touched);
  }
  lines.push(
    `roi        input ${s.roi.input_tokens}, output ${s.roi.output_tokens}, saved ${s.roi.tokens_saved} tokens; compression rate ${
      formatF64(s.roi.compression_rate)
    }`,
    `lineage    ${s.lineage.items_recorded} recorded, ${s.lineage.items.length} kept${
      s.lineage.items.length === 0
        ? ""
        : `: ${escapeText(tally(s.lineage.items.map((i) => i.kind)))}; ${
          sum(s.lineage.items.map((i) => i.input_tokens))
        } tokens in, ${sum(s.lineage.items.map((i) => i.output_tokens))} out`
    }`,
    `ledger     window ${s.ledger.window_size}, sent ${s.ledger.total_tokens_sent}, saved ${s.ledger.total_tokens_saved}; ${s.ledger.items.length} items${
      s.ledger.items.length === 0
        ? ""
        : `: ${escapeText(tally(s.ledger.items.map((i) => i.state)))}`
    }`,
  );
  return lines;
}

/** The signer of a checked file as JSON, or null when unsigned. */
export function signerJson(
  check: LeanCtxCheck,
  trust: TrustPolicy,
): { public_key: string; key_id: string; name: string | null; trusted: boolean } | null {
  const sig = check.snapshot.signature;
  if (sig === null || check.keyId === null) return null;
  return {
    public_key: sig.public_key,
    key_id: check.keyId,
    name: trust.nameOf(check.keyId),
    trusted: check.intact && trust.isTrusted(check.keyId, sig.public_key),
  };
}

/** The verification report (JSON) of a lean-ctx file or stored snapshot. */
export function checkJson(
  check: LeanCtxCheck,
  verdict: LeanCtxVerdict,
  trust: TrustPolicy,
): Record<string, unknown> {
  const s = check.snapshot;
  return {
    format: "lean-ctx",
    kind: "lean-ctx",
    verdict,
    valid: check.intact,
    trusted: verdict === "trusted",
    primary: s.snapshot_id,
    id: s.snapshot_id,
    computed_id: check.computedId,
    id_matches: check.idMatches,
    signed: check.signed,
    signature_valid: check.signatureValid,
    failed_checks: tamperedChecks(check),
    signer: signerJson(check, trust),
    layout: check.layout,
    created_at: s.created_at,
    lean_ctx_version: s.lean_ctx_version,
    parent_id: s.parent_id,
    git: s.git,
  };
}

const VERDICTS: Readonly<Record<LeanCtxVerdict, string>> = {
  trusted: "OK: intact, signed by a trusted key",
  untrusted: "UNTRUSTED: intact, but the signer is not trusted",
  unsigned: "UNSIGNED: intact, but not signed (never trusted)",
  tampered: "TAMPERED",
};

/** The human verification report. */
export function checkText(
  check: LeanCtxCheck,
  verdict: LeanCtxVerdict,
  trust: TrustPolicy,
): string {
  const s = check.snapshot;
  const signer = signerJson(check, trust);
  const failed = tamperedChecks(check);
  return [
    verdict === "tampered"
      ? `TAMPERED: the ${failed.join(" and ")} check failed`
      : VERDICTS[verdict],
    `format   ${TITLE} (written by ${escapeText(s.lean_ctx_version)})`,
    `snapshot ${s.snapshot_id}${
      check.idMatches ? "" : ` (the content hashes to ${check.computedId})`
    }`,
    signer === null
      ? "signer   none (unsigned)"
      : `signer   ${signer.public_key}\nkey id   ${signer.key_id}${
        signer.name ? ` (${escapeText(signer.name)})` : ""
      }`,
    `when     ${escapeText(s.created_at)}`,
    `git      ${shown(s.git.commit)}${s.git.dirty ? " dirty" : ""}`,
    `task     ${s.session === null ? "-" : shown(s.session.task)}`,
    ...(check.layout === "canonical"
      ? []
      : ["layout   not lean-ctx's canonical pretty form (same content, written differently)"]),
  ].join("\n");
}

/** The error a lean-ctx verdict ends with (tampered: exit 1; unsigned, untrusted: exit 3), or null. */
export function leanVerdictError(
  check: LeanCtxCheck,
  verdict: LeanCtxVerdict,
): CtxsnapError | null {
  const id = check.snapshot.snapshot_id.slice(0, 12);
  switch (verdict) {
    case "trusted":
      return null;
    case "tampered":
      return new IntegrityError(
        `lean-ctx snapshot ${id} is tampered: the ${
          tamperedChecks(check).join(" and ")
        } check failed`,
      );
    case "unsigned":
      return new UntrustedError(`lean-ctx snapshot ${id} is intact but unsigned`, {
        hint: "an unsigned snapshot cannot be trusted; ask its author for a signed one",
      });
    case "untrusted":
      return new UntrustedError(`Intact, but signed by untrusted key ${check.keyId}`, {
        hint: "pin the signer's key: --trust KEY, --trusted-keys FILE, or `ctxsnap key trust KEY`",
      });
  }
}

/** A lean-ctx file's failed check as a tamper verdict, or null when it is intact. */
export function leanTamper(check: LeanCtxCheck, verdict: LeanCtxVerdict): IntegrityError | null {
  if (verdict !== "tampered") return null;
  const failed = check.idMatches ? "signature" : "id";
  return new IntegrityError(
    failed === "signature"
      ? "The signature does not verify"
      : `The content hashes to ${check.computedId}, not its snapshot_id`,
    { check: failed, at: `snapshot ${check.snapshot.snapshot_id}` },
  );
}

/** A lean-ctx session slice as a ctxsnap session context (what diff and the Replay view compare). */
export function contextOfLeanCtx(s: LeanCtxSnapshot): SnapshotContext {
  const context = emptyContext();
  if (s.session === null) return context;
  return {
    ...context,
    task: s.session.task ?? "",
    progress_pct: Math.min(s.session.progress_pct ?? 0, 100),
    decisions: [...s.session.decisions],
    files_touched: [...s.session.files_touched],
  };
}

function leanOf(report: AnyFileReport): { check: LeanCtxCheck; verdict: LeanCtxVerdict } {
  if (report.format !== "lean-ctx") throw new TypeError("not a lean-ctx file report");
  return report;
}

function describeStored(
  store: Store,
  id: string,
  checked?: LeanCtxSnapshot,
): StoredSnapshot {
  const { row, snapshot } = readLeanCtx(store, id);
  const s = checked ?? snapshot;
  return {
    id,
    format: "lean-ctx",
    createdAt: s.created_at,
    session: row.session,
    branch: row.branch,
    parent: s.parent_id,
    reason: s.session?.task ?? null,
    source: null,
    workspace: null,
    git: s.git,
    revertedTo: null,
    keyId: row.key_id,
    imported: true,
    readable: true,
    context: contextOfLeanCtx(s),
    tree: null,
    tool: { name: "lean-ctx", version: s.lean_ctx_version },
    slices: {
      roi: roiJson(s),
      lineage: lineageJson(s),
      ledger: ledgerJson(s),
    } as Record<string, JsonValue>,
  };
}

/** lean-ctx's format, kept as itself. */
export const leanCtxFormat: KeptFormat = {
  name: "lean-ctx",
  kept: true,
  title: TITLE,
  maxFileBytes: MAX_LEANCTX_BYTES,
  readSigningKeyFile(file: string): { seed: Uint8Array; looseMode: boolean } {
    return readLeanCtxSeedFile(file);
  },
  async checkFile(bytes: Uint8Array, trust: TrustPolicy): Promise<AnyFileReport> {
    const check = await checkLeanCtxBytes(bytes);
    return {
      format: "lean-ctx",
      check,
      verdict: leanCtxVerdict(check, trust),
      signer: check.keyId === null ? null : trust.nameOf(check.keyId),
    };
  },
  async importFile(store, bytes, trust, options): Promise<AnyImportResult> {
    return { format: "lean-ctx", result: await importLeanCtx(store, bytes, trust, options) };
  },
  notABranchHead:
    "is a lean-ctx snapshot, kept as itself: it never heads or parents a ctxsnap branch",
  sniff(bytes: Uint8Array): boolean {
    return looksLikeLeanCtx(bytes);
  },
  idsWithPrefix(store: Store, prefix: string, limit: number): string[] {
    return leanCtxIdsWithPrefix(store, prefix, limit);
  },
  async describe(store: Store, id: string): Promise<StoredSnapshot> {
    // Whatever acts on a snapshot reads it verified: its id and signature re-checked.
    const check = await checkStoredLeanCtx(store, id);
    if (!check.intact) {
      throw new IntegrityError(`Stored lean-ctx snapshot ${quote(id)} does not verify`, {
        hint: "run `ctxsnap verify --all`",
      });
    }
    return describeStored(store, id, check.snapshot);
  },
  list(store: Store, filter): Promise<StoredSnapshot[]> {
    return Promise.resolve(
      leanCtxRows(store, filter).map((row) => {
        try {
          return describeStored(store, row.id);
        } catch {
          // Unreadable stored bytes: listed from the row (`verify --all` says why).
          return {
            id: row.id,
            format: "lean-ctx" as const,
            createdAt: row.created_at,
            session: row.session,
            branch: row.branch,
            parent: null,
            reason: null,
            source: null,
            workspace: null,
            git: null,
            revertedTo: null,
            keyId: row.key_id,
            imported: true,
            readable: false,
            context: emptyContext(),
            tree: null,
            tool: null,
            slices: null,
          };
        }
      }),
    );
  },
  presentFileCheck(report, trust) {
    const { check, verdict } = leanOf(report);
    const signer = check.keyId === null ? "unsigned" : `signed by ${check.keyId}`;
    return {
      tampered: leanTamper(check, verdict),
      presented: {
        document: checkJson(check, verdict, trust),
        text: () => checkText(check, verdict, trust),
        error: leanVerdictError(check, verdict),
      },
      line: `${short(check.snapshot.snapshot_id)}  lean-ctx snapshot, ${signer}`,
    };
  },
  presentFileContent(report, trust): Presented {
    const { check, verdict } = leanOf(report);
    return {
      document: { format: "lean-ctx", verdict, snapshot: leanCtxJson(check.snapshot) },
      text: () =>
        [checkText(check, verdict, trust), ...leanCtxContentLines(check.snapshot)].join("\n"),
      error: leanVerdictError(check, verdict),
    };
  },
  presentImport(any, trust): Presented {
    if (any.format !== "lean-ctx") throw new TypeError("not a lean-ctx import");
    const lean = any.result;
    return {
      document: {
        format: "lean-ctx",
        primary: lean.id,
        kind: "lean-ctx",
        already_present: lean.alreadyPresent,
        imported: lean.alreadyPresent ? [] : [lean.id],
        present: lean.alreadyPresent ? [lean.id] : [],
        session: lean.session,
        branch: lean.branch,
        verdict: lean.verdict,
        signer: signerJson(lean.check, trust),
        layout: lean.check.layout,
        with_workspace: false,
        blobs: 0,
        trusted: lean.verdict === "trusted",
        operation: lean.operation,
      },
      text: () => {
        if (lean.alreadyPresent) {
          return `Already present: lean-ctx ${short(lean.id)} (${lean.session}/${lean.branch})`;
        }
        return [
          `Imported lean-ctx snapshot ${short(lean.id)} onto ${lean.session}/${lean.branch}`,
          "  kept as itself: its own bytes, id and signature (no workspace content)",
          lean.verdict === "trusted"
            ? ""
            : `  ${
              lean.verdict === "unsigned" ? "UNSIGNED" : "signer NOT trusted"
            } (--allow-untrusted)`,
        ].filter((l) => l !== "").join("\n");
      },
      error: null,
    };
  },
  show(store: Store, id: string, trust: TrustPolicy): Promise<Presented> {
    const { row, snapshot } = readLeanCtx(store, id);
    const sig = snapshot.signature;
    const keyId = sig === null ? null : keyIdOf(fromHex(sig.public_key, 32));
    const signer = sig === null || keyId === null ? null : {
      key_id: keyId,
      public_key: sig.public_key,
      name: trust.nameOf(keyId),
      trusted: trust.isTrusted(keyId, sig.public_key),
    };
    return Promise.resolve({
      document: {
        id,
        format: "lean-ctx",
        imported: true,
        imported_at: new Date(row.imported_at).toISOString(),
        session: row.session,
        branch: row.branch,
        signer,
        snapshot: leanCtxJson(snapshot),
      },
      text: () =>
        [
          `snapshot   ${id}  (${TITLE}, written by ${escapeText(snapshot.lean_ctx_version)})`,
          `created    ${escapeText(snapshot.created_at)}`,
          `timeline   ${escapeText(row.session)}/${escapeText(row.branch)}  lean-ctx parent ${
            snapshot.parent_id === null ? "-" : escapeText(snapshot.parent_id.slice(0, 12))
          }`,
          `signer     ${
            signer === null
              ? "none (unsigned)"
              : `${signer.key_id}${signer.name ? ` (${escapeText(signer.name)})` : ""}${
                signer.trusted ? "" : "  untrusted"
              }`
          }`,
          ...leanCtxContentLines(snapshot),
        ].join("\n"),
      error: null,
    });
  },
  async verifyStored(store: Store, id: string, trust: TrustPolicy): Promise<Presented> {
    const check = await checkStoredLeanCtx(store, id);
    const verdict = leanCtxVerdict(check, trust);
    return {
      document: checkJson(check, verdict, trust),
      text: () => checkText(check, verdict, trust),
      error: leanVerdictError(check, verdict),
    };
  },
  verifyAll(store: Store, trust: TrustPolicy) {
    return verifyStoredLeanCtx(store, trust);
  },
  async restoreSession(store, signer, id, options): Promise<Presented> {
    const { restoreLeanCtx } = await import("../leanctx_restore.ts");
    const result = await restoreLeanCtx(store, signer, id, {
      git: options.git,
      dryRun: options.dryRun,
      ...(options.branch !== undefined ? { branch: options.branch } : {}),
    });
    const m = result.merge;
    return {
      document: {
        target: result.target,
        format: "lean-ctx",
        dry_run: result.dryRun,
        session_merged: result.sessionMerged,
        task: m.task,
        progress_pct: m.progressPct,
        decisions_added: m.decisionsAdded,
        files_added: m.filesAdded,
        git_commit: result.gitCommit,
        operation: result.operation,
        snapshot: result.snapshot,
      },
      text: () => {
        const lines = [
          result.dryRun
            ? `plan to restore lean-ctx ${short(result.target)} (dry run, nothing changed):`
            : `restored lean-ctx ${short(result.target)}; recorded as ${short(result.snapshot)}`,
        ];
        if (!result.sessionMerged) lines.push("  no session slice to merge");
        else {
          if (m.task !== null) lines.push(`  task       ${escapeText(m.task)}`);
          if (m.progressPct !== null) lines.push(`  progress   ${m.progressPct}%`);
          lines.push(
            `  ${m.decisionsAdded.length} decision(s) and ${m.filesAdded.length} file(s) added to the live session`,
          );
        }
        if (result.gitCommit !== null) {
          lines.push(
            `  ${result.dryRun ? "would check out" : "checked out"} ${result.gitCommit} (detached)`,
          );
        }
        return lines.join("\n");
      },
      error: null,
    };
  },
  async export(store, signer: Signer, source) {
    const { exportLeanCtx } = await import("../leanctx_export.ts");
    const made = await exportLeanCtx(store, signer, source);
    const sig = made.snapshot.signature;
    if (sig === null) throw new UsageError("The exported lean-ctx file is not signed");
    return {
      id: made.snapshot.snapshot_id,
      text: made.text,
      fileName: made.fileName,
      signer: { public_key: sig.public_key, key_id: keyIdOf(fromHex(sig.public_key, 32)) },
      signedNow: made.signedNow,
    };
  },
};
