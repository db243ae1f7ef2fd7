/**
 * The one tamper verdict every kind of tampering prints (a bad signature, an
 * id that does not match its body, a tree, blob or tar member failing its
 * hash or format, a lean-ctx file failing its id or signature check): the
 * same headline, the same hint, the same `--json` fields.
 *
 * @example
 * ```ts
 * import { IntegrityError } from "../../errors.ts";
 * import { tamperDocument } from "./_tamper.ts";
 * const doc = tamperDocument("b.ctxbundle", new IntegrityError("bad", { check: "blob_hash", at: "blobs/ab" }));
 * if (doc.valid !== false || doc.failed_check !== "blob_hash") throw new Error("shape");
 * ```
 * @module
 */
import { IntegrityError } from "../../errors.ts";
import { esc } from "../output.ts";

/** The hint of every tamper verdict. */
export const TAMPER_HINT =
  "do not use this file: it changed after it was signed, or was damaged on the way; ask the sender for a fresh copy and verify that";

/** Where the check failed, for the headline: a member path, a snapshot id, or the file. */
function where(file: string, error: IntegrityError): string {
  return error.at ?? file;
}

/** The JSON fields of a tamper verdict (`verify FILE --json` prints exactly these for ctxsnap files). */
export function tamperDocument(file: string, error: IntegrityError): Record<string, unknown> {
  const check = error.check ?? "integrity";
  const final = tamperError(file, error);
  return {
    file,
    verdict: "tampered",
    valid: false,
    trusted: false,
    failed_check: check,
    failed_checks: [check],
    at: error.at ?? null,
    problem: error.message,
    error: { code: final.code, exit: 1, message: final.message, hint: final.hint ?? null },
  };
}

/** The headline: `TAMPERED: <where>: the <check> check failed`. */
export function tamperHeadline(file: string, error: IntegrityError): string {
  return `TAMPERED: ${esc(where(file, error))}: the ${error.check ?? "integrity"} check failed`;
}

/** The human report of a tamper verdict. */
export function tamperText(file: string, error: IntegrityError): string {
  return [tamperHeadline(file, error), `file     ${esc(file)}`, `problem  ${esc(error.message)}`]
    .join("\n");
}

/**
 * The error (exit 1) a tamper verdict ends with: `FILE is TAMPERED at
 * WHERE: PROBLEM`, and the one hint.
 */
export function tamperError(file: string, error: IntegrityError): IntegrityError {
  return new IntegrityError(
    `${file} is TAMPERED${error.at === undefined ? "" : ` at ${error.at}`}: ${error.message}`,
    {
      hint: TAMPER_HINT,
      cause: error,
      ...(error.check === undefined ? {} : { check: error.check }),
      ...(error.at === undefined ? {} : { at: error.at }),
    },
  );
}
