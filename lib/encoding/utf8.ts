/**
 * UTF-8 lengths without encoding: what a string will take as bytes.
 *
 * @example
 * ```ts
 * import { utf8Length } from "./utf8.ts";
 * if (utf8Length("é😂") !== 6) throw new Error("2 + 4 bytes");
 * if (utf8Length("\ud800") !== 3) throw new Error("a lone surrogate encodes as U+FFFD, 3 bytes");
 * if (utf8Length("abc", 2) !== 2) throw new Error("only the first 2 code units");
 * ```
 * @module
 */

/**
 * Number of UTF-8 bytes encoding the first `end` UTF-16 code units of `text`
 * (all of it by default), as `TextEncoder` would encode them: a surrogate
 * pair is 4 bytes, a lone surrogate 3 (it becomes U+FFFD).
 */
export function utf8Length(text: string, end: number = text.length): number {
  let bytes = 0;
  for (let i = 0; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < end) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
