/**
 * Safe file I/O for the workspace (layer 3 of docs/DESIGN.md §8,
 * `lib/workspace/io/`).
 *
 * Owns: path rules and reserved names, ignore files and the capture policy,
 * secret names and content, the walk, no-follow reads with descriptor
 * checks, descriptor-checked and atomic writes, file modes, filesystem
 * events (inotify). Nothing here knows the store.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`.
 *
 * @module
 */
