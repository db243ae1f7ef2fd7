/**
 * One file as a snapshot recorded it, a bounded part at a time, for the
 * `read_file` tool (layer: cli). The envelope is verified (id and
 * signature) and the blob re-hashed while it is read; text comes as UTF-8
 * cut on character boundaries, a binary file is marked and not shown, a
 * symlink gives its target, and a path the snapshot left out says why.
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { createSnapshot } from "../../history/create.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * import { readFileAt } from "./_read_file.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "héllo\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const { id } = await createSnapshot(store, me, { reason: "one" });
 * const read = await readFileAt(store, id, "a.txt", { offset: 0, length: 8000, maxChars: 9000 });
 * if (read.content !== "héllo\n" || read.binary) throw new Error("read");
 * store.close();
 * ```
 * @module
 */
import { NotFoundError, quote, UsageError } from "../../errors.ts";
import type { Store } from "../../repository/store.ts";
import { readEnvelope } from "../../history/timeline.ts";

/** What `read_file` answers. */
export interface FileAt {
  /** The snapshot id. */
  id: string;
  /** The path, as given (normalized). */
  path: string;
  /** `file` or `symlink`. */
  type: "file" | "symlink";
  /** Size in bytes (of the link target for a symlink). */
  size: number;
  /** Permission bits (files), or null. */
  mode: number | null;
  /** Whether the file is binary (a NUL byte, or not UTF-8): its content is then null. */
  binary: boolean;
  /** The first byte shown. */
  offset: number;
  /** The bytes shown. */
  length: number;
  /** The text shown (the link target for a symlink), or null for a binary file. */
  content: string | null;
  /** Where the next part starts, or null at the end. */
  next_offset: number | null;
}

/** Options of {@linkcode readFileAt}. */
export interface ReadOptions {
  /** First byte wanted. */
  offset: number;
  /** Most bytes wanted. */
  length: number;
  /** Most characters the content may take as a JSON string. */
  maxChars: number;
}

/** Bytes looked at for a NUL to tell a binary file. */
const SNIFF = 8000;

function normalize(given: string): string {
  const parts = given.replaceAll("\\", "/").split("/").filter((p) => p !== "" && p !== ".");
  if (given.startsWith("/") || parts.some((p) => p === "..") || parts.length === 0) {
    throw new UsageError(
      `path ${quote(given)} must be relative to the workspace, without ".."`,
    );
  }
  return parts.join("/");
}

function isContinuation(byte: number | undefined): boolean {
  return byte !== undefined && (byte & 0xc0) === 0x80;
}

/** Reads part of file `path` as snapshot `id` (a full id) recorded it. */
export async function readFileAt(
  store: Store,
  id: string,
  given: string,
  options: ReadOptions,
): Promise<FileAt> {
  const file = normalize(given);
  const envelope = await readEnvelope(store, id); // id and signature checked
  const short = id.slice(0, 12);
  const ref = envelope.body.workspace;
  if (ref === null) {
    throw new NotFoundError(`Snapshot ${short} recorded no workspace files`);
  }
  let tree;
  try {
    tree = store.getTree(ref.tree);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    throw new NotFoundError(`Snapshot ${short} has no workspace content in this store`);
  }
  const entry = tree.entries.find((e) => e.path === file);
  if (entry === undefined) {
    const skipped = tree.skipped.find((s) => s.path === file);
    if (skipped !== undefined) {
      throw new NotFoundError(
        `Snapshot ${short} left ${quote(file)} out (${skipped.reason}): it has no content`,
      );
    }
    const below = tree.entries.filter((e) => e.path.startsWith(`${file}/`)).length;
    if (below > 0) {
      throw new UsageError(
        `${quote(file)} is a directory in snapshot ${short} (${below} entries below it)`,
        { hint: "read one of its files" },
      );
    }
    throw new NotFoundError(`No file ${quote(file)} in snapshot ${short}`);
  }
  if (entry.type === "symlink") {
    return {
      id,
      path: file,
      type: "symlink",
      size: new TextEncoder().encode(entry.target).byteLength,
      mode: null,
      binary: false,
      offset: 0,
      length: 0,
      content: entry.target.slice(0, options.maxChars / 6),
      next_offset: null,
    };
  }
  const from = Math.min(options.offset, entry.size);
  const want = Math.max(0, Math.min(options.length, entry.size - from));
  // The wanted bytes, three more to finish a character, and the start to sniff.
  const window = new Uint8Array(want + 3);
  const head = new Uint8Array(Math.min(SNIFF, entry.size));
  let at = 0;
  let before = 0; // the byte before `from`, to tell a character's middle
  store.streamBlob(entry.blob, (chunk) => {
    const start = at;
    at += chunk.byteLength;
    if (start < head.byteLength) head.set(chunk.subarray(0, head.byteLength - start), start);
    const lo = Math.max(start, from);
    const hi = Math.min(at, from + window.byteLength);
    if (lo < hi) window.set(chunk.subarray(lo - start, hi - start), lo - from);
    if (from > 0 && start <= from - 1 && from - 1 < at) before = chunk[from - 1 - start]!;
  }); // re-hashed: a corrupt blob throws
  const base: Omit<FileAt, "binary" | "offset" | "length" | "content" | "next_offset"> = {
    id,
    path: file,
    type: "file",
    size: entry.size,
    mode: entry.mode,
  };
  if (head.includes(0)) {
    return { ...base, binary: true, offset: from, length: 0, content: null, next_offset: null };
  }
  // Start on a character: skip continuation bytes a previous part ended inside.
  let lo = 0;
  if (from > 0 && isContinuation(window[0]) && (before & 0x80) !== 0) {
    while (lo < 3 && isContinuation(window[lo])) lo++;
  }
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let end = Math.min(want, window.byteLength);
  // End on a character: take up to three more bytes to finish one.
  while (end < window.byteLength && from + end < entry.size && isContinuation(window[end])) end++;
  for (;;) {
    let text: string;
    try {
      if (window.subarray(lo, end).includes(0)) throw new Error("NUL");
      text = decoder.decode(window.subarray(lo, end));
    } catch {
      return { ...base, binary: true, offset: from, length: 0, content: null, next_offset: null };
    }
    if (JSON.stringify(text).length <= options.maxChars || end - lo <= 1) {
      const next = from + end;
      return {
        ...base,
        binary: false,
        offset: from + lo,
        length: end - lo,
        content: text,
        next_offset: next < entry.size ? next : null,
      };
    }
    // Escaping made it too long: show less, still ending on a character.
    end = lo + Math.floor((end - lo) / 2);
    while (end > lo + 1 && isContinuation(window[end])) end--;
  }
}
