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
import type { Keyring } from "../../keys/keyring.ts";
import type { AnyFileReport } from "../../share/verify_file.ts";
import {
  reservedSkips,
  type ReservedSummary,
  reservedSummary,
} from "../../share/reserved_skips.ts";
import type { Presented, StoredVerdict } from "../../share/formats/format.ts";
import { type SnapshotReport, verifyAll, verifySnapshot } from "../../history/verify.ts";
import { currentSelection, getBranch } from "../../history/timeline.ts";
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
import { tamperDocument, tamperError, tamperHeadline } from "./_tamper.ts";
import {
  fileDocument,
  fileTrust,
  looksLikeFile,
  reportTampered,
  shownName,
  signatureTamper,
  skippedSummary,
  verdictError,
} from "../_file_verdict.ts";
import { SELECTION_FLAGS, TRUST_FLAGS } from "../flags.ts";

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

/** A file of a format kept as itself (lean-ctx), presented by its format. */
export interface KeptFileCheck {
  /** The report document, verdict text and verdict error. */
  presented: Presented;
  /** The batch line after the label and the name. */
  line: string;
}

/**
 * Verifies one file; a tampered one (any failed check) is an
 * {@linkcode IntegrityError} verdict. A file of a kept format comes with
 * its format's presentation (`kept`), null for a ctxsnap file.
 */
export async function verifyOne(
  source: string,
  trust: Keyring,
): Promise<
  {
    any: AnyFileReport | null;
    tampered: IntegrityError | null;
    kept: KeptFileCheck | null;
    /** Reserved paths among the primary snapshot's skipped ones, null without its tree. */
    reserved: number | null;
  }
> {
  const { verifyAnyFile } = await import("../../share/verify_file.ts");
  // Each tree's reserved count and subtree ids, not the tree: the bundle reader never holds them all.
  const trees = new Map<string, ReservedSummary>();
  let any: AnyFileReport;
  try {
    any = await verifyAnyFile(userPath(source), trust, {
      tree: (id, tree) => void trees.set(id, reservedSummary(tree)),
    });
  } catch (error) {
    if (error instanceof IntegrityError) {
      return { any: null, tampered: error, kept: null, reserved: null };
    }
    throw error;
  }
  if (any.format === "ctxsnap") {
    const workspace = any.report.primary.body.workspace;
    return {
      any,
      tampered: signatureTamper(any.report),
      kept: null,
      reserved: workspace === null ? null : reservedSkips(workspace.tree, trees),
    };
  }
  const { keptFormatNamed } = await import("../../share/formats/registry.ts");
  const { tampered, presented, line } = (await keptFormatNamed(any.format)).presentFileCheck(
    any,
    trust,
  );
  return { any, tampered, kept: { presented, line }, reserved: null };
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
  const { any, tampered, kept, reserved } = await verifyOne(source, trust);
  if (kept !== null) {
    const document = { file: source, ...kept.presented.document };
    if (tampered !== null) return reportTampered(ctx, source, tampered, { document });
    ctx.out.result(document, kept.presented.text);
    const error = kept.presented.error;
    return error === null ? 0 : ctx.out.error(error);
  }
  if (tampered !== null) {
    // Nothing the file says is shown: it cannot be believed.
    return reportTampered(ctx, source, tampered, {
      document: { kind: any?.format === "ctxsnap" ? any.report.kind : null },
    });
  }
  const report = (any as Extract<AnyFileReport, { format: "ctxsnap" }>).report;
  const b = report.primary.body;
  const who = report.snapshots.find((s) => s.id === report.primary.id)!;
  ctx.out.result(fileDocument(source, report, reserved), () => {
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
          }; ${skippedSummary(b.workspace.skipped, reserved)}`
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
  /** What the file held, once it could be read. */
  report: AnyFileReport | null;
  /** A kept format's presentation of it (lean-ctx), or null. */
  kept: KeptFileCheck | null;
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

function batchLine(result: BatchResult): string {
  const name = shownName(result.file);
  if (result.tampered !== null) {
    return `${"TAMPERED".padEnd(9)}  ${name}  ${
      tamperHeadline(result.file, result.tampered).replace(/^TAMPERED: /, "")
    }`;
  }
  const label = (BATCH_LABELS[result.exit] ?? "ERROR").padEnd(9);
  if (result.kept !== null) return `${label}  ${name}  ${result.kept.line}`;
  const any = result.report;
  const r = any === null || any.format !== "ctxsnap" ? null : any.report;
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
      const { any: report, tampered, kept, reserved } = await verifyOne(file, trust);
      if (tampered !== null) {
        const base = kept !== null
          ? { file, ...kept.presented.document }
          : { format: "ctxsnap", kind: report?.format === "ctxsnap" ? report.report.kind : null };
        result = {
          file,
          exit: 1,
          report: null,
          kept: null,
          document: { ...tamperDocument(file, tampered), ...base },
          error: tamperError(file, tampered),
          tampered,
        };
        results.push(result);
        worst = worseStatus(worst, result.exit);
        continue;
      }
      const own = report!.format === "ctxsnap" ? report!.report : null;
      const error = kept !== null ? kept.presented.error : verdictError(own!, trust);
      const document = kept !== null
        ? { file, ...kept.presented.document }
        : fileDocument(file, own!, reserved);
      result = {
        file,
        exit: error === null ? 0 : exitCodeOf(error),
        report,
        kept,
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
        kept: null,
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
    all: { ...SELECTION_FLAGS.all, help: "verify every object, snapshot and branch chain" },
    "trusted-keys": {
      ...TRUST_FLAGS["trusted-keys"],
      help: "with FILE: also trust the keys in this trusted-keys file",
    },
    trust: {
      ...TRUST_FLAGS.trust,
      help: "trust this public key (hex, PEM text or PEM file); repeatable",
    },
  },
  args: [{
    name: "ID|FILE|-",
    help:
      "a snapshot (default: the current head), or published files to verify offline (- reads stdin)",
    optional: true,
    repeat: true,
  }],
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
          // Every stored snapshot of a format kept as itself, re-checked by its format.
          const { keptFormats } = await import("../../share/formats/registry.ts");
          const kept: { name: string; verdict: StoredVerdict }[] = [];
          const keptJson: Record<string, unknown[]> = {};
          for (const format of await keptFormats()) {
            const list = keptJson[format.name.replace(/-/g, "_")] = [] as unknown[];
            for (const l of await format.verifyAll(store, trust)) {
              kept.push({ name: format.name, verdict: l });
              list.push({
                id: l.id,
                verdict: l.verdict,
                valid: l.verdict !== "tampered",
                trusted: l.verdict === "trusted",
                key_id: l.keyId,
                signer: l.signer,
                problems: l.problems,
              });
            }
          }
          const invalid = report.snapshots.filter((s) => !s.valid).length +
            kept.filter((k) => k.verdict.verdict === "tampered").length;
          const untrusted = report.snapshots.filter((s) => s.valid && !s.trusted).length +
            kept.filter((k) =>
              k.verdict.verdict === "untrusted" || k.verdict.verdict === "unsigned"
            )
              .length;
          const ok = report.problems.length === 0 && invalid === 0;
          const keptCounts = [...new Set(kept.map((k) => k.name))].map((name) =>
            `${kept.filter((k) => k.name === name).length} ${name}`
          );
          ctx.out.result(
            {
              ok,
              trusted: ok && untrusted === 0,
              ...report,
              snapshots: report.snapshots.map(reportJson),
              ...keptJson,
            },
            () => {
              const lines = report.snapshots.map(describe);
              for (const { name, verdict: l } of kept) {
                lines.push(
                  l.verdict === "tampered"
                    ? `TAMPERED: snapshot ${l.id}: ${name}: ${esc(l.problems.join("; "))}`
                    : `${l.verdict === "trusted" ? "ok   " : l.verdict.toUpperCase()}  ${
                      short(l.id)
                    }  ${name}, ${
                      l.keyId === null
                        ? "unsigned"
                        : `signed by ${l.keyId}${l.signer ? ` (${esc(l.signer)})` : ""}`
                    }`,
                );
              }
              lines.push(...report.problems.map((p) => `FAIL  ${esc(p)}`));
              lines.push(
                `${report.objects.checked} objects, ${report.snapshots.length} snapshots${
                  keptCounts.length > 0 ? ` (and ${keptCounts.join(", ")})` : ""
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
          const target = await resolveTarget(ctx, store, given);
          if (target.kept !== null) {
            // A snapshot kept as itself (lean-ctx): its stored bytes re-checked by its format.
            const checked = await target.kept.verifyStored(store, target.id, trust);
            ctx.out.result(checked.document, checked.text);
            return checked.error === null ? 0 : ctx.out.error(checked.error);
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
