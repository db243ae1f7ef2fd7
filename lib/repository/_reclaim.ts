/**
 * Prompt release of the transient buffers that blob reads allocate.
 *
 * `node:sqlite` returns every BLOB column as a fresh buffer, and zlib's
 * inflate returns another; both live outside the V8 heap, and V8 does not
 * collect them until its own heap fills, which a loop over 2 GiB of 256 KiB
 * chunks never makes happen (measured: a 2 GiB chunked blob read back peaked
 * at 500-700 MiB RSS). {@linkcode noteTransient} counts those bytes and,
 * every {@linkcode RECLAIM_EVERY_BYTES} (16 MiB), asks V8 for a collection, so memory
 * stays bounded by that step whatever the blob's size. Where the collector
 * cannot be reached the call is a no-op and only memory use differs.
 *
 * @example
 * ```ts
 * import { noteTransient } from "./_reclaim.ts";
 *
 * noteTransient(256 * 1024); // after taking a 256 KiB buffer from SQLite
 * ```
 * @module
 */

import v8 from "node:v8";
import vm from "node:vm";

/** Bytes of transient buffers read between two collections. */
export const RECLAIM_EVERY_BYTES = 16 * 1024 * 1024;

let pending = 0;
let collect: (() => void) | null | undefined;

/** The V8 collector, exposed once; null where it cannot be. */
function collector(): (() => void) | null {
  if (collect !== undefined) return collect;
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc") as unknown;
    collect = typeof gc === "function" ? () => (gc as () => void)() : null;
  } catch {
    collect = null;
  }
  return collect;
}

/**
 * Records that `bytes` of short-lived buffer were just allocated outside the
 * V8 heap; collects once {@linkcode RECLAIM_EVERY_BYTES} have accumulated.
 */
export function noteTransient(bytes: number): void {
  pending += bytes;
  if (pending < RECLAIM_EVERY_BYTES) return;
  pending = 0;
  collector()?.();
}
