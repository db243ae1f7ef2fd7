/**
 * The one rule for compressing an inline object, shared by the store and the
 * compression worker so both store byte-identical rows.
 *
 * An inline object of at least {@linkcode COMPRESS_MIN_BYTES} is DEFLATE-
 * compressed (raw DEFLATE, level 1, as git uses for loose objects) and the
 * result is kept only when it saves at least an eighth.
 *
 * @example
 * ```ts
 * import { COMPRESS_MIN_BYTES, DEFLATE_OPTIONS, packPays } from "./_pack.ts";
 * console.assert(COMPRESS_MIN_BYTES === 1024 && DEFLATE_OPTIONS.level === 1);
 * console.assert(packPays(1024, 896) && !packPays(1024, 897));
 * ```
 * @module
 */

/** Inline objects at least this large are stored DEFLATE-compressed when that pays. */
export const COMPRESS_MIN_BYTES = 1024;

/** The `node:zlib` options every compressed object is written with. */
export const DEFLATE_OPTIONS: { readonly level: 1 } = { level: 1 };

/** Whether `packed` bytes of compressed output are worth keeping for `raw` bytes of input. */
export function packPays(raw: number, packed: number): boolean {
  return packed <= raw - (raw >> 3);
}
