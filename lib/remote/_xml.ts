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

/** Longest attribute list read in an opening tag; a longer one does not match. */
const MAX_ATTRIBUTES = 256;

/**
 * The inner XML of `<tag>…</tag>` elements (not nested in itself), at most
 * `limit` of them. Linear in the body's length whatever it holds: each
 * character is looked at a bounded number of times (an opening tag's
 * attributes are read at most {@linkcode MAX_ATTRIBUTES} characters far, and
 * the search resumes after each element, or stops at the first element
 * that is never closed).
 */
export function xmlBlocks(body: string, tag: string, limit = Infinity): string[] {
  const out: string[] = [];
  const open = `<${tag}`;
  const close = `</${tag}>`;
  let from = 0;
  while (out.length < limit) {
    const at = body.indexOf(open, from);
    if (at < 0) break;
    let start = at + open.length;
    const next = body[start];
    if (next === ">") start += 1;
    else if (next === " " || next === "\t" || next === "\n" || next === "\r") {
      let end = start;
      const stop = Math.min(body.length, start + MAX_ATTRIBUTES);
      while (end < stop && body[end] !== ">" && body[end] !== "<") end++;
      if (body[end] !== ">") {
        from = end; // not an opening tag: resume where the look stopped
        continue;
      }
      start = end + 1;
    } else {
      from = start; // a longer name (`<ContentsX`): not this tag
      continue;
    }
    const end = body.indexOf(close, start);
    if (end < 0) break; // never closed: no later element can be either
    out.push(body.slice(start, end));
    from = end + close.length;
  }
  return out;
}

/** The decoded text of the first `<tag>` element, or null. */
export function xmlText(body: string, tag: string): string | null {
  const block = xmlBlocks(body, tag, 1)[0];
  return block === undefined ? null : decodeEntities(block);
}

/** Escapes text for an XML element. */
export function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => `&${Object.entries(ENTITIES).find(([, v]) => v === c)![0]};`,
  );
}
