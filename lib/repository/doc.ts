/**
 * The repository (layer 6 of docs/DESIGN.md §8, `lib/repository/`).
 *
 * Owns: the SQLite index, its schema and migrations, objects and chunks,
 * tree reads and diffs, the rows of snapshots, branches, sessions, agent
 * sessions and the stat cache, the operations and undo logs, the workspace
 * baseline, gc and vacuum, the registry and store trust, the policy files
 * kept in the store. All SQL is written here.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`.
 *
 * @module
 */
