/**
 * `ctxsnap show FILE`: what a received published snapshot or bundle
 * recorded, after verifying it, with no store (read access only): context,
 * git anchor and branch, file list, what was left out and why, and for a
 * bundle each snapshot with the context it added and the files it changed
 * (`--patch`: their text diffs). A tampered file shows nothing it says.
 * @module
 */
import { IntegrityError, UsageError } from "../../errors.ts";
import type { Inspection } from "../../share/inspect_file.ts";
import { diffText, formatUnified } from "../../history/text_diff.ts";
import type { TreeEntry, TreeManifest } from "../../format/tree.ts";
import { type CommandContext, flag, list, type Parsed, short, str, userPath } from "../command.ts";
import { esc } from "../output.ts";
import { contextLines, gitLine } from "./_body_lines.ts";
import {
  fileDocument,
  fileTrust,
  reportTampered,
  shownName,
  signatureTamper,
  skippedSummary,
  verdictError,
} from "../_file_verdict.ts";

function entryJson(e: TreeEntry): Record<string, unknown> {
  return e.type === "file"
    ? { path: e.path, type: "file", size: e.size, mode: e.mode, blob: e.blob }
    : { path: e.path, type: "symlink", target: e.target };
}

function patchLines(
  inspection: Inspection,
  before: TreeManifest | undefined,
  after: TreeManifest,
  paths: string[],
): string[] {
  const lines: string[] = [];
  const find = (tree: TreeManifest | undefined, p: string) =>
    tree?.entries.find((e) => e.path === p);
  for (const p of paths) {
    const a = find(before, p);
    const b = find(after, p);
    const content = (e: TreeEntry | undefined): Uint8Array | null | undefined =>
      e === undefined
        ? null
        : e.type === "symlink"
        ? new TextEncoder().encode(e.target)
        : inspection.blobs.get(e.blob);
    const old = content(a);
    const now = content(b);
    if (old === undefined || now === undefined) {
      lines.push(`(${esc(p)}: too large to diff here)`);
      continue;
    }
    const text = formatUnified(
      diffText(old, now),
      a === undefined ? "/dev/null" : `a/${p}`,
      b === undefined ? "/dev/null" : `b/${p}`,
    );
    if (text !== "") lines.push(...text.trimEnd().split("\n").map(esc));
  }
  return lines;
}

/** Runs `show FILE`; returns the exit status. */
export async function showFile(
  ctx: CommandContext,
  parsed: Parsed,
  source: string,
): Promise<number> {
  if (str(parsed, "before") !== undefined || str(parsed, "session") !== undefined) {
    throw new UsageError("--before and --session select from the store, not from a file");
  }
  const { inspectFile } = await import("../../share/inspect_file.ts");
  const trust = await fileTrust(
    list(parsed, "trust"),
    str(parsed, "trusted-keys"),
    (m) => ctx.out.warn(m),
  );
  const patch = flag(parsed, "patch");
  let inspection: Inspection;
  try {
    inspection = await inspectFile(userPath(source), trust, { keepContent: patch });
  } catch (error) {
    if (error instanceof IntegrityError) return reportTampered(ctx, source, error);
    throw error;
  }
  const any = inspection.report;
  if (any.format !== "ctxsnap") {
    // A file of a format kept as itself (lean-ctx): its format presents it.
    const { keptFormatNamed } = await import("../../share/formats/registry.ts");
    const format = await keptFormatNamed(any.format);
    const { tampered } = format.presentFileCheck(any, trust);
    if (tampered !== null) return reportTampered(ctx, source, tampered);
    if (flag(parsed, "skipped")) {
      throw new UsageError(`A ${format.name} file records no workspace: --skipped does not apply`);
    }
    const shown = format.presentFileContent(any, trust);
    ctx.out.result({ file: source, ...shown.document }, shown.text);
    return shown.error === null ? 0 : ctx.out.error(shown.error);
  }
  const report = any.report;
  const tampered = signatureTamper(report);
  if (tampered !== null) return reportTampered(ctx, source, tampered);
  const primary = report.primary;
  const b = primary.body;
  const tree = b.workspace === null ? undefined : inspection.trees.get(b.workspace.tree);
  const reserved = tree === undefined
    ? null
    : tree.skipped.filter((s) => s.reason === "reserved").length;
  const headline = report.trusted
    ? "OK: intact, signed by a trusted key"
    : "UNTRUSTED: intact, but the signer is not trusted (read it as a claim by that key only)";
  if (flag(parsed, "skipped")) {
    ctx.out.result(
      {
        file: source,
        id: primary.id,
        captured: b.workspace !== null,
        tree_included: tree !== undefined,
        skipped_count: b.workspace?.skipped ?? 0,
        skipped: tree?.skipped ?? null,
      },
      () =>
        [
          headline,
          b.workspace === null
            ? `snapshot ${primary.id} recorded no workspace`
            : tree === undefined
            ? `${b.workspace.skipped} path(s) skipped (left out, or reserved: .git, .ctxsnap); this file holds no tree, so not which (a bundle published --with-workspace does)`
            : tree.skipped.length === 0
            ? "nothing was left out"
            : tree.skipped.map((s) => `${esc(s.reason).padEnd(21)} ${esc(s.path)}`).join("\n"),
        ].join("\n"),
    );
  } else {
    const who = report.snapshots.find((s) => s.id === primary.id)!;
    const steps = inspection.steps;
    ctx.out.result(
      {
        ...fileDocument(source, report, reserved),
        context: b.context,
        files: tree === undefined ? null : tree.entries.map(entryJson),
        skipped: tree === undefined ? null : tree.skipped,
        steps: steps.map((s) => ({
          id: s.envelope.id,
          created_at: s.envelope.body.created_at,
          reason: s.envelope.body.reason,
          session: s.envelope.body.session,
          branch: s.envelope.body.branch,
          key_id: s.envelope.signature.key_id,
          context_added: s.context,
          files_changed: s.files,
        })),
      },
      () => {
        const lines = [
          headline,
          `file       ${shownName(source)}  (${
            report.kind === "bundle"
              ? `bundle of ${report.snapshots.length} snapshot(s)${
                report.withWorkspace ? " with workspace content" : ""
              }`
              : "published snapshot: envelope only"
          })`,
          `snapshot   ${primary.id}`,
          `created    ${esc(b.created_at)}`,
          `timeline   ${esc(b.session)}/${esc(b.branch)}  parent ${esc(short(b.parent))}`,
          `reason     ${esc(b.reason || "-")}`,
          `signer     ${esc(who.keyId)}${who.signer ? ` (${esc(who.signer)})` : ""}${
            who.trusted ? "" : "  untrusted"
          }`,
          gitLine(b),
          b.workspace
            ? `workspace  ${b.workspace.files} files, ${b.workspace.bytes} bytes, ${
              skippedSummary(b.workspace.skipped, reserved)
            }`
            : "workspace  not captured",
        ];
        lines.push(...contextLines(b));
        if (tree !== undefined) {
          lines.push(`files (${tree.entries.length}):`);
          for (const e of tree.entries) {
            lines.push(
              e.type === "file"
                ? `  ${String(e.size).padStart(9)}  ${esc(e.path)}`
                : `  ${"symlink".padStart(9)}  ${esc(e.path)} -> ${esc(e.target)}`,
            );
          }
          if (tree.skipped.length > 0) {
            lines.push(`left out (${tree.skipped.length}):`);
            for (const s of tree.skipped) {
              lines.push(`  ${esc(s.reason).padEnd(21)} ${esc(s.path)}`);
            }
          }
        } else if (b.workspace !== null) {
          lines.push(
            "files      not in this file (a bundle published --with-workspace holds them)",
          );
        }
        if (steps.length > 1 || patch) {
          lines.push(`history (${steps.length}, oldest first):`);
          let before: TreeManifest | undefined;
          for (const [i, s] of steps.entries()) {
            const e = s.envelope.body;
            lines.push(
              `  ${i + 1}. ${short(s.envelope.id)}  ${esc(e.created_at)}  ${esc(e.reason || "-")}`,
            );
            const ch = s.context;
            if (ch.task !== null && ch.task !== "") lines.push(`     task: ${esc(ch.task)}`);
            for (const d of ch.decisions) lines.push(`     + decision: ${esc(d)}`);
            for (const f of ch.findings) lines.push(`     + finding: ${esc(f)}`);
            for (const k of ch.knowledge) lines.push(`     + knowledge: ${esc(k)}`);
            if (s.files !== null) {
              const f = s.files;
              const parts = [
                ...f.added.map((p) => `+${esc(p)}`),
                ...f.changed.map((p) => `~${esc(p)}`),
                ...f.removed.map((p) => `-${esc(p)}`),
              ];
              lines.push(`     files: ${parts.length === 0 ? "unchanged" : parts.join(" ")}`);
              const now = e.workspace === null ? undefined : inspection.trees.get(e.workspace.tree);
              if (patch && now !== undefined) {
                lines.push(
                  ...patchLines(
                    inspection,
                    before,
                    now,
                    [...f.added, ...f.changed, ...f.removed].sort(),
                  ).map((l) => `     ${l}`),
                );
              }
              before = now;
            }
          }
        }
        return lines.join("\n");
      },
    );
  }
  const error = verdictError(report, trust);
  return error === null ? 0 : ctx.out.error(error);
}
