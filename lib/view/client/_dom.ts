/// <reference lib="dom" />
/**
 * The page script's only ways of putting data into the document: text nodes,
 * with control, bidi and invisible characters shown as visible escapes
 * (`\u{202E}`), so text can neither become markup nor disguise what it says.
 *
 * @example
 * ```ts ignore
 * import { el } from "./_dom.ts";
 * document.body.appendChild(el("p", "muted", "a \u202E reversed"));
 * ```
 * @module
 */

const HIDDEN =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]/g;
const HIDDEN_LINE =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb]/g;
const SVG = "http://www.w3.org/2000/svg";

/** The element with this id (the page's fixed skeleton holds every one asked for). */
export function $<T extends HTMLElement = HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

/**
 * Appends `value` to `parent` as text; `oneLine` also shows tab, newline and
 * carriage return as escapes.
 */
export function text<T extends Node>(parent: T, value: unknown, oneLine: boolean): T {
  const s = value === null || value === undefined ? "" : String(value);
  const re = oneLine ? HIDDEN_LINE : HIDDEN;
  re.lastIndex = 0;
  let at = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s)) !== null) {
    if (m.index > at) parent.appendChild(document.createTextNode(s.slice(at, m.index)));
    const c = m[0].codePointAt(0) ?? 0;
    const mark = document.createElement("span");
    mark.className = "ctl";
    mark.title = "control or invisible character";
    mark.textContent = c === 10
      ? "\\n"
      : c === 9
      ? "\\t"
      : c === 13
      ? "\\r"
      : "\\u{" + c.toString(16).toUpperCase() + "}";
    parent.appendChild(mark);
    at = m.index + m[0].length;
  }
  if (at < s.length) parent.appendChild(document.createTextNode(s.slice(at)));
  return parent;
}

/** A new element of class `cls` holding `value` as text (one line unless `block`). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  cls?: string | null,
  value?: unknown,
  block?: boolean,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (value !== undefined) text(e, value, !block);
  return e;
}

/** A new SVG element with these attributes (numbers and fixed class names only). */
export function svg(tag: string, attrs: Record<string, string | number>): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const k of Object.keys(attrs)) e.setAttribute(k, String(attrs[k]));
  return e;
}

/** The first 12 characters of an id. */
export const short = (id: string | null | undefined): string => (id || "").slice(0, 12);

/** An ISO time as `YYYY-MM-DD HH:MM`. */
export const when = (iso: string): string => String(iso).replace("T", " ").slice(0, 16);

/** A byte count for people. */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "-";
  if (n < 1024) return n + " B";
  if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1048576).toFixed(1) + " MiB";
}
