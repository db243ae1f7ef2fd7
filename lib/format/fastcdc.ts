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
import { sha256Hex } from "../crypto/hash.ts";

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
 * single byte `i`.
 */
export const GEAR: Uint32Array = (() => {
  const table = new Uint32Array(256);
  const prefix = new TextEncoder().encode("ctxsnap-fastcdc-gear/v1");
  const input = new Uint8Array(prefix.length + 1);
  input.set(prefix);
  for (let i = 0; i < 256; i++) {
    input[prefix.length] = i;
    table[i] = parseInt(sha256Hex(input).slice(0, 8), 16) >>> 0;
  }
  return table;
})();

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
