/**
 * Compression on a second core, for captures that store many megabytes.
 *
 * A capture reads, hashes and inserts on the main thread; DEFLATE is the
 * other half of its CPU time. {@linkcode DeflatePool} hands inline blobs to
 * one worker through a ring of shared-memory slots, so the next file is read
 * while the last one is compressed. Everything stays synchronous: the main
 * thread waits (`Atomics.wait`) only when the ring is full or at the end.
 *
 * Results are byte-identical to compressing on the main thread (same
 * `node:zlib`, same options, same {@linkcode packPays} rule). Nothing depends
 * on the worker: until it is ready, after it fails, or where the runtime has
 * no `Worker`, {@linkcode DeflatePool.submit} returns false and the caller
 * compresses inline.
 *
 * @example
 * ```ts
 * import { DeflatePool } from "./_deflate_pool.ts";
 * const stored: string[] = [];
 * const pool = DeflatePool.start((job, outcome) => stored.push(`${job.id}:${typeof outcome}`));
 * if (pool !== null) {
 *   pool.waitReady(10_000);
 *   const data = new TextEncoder().encode("abc".repeat(1000));
 *   if (pool.submit({ id: "a", size: data.byteLength, data })) pool.finish();
 *   pool.close();
 *   console.assert(stored.length <= 1);
 * }
 * ```
 * @module
 */
import { COMPRESS_MIN_BYTES } from "./_pack.ts";

/** Control word: the worker has started (1). */
export const READY = 0;
/** Control word: the worker must exit (1). */
export const STOP = 1;
/** Slot state: free for the main thread to fill. */
export const FREE = 0;
/** Slot state: holds input for the worker. */
export const FULL = 1;
/** Slot state: holds the worker's outcome. */
export const DONE = 2;
/** Outcome: compression does not pay; store the bytes raw. */
export const KEEP_RAW = -1;
/** Outcome: the worker could not compress; compress on the main thread. */
export const WORKER_FAILED = -2;

/** Index of slot `slot`'s state word; its length/outcome word follows it. */
export function slotIndex(slot: number): number {
  return 2 + slot * 2;
}

/** Slots in the ring: enough to keep the worker busy while a large file is read. */
const SLOTS = 8;
/** Bytes per slot: the largest inline blob. */
const SLOT_BYTES = 1024 * 1024;
/** A slot still not done after this long means the worker is gone. */
const STALL_MS = 10_000;

/** A blob handed to the pool. */
export interface DeflateJob {
  /** Object id (SHA-256 hex of `data`). */
  id: string;
  /** Uncompressed size. */
  size: number;
  /** The bytes; the pool keeps the reference until the result is delivered. */
  data: Uint8Array;
}

/**
 * What became of a blob: its compressed bytes, `"raw"` when compression does
 * not pay, or `"unpacked"` when the worker failed and the caller must
 * compress it itself.
 */
export type DeflateOutcome = Uint8Array | "raw" | "unpacked";

/** Receives each submitted blob's outcome, in submission order. */
export type DeflateSink = (job: DeflateJob, outcome: DeflateOutcome) => void;

interface WorkerLike {
  postMessage(message: unknown): void;
  terminate(): void;
  onerror: ((event: Event) => void) | null;
}

/** One compression worker and its ring of shared-memory slots. */
export class DeflatePool {
  readonly #worker: WorkerLike;
  readonly #control: Int32Array;
  readonly #data: Uint8Array;
  readonly #sink: DeflateSink;
  readonly #pending: (DeflateJob | null)[] = new Array(SLOTS).fill(null);
  #head = 0;
  #oldest = 0;
  #broken = false;
  #closed = false;
  /** Blobs the worker compressed (or found incompressible). */
  offloaded = 0;

  private constructor(
    worker: WorkerLike,
    control: SharedArrayBuffer,
    data: SharedArrayBuffer,
    sink: DeflateSink,
  ) {
    this.#worker = worker;
    this.#control = new Int32Array(control);
    this.#data = new Uint8Array(data);
    this.#sink = sink;
  }

  /**
   * Starts the worker, or returns null where the runtime cannot (no `Worker`
   * or no shared memory). The worker boots in the background.
   */
  static start(sink: DeflateSink): DeflatePool | null {
    // deno-lint-ignore no-explicit-any
    const WorkerClass = (globalThis as any).Worker;
    if (typeof WorkerClass !== "function" || typeof SharedArrayBuffer !== "function") return null;
    try {
      const control = new SharedArrayBuffer(4 * (2 + 2 * SLOTS));
      const data = new SharedArrayBuffer(SLOTS * SLOT_BYTES);
      const worker: WorkerLike = new WorkerClass(
        new URL("./_deflate_worker.ts", import.meta.url).href,
        { type: "module" },
      );
      const pool = new DeflatePool(worker, control, data, sink);
      worker.onerror = (event: Event) => {
        event.preventDefault(); // a worker that cannot load is not the command's failure
        pool.#broken = true;
      };
      worker.postMessage({ control, data, slots: SLOTS, slotBytes: SLOT_BYTES });
      return pool;
    } catch {
      return null;
    }
  }

  /** Whether the worker is running and accepting blobs. */
  get ready(): boolean {
    return !this.#broken && !this.#closed && Atomics.load(this.#control, READY) === 1;
  }

  /** Waits up to `ms` for the worker to start; returns {@linkcode DeflatePool.ready}. */
  waitReady(ms: number): boolean {
    if (!this.ready && !this.#broken) Atomics.wait(this.#control, READY, 0, ms);
    return this.ready;
  }

  /**
   * Queues `job` for compression and returns true, or returns false (the
   * caller compresses it itself) when the worker is not ready or the blob is
   * too small or too large for a slot.
   */
  submit(job: DeflateJob): boolean {
    if (!this.ready) return false;
    const length = job.data.byteLength;
    if (length < COMPRESS_MIN_BYTES || length > SLOT_BYTES) return false;
    if (this.#pending[this.#head] !== null) this.#collect(true); // ring full: the oldest first
    if (this.#broken) return false;
    const slot = this.#head;
    this.#data.set(job.data, slot * SLOT_BYTES);
    const state = slotIndex(slot);
    Atomics.store(this.#control, state + 1, length);
    Atomics.store(this.#control, state, FULL);
    Atomics.notify(this.#control, state);
    this.#pending[slot] = job;
    this.#head = (slot + 1) % SLOTS;
    this.collectDone();
    return true;
  }

  /** Delivers every result already done, oldest first, without waiting. */
  collectDone(): void {
    while (this.#pending[this.#oldest] !== null && this.#collect(false));
  }

  /** Waits for and delivers every pending result. */
  finish(): void {
    while (this.#pending[this.#oldest] !== null) this.#collect(true);
  }

  /** Stops the worker. Pending results not yet delivered are dropped. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    Atomics.store(this.#control, STOP, 1);
    for (let slot = 0; slot < SLOTS; slot++) Atomics.notify(this.#control, slotIndex(slot));
    this.#worker.terminate();
  }

  /** Delivers the oldest pending result; with `wait`, waits for it. Returns whether it did. */
  #collect(wait: boolean): boolean {
    const slot = this.#oldest;
    const job = this.#pending[slot]!;
    const state = slotIndex(slot);
    if (Atomics.load(this.#control, state) !== DONE) {
      if (!wait) return false;
      const deadline = Date.now() + STALL_MS;
      while (Atomics.load(this.#control, state) !== DONE) {
        if (this.#broken || Date.now() >= deadline) {
          this.#broken = true; // the worker is gone: the caller's sink compresses inline
          this.#deliver(slot, job, WORKER_FAILED);
          return true;
        }
        Atomics.wait(this.#control, state, FULL, 50);
      }
    }
    this.#deliver(slot, job, Atomics.load(this.#control, state + 1));
    return true;
  }

  #deliver(slot: number, job: DeflateJob, outcome: number): void {
    this.#pending[slot] = null;
    this.#oldest = (slot + 1) % SLOTS;
    Atomics.store(this.#control, slotIndex(slot), FREE);
    if (outcome === WORKER_FAILED) {
      this.#sink(job, "unpacked");
      return;
    }
    this.offloaded += 1;
    const start = slot * SLOT_BYTES;
    this.#sink(job, outcome === KEEP_RAW ? "raw" : this.#data.slice(start, start + outcome));
  }
}
