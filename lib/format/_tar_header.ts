/**
 * Private helpers of `tar.ts`: encoding and strict decoding of one POSIX
 * ustar header block, numeric fields (octal and the GNU base-256 form), and
 * the member-name rules shared by the writer and the reader.
 *
 * @example
 * ```ts
 * import { decodeHeader, encodeHeader } from "./_tar_header.ts";
 *
 * const size = 9 * 1024 ** 3; // above the 11-digit octal limit: base-256
 * const block = encodeHeader("blobs/x", size);
 * if (!(block.length === 512 && (block[124]! & 0x80) !== 0)) throw new Error("Example failed");
 * const header = decodeHeader(block, 0);
 * if (!(header.name === "blobs/x" && header.size === size)) throw new Error("Example failed");
 * ```
 * @module
 */

import { IntegrityError, quote } from "../errors.ts";
import type { CtxsnapErrorOptions } from "../errors.ts";

/** A bundle is not a well-formed, acceptable tar archive (or cannot be written as one). */
export class BundleFormatError extends IntegrityError {
  /** Creates a bundle format error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "BundleFormatError";
  }
}

/** Size of a tar block, in bytes. */
export const BLOCK = 512;

/** Largest size the 11-digit octal size field can hold (8 GiB - 1). */
export const MAX_OCTAL_SIZE: number = 0o77777777777;

/** Longest member name the writer emits (the ustar name field; no prefix). */
export const MAX_NAME_BYTES = 100;

// Field offsets and lengths of the ustar header (POSIX.1-1988).
const NAME = [0, 100] as const;
const MODE = [100, 8] as const;
const UID = [108, 8] as const;
const GID = [116, 8] as const;
const SIZE = [124, 12] as const;
const MTIME = [136, 12] as const;
const CHKSUM = [148, 8] as const;
const TYPEFLAG = 156;
const LINKNAME = [157, 100] as const;
const MAGIC = [257, 8] as const; // magic (6) + version (2)
const DEVMAJOR = [329, 8] as const;
const DEVMINOR = [337, 8] as const;
const PREFIX = [345, 155] as const;

const USTAR_MAGIC = [0x75, 0x73, 0x74, 0x61, 0x72, 0x00, 0x30, 0x30]; // "ustar\0" "00"
const GNU_MAGIC = [0x75, 0x73, 0x74, 0x61, 0x72, 0x20, 0x20, 0x00]; // "ustar  \0"

const TYPE_NAMES: Readonly<Record<string, string>> = {
  "1": "hard link",
  "2": "symbolic link",
  "3": "character device",
  "4": "block device",
  "5": "directory",
  "6": "FIFO",
  "7": "contiguous file",
  "x": "pax extended header",
  "g": "pax global header",
  "L": "GNU long name",
  "K": "GNU long link name",
  "S": "GNU sparse file",
  "D": "GNU directory dump",
  "M": "GNU multi-volume continuation",
  "V": "volume label",
};

/**
 * Why `name` is not an acceptable member name, or `undefined` if it is:
 * printable ASCII, relative, no backslash, and no empty, `.` or `..` segment.
 */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "is empty";
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return "contains a character that is not printable ASCII";
    if (c === 0x5c) return "contains a backslash";
  }
  if (name.startsWith("/")) return "is absolute";
  for (const segment of name.split("/")) {
    if (segment === "") return "has an empty path segment";
    if (segment === "." || segment === "..") return `has a ${quote(segment)} path segment`;
  }
  return undefined;
}

function putString(block: Uint8Array, [at, len]: readonly [number, number], text: string): void {
  if (text.length > len) throw new RangeError(`Field too long: ${quote(text)}`);
  for (let i = 0; i < text.length; i++) block[at + i] = text.charCodeAt(i);
}

function octal(value: number, digits: number): string {
  return value.toString(8).padStart(digits, "0");
}

/** Sum of the header bytes with the checksum field counted as spaces (unsigned, per POSIX). */
function checksums(block: Uint8Array): { unsigned: number; signed: number } {
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const byte = i >= CHKSUM[0] && i < CHKSUM[0] + CHKSUM[1] ? 0x20 : block[i]!;
    unsigned += byte;
    signed += byte > 127 ? byte - 256 : byte;
  }
  return { unsigned, signed };
}

/**
 * Encodes the header of a regular file `name` of `size` bytes: ustar magic,
 * mode 0644, owner 0:0, empty user and group names, mtime 0, the size in
 * 11-digit octal up to 8 GiB - 1 and in GNU base-256 above. The name must
 * already satisfy {@linkcode nameProblem} and be at most 100 bytes.
 */
export function encodeHeader(name: string, size: number): Uint8Array {
  if (name.length > MAX_NAME_BYTES || nameProblem(name) !== undefined) {
    throw new RangeError(`Invalid member name ${quote(name)}`);
  }
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new RangeError(`Invalid member size ${quote(size)}`);
  }
  const block = new Uint8Array(BLOCK);
  putString(block, NAME, name);
  putString(block, MODE, "0000644\0");
  putString(block, UID, "0000000\0");
  putString(block, GID, "0000000\0");
  if (size <= MAX_OCTAL_SIZE) {
    putString(block, SIZE, octal(size, 11) + "\0");
  } else {
    // GNU base-256: high bit of the first byte set, big-endian value in the rest.
    let rest = size;
    for (let i = SIZE[0] + SIZE[1] - 1; i > SIZE[0]; i--) {
      block[i] = rest % 256;
      rest = Math.floor(rest / 256);
    }
    block[SIZE[0]] = 0x80;
  }
  putString(block, MTIME, "00000000000\0");
  block[TYPEFLAG] = 0x30; // '0': regular file
  block.set(USTAR_MAGIC, MAGIC[0]);
  putString(block, DEVMAJOR, "0000000\0");
  putString(block, DEVMINOR, "0000000\0");
  putString(block, CHKSUM, octal(checksums(block).unsigned, 6) + "\0 ");
  return block;
}

/** A decoded header, as accepted by {@linkcode decodeHeader}. */
export interface DecodedHeader {
  /** Member name (prefix and name fields joined), validated by {@linkcode nameProblem}. */
  name: string;
  /** Declared data size in bytes. */
  size: number;
  /** Permission bits. */
  mode: number;
  /** Modification time, in seconds since the epoch. */
  mtime: number;
}

/** True if every byte of `block` is zero. */
export function isZeroBlock(block: Uint8Array): boolean {
  for (let i = 0; i < block.length; i++) if (block[i] !== 0) return false;
  return true;
}

function fieldText(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]!);
  return text;
}

/**
 * Decodes a numeric field: octal digits, optionally preceded by spaces and
 * followed by spaces or NULs, or the GNU base-256 form (first byte 0x80 for a
 * positive value, 0xff for a negative one). `undefined` for an empty field.
 */
function readNumber(
  block: Uint8Array,
  [at, len]: readonly [number, number],
  what: string,
  where: string,
): number | undefined {
  const field = block.subarray(at, at + len);
  const first = field[0]!;
  if (first === 0x80 || first === 0xff) {
    const negative = first === 0xff;
    let value = 0;
    for (let i = 1; i < len; i++) {
      value = value * 256 + (negative ? 255 - field[i]! : field[i]!);
      if (value > Number.MAX_SAFE_INTEGER) {
        throw new BundleFormatError(`Tar header ${where} has an out-of-range ${what} field`);
      }
    }
    return negative ? -(value + 1) : value;
  }
  let i = 0;
  while (i < len && field[i] === 0x20) i++;
  let value = 0;
  let digits = 0;
  while (i < len && field[i]! >= 0x30 && field[i]! <= 0x37) {
    value = value * 8 + field[i]! - 0x30;
    digits++;
    i++;
  }
  for (; i < len; i++) {
    if (field[i] !== 0 && field[i] !== 0x20) {
      throw new BundleFormatError(
        `Tar header ${where} has a non-octal ${what} field ${quote(fieldText(field))}`,
      );
    }
  }
  return digits === 0 ? undefined : value;
}

function requireNumber(
  block: Uint8Array,
  field: readonly [number, number],
  what: string,
  where: string,
): number {
  const value = readNumber(block, field, what, where);
  if (value === undefined) {
    throw new BundleFormatError(`Tar header ${where} has an empty ${what} field`);
  }
  return value;
}

/** Text of a NUL-terminated field; `undefined` if a non-NUL byte follows the terminator. */
function readString(block: Uint8Array, [at, len]: readonly [number, number]): string | undefined {
  const field = block.subarray(at, at + len);
  let end = field.indexOf(0);
  if (end < 0) end = len;
  for (let i = end; i < len; i++) if (field[i] !== 0) return undefined;
  return fieldText(field.subarray(0, end));
}

/**
 * Decodes and validates one header block found at byte `offset` of the
 * archive: checksum, magic, type (regular files only), numeric fields and the
 * name. Throws {@linkcode BundleFormatError} on anything else.
 */
export function decodeHeader(block: Uint8Array, offset: number): DecodedHeader {
  const where = `at byte offset ${offset}`;
  const stored = requireNumber(block, CHKSUM, "checksum", where);
  const sums = checksums(block);
  if (stored !== sums.unsigned && stored !== sums.signed) {
    throw new BundleFormatError(
      `Tar header ${where} has a bad checksum (stored ${stored}, computed ${sums.unsigned})`,
    );
  }
  const magic = block.subarray(MAGIC[0], MAGIC[0] + MAGIC[1]);
  const ustar = USTAR_MAGIC.every((byte, i) => magic[i] === byte);
  const gnu = !ustar && GNU_MAGIC.every((byte, i) => magic[i] === byte);
  if (!ustar && !gnu) {
    throw new BundleFormatError(
      `Tar header ${where} has the magic ${quote(fieldText(magic))}; expected a POSIX ustar header`,
    );
  }

  const rawName = readString(block, NAME);
  const rawPrefix = ustar ? readString(block, PREFIX) : "";
  const shownName = rawName === undefined || rawPrefix === undefined
    ? fieldText(block.subarray(NAME[0], NAME[0] + NAME[1]))
    : rawPrefix === ""
    ? rawName
    : `${rawPrefix}/${rawName}`;

  const type = block[TYPEFLAG]!;
  if (type !== 0x30 && type !== 0) {
    const flag = String.fromCharCode(type);
    const kind = TYPE_NAMES[flag] ?? "member of an unknown type";
    throw new BundleFormatError(
      `Tar member ${quote(shownName)} ${where} is a ${kind} (type ${
        quote(flag)
      }); only regular files are allowed`,
    );
  }

  const mode = requireNumber(block, MODE, "mode", where);
  readNumber(block, UID, "uid", where);
  readNumber(block, GID, "gid", where);
  const size = requireNumber(block, SIZE, "size", where);
  if (size < 0) throw new BundleFormatError(`Tar header ${where} has a negative size`);
  const mtime = requireNumber(block, MTIME, "mtime", where);

  if (rawName === undefined || rawPrefix === undefined) {
    throw new BundleFormatError(
      `Tar member name ${quote(shownName)} ${where} contains a NUL byte`,
    );
  }
  const problem = nameProblem(shownName);
  if (problem !== undefined) {
    throw new BundleFormatError(`Tar member name ${quote(shownName)} ${where} ${problem}`);
  }
  if (readString(block, LINKNAME) !== "") {
    throw new BundleFormatError(
      `Tar member ${quote(shownName)} ${where} is a regular file with a link name`,
    );
  }
  return { name: shownName, size, mode, mtime };
}
