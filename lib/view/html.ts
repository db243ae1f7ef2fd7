/**
 * The Replay page: one self-contained HTML document (no external assets, no
 * network requests, works from `file://`) that shows a {@linkcode TimelineData}.
 *
 * Hostile content cannot become markup or script here:
 *
 * - the fixed skeleton holds no data; the data travels as JSON inside
 *   `<script type="application/json">`, a data block the browser never runs,
 *   with `<`, `>`, `&`, U+2028 and U+2029 written as `\uXXXX` escapes, so no
 *   string can close the element or open a comment ({@linkcode embedJson});
 * - the one inline script renders that JSON with `textContent` only
 *   (`client/main.ts`, bundled at build time into `_client_js.ts`);
 * - a Content-Security-Policy allows exactly that script and that stylesheet
 *   by SHA-256, nothing else: no other inline or external script, no event
 *   handler attributes, no `javascript:` URLs, no frames, images only as
 *   `data:`, no network except the server's own origin when served
 *   (`connect-src 'self'`), and Trusted Types so that even a bug assigning a
 *   string to `innerHTML` throws instead of parsing it.
 *
 * @example
 * ```ts
 * import { embedJson } from "./html.ts";
 * const text = embedJson({ reason: "</script><script>alert(1)</script>" });
 * if (text.includes("<") || JSON.parse(text).reason !== "</script><script>alert(1)</script>") {
 *   throw new Error("not escaped");
 * }
 * ```
 * @module
 */
import { sha256Hex } from "../crypto/hash.ts";
import { fromHex } from "../encoding/hex.ts";
import { CLIENT_SCRIPT } from "./_client_js.ts";
import { PAGE_STYLE } from "./_style.ts";
import type { TimelineData } from "./model.ts";

/** The base64 SHA-256 of `text` as UTF-8, as CSP hash sources write it. */
export function cspHash(text: string): string {
  const digest = fromHex(sha256Hex(new TextEncoder().encode(text)));
  let binary = "";
  for (const byte of digest) binary += String.fromCharCode(byte);
  return `'sha256-${btoa(binary)}'`;
}

/** The hash source of the page's one script. */
export const SCRIPT_HASH: string = cspHash(CLIENT_SCRIPT);
/** The hash source of the page's one stylesheet. */
export const STYLE_HASH: string = cspHash(PAGE_STYLE);

/**
 * The Content-Security-Policy of the page. `served` adds `connect-src 'self'`
 * (the live view fetches its own API) and `frame-ancestors 'none'` (headers
 * only: a `<meta>` policy cannot set it).
 */
export function contentSecurityPolicy(served: boolean): string {
  return [
    "default-src 'none'",
    `script-src ${SCRIPT_HASH}`,
    `style-src ${STYLE_HASH}`,
    "img-src data:",
    ...(served ? ["connect-src 'self'", "frame-ancestors 'none'"] : []),
    "base-uri 'none'",
    "form-action 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
  ].join("; ");
}

/**
 * JSON for a `<script type="application/json">` element: `<`, `>`, `&`,
 * U+2028 and U+2029 are written as `\uXXXX` escapes (inside JSON strings,
 * the only place they can occur), so the text can never end the element,
 * start a comment or a CDATA section, and parses back to the same value.
 */
export function embedJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** Renders the whole page for `data`; `served` when `ctxsnap serve` sends it. */
export function renderPage(data: TimelineData, served = false): string {
  // The meta policy applies to the file; the server also sends it as a header.
  const meta = contentSecurityPolicy(served).replace("; frame-ancestors 'none'", "");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${meta}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ctxsnap ${escapeAttribute(data.tool.version)}">
<link rel="icon" href="data:,">
<title>ctxsnap timeline</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<header>
<h1>ctxsnap timeline</h1>
<span id="scope"></span>
<span id="verdict"></span>
<span id="live" hidden></span>
<div id="filters" role="search">
<input id="q" type="search" placeholder="Search text  (/)" aria-label="Search text" autocomplete="off">
<input id="path" type="search" placeholder="Filter by path  (p)" aria-label="Filter by path" autocomplete="off">
<select id="lane" aria-label="Filter by branch"></select>
<select id="mode" aria-label="Show" hidden><option value="prompts">by prompt</option><option value="snapshots">by snapshot</option></select>
<span id="shown"></span>
<span id="base"></span>
<span id="keys">Press ? for keys</span>
</div>
</header>
<ul id="notes" hidden></ul>
<main>
<section id="timeline" tabindex="0" role="listbox" aria-label="Snapshots, newest first">
<svg id="graph" aria-hidden="true" width="1" height="1"></svg>
<ol id="rows"></ol>
<p id="empty" hidden>No snapshot matches the filters.</p>
</section>
<section id="detail" aria-live="polite" aria-label="Selected snapshot"></section>
</main>
<div id="help" hidden>
<strong>Keys</strong>
<div><kbd>j</kbd>/<kbd>↓</kbd> older, <kbd>k</kbd>/<kbd>↑</kbd> newer, <kbd>g</kbd>/<kbd>G</kbd> newest/oldest, <kbd>PgUp</kbd>/<kbd>PgDn</kbd> by ten</div>
<div><kbd>u</kbd> parent, <kbd>r</kbd> restore target, <kbd>b</kbd> compare from here (again to clear), <kbd>Esc</kbd> clear</div>
<div><kbd>Enter</kbd> into the changed files; there <kbd>↓</kbd>/<kbd>↑</kbd> move, <kbd>Enter</kbd> opens a diff, <kbd>Esc</kbd> back</div>
<div><kbd>/</kbd> search, <kbd>p</kbd> path filter, <kbd>l</kbd> branch filter, <kbd>m</kbd> by prompt / by snapshot, <kbd>?</kbd> this help</div>
</div>
<script type="application/json" id="ctxsnap-data">${embedJson(data)}</script>
<script>${CLIENT_SCRIPT}</script>
</body>
</html>
`;
}

function escapeAttribute(value: string): string {
  return value.replace(/[^0-9A-Za-z._+-]/g, "");
}
