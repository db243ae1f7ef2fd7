/**
 * Writing many files from the store, with inflating and hashing on a second
 * core while the main thread creates files (see `lib/repository/zlib_pool.ts`).
 *
 * Each inline blob's stored bytes go to the worker; when its plain bytes come
 * back, their SHA-256 must equal the blob id and their length its size before
 * a byte is written. Anything else (a file-backed blob, no worker, a worker
 * that failed, a digest that does not match) is written through
 * {@linkcode Store.streamBlob}, which verifies as it streams and throws the
 * integrity error. Every file is written by {@linkcode SafeWriter}.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { SafeWriter } from "./io/safe_write.ts";
 * import { FileWrites } from "./file_writes.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const blob = store.putBlob(new TextEncoder().encode("hi\n"));
 * const writer = new SafeWriter(dir);
 * const writes = new FileWrites(store, writer, 3);
 * try {
 *   writes.write({ path: "a.txt", type: "file", blob, size: 3, mode: 0o644 });
 *   writes.finish();
 * } finally {
 *   writes.close();
 *   writer.close();
 * }
 * if (!(Deno.readTextFileSync(`${dir}/a.txt`) === "hi\n")) throw new Error("Example failed");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { SafeWriter } from "./io/safe_write.ts";
import { INLINE_BLOB_MAX, type Store } from "../repository/store.ts";
import type { TreeEntry } from "../format/tree.ts";
import { ZlibPool } from "../repository/zlib_pool.ts";

/** Total bytes to write from which a worker is started. */
const POOL_FROM_BYTES = 2 * 1024 * 1024;

type FileEntry = Extract<TreeEntry, { type: "file" }>;

/** The bytes the files among `entries` small enough to be stored inline hold. */
export function totalBytes(entries: Iterable<TreeEntry>): number {
  let total = 0;
  for (const entry of entries) {
    if (entry.type === "file" && entry.size <= INLINE_BLOB_MAX) total += entry.size;
  }
  return total;
}

/** Writes tree entries through a {@linkcode SafeWriter}, pipelined where it pays. */
export class FileWrites {
  readonly #store: Store;
  readonly #writer: SafeWriter;
  readonly #pool: ZlibPool<{ entry: FileEntry; size: number }> | null;

  /**
   * `totalBytes`: the bytes of the inline blobs to be written, from
   * {@linkcode totalBytes} (decides whether to start a worker). `waitForWorkerMs`: wait that long for the worker to
   * start before writing (tests), instead of writing directly until it has.
   */
  constructor(store: Store, writer: SafeWriter, totalBytes: number, waitForWorkerMs = 0) {
    this.#store = store;
    this.#writer = writer;
    this.#pool = totalBytes >= POOL_FROM_BYTES
      ? ZlibPool.start(({ entry, size }, outcome) => {
        if (
          outcome.kind === "plain" && outcome.sha256 === entry.blob &&
          outcome.bytes.byteLength === size
        ) {
          this.#writer.writeFile(entry.path, entry.mode, (write) => write(outcome.bytes));
        } else {
          this.#direct(entry); // verifies, and throws the integrity error if the blob is damaged
        }
      })
      : null;
    if (waitForWorkerMs > 0) this.#pool?.waitReady(waitForWorkerMs);
  }

  /** Files whose blob the worker inflated or hashed. */
  get offloaded(): number {
    return this.#pool?.offloaded ?? 0;
  }

  /** Writes `entry` now, or queues its blob and writes it when the blob comes back. */
  write(entry: TreeEntry): void {
    if (entry.type === "symlink") {
      this.#writer.writeSymlink(entry.path, entry.target);
      return;
    }
    const pool = this.#pool;
    if (pool !== null && pool.ready) {
      const row = this.#store.storedInlineBlob(entry.blob);
      if (row !== null) {
        const token = { entry, size: row.size };
        const queued = row.encoding === "deflate"
          ? pool.inflate(token, row.data, row.size)
          : pool.hash(token, row.data);
        if (queued) return;
      }
    }
    this.#direct(entry);
  }

  /** Writes every queued file. */
  finish(): void {
    this.#pool?.finish();
  }

  /** Stops the worker, if one was started. */
  close(): void {
    this.#pool?.close();
  }

  #direct(entry: FileEntry): void {
    this.#writer.writeFile(
      entry.path,
      entry.mode,
      (write) => this.#store.streamBlob(entry.blob, write),
    );
  }
}
