/**
 * Remotes (layer 11 of docs/DESIGN.md §8, `lib/remote/`).
 *
 * Owns: remote configuration, the backends (a directory, S3 with SigV4),
 * their layout, push, pull and clone.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`, `lib/history/`, `lib/workspace/move/`,
 * `lib/integrations/watch/`, `lib/share/`, `lib/integrations/agents/`.
 *
 * @module
 */
