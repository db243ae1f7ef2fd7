/**
 * git (layer 6 of docs/DESIGN.md §8, `lib/integrations/git/`).
 *
 * Owns: running `git` safely (no repository program runs): the anchor a
 * snapshot records, the work tree's state, the exclude file that keeps the
 * store out of git.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`.
 *
 * @module
 */
