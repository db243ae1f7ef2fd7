/**
 * Content-defined chunking of large files: FastCDC (Xia et al., USENIX ATC
 * 2016) with normalized chunking, as specified in docs/FORMAT.md 8.6 (the
 * parameters, the gear table and test vectors in `tests/vectors/fastcdc.json`).
 *
 * A boundary depends only on the bytes just before it (a 32-byte gear-hash
 * window), so an edit moves at most the boundaries next to it: changing one
 * byte of a large file changes one chunk, or two when the edit lands where a
 * boundary was, and every other chunk keeps its bytes and its id.
 *
 * {@linkcode Chunker} is streaming: it holds at most one maximum-size chunk
 * plus the piece being pushed, whatever the file's size.
 *
 * @example
 * ```ts
 * import { chunkBoundaries, FASTCDC_MAX } from "./fastcdc.ts";
 * const data = new Uint8Array(3 * FASTCDC_MAX).map((_, i) => (i * 2654435761) >>> 24);
 * const cuts = chunkBoundaries(data);
 * if (cuts.at(-1) !== data.length) throw new Error("the last boundary is the end");
 * ```
 * @module
 */

/** Smallest chunk (except a file's last): 64 KiB. */
export const FASTCDC_MIN: number = 64 * 1024;
/** Target average chunk: 256 KiB (where normalization switches masks). */
export const FASTCDC_AVG: number = 256 * 1024;
/** Largest chunk: 1 MiB (so every chunk fits inline in the index). */
export const FASTCDC_MAX: number = 1024 * 1024;
/** Mask before the average (harder to match: 20 one bits, the high ones). */
export const FASTCDC_MASK_S: number = 0xfffff000;
/** Mask after the average (easier to match: 16 one bits, the high ones). */
export const FASTCDC_MASK_L: number = 0xffff0000;

/**
 * The gear table: entry `i` is the first four bytes, big-endian, of
 * SHA-256 of the ASCII string `ctxsnap-fastcdc-gear/v1` followed by the
 * single byte `i`. Written out rather than derived at load time, which
 * took 20-40 ms of every process's start-up (256 JavaScript SHA-256 runs
 * before they are compiled); `tests/format/fastcdc_test.ts` derives it.
 */
// deno-fmt-ignore
export const GEAR: Uint32Array = Uint32Array.of(
  0x1622d0b2, 0xfd2f919b, 0xe3f69bf7, 0xe4ad6c8a, 0x06797350, 0xaf9df482,
  0x1358d336, 0xa85eff7a, 0x77a69f4e, 0xb6fd522c, 0x9cdb81b7, 0x971fbe63,
  0xcc8bc736, 0xa6bdb98d, 0xcddfa532, 0x753b8a34, 0x5160a262, 0xd2536191,
  0x036e8f07, 0xd7b96a1c, 0x42b2c857, 0x0f76c7a4, 0x8761b308, 0xbed469c7,
  0x55b7741b, 0x641195fd, 0x2b2e44c1, 0xd6face71, 0x87157967, 0xd020f964,
  0xcfa5e707, 0x75b44cf6, 0xd4b08a40, 0x412192d3, 0x097c1ded, 0x61737b01,
  0xf03dfb82, 0x6b5f1355, 0xd2523d22, 0xa6c87ccb, 0x49e726a9, 0xcb29424d,
  0x31cdbfb3, 0x646b78aa, 0xd5a069c8, 0x7faf4c93, 0x54a45d52, 0xb4993b06,
  0xf8ac2c26, 0x5483fa22, 0x5501e87c, 0x5fa1960b, 0xc1468b59, 0x5f39f563,
  0x478bf7a3, 0x7f672539, 0x3d7b27a1, 0x85a568cb, 0x2edaeb90, 0x7aa15094,
  0xc811a4a7, 0xd722655b, 0x4864e923, 0x8dd96d23, 0xa8c4b351, 0xeb31c86f,
  0x5b5376a1, 0x6104f506, 0xca09e689, 0xdc4013c1, 0x3f2814e3, 0xadc47082,
  0x663d7f84, 0x1ff5e00f, 0xbc694e96, 0xea3b868f, 0x7ce8d104, 0xbfde022f,
  0x8cf39e4d, 0xa8c1ee3b, 0xfb6b5f81, 0x2609b476, 0xc92a7cfc, 0x41a14b2a,
  0x2b40e09c, 0x68d8625e, 0x65c7012e, 0x7297afa2, 0x33230fdb, 0x9dd34588,
  0x1e6da30b, 0x78d6d060, 0xe29fd4f4, 0xfac70f33, 0x751009e1, 0x52e81383,
  0x0e3aa920, 0xddacded7, 0xf87db753, 0xd168816d, 0x8f22fc5f, 0x547be932,
  0x0cbabe33, 0x6f37186c, 0x5f8c4740, 0x682d7f01, 0xcd9168bc, 0xe1570f3c,
  0x0f88076e, 0xd8b96524, 0xed83d3d6, 0x6328ab0d, 0xcf08b341, 0x11339d40,
  0xc6150a79, 0x9f0c68b2, 0x57c0e669, 0x5aeaadc0, 0x5ec61eb7, 0xa049d67d,
  0x1b8734cc, 0xd41b8cba, 0x5457cd57, 0xaa36f4de, 0xa6760547, 0xbc636f80,
  0xd50ad28d, 0x11662a76, 0x0c5f9517, 0x2246b7a5, 0x62f6eda1, 0xb294dcf3,
  0x0e1147a8, 0x833ffe7e, 0x82768744, 0x55062ac5, 0xc9adaa72, 0x0151e983,
  0xf3e8fc4b, 0x67ad1cf2, 0x84aabcd9, 0xd850f26b, 0x613681aa, 0x6de45b1c,
  0xdbd274cc, 0x275255c9, 0x76bc915b, 0x8ec56baa, 0xafdf7139, 0xc4550e5a,
  0x30312c11, 0xc286b7af, 0xe86c2b2c, 0x3ce3ee5c, 0x64ee195d, 0xbbc3dde2,
  0x2e54ee74, 0x23378d1c, 0x6663f943, 0x0500247f, 0x4ff7bc8b, 0x79cea7da,
  0x8e128f66, 0x0e78f7ff, 0xb0c8e9a0, 0xe70b4f0c, 0x833f14a7, 0x0cf9eed5,
  0x18c16557, 0x06a9d25b, 0xf4afc646, 0x4de5a35f, 0xc7b41cc6, 0x39200eb3,
  0xe9713b39, 0x428047cc, 0x64810cf9, 0xde1b621a, 0x45798482, 0xba29af23,
  0x95bec7ff, 0x5295f19d, 0x9f0ffbfb, 0xa0d55b75, 0x1045d2e6, 0x77ceb1ea,
  0xdf195466, 0x837c5bc4, 0xcb4fcebf, 0xbe63edb1, 0x0086aa41, 0x4c0c4ccf,
  0x7094cdbc, 0x5b1569ce, 0xf0fd6e27, 0x961f6a12, 0x25e2fbbf, 0xd32afd82,
  0xe0863e38, 0x271941c5, 0x7b358167, 0x7854a301, 0x2ad2a764, 0x61084c1b,
  0x5da32b63, 0xe430eeeb, 0x597648cf, 0xfc5b96b1, 0x04abd56c, 0x038615ed,
  0x6d80d89d, 0xc7283296, 0xf0dbde9e, 0x6ba6e6df, 0xa1c7b36d, 0xba64ec46,
  0x251b3569, 0x63604b3a, 0xdb99a29f, 0x4b1e2230, 0x0cb0c2e3, 0x5268a5b7,
  0xa1f59fdd, 0x8e59bbc0, 0xab8c848c, 0x9664e17d, 0xf464c4cf, 0x70c4213d,
  0xeb023f15, 0xe40a7165, 0x8b833602, 0x7f0442ec, 0xcd46ad1a, 0x1031ef5f,
  0x8daa29d9, 0x7a99447d, 0xa10e7587, 0x9c50238a, 0x41dcbeea, 0x7cf3aa9d,
  0xddbe2987, 0xf6af1d89, 0x13d166f6, 0xbe2f3216, 0xe2950635, 0xbf23c39c,
  0x9f3f79d2, 0xe4533221, 0xa3bc7ea6, 0x8deccdca, 0x8731c9ae, 0x0ae80d97,
  0x6cfd6346, 0xae47561e, 0x54f308fd, 0x7a0028a8,
);

/**
 * The length of the first chunk of `data` (all of it when it is at most
 * {@linkcode FASTCDC_MIN} long, else at most {@linkcode FASTCDC_MAX});
 * `final` says no more bytes follow (otherwise a cut is only returned when
 * it does not depend on bytes not yet seen, and -1 means "need more").
 */
export function firstCut(data: Uint8Array, final: boolean): number {
  const n = data.length;
  if (n <= FASTCDC_MIN) return final ? n : -1;
  const end = n < FASTCDC_MAX ? n : FASTCDC_MAX;
  const normal = end < FASTCDC_AVG ? end : FASTCDC_AVG;
  let h = 0;
  let i = FASTCDC_MIN;
  for (; i < normal; i++) {
    h = ((h << 1) + GEAR[data[i]!]!) >>> 0;
    if ((h & FASTCDC_MASK_S) === 0) return i + 1;
  }
  for (; i < end; i++) {
    h = ((h << 1) + GEAR[data[i]!]!) >>> 0;
    if ((h & FASTCDC_MASK_L) === 0) return i + 1;
  }
  if (end === FASTCDC_MAX) return end;
  return final ? n : -1;
}

/** The end offset of every chunk of `data`, in order (the last is `data.length`; none for empty data). */
export function chunkBoundaries(data: Uint8Array): number[] {
  const cuts: number[] = [];
  let at = 0;
  while (at < data.length) {
    at += firstCut(data.subarray(at), true);
    cuts.push(at);
  }
  return cuts;
}

/**
 * Splits a stream into chunks as they become certain: push pieces of any
 * size, then call {@linkcode Chunker.finish}. Each chunk is handed to
 * `onChunk` as a view that is valid only during the call.
 */
export class Chunker {
  private buffer: Uint8Array = new Uint8Array(2 * FASTCDC_MAX);
  private length = 0;
  private readonly onChunk: (chunk: Uint8Array) => void;

  /** Creates a chunker that hands every chunk to `onChunk`. */
  constructor(onChunk: (chunk: Uint8Array) => void) {
    this.onChunk = onChunk;
  }

  /** Adds the next bytes of the stream. */
  push(piece: Uint8Array): void {
    let at = 0;
    while (at < piece.length) {
      const room = this.buffer.length - this.length;
      const take = Math.min(room, piece.length - at);
      this.buffer.set(piece.subarray(at, at + take), this.length);
      this.length += take;
      at += take;
      this.drain(false);
    }
  }

  /** Ends the stream: the bytes left become the last chunk(s). */
  finish(): void {
    this.drain(true);
  }

  private drain(final: boolean): void {
    let start = 0;
    for (;;) {
      const rest = this.buffer.subarray(start, this.length);
      if (rest.length === 0) break;
      // Without `final`, wait for a full window so a cut never depends on unseen bytes.
      if (!final && rest.length < FASTCDC_MAX) break;
      const cut = firstCut(rest, final);
      if (cut < 0) break;
      this.onChunk(rest.subarray(0, cut));
      start += cut;
    }
    if (start > 0) {
      this.buffer.copyWithin(0, start, this.length);
      this.length -= start;
    }
  }
}
