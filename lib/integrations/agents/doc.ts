/**
 * Agent integrations (layer 10 of docs/DESIGN.md §8, `lib/integrations/agents/`).
 *
 * Owns: each agent's hook adapter (Gemini CLI, Codex, Cursor, OpenCode; Claude
 * Code's parser is in `lib/history/agent.ts`), the hook installers, transcript
 * forks, resume from prompt N and conversation slices.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`, `lib/history/`, `lib/workspace/move/`,
 * `lib/integrations/watch/`.
 *
 * @module
 */
