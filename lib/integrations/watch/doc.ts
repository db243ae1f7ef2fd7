/**
 * The watch service (layer 9 of docs/DESIGN.md §8,
 * `lib/integrations/watch/`).
 *
 * Owns: the long-lived checkpoint service for one store (incremental
 * captures), its socket protocol (docs/FORMAT.md §15), its server and the
 * client that hands checkpoints to it.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`, `lib/history/`.
 *
 * @module
 */
