/**
 * What the commands print about lean-ctx snapshots (and about the
 * `roi`/`lineage`/`ledger` slices of ctxsnap bodies): human lines with every
 * string from a file escaped, and JSON in the shared style (snake_case keys,
 * ISO-8601 times, full ids; a `u64` above 2^53 − 1 as a decimal string so no
 * JSON reader loses digits).
 * @module
 */
import { type CtxsnapError, escapeText, IntegrityError, UntrustedError } from "../../errors.ts";
import type { SnapshotBody } from "../../format/body.ts";
import { tally } from "../../format/slices.ts";
import type { TrustPolicy } from "../../history/verify.ts";
import {
  formatF64,
  type LeanCtxCheck,
  type LeanCtxSnapshot,
  type LeanCtxVerdict,
  tamperedChecks,
} from "../../share/leanctx.ts";
import type { Output } from "../output.ts";

function shown(text: string | null): string {
  return text === null || text === "" ? "-" : escapeText(text);
}

/** A u64 for JSON: a number when it is a safe integer, else its decimal string. */
export function u64Json(value: bigint): number | string {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
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
    roi: {
      input_tokens: u64Json(s.roi.input_tokens),
      output_tokens: u64Json(s.roi.output_tokens),
      tokens_saved: u64Json(s.roi.tokens_saved),
      compression_rate: s.roi.compression_rate,
    },
    lineage: {
      items_recorded: u64Json(s.lineage.items_recorded),
      items: s.lineage.items.map((i) => ({
        ...i,
        seq: u64Json(i.seq),
        input_tokens: u64Json(i.input_tokens),
        output_tokens: u64Json(i.output_tokens),
      })),
    },
    ledger: {
      window_size: u64Json(s.ledger.window_size),
      total_tokens_sent: u64Json(s.ledger.total_tokens_sent),
      total_tokens_saved: u64Json(s.ledger.total_tokens_saved),
      items: s.ledger.items.map((i) => ({
        ...i,
        sent_tokens: u64Json(i.sent_tokens),
        original_tokens: u64Json(i.original_tokens),
      })),
    },
    session: s.session,
    signature: s.signature,
  };
}

function sum(values: readonly bigint[]): bigint {
  return values.reduce((a, b) => a + b, 0n);
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

function listSection(lines: string[], title: string, items: readonly string[]): void {
  if (items.length === 0) return;
  lines.push(`${title}:`);
  for (const item of items) lines.push(`  - ${escapeText(item)}`);
}

function ppm(value: number): string {
  return `${formatF64(value / 1_000_000).replace(/\.0$/, "")} (${value} ppm)`;
}

/** The human line of a ctxsnap body's git anchor (`show ID`, `show FILE`). */
export function gitLine(b: SnapshotBody): string {
  return b.git
    ? `git        ${escapeText(b.git.commit ?? "(no commit)")} ${
      escapeText(b.git.branch ?? "(detached)")
    }${b.git.dirty ? " dirty" : " clean"}`
    : "git        not a git work tree";
}

/** The human lines of a ctxsnap body's context and slices (`show ID`, `show FILE`). */
export function contextLines(b: SnapshotBody): string[] {
  const c = b.context;
  const lines = [`task       ${escapeText(c.task || "-")}`, `progress   ${c.progress_pct}%`];
  listSection(lines, "decisions", c.decisions);
  listSection(lines, "files touched", c.files_touched);
  listSection(lines, "findings", c.findings);
  listSection(lines, "knowledge", c.knowledge);
  lines.push(...sliceLines(b));
  return lines;
}

/** The human lines of a ctxsnap body's slices (none when it has none). */
export function sliceLines(b: SnapshotBody): string[] {
  const lines: string[] = [];
  if (b.roi) {
    lines.push(
      `roi        input ${b.roi.input_tokens}, output ${b.roi.output_tokens}, saved ${b.roi.tokens_saved} tokens; compression rate ${
        ppm(b.roi.compression_rate_ppm)
      }`,
    );
  }
  if (b.lineage) {
    const items = b.lineage.items;
    lines.push(
      `lineage    ${b.lineage.items_recorded} recorded, ${items.length} kept${
        items.length === 0
          ? ""
          : `: ${escapeText(tally(items.map((i) => i.kind)))}; ${
            items.reduce((a, i) => a + i.input_tokens, 0)
          } tokens in, ${items.reduce((a, i) => a + i.output_tokens, 0)} out`
      }`,
    );
  }
  if (b.ledger) {
    lines.push(
      `ledger     window ${b.ledger.window_size}, sent ${b.ledger.total_tokens_sent}, saved ${b.ledger.total_tokens_saved}; ${b.ledger.items.length} items${
        b.ledger.items.length === 0
          ? ""
          : `: ${escapeText(tally(b.ledger.items.map((i) => i.state)))}`
      }`,
    );
  }
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
    `format   lean-ctx CONTEXT_SNAPSHOT_V1 (written by ${escapeText(s.lean_ctx_version)})`,
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

/** Reports a lean-ctx verdict's error, if any, on `out`; returns the exit status. */
export function exitForVerdict(out: Output, check: LeanCtxCheck, verdict: LeanCtxVerdict): number {
  const error = leanVerdictError(check, verdict);
  return error === null ? 0 : out.error(error);
}
