/**
 * `ctxsnap verify`: integrity and origin of snapshots in the store, and of
 * published files (one, or many in one run).
 * @module
 */
import {
  CtxsnapError,
  EXIT_CODES,
  exitCodeOf,
  IntegrityError,
  NotFoundError,
  quote,
  UntrustedError,
  UsageError,
} from "../../errors.ts";
import * as fs from "node:fs";
import { environmentReadable } from "../../runtime.ts";
import type { Keyring } from "../../keys/keyring.ts";
import type { AnyFileReport, FileReport } from "../../share/verify_file.ts";
import { type SnapshotReport, verifyAll, verifySnapshot } from "../../history/verify.ts";
import { currentSelection, getBranch } from "../../history/timeline.ts";
import { hasRevisionSyntax } from "../../history/names.ts";
import {
  type Command,
  type CommandContext,
  flag,
  list,
  openStore,
  type Parsed,
  short,
  str,
  target as resolveTarget,
  trustPolicy,
  userPath,
} from "../command.ts";
import { reportJson } from "../json.ts";
import { esc } from "../output.ts";
import { tamperDocument, tamperError, tamperHeadline, tamperText } from "./_tamper.ts";

function describe(report: SnapshotReport): string {
  const who = report.signer ? ` (${esc(report.signer)})` : "";
  if (!report.valid) {
    return `TAMPERED: snapshot ${esc(report.id)}: ${esc(report.problems.join("; "))}`;
  }
  const what = report.hasWorkspace
    ? `${report.checked.files} files, ${report.checked.bytes} bytes`
    : "no workspace";
  return `${report.trusted ? "ok   " : "UNTRUSTED"}  ${esc(short(report.id))}  signed by ${
    esc(report.keyId)
  }${who}  ${what}`;
}

/**
 * Whether the argument names a file: `-`, or anything but an id prefix (all
 * hex) or a revision (`HEAD`, `@`, `REV~N`, `REV@{TIME}`) that names no
 * existing file.
 */
export function looksLikeFile(arg: string): boolean {
  if (arg === "-") return true;
  if (!/[^0-9a-fA-F]/.test(arg)) return false;
  if (!hasRevisionSyntax(arg)) return true;
  return fs.existsSync(userPath(arg));
}

/**
 * The trust policy for a file: like `trustPolicy`, but works without a config
 * dir (offline). When the config directory exists but cannot be read (Deno
 * without `--allow-env` cannot even locate it), `warn` says that its pinned
 * keys are not used: never a silent drop.
 */
export async function fileTrust(
  trust: string[],
  keysFile: string | undefined,
  warn: (message: string) => void = () => {},
): Promise<Keyring> {
  const options = keysFile === undefined ? {} : { keysFile };
  if (keysFile !== undefined && !fs.existsSync(userPath(keysFile))) {
    throw new NotFoundError(`No trusted-keys file at ${JSON.stringify(keysFile)}`);
  }
  try {
    return await trustPolicy(trust, options);
  } catch (error) {
    // No config dir (or no permission to read it): verify with what was given.
    if (error instanceof CtxsnapError && error.code !== "not_found" && error.code !== "usage") {
      throw error;
    }
    const fallback = await trustPolicy(trust, { ...options, config: false });
    if (!environmentReadable()) {
      warn(
        "cannot read the environment (Deno without --allow-env), so the config directory is unknown: " +
          "keys pinned there are not used, only --trust and --trusted-keys",
      );
    } else if (!(error instanceof CtxsnapError)) {
      warn(
        `cannot read the config directory (${
          error instanceof Error ? error.message : error
        }): keys pinned there are not used, only --trust and --trusted-keys`,
      );
    }
    return fallback;
  }
}

/** The JSON document `verify FILE --json` prints for one ctxsnap file. */
export function fileDocument(source: string, report: FileReport): Record<string, unknown> {
  const b = report.primary.body;
  const who = report.snapshots.find((s) => s.id === report.primary.id)!;
  return {
    file: source,
    format: "ctxsnap",
    kind: report.kind,
    valid: report.valid,
    trusted: report.trusted,
    primary: report.primary.id,
    signer: { key_id: who.keyId, name: who.signer, trusted: who.trusted },
    created_at: b.created_at,
    reason: b.reason,
    git: b.git,
    workspace: b.workspace,
    with_workspace: report.withWorkspace,
    blob_bytes: report.blobBytes,
    snapshots: report.snapshots.map((s) => ({
      id: s.id,
      key_id: s.keyId,
      signer: s.signer,
      valid: s.valid,
      trusted: s.trusted,
    })),
  };
}

/** A bad signature as a tamper verdict: the first snapshot whose signature does not verify. */
export function signatureTamper(report: FileReport): IntegrityError | null {
  const bad = report.snapshots.find((s) => !s.valid);
  if (bad === undefined) return null;
  return new IntegrityError(`The signature of snapshot ${bad.id} does not verify`, {
    check: "signature",
    at: `snapshot ${bad.id}`,
  });
}

/** A lean-ctx file's failed check as a tamper verdict. */
export function leanTamper(
  any: Extract<AnyFileReport, { format: "lean-ctx" }>,
): IntegrityError | null {
  if (any.verdict !== "tampered") return null;
  const failed = any.check.idMatches ? "signature" : "id";
  return new IntegrityError(
    failed === "signature"
      ? "The signature does not verify"
      : `The content hashes to ${any.check.computedId}, not its snapshot_id`,
    { check: failed, at: `snapshot ${any.check.snapshot.snapshot_id}` },
  );
}

/** The error a ctxsnap file's trust verdict ends with (untrusted: exit 3), or null. */
export function verdictError(report: FileReport, trust: Keyring): CtxsnapError | null {
  if (!report.trusted) {
    const keys = [...new Set(report.snapshots.filter((s) => !s.trusted).map((s) => s.keyId))];
    const pinned = trust.runKeyIds();
    if (pinned.length > 0) {
      return new UntrustedError(
        `Intact, but signed by key ${keys.join(", ")}, and the key you pinned (--trust ${
          pinned.join(", ")
        }) is not the signer`,
        {
          hint:
            "check with the sender which key signed it (`ctxsnap key show` on their machine); pin that key",
        },
      );
    }
    return new UntrustedError(`Intact, but signed by untrusted key ${keys.join(", ")}`, {
      hint: "pin the signer's key: --trust KEY, --trusted-keys FILE, or `ctxsnap key trust KEY`",
    });
  }
  return null;
}

/** Prints a tamper verdict for `source` (document and headline) and returns exit 1. */
export function reportTampered(
  ctx: CommandContext,
  source: string,
  error: IntegrityError,
  extra: { document?: Record<string, unknown> } = {},
): number {
  // Nothing else the file says is shown: it cannot be believed.
  ctx.out.result(
    { format: "ctxsnap", ...tamperDocument(source, error), ...extra.document },
    () => tamperText(source, error),
  );
  return ctx.out.error(tamperError(source, error));
}

/** Verifies one file; a tampered one (any failed check) is an {@linkcode IntegrityError} verdict. */
async function verifyOne(
  source: string,
  trust: Keyring,
): Promise<{ any: AnyFileReport | null; tampered: IntegrityError | null }> {
  const { verifyAnyFile } = await import("../../share/verify_file.ts");
  let any: AnyFileReport;
  try {
    any = await verifyAnyFile(userPath(source), trust);
  } catch (error) {
    if (error instanceof IntegrityError) return { any: null, tampered: error };
    throw error;
  }
  const tampered = any.format === "lean-ctx" ? leanTamper(any) : signatureTamper(any.report);
  return { any, tampered };
}

async function verifyFileCommand(
  ctx: CommandContext,
  parsed: Parsed,
  source: string,
): Promise<number> {
  const trust = await fileTrust(
    list(parsed, "trust"),
    str(parsed, "trusted-keys"),
    (m) => ctx.out.warn(m),
  );
  const { any, tampered } = await verifyOne(source, trust);
  if (any !== null && any.format === "lean-ctx") {
    const lean = await import("./_leanctx.ts");
    if (tampered !== null) {
      return reportTampered(ctx, source, tampered, {
        document: { file: source, ...lean.checkJson(any.check, any.verdict, trust) },
      });
    }
    ctx.out.result(
      { file: source, ...lean.checkJson(any.check, any.verdict, trust) },
      () => lean.checkText(any.check, any.verdict, trust),
    );
    const error = lean.leanVerdictError(any.check, any.verdict);
    return error === null ? 0 : ctx.out.error(error);
  }
  if (tampered !== null) {
    // Nothing the file says is shown: it cannot be believed.
    return reportTampered(ctx, source, tampered, {
      document: any === null ? { kind: null } : { kind: any.report.kind },
    });
  }
  const report = any!.report;
  const b = report.primary.body;
  const who = report.snapshots.find((s) => s.id === report.primary.id)!;
  ctx.out.result(fileDocument(source, report), () => {
    const verdict = report.trusted
      ? "OK: intact, signed by a trusted key"
      : "UNTRUSTED: intact, but the signer is not trusted";
    return [
      verdict,
      `what     ${
        report.kind === "bundle"
          ? `bundle of ${report.snapshots.length} snapshot(s)${
            report.withWorkspace ? " with workspace content" : ""
          }`
          : "published snapshot (envelope only)"
      }`,
      `snapshot ${esc(report.primary.id)}`,
      `who      ${esc(who.keyId)}${who.signer ? ` (${esc(who.signer)})` : ""}`,
      `when     ${esc(b.created_at)}`,
      `reason   ${esc(b.reason || "-")}`,
      `timeline ${esc(b.session)}/${esc(b.branch)}`,
      `git      ${
        b.git
          ? `${esc(b.git.commit ?? "(no commit)")} ${esc(b.git.branch ?? "(detached)")}${
            b.git.dirty ? " dirty" : ""
          }`
          : "-"
      }`,
      `files    ${
        b.workspace
          ? `${b.workspace.files} files, ${b.workspace.bytes} bytes${
            report.withWorkspace ? " (all checked)" : " (content not included)"
          }; ${b.workspace.skipped} left out (\`ctxsnap show FILE --skipped\`)`
          : "no workspace"
      }`,
      `read it  ctxsnap show ${shownName(source)}`,
    ].join("\n");
  });
  const error = verdictError(report, trust);
  return error === null ? 0 : ctx.out.error(error);
}

/**
 * Exit statuses of `verify A B C…` from worst to best: a failure (1), the
 * verifier's own configuration (7), not found (4), untrusted (3), success (0).
 * A status not listed ranks with failure.
 */
export const VERIFY_SEVERITY: readonly number[] = [1, 7, 4, 3, 0];

/** The worse of two `verify` exit statuses by {@linkcode VERIFY_SEVERITY}; ties keep `a`. */
export function worseStatus(a: number, b: number): number {
  const rank = (code: number) => {
    const at = VERIFY_SEVERITY.indexOf(code);
    return at < 0 ? 0 : at;
  };
  return rank(b) < rank(a) ? b : a;
}

/** One file's outcome in a batch. */
interface BatchResult {
  file: string;
  exit: number;
  /** What the file held, once it could be read: ctxsnap or lean-ctx. */
  report: AnyFileReport | null;
  /** The JSON document `verify FILE --json` prints for it, or null. */
  document: Record<string, unknown> | null;
  error: CtxsnapError | Error | null;
  /** The failed check, when the file is tampered. */
  tampered: IntegrityError | null;
}

const BATCH_LABELS: Record<number, string> = {
  0: "OK",
  1: "FAIL",
  3: "UNTRUSTED",
  4: "NOT FOUND",
};

/** A file name for a human line: as given if plain, else quoted (no control characters). */
export function shownName(file: string): string {
  return /^[\x21-\x7e]+$/.test(file) ? file : esc(quote(file));
}

function batchLine(result: BatchResult): string {
  const name = shownName(result.file);
  if (result.tampered !== null) {
    return `${"TAMPERED".padEnd(9)}  ${name}  ${
      tamperHeadline(result.file, result.tampered).replace(/^TAMPERED: /, "")
    }`;
  }
  const label = (BATCH_LABELS[result.exit] ?? "ERROR").padEnd(9);
  const any = result.report;
  if (any !== null && any.format === "lean-ctx") {
    const c = any.check;
    const signer = c.keyId === null ? "unsigned" : `signed by ${c.keyId}`;
    return `${label}  ${name}  ${short(c.snapshot.snapshot_id)}  lean-ctx snapshot, ${signer}`;
  }
  const r = any === null ? null : any.report;
  if (r !== null) {
    const who = r.snapshots.find((s) => s.id === r.primary.id)!;
    const signer = `signed by ${who.keyId}${who.signer ? ` (${esc(who.signer)})` : ""}`;
    const what = r.kind === "bundle"
      ? `bundle of ${r.snapshots.length}${r.withWorkspace ? " with workspace" : ""}`
      : "snapshot";
    const untrusted = [...new Set(r.snapshots.filter((s) => !s.trusted).map((s) => s.keyId))];
    const tail = !r.valid
      ? ": a signature does not verify"
      : untrusted.length > 0
      ? `; untrusted: ${untrusted.join(", ")}`
      : "";
    return `${label}  ${name}  ${short(r.primary.id)}  ${what}, ${signer}${tail}`;
  }
  return `${label}  ${name}  ${esc(result.error?.message ?? "")}`;
}

/**
 * `verify A B C…`: every file in one process (one start-up), one line (or
 * one JSON result) per file, and the worst status by {@linkcode worseStatus}.
 */
async function verifyFilesCommand(
  ctx: CommandContext,
  parsed: Parsed,
  sources: string[],
): Promise<number> {
  const lean = await import("./_leanctx.ts");
  const trust = await fileTrust(
    list(parsed, "trust"),
    str(parsed, "trusted-keys"),
    (m) => ctx.out.warn(m),
  );
  const results: BatchResult[] = [];
  let worst = 0;
  for (const [index, file] of sources.entries()) {
    ctx.out.progress("verifying files", index, sources.length);
    let result: BatchResult;
    try {
      const { any: report, tampered } = await verifyOne(file, trust);
      if (tampered !== null) {
        const base = report === null
          ? { format: "ctxsnap", kind: null }
          : report.format === "lean-ctx"
          ? { file, ...lean.checkJson(report.check, report.verdict, trust) }
          : { format: "ctxsnap", kind: report.report.kind };
        result = {
          file,
          exit: 1,
          report: null,
          document: { ...tamperDocument(file, tampered), ...base },
          error: tamperError(file, tampered),
          tampered,
        };
        results.push(result);
        worst = worseStatus(worst, result.exit);
        continue;
      }
      const error = report!.format === "lean-ctx"
        ? lean.leanVerdictError(report!.check, report!.verdict)
        : verdictError(report!.report, trust);
      const document = report!.format === "lean-ctx"
        ? { file, ...lean.checkJson(report!.check, report!.verdict, trust) }
        : fileDocument(file, report!.report);
      result = {
        file,
        exit: error === null ? 0 : exitCodeOf(error),
        report,
        document,
        error,
        tampered: null,
      };
    } catch (error) {
      // Anything but a ctxsnap error (a bug) still stops the batch.
      if (!(error instanceof CtxsnapError)) throw error;
      result = {
        file,
        exit: exitCodeOf(error),
        report: null,
        document: null,
        error,
        tampered: null,
      };
    }
    results.push(result);
    worst = worseStatus(worst, result.exit);
  }
  const count = (exit: number) => results.filter((r) => r.exit === exit).length;
  const tally = [
    `${count(0)} ok`,
    `${count(3)} untrusted`,
    `${count(4)} not found`,
    `${results.length - count(0) - count(3) - count(4)} failed`,
  ].join(", ");
  ctx.out.result({
    ok: worst === 0,
    exit: worst,
    files: results.length,
    results: results.map((r) => ({
      file: r.file,
      exit: r.exit,
      result: r.document,
      error: r.error === null ? null : {
        code: r.error instanceof CtxsnapError ? r.error.code : "failure",
        message: r.error.message,
        hint: r.error instanceof CtxsnapError ? (r.error.hint ?? null) : null,
      },
    })),
  }, () => [...results.map(batchLine), `${results.length} files: ${tally}`].join("\n"));
  if (worst !== 0) {
    const bad = results.filter((r) => r.exit !== 0).length;
    ctx.out.error(
      new CtxsnapError(`${bad} of ${results.length} files did not verify (${tally})`, "failure", {
        hint: "the exit status is the worst of all files: 1, then 7, 4, 3",
      }),
    );
  }
  return worst;
}

/** The `verify` command. */
export const verify: Command = {
  name: "verify",
  summary: "check snapshots: id, signature, signer trust, tree and every blob",
  usage:
    "verify [ID|--all] [--trust KEY]...\nverify FILE|-... [--trust KEY]... [--trusted-keys FILE]",
  examples: [
    "ctxsnap verify                 # the current branch head",
    "ctxsnap verify 3f2a9c --json",
    "ctxsnap verify --all           # every object, snapshot and branch chain",
    "ctxsnap verify 3f2a9c --trust 5c1d…e0   # also trust this public key",
    "ctxsnap verify review.ctxbundle --trust alice.pub.pem   # offline: no store needed",
    "ctxsnap verify *.ctxbundle --trust alice.pub.pem        # many files, one start-up",
    "ctxsnap verify 3707b221cfe2.ctxsnapshot.json --trust lean.pub.pem   # a lean-ctx snapshot file",
  ],
  options: {
    all: { type: "boolean", help: "verify every object, snapshot and branch chain" },
    "trusted-keys": {
      type: "string",
      arg: "FILE",
      help: "with FILE: also trust the keys in this trusted-keys file",
    },
    trust: {
      type: "string",
      multiple: true,
      arg: "KEY",
      help: "trust this public key (hex, PEM text or PEM file); repeatable",
    },
  },
  positionals: "any",
  async run(ctx, parsed) {
    const given0 = parsed.positionals[0];
    if (parsed.positionals.length > 1) {
      const notFile = parsed.positionals.find((p) => !looksLikeFile(p));
      if (notFile !== undefined || flag(parsed, "all")) {
        throw new UsageError(
          notFile !== undefined
            ? `Several arguments must all be files, and ${quote(notFile)} looks like a snapshot ID`
            : "--all takes no argument",
          {
            hint: "verify one snapshot ID at a time; write ./NAME for a file whose name is all hex",
          },
        );
      }
      if (parsed.positionals.filter((p) => p === "-").length > 1) {
        throw new UsageError("Standard input (-) can be named only once");
      }
      return await verifyFilesCommand(ctx, parsed, parsed.positionals);
    }
    if (given0 !== undefined && looksLikeFile(given0)) {
      return await verifyFileCommand(ctx, parsed, given0);
    }
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return await store.readAsync(async () => {
        const keysFile = str(parsed, "trusted-keys");
        const trust = await trustPolicy(
          list(parsed, "trust"),
          keysFile === undefined ? {} : { keysFile },
        );
        if (flag(parsed, "all")) {
          const report = await verifyAll(
            store,
            trust,
            (done, total) => ctx.out.progress("verifying objects", done, total),
          );
          const { verifyStoredLeanCtx } = await import("../../share/leanctx_store.ts");
          const lean = await verifyStoredLeanCtx(store, trust);
          const invalid = report.snapshots.filter((s) => !s.valid).length +
            lean.filter((l) => l.verdict === "tampered").length;
          const untrusted = report.snapshots.filter((s) => s.valid && !s.trusted).length +
            lean.filter((l) => l.verdict === "untrusted" || l.verdict === "unsigned").length;
          const ok = report.problems.length === 0 && invalid === 0;
          const leanJson = lean.map((l) => ({
            id: l.id,
            verdict: l.verdict,
            valid: l.verdict !== "tampered",
            trusted: l.verdict === "trusted",
            key_id: l.keyId,
            signer: l.signer,
            problems: l.problems,
          }));
          ctx.out.result(
            {
              ok,
              trusted: ok && untrusted === 0,
              ...report,
              snapshots: report.snapshots.map(reportJson),
              lean_ctx: leanJson,
            },
            () => {
              const lines = report.snapshots.map(describe);
              for (const l of lean) {
                lines.push(
                  l.verdict === "tampered"
                    ? `TAMPERED: snapshot ${l.id}: lean-ctx: ${esc(l.problems.join("; "))}`
                    : `${l.verdict === "trusted" ? "ok   " : l.verdict.toUpperCase()}  ${
                      short(l.id)
                    }  lean-ctx, ${
                      l.keyId === null
                        ? "unsigned"
                        : `signed by ${l.keyId}${l.signer ? ` (${esc(l.signer)})` : ""}`
                    }`,
                );
              }
              lines.push(...report.problems.map((p) => `FAIL  ${esc(p)}`));
              lines.push(
                `${report.objects.checked} objects, ${report.snapshots.length} snapshots${
                  lean.length > 0 ? ` (and ${lean.length} lean-ctx)` : ""
                }, ${report.branches} branches checked: ` +
                  (ok
                    ? (untrusted === 0
                      ? "all intact and trusted"
                      : `${untrusted} unsigned or signed by untrusted keys`)
                    : `${invalid + report.problems.length} problems`),
              );
              return lines.join("\n");
            },
          );
          if (!ok) return EXIT_CODES.failure;
          return untrusted === 0 ? 0 : EXIT_CODES.untrusted;
        }
        let id: string;
        const given = parsed.positionals[0];
        if (given !== undefined) {
          const { checkStoredLeanCtx } = await import("../../share/leanctx_store.ts");
          const { leanCtxVerdict } = await import("../../share/leanctx.ts");
          const target = await resolveTarget(ctx, store, given);
          if (target.format === "lean-ctx") {
            const lean = await import("./_leanctx.ts");
            const check = await checkStoredLeanCtx(store, target.id);
            const verdict = leanCtxVerdict(check, trust);
            ctx.out.result(
              lean.checkJson(check, verdict, trust),
              () => lean.checkText(check, verdict, trust),
            );
            return lean.exitForVerdict(ctx.out, check, verdict);
          }
          id = target.id;
        } else {
          const sel = currentSelection(store);
          const head = getBranch(store, sel.session, sel.branch)?.head ?? null;
          if (head === null) {
            throw new NotFoundError(
              `Branch ${sel.session}/${sel.branch} has no snapshot to verify`,
              {
                hint: "create one with `ctxsnap create`, or name an ID",
              },
            );
          }
          id = head;
        }
        const report = await verifySnapshot(store, id, trust);
        ctx.out.result(reportJson(report), () => describe(report));
        if (!report.valid) {
          ctx.out.error(
            new IntegrityError(
              `Snapshot ${short(id)} is TAMPERED: ${report.problems.join("; ")}`,
              {
                hint:
                  "do not use it: it changed after it was signed; restore from another copy (a pull, a bundle) and run `ctxsnap verify --all`",
              },
            ),
          );
          return EXIT_CODES.failure;
        }
        if (!report.trusted) {
          ctx.out.error(
            new UntrustedError(
              `Snapshot ${short(id)} is intact but signed by an untrusted key ${report.keyId}`,
              {
                hint:
                  `if you expect this signer, run \`ctxsnap key trust <public key>\` or pass --trust`,
              },
            ),
          );
          return EXIT_CODES.untrusted;
        }
        return 0;
      });
    } finally {
      store.close();
    }
  },
};
