/**
 * The Replay view (layer 11 of docs/DESIGN.md §8, `lib/view/`).
 *
 * Owns: the timeline data (`ctxsnap.timeline/v1`, docs/FORMAT.md §14) built
 * from a store or a verified file, file patches, the self-contained HTML
 * page and the read-only local server.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`, `lib/history/`, `lib/workspace/move/`,
 * `lib/integrations/watch/`, `lib/share/`, `lib/integrations/agents/`.
 *
 * @module
 */
