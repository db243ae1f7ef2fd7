/**
 * Sharing files (layer 10 of docs/DESIGN.md §8, `lib/share/`).
 *
 * Owns: publish (a signed envelope or a bundle), offline verification of any
 * snapshot file, inspecting and importing one onto a quarantine branch, and
 * lean-ctx snapshot files (check, import, export, restore).
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`, `lib/history/`, `lib/workspace/move/`,
 * `lib/integrations/watch/`.
 *
 * @module
 */
