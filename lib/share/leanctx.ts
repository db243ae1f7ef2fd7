/**
 * lean-ctx context snapshots (`CONTEXT_SNAPSHOT_V1`, lean-ctx 3.9): strict
 * reading, the canonical body, the id, the signature rule and the published
 * file form, exactly as docs/FORMAT.md §12 specifies them.
 *
 * - The canonical body is the snapshot with `snapshot_id` `""` and
 *   `signature` `null`, written like `serde_json::to_string` (fields in
 *   declaration order, floats in serde_json's shortest form).
 * - The id is the BLAKE3 hex of the body; the signature is pure Ed25519 over
 *   the 64 ASCII bytes of the hex SHA-256 of `"ctxsnapshot-sign-v1:" + id`
 *   (domain-separated from ctxsnap's `ctxsnap-snapshot-v1:` rule, so one key
 *   can sign both kinds).
 * - The published file is `serde_json::to_string_pretty` of the snapshot.
 *
 * Reading is stricter than lean-ctx's own: unknown or missing fields, wrong
 * types, integers outside 0 … 2^64 − 1, non-finite floats, uppercase hex and
 * schema versions other than 1 are refused. A file whose values re-serialize
 * to its id is intact even when its bytes are not the canonical pretty form
 * (reordered keys, `0` for `0.0`); {@linkcode LeanCtxCheck.layout} says so.
 *
 * @example
 * ```ts
 * import { checkLeanCtxBytes, leanCtxFileText, newLeanCtxSnapshot, signLeanCtx } from "./leanctx.ts";
 * import { generateSeed, keyIdOf, publicKeyFromSeed } from "../crypto/ed25519.ts";
 * import { toHex } from "../encoding/hex.ts";
 * const seed = generateSeed();
 * const publicKey = await publicKeyFromSeed(seed);
 * const signer = { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
 * const signed = await signLeanCtx(newLeanCtxSnapshot("2026-01-01T00:00:00Z", "9.9.9"), signer);
 * const check = await checkLeanCtxBytes(new TextEncoder().encode(leanCtxFileText(signed)));
 * if (!(check.idMatches && check.signatureValid && check.layout === "canonical")) throw new Error("bad");
 * if (check.keyId !== signer.keyId) throw new Error("key id");
 * ```
 * @module
 */
import { IntegrityError, quote } from "../errors.ts";
import { fromHex, isHex, toHex } from "../encoding/hex.ts";
import { blake3Hex, sha256Hex } from "../crypto/hash.ts";
import { keyIdOf, sign, verify } from "../crypto/ed25519.ts";
import type { Signer } from "../format/envelope.ts";
import type { TrustPolicy } from "../history/verify.ts";
import {
  compactJson,
  F64,
  Fields,
  NumberLiteral,
  type Ordered,
  parseRawDocument,
  parseRawJson,
  prettyJson,
  type RawJson,
  RawObject,
  U64,
} from "./_leanctx_json.ts";

export { formatF64 } from "../format/serde_f64.ts";

/** The only `schema_version` this code reads and writes. */
export const LEANCTX_SCHEMA_VERSION = 1;
/** Domain-separation prefix of lean-ctx's signed message. */
export const LEANCTX_SIGNING_PREFIX = "ctxsnapshot-sign-v1:";
/** Largest lean-ctx file read, in bytes. */
export const MAX_LEANCTX_BYTES: number = 4 * 1024 * 1024;
/** Deepest nesting the reader accepts (the format itself needs 4). */
export const MAX_LEANCTX_DEPTH = 16;
/** Longest string value, in UTF-16 code units. */
export const MAX_LEANCTX_TEXT = 65_536;
/** Most items in any list. */
export const MAX_LEANCTX_ITEMS = 10_000;
/** Largest unsigned integer (`u64`). */
export const U64_MAX: bigint = 2n ** 64n - 1n;

/** `git`: the repository state a snapshot is pinned to. */
export interface LeanCtxGit {
  /** Commit (short or full), or null. */
  commit: string | null;
  /** Branch, or null. */
  branch: string | null;
  /** Uncommitted changes at capture. */
  dirty: boolean;
}

/** `project`: identity hashes, never paths. */
export interface LeanCtxProject {
  /** Hash of the project root path, or null. */
  root_hash: string | null;
  /** Hash of the remote identity, or null. */
  identity_hash: string | null;
}

/** `roi`: token return on investment. */
export interface LeanCtxRoi {
  /** u64. */
  input_tokens: bigint;
  /** u64. */
  output_tokens: bigint;
  /** u64. */
  tokens_saved: bigint;
  /** f64. */
  compression_rate: number;
}

/** One `lineage.items` entry. */
export interface LeanCtxLineageItem {
  /** u64. */
  seq: bigint;
  /** Source kind. */
  kind: string;
  /** Tool. */
  tool: string;
  /** Path, or null. */
  path: string | null;
  /** u64. */
  input_tokens: bigint;
  /** u64. */
  output_tokens: bigint;
  /** f64. */
  compression_ratio: number;
  /** Content hash, or null. */
  content_hash: string | null;
}

/** `lineage`: what entered the context. */
export interface LeanCtxLineage {
  /** u64. */
  items_recorded: bigint;
  /** Items. */
  items: LeanCtxLineageItem[];
}

/** One `ledger.items` entry. */
export interface LeanCtxLedgerItem {
  /** Path. */
  path: string;
  /** State. */
  state: string;
  /** f64 Φ, or null. */
  phi: number | null;
  /** usize. */
  sent_tokens: bigint;
  /** usize. */
  original_tokens: bigint;
}

/** `ledger`: why each item was in the window. */
export interface LeanCtxLedger {
  /** usize. */
  window_size: bigint;
  /** usize. */
  total_tokens_sent: bigint;
  /** usize. */
  total_tokens_saved: bigint;
  /** Items. */
  items: LeanCtxLedgerItem[];
}

/** `session`: the task and decisions. */
export interface LeanCtxSession {
  /** Session id, or null. */
  session_id: string | null;
  /** Task, or null. */
  task: string | null;
  /** Decisions (may repeat). */
  decisions: string[];
  /** Files touched (may repeat). */
  files_touched: string[];
  /** u8 percentage, or null. */
  progress_pct: number | null;
}

/** `signature`. */
export interface LeanCtxSignature {
  /** Always `ed25519`. */
  algorithm: "ed25519";
  /** 32-byte public key, lowercase hex. */
  public_key: string;
  /** 64-byte signature, lowercase hex. */
  value: string;
}

/** A lean-ctx `ContextSnapshotV1`, fields in declaration order. */
export interface LeanCtxSnapshot {
  /** Always 1. */
  schema_version: 1;
  /** The id as written in the file. */
  snapshot_id: string;
  /** Previous snapshot in lean-ctx's timeline, or null. */
  parent_id: string | null;
  /** RFC 3339 creation time. */
  created_at: string;
  /** The lean-ctx version that wrote it. */
  lean_ctx_version: string;
  /** Git anchor. */
  git: LeanCtxGit;
  /** Project identity. */
  project: LeanCtxProject;
  /** Token ROI. */
  roi: LeanCtxRoi;
  /** Lineage. */
  lineage: LeanCtxLineage;
  /** Ledger. */
  ledger: LeanCtxLedger;
  /** Session slice, or null. */
  session: LeanCtxSession | null;
  /** Signature, or null when unsigned. */
  signature: LeanCtxSignature | null;
}

/** `ContextSnapshotV1::new(created_at, version)`: empty slices, no id, unsigned. */
export function newLeanCtxSnapshot(createdAt: string, version: string): LeanCtxSnapshot {
  return {
    schema_version: 1,
    snapshot_id: "",
    parent_id: null,
    created_at: createdAt,
    lean_ctx_version: version,
    git: { commit: null, branch: null, dirty: false },
    project: { root_hash: null, identity_hash: null },
    roi: { input_tokens: 0n, output_tokens: 0n, tokens_saved: 0n, compression_rate: 0 },
    lineage: { items_recorded: 0n, items: [] },
    ledger: { window_size: 0n, total_tokens_sent: 0n, total_tokens_saved: 0n, items: [] },
    session: null,
    signature: null,
  };
}

// ---------------------------------------------------------------------------
// Reading

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

class Shape {
  fail(message: string): never {
    throw new IntegrityError(`Invalid lean-ctx snapshot: ${message}`);
  }

  object(value: RawJson, what: string, keys: readonly string[]): Map<string, RawJson> {
    if (!(value instanceof RawObject)) this.fail(`${what} is ${describe(value)}, not an object`);
    for (const key of value.members.keys()) {
      if (!keys.includes(key)) this.fail(`${what} has unknown field ${quote(key)}`);
    }
    for (const key of keys) {
      if (!value.members.has(key)) this.fail(`${what} lacks field ${quote(key)}`);
    }
    return value.members;
  }

  text(value: RawJson | undefined, what: string): string {
    if (typeof value !== "string") this.fail(`${what} is ${describe(value)}, not a string`);
    if (value.length > MAX_LEANCTX_TEXT) {
      this.fail(`${what} is longer than ${MAX_LEANCTX_TEXT} characters`);
    }
    return value;
  }

  nullableText(value: RawJson | undefined, what: string): string | null {
    return value === null ? null : this.text(value, what);
  }

  bool(value: RawJson | undefined, what: string): boolean {
    if (typeof value !== "boolean") this.fail(`${what} is ${describe(value)}, not a boolean`);
    return value;
  }

  u64(value: RawJson | undefined, what: string, max: bigint = U64_MAX): bigint {
    if (!(value instanceof NumberLiteral)) {
      this.fail(`${what} is ${describe(value)}, not an unsigned integer`);
    }
    if (!value.isInteger || value.text.startsWith("-")) {
      this.fail(`${what} ${quote(value.text)} is not an unsigned integer`);
    }
    // At most 20 digits before BigInt, so a huge literal costs nothing.
    if (value.text.length > 20 || BigInt(value.text) > max) {
      this.fail(`${what} ${quote(value.text)} is larger than ${max}`);
    }
    return BigInt(value.text);
  }

  f64(value: RawJson | undefined, what: string): number {
    if (!(value instanceof NumberLiteral)) this.fail(`${what} is ${describe(value)}, not a number`);
    const number = Number(value.text);
    if (!Number.isFinite(number)) this.fail(`${what} ${quote(value.text)} is out of range`);
    // serde_json reads the integer literal `-0` as the integer 0, so as +0.0.
    return value.isInteger && number === 0 ? 0 : number;
  }

  list<T>(value: RawJson | undefined, what: string, item: (v: RawJson, w: string) => T): T[] {
    if (!Array.isArray(value)) this.fail(`${what} is ${describe(value)}, not an array`);
    if (value.length > MAX_LEANCTX_ITEMS) {
      this.fail(`${what} has more than ${MAX_LEANCTX_ITEMS} items`);
    }
    return value.map((v, i) => item(v, `${what}[${i}]`));
  }

  hex(value: RawJson | undefined, what: string, length: number): string {
    const text = this.text(value, what);
    if (!isHex(text, length)) this.fail(`${what} is not ${length} lowercase hex characters`);
    return text;
  }
}

function describe(value: RawJson | undefined): string {
  if (value === undefined) return "missing";
  if (value === null) return "null";
  if (typeof value === "string") return "a string";
  if (typeof value === "boolean") return "a boolean";
  if (value instanceof NumberLiteral) return `the number ${quote(value.text)}`;
  if (Array.isArray(value)) return "an array";
  return "an object";
}

const TOP_FIELDS = [
  "schema_version",
  "snapshot_id",
  "parent_id",
  "created_at",
  "lean_ctx_version",
  "git",
  "project",
  "roi",
  "lineage",
  "ledger",
  "session",
  "signature",
] as const;

/** Whether a parsed JSON document is a lean-ctx snapshot: an object with a `schema_version` member. */
export function isLeanCtxDocument(value: RawJson): boolean {
  return value instanceof RawObject && value.members.has("schema_version");
}

/**
 * Whether a JSON file is meant as a lean-ctx snapshot rather than a ctxsnap
 * envelope: its top-level object has a `schema_version` member. A file that
 * does not parse counts as lean-ctx when it names `"schema_version"`
 * anywhere, so that the lean-ctx reader explains what is wrong with it.
 */
export function looksLikeLeanCtx(bytes: Uint8Array): boolean {
  try {
    return isLeanCtxDocument(parseRawJson(bytes, { maxBytes: MAX_LEANCTX_BYTES }));
  } catch {
    return new TextDecoder().decode(bytes.subarray(0, MAX_LEANCTX_BYTES)).includes(
      '"schema_version"',
    );
  }
}

/** Validates a parsed document as a lean-ctx snapshot; throws `IntegrityError` naming the field. */
export function leanCtxFromRaw(value: RawJson): LeanCtxSnapshot {
  const s: Shape = new Shape();
  if (!(value instanceof RawObject)) s.fail(`the file holds ${describe(value)}, not an object`);
  const version = value.members.get("schema_version");
  if (!(version instanceof NumberLiteral) || version.text !== String(LEANCTX_SCHEMA_VERSION)) {
    throw new IntegrityError(
      `Unsupported lean-ctx schema_version ${
        quote(version instanceof NumberLiteral ? version.text : describe(version))
      }`,
      { hint: `this ctxsnap reads lean-ctx CONTEXT_SNAPSHOT_V1 (schema_version 1)` },
    );
  }
  const o = s.object(value, "the snapshot", TOP_FIELDS);
  const createdAt = s.text(o.get("created_at"), "created_at");
  if (!RFC3339.test(createdAt) || Number.isNaN(Date.parse(createdAt))) {
    s.fail(`created_at ${quote(createdAt)} is not an RFC 3339 timestamp`);
  }
  const git = s.object(o.get("git")!, "git", ["commit", "branch", "dirty"]);
  const project = s.object(o.get("project")!, "project", ["root_hash", "identity_hash"]);
  const roi = s.object(o.get("roi")!, "roi", [
    "input_tokens",
    "output_tokens",
    "tokens_saved",
    "compression_rate",
  ]);
  const lineage = s.object(o.get("lineage")!, "lineage", ["items_recorded", "items"]);
  const ledger = s.object(o.get("ledger")!, "ledger", [
    "window_size",
    "total_tokens_sent",
    "total_tokens_saved",
    "items",
  ]);
  const sessionRaw = o.get("session")!;
  let session: LeanCtxSession | null = null;
  if (sessionRaw !== null) {
    const m = s.object(sessionRaw, "session", [
      "session_id",
      "task",
      "decisions",
      "files_touched",
      "progress_pct",
    ]);
    const progress = m.get("progress_pct")!;
    session = {
      session_id: s.nullableText(m.get("session_id"), "session.session_id"),
      task: s.nullableText(m.get("task"), "session.task"),
      decisions: s.list(m.get("decisions"), "session.decisions", (v, w) => s.text(v, w)),
      files_touched: s.list(
        m.get("files_touched"),
        "session.files_touched",
        (v, w) => s.text(v, w),
      ),
      progress_pct: progress === null
        ? null
        : Number(s.u64(progress, "session.progress_pct", 255n)),
    };
  }
  const signatureRaw = o.get("signature")!;
  let signature: LeanCtxSignature | null = null;
  if (signatureRaw !== null) {
    const m = s.object(signatureRaw, "signature", ["algorithm", "public_key", "value"]);
    const algorithm = s.text(m.get("algorithm"), "signature.algorithm");
    if (algorithm !== "ed25519") s.fail(`signature algorithm ${quote(algorithm)} is not supported`);
    signature = {
      algorithm: "ed25519",
      public_key: s.hex(m.get("public_key"), "signature.public_key", 64),
      value: s.hex(m.get("value"), "signature.value", 128),
    };
  }
  return {
    schema_version: 1,
    snapshot_id: s.hex(o.get("snapshot_id"), "snapshot_id", 64),
    parent_id: s.nullableText(o.get("parent_id"), "parent_id"),
    created_at: createdAt,
    lean_ctx_version: s.text(o.get("lean_ctx_version"), "lean_ctx_version"),
    git: {
      commit: s.nullableText(git.get("commit"), "git.commit"),
      branch: s.nullableText(git.get("branch"), "git.branch"),
      dirty: s.bool(git.get("dirty"), "git.dirty"),
    },
    project: {
      root_hash: s.nullableText(project.get("root_hash"), "project.root_hash"),
      identity_hash: s.nullableText(project.get("identity_hash"), "project.identity_hash"),
    },
    roi: {
      input_tokens: s.u64(roi.get("input_tokens"), "roi.input_tokens"),
      output_tokens: s.u64(roi.get("output_tokens"), "roi.output_tokens"),
      tokens_saved: s.u64(roi.get("tokens_saved"), "roi.tokens_saved"),
      compression_rate: s.f64(roi.get("compression_rate"), "roi.compression_rate"),
    },
    lineage: {
      items_recorded: s.u64(lineage.get("items_recorded"), "lineage.items_recorded"),
      items: s.list(lineage.get("items"), "lineage.items", (v, w) => {
        const m = s.object(v, w, [
          "seq",
          "kind",
          "tool",
          "path",
          "input_tokens",
          "output_tokens",
          "compression_ratio",
          "content_hash",
        ]);
        return {
          seq: s.u64(m.get("seq"), `${w}.seq`),
          kind: s.text(m.get("kind"), `${w}.kind`),
          tool: s.text(m.get("tool"), `${w}.tool`),
          path: s.nullableText(m.get("path"), `${w}.path`),
          input_tokens: s.u64(m.get("input_tokens"), `${w}.input_tokens`),
          output_tokens: s.u64(m.get("output_tokens"), `${w}.output_tokens`),
          compression_ratio: s.f64(m.get("compression_ratio"), `${w}.compression_ratio`),
          content_hash: s.nullableText(m.get("content_hash"), `${w}.content_hash`),
        };
      }),
    },
    ledger: {
      window_size: s.u64(ledger.get("window_size"), "ledger.window_size"),
      total_tokens_sent: s.u64(ledger.get("total_tokens_sent"), "ledger.total_tokens_sent"),
      total_tokens_saved: s.u64(ledger.get("total_tokens_saved"), "ledger.total_tokens_saved"),
      items: s.list(ledger.get("items"), "ledger.items", (v, w) => {
        const m = s.object(v, w, ["path", "state", "phi", "sent_tokens", "original_tokens"]);
        const phi = m.get("phi")!;
        return {
          path: s.text(m.get("path"), `${w}.path`),
          state: s.text(m.get("state"), `${w}.state`),
          phi: phi === null ? null : s.f64(phi, `${w}.phi`),
          sent_tokens: s.u64(m.get("sent_tokens"), `${w}.sent_tokens`),
          original_tokens: s.u64(m.get("original_tokens"), `${w}.original_tokens`),
        };
      }),
    },
    session,
    signature,
  };
}

// ---------------------------------------------------------------------------
// Writing

function ordered(s: LeanCtxSnapshot, body: boolean): Fields {
  const sig = s.signature;
  return new Fields([
    ["schema_version", new U64(BigInt(s.schema_version))],
    ["snapshot_id", body ? "" : s.snapshot_id],
    ["parent_id", s.parent_id],
    ["created_at", s.created_at],
    ["lean_ctx_version", s.lean_ctx_version],
    [
      "git",
      new Fields([["commit", s.git.commit], ["branch", s.git.branch], ["dirty", s.git.dirty]]),
    ],
    [
      "project",
      new Fields([
        ["root_hash", s.project.root_hash],
        ["identity_hash", s.project.identity_hash],
      ]),
    ],
    [
      "roi",
      new Fields([
        ["input_tokens", new U64(s.roi.input_tokens)],
        ["output_tokens", new U64(s.roi.output_tokens)],
        ["tokens_saved", new U64(s.roi.tokens_saved)],
        ["compression_rate", new F64(s.roi.compression_rate)],
      ]),
    ],
    [
      "lineage",
      new Fields([
        ["items_recorded", new U64(s.lineage.items_recorded)],
        [
          "items",
          s.lineage.items.map((i): Ordered =>
            new Fields([
              ["seq", new U64(i.seq)],
              ["kind", i.kind],
              ["tool", i.tool],
              ["path", i.path],
              ["input_tokens", new U64(i.input_tokens)],
              ["output_tokens", new U64(i.output_tokens)],
              ["compression_ratio", new F64(i.compression_ratio)],
              ["content_hash", i.content_hash],
            ])
          ),
        ],
      ]),
    ],
    [
      "ledger",
      new Fields([
        ["window_size", new U64(s.ledger.window_size)],
        ["total_tokens_sent", new U64(s.ledger.total_tokens_sent)],
        ["total_tokens_saved", new U64(s.ledger.total_tokens_saved)],
        [
          "items",
          s.ledger.items.map((i): Ordered =>
            new Fields([
              ["path", i.path],
              ["state", i.state],
              ["phi", i.phi === null ? null : new F64(i.phi)],
              ["sent_tokens", new U64(i.sent_tokens)],
              ["original_tokens", new U64(i.original_tokens)],
            ])
          ),
        ],
      ]),
    ],
    [
      "session",
      s.session === null ? null : new Fields([
        ["session_id", s.session.session_id],
        ["task", s.session.task],
        ["decisions", [...s.session.decisions]],
        ["files_touched", [...s.session.files_touched]],
        [
          "progress_pct",
          s.session.progress_pct === null ? null : new U64(BigInt(s.session.progress_pct)),
        ],
      ]),
    ],
    [
      "signature",
      body || sig === null ? null : new Fields([
        ["algorithm", sig.algorithm],
        ["public_key", sig.public_key],
        ["value", sig.value],
      ]),
    ],
  ]);
}

/** The canonical body: `snapshot_id` `""`, `signature` null, compact, declaration order. */
export function leanCtxCanonicalBody(snapshot: LeanCtxSnapshot): string {
  return compactJson(ordered(snapshot, true));
}

/** The id of a snapshot's content: lowercase hex BLAKE3 of its canonical body. */
export function leanCtxId(snapshot: LeanCtxSnapshot): string {
  return blake3Hex(new TextEncoder().encode(leanCtxCanonicalBody(snapshot)));
}

/** The published file text: `serde_json::to_string_pretty`, no final newline. */
export function leanCtxFileText(snapshot: LeanCtxSnapshot): string {
  return prettyJson(ordered(snapshot, false));
}

/** The published file name: the first 12 characters of the id + `.ctxsnapshot.json`. */
export function leanCtxFileName(id: string): string {
  return `${id.slice(0, 12)}.ctxsnapshot.json`;
}

/** The signed message: the 64 ASCII bytes of hex SHA-256 of `"ctxsnapshot-sign-v1:" + id`. */
export function leanCtxSigningMessage(id: string): Uint8Array {
  return new TextEncoder().encode(sha256Hex(LEANCTX_SIGNING_PREFIX + id));
}

/** Sets the snapshot's id and signs it with `signer`; returns a new snapshot. */
export async function signLeanCtx(
  snapshot: LeanCtxSnapshot,
  signer: Signer,
): Promise<LeanCtxSnapshot> {
  const id = leanCtxId(snapshot);
  const value = await sign(signer.seed, leanCtxSigningMessage(id));
  return {
    ...snapshot,
    snapshot_id: id,
    signature: { algorithm: "ed25519", public_key: signer.publicKeyHex, value: toHex(value) },
  };
}

// ---------------------------------------------------------------------------
// Checking

/** What {@linkcode checkLeanCtxBytes} found. Tampering is a verdict here, never an exception. */
export interface LeanCtxCheck {
  /** The validated content. */
  snapshot: LeanCtxSnapshot;
  /** BLAKE3 of the canonical body re-derived from the content. */
  computedId: string;
  /** Whether `snapshot_id` equals `computedId`. */
  idMatches: boolean;
  /** Whether a signature block is present. */
  signed: boolean;
  /** Whether the signature verifies over `snapshot_id` (null when unsigned). */
  signatureValid: boolean | null;
  /** Key id of the signing public key (first 16 hex of its SHA-256), or null when unsigned. */
  keyId: string | null;
  /** `canonical` when the bytes are exactly the pretty form of the content, else `non_canonical`. */
  layout: "canonical" | "non_canonical";
  /** Intact: the id matches and, when signed, the signature verifies. */
  intact: boolean;
}

/** Checks a validated snapshot against the text it was read from. */
export async function checkLeanCtx(snapshot: LeanCtxSnapshot, text: string): Promise<LeanCtxCheck> {
  const computedId = leanCtxId(snapshot);
  const idMatches = computedId === snapshot.snapshot_id;
  const sig = snapshot.signature;
  const signatureValid = sig === null ? null : await verify(
    fromHex(sig.public_key, 32),
    leanCtxSigningMessage(snapshot.snapshot_id),
    fromHex(sig.value, 64),
  );
  return {
    snapshot,
    computedId,
    idMatches,
    signed: sig !== null,
    signatureValid,
    keyId: sig === null ? null : keyIdOf(fromHex(sig.public_key, 32)),
    layout: text === leanCtxFileText(snapshot) ? "canonical" : "non_canonical",
    intact: idMatches && signatureValid !== false,
  };
}

/** The verdict on a lean-ctx snapshot under a trust policy. */
export type LeanCtxVerdict = "trusted" | "untrusted" | "unsigned" | "tampered";

/** The verdict of a check: tampered, unsigned, or whether the signer is pinned. */
export function leanCtxVerdict(check: LeanCtxCheck, trust: TrustPolicy): LeanCtxVerdict {
  if (!check.intact) return "tampered";
  const sig = check.snapshot.signature;
  if (sig === null || check.keyId === null) return "unsigned";
  return trust.isTrusted(check.keyId, sig.public_key) ? "trusted" : "untrusted";
}

/** The checks a tampered file fails: `id`, `signature`. */
export function tamperedChecks(check: LeanCtxCheck): string[] {
  const failed: string[] = [];
  if (!check.idMatches) failed.push("id");
  if (check.signatureValid === false) failed.push("signature");
  return failed;
}

/**
 * Strictly reads a lean-ctx file and checks it: structure (throws
 * `IntegrityError`), then id, signature and layout (returned).
 */
export async function checkLeanCtxBytes(bytes: Uint8Array): Promise<LeanCtxCheck> {
  const doc = parseRawDocument(bytes, { maxBytes: MAX_LEANCTX_BYTES, maxDepth: MAX_LEANCTX_DEPTH });
  if (!isLeanCtxDocument(doc.value)) {
    throw new IntegrityError("The file is not a lean-ctx snapshot (it has no schema_version)");
  }
  return await checkLeanCtx(leanCtxFromRaw(doc.value), doc.text);
}

/**
 * Reads a lean-ctx signing key file (`ctxpkg-ed25519.key`): 64 hex characters
 * of seed, surrounding whitespace ignored, either case.
 */
export function parseLeanCtxSeed(text: string): Uint8Array {
  const trimmed = text.trim();
  if (!/^[0-9a-fA-F]{64}$/.test(trimmed)) {
    throw new IntegrityError(
      `A lean-ctx signing key is 64 hex characters; this file holds ${trimmed.length} characters of something else`,
    );
  }
  return fromHex(trimmed.toLowerCase(), 32);
}
