/**
 * The move engine (layer 9 of docs/DESIGN.md §8, `lib/workspace/move/`).
 *
 * Owns: moving the workspace: restore, switch, undo and redo, recover
 * (finishing or aborting what a crash interrupted) and materialize; each
 * records its plan before it touches a file.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`, `lib/history/`.
 *
 * @module
 */
