/**
 * Publishing: a snapshot as a portable file. Without workspace content it is
 * `<id12>.ctxsnapshot.json` (the envelope, pretty-printed: no file content
 * leaves the machine); with it, or with history, a `<id12>.ctxbundle` tar
 * streamed from the store so memory stays flat.
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { createSnapshot } from "../history/create.ts";
 * import { publishToFile } from "./publish.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "a\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const snap = await createSnapshot(store, await loadOrCreateIdentity(await Deno.makeTempDir()), {});
 * const out = await publishToFile(store, snap.id, { dir: ws, withWorkspace: true });
 * if (!(out.path.endsWith(".ctxbundle"))) throw new Error("Example failed");
 * store.close();
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { CtxsnapError, IoError, NotFoundError, quote, reasonOf, UsageError } from "../errors.ts";
import { fsyncDir, TEMP_PREFIX } from "../workspace/io/atomic.ts";
import { isSafeRelativePath } from "../workspace/io/path.ts";
import { isInsideReservedPath, isReservedName } from "../workspace/io/reserved.ts";
import { SafeWriter } from "../workspace/io/safe_write.ts";
import type { Store } from "../repository/store.ts";
import { reachableObjects } from "../repository/reach.ts";
import type { Envelope } from "../format/envelope.ts";
import { readEnvelope } from "../history/timeline.ts";
import { type BundleManifest, writeBundle } from "../format/bundle.ts";
import { writeAllSync } from "../workspace/io/fd.ts";

/** Options of {@linkcode planPublish}. */
export interface PublishOptions {
  /** Include the workspace trees and blobs (a bundle). */
  withWorkspace?: boolean;
  /** Include this many ancestors, or all of them (a bundle). */
  history?: number | "all";
}

/** What will be published. */
export interface PublishPlan {
  /** `snapshot` (one envelope, JSON) or `bundle` (tar). */
  kind: "snapshot" | "bundle";
  /** The default file name. */
  fileName: string;
  /** Envelopes, oldest first; the primary is last. */
  envelopes: Envelope[];
  /** Whether workspace content is included. */
  withWorkspace: boolean;
}

/**
 * Collects the envelopes to publish, each verified (id and signature) as it
 * is read: a tampered stored envelope is never published. Ancestors missing
 * from the store end the history.
 */
export async function planPublish(
  store: Store,
  id: string,
  options: PublishOptions = {},
): Promise<PublishPlan> {
  const primary = await readEnvelope(store, id);
  const envelopes = [primary];
  const limit = options.history === "all" ? Infinity : options.history ?? 0;
  let parent = primary.body.parent;
  while (parent !== null && envelopes.length - 1 < limit) {
    let envelope: Envelope;
    try {
      envelope = await readEnvelope(store, parent);
    } catch (error) {
      if (error instanceof NotFoundError) break; // forgotten or never imported: history ends here
      throw error;
    }
    envelopes.push(envelope);
    parent = envelope.body.parent;
  }
  envelopes.reverse();
  const bundle = options.withWorkspace === true || envelopes.length > 1;
  return {
    kind: bundle ? "bundle" : "snapshot",
    fileName: `${id.slice(0, 12)}.${bundle ? "ctxbundle" : "ctxsnapshot.json"}`,
    envelopes,
    withWorkspace: options.withWorkspace === true,
  };
}

/** The published-snapshot text of an envelope: pretty JSON with a final newline. */
export function publishedSnapshotText(envelope: Envelope): string {
  return JSON.stringify(envelope, null, 2) + "\n";
}

/** Streams the published file to `write`. Returns the bundle manifest (or null for a snapshot). */
export function writePublished(
  store: Store,
  plan: PublishPlan,
  write: (chunk: Uint8Array) => void,
): BundleManifest | null {
  if (plan.kind === "snapshot") {
    write(new TextEncoder().encode(publishedSnapshotText(plan.envelopes[0]!)));
    return null;
  }
  const trees = new Map<string, Uint8Array>();
  const blobs = new Map<string, number>();
  if (plan.withWorkspace) {
    const roots = plan.envelopes.flatMap((e) =>
      e.body.workspace === null ? [] : [e.body.workspace.tree]
    );
    for (const object of reachableObjects(store, roots)) {
      if (object.kind === "tree") trees.set(object.id, object.bytes);
      else blobs.set(object.id, object.size);
    }
  }
  return writeBundle(
    {
      envelopes: plan.envelopes,
      trees,
      blobs,
      streamBlob: (id, onChunk) => store.streamBlob(id, onChunk),
    },
    write,
  );
}

/** A sink writing to a file descriptor. */
export function fdWriter(fd: number): (chunk: Uint8Array) => void {
  return (chunk) => writeAllSync(fd, chunk);
}

/** What {@linkcode publishToFile} wrote. */
export interface PublishResult {
  /** Absolute path written. */
  path: string;
  /** `snapshot` or `bundle`. */
  kind: "snapshot" | "bundle";
  /** Bytes written. */
  bytes: number;
  /** Snapshots included. */
  snapshots: string[];
  /** Blobs included. */
  blobs: number;
}

/**
 * Publishes snapshot `id` to `file` (or `<dir>/<default name>`), atomically:
 * a temp file in the same directory, fsynced and renamed.
 */
export async function publishToFile(
  store: Store,
  id: string,
  options: PublishOptions & {
    file?: string;
    dir?: string;
    below?: PublishBelow;
    /** Called with the final path and kind before anything is written; may throw to refuse. */
    beforeWrite?: (target: string, kind: "snapshot" | "bundle") => void;
  },
): Promise<PublishResult> {
  const plan = await planPublish(store, id, options);
  if (options.below !== undefined) return publishBelow(store, plan, options.below);
  const target = path.resolve(options.file ?? path.join(options.dir ?? ".", plan.fileName));
  options.beforeWrite?.(target, plan.kind);
  const dir = path.dirname(target);
  const temp = path.join(dir, `${TEMP_PREFIX}${crypto.randomUUID()}`);
  let fd: number | null = null;
  try {
    fd = fs.openSync(
      temp,
      fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY,
      0o644,
    );
    let bytes = 0;
    const sink = fdWriter(fd);
    const manifest = writePublished(store, plan, (chunk) => {
      bytes += chunk.byteLength;
      sink(chunk);
    });
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = null;
    fs.renameSync(temp, target);
    fsyncDir(dir);
    return {
      path: target,
      kind: plan.kind,
      bytes,
      snapshots: plan.envelopes.map((e) => e.id),
      blobs: manifest?.blobs.length ?? 0,
    };
  } catch (error) {
    if (fd !== null) fs.closeSync(fd);
    try {
      fs.rmSync(temp, { force: true });
    } catch {
      // Never created (its directory is not one): the original error is the one to report.
    }
    if (error instanceof CtxsnapError) throw error;
    throw new IoError(`Cannot write ${quote(target)}: ${reasonOf(error)}`, {
      cause: error,
      path: target,
      hint: "name a directory you can write to, or a file in one, with --out",
    });
  }
}

/**
 * A new file below a directory ctxsnap may write in (the store, or the
 * workspace): `root` and a relative path, or a relative directory to hold the
 * default file name.
 */
export interface PublishBelow {
  /** The directory the path is relative to (the store directory, or the workspace root). */
  root: string;
  /** The file's path relative to `root` (normalized POSIX, no `..`). */
  file?: string;
  /** Or the directory, relative to `root`, for the plan's default file name. */
  dir?: string;
  /** Replace an existing file of that name (renamed over, never written through). */
  replace?: boolean;
}

/**
 * Writes the published file as a new file below `below.root`, creating its
 * directories one component at a time from the root without following a
 * symlink (`SafeWriter`), never inside `.git` or `.ctxsnap` in any spelling,
 * nor inside the store when the store lies in the workspace, and never over
 * an existing entry unless `replace`.
 */
function publishBelow(store: Store, plan: PublishPlan, below: PublishBelow): PublishResult {
  const rel = below.file ??
    (below.dir === undefined || below.dir === "" ? plan.fileName : `${below.dir}/${plan.fileName}`);
  const root = path.resolve(below.root);
  if (!isSafeRelativePath(rel)) {
    throw new UsageError(`The output path ${quote(rel)} is not a plain relative path`, {
      hint: "name a new file below the workspace, without .., a leading / or empty segments",
    });
  }
  const parts = rel.split("/");
  if (root !== store.dir && parts.some(isReservedName)) {
    throw new UsageError(`The output path ${quote(rel)} lies inside .git or .ctxsnap`, {
      hint: "publish somewhere else in the workspace",
    });
  }
  const storeRel = path.relative(root, store.dir);
  if (
    root !== store.dir && storeRel !== "" && !storeRel.startsWith("..") &&
    !path.isAbsolute(storeRel) && isInsideReservedPath(rel, storeRel.split(path.sep).join("/"))
  ) {
    throw new UsageError(`The output path ${quote(rel)} lies inside the store`, {
      hint: "publish somewhere else in the workspace",
    });
  }
  const writer = new SafeWriter(root);
  let bytes = 0;
  let manifest: BundleManifest | null = null;
  try {
    writer.writeFile(rel, 0o644, (write) => {
      manifest = writePublished(store, plan, (chunk) => {
        bytes += chunk.byteLength;
        write(chunk);
      });
    }, { exclusive: below.replace !== true });
    writer.flush();
  } finally {
    writer.close();
  }
  return {
    path: path.join(root, ...parts),
    kind: plan.kind,
    bytes,
    snapshots: plan.envelopes.map((e) => e.id),
    blobs: (manifest as BundleManifest | null)?.blobs.length ?? 0,
  };
}
