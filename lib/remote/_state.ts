/**
 * What a store remembers of a remote's refs: for each signer, session and
 * branch, the newest ref record it has written or accepted (`seq`, record
 * hash, head), in `meta` under `remote-ref:<remote>:<key_id>:<session>@<branch>`.
 * Push continues the numbering from it; pull refuses to move backwards
 * (a rolled-back ref). Also: the counting wrapper that measures the bytes a
 * command sent and received.
 *
 * @module
 */
import { CtxsnapError } from "../errors.ts";
import { canonicalize, parseJson } from "../encoding/canonical_json.ts";
import { isHex } from "../encoding/hex.ts";
import type { Store } from "../repository/store.ts";
import type { Backend, MultipartUpload, ObjectInfo } from "./backend.ts";

/** The newest known record of one ref. */
export interface RefState {
  /** Its sequence number. */
  seq: number;
  /** SHA-256 hex of the record. */
  record: string;
  /** The snapshot it names. */
  head: string;
}

function stateKey(remote: string, keyId: string, session: string, branch: string): string {
  return `remote-ref:${remote}:${keyId}:${session}@${branch}`;
}

/** The remembered state of a ref, or null (also for an unreadable row). */
export function readRefState(
  store: Store,
  remote: string,
  keyId: string,
  session: string,
  branch: string,
): RefState | null {
  const text = store.getMeta(stateKey(remote, keyId, session, branch));
  if (text === null) return null;
  try {
    const value = parseJson(text) as Record<string, unknown>;
    if (
      Number.isSafeInteger(value.seq) && typeof value.record === "string" &&
      isHex(value.record, 64) && typeof value.head === "string" && isHex(value.head, 64)
    ) {
      return { seq: value.seq as number, record: value.record, head: value.head };
    }
  } catch {
    // Treated as unknown: the remote's own numbering is used.
  }
  return null;
}

/** Remembers the state of a ref (call inside a write transaction). */
export function writeRefState(
  store: Store,
  remote: string,
  keyId: string,
  session: string,
  branch: string,
  state: RefState,
): void {
  store.setMeta(
    stateKey(remote, keyId, session, branch),
    canonicalize({ seq: state.seq, record: state.record, head: state.head }),
  );
}

/** Byte counters of a {@linkcode CountingBackend}. */
export interface Traffic {
  /** Bytes of request bodies sent (objects, parts, records). */
  sent: number;
  /** Bytes of objects received. */
  received: number;
  /** Requests made. */
  requests: number;
}

/** Wraps a backend to count requests and payload bytes in each direction. */
export class CountingBackend implements Backend {
  /** The counters. */
  readonly traffic: Traffic = { sent: 0, received: 0, requests: 0 };
  readonly location: string;
  readonly minPartSize: number;

  /**
   * Wraps `inner`; more than `maxReceived` bytes received in all stops the
   * command with an error (exit 1) that names the bound.
   */
  constructor(private readonly inner: Backend, private readonly maxReceived = Infinity) {
    this.location = inner.location;
    this.minPartSize = inner.minPartSize;
  }

  #count(bytes: number): void {
    this.traffic.received += bytes;
    if (this.traffic.received > this.maxReceived) {
      // Not an IntegrityError: that refuses one ref; this ends the whole command.
      throw new CtxsnapError(
        `The remote sent more than ${this.maxReceived} bytes in all; nothing of it was kept`,
        "failure",
        { hint: "the remote is larger than this command allows, or hostile" },
      );
    }
  }

  async get(key: string, maxBytes: number): Promise<Uint8Array | null> {
    this.traffic.requests++;
    const bytes = await this.inner.get(key, maxBytes);
    this.#count(bytes?.byteLength ?? 0);
    return bytes;
  }

  getStream(
    key: string,
    maxBytes: number,
    onChunk: (chunk: Uint8Array) => void,
  ): Promise<boolean> {
    this.traffic.requests++;
    return this.inner.getStream(key, maxBytes, (chunk) => {
      this.#count(chunk.byteLength);
      onChunk(chunk);
    });
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    this.traffic.requests++;
    const bytes = await this.inner.getRange(key, offset, length);
    this.#count(bytes?.byteLength ?? 0);
    return bytes;
  }

  head(key: string): Promise<ObjectInfo | null> {
    this.traffic.requests++;
    return this.inner.head(key);
  }

  put(key: string, data: Uint8Array): Promise<void> {
    this.traffic.requests++;
    this.traffic.sent += data.byteLength;
    return this.inner.put(key, data);
  }

  list(prefix: string): Promise<ObjectInfo[]> {
    this.traffic.requests++;
    return this.inner.list(prefix);
  }

  delete(key: string): Promise<void> {
    this.traffic.requests++;
    return this.inner.delete(key);
  }

  async startMultipart(key: string): Promise<MultipartUpload> {
    this.traffic.requests++;
    const upload = await this.inner.startMultipart(key);
    return {
      putPart: (n, data) => {
        this.traffic.requests++;
        this.traffic.sent += data.byteLength;
        return upload.putPart(n, data);
      },
      complete: () => {
        this.traffic.requests++;
        return upload.complete();
      },
      abort: () => upload.abort(),
    };
  }

  flush(): Promise<void> {
    return this.inner.flush();
  }
}
