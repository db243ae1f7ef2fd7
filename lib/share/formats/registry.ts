/**
 * The snapshot formats ctxsnap knows, and finding the one a file or a stored
 * id belongs to. The native format is loaded with this module; a kept
 * format's code (lean-ctx: its reader, checks, store and restore) is loaded
 * only when asked for, so creating and restoring ctxsnap snapshots never
 * loads it and a plain restore never queries its table: an id is looked up
 * among ctxsnap snapshots first, and among kept formats only when none
 * matches ({@linkcode findKept}).
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { findKept, keptFormats } from "./registry.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * if ((await keptFormats()).map((f) => f.name).join() !== "lean-ctx") throw new Error("kept");
 * if (await findKept(store, "abcd") !== null) throw new Error("nothing stored");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { quote, UsageError } from "../../errors.ts";
import type { Store } from "../../repository/store.ts";
import { ctxsnapFormat } from "./ctxsnap.ts";
import type { FormatName, KeptFormat, SnapshotFormat } from "./format.ts";

const KEPT: Readonly<Record<Exclude<FormatName, "ctxsnap">, () => Promise<KeptFormat>>> = {
  "lean-ctx": async () => (await import("./leanctx.ts")).leanCtxFormat,
};

/** Every format kept as itself, loaded. */
export function keptFormats(): Promise<KeptFormat[]> {
  return Promise.all(Object.values(KEPT).map((load) => load()));
}

/** The format named `name`. */
export function formatNamed(name: "ctxsnap"): Promise<SnapshotFormat>;
/** The format named `name`. */
export function formatNamed(name: Exclude<FormatName, "ctxsnap">): Promise<KeptFormat>;
/** The format named `name`. */
export function formatNamed(name: FormatName): Promise<SnapshotFormat>;
export function formatNamed(name: FormatName): Promise<SnapshotFormat> {
  if (name === "ctxsnap") return Promise.resolve(ctxsnapFormat);
  return KEPT[name]();
}

/** The names of the formats kept as themselves. */
export function keptFormatNames(): string[] {
  return Object.keys(KEPT);
}

/** The kept format named `name` (the ctxsnap format is not kept: a usage error). */
export function keptFormatNamed(name: string): Promise<KeptFormat> {
  const load = (KEPT as Record<string, () => Promise<KeptFormat>>)[name];
  if (load === undefined || !Object.hasOwn(KEPT, name)) {
    throw new UsageError(`No snapshot format ${quote(name)} kept as itself`);
  }
  return load();
}

/** A stored snapshot of a kept format. */
export interface KeptTarget {
  /** Its format. */
  format: KeptFormat;
  /** Its full id. */
  id: string;
}

/**
 * The stored snapshot of a kept format that `prefix` (4 to 64 hex) names,
 * or null when none does. Call it only once ctxsnap's own lookup found
 * nothing: a ctxsnap snapshot always wins. A prefix matching several is a
 * usage error (exit 2).
 */
export async function findKept(store: Store, prefix: string): Promise<KeptTarget | null> {
  const p = prefix.trim().toLowerCase();
  if (!/^[0-9a-f]{4,64}$/.test(p)) return null;
  const found: KeptTarget[] = [];
  for (const format of await keptFormats()) {
    for (const id of format.idsWithPrefix(store, p, 11)) found.push({ format, id });
  }
  if (found.length === 0) return null;
  if (found.length === 1) return found[0]!;
  throw new UsageError(
    `Snapshot id ${quote(prefix)} is ambiguous: ${
      found.slice(0, 10).map((t) => t.id.slice(0, 16)).join(", ")
    }${found.length > 10 ? ", …" : ""}`,
    { hint: "type more characters of the id" },
  );
}

/** The kept format a file's bytes (a whole JSON document) belong to, or null for ctxsnap's own. */
export async function sniffKept(bytes: Uint8Array): Promise<KeptFormat | null> {
  for (const format of await keptFormats()) if (format.sniff(bytes)) return format;
  return null;
}
