/**
 * A staging file for `pull`: verified objects are appended to one temporary
 * file in the store's `tmp/` while downloading (no lock held), then read back
 * by position when they land in one transaction. The file is read through
 * the descriptor it was created with, still open, so a concurrent `gc`
 * sweeping `tmp/` can remove the name but never the data.
 *
 * @module
 */
import * as fs from "node:fs";
import type { Store } from "../repository/store.ts";
import { writeAllSync } from "../workspace/io/fd.ts";

/** Where staged bytes are. */
export interface SpoolRange {
  /** Byte offset in the spool. */
  offset: number;
  /** Length in bytes. */
  length: number;
}

/** An append-only staging file. */
export class Spool {
  private readonly path: string;
  private readonly fd: number;
  private size = 0;

  /** Creates the file in `store`'s `tmp/`. */
  constructor(store: Store) {
    this.path = store.tempPath();
    this.fd = fs.openSync(
      this.path,
      fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_RDWR | fs.constants.O_NOFOLLOW,
      0o600,
    );
  }

  /** Appends `bytes`; returns where they are. */
  append(bytes: Uint8Array): SpoolRange {
    const offset = this.size;
    writeAllSync(this.fd, bytes, offset);
    this.size += bytes.byteLength;
    return { offset, length: bytes.byteLength };
  }

  /**
   * Reserves `capacity` bytes for a streamed write and returns a writer into
   * them; `end()` returns the range written. Appends made meanwhile (other
   * downloads) go after the reservation, so concurrent writers never overlap.
   */
  reserve(capacity: number): { write(chunk: Uint8Array): void; end(): SpoolRange } {
    const offset = this.size;
    this.size += capacity;
    let length = 0;
    return {
      write: (chunk) => {
        if (length + chunk.byteLength > capacity) {
          throw new Error("A streamed object is larger than its reservation");
        }
        writeAllSync(this.fd, chunk, offset + length);
        length += chunk.byteLength;
      },
      end: () => ({ offset, length }),
    };
  }

  /** Reads a staged range back. */
  read(range: SpoolRange): Uint8Array {
    const out = new Uint8Array(range.length);
    let done = 0;
    while (done < range.length) {
      const n = fs.readSync(this.fd, out, done, range.length - done, range.offset + done);
      if (n === 0) throw new Error("The pull staging file ended early");
      done += n;
    }
    return out;
  }

  /** Copies a staged range into the open file `fd` (from its start), in 1 MiB steps. */
  copyTo(range: SpoolRange, fd: number): void {
    const buffer = new Uint8Array(Math.min(range.length, 1024 * 1024) || 1);
    let done = 0;
    while (done < range.length) {
      const want = Math.min(buffer.byteLength, range.length - done);
      const n = fs.readSync(this.fd, buffer, 0, want, range.offset + done);
      if (n === 0) throw new Error("The pull staging file ended early");
      writeAllSync(fd, buffer.subarray(0, n));
      done += n;
    }
  }

  /** Closes and removes the file. */
  close(): void {
    try {
      fs.closeSync(this.fd);
    } finally {
      fs.rmSync(this.path, { force: true });
    }
  }
}
