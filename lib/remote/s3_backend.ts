/**
 * The `s3://BUCKET/PREFIX` backend: the S3 REST API over `fetch`, signed
 * with SigV4 ({@linkcode signRequest}), path-style (`ENDPOINT/BUCKET/KEY`,
 * for self-hosted servers) or virtual-hosted (`BUCKET.ENDPOINT/KEY`, AWS's
 * default). It uses only GET, HEAD, PUT, DELETE, ListObjectsV2 and the
 * multipart calls; no conditional requests (many servers lack them).
 *
 * Every request is retried on transient failures (a dropped connection, a
 * timeout, HTTP 5xx, 429, `SlowDown`, `RequestTimeout`) with exponential
 * backoff ({@linkcode withRetries}). Responses are read with a byte bound;
 * error bodies are read up to 64 KiB and their code and message are quoted,
 * never trusted. Without credentials, requests go unsigned (a public bucket).
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { S3Backend } from "./s3_backend.ts";
 * const backend = new S3Backend({
 *   endpoint: new URL("http://127.0.0.1:9000"), bucket: "team", prefix: "ctx",
 *   region: "us-east-1", pathStyle: true, credentials: null,
 * });
 * if (backend.location !== "s3://team/ctx") throw new Error(backend.location);
 * if (backend.objectUrl("refs/a").href !== "http://127.0.0.1:9000/team/ctx/refs/a") {
 *   throw new Error("path-style URL");
 * }
 * ```
 * @module
 */
import { type CtxsnapError, IntegrityError, NotFoundError, quote, RemoteError } from "../errors.ts";
import { sha256Hex } from "../crypto/hash.ts";
import { getEnv } from "../runtime.ts";
import {
  type Backend,
  checkKey,
  checkPrefix,
  type MultipartUpload,
  type ObjectInfo,
  TransientError,
  withRetries,
} from "./backend.ts";
import { type Credentials, EMPTY_SHA256, signRequest, uriEncode } from "./sigv4.ts";
import { escapeXml, xmlBlocks, xmlText } from "./_xml.ts";
import { LIST_BOUNDS, type ListBounds } from "./backend.ts";

/** How to reach a bucket. */
export interface S3Options {
  /** `http(s)://host[:port]` of the S3 API. */
  endpoint: URL;
  /** Bucket name. */
  bucket: string;
  /** Key prefix inside the bucket, without leading or trailing `/` ("" for none). */
  prefix: string;
  /** Signing region. */
  region: string;
  /** Path-style (`endpoint/bucket/key`) rather than virtual-hosted addressing. */
  pathStyle: boolean;
  /** Access key pair, or null for unsigned requests. */
  credentials: Credentials | null;
  /** Keys per list page (default 1000; tests use small pages). */
  pageSize?: number;
  /** Bounds of one listing (default `LIST_BOUNDS` of `backend.ts`; tests use small ones). */
  listBounds?: Partial<ListBounds>;
}

const MAX_ERROR_BODY = 64 * 1024;
const MAX_LIST_BODY = 16 * 1024 * 1024;
const MAX_SMALL_BODY = 1024 * 1024;

function timeoutMs(): number {
  const raw = getEnv("CTXSNAP_REMOTE_TIMEOUT_MS");
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isSafeInteger(n) && n > 0 ? n : 120_000;
}

interface Call {
  method: "GET" | "HEAD" | "PUT" | "POST" | "DELETE";
  key?: string;
  query?: Record<string, string>;
  body?: Uint8Array;
  /** Statuses that are answers, not errors (404 for a missing key, say). */
  accept?: number[];
  /** A `Range` header (sent unsigned). */
  range?: string;
}

/** Reads a response body up to `max` bytes (refusing more), optionally streaming it. */
async function readBody(
  response: Response,
  max: number,
  what: string,
  onChunk?: (chunk: Uint8Array) => void,
): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > max) {
    await response.body?.cancel();
    throw new IntegrityError(`The remote object ${what} is larger than ${max} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (response.body === null) return new Uint8Array();
  const reader = response.body.getReader();
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (error) {
        throw new TransientError(`The connection dropped while reading ${what}`, { cause: error });
      }
      if (next.done) break;
      total += next.value.byteLength;
      if (total > max) {
        await reader.cancel();
        throw new IntegrityError(`The remote object ${what} is larger than ${max} bytes`);
      }
      if (onChunk) {
        try {
          onChunk(next.value);
        } catch (error) {
          await reader.cancel().catch(() => {});
          throw error;
        }
      } else chunks.push(next.value);
    }
  } finally {
    reader.releaseLock();
  }
  if (onChunk) return new Uint8Array();
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** An S3-compatible bucket (or a prefix of one). */
export class S3Backend implements Backend {
  /** `s3://bucket/prefix`. */
  readonly location: string;
  /** S3's minimum part size. */
  readonly minPartSize: number = 5 * 1024 * 1024;
  private readonly options: S3Options;

  /** A backend for `options`. */
  constructor(options: S3Options) {
    this.options = options;
    this.location = `s3://${options.bucket}${options.prefix === "" ? "" : `/${options.prefix}`}`;
  }

  private fullKey(key: string): string {
    return this.options.prefix === "" ? key : `${this.options.prefix}/${key}`;
  }

  /** The URL of `key` (or of the bucket, for `""`). */
  objectUrl(key: string, query: Record<string, string> = {}): URL {
    const { endpoint, bucket, pathStyle } = this.options;
    const path = key === "" ? "" : uriEncode(this.fullKey(key), true);
    const base = `${endpoint.protocol}//${
      pathStyle ? endpoint.host : `${bucket}.${endpoint.host}`
    }`;
    const url = new URL(pathStyle ? `${base}/${bucket}/${path}` : `${base}/${path}`);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    return url;
  }

  /** Sends one signed request (no retry); maps failures to typed errors. */
  private async send(call: Call): Promise<Response> {
    const url = this.objectUrl(call.key ?? "", call.query);
    // URLSearchParams encodes spaces as "+"; S3 wants %20, as signed.
    const sent = new URL(url.href.replace(/\+/g, "%20"));
    const body = call.body;
    const headers: Record<string, string> = {};
    if (body !== undefined) headers["content-type"] = "application/octet-stream";
    const signed = this.options.credentials === null ? { headers } : signRequest({
      method: call.method,
      url: sent,
      headers,
      payloadHash: body === undefined ? EMPTY_SHA256 : sha256Hex(body),
      credentials: this.options.credentials,
      region: this.options.region,
    });
    let response: Response;
    try {
      response = await fetch(sent, {
        method: call.method,
        headers: call.range === undefined
          ? signed.headers
          : { ...signed.headers, range: call.range },
        ...(body !== undefined ? { body: body as BodyInit } : {}),
        signal: AbortSignal.timeout(timeoutMs()),
        redirect: "manual",
      });
    } catch (error) {
      throw new TransientError(
        `Cannot reach ${quote(this.options.endpoint.origin)}: ${(error as Error).message}`,
        {
          cause: error,
          hint: "check the endpoint (--endpoint or AWS_ENDPOINT_URL) and the network",
        },
      );
    }
    if (response.ok || (call.accept ?? []).includes(response.status)) return response;
    throw await this.failure(response, call);
  }

  private async failure(response: Response, call: Call): Promise<CtxsnapError> {
    let code = "";
    let message = "";
    try {
      const text = new TextDecoder().decode(await readBody(response, MAX_ERROR_BODY, "error"));
      code = xmlText(text, "Code") ?? "";
      message = xmlText(text, "Message") ?? "";
    } catch {
      // No readable error document: the status says enough.
    }
    const what = `${call.method} ${quote(call.key ?? this.options.bucket)} on ${
      quote(this.location)
    }`;
    const detail = `HTTP ${response.status}${code ? ` ${quote(code)}` : ""}${
      message ? `: ${quote(message)}` : ""
    }`;
    const status = response.status;
    if (status >= 500 || status === 429 || code === "SlowDown" || code === "RequestTimeout") {
      return new TransientError(`${what} failed: ${detail}`);
    }
    if (status === 403 || status === 401) {
      return new RemoteError(`${what} was refused: ${detail}`, {
        hint:
          "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), and the region",
      });
    }
    if (status === 404 && code === "NoSuchBucket") {
      return new NotFoundError(`The bucket ${quote(this.options.bucket)} does not exist`, {
        hint: "create it first, or fix the remote URL",
      });
    }
    if (status >= 300 && status < 400) {
      return new RemoteError(`${what} was redirected: ${detail}`, {
        hint: "the bucket is in another region or needs virtual-hosted addressing; set --region",
      });
    }
    return new RemoteError(`${what} failed: ${detail}`);
  }

  private call(what: string, call: Call): Promise<Response> {
    return withRetries(what, () => this.send(call));
  }

  /** {@inheritDoc Backend.get} */
  async get(key: string, maxBytes: number): Promise<Uint8Array | null> {
    checkKey(key);
    return await withRetries(`GET ${quote(key)}`, async () => {
      const response = await this.send({ method: "GET", key, accept: [404] });
      if (response.status === 404) {
        await this.notFoundOrBucket(response);
        return null;
      }
      return await readBody(response, maxBytes, quote(key));
    });
  }

  /** A 404 for a key is an answer; for the bucket it is an error. */
  private async notFoundOrBucket(response: Response): Promise<void> {
    const text = new TextDecoder().decode(await readBody(response, MAX_ERROR_BODY, "error"));
    if (xmlText(text, "Code") === "NoSuchBucket") {
      throw new NotFoundError(`The bucket ${quote(this.options.bucket)} does not exist`, {
        hint: "create it first, or fix the remote URL",
      });
    }
  }

  /** {@inheritDoc Backend.getStream} */
  async getStream(
    key: string,
    maxBytes: number,
    onChunk: (chunk: Uint8Array) => void,
  ): Promise<boolean> {
    checkKey(key);
    // Retried only until the first byte is passed on: after that the caller decides.
    const response = await this.call(`GET ${quote(key)}`, { method: "GET", key, accept: [404] });
    if (response.status === 404) {
      await this.notFoundOrBucket(response);
      return false;
    }
    await readBody(response, maxBytes, quote(key), onChunk);
    return true;
  }

  /** {@inheritDoc Backend.getRange} */
  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    checkKey(key);
    return await withRetries(`GET ${quote(key)} (a range)`, async () => {
      const response = await this.send({
        method: "GET",
        key,
        accept: [404],
        range: `bytes=${offset}-${offset + length - 1}`,
      });
      if (response.status === 404) {
        await this.notFoundOrBucket(response);
        return null;
      }
      // A server that ignores the range sends the whole object (200): bounded, then cut.
      const whole = response.status !== 206;
      const bytes = await readBody(response, whole ? offset + length : length, quote(key));
      const out = whole ? bytes.subarray(offset) : bytes;
      if (out.byteLength !== length) {
        throw new IntegrityError(
          `The remote object ${quote(key)} is shorter than the range asked for`,
        );
      }
      return out;
    });
  }

  /** {@inheritDoc Backend.head} */
  async head(key: string): Promise<ObjectInfo | null> {
    checkKey(key);
    const response = await this.call(`HEAD ${quote(key)}`, { method: "HEAD", key, accept: [404] });
    await response.body?.cancel();
    if (response.status === 404) return null;
    const size = Number(response.headers.get("content-length"));
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new IntegrityError(`The remote sent no valid size for ${quote(key)}`);
    }
    return { key, size };
  }

  /** {@inheritDoc Backend.put} */
  async put(key: string, data: Uint8Array): Promise<void> {
    checkKey(key);
    const response = await this.call(`PUT ${quote(key)}`, { method: "PUT", key, body: data });
    await response.body?.cancel();
  }

  /** {@inheritDoc Backend.list} */
  async list(prefix: string): Promise<ObjectInfo[]> {
    checkPrefix(prefix);
    const full = this.options.prefix === "" ? prefix : `${this.options.prefix}/${prefix}`;
    const out: ObjectInfo[] = [];
    const bounds = { ...LIST_BOUNDS, ...this.options.listBounds };
    const tokens = new Set<string>();
    let token: string | null = null;
    let bytes = 0;
    const beyond = (what: string): never => {
      throw new IntegrityError(
        `The remote's listing of ${
          quote(prefix)
        } is longer than ${what}; nothing was taken from it`,
        { hint: "the remote is damaged or hostile; check it, or ask its owner" },
      );
    };
    for (let page = 1;; page++) {
      if (page > bounds.pages) beyond(`${bounds.pages} pages`);
      const query: Record<string, string> = { "list-type": "2", prefix: full };
      if (this.options.pageSize !== undefined) query["max-keys"] = String(this.options.pageSize);
      if (token !== null) query["continuation-token"] = token;
      const response = await this.call(`LIST ${quote(prefix)}`, { method: "GET", query });
      const limit = Math.min(MAX_LIST_BODY, bounds.bytes - bytes);
      const raw = await readBody(response, limit, "listing").catch((error) => {
        if (error instanceof IntegrityError && limit < MAX_LIST_BODY) {
          beyond(`${bounds.bytes} bytes`);
        }
        throw error;
      });
      bytes += raw.byteLength;
      const text = new TextDecoder().decode(raw);
      for (const block of xmlBlocks(text, "Contents", bounds.keys - out.length + 1)) {
        if (out.length >= bounds.keys) beyond(`${bounds.keys} keys`);
        const key = xmlText(block, "Key");
        const size = Number(xmlText(block, "Size"));
        if (key === null || !key.startsWith(full) || !Number.isSafeInteger(size) || size < 0) {
          throw new IntegrityError(`The remote sent a malformed listing of ${quote(prefix)}`);
        }
        const relative = this.options.prefix === ""
          ? key
          : key.slice(this.options.prefix.length + 1);
        out.push({ key: relative, size });
      }
      if (xmlText(text, "IsTruncated") !== "true") break;
      token = xmlText(text, "NextContinuationToken");
      if (token === null || token === "" || token.length > 4096) {
        throw new IntegrityError(`The remote sent a truncated listing without a continuation`);
      }
      if (tokens.has(token)) {
        throw new IntegrityError(
          `The remote's listing of ${
            quote(prefix)
          } repeats a continuation token (it would never end)`,
        );
      }
      tokens.add(token);
    }
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return out;
  }

  /** {@inheritDoc Backend.delete} */
  async delete(key: string): Promise<void> {
    checkKey(key);
    const response = await this.call(`DELETE ${quote(key)}`, {
      method: "DELETE",
      key,
      accept: [404],
    });
    await response.body?.cancel();
  }

  /** {@inheritDoc Backend.startMultipart} */
  async startMultipart(key: string): Promise<MultipartUpload> {
    checkKey(key);
    const started = await this.call(`start the upload of ${quote(key)}`, {
      method: "POST",
      key,
      query: { uploads: "" },
    });
    const text = new TextDecoder().decode(await readBody(started, MAX_SMALL_BODY, "upload"));
    const uploadId = xmlText(text, "UploadId");
    if (uploadId === null || uploadId === "" || uploadId.length > 1024) {
      throw new IntegrityError(`The remote sent no upload id for ${quote(key)}`);
    }
    const etags: string[] = [];
    return {
      putPart: async (n: number, data: Uint8Array) => {
        if (n !== etags.length + 1) {
          throw new RemoteError(`Part ${n} of ${quote(key)} arrived out of order`);
        }
        const response = await this.call(`upload part ${n} of ${quote(key)}`, {
          method: "PUT",
          key,
          query: { partNumber: String(n), uploadId },
          body: data,
        });
        await response.body?.cancel();
        const etag = response.headers.get("etag");
        if (etag === null || etag.length > 1024) {
          throw new IntegrityError(`The remote sent no ETag for part ${n} of ${quote(key)}`);
        }
        etags.push(etag);
      },
      complete: async () => {
        const xml = "<CompleteMultipartUpload>" +
          etags.map((etag, i) =>
            `<Part><PartNumber>${i + 1}</PartNumber><ETag>${escapeXml(etag)}</ETag></Part>`
          ).join("") + "</CompleteMultipartUpload>";
        const response = await this.call(`complete the upload of ${quote(key)}`, {
          method: "POST",
          key,
          query: { uploadId },
          body: new TextEncoder().encode(xml),
        });
        // S3 may answer 200 and still report an error in the body.
        const body = new TextDecoder().decode(await readBody(response, MAX_SMALL_BODY, "upload"));
        if (xmlBlocks(body, "Error").length > 0) {
          throw new RemoteError(
            `Completing the upload of ${quote(key)} failed: ${quote(xmlText(body, "Code"))}`,
          );
        }
      },
      abort: async () => {
        const response = await this.call(`abort the upload of ${quote(key)}`, {
          method: "DELETE",
          key,
          query: { uploadId },
          accept: [404],
        });
        await response.body?.cancel();
      },
    };
  }

  /** Nothing to do: a completed PUT is durable on an S3 server. */
  flush(): Promise<void> {
    return Promise.resolve();
  }

  /** Creates the bucket (tests and benchmarks; ctxsnap itself never creates buckets). */
  async createBucket(): Promise<void> {
    const response = await this.call(`create bucket ${quote(this.options.bucket)}`, {
      method: "PUT",
      accept: [409],
    });
    await response.body?.cancel();
  }
}
