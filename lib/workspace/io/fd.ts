/**
 * File-descriptor I/O shared by every layer that writes through a descriptor:
 * the one full-write loop (a `write` may take fewer bytes than offered, and a
 * non-blocking pipe may answer `EAGAIN`).
 *
 * @example
 * ```ts
 * import { closeSync, openSync, readFileSync } from "node:fs";
 * import { writeAllSync } from "./fd.ts";
 * const dir = Deno.makeTempDirSync();
 * const fd = openSync(`${dir}/a.txt`, "w");
 * writeAllSync(fd, new TextEncoder().encode("hello world"));
 * writeAllSync(fd, new TextEncoder().encode("W"), 6); // at a position
 * closeSync(fd);
 * if (readFileSync(`${dir}/a.txt`, "utf8") !== "hello World") throw new Error("not written");
 * Deno.removeSync(dir, { recursive: true });
 * ```
 * @module
 */
import { writeSync } from "node:fs";
import { errnoOf } from "../../errors.ts";

/**
 * Writes all of `bytes` to `fd`: at the descriptor's offset, or at
 * `position` (a positioned write that leaves the offset alone). Retries short
 * writes and `EAGAIN`; any other error is thrown as `node:fs` raised it.
 */
export function writeAllSync(fd: number, bytes: Uint8Array, position?: number): void {
  let done = 0;
  while (done < bytes.byteLength) {
    try {
      done += position === undefined
        ? writeSync(fd, bytes, done, bytes.byteLength - done)
        : writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
    } catch (error) {
      if (errnoOf(error) === "EAGAIN") continue;
      throw error;
    }
  }
}
