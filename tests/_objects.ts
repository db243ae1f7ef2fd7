/**
 * Test helpers reading and rewriting stored objects straight in the SQLite
 * index, whatever their encoding (`raw` or `deflate`), the way an attacker
 * with file access could.
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import * as zlib from "node:zlib";

/** The logical bytes of inline object `id` (inflated when stored compressed). */
export function readObjectBytes(db: DatabaseSync, id: string): Uint8Array {
  const row = db.prepare("SELECT data, encoding FROM objects WHERE id = ?").get(id) as
    | { data: Uint8Array; encoding: string }
    | undefined;
  if (row === undefined) throw new Error(`object ${id} is not in the index`);
  if (row.encoding === "deflate") return new Uint8Array(zlib.inflateRawSync(row.data));
  if (row.encoding !== "raw") throw new Error(`object ${id} is stored as ${row.encoding}`);
  return row.data;
}

/** Replaces inline object `id`'s logical bytes, keeping its encoding. */
export function writeObjectBytes(db: DatabaseSync, id: string, bytes: Uint8Array): void {
  const row = db.prepare("SELECT encoding FROM objects WHERE id = ?").get(id) as
    | { encoding: string }
    | undefined;
  if (row === undefined) throw new Error(`object ${id} is not in the index`);
  const data = row.encoding === "deflate" ? new Uint8Array(zlib.deflateRawSync(bytes)) : bytes;
  db.prepare("UPDATE objects SET data = ? WHERE id = ?").run(data, id);
}
