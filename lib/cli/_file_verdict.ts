/**
 * What `verify FILE`, `show FILE` and `timeline FILE` share about a
 * received file: whether an argument names one, the trust policy for it
 * (working offline, without a config directory), its JSON document, and
 * the verdict it ends with.
 *
 * @example
 * ```ts
 * import { looksLikeFile } from "./_file_verdict.ts";
 * if (!looksLikeFile("review.ctxbundle") || looksLikeFile("3f2a9c")) throw new Error("file");
 * ```
 * @module
 */
import * as fs from "node:fs";
import { CtxsnapError, IntegrityError, NotFoundError, quote, UntrustedError } from "../errors.ts";
import { environmentReadable } from "../runtime.ts";
import type { Keyring } from "../keys/keyring.ts";
import type { FileReport } from "../share/verify_file.ts";
import { hasRevisionSyntax } from "../history/names.ts";
import { type CommandContext, trustPolicy, userPath } from "./command.ts";
import { esc } from "./output.ts";
import { tamperDocument, tamperError, tamperText } from "./commands/_tamper.ts";

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
export function fileDocument(
  source: string,
  report: FileReport,
  reserved: number | null,
): Record<string, unknown> {
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
    reserved_skipped: b.workspace === null ? null : reserved,
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

/** A file name for a human line: as given if plain, else quoted (no control characters). */
export function shownName(file: string): string {
  return /^[\x21-\x7e]+$/.test(file) ? file : esc(quote(file));
}

/**
 * What a file's summary says of the primary snapshot's skipped paths:
 * those the capture left out, apart from the reserved names (`.git`,
 * `.ctxsnap`) it never takes; `reserved` null when the file holds no tree
 * to tell them apart.
 */
export function skippedSummary(skipped: number, reserved: number | null): string {
  if (reserved === null) {
    return `${skipped} skipped (left out, or reserved: .git, .ctxsnap; this file holds no tree to tell which)`;
  }
  const left = Math.max(0, skipped - reserved);
  return `${left} left out${left > 0 ? " (`ctxsnap show FILE --skipped`)" : ""}${
    reserved > 0 ? `, ${reserved} reserved (.git, .ctxsnap: never captured)` : ""
  }`;
}
