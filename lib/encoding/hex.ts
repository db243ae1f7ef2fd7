/**
 * Strict lowercase hexadecimal encoding, as used for digests, keys and
 * signatures in every ctxsnap format.
 *
 * Decoding accepts only lowercase hex of even length: an uppercase digit,
 * whitespace or a `0x` prefix is an {@linkcode IntegrityError}, so there is
 * exactly one textual form of any byte string.
 *
 * @example
 * ```ts
 * import { fromHex, isHex, toHex } from "./hex.ts";
 *
 * const hex = toHex(new Uint8Array([0, 171, 255]));
 * if (!(hex === "00abff")) throw new Error("Example failed");
 * if (!(fromHex(hex, 3)[1] === 171)) throw new Error("Example failed");
 * if (!(isHex(hex, 6) && !isHex("00ABFF"))) throw new Error("Example failed");
 * ```
 * @module
 */

import { IntegrityError, quote } from "../errors.ts";

const HEX_DIGITS = "0123456789abcdef";
const BYTE_TO_HEX: readonly string[] = Array.from(
  { length: 256 },
  (_, byte) => HEX_DIGITS[byte >> 4]! + HEX_DIGITS[byte & 15]!,
);
const LOWER_HEX = /^[0-9a-f]*$/;

/**
 * Encodes bytes as lowercase hexadecimal, two characters per byte.
 *
 * @param bytes The bytes to encode.
 * @returns The lowercase hex text.
 */
export function toHex(bytes: Uint8Array): string {
  const parts = new Array<string>(bytes.length);
  for (let i = 0; i < bytes.length; i++) parts[i] = BYTE_TO_HEX[bytes[i]!]!;
  return parts.join("");
}

function nibble(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30; // 0-9
  if (code >= 0x61 && code <= 0x66) return code - 0x57; // a-f
  return -1;
}

/**
 * Decodes strict lowercase hexadecimal.
 *
 * @param text Lowercase hex of even length.
 * @param expectedBytes If given, the exact number of bytes the text must decode to.
 * @returns The decoded bytes.
 * @throws {IntegrityError} If the text has odd length, contains anything but
 * `0-9a-f`, or does not decode to `expectedBytes` bytes.
 */
export function fromHex(text: string, expectedBytes?: number): Uint8Array {
  if (typeof text !== "string") {
    throw new IntegrityError(`Hex value ${quote(text)} is not a string`);
  }
  if (text.length % 2 !== 0) {
    throw new IntegrityError(`Hex string ${quote(text)} has an odd length`);
  }
  const length = text.length / 2;
  if (expectedBytes !== undefined && length !== expectedBytes) {
    throw new IntegrityError(
      `Hex string ${quote(text)} decodes to ${length} bytes, expected ${expectedBytes}`,
    );
  }
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    const high = nibble(text.charCodeAt(2 * i));
    const low = nibble(text.charCodeAt(2 * i + 1));
    if (high < 0 || low < 0) {
      throw new IntegrityError(
        `Hex string ${quote(text)} contains a character that is not lowercase hex`,
      );
    }
    bytes[i] = (high << 4) | low;
  }
  return bytes;
}

/**
 * Tells whether a text is strict lowercase hexadecimal of even length.
 *
 * @param text The text to test.
 * @param length If given, the exact number of characters required.
 * @returns `true` if the text is valid lowercase hex (of `length` characters).
 */
export function isHex(text: string, length?: number): boolean {
  if (typeof text !== "string") return false;
  if (length !== undefined ? text.length !== length : text.length % 2 !== 0) return false;
  return LOWER_HEX.test(text);
}
