/**
 * Recognising secrets by content in the bytes capture reads anyway
 * (docs/DESIGN.md §4, issue 11): private-key blocks and well-known token formats. A
 * file in which {@linkcode SecretScanner} finds one is left out of the
 * capture as `secret_content`.
 *
 * What is recognised (each rule anchored and with a minimum length, so that
 * prose, code that handles keys and placeholders do not match):
 *
 * - **private key**: a PEM block `-----BEGIN … PRIVATE KEY-----` (PKCS#8,
 *   RSA, EC, DSA, OPENSSH, ENCRYPTED, …) or `-----BEGIN PGP PRIVATE KEY
 *   BLOCK-----`, followed by a line break (or an escaped `\n`, as inside JSON
 *   or YAML strings), optional `Name: value` header lines, and at least 40
 *   base64 characters; a PuTTY key file header `PuTTY-User-Key-File-N:`;
 * - **PGP private key**: an armored block `-----BEGIN PGP PRIVATE KEY
 *   BLOCK-----` (or `PGP SECRET KEY BLOCK`), up to 16 armor header lines of
 *   up to 200 characters each, the blank line, then at least 40 base64
 *   characters over any number of lines;
 * - **AWS access key id**: `AKIA` or `ASIA` and 16 upper-case letters or
 *   digits, alone (the documented example `…EXAMPLE` excepted);
 * - **GitHub token**: `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36
 *   alphanumerics, or `github_pat_` with 22 + `_` + 59;
 * - **npm token**: `npm_` and 36 alphanumerics;
 * - **ctxsnap hook token**: `ctxsnap_hook_` and 64 hex digits (the bearer
 *   token of Claude Code's HTTP hooks, which the installer writes into
 *   `.claude/settings.local.json`: that file never enters a snapshot);
 * - **Slack token**: `xoxb-`, `xoxa-`, `xoxp-`, `xoxr-`, `xoxs-`, one to
 *   three numeric groups, then 8 or more token characters;
 * - **service-account key**: a Google service-account JSON file holds its key
 *   as `"private_key": "-----BEGIN PRIVATE KEY-----\nMIIE…"`, which the
 *   private-key rule matches (escaped line breaks count).
 *
 * Random-looking tokens must also use at least 8 distinct characters, so
 * placeholders such as `ghp_xxxx…` or `AKIAXXXXXXXXXXXXXXXX` do not count.
 * Input arrives in chunks of any size; the last 1 KiB of each chunk is kept
 * and scanned again with the next one, so a secret split across two chunks
 * is found (no rule matches more than 1 KiB).
 *
 * @example
 * ```ts
 * import { SecretScanner } from "./secret_scan.ts";
 * const scanner = new SecretScanner();
 * scanner.update(new TextEncoder().encode("token = ghp_"));
 * scanner.update(new TextEncoder().encode("8f3Kq0ZrT5bLm2Xw9Yc4Nd7Ve1Hj6Ua0Ps3Q\n"));
 * if (scanner.found !== "GitHub token") throw new Error(`found ${scanner.found}`);
 * const clean = new SecretScanner();
 * clean.update(new TextEncoder().encode('const header = "-----BEGIN PRIVATE KEY-----";\n'));
 * if (clean.found !== null) throw new Error("a PEM header alone is not a key");
 * ```
 * @module
 */

import { builtin } from "../../runtime.ts";

/** Bumped whenever the rules change: capture then re-reads files its stat cache knows. */
export const SECRET_RULES_VERSION = "3";

/** Characters of the previous chunk scanned again with the next one. */
const CARRY = 1024;

const NL = String.raw`(?:\r?\n|(?:\\r)?\\n)`;

/** A PEM private-key block with a body, matched from its `-----BEGIN `. */
const PEM = new RegExp(
  String.raw`-----BEGIN (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----${NL}` +
    String.raw`(?:[A-Za-z0-9-]{1,40}: [^\r\n\\]{0,200}${NL}){0,4}${NL}?[A-Za-z0-9+/=]{40}`,
  "y",
);
/** An armored PGP private-key block (RFC 4880 §6.2), matched from its `-----BEGIN `. */
const PGP = new RegExp(
  String.raw`-----BEGIN PGP (?:PRIVATE|SECRET) KEY BLOCK-----[ \t]*${NL}` +
    String.raw`(?:[^\r\n\\]{1,200}${NL}){0,16}?[ \t]*${NL}(?:[A-Za-z0-9+/=][ \t]*${NL}?){40}`,
  "y",
);
const PUTTY = /PuTTY-User-Key-File-\d: [a-z0-9-]{3,40}\r?\n/g;
const AWS = /(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g;
/** Token formats, in one expression (one pass is faster than one per format). */
const TOKENS =
  /(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}|npm_[A-Za-z0-9]{36})(?![A-Za-z0-9_])|xox[baprs]-(?:[0-9]{8,13}-){1,3}[A-Za-z0-9-]{8,64}/g;
/** ctxsnap's own HTTP hook token (`run/http.json`, `.claude/settings.local.json`). */
const HOOK_TOKEN = /ctxsnap_hook_[0-9a-f]{64}(?![A-Za-z0-9_])/g;
const WORD = /[A-Za-z0-9_]/;
/**
 * The literals the rules above start from: text holding none of them holds
 * no secret. One pass of this finds that for most files, where one search
 * per rule took several (a third of the scan of a small file).
 */
const CANDIDATE =
  /PRIVATE KEY|-----BEGIN PGP |PuTTY-User-Key-File-|AKIA|ASIA|gh[pousr]_|github_pat_|npm_|xox[baprs]-|ctxsnap_hook_/;

/** At least `n` distinct characters in `text`. */
function distinct(text: string, n: number): boolean {
  return new Set(text).size >= n;
}

/** Whether the match at `at` continues a longer word (then it is not a token). */
function inWord(text: string, at: number): boolean {
  return at > 0 && WORD.test(text[at - 1]!);
}

type Latin1 = (bytes: Uint8Array) => string;
let latin1: Latin1 | undefined;

/** Bytes as a string of the same length, one character a byte (fast for large inputs). */
function toLatin1(bytes: Uint8Array): string {
  if (latin1 === undefined) {
    try {
      const { Buffer } = builtin<typeof import("node:buffer")>("node:buffer");
      latin1 = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");
    } catch {
      const decoder = new TextDecoder("latin1");
      latin1 = (b) => decoder.decode(b);
    }
  }
  return latin1(bytes);
}

/**
 * Looks for secrets in a byte stream fed in chunks. `found` names the first
 * kind of secret seen (see the module documentation), or is null.
 */
export class SecretScanner {
  /** The kind of secret found, or null. */
  found: string | null = null;
  #carry = "";

  /** Scans the next chunk (any size; chunks are contiguous). */
  update(chunk: Uint8Array): void {
    if (this.found !== null || chunk.length === 0) return;
    const text = this.#carry + toLatin1(chunk);
    this.found = scanText(text);
    this.#carry = text.length > CARRY ? text.slice(text.length - CARRY) : text;
  }
}

/**
 * The kind of the first secret in `text`, or null. Each rule is found by a
 * literal search or a regular expression with a fixed start, so scanning
 * runs at several hundred MiB/s.
 */
export function scanText(text: string): string | null {
  if (!CANDIDATE.test(text)) return null;
  for (let at = text.indexOf("PRIVATE KEY"); at >= 0; at = text.indexOf("PRIVATE KEY", at + 1)) {
    const begin = text.lastIndexOf("-----BEGIN ", at);
    if (begin < 0 || at - begin > 96) continue;
    PEM.lastIndex = begin;
    if (PEM.test(text)) return "private key";
  }
  for (
    let at = text.indexOf("-----BEGIN PGP ");
    at >= 0;
    at = text.indexOf("-----BEGIN PGP ", at + 1)
  ) {
    PGP.lastIndex = at;
    if (PGP.test(text)) return "private key";
  }
  if (text.includes("PuTTY-User-Key-File-")) {
    PUTTY.lastIndex = 0;
    if (PUTTY.test(text)) return "private key";
  }
  AWS.lastIndex = 0;
  for (let m = AWS.exec(text); m !== null; m = AWS.exec(text)) {
    if (!inWord(text, m.index) && !m[0].endsWith("EXAMPLE") && distinct(m[0].slice(4), 8)) {
      return "AWS access key id";
    }
  }
  if (text.includes("ctxsnap_hook_")) {
    HOOK_TOKEN.lastIndex = 0;
    for (let m = HOOK_TOKEN.exec(text); m !== null; m = HOOK_TOKEN.exec(text)) {
      if (!inWord(text, m.index)) return "ctxsnap hook token";
    }
  }
  TOKENS.lastIndex = 0;
  for (let m = TOKENS.exec(text); m !== null; m = TOKENS.exec(text)) {
    const token = m[0];
    if (inWord(text, m.index)) continue;
    const [name, prefix] = token.startsWith("npm_")
      ? ["npm token", 4]
      : token.startsWith("xox")
      ? ["Slack token", 5]
      : token.startsWith("github_pat_")
      ? ["GitHub token", 11]
      : ["GitHub token", 4];
    if (distinct(token.slice(prefix), 8)) return name;
  }
  return null;
}
