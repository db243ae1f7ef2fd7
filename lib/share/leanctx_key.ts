/**
 * Reading a lean-ctx signing key file for `key import --lean-ctx FILE`: a
 * regular file of at most 4096 bytes holding 64 hex characters of Ed25519
 * seed (lean-ctx's `keys/ctxpkg-ed25519.key`). Reached through the lean-ctx
 * format adapter (`formats/leanctx.ts`).
 *
 * @example
 * ```ts
 * import { readLeanCtxSeedFile } from "./leanctx_key.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/k`, "1b".repeat(32), { mode: 0o600 });
 * const { seed, looseMode } = readLeanCtxSeedFile(`${dir}/k`);
 * if (seed.length !== 32 || looseMode) throw new Error("read");
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import { IntegrityError, openError, quote } from "../errors.ts";
import { parseLeanCtxSeed } from "./leanctx.ts";

const MAX_KEY_FILE_BYTES = 4096;

/** Reads and parses the seed; `looseMode` when group or others may read the file. */
export function readLeanCtxSeedFile(file: string): { seed: Uint8Array; looseMode: boolean } {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (error) {
    throw openError(file, error);
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new IntegrityError(`${quote(file)} is not a regular file`);
    if (stat.size > MAX_KEY_FILE_BYTES) {
      throw new IntegrityError(`${quote(file)} is larger than ${MAX_KEY_FILE_BYTES} bytes`);
    }
    const bytes = new Uint8Array(MAX_KEY_FILE_BYTES + 1);
    let got = 0;
    for (;;) {
      const n = fs.readSync(fd, bytes, got, bytes.length - got, got);
      if (n === 0) break;
      got += n;
      if (got > MAX_KEY_FILE_BYTES) {
        throw new IntegrityError(`${quote(file)} is larger than ${MAX_KEY_FILE_BYTES} bytes`);
      }
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(0, got));
    } catch {
      throw new IntegrityError(`${quote(file)} is not a lean-ctx signing key (not text)`);
    }
    return { seed: parseLeanCtxSeed(text), looseMode: (stat.mode & 0o077) !== 0 };
  } finally {
    fs.closeSync(fd);
  }
}
