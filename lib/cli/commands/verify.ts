/**
 * `ctxsnap verify`: integrity and origin of snapshots in the store.
 * @module
 */
import { CtxsnapError, IntegrityError, UntrustedError } from "../../encoding/errors.ts";
import * as fs from "node:fs";
import type { Keyring } from "../../crypto/keyring.ts";
import { type SnapshotReport, verifyAll, verifySnapshot } from "../../snapshot/verify.ts";
import { currentSelection, getBranch } from "../../snapshot/timeline.ts";
import { hasRevisionSyntax } from "../../snapshot/names.ts";
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
import { EXIT_CODES, NotFoundError } from "../../encoding/errors.ts";
import { esc } from "../output.ts";

function describe(report: SnapshotReport): string {
  const who = report.signer ? ` (${esc(report.signer)})` : "";
  if (!report.valid) return `FAIL  ${esc(short(report.id))}  ${esc(report.problems.join("; "))}`;
  const what = report.hasWorkspace
    ? `${report.checked.files} files, ${report.checked.bytes} bytes`
    : "no workspace";
  return `${report.trusted ? "ok   " : "UNTRUSTED"}  ${esc(short(report.id))}  signed by ${
    esc(report.keyId)
  }${who}  ${what}`;
}

/** A snapshot report as `--json` prints it (snake_case). */
function reportJson(report: SnapshotReport): unknown {
  return {
    id: report.id,
    valid: report.valid,
    trusted: report.trusted,
    key_id: report.keyId,
    signer: report.signer,
    checked: report.checked,
    has_workspace: report.hasWorkspace,
    problems: report.problems,
  };
}

/**
 * Whether the argument names a file: `-`, or anything but an id prefix (all
 * hex) or a revision (`HEAD`, `@`, `REV~N`, `REV@{TIME}`) that names no
 * existing file.
 */
function looksLikeFile(arg: string): boolean {
  if (arg === "-") return true;
  if (!/[^0-9a-fA-F]/.test(arg)) return false;
  if (!hasRevisionSyntax(arg)) return true;
  return fs.existsSync(userPath(arg));
}

async function fileTrust(trust: string[], keysFile: string | undefined): Promise<Keyring> {
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
    return trustPolicy(trust, { ...options, config: false });
  }
}

async function verifyFileCommand(
  ctx: CommandContext,
  parsed: Parsed,
  source: string,
): Promise<number> {
  const { verifyAnyFile } = await import("../../share/verify_file.ts");
  const trust = await fileTrust(list(parsed, "trust"), str(parsed, "trusted-keys"));
  const any = await verifyAnyFile(userPath(source), trust);
  if (any.format === "lean-ctx") {
    const lean = await import("./_leanctx.ts");
    ctx.out.result(
      { file: source, ...lean.checkJson(any.check, any.verdict, trust) },
      () => lean.checkText(any.check, any.verdict, trust),
    );
    return lean.exitForVerdict(ctx.out, any.check, any.verdict);
  }
  const report = any.report;
  const b = report.primary.body;
  const who = report.snapshots.find((s) => s.id === report.primary.id)!;
  ctx.out.result({
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
  }, () => {
    const verdict = !report.valid
      ? "INVALID SIGNATURE"
      : report.trusted
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
      `git      ${
        b.git ? `${esc(b.git.commit ?? "(no commit)")}${b.git.dirty ? " dirty" : ""}` : "-"
      }`,
      `files    ${
        b.workspace
          ? `${b.workspace.files} files, ${b.workspace.bytes} bytes${
            report.withWorkspace ? " (all checked)" : " (content not included)"
          }`
          : "no workspace"
      }`,
    ].join("\n");
  });
  if (!report.valid) {
    ctx.out.error(
      new IntegrityError(`The signature of ${short(report.primary.id)} does not verify`),
    );
    return EXIT_CODES.failure;
  }
  if (!report.trusted) {
    const keys = [...new Set(report.snapshots.filter((s) => !s.trusted).map((s) => s.keyId))];
    ctx.out.error(
      new UntrustedError(`Intact, but signed by untrusted key ${keys.join(", ")}`, {
        hint: "pin the signer's key: --trust KEY, --trusted-keys FILE, or `ctxsnap key trust KEY`",
      }),
    );
    return EXIT_CODES.untrusted;
  }
  return 0;
}

/** The `verify` command. */
export const verify: Command = {
  name: "verify",
  summary: "check snapshots: id, signature, signer trust, tree and every blob",
  usage: "verify [ID|--all] [--trust KEY]...\nverify FILE|- [--trust KEY]... [--trusted-keys FILE]",
  examples: [
    "ctxsnap verify                 # the current branch head",
    "ctxsnap verify 3f2a9c --json",
    "ctxsnap verify --all           # every object, snapshot and branch chain",
    "ctxsnap verify 3f2a9c --trust 5c1d…e0   # also trust this public key",
    "ctxsnap verify review.ctxbundle --trust alice.pub.pem   # offline: no store needed",
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
      help: "trust this public key (hex or PEM file); repeatable",
    },
  },
  positionals: 1,
  async run(ctx, parsed) {
    const given0 = parsed.positionals[0];
    if (given0 !== undefined && looksLikeFile(given0)) {
      return await verifyFileCommand(ctx, parsed, given0);
    }
    const store = openStore(ctx, { readOnly: true });
    try {
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
                  ? `FAIL  ${short(l.id)}  lean-ctx: ${esc(l.problems.join("; "))}`
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
          throw new NotFoundError(`Branch ${sel.session}/${sel.branch} has no snapshot to verify`, {
            hint: "create one with `ctxsnap create`, or name an ID",
          });
        }
        id = head;
      }
      const report = await verifySnapshot(store, id, trust);
      ctx.out.result(reportJson(report), () => describe(report));
      if (!report.valid) {
        ctx.out.error(
          new IntegrityError(
            `Snapshot ${short(id)} failed verification: ${report.problems.join("; ")}`,
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
    } finally {
      store.close();
    }
  },
};
