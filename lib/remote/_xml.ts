/**
 * The little XML the S3 API returns (list results, multipart upload ids,
 * errors), read without a parser: the texts of named elements, with the five
 * predefined entities and numeric character references decoded. Inputs are
 * bounded by the caller; anything unexpected simply does not match, and the
 * caller validates every value it takes.
 *
 * @example
 * ```ts
 * import { xmlBlocks, xmlText } from "./_xml.ts";
 * const body = "<R><Contents><Key>a&amp;b</Key></Contents><Contents><Key>c</Key></Contents></R>";
 * const keys = xmlBlocks(body, "Contents").map((block) => xmlText(block, "Key"));
 * if (keys.join() !== "a&b,c") throw new Error(keys.join());
 * ```
 * @module
 */

const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
};

/** Decodes the predefined entities and numeric character references. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-z]{2,4});/g, (whole, name: string) => {
    if (name.startsWith("#x")) return safeCodePoint(parseInt(name.slice(2), 16), whole);
    if (name.startsWith("#")) return safeCodePoint(parseInt(name.slice(1), 10), whole);
    return ENTITIES[name] ?? whole;
  });
}

function safeCodePoint(code: number, fallback: string): string {
  return code <= 0x10ffff && (code < 0xd800 || code > 0xdfff)
    ? String.fromCodePoint(code)
    : fallback;
}

/** The inner XML of every `<tag>…</tag>` element (not nested in itself). */
export function xmlBlocks(body: string, tag: string): string[] {
  const out: string[] = [];
  const open = new RegExp(`<${tag}(\\s[^>]*)?>`, "g");
  const close = `</${tag}>`;
  for (;;) {
    const match = open.exec(body);
    if (match === null) break;
    const start = match.index + match[0].length;
    const end = body.indexOf(close, start);
    if (end < 0) break;
    out.push(body.slice(start, end));
    open.lastIndex = end + close.length;
  }
  return out;
}

/** The decoded text of the first `<tag>` element, or null. */
export function xmlText(body: string, tag: string): string | null {
  const block = xmlBlocks(body, tag)[0];
  return block === undefined ? null : decodeEntities(block);
}

/** Escapes text for an XML element. */
export function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => `&${Object.entries(ENTITIES).find(([, v]) => v === c)![0]};`,
  );
}
