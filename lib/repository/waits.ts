/**
 * How often and how long this process has waited for another process's hold
 * on a store: its write lock (`BEGIN IMMEDIATE`), or the exclusive lock that
 * switches the index to WAL. Waits of {@linkcode WAIT_MIN_MS} or more are
 * counted and summed; `ctxsnap` says so when a command waited (DESIGN.md §3.4).
 * A light module (no SQLite), so the command line can read it cheaply.
 *
 * @example
 * ```ts
 * import { countWait, resetStoreWaits, storeWaits } from "./waits.ts";
 * resetStoreWaits();
 * countWait(performance.now() - 20);
 * if (storeWaits().count !== 1) throw new Error("a 20 ms lock is a wait");
 * ```
 * @module
 */

/** A lock taken in less than this many milliseconds did not wait for anyone. */
export const WAIT_MIN_MS = 5;

const waits = { count: 0, ms: 0 };

/** Adds the time since `since` (from `performance.now()`) when it was a wait. */
export function countWait(since: number): void {
  const waited = performance.now() - since;
  if (waited < WAIT_MIN_MS) return;
  waits.count++;
  waits.ms += waited;
}

/** The waits counted since the last {@linkcode resetStoreWaits}: how many, and their total in ms. */
export function storeWaits(): { count: number; ms: number } {
  return { count: waits.count, ms: Math.round(waits.ms) };
}

/** Starts counting from zero (each command does). */
export function resetStoreWaits(): void {
  waits.count = 0;
  waits.ms = 0;
}
