// deno-lint-ignore-file no-console
/**
 * An independent check of a macOS executable's structure and ad-hoc code
 * signature, written from Apple's published layout (`<mach-o/loader.h>`,
 * `<Kernel/kern/cs_blobs.h>`) and sharing no code with the tool that signed
 * it: Mach-O 64-bit magic, `MH_EXECUTE`, the CPU type, an
 * `LC_CODE_SIGNATURE` at the very end of `__LINKEDIT` and of the file, the
 * SuperBlob and every CodeDirectory in it (SHA-256, ad hoc), every page hash
 * recomputed over the file, and every special slot (requirements,
 * entitlements) recomputed over its blob. Nothing here runs the binary.
 *
 *     deno run --allow-read scripts/check_macho.ts FILE arm64|x86_64 [FILE ARCH]...
 *
 * Prints one line per file; exits 0 only if every file passes.
 *
 * @example
 * ```ts
 * import { checkMachO } from "./check_macho.ts";
 * let refused = false;
 * try {
 *   checkMachO(new Uint8Array(64), "arm64");
 * } catch {
 *   refused = true;
 * }
 * if (!refused) throw new Error("64 zero bytes passed as a Mach-O");
 * ```
 * @module
 */
import { createHash } from "node:crypto";

const MH_MAGIC_64 = 0xfeedfacf;
const MH_EXECUTE = 2;
const LC_SEGMENT_64 = 0x19;
const LC_CODE_SIGNATURE = 0x1d;
/** `CPU_TYPE_ARM64` and `CPU_TYPE_X86_64` (CPU_ARCH_ABI64 | base type). */
const CPU_TYPES = { arm64: 0x0100000c, x86_64: 0x01000007 } as const;

const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const CSMAGIC_REQUIREMENTS = 0xfade0c01;
const CSMAGIC_BLOBWRAPPER = 0xfade0b01;
const CSSLOT_CODEDIRECTORY = 0;
const CSSLOT_ALTERNATE_CODEDIRECTORIES = 0x1000;
const CSSLOT_SIGNATURESLOT = 0x10000;
const CS_ADHOC = 0x2;
const CS_HASHTYPE_SHA256 = 2;

/** A CPU architecture a macOS artifact is built for. */
export type Arch = keyof typeof CPU_TYPES;

/** What {@linkcode checkMachO} found in a file that passed. */
export interface MachOReport {
  /** The CPU type checked. */
  arch: Arch;
  /** The CodeDirectory's identifier string. */
  identifier: string;
  /** CodeDirectory flags (`CS_ADHOC` = 0x2, `CS_LINKER_SIGNED` = 0x20000, …). */
  flags: number;
  /** Code pages whose SHA-256 was recomputed and matched. */
  pages: number;
  /** Page size in bytes. */
  pageSize: number;
  /** Bytes covered by the page hashes (everything before the signature). */
  codeLimit: number;
  /** Special slots (negative indices) recomputed and matched. */
  specialSlots: number[];
  /** Size of the whole signature (the SuperBlob). */
  signatureBytes: number;
}

/** The file is not a valid ad-hoc signed Mach-O of the expected architecture. */
export class MachOError extends Error {}

function fail(message: string): never {
  throw new MachOError(message);
}

function sha256(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(bytes).digest());
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function hex(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A bounds-checked view: every read outside `bytes` is a {@linkcode MachOError}. */
class Reader {
  readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  #need(offset: number, size: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + size > this.bytes.length) {
      fail(`read of ${size} bytes at offset ${offset} is outside the file`);
    }
  }
  u8(offset: number): number {
    this.#need(offset, 1);
    return this.view.getUint8(offset);
  }
  u32le(offset: number): number {
    this.#need(offset, 4);
    return this.view.getUint32(offset, true);
  }
  u64le(offset: number): number {
    this.#need(offset, 8);
    const n = this.view.getBigUint64(offset, true);
    if (n > BigInt(Number.MAX_SAFE_INTEGER)) fail(`64-bit field at ${offset} is too large`);
    return Number(n);
  }
  u32be(offset: number): number {
    this.#need(offset, 4);
    return this.view.getUint32(offset, false);
  }
  u64be(offset: number): number {
    this.#need(offset, 8);
    const n = this.view.getBigUint64(offset, false);
    if (n > BigInt(Number.MAX_SAFE_INTEGER)) fail(`64-bit field at ${offset} is too large`);
    return Number(n);
  }
  slice(offset: number, size: number): Uint8Array {
    this.#need(offset, size);
    return this.bytes.subarray(offset, offset + size);
  }
  cstring(offset: number, limit: number): string {
    const end = this.bytes.subarray(offset, limit).indexOf(0);
    if (end < 0) fail(`unterminated string at ${offset}`);
    return new TextDecoder("utf-8", { fatal: true }).decode(this.slice(offset, end));
  }
}

interface Segment {
  name: string;
  fileoff: number;
  filesize: number;
}

/** Parses one CodeDirectory at `at` (file offset) and checks every hash in it. */
function checkCodeDirectory(
  r: Reader,
  at: number,
  blobs: Map<number, { offset: number; length: number }>,
  signatureOffset: number,
  textSegment: Segment | undefined,
): Omit<MachOReport, "arch" | "signatureBytes"> {
  if (r.u32be(at) !== CSMAGIC_CODEDIRECTORY) fail("slot 0 does not hold a CodeDirectory");
  const length = r.u32be(at + 4);
  const version = r.u32be(at + 8);
  const flags = r.u32be(at + 12);
  const hashOffset = r.u32be(at + 16);
  const identOffset = r.u32be(at + 20);
  const nSpecialSlots = r.u32be(at + 24);
  const nCodeSlots = r.u32be(at + 28);
  let codeLimit = r.u32be(at + 32);
  const hashSize = r.u8(at + 36);
  const hashType = r.u8(at + 37);
  const pageShift = r.u8(at + 39);
  if (version >= 0x20300) {
    const codeLimit64 = r.u64be(at + 56);
    if (codeLimit64 !== 0) codeLimit = codeLimit64;
  }
  const end = at + length;
  if (length < 44 || end > r.bytes.length) fail(`CodeDirectory length ${length} is out of range`);
  if (hashType !== CS_HASHTYPE_SHA256 || hashSize !== 32) {
    fail(`CodeDirectory hash type ${hashType} (size ${hashSize}); expected SHA-256`);
  }
  if ((flags & CS_ADHOC) === 0) fail(`CodeDirectory flags 0x${flags.toString(16)} lack CS_ADHOC`);
  if (pageShift < 12 || pageShift > 16) fail(`page size 2^${pageShift} is not 4 KiB to 64 KiB`);
  const pageSize = 2 ** pageShift;
  if (codeLimit !== signatureOffset) {
    fail(`code limit ${codeLimit} is not the signature's offset ${signatureOffset}`);
  }
  if (nCodeSlots !== Math.ceil(codeLimit / pageSize)) {
    fail(`${nCodeSlots} code slots for ${codeLimit} bytes in ${pageSize}-byte pages`);
  }
  if (hashOffset < nSpecialSlots * hashSize || hashOffset + nCodeSlots * hashSize > length) {
    fail("hash slots lie outside the CodeDirectory");
  }
  if (identOffset >= length) fail("identifier lies outside the CodeDirectory");
  const identifier = r.cstring(at + identOffset, end);
  if (version >= 0x20400 && textSegment !== undefined) {
    const execSegBase = r.u64be(at + 64);
    const execSegLimit = r.u64be(at + 72);
    if (execSegBase !== textSegment.fileoff || execSegLimit !== textSegment.filesize) {
      fail(
        `executable segment ${execSegBase}+${execSegLimit} is not __TEXT ` +
          `${textSegment.fileoff}+${textSegment.filesize}`,
      );
    }
  }

  // Every code page, recomputed.
  for (let page = 0; page < nCodeSlots; page++) {
    const start = page * pageSize;
    const stop = Math.min(start + pageSize, codeLimit);
    const want = r.slice(at + hashOffset + page * hashSize, hashSize);
    const got = sha256(r.slice(start, stop - start));
    if (!equal(want, got)) {
      fail(`page ${page} (bytes ${start}..${stop}) hashes to ${hex(got)}, signed ${hex(want)}`);
    }
  }

  // Special slots: -1 Info.plist, -2 requirements, -3 resources, -4 app-specific,
  // -5 entitlements, -7 DER entitlements. A bare executable has no Info.plist
  // or resources; a slot with a blob must hash to it, one without must be zero.
  const specialSlots: number[] = [];
  for (let slot = 1; slot <= nSpecialSlots; slot++) {
    const want = r.slice(at + hashOffset - slot * hashSize, hashSize);
    const zero = want.every((b) => b === 0);
    const blob = blobs.get(slot);
    if (blob === undefined) {
      if (!zero) fail(`special slot -${slot} holds a hash but the signature has no such blob`);
      continue;
    }
    const got = sha256(r.slice(blob.offset, blob.length));
    if (!equal(want, got)) fail(`special slot -${slot} does not match its blob`);
    specialSlots.push(-slot);
  }
  return { identifier, flags, pages: nCodeSlots, pageSize, codeLimit, specialSlots };
}

/**
 * Checks that `bytes` is a 64-bit Mach-O executable for `arch` carrying a
 * valid ad-hoc code signature; throws {@linkcode MachOError} saying what is
 * wrong otherwise.
 */
export function checkMachO(bytes: Uint8Array, arch: Arch): MachOReport {
  const r = new Reader(bytes);
  if (bytes.length < 32 || r.u32le(0) !== MH_MAGIC_64) {
    fail("not a 64-bit little-endian Mach-O (magic 0xfeedfacf)");
  }
  const cputype = r.u32le(4);
  if (cputype !== CPU_TYPES[arch]) {
    fail(
      `CPU type 0x${cputype.toString(16)}, expected ${arch} (0x${CPU_TYPES[arch].toString(16)})`,
    );
  }
  if (r.u32le(12) !== MH_EXECUTE) fail(`file type ${r.u32le(12)} is not MH_EXECUTE`);
  const ncmds = r.u32le(16);
  const sizeofcmds = r.u32le(20);
  if (32 + sizeofcmds > bytes.length) fail("load commands run past the end of the file");

  const segments: Segment[] = [];
  let signature: { offset: number; size: number } | undefined;
  let at = 32;
  for (let i = 0; i < ncmds; i++) {
    const cmd = r.u32le(at);
    const cmdsize = r.u32le(at + 4);
    if (cmdsize < 8 || at + cmdsize > 32 + sizeofcmds) {
      fail(`load command ${i} has size ${cmdsize}`);
    }
    if (cmd === LC_SEGMENT_64) {
      const raw = r.slice(at + 8, 16);
      const nul = raw.indexOf(0);
      segments.push({
        name: new TextDecoder().decode(raw.subarray(0, nul < 0 ? 16 : nul)),
        fileoff: r.u64le(at + 40),
        filesize: r.u64le(at + 48),
      });
    } else if (cmd === LC_CODE_SIGNATURE) {
      if (signature !== undefined) fail("two LC_CODE_SIGNATURE commands");
      signature = { offset: r.u32le(at + 8), size: r.u32le(at + 12) };
    }
    at += cmdsize;
  }
  if (signature === undefined) fail("no LC_CODE_SIGNATURE: the file is not signed");
  const linkedit = segments.find((s) => s.name === "__LINKEDIT");
  if (linkedit === undefined) fail("no __LINKEDIT segment");
  const sigEnd = signature.offset + signature.size;
  if (signature.offset < linkedit.fileoff || sigEnd > linkedit.fileoff + linkedit.filesize) {
    fail("the signature lies outside __LINKEDIT");
  }
  if (linkedit.fileoff + linkedit.filesize !== bytes.length) {
    fail(
      `__LINKEDIT ends at ${linkedit.fileoff + linkedit.filesize}, the file at ${bytes.length}`,
    );
  }
  for (const s of segments) {
    if (s.fileoff + s.filesize > bytes.length) fail(`segment ${s.name} runs past the file`);
  }

  // The SuperBlob (big-endian, like every code-signing structure).
  const base = signature.offset;
  if (r.u32be(base) !== CSMAGIC_EMBEDDED_SIGNATURE) fail("the signature is not a SuperBlob");
  const superLength = r.u32be(base + 4);
  const count = r.u32be(base + 8);
  if (superLength > signature.size || superLength < 12 + count * 8) {
    fail(`SuperBlob length ${superLength} does not fit ${signature.size} bytes and ${count} blobs`);
  }
  const blobs = new Map<number, { offset: number; length: number }>();
  const directories: number[] = [];
  let cms: { offset: number; length: number } | undefined;
  for (let i = 0; i < count; i++) {
    const type = r.u32be(base + 12 + i * 8);
    const offset = r.u32be(base + 16 + i * 8);
    if (offset + 8 > superLength) fail(`blob ${i} lies outside the SuperBlob`);
    const length = r.u32be(base + offset + 4);
    if (length < 8 || offset + length > superLength) fail(`blob ${i} has length ${length}`);
    const entry = { offset: base + offset, length };
    if (
      type === CSSLOT_CODEDIRECTORY || (type >= CSSLOT_ALTERNATE_CODEDIRECTORIES && type < 0x1005)
    ) {
      directories.push(base + offset);
    } else if (type === CSSLOT_SIGNATURESLOT) {
      cms = entry;
    } else {
      if (type === 2 && r.u32be(entry.offset) !== CSMAGIC_REQUIREMENTS) {
        fail("slot 2 does not hold a requirements blob");
      }
      blobs.set(type, entry);
    }
  }
  if (directories.length === 0) fail("the signature has no CodeDirectory");
  // Ad hoc: no CMS signature, or an empty wrapper.
  if (cms !== undefined && (r.u32be(cms.offset) !== CSMAGIC_BLOBWRAPPER || cms.length !== 8)) {
    fail("the signature carries a CMS blob: not an ad-hoc signature");
  }
  const text = segments.find((s) => s.name === "__TEXT");
  let report: Omit<MachOReport, "arch" | "signatureBytes"> | undefined;
  for (const directory of directories) {
    const result = checkCodeDirectory(r, directory, blobs, signature.offset, text);
    report ??= result;
  }
  return { arch, signatureBytes: superLength, ...report! };
}

if (import.meta.main) {
  const args = Deno.args;
  if (args.length === 0 || args.length % 2 !== 0) {
    console.error("usage: check_macho.ts FILE arm64|x86_64 [FILE ARCH]...");
    Deno.exit(2);
  }
  let failed = 0;
  for (let i = 0; i < args.length; i += 2) {
    const [file, arch] = [args[i]!, args[i + 1]!];
    if (arch !== "arm64" && arch !== "x86_64") {
      console.error(`check_macho: unknown architecture ${arch}`);
      Deno.exit(2);
    }
    try {
      const report = checkMachO(await Deno.readFile(file), arch);
      console.log(
        `ok    ${file}: Mach-O ${arch}, ad-hoc signature of ${JSON.stringify(report.identifier)} ` +
          `(flags 0x${report.flags.toString(16)}), ${report.pages} pages of ${report.pageSize} ` +
          `bytes and special slots [${report.specialSlots.join(", ")}] recomputed`,
      );
    } catch (error) {
      failed++;
      console.log(`FAIL  ${file}: ${(error as Error).message}`);
    }
  }
  Deno.exit(failed === 0 ? 0 : 1);
}
