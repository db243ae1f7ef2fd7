/**
 * Compression, decompression and hashing on a second core.
 *
 * A capture reads, hashes and inserts on the main thread; DEFLATE is the
 * other half of its CPU time. A restore creates files on the main thread;
 * inflating and hashing blobs is the other half of its. {@linkcode ZlibPool}
 * hands such blobs to one worker through a ring of shared-memory slots, so
 * the main thread reads or writes the next file meanwhile. Everything stays
 * synchronous: the main thread waits (`Atomics.wait`) only when the ring is
 * full or at the end.
 *
 * Results are byte-identical to doing the work on the main thread (same
 * `node:zlib`, same options, same {@linkcode packPays} rule), and nothing
 * depends on the worker. Where the runtime has no `Worker`, or may not read
 * the worker's module, there is no pool. Blobs to deflate wait (up to 32 MiB)
 * while the worker starts, and {@linkcode ZlibPool.finish} hands any still
 * waiting back to the caller as `failed`, without waiting for the worker;
 * inflate and hash jobs are declined until it is ready. After the worker
 * fails, every outcome is `failed` and the caller does the work itself. The
 * worker only transforms bytes: it never touches the store, the filesystem or
 * the network, and every digest it reports is compared by the caller with the
 * id it expects.
 *
 * An exception thrown by the sink propagates from the call that delivered the
 * result; the pool must then be closed.
 *
 * @example
 * ```ts
 * import { ZlibPool } from "./zlib_pool.ts";
 * const seen: string[] = [];
 * const pool = ZlibPool.start<string>((token, outcome) => seen.push(`${token}:${outcome.kind}`));
 * if (pool !== null) {
 *   pool.waitReady(10_000);
 *   const data = new TextEncoder().encode("abc".repeat(1000));
 *   if (pool.deflate("a", data)) pool.finish();
 *   pool.close();
 *   if (!(seen.length === 0 || seen[0] === "a:packed")) throw new Error("Example failed");
 * }
 * ```
 * @module
 */
import { COMPRESS_MIN_BYTES } from "./compression.ts";
import { mayRead } from "../runtime.ts";

/** Control word: the worker has started (1). */
export const READY = 0;
/** Control word: the worker must exit (1). */
export const STOP = 1;
/** Words per slot: state, operation, length (then outcome), expected size. */
export const SLOT_WORDS = 4;
/** Slot state: free for the main thread to fill. */
export const FREE = 0;
/** Slot state: holds input for the worker. */
export const FULL = 1;
/** Slot state: holds the worker's outcome. */
export const DONE = 2;
/** Operation: DEFLATE the input; outcome is the compressed length or {@linkcode KEEP_RAW}. */
export const OP_DEFLATE = 1;
/** Operation: inflate the input to at most the expected size, then hash it; outcome is its length. */
export const OP_INFLATE = 2;
/** Operation: hash the input; outcome is its length. */
export const OP_HASH = 3;
/** Outcome: compression does not pay; store the bytes raw. */
export const KEEP_RAW = -1;
/** Outcome: the worker could not do it; the caller must. */
export const WORKER_FAILED = -2;

/** Index of slot `slot`'s first control word. */
export function slotIndex(slot: number): number {
  return 2 + slot * SLOT_WORDS;
}

/** Slots in the ring: enough to keep the worker busy while a large file is read or written. */
const SLOTS = 8;
/** Bytes per slot: the largest inline blob. */
const SLOT_BYTES = 1024 * 1024;
/** A slot still not done after this long means the worker is gone. */
const STALL_MS = 10_000;
/** Bytes of DEFLATE input held back while the worker starts. */
const BACKLOG_BYTES = 32 * 1024 * 1024;

/** What became of one submitted blob. */
export type PoolOutcome =
  /** Deflate: the compressed bytes, worth keeping. */
  | { kind: "packed"; bytes: Uint8Array }
  /** Deflate: compression does not pay; keep the input raw. */
  | { kind: "raw" }
  /** Inflate or hash: the plain bytes and their SHA-256 (hex), for the caller to check. */
  | { kind: "plain"; bytes: Uint8Array; sha256: string }
  /** The worker could not do it (damaged input, or the worker is gone): do it yourself. */
  | { kind: "failed" };

/** Receives each submitted blob's token and outcome, in submission order. */
export type PoolSink<T> = (token: T, outcome: PoolOutcome) => void;

interface WorkerLike {
  postMessage(message: unknown): void;
  terminate(): void;
  onerror: ((event: Event) => void) | null;
}

interface Pending<T> {
  token: T;
  input: Uint8Array;
  op: number;
}

/** One worker and its ring of shared-memory slots. */
export class ZlibPool<T> {
  readonly #worker: WorkerLike;
  readonly #control: Int32Array;
  readonly #data: Uint8Array;
  readonly #digests: Uint8Array;
  readonly #sink: PoolSink<T>;
  readonly #pending: (Pending<T> | null)[] = new Array(SLOTS).fill(null);
  /** Deflate jobs waiting for the worker to start: `#backlog[#backlogHead..]`. */
  readonly #backlog: (Pending<T> | null)[] = [];
  #backlogHead = 0;
  #backlogBytes = 0;
  #head = 0;
  #oldest = 0;
  #broken = false;
  #closed = false;
  /** Blobs the worker handled. */
  offloaded = 0;

  private constructor(
    worker: WorkerLike,
    memory: { control: SharedArrayBuffer; data: SharedArrayBuffer; digests: SharedArrayBuffer },
    sink: PoolSink<T>,
  ) {
    this.#worker = worker;
    this.#control = new Int32Array(memory.control);
    this.#data = new Uint8Array(memory.data);
    this.#digests = new Uint8Array(memory.digests);
    this.#sink = sink;
  }

  /**
   * Starts the worker, or returns null where the runtime cannot (no `Worker`,
   * no shared memory, or a single core). The worker boots in the background.
   */
  static start<T>(sink: PoolSink<T>): ZlibPool<T> | null {
    // deno-lint-ignore no-explicit-any
    const scope = globalThis as any;
    const WorkerClass = scope.Worker;
    if (typeof WorkerClass !== "function" || typeof SharedArrayBuffer !== "function") return null;
    if ((scope.navigator?.hardwareConcurrency ?? 1) < 2) return null;
    let url: URL;
    try {
      url = new URL("./_zlib_worker.ts", import.meta.url);
    } catch {
      // A bundle without a module URL (a single executable's CommonJS bundle,
      // where `import.meta.url` is empty) carries no worker module: no pool.
      return null;
    }
    // A worker whose module may not be read fails to load, noisily, after the fact.
    if (url.protocol === "file:" && !mayRead(decodeURIComponent(url.pathname))) return null;
    let worker: WorkerLike | null = null;
    try {
      const memory = {
        control: new SharedArrayBuffer(4 * (2 + SLOT_WORDS * SLOTS)),
        data: new SharedArrayBuffer(SLOTS * SLOT_BYTES),
        digests: new SharedArrayBuffer(SLOTS * 32),
      };
      worker = new WorkerClass(url.href, { type: "module" }) as WorkerLike;
      const pool = new ZlibPool(worker, memory, sink);
      worker.onerror = (event: Event) => {
        event.preventDefault(); // a worker that cannot load is not the command's failure
        pool.#broken = true;
      };
      worker.postMessage({ ...memory, slots: SLOTS, slotBytes: SLOT_BYTES });
      return pool;
    } catch {
      worker?.terminate();
      return null;
    }
  }

  /** Whether the worker is running and accepting blobs. */
  get ready(): boolean {
    return !this.#broken && !this.#closed && Atomics.load(this.#control, READY) === 1;
  }

  /** Waits up to `ms` for the worker to start; returns {@linkcode ZlibPool.ready}. */
  waitReady(ms: number): boolean {
    if (!this.ready && !this.#broken) Atomics.wait(this.#control, READY, 0, ms);
    return this.ready;
  }

  /**
   * Queues `data` for DEFLATE. While the worker starts, up to 32 MiB wait for
   * it. Returns false (compress it yourself) when `data` is too small to
   * compress or too large for a slot, when that backlog is full, or when the
   * worker failed.
   */
  deflate(token: T, data: Uint8Array): boolean {
    if (data.byteLength < COMPRESS_MIN_BYTES || data.byteLength > SLOT_BYTES) return false;
    if (this.#broken || this.#closed) return false;
    if (this.#waiting() > 0 || !this.ready) {
      if (this.ready) this.#drainBacklog();
      if (!this.ready || this.#waiting() > 0) {
        if (this.#backlogBytes + data.byteLength > BACKLOG_BYTES) return false;
        this.#backlog.push({ token, input: data, op: OP_DEFLATE });
        this.#backlogBytes += data.byteLength;
        return true;
      }
    }
    return this.#submitAndCollect(token, data, OP_DEFLATE, 0);
  }

  /**
   * Queues stored DEFLATE bytes to be inflated to at most `size` bytes and
   * hashed. Returns false (do it yourself) when the worker is not ready or
   * `size` is larger than a slot.
   */
  inflate(token: T, stored: Uint8Array, size: number): boolean {
    if (size > SLOT_BYTES) return false;
    return this.#submitAndCollect(token, stored, OP_INFLATE, size);
  }

  /** Queues `data` to be hashed. Returns false (hash it yourself) as {@linkcode ZlibPool.inflate} does. */
  hash(token: T, data: Uint8Array): boolean {
    return this.#submitAndCollect(token, data, OP_HASH, data.byteLength);
  }

  /** Delivers every result already done, oldest first, without waiting. */
  collectDone(): void {
    while (this.#pending[this.#oldest] !== null && this.#collect(false));
  }

  /**
   * Delivers every result, waiting for the worker's. Blobs still waiting for
   * a worker that has not started are handed back as `failed`, one at a time,
   * until it has (then it takes the rest). Does nothing after
   * {@linkcode ZlibPool.close}.
   */
  finish(): void {
    if (this.#closed) return;
    while (this.#waiting() > 0) {
      if (this.ready) {
        this.#drainBacklog();
        break;
      }
      this.#sink(this.#takeWaiting().token, { kind: "failed" });
    }
    while (this.#pending[this.#oldest] !== null) this.#collect(true);
  }

  /** Stops the worker. Results not yet delivered are dropped. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#broken = true;
    Atomics.store(this.#control, STOP, 1);
    for (let slot = 0; slot < SLOTS; slot++) Atomics.notify(this.#control, slotIndex(slot));
    this.#worker.terminate();
  }

  /**
   * Moves the blobs that waited for the worker into the ring, oldest first;
   * each leaves the backlog only once it is in a slot or handed back.
   */
  #drainBacklog(): void {
    while (this.#waiting() > 0) {
      const job = this.#backlog[this.#backlogHead]!;
      const queued = this.#submit(job.token, job.input, job.op, 0);
      this.#takeWaiting();
      if (!queued) this.#sink(job.token, { kind: "failed" }); // the worker failed
    }
  }

  /** How many deflate jobs wait for the worker. */
  #waiting(): number {
    return this.#backlog.length - this.#backlogHead;
  }

  /** Takes the oldest waiting job off the backlog (in constant time). */
  #takeWaiting(): Pending<T> {
    const job = this.#backlog[this.#backlogHead]!;
    this.#backlog[this.#backlogHead++] = null;
    this.#backlogBytes -= job.input.byteLength;
    if (this.#backlogHead === this.#backlog.length) {
      this.#backlog.length = 0;
      this.#backlogHead = 0;
    }
    return job;
  }

  #submitAndCollect(token: T, input: Uint8Array, op: number, size: number): boolean {
    if (!this.#submit(token, input, op, size)) return false;
    this.collectDone();
    return true;
  }

  /** Puts a job in the next slot, first delivering the oldest result if the ring is full. */
  #submit(token: T, input: Uint8Array, op: number, size: number): boolean {
    if (!this.ready || input.byteLength > SLOT_BYTES) return false;
    if (this.#pending[this.#head] !== null) this.#collect(true); // ring full: the oldest first
    if (this.#broken) return false;
    const slot = this.#head;
    this.#data.set(input, slot * SLOT_BYTES);
    const at = slotIndex(slot);
    Atomics.store(this.#control, at + 1, op);
    Atomics.store(this.#control, at + 2, input.byteLength);
    Atomics.store(this.#control, at + 3, size);
    Atomics.store(this.#control, at, FULL);
    Atomics.notify(this.#control, at);
    this.#pending[slot] = { token, input, op };
    this.#head = (slot + 1) % SLOTS;
    return true;
  }

  /** Delivers the oldest pending result; with `wait`, waits for it. Returns whether it did. */
  #collect(wait: boolean): boolean {
    const slot = this.#oldest;
    const job = this.#pending[slot]!;
    const at = slotIndex(slot);
    if (Atomics.load(this.#control, at) !== DONE) {
      if (!wait) return false;
      const deadline = performance.now() + STALL_MS;
      while (Atomics.load(this.#control, at) !== DONE) {
        if (this.#broken || performance.now() >= deadline) {
          this.#broken = true; // the worker is gone: the caller does the rest itself
          this.#deliver(slot, job, WORKER_FAILED);
          return true;
        }
        Atomics.wait(this.#control, at, FULL, 50);
      }
    }
    this.#deliver(slot, job, Atomics.load(this.#control, at + 2));
    return true;
  }

  #deliver(slot: number, job: Pending<T>, outcome: number): void {
    this.#pending[slot] = null;
    this.#oldest = (slot + 1) % SLOTS;
    Atomics.store(this.#control, slotIndex(slot), FREE);
    if (outcome === WORKER_FAILED) {
      this.#sink(job.token, { kind: "failed" });
      return;
    }
    this.offloaded += 1;
    const start = slot * SLOT_BYTES;
    if (job.op === OP_DEFLATE) {
      this.#sink(
        job.token,
        outcome === KEEP_RAW
          ? { kind: "raw" }
          : { kind: "packed", bytes: this.#data.slice(start, start + outcome) },
      );
      return;
    }
    // The bytes the worker hashed (its copy of the slot), not the caller's buffer.
    const bytes = this.#data.slice(start, start + outcome);
    this.#sink(job.token, { kind: "plain", bytes, sha256: hex(this.#digests, slot * 32) });
  }
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function hex(bytes: Uint8Array, offset: number): string {
  let out = "";
  for (let i = offset; i < offset + 32; i++) out += HEX[bytes[i]!];
  return out;
}
