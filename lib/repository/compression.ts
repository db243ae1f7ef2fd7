/**
 * The one rule for compressing an inline object, shared by the store and the
 * compression worker so both store byte-identical rows.
 *
 * An inline object of at least {@linkcode COMPRESS_MIN_BYTES} is DEFLATE-
 * compressed (raw DEFLATE) and the result is kept only when it saves at least
 * an eighth. Blobs, most of a capture's bytes, use level 1 (fast, as git does
 * for loose objects); tree manifests, one per capture and much like their
 * parent's, use level 6. A blob of at least {@linkcode SAMPLE_MIN_BYTES}
 * whose first {@linkcode SAMPLE_BYTES} do not compress by an eighth is kept
 * raw without compressing the rest ({@linkcode sampleCompresses}): chunks of
 * already-compressed media, the bulk of large files, cost no DEFLATE.
 *
 * @example
 * ```ts
 * import { COMPRESS_MIN_BYTES, DEFLATE_OPTIONS, TREE_DEFLATE_OPTIONS, packPays } from "./compression.ts";
 * if (!(COMPRESS_MIN_BYTES === 1024 && DEFLATE_OPTIONS.level === 1)) throw new Error("Example failed");
 * if (!(TREE_DEFLATE_OPTIONS.level === 6)) throw new Error("Example failed");
 * if (!(packPays(1024, 896) && !packPays(1024, 897))) throw new Error("Example failed");
 * ```
 * @module
 */

/** Inline objects at least this large are stored DEFLATE-compressed when that pays. */
export const COMPRESS_MIN_BYTES = 1024;

/** The `node:zlib` options every compressed blob is written with. */
export const DEFLATE_OPTIONS: { readonly level: 1 } = { level: 1 };

/** The `node:zlib` options every compressed tree manifest is written with. */
export const TREE_DEFLATE_OPTIONS: { readonly level: 6 } = { level: 6 };

/** Blobs at least this large are sampled before they are compressed whole. */
export const SAMPLE_MIN_BYTES = 64 * 1024;

/** How many leading bytes of a large blob the sample compresses. */
export const SAMPLE_BYTES = 8 * 1024;

/**
 * Whether compressing `data` whole is worth trying: true below
 * {@linkcode SAMPLE_MIN_BYTES}, otherwise whether its first
 * {@linkcode SAMPLE_BYTES}, compressed by `deflate`, save an eighth.
 */
export function sampleCompresses(
  data: Uint8Array,
  deflate: (sample: Uint8Array) => { byteLength: number },
): boolean {
  if (data.byteLength < SAMPLE_MIN_BYTES) return true;
  return packPays(SAMPLE_BYTES, deflate(data.subarray(0, SAMPLE_BYTES)).byteLength);
}

/** Whether `packed` bytes of compressed output are worth keeping for `raw` bytes of input. */
export function packPays(raw: number, packed: number): boolean {
  return packed <= raw - (raw >> 3);
}
