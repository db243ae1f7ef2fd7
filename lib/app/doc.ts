/**
 * The application layer (layer 12 of docs/DESIGN.md §8, `lib/app/`).
 *
 * Owns: the rules both the command line and `mod.ts` follow to open and
 * create a workspace's store: nested-store refusal, the registry, the git
 * exclude file, walk-up ownership.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`, `lib/history/`, `lib/workspace/move/`,
 * `lib/integrations/watch/`, `lib/share/`, `lib/integrations/agents/`, `lib/remote/`,
 * `lib/view/`.
 *
 * @module
 */
