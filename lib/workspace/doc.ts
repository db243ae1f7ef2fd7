/**
 * The workspace (layer 7 of docs/DESIGN.md §8, `lib/workspace/`).
 *
 * Owns: capture (a full walk, and the incremental model kept from filesystem
 * events), restore planning (the three-way plan against the baseline), the
 * overwrite policy, on-disk checks and the file writes a move makes. Its
 * safe I/O (`io/`) and the move engine (`move/`) are layers of their own.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`.
 *
 * @module
 */
