/**
 * Small helpers shared by the test suites.
 * @module
 */

/** The bytes of `parts`, one after another. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** mulberry32: a small seeded pseudo-random generator returning floats in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Whether anything (even a dangling symlink) exists at `path`. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** The test seed: `CTXSNAP_TEST_SEED` to replay one, else a fresh random one (print it). */
export function seedFromEnv(): number {
  const raw = Deno.env.get("CTXSNAP_TEST_SEED");
  if (raw !== undefined && /^\d+$/.test(raw)) return Number(raw);
  return Math.floor(Math.random() * 2 ** 31);
}

/**
 * Runs `edit` on a store's index as an attacker with file access would:
 * around it the immutability triggers of `table` are dropped and then put
 * back exactly, so the schema stays ctxsnap's and only the edited rows differ.
 */
export function editBehindCtxsnap(
  db: import("node:sqlite").DatabaseSync,
  table: "snapshots" | "leanctx_snapshots",
  edit: () => void,
): void {
  const trigger = `${table}_are_immutable`;
  const row = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?")
    .get(trigger) as { sql: string } | undefined;
  if (row === undefined) throw new Error(`no trigger ${trigger} to work around`);
  db.exec(`DROP TRIGGER ${trigger}`);
  try {
    edit();
  } finally {
    db.exec(row.sql);
  }
}
