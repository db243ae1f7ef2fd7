/**
 * The one storage-backend interface every remote goes through (restic's
 * approach): get (whole or a byte range), put, list, head, delete and
 * multipart upload of opaque objects under string keys. Two backends implement it, `file://`
 * ({@linkcode FileBackend} in `file_backend.ts`) and `s3://`
 * (`S3Backend` in `s3_backend.ts`), and one conformance suite
 * (`tests/_backend_conformance.ts`) runs against both.
 *
 * Guarantees every backend gives: `put` is atomic (a reader sees the old
 * object, the new one, or none, never a part); a multipart object appears
 * only when `complete` succeeds; `list` returns every key under a prefix,
 * sorted; reads refuse more than the caller's byte bound. Nothing else is
 * assumed: no compare-and-swap, no locking, no read-after-write ordering
 * across keys beyond what the layout itself tolerates (FORMAT.md §13).
 *
 * Also here: {@linkcode withRetries} (exponential backoff with jitter for
 * transient failures) and {@linkcode mapLimit} (bounded concurrency).
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { mapLimit, TransientError, withRetries } from "./backend.ts";
 * let calls = 0;
 * const value = await withRetries("demo", async () => {
 *   if (++calls < 3) throw new TransientError("try again");
 *   return 42;
 * }, { baseDelayMs: 0 });
 * if (value !== 42 || calls !== 3) throw new Error("retries did not run");
 * const doubled = await mapLimit([1, 2, 3], 2, (n) => Promise.resolve(n * 2));
 * if (doubled.join() !== "2,4,6") throw new Error("mapLimit lost order");
 * ```
 * @module
 */
import { CtxsnapError, quote, RemoteError } from "../errors.ts";
import { getEnv } from "../runtime.ts";

/** Total bounds of one listing, whatever the server sends. */
export interface ListBounds {
  /** Keys in all pages together. */
  keys: number;
  /** Response bytes of all pages together. */
  bytes: number;
  /** Pages. */
  pages: number;
}

/**
 * The default bounds of one listing: 2,000,000 keys, 512 MiB of responses,
 * 20,000 pages (a shared directory: the same number of keys, and at most 64
 * directory levels). A listing beyond any of them is refused with an
 * `IntegrityError` naming the bound.
 */
export const LIST_BOUNDS: Readonly<ListBounds> = {
  keys: 2_000_000,
  bytes: 512 * 1024 * 1024,
  pages: 20_000,
};

/** One listed or probed object. */
export interface ObjectInfo {
  /** The key, relative to the remote's root. */
  key: string;
  /** Size in bytes. */
  size: number;
}

/** An upload in parts; the object appears only when {@linkcode MultipartUpload.complete} succeeds. */
export interface MultipartUpload {
  /** Uploads part `n` (1-based, ascending); every part but the last is at least `minPartSize`. */
  putPart(n: number, data: Uint8Array): Promise<void>;
  /** Assembles the parts uploaded so far, in order, into the object. */
  complete(): Promise<void>;
  /** Discards the parts; the object does not appear. */
  abort(): Promise<void>;
}

/** A place that holds objects under keys. Keys are `/`-separated, relative, without `..`. */
export interface Backend {
  /** Where it is, for people (`s3://bucket/prefix`, `file:///dir`). */
  readonly location: string;
  /** The smallest part (except the last) a multipart upload accepts. */
  readonly minPartSize: number;
  /** The object's bytes, or null when absent. More than `maxBytes` is refused. */
  get(key: string, maxBytes: number): Promise<Uint8Array | null>;
  /**
   * Streams the object to `onChunk`; false when absent. More than `maxBytes`
   * is refused (after at most that many bytes were passed on).
   */
  getStream(
    key: string,
    maxBytes: number,
    onChunk: (chunk: Uint8Array) => void,
  ): Promise<boolean>;
  /**
   * Exactly `length` bytes of the object from `offset` (an HTTP range
   * request), or null when absent; an object too short for the range is
   * refused (IntegrityError).
   */
  getRange(key: string, offset: number, length: number): Promise<Uint8Array | null>;
  /** The object's size, or null when absent. */
  head(key: string): Promise<ObjectInfo | null>;
  /** Stores the object atomically, replacing any object under that key. */
  put(key: string, data: Uint8Array): Promise<void>;
  /** Every key starting with `prefix`, sorted by key (byte order). */
  list(prefix: string): Promise<ObjectInfo[]>;
  /** Removes the object; an absent key is not an error. */
  delete(key: string): Promise<void>;
  /** Starts a multipart upload of `key`; parts are then put one at a time, in order. */
  startMultipart(key: string): Promise<MultipartUpload>;
  /** Makes every completed `put` durable (a barrier before objects that name them). */
  flush(): Promise<void>;
}

/** A failure worth retrying: a dropped connection, a timeout, HTTP 5xx or 429. */
export class TransientError extends RemoteError {
  /** Creates a transient error. */
  constructor(message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options);
    this.name = "TransientError";
  }
}

/** Options of {@linkcode withRetries}. */
export interface RetryOptions {
  /** Attempts in all (default `CTXSNAP_REMOTE_ATTEMPTS` or 6). */
  attempts?: number;
  /** First delay in ms (default 200); doubles each time, up to 10 s, with full jitter. */
  baseDelayMs?: number;
  /** Called before each retry (diagnostics). */
  onRetry?: (attempt: number, error: unknown) => void;
}

function defaultAttempts(): number {
  const raw = getEnv("CTXSNAP_REMOTE_ATTEMPTS");
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isSafeInteger(n) && n >= 1 && n <= 100 ? n : 6;
}

/**
 * Runs `fn`, retrying it after a {@linkcode TransientError} with exponential
 * backoff and full jitter; any other error, or the last transient one, is thrown.
 */
export async function withRetries<T>(
  what: string,
  fn: () => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? defaultAttempts();
  const base = options.baseDelayMs ?? 200;
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof TransientError) || attempt >= attempts) {
        if (error instanceof TransientError) {
          throw new RemoteError(`${what} failed ${attempts} times: ${error.message}`, {
            cause: error,
            hint: error.hint ?? "the remote is unreachable or failing; rerun the command later",
          });
        }
        throw error;
      }
      options.onRetry?.(attempt, error);
      const cap = Math.min(10_000, base * 2 ** (attempt - 1));
      const delay = Math.floor(Math.random() * cap);
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/** Maps `items` through `fn` with at most `limit` calls in flight; results keep their order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed: { error: unknown } | null = null;
  const worker = async () => {
    while (failed === null && next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!, index);
      } catch (error) {
        failed ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failed !== null) throw (failed as { error: unknown }).error;
  return results;
}

const KEY_RE = /^[A-Za-z0-9._@-]+(\/[A-Za-z0-9._@-]+)*$/;

/** Refuses a key that is empty, absolute, has an empty, `.` or `..` segment or odd characters. */
export function checkKey(key: string): string {
  if (
    !KEY_RE.test(key) || key.length > 1024 ||
    key.split("/").some((part) => part === "." || part === "..")
  ) {
    throw new CtxsnapError(`Invalid remote key ${quote(key)}`);
  }
  return key;
}

/** Refuses a list prefix that is not empty or a key prefix ending in `/`. */
export function checkPrefix(prefix: string): string {
  if (prefix !== "" && (!prefix.endsWith("/") || checkKey(prefix.slice(0, -1)) === "")) {
    throw new CtxsnapError(`Invalid remote list prefix ${quote(prefix)}`);
  }
  return prefix;
}
