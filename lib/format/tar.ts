/**
 * A hardened, streaming POSIX ustar reader and writer for ctxsnap bundles.
 *
 * A bundle is a plain tar archive holding regular files only, so standard
 * tools can inspect it (`tar tvf bundle.ctxbundle`). {@linkcode TarWriter}
 * emits deterministic ustar output (mode 0644, owner 0:0, mtime 0, padded to a
 * multiple of 10240 bytes like GNU tar); the same members give the same bytes.
 *
 * {@linkcode TarReader} accepts only what such a writer (or GNU tar in ustar
 * mode) produces and refuses everything else with a
 * {@linkcode BundleFormatError}: bad checksums, magic or numeric fields, any
 * member that is not a regular file (links, devices, directories, FIFOs, pax
 * and GNU extension headers), unsafe or duplicate names, names the caller's
 * `allowName` predicate rejects, declared sizes above the limit (before any
 * data is read), too many members, truncation, non-zero padding and trailing
 * data after the end-of-archive marker. Memory stays flat: data is streamed
 * through one 1 MiB buffer unless {@linkcode TarReader.prototype.readAll} is
 * used. Errors thrown by the `readChunk` / `write` callbacks propagate
 * unchanged.
 *
 * @example
 * ```ts
 * import { TarReader, TarWriter } from "./tar.ts";
 *
 * const chunks: Uint8Array[] = [];
 * const writer = new TarWriter((chunk) => chunks.push(chunk.slice()));
 * writer.addFile("ctxsnap-bundle.json", new TextEncoder().encode("{}"));
 * const member = writer.beginFile("blobs/" + "ab".repeat(32), 3);
 * member.write(new Uint8Array([1, 2]));
 * member.write(new Uint8Array([3]));
 * member.end();
 * writer.finish();
 *
 * const archive = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
 * let at = 0;
 * for (const chunk of chunks) archive.set(chunk, (at += chunk.length) - chunk.length);
 * if (!(archive.length % 10240 === 0)) throw new Error("Example failed");
 *
 * let position = 0;
 * const reader = new TarReader((buffer) => {
 *   const n = Math.min(buffer.length, archive.length - position);
 *   buffer.set(archive.subarray(position, position + n));
 *   position += n;
 *   return n;
 * }, { allowName: (name) => name === "ctxsnap-bundle.json" || name.startsWith("blobs/") });
 *
 * const first = reader.next();
 * if (!(first?.name === "ctxsnap-bundle.json")) throw new Error("Example failed");
 * if (!(new TextDecoder().decode(reader.readAll(1024)) === "{}")) throw new Error("Example failed");
 * const second = reader.next();
 * if (!(second?.size === 3 && second.index === 1)) throw new Error("Example failed");
 * let total = 0;
 * reader.stream((chunk) => total += chunk.length);
 * if (!(total === 3)) throw new Error("Example failed");
 * if (!(reader.next() === null)) throw new Error("Example failed");
 * ```
 * @module
 */

import { readSync } from "node:fs";
import { quote } from "../errors.ts";
import {
  BLOCK,
  BundleFormatError,
  decodeHeader,
  encodeHeader,
  isZeroBlock,
  MAX_NAME_BYTES,
  nameProblem,
} from "./_tar_header.ts";

export { BundleFormatError };

/** Size of a tar block, in bytes. */
export const TAR_BLOCK = 512;

/** Hard cap on a member's declared size (64 GiB), whatever the limits say. */
export const MAX_MEMBER_BYTES: number = 64 * 1024 ** 3;

/** Default cap on the number of members of an archive read by {@linkcode TarReader}. */
const DEFAULT_MAX_MEMBERS = 10_000_000;

/** GNU tar's default record size: archives are zero-padded to a multiple of it. */
const RECORD = 20 * BLOCK;

/** Size of the reader's buffer, and so the largest chunk `stream` delivers (1 MiB). */
const BUFFER_BYTES = 1024 * 1024;

/** Most zero bytes accepted after the end-of-archive marker (1 MiB). */
const MAX_TRAILING_BYTES = 1024 * 1024;

const ZEROS = new Uint8Array(RECORD);

function padding(size: number): number {
  return (BLOCK - size % BLOCK) % BLOCK;
}

/** A streamed member opened by {@linkcode TarWriter.prototype.beginFile}. */
export interface TarFileSink {
  /** Appends data; the total must not exceed the declared size. */
  write(chunk: Uint8Array): void;
  /** Closes the member; exactly the declared size must have been written. */
  end(): void;
}

/**
 * Writes a deterministic POSIX ustar archive of regular files to a
 * synchronous sink. Names must be at most 100 bytes of printable ASCII with
 * no empty, `.` or `..` segment, no leading `/` and no backslash, and unique.
 * Sizes above 8 GiB - 1 use the GNU base-256 size encoding; sizes above
 * {@linkcode MAX_MEMBER_BYTES} are refused. Every misuse throws
 * {@linkcode BundleFormatError}.
 *
 * @example
 * ```ts
 * import { TarWriter } from "./tar.ts";
 *
 * let bytes = 0;
 * const writer = new TarWriter((chunk) => bytes += chunk.length);
 * writer.addFile("trees/" + "0".repeat(64) + ".json", new TextEncoder().encode("{}"));
 * writer.finish();
 * if (!(bytes === 10240)) throw new Error("Example failed");
 * ```
 */
export class TarWriter {
  #write: (chunk: Uint8Array) => void;
  #names = new Set<string>();
  #open = false;
  #finished = false;
  #written = 0;

  /** Creates a writer emitting to `write`, which must consume each chunk before returning. */
  constructor(write: (chunk: Uint8Array) => void) {
    this.#write = write;
  }

  #emit(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#write(chunk);
    this.#written += chunk.length;
  }

  #checkIdle(what: string): void {
    if (this.#finished) throw new BundleFormatError(`Cannot ${what}: the archive is finished`);
    if (this.#open) {
      throw new BundleFormatError(`Cannot ${what}: a streamed member is still open`);
    }
  }

  /** Adds a regular file `name` holding `data`. */
  addFile(name: string, data: Uint8Array): void {
    const sink = this.beginFile(name, data.length);
    sink.write(data);
    sink.end();
  }

  /**
   * Starts a regular file `name` of exactly `size` bytes; write the data to
   * the returned sink, then call its `end()` before adding anything else.
   */
  beginFile(name: string, size: number): TarFileSink {
    this.#checkIdle(`add ${quote(name)}`);
    const problem = nameProblem(name);
    if (problem !== undefined) {
      throw new BundleFormatError(`Cannot add member ${quote(name)}: the name ${problem}`);
    }
    if (name.length > MAX_NAME_BYTES) {
      throw new BundleFormatError(
        `Cannot add member ${quote(name)}: the name is longer than ${MAX_NAME_BYTES} bytes`,
      );
    }
    if (this.#names.has(name)) {
      throw new BundleFormatError(`Cannot add member ${quote(name)} twice`);
    }
    if (!Number.isSafeInteger(size) || size < 0 || size > MAX_MEMBER_BYTES) {
      throw new BundleFormatError(
        `Cannot add member ${quote(name)}: invalid size ${
          quote(size)
        } (at most ${MAX_MEMBER_BYTES} bytes)`,
      );
    }
    this.#emit(encodeHeader(name, size));
    this.#names.add(name);
    this.#open = true;
    let remaining = size;
    let ended = false;
    return {
      write: (chunk: Uint8Array): void => {
        if (ended) throw new BundleFormatError(`Member ${quote(name)} is already ended`);
        if (chunk.length > remaining) {
          throw new BundleFormatError(
            `Member ${quote(name)} declared ${size} bytes but more were written`,
          );
        }
        remaining -= chunk.length;
        this.#emit(chunk);
      },
      end: (): void => {
        if (ended) throw new BundleFormatError(`Member ${quote(name)} is already ended`);
        if (remaining !== 0) {
          throw new BundleFormatError(
            `Member ${quote(name)} declared ${size} bytes but only ${
              size - remaining
            } were written`,
          );
        }
        ended = true;
        this.#emit(ZEROS.subarray(0, padding(size)));
        this.#open = false;
      },
    };
  }

  /** Ends the archive: two zero blocks, then zero padding to a multiple of 10240 bytes. */
  finish(): void {
    this.#checkIdle("finish the archive");
    this.#finished = true;
    const end = this.#written + 2 * BLOCK;
    this.#emit(ZEROS.subarray(0, 2 * BLOCK));
    let pad = (RECORD - end % RECORD) % RECORD;
    while (pad > 0) {
      const n = Math.min(pad, ZEROS.length);
      this.#emit(ZEROS.subarray(0, n));
      pad -= n;
    }
  }
}

/** Limits enforced by {@linkcode TarReader}. */
export interface TarLimits {
  /** Largest declared member size accepted; capped at {@linkcode MAX_MEMBER_BYTES} (the default). */
  maxMemberBytes?: number;
  /** Most members accepted (default 10 million). */
  maxMembers?: number;
  /** Decides which (already safe) member names are acceptable; default: all. */
  allowName?: (name: string) => boolean;
}

/** A member header returned by {@linkcode TarReader.prototype.next}. */
export interface TarMember {
  /** Member name: a safe relative POSIX path accepted by `allowName`. */
  name: string;
  /** Data size in bytes. */
  size: number;
  /** Permission bits from the header. */
  mode: number;
  /** Modification time from the header, in seconds since the epoch. */
  mtime: number;
  /** Position of the member in the archive, from 0. */
  index: number;
}

type State = "header" | "data" | "done" | "failed";

/**
 * Reads a tar archive strictly and in a streaming fashion from `readChunk`
 * (which fills the start of a buffer like `fs.readSync` and returns the byte
 * count, 0 at the end). Call {@linkcode TarReader.prototype.next} for each
 * member, then exactly one of `stream`, `readAll` or `skip` for its data.
 * Every problem with the archive is a {@linkcode BundleFormatError}; after
 * one, the reader keeps throwing it.
 *
 * @example
 * ```ts
 * import { BundleFormatError, TarReader } from "./tar.ts";
 *
 * const junk = new Uint8Array(1024).fill(7);
 * let done = false;
 * const reader = new TarReader((buffer) => {
 *   if (done) return 0;
 *   done = true;
 *   buffer.set(junk);
 *   return junk.length;
 * });
 * let error: unknown;
 * try {
 *   reader.next();
 * } catch (e) {
 *   error = e;
 * }
 * if (!(error instanceof BundleFormatError)) throw new Error("Example failed");
 * ```
 */
export class TarReader {
  #readChunk: (buffer: Uint8Array) => number;
  #maxMemberBytes: number;
  #maxMembers: number;
  #allowName: (name: string) => boolean;
  #buffer = new Uint8Array(BUFFER_BYTES);
  #start = 0;
  #end = 0;
  #eof = false;
  /** Archive offset of `#buffer[#start]`. */
  #offset = 0;
  #state: State = "header";
  #error: unknown;
  #names = new Set<string>();
  #count = 0;
  #current: TarMember | null = null;

  /** Creates a reader over `readChunk`, enforcing `limits`. */
  constructor(readChunk: (buffer: Uint8Array) => number, limits: TarLimits = {}) {
    const maxMemberBytes = limits.maxMemberBytes ?? MAX_MEMBER_BYTES;
    const maxMembers = limits.maxMembers ?? DEFAULT_MAX_MEMBERS;
    if (!Number.isSafeInteger(maxMemberBytes) || maxMemberBytes < 0) {
      throw new RangeError(`Invalid maxMemberBytes ${quote(maxMemberBytes)}`);
    }
    if (!Number.isSafeInteger(maxMembers) || maxMembers < 0) {
      throw new RangeError(`Invalid maxMembers ${quote(maxMembers)}`);
    }
    this.#readChunk = readChunk;
    this.#maxMemberBytes = Math.min(maxMemberBytes, MAX_MEMBER_BYTES);
    this.#maxMembers = maxMembers;
    this.#allowName = limits.allowName ?? (() => true);
  }

  /** Bytes buffered and not yet consumed. */
  get #available(): number {
    return this.#end - this.#start;
  }

  /** Reads more input into the buffer; false at the end of the input. */
  #refill(): boolean {
    if (this.#eof) return false;
    if (this.#start === this.#end) {
      this.#start = this.#end = 0;
    } else if (this.#end === this.#buffer.length) {
      this.#buffer.copyWithin(0, this.#start, this.#end);
      this.#end -= this.#start;
      this.#start = 0;
    }
    const room = this.#buffer.subarray(this.#end);
    const n = this.#readChunk(room);
    if (!Number.isSafeInteger(n) || n < 0 || n > room.length) {
      throw new RangeError(`readChunk returned an invalid byte count ${quote(n)}`);
    }
    if (n === 0) {
      this.#eof = true;
      return false;
    }
    this.#end += n;
    return true;
  }

  /** Ensures `n` (<= buffer size) bytes are buffered; false if the input ends first. */
  #fill(n: number): boolean {
    while (this.#available < n) if (!this.#refill()) return false;
    return true;
  }

  #consume(n: number): void {
    this.#start += n;
    this.#offset += n;
  }

  #guard<T>(fn: () => T): T {
    if (this.#state === "failed") throw this.#error;
    try {
      return fn();
    } catch (error) {
      this.#state = "failed";
      this.#error = error;
      throw error;
    }
  }

  #truncated(where: string): BundleFormatError {
    return new BundleFormatError(
      `Tar archive is truncated ${where} (at byte offset ${this.#offset + this.#available})`,
    );
  }

  /**
   * Reads the next member header, or returns `null` at the proper end of the
   * archive (after checking that only zero padding follows the end marker).
   */
  next(): TarMember | null {
    return this.#guard(() => {
      if (this.#state === "done") return null;
      if (this.#state === "data") {
        throw new BundleFormatError(
          `Tar member ${quote(this.#current?.name)} was neither read nor skipped`,
        );
      }
      const at = this.#offset;
      if (!this.#fill(BLOCK)) {
        throw this.#truncated(
          this.#available === 0 ? "before the end-of-archive marker" : "inside a header",
        );
      }
      const block = this.#buffer.subarray(this.#start, this.#start + BLOCK);
      if (isZeroBlock(block)) {
        this.#consume(BLOCK);
        this.#finishArchive(at);
        return null;
      }
      const header = decodeHeader(block, at);
      if (this.#names.has(header.name)) {
        throw new BundleFormatError(
          `Tar member name ${quote(header.name)} at byte offset ${at} is a duplicate`,
        );
      }
      if (!this.#allowName(header.name)) {
        throw new BundleFormatError(
          `Tar member name ${quote(header.name)} at byte offset ${at} is not allowed in a bundle`,
        );
      }
      if (header.size > this.#maxMemberBytes) {
        throw new BundleFormatError(
          `Tar member ${
            quote(header.name)
          } declares ${header.size} bytes, more than the limit of ${this.#maxMemberBytes}`,
        );
      }
      if (this.#count >= this.#maxMembers) {
        throw new BundleFormatError(
          `Tar archive has more than ${this.#maxMembers} members`,
        );
      }
      this.#consume(BLOCK);
      this.#names.add(header.name);
      const member: TarMember = { ...header, index: this.#count++ };
      this.#current = member;
      this.#state = "data";
      return { ...member };
    });
  }

  /** Checks the second zero block and that at most 1 MiB of zero bytes follows. */
  #finishArchive(first: number): void {
    if (!this.#fill(BLOCK)) throw this.#truncated("inside the end-of-archive marker");
    if (!isZeroBlock(this.#buffer.subarray(this.#start, this.#start + BLOCK))) {
      throw new BundleFormatError(
        `Tar archive has a lone zero block at byte offset ${first} followed by a non-zero block`,
      );
    }
    this.#consume(BLOCK);
    let trailing = 0;
    for (;;) {
      if (this.#available === 0 && !this.#refill()) break;
      const chunk = this.#buffer.subarray(this.#start, this.#end);
      const nonZero = chunk.findIndex((byte) => byte !== 0);
      if (nonZero >= 0) {
        throw new BundleFormatError(
          `Tar archive has trailing data after the end of the archive (at byte offset ${
            this.#offset + nonZero
          })`,
        );
      }
      trailing += chunk.length;
      this.#consume(chunk.length);
      if (trailing > MAX_TRAILING_BYTES) {
        throw new BundleFormatError(
          `Tar archive has more than ${MAX_TRAILING_BYTES} bytes of padding after the end of the archive`,
        );
      }
    }
    this.#state = "done";
    this.#current = null;
  }

  #member(what: string): TarMember {
    if (this.#state !== "data" || this.#current === null) {
      throw new BundleFormatError(`Cannot ${what}: there is no current tar member`);
    }
    return this.#current;
  }

  /** Passes the current member's data to `onChunk` and consumes its padding. */
  #pump(member: TarMember, onChunk: (chunk: Uint8Array) => void): void {
    let remaining = member.size;
    while (remaining > 0) {
      if (this.#available === 0 && !this.#refill()) {
        throw this.#truncated(`inside the data of member ${quote(member.name)}`);
      }
      const n = Math.min(this.#available, remaining);
      const chunk = this.#buffer.subarray(this.#start, this.#start + n);
      this.#consume(n);
      remaining -= n;
      onChunk(chunk);
    }
    let pad = padding(member.size);
    while (pad > 0) {
      if (this.#available === 0 && !this.#refill()) {
        throw this.#truncated(`inside the padding of member ${quote(member.name)}`);
      }
      const n = Math.min(this.#available, pad);
      const bytes = this.#buffer.subarray(this.#start, this.#start + n);
      if (!isZeroBlock(bytes)) {
        throw new BundleFormatError(
          `Tar member ${quote(member.name)} has non-zero padding (at byte offset ${this.#offset})`,
        );
      }
      this.#consume(n);
      pad -= n;
    }
    this.#current = null;
    this.#state = "header";
  }

  /**
   * Streams the current member's data to `onChunk` in chunks of at most
   * 1 MiB; each view is valid only during the callback.
   */
  stream(onChunk: (chunk: Uint8Array) => void): void {
    this.#guard(() => this.#pump(this.#member("stream member data"), onChunk));
  }

  /** Reads the current member's data into memory, refusing if it is larger than `max` bytes. */
  readAll(max: number): Uint8Array {
    return this.#guard(() => {
      const member = this.#member("read member data");
      if (member.size > max) {
        throw new BundleFormatError(
          `Tar member ${quote(member.name)} has ${member.size} bytes, more than the ${max} allowed`,
        );
      }
      // Grow as data arrives: a tiny truncated file declaring a huge member
      // must not reserve the declared size up front.
      let data = new Uint8Array(Math.min(member.size, 1024 * 1024));
      let at = 0;
      this.#pump(member, (chunk) => {
        if (at + chunk.length > data.length) {
          const grown = new Uint8Array(
            Math.min(member.size, Math.max(data.length * 2, at + chunk.length)),
          );
          grown.set(data.subarray(0, at));
          data = grown;
        }
        data.set(chunk, at);
        at += chunk.length;
      });
      return at === data.length ? data : data.slice(0, at);
    });
  }

  /** Skips the current member's data. */
  skip(): void {
    this.#guard(() => this.#pump(this.#member("skip member data"), () => {}));
  }
}

/**
 * A `readChunk` for {@linkcode TarReader} over the file descriptor `fd`
 * (sequential reads with `node:fs` `readSync`), retrying `EAGAIN` and
 * treating `EOF` errors as the end of input.
 *
 * @example
 * ```ts
 * import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { join } from "node:path";
 * import { fdReader } from "./tar.ts";
 *
 * const dir = mkdtempSync(join(tmpdir(), "ctxsnap-doc-"));
 * writeFileSync(join(dir, "f"), "abc");
 * const fd = openSync(join(dir, "f"), "r");
 * const read = fdReader(fd);
 * const buffer = new Uint8Array(8);
 * if (!(read(buffer) === 3 && read(buffer) === 0)) throw new Error("Example failed");
 * closeSync(fd);
 * rmSync(dir, { recursive: true });
 * ```
 */
export function fdReader(fd: number): (buffer: Uint8Array) => number {
  let waiter: Int32Array | undefined;
  return (buffer: Uint8Array): number => {
    for (;;) {
      try {
        return readSync(fd, buffer, 0, buffer.length, null);
      } catch (error) {
        const code = (error as { code?: unknown } | null)?.code;
        if (code === "EOF") return 0;
        if (code !== "EAGAIN") throw error;
        // Non-blocking descriptor with no data yet: back off briefly, then retry.
        waiter ??= new Int32Array(new SharedArrayBuffer(4));
        Atomics.wait(waiter, 0, 0, 2);
      }
    }
  };
}
