/**
 * History (layer 8 of docs/DESIGN.md §8, `lib/history/`).
 *
 * Owns: the timeline and its branches, creating a snapshot, a checkpoint
 * with retention, verifying a store, names and revisions, the live session
 * state, the operation log, forget and retention, adoption of a store, agent
 * sessions and their events, text diffs.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`.
 *
 * @module
 */
