/**
 * The bundle format (`ctxsnap.bundle/v1`): a POSIX tar holding, in order,
 * `ctxsnap-bundle.json` (the manifest), `snapshots/<id>.json` (canonical
 * envelopes), `trees/<id>.json` (canonical manifests) and `blobs/<id>`
 * (raw bytes). The manifest lists every member, so a reader knows the whole
 * set and every size before it reads any data, and refuses anything else.
 *
 * {@linkcode readBundle} is a single streaming pass that checks everything —
 * the manifest, every envelope (id and signature), every tree (hash, schema,
 * references) and every blob (hash and size) — handing verified items to an
 * optional visitor. Nothing is trusted until its hash has been checked.
 *
 * @example
 * ```ts
 * import { BUNDLE_FORMAT, isBundleName } from "./bundle.ts";
 * if (!(BUNDLE_FORMAT === "ctxsnap.bundle/v1")) throw new Error("Example failed");
 * if (!(isBundleName("blobs/" + "0".repeat(64)) && !isBundleName("../x"))) throw new Error("Example failed");
 * ```
 * @module
 */
import { canonicalBytes, parseCanonical } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import { createSha256, sha256Hex } from "../crypto/hash.ts";
import { MAX_TREE_ENTRIES, type TreeManifest } from "./tree.ts";
import { type DirTree, MAX_TREE_DEPTH } from "./dir_tree.ts";
import { MAX_TREE_BYTES, parseTreeObject } from "./tree_object.ts";
import { checkEnvelope, type Envelope, MAX_ENVELOPE_BYTES, parseEnvelope } from "./envelope.ts";
import { BundleFormatError, TarReader, TarWriter } from "./tar.ts";
import { ManifestScanner, type PackedManifest } from "./_manifest.ts";

/** The bundle format tag. */
export const BUNDLE_FORMAT = "ctxsnap.bundle/v1";
/** The manifest member's name. */
export const MANIFEST_NAME = "ctxsnap-bundle.json";
/** Largest manifest accepted. */
export const MAX_MANIFEST_BYTES: number = 256 * 1024 * 1024;
/**
 * A refused manifest up to this size is also parsed as generic JSON, only to
 * name the problem precisely (non-canonical form, an unknown field). Larger
 * ones are never held in memory: the first problem the scanner meets is reported.
 */
const DIAGNOSE_BYTES = 1024 * 1024;
/** Most snapshots one bundle may hold. */
export const MAX_BUNDLE_SNAPSHOTS = 100_000;

const NAME_RE =
  /^(ctxsnap-bundle\.json|snapshots\/[0-9a-f]{64}\.json|trees\/[0-9a-f]{64}\.json|blobs\/[0-9a-f]{64})$/;

/** Whether `name` is a member name the bundle layout allows. */
export function isBundleName(name: string): boolean {
  return NAME_RE.test(name);
}

/** The bundle manifest. */
export interface BundleManifest {
  /** Always {@linkcode BUNDLE_FORMAT}. */
  format: typeof BUNDLE_FORMAT;
  /** The snapshot the bundle was published for. */
  primary: string;
  /** Every snapshot, oldest first; the primary is last. */
  snapshots: string[];
  /** Whether workspace content (trees and blobs) is included. */
  workspace: boolean;
  /** Every tree id, sorted. */
  trees: string[];
  /** Every blob with its size, sorted by id. */
  blobs: { id: string; size: number }[];
}

function fail(message: string): never {
  throw new BundleFormatError(`Invalid bundle: ${message}`);
}

/** Validates an untrusted manifest value. */
export function validateManifest(value: unknown): BundleManifest {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    fail("manifest is not an object");
  }
  const o = value as Record<string, unknown>;
  if (o.format !== BUNDLE_FORMAT) {
    throw new BundleFormatError(`Unsupported bundle format ${quote(o.format)}`, {
      hint: `this ctxsnap reads ${BUNDLE_FORMAT}; upgrade ctxsnap`,
    });
  }
  const keys = ["format", "primary", "snapshots", "workspace", "trees", "blobs"];
  for (const key of Object.keys(o)) {
    if (!keys.includes(key)) fail(`manifest has unknown field ${quote(key)}`);
  }
  for (const key of keys) if (!(key in o)) fail(`manifest lacks field ${quote(key)}`);
  const ids = (value: unknown, what: string, max: number, sorted: boolean): string[] => {
    if (!Array.isArray(value) || value.length > max) {
      fail(`${what} is not a list of at most ${max} ids`);
    }
    const seen = new Set<string>();
    let previous = "";
    for (const id of value) {
      if (typeof id !== "string" || !isHex(id, 64)) {
        fail(`${what} holds ${quote(id)}, not a 64-hex id`);
      }
      if (seen.has(id)) fail(`${what} repeats ${quote(id)}`);
      if (sorted && id < previous) fail(`${what} are not sorted at ${quote(id)}`);
      seen.add(id);
      previous = id;
    }
    return value as string[];
  };
  const snapshots = ids(o.snapshots, "snapshots", MAX_BUNDLE_SNAPSHOTS, false);
  if (typeof o.primary !== "string" || snapshots[snapshots.length - 1] !== o.primary) {
    fail("primary is not the last listed snapshot");
  }
  if (typeof o.workspace !== "boolean") fail("workspace is not a boolean");
  const trees = ids(o.trees, "trees", 10_000_000, true);
  if (!Array.isArray(o.blobs)) fail("blobs is not a list");
  const blobs: { id: string; size: number }[] = [];
  const seen = new Set<string>();
  for (const raw of o.blobs) {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      fail("a blob record is not an object");
    }
    const b = raw as Record<string, unknown>;
    if (Object.keys(b).length !== 2 || typeof b.id !== "string" || !isHex(b.id, 64)) {
      fail("a blob record is malformed");
    }
    if (!Number.isSafeInteger(b.size) || (b.size as number) < 0) {
      fail(`blob ${quote(b.id)} has an invalid size`);
    }
    if (seen.has(b.id)) fail(`blobs repeats ${quote(b.id)}`);
    const last = blobs[blobs.length - 1];
    if (last !== undefined && b.id < last.id) fail(`blobs are not sorted at ${quote(b.id)}`);
    seen.add(b.id);
    blobs.push({ id: b.id, size: b.size as number });
  }
  if (!o.workspace && (trees.length > 0 || blobs.length > 0)) {
    fail("workspace is false but trees or blobs are listed");
  }
  return {
    format: BUNDLE_FORMAT,
    primary: o.primary,
    snapshots,
    workspace: o.workspace,
    trees,
    blobs,
  };
}

/** Receives verified bundle content during {@linkcode readBundle}. */
export interface BundleVisitor {
  /** A verified envelope (id recomputed, signature checked) and its canonical bytes. */
  snapshot?(envelope: Envelope, signatureValid: boolean): void | Promise<void>;
  /** A verified tree object of either version (a flat manifest or one directory). */
  tree?(id: string, tree: TreeManifest | DirTree, bytes: Uint8Array): void;
  /** Called before a blob's data; return a sink for its chunks, or null. */
  blobStart?(id: string, size: number): ((chunk: Uint8Array) => void) | null;
  /** Called after a blob's hash and size were verified. */
  blobEnd?(id: string, size: number): void;
}

/** What a bundle's manifest says, in brief. */
export interface ManifestSummary {
  /** The snapshot the bundle was published for. */
  primary: string;
  /** Every snapshot, oldest first. */
  snapshots: string[];
  /** Whether workspace content (trees and blobs) is included. */
  workspace: boolean;
  /** Number of trees. */
  trees: number;
  /** Number of blobs. */
  blobs: number;
}

/** What {@linkcode readBundle} found. */
export interface BundleSummary {
  /** The manifest, in brief (the id lists are not kept: they may be huge). */
  manifest: ManifestSummary;
  /** Envelopes in bundle order (oldest first). */
  envelopes: Envelope[];
  /** Snapshot ids whose signature did not verify. */
  badSignatures: string[];
  /** Total bytes of blobs. */
  blobBytes: number;
}

/**
 * Checks the directory trees of a bundle as a hierarchy (FORMAT.md §2.2):
 * every subtree is a non-empty version 2 tree and no chain of subtrees is
 * deeper than {@linkcode MAX_TREE_DEPTH}.
 */
function checkHierarchy(
  count: number,
  versions: Uint8Array,
  empty: Uint8Array,
  subtrees: Map<number, number[]>,
  direct: Float64Array,
  idOf: (t: number) => string,
): void {
  const height = new Int32Array(count).fill(-1);
  // Entries each tree expands to, counted once per distinct tree (a few
  // objects naming one subtree many times must not pass as small).
  const expanded = new Float64Array(count);
  const measure = (t: number, depth: number): number => {
    if (depth > MAX_TREE_DEPTH) {
      throw new IntegrityError(
        `Tree ${quote(idOf(t))} nests directories deeper than ${MAX_TREE_DEPTH}`,
      );
    }
    if (height[t]! >= 0) {
      if (depth + height[t]! > MAX_TREE_DEPTH) {
        throw new IntegrityError(
          `Tree ${quote(idOf(t))} nests directories deeper than ${MAX_TREE_DEPTH}`,
        );
      }
      return height[t]!;
    }
    let most = 0;
    let total = direct[t]!;
    for (const sub of subtrees.get(t) ?? []) {
      if (versions[sub] !== 2) {
        fail(`tree ${quote(idOf(t))} names a subtree that is not a version 2 tree`);
      }
      if (empty[sub] === 1) fail(`tree ${quote(idOf(t))} names an empty subtree`);
      most = Math.max(most, measure(sub, depth + 1) + 1);
      total += expanded[sub]!;
      if (total > MAX_TREE_ENTRIES) {
        fail(`tree ${quote(idOf(t))} expands to more than ${MAX_TREE_ENTRIES} entries`);
      }
    }
    expanded[t] = total;
    height[t] = most;
    return most;
  };
  for (const t of subtrees.keys()) measure(t, 0);
}

/**
 * Reads and verifies a whole bundle in one streaming pass. Throws
 * {@linkcode BundleFormatError} / {@linkcode IntegrityError} on anything
 * malformed, missing, extra, out of order or not matching its hash.
 * Signatures that do not verify are reported in `badSignatures`.
 */
export async function readBundle(
  readChunk: (buffer: Uint8Array) => number,
  visitor: BundleVisitor = {},
): Promise<BundleSummary> {
  const reader = new TarReader(readChunk, { allowName: isBundleName });
  let member: string | undefined;
  try {
    return await readMembers(reader, visitor, (name) => member = name);
  } catch (error) {
    // Say where: the member being read when a check failed.
    if (error instanceof IntegrityError) {
      error.at ??= member;
      error.check ??= error instanceof BundleFormatError ? "bundle_format" : "integrity";
    }
    throw error;
  }
}

async function readMembers(
  reader: TarReader,
  visitor: BundleVisitor,
  reading: (name: string) => void,
): Promise<BundleSummary> {
  reading(MANIFEST_NAME);
  const first = reader.next();
  if (first === null || first.name !== MANIFEST_NAME) {
    fail(`the first member is not ${MANIFEST_NAME}`);
  }
  const manifest = readManifest(reader, first.size);
  const envelopes: Envelope[] = [];
  const badSignatures: string[] = [];
  const { trees, blobs, blobSizes } = manifest;
  const neededTrees = new Uint8Array(trees.count);
  const neededBlobs = new Uint8Array(blobs.count);
  // What the directory trees' hierarchy is checked with once all are read.
  const versions = new Uint8Array(trees.count);
  const empty = new Uint8Array(trees.count);
  const subtrees = new Map<number, number[]>();
  const direct = new Float64Array(trees.count);
  let blobBytes = 0;

  const next = (name: string) => {
    reading(name);
    const member = reader.next();
    if (member === null) fail(`it ends before ${quote(name)}`);
    if (member.name !== name) fail(`expected member ${quote(name)}, found ${quote(member.name)}`);
    return member;
  };
  for (const id of manifest.snapshots) {
    next(`snapshots/${id}.json`);
    const bytes = reader.readAll(MAX_ENVELOPE_BYTES);
    const envelope = parseEnvelope(bytes);
    if (!equalBytes(bytes, canonicalBytes(envelope))) {
      fail(`snapshot ${quote(id)} is not in canonical form`);
    }
    const check = await checkEnvelope(envelope);
    if (envelope.id !== id || !check.idMatches) {
      throw new IntegrityError(`Snapshot ${quote(id)} in the bundle does not match its body`, {
        check: "id",
      });
    }
    if (!check.signatureValid) badSignatures.push(id);
    if (manifest.workspace && envelope.body.workspace !== null) {
      const index = trees.indexOf(envelope.body.workspace.tree);
      if (index < 0) {
        fail(
          `snapshot ${quote(id)} names tree ${
            quote(envelope.body.workspace.tree)
          }, which is not included`,
        );
      }
      neededTrees[index] = 1;
    }
    envelopes.push(envelope);
    await visitor.snapshot?.(envelope, check.signatureValid);
  }
  for (let t = 0; t < trees.count; t++) {
    const id = trees.hexAt(t);
    next(`trees/${id}.json`);
    const bytes = reader.readAll(MAX_TREE_BYTES);
    if (sha256Hex(bytes) !== id) {
      throw new IntegrityError(`Tree ${quote(id)} in the bundle does not match its hash`, {
        check: "tree_hash",
      });
    }
    const tree = parseTreeObject(bytes);
    versions[t] = tree.version;
    if (tree.version === 2 && tree.entries.length === 0 && tree.skipped.length === 0) {
      empty[t] = 1;
    }
    const below: number[] = [];
    for (const entry of tree.entries) {
      if (entry.type === "tree") {
        const index = trees.indexOf(entry.tree);
        if (index < 0) {
          fail(`tree ${quote(id)} needs subtree ${quote(entry.tree)}, which is not included`);
        }
        neededTrees[index] = 1;
        below.push(index);
        continue;
      }
      if (entry.type !== "file") continue;
      const index = blobs.indexOf(entry.blob);
      if (index < 0) {
        fail(`tree ${quote(id)} needs blob ${quote(entry.blob)}, which is not included`);
      }
      const size = blobSizes[index]!;
      if (size !== entry.size) {
        fail(`blob ${quote(entry.blob)} is listed with size ${size}, its tree says ${entry.size}`);
      }
      neededBlobs[index] = 1;
    }
    if (below.length > 0) subtrees.set(t, below);
    direct[t] = tree.entries.length - below.length;
    visitor.tree?.(id, tree, bytes);
  }
  checkHierarchy(trees.count, versions, empty, subtrees, direct, (t) => trees.hexAt(t));
  for (let b = 0; b < blobs.count; b++) {
    const id = blobs.hexAt(b);
    const member = next(`blobs/${id}`);
    const size = blobSizes[b]!;
    if (member.size !== size) {
      fail(`blob ${quote(id)} has ${member.size} bytes, the manifest says ${size}`);
    }
    const sink = visitor.blobStart?.(id, size) ?? null;
    const hasher = createSha256();
    reader.stream((chunk) => {
      hasher.update(chunk);
      sink?.(chunk);
    });
    if (hasher.digestHex() !== id) {
      throw new IntegrityError(`Blob ${quote(id)} in the bundle does not match its hash`, {
        check: "blob_hash",
      });
    }
    blobBytes += size;
    visitor.blobEnd?.(id, size);
  }
  reading("end of archive");
  const extra = reader.next();
  if (extra !== null) fail(`unlisted member ${quote(extra.name)}`);
  const unusedTree = neededTrees.indexOf(0);
  if (unusedTree >= 0) fail(`tree ${quote(trees.hexAt(unusedTree))} is not used by any snapshot`);
  const unusedBlob = neededBlobs.indexOf(0);
  if (unusedBlob >= 0) fail(`blob ${quote(blobs.hexAt(unusedBlob))} is not used by any tree`);
  return {
    manifest: {
      primary: manifest.primary,
      snapshots: manifest.snapshots,
      workspace: manifest.workspace,
      trees: trees.count,
      blobs: blobs.count,
    },
    envelopes,
    badSignatures,
    blobBytes,
  };
}

/**
 * Reads the manifest member with bounded memory: its bytes stream through a
 * {@linkcode ManifestScanner}, which keeps only packed ids and sizes. A small
 * manifest the scanner refuses is parsed generically as well, only to say
 * precisely what is wrong with it.
 */
function readManifest(reader: TarReader, size: number): PackedManifest {
  if (size > MAX_MANIFEST_BYTES) reader.readAll(MAX_MANIFEST_BYTES); // refuses it, naming the size
  const scanner = new ManifestScanner();
  if (size > DIAGNOSE_BYTES) {
    reader.stream((chunk) => scanner.push(chunk));
    return scanner.finish();
  }
  const bytes = reader.readAll(DIAGNOSE_BYTES);
  try {
    scanner.push(bytes);
    return scanner.finish();
  } catch (error) {
    validateManifest(parseCanonical(bytes, { maxBytes: DIAGNOSE_BYTES }));
    throw error;
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Where a bundle's content comes from when writing. */
export interface BundleSource {
  /** Envelopes, oldest first; the last is the primary. */
  envelopes: Envelope[];
  /** Trees to include (empty for an envelope-only bundle). */
  trees: Map<string, Uint8Array>;
  /** Blobs to include with sizes. */
  blobs: Map<string, number>;
  /** Streams a blob's bytes (must verify its hash). */
  streamBlob(id: string, onChunk: (chunk: Uint8Array) => void): void;
}

/** Writes a bundle to `write` (sync sink), streaming blobs. */
export function writeBundle(
  source: BundleSource,
  write: (chunk: Uint8Array) => void,
): BundleManifest {
  const primary = source.envelopes[source.envelopes.length - 1];
  if (primary === undefined) throw new IntegrityError("A bundle needs at least one snapshot");
  const trees = [...source.trees.keys()].sort();
  const blobs = [...source.blobs.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map((
    [id, size],
  ) => ({ id, size }));
  const manifest: BundleManifest = {
    format: BUNDLE_FORMAT,
    primary: primary.id,
    snapshots: source.envelopes.map((e) => e.id),
    workspace: trees.length > 0,
    trees,
    blobs,
  };
  const tar = new TarWriter(write);
  tar.addFile(MANIFEST_NAME, canonicalBytes(manifest));
  for (const envelope of source.envelopes) {
    tar.addFile(`snapshots/${envelope.id}.json`, canonicalBytes(envelope));
  }
  for (const id of trees) tar.addFile(`trees/${id}.json`, source.trees.get(id)!);
  for (const { id, size } of blobs) {
    const sink = tar.beginFile(`blobs/${id}`, size);
    source.streamBlob(id, (chunk) => sink.write(chunk));
    sink.end();
  }
  tar.finish();
  return manifest;
}
