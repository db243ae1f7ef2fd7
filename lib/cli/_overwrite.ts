/**
 * Writers never destroy evidence: before `timeline --html FILE`, `publish
 * --out FILE` (any file a command writes by name) replaces an existing file,
 * {@linkcode checkOverwrite} refuses when that file is an input of the same
 * run (always), or when it is not of the writer's own kind (a page over a
 * bundle, a bundle over a README) or, for a published file, not of the same
 * snapshot (another snapshot's bundle), unless `--force`.
 *
 * @example
 * ```ts
 * import { kindOfBytes } from "./_overwrite.ts";
 * const page = '<!DOCTYPE html>\n<meta name="generator" content="ctxsnap 0.1.0">';
 * if (kindOfBytes(new TextEncoder().encode(page)) !== "html") throw new Error("a page");
 * if (kindOfBytes(new TextEncoder().encode("# notes\n")) !== "other") throw new Error("other");
 * ```
 * @module
 */
import * as fs from "node:fs";
import { ConflictError, quote } from "../errors.ts";

/** What a file written by ctxsnap is. */
export type WrittenKind = "html" | "snapshot" | "bundle" | "lean-ctx";

/** The kind of an existing file from its first bytes, or `other`. */
export function kindOfBytes(head: Uint8Array): WrittenKind | "other" {
  const text = new TextDecoder().decode(head.subarray(0, 4096));
  if (/^<!DOCTYPE html>/i.test(text) && text.includes('content="ctxsnap ')) return "html";
  const magic = new TextDecoder().decode(head.subarray(257, 262));
  if (head.length >= 262 && magic === "ustar") return "bundle";
  const json = text.trimStart();
  if (json.startsWith("{")) {
    if (/"schema_version"\s*:/.test(json)) return "lean-ctx";
    if (/^\{\s*"body"\s*:|^\{\s*"id"\s*:/.test(json)) return "snapshot";
  }
  return "other";
}

const NAMES: Record<WrittenKind | "other", string> = {
  html: "a ctxsnap timeline page",
  snapshot: "a published snapshot",
  bundle: "a ctxsnap bundle",
  "lean-ctx": "a lean-ctx snapshot file",
  other: "a file ctxsnap did not write",
};

function identity(p: string): string | null {
  try {
    const st = fs.statSync(p);
    return `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
}

/**
 * Refuses (exit 5) to replace `file` when it is one of `inputs` (the same
 * file, by device and inode, so another name or a link is caught too), or
 * when it exists, is not empty, and is not of kind `kind` and `force` is not
 * set. A missing file is always fine.
 */
export function checkOverwrite(
  file: string,
  kind: WrittenKind,
  options: {
    inputs?: readonly string[];
    force?: boolean;
    shown?: string;
    /** For a published snapshot or bundle: the snapshot it is for; another one's file is refused. */
    snapshot?: string;
  } = {},
): void {
  const shown = options.shown ?? file;
  const id = identity(file);
  if (id === null) return;
  for (const input of options.inputs ?? []) {
    if (input !== "-" && identity(input) === id) {
      throw new ConflictError(
        `Refusing to write over ${quote(shown)}: it is the input of this command`,
        { hint: "write the output to another file" },
      );
    }
  }
  if (options.force === true) return;
  let head = new Uint8Array(0);
  try {
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    try {
      if (!fs.fstatSync(fd).isFile()) return; // a FIFO, a device: the write itself decides
      head = new Uint8Array(4096);
      head = head.subarray(0, fs.readSync(fd, head, 0, 4096, 0));
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return; // unreadable: the write itself reports what is wrong
  }
  if (head.length === 0) return;
  const found = kindOfBytes(head);
  if (
    found === kind && options.snapshot !== undefined && (kind === "snapshot" || kind === "bundle")
  ) {
    const other = publishedFor(file, kind, options.snapshot);
    if (other === null) return;
    throw new ConflictError(
      `Refusing to replace ${quote(shown)}: it is ${NAMES[found]} of another snapshot${other}`,
      { hint: "choose another file name, or pass --force to replace it" },
    );
  }
  if (found === kind) return;
  throw new ConflictError(
    `Refusing to replace ${quote(shown)}: it is ${NAMES[found]}, not ${NAMES[kind]}`,
    {
      hint: found === "bundle" || found === "snapshot" || found === "lean-ctx"
        ? `to look at it, make the page from it: ctxsnap timeline --html review.html ${shown}; or pass --force to replace it`
        : "choose another file name, or pass --force to replace it",
    },
  );
}

/** Longest stretch of an existing bundle read to find the snapshot it is for. */
const MAX_SCAN_BYTES = 64 * 1024 * 1024;

/**
 * Null when the published file at `file` is for `snapshot`, else a note on
 * what it is for (`" (a1b2c3d4e5f6)"`, or `""` when that cannot be read). A
 * published snapshot names its id at the top; a bundle's manifest (its first
 * member, canonical JSON) holds `"primary":"ID"`.
 */
function publishedFor(file: string, kind: "snapshot" | "bundle", snapshot: string): string | null {
  const needle = kind === "snapshot" ? `"id": "${snapshot}"` : `"primary":"${snapshot}"`;
  const pattern = kind === "snapshot" ? /"id":\s*"([0-9a-f]{64})"/ : /"primary":"([0-9a-f]{64})"/;
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    const chunk = new Uint8Array(1024 * 1024);
    const decoder = new TextDecoder();
    let text = "";
    for (let at = 0; at < MAX_SCAN_BYTES;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, at);
      if (n === 0) break;
      at += n;
      // Keep a tail so that a needle across two reads is still found.
      text = text.slice(-200) + decoder.decode(chunk.subarray(0, n), { stream: true });
      if (text.includes(needle)) return null;
      const m = pattern.exec(text);
      if (m !== null) return ` (${m[1]!.slice(0, 12)})`;
    }
    return "";
  } finally {
    fs.closeSync(fd);
  }
}
