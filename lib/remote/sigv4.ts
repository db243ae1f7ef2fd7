/**
 * AWS Signature Version 4 for S3 requests (header-based authentication): the
 * canonical request, the string to sign, the derived signing key and the
 * `Authorization` header, with HMAC-SHA-256 from `@noble/hashes` and SHA-256
 * from the crypto layer. Every request signs `host`, `x-amz-content-sha256`
 * and `x-amz-date` (plus `x-amz-security-token` with temporary credentials
 * and any other header the caller passes), and the payload's SHA-256.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { signRequest } from "./sigv4.ts";
 * // AWS's documented example: GET Object, first 10 bytes of examplebucket/test.txt.
 * const signed = signRequest({
 *   method: "GET",
 *   url: new URL("https://examplebucket.s3.amazonaws.com/test.txt"),
 *   headers: { range: "bytes=0-9" },
 *   payloadHash: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
 *   credentials: {
 *     accessKeyId: "AKIAIOSFODNN7EXAMPLE",
 *     secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
 *   },
 *   region: "us-east-1",
 *   date: new Date("2013-05-24T00:00:00Z"),
 * });
 * if (!signed.authorization.endsWith("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")) {
 *   throw new Error("SigV4 example signature mismatch");
 * }
 * ```
 * @module
 */
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { toHex } from "../encoding/hex.ts";
import { sha256Hex } from "../crypto/hash.ts";

/** An access key pair, and a session token for temporary credentials. */
export interface Credentials {
  /** `AWS_ACCESS_KEY_ID`. */
  accessKeyId: string;
  /** `AWS_SECRET_ACCESS_KEY`. */
  secretAccessKey: string;
  /** `AWS_SESSION_TOKEN`, for temporary credentials. */
  sessionToken?: string;
}

/** What {@linkcode signRequest} needs. */
export interface SignInput {
  /** HTTP method, upper case. */
  method: string;
  /** The full request URL (its path must already be percent-encoded as sent). */
  url: URL;
  /** Extra headers to send and sign (names in any case). */
  headers?: Record<string, string>;
  /** Lowercase hex SHA-256 of the body (of the empty string when there is none). */
  payloadHash: string;
  /** The key pair. */
  credentials: Credentials;
  /** Region, e.g. `us-east-1`. */
  region: string;
  /** Service name (default `s3`). */
  service?: string;
  /** Signing time (default now). */
  date?: Date;
}

/** A signed request: the headers to send (including `authorization`). */
export interface SignedRequest {
  /** Every header to send, lowercase names, `host` excluded (fetch sets it). */
  headers: Record<string, string>;
  /** The `Authorization` header value. */
  authorization: string;
  /** The canonical request that was signed (for diagnostics and tests). */
  canonicalRequest: string;
  /** The string to sign. */
  stringToSign: string;
}

/** SHA-256 of the empty payload. */
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const encoder = new TextEncoder();

function hmacBytes(key: Uint8Array, text: string): Uint8Array {
  return hmac(sha256, key, encoder.encode(text));
}

/** `YYYYMMDDTHHMMSSZ`. */
export function amzDate(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

/**
 * RFC 3986 percent-encoding as SigV4 wants it: everything but the unreserved
 * characters `A-Z a-z 0-9 - . _ ~` (and `/` when `keepSlash`), upper-case hex.
 */
export function uriEncode(text: string, keepSlash = false): string {
  let out = "";
  for (const byte of encoder.encode(text)) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === "/")) out += c;
    else out += "%" + byte.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

function canonicalQuery(url: URL): string {
  const pairs: [string, string][] = [];
  for (const [name, value] of url.searchParams) pairs.push([uriEncode(name), uriEncode(value)]);
  pairs.sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
  return pairs.map(([name, value]) => `${name}=${value}`).join("&");
}

/** The derived signing key for a day, region and service. */
export function signingKey(
  secretAccessKey: string,
  day: string,
  region: string,
  service: string,
): Uint8Array {
  const kDate = hmacBytes(encoder.encode("AWS4" + secretAccessKey), day);
  const kRegion = hmacBytes(kDate, region);
  const kService = hmacBytes(kRegion, service);
  return hmacBytes(kService, "aws4_request");
}

/** Signs one request (SigV4, `Authorization` header). */
export function signRequest(input: SignInput): SignedRequest {
  const service = input.service ?? "s3";
  const stamp = amzDate(input.date ?? new Date());
  const day = stamp.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers ?? {})) {
    headers[name.toLowerCase()] = value.trim().replace(/\s+/g, " ");
  }
  headers["x-amz-date"] = stamp;
  headers["x-amz-content-sha256"] = input.payloadHash;
  if (input.credentials.sessionToken !== undefined) {
    headers["x-amz-security-token"] = input.credentials.sessionToken;
  }
  const signed: Record<string, string> = { ...headers, host: input.url.host };
  const names = Object.keys(signed).sort();
  const signedHeaders = names.join(";");
  // The path arrives percent-encoded as it will be sent; S3 signs it as is.
  const canonicalRequest = [
    input.method,
    input.url.pathname === "" ? "/" : input.url.pathname,
    canonicalQuery(input.url),
    names.map((name) => `${name}:${signed[name]}\n`).join(""),
    signedHeaders,
    input.payloadHash,
  ].join("\n");
  const scope = `${day}/${input.region}/${service}/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", stamp, scope, sha256Hex(canonicalRequest)].join("\n");
  const key = signingKey(input.credentials.secretAccessKey, day, input.region, service);
  const signature = toHex(hmacBytes(key, stringToSign));
  const authorization = `AWS4-HMAC-SHA256 Credential=${input.credentials.accessKeyId}/${scope},` +
    `SignedHeaders=${signedHeaders},Signature=${signature}`;
  headers["authorization"] = authorization;
  return { headers, authorization, canonicalRequest, stringToSign };
}
