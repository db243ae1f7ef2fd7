/**
 * Ad-hoc code signing of a 64-bit Mach-O executable, as `codesign -s -`
 * does it, for a macOS artifact whose signature the build left stale (Bun's
 * darwin-x64 output keeps its base executable's Developer ID signature, whose
 * page hashes no longer match once the bundle is added; a Node SEA is the
 * same). It replaces the SuperBlob at `LC_CODE_SIGNATURE` with: a
 * CodeDirectory (version 0x20400, SHA-256, 4 KiB pages, `CS_ADHOC`, the
 * executable segment of `__TEXT`), an empty requirements set, and an empty
 * CMS wrapper. When the new signature needs more room than the old one,
 * `LC_CODE_SIGNATURE` and `__LINKEDIT` grow (the signature is the file's
 * last bytes). `scripts/check_macho.ts` checks the result independently.
 *
 * @example
 * ```ts
 * import { adhocSign } from "./_macho_sign.ts";
 * let refused = false;
 * try {
 *   adhocSign(new Uint8Array(64), "ctxsnap");
 * } catch {
 *   refused = true;
 * }
 * if (!refused) throw new Error("signed 64 zero bytes");
 * ```
 * @module
 */
import { createHash } from "node:crypto";

const MH_MAGIC_64 = 0xfeedfacf;
const LC_SEGMENT_64 = 0x19;
const LC_CODE_SIGNATURE = 0x1d;
const PAGE_SHIFT = 12;
const PAGE = 1 << PAGE_SHIFT;
const HASH = 32;
const CD_HEADER = 88; // through execSegFlags (version 0x20400)
const SPECIAL_SLOTS = 2; // -1 Info.plist (none), -2 requirements

/**
 * Returns a copy of `input` (a thin 64-bit Mach-O executable with an
 * `LC_CODE_SIGNATURE`) signed ad hoc under `identifier`.
 */
export function adhocSign(input: Uint8Array, identifier: string): Uint8Array {
  const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
  if (input.length < 32 || view.getUint32(0, true) !== MH_MAGIC_64) {
    throw new Error("not a 64-bit little-endian Mach-O");
  }
  const ncmds = view.getUint32(16, true);
  let at = 32;
  let sigCmd = -1;
  let linkeditCmd = -1;
  let text: { fileoff: bigint; filesize: bigint } | undefined;
  for (let i = 0; i < ncmds; i++) {
    const cmd = view.getUint32(at, true);
    const size = view.getUint32(at + 4, true);
    if (cmd === LC_CODE_SIGNATURE) sigCmd = at;
    if (cmd === LC_SEGMENT_64) {
      const name = new TextDecoder().decode(input.subarray(at + 8, at + 24)).replace(/\0+$/, "");
      if (name === "__LINKEDIT") linkeditCmd = at;
      if (name === "__TEXT") {
        text = {
          fileoff: view.getBigUint64(at + 40, true),
          filesize: view.getBigUint64(at + 48, true),
        };
      }
    }
    at += size;
  }
  if (sigCmd < 0) throw new Error("no LC_CODE_SIGNATURE to replace");
  if (linkeditCmd < 0 || text === undefined) throw new Error("no __LINKEDIT or __TEXT segment");
  const dataoff = view.getUint32(sigCmd + 8, true);
  const oldSize = view.getUint32(sigCmd + 12, true);
  const linkeditOff = Number(view.getBigUint64(linkeditCmd + 40, true));
  if (dataoff + oldSize !== input.length || linkeditOff > dataoff) {
    throw new Error("the signature is not the last thing in the file and in __LINKEDIT");
  }

  const ident = new TextEncoder().encode(`${identifier}\0`);
  const nCodeSlots = Math.ceil(dataoff / PAGE);
  const hashOffset = CD_HEADER + ident.length + SPECIAL_SLOTS * HASH;
  const cdLength = hashOffset + nCodeSlots * HASH;
  const requirements = new Uint8Array(12);
  new DataView(requirements.buffer).setUint32(0, 0xfade0c01); // CSMAGIC_REQUIREMENTS
  new DataView(requirements.buffer).setUint32(4, 12); // length; count 0
  const wrapper = new Uint8Array(8);
  new DataView(wrapper.buffer).setUint32(0, 0xfade0b01); // CSMAGIC_BLOBWRAPPER, empty
  new DataView(wrapper.buffer).setUint32(4, 8);
  const indexBytes = 12 + 3 * 8;
  const superLength = indexBytes + cdLength + requirements.length + wrapper.length;
  const newSize = Math.max(oldSize, Math.ceil(superLength / 16) * 16);

  // The load commands change first: they are inside page 0, which is hashed.
  const out = new Uint8Array(dataoff + newSize);
  out.set(input.subarray(0, dataoff));
  const o = new DataView(out.buffer);
  o.setUint32(sigCmd + 12, newSize, true);
  const linkeditSize = BigInt(dataoff + newSize - linkeditOff);
  o.setBigUint64(linkeditCmd + 48, linkeditSize, true); // filesize
  const vmsize = o.getBigUint64(linkeditCmd + 32, true);
  const pageAligned = (linkeditSize + 0x3fffn) & ~0x3fffn;
  if (pageAligned > vmsize) o.setBigUint64(linkeditCmd + 32, pageAligned, true);

  // SuperBlob: index, CodeDirectory, requirements, CMS wrapper.
  const sig = new Uint8Array(newSize);
  const s = new DataView(sig.buffer);
  s.setUint32(0, 0xfade0cc0); // CSMAGIC_EMBEDDED_SIGNATURE
  s.setUint32(4, superLength);
  s.setUint32(8, 3);
  const cdAt = indexBytes;
  const reqAt = cdAt + cdLength;
  const cmsAt = reqAt + requirements.length;
  for (const [i, [type, offset]] of [[0, cdAt], [2, reqAt], [0x10000, cmsAt]].entries()) {
    s.setUint32(12 + i * 8, type!);
    s.setUint32(16 + i * 8, offset!);
  }
  s.setUint32(cdAt, 0xfade0c02); // CSMAGIC_CODEDIRECTORY
  s.setUint32(cdAt + 4, cdLength);
  s.setUint32(cdAt + 8, 0x20400); // version
  s.setUint32(cdAt + 12, 0x2); // CS_ADHOC
  s.setUint32(cdAt + 16, hashOffset);
  s.setUint32(cdAt + 20, CD_HEADER); // identOffset
  s.setUint32(cdAt + 24, SPECIAL_SLOTS);
  s.setUint32(cdAt + 28, nCodeSlots);
  s.setUint32(cdAt + 32, dataoff); // codeLimit
  s.setUint8(cdAt + 36, HASH);
  s.setUint8(cdAt + 37, 2); // CS_HASHTYPE_SHA256
  s.setUint8(cdAt + 38, 0); // platform
  s.setUint8(cdAt + 39, PAGE_SHIFT);
  // spare2, scatterOffset, teamOffset, spare3, codeLimit64: zero
  s.setBigUint64(cdAt + 64, text.fileoff); // execSegBase
  s.setBigUint64(cdAt + 72, text.filesize); // execSegLimit
  s.setBigUint64(cdAt + 80, 1n); // CS_EXECSEG_MAIN_BINARY
  sig.set(ident, cdAt + CD_HEADER);
  const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest();
  // Special slot -2: the requirements blob; -1 (Info.plist) stays zero.
  sig.set(sha256(requirements), cdAt + hashOffset - 2 * HASH);
  for (let page = 0; page < nCodeSlots; page++) {
    const start = page * PAGE;
    sig.set(
      sha256(out.subarray(start, Math.min(start + PAGE, dataoff))),
      cdAt + hashOffset + page * HASH,
    );
  }
  sig.set(requirements, reqAt);
  sig.set(wrapper, cmsAt);
  out.set(sig, dataoff);
  return out;
}
