/**
 * The command line (layer 13 of docs/DESIGN.md §8, `lib/cli/`).
 *
 * Owns: argument parsing, the commands, output and exit statuses, the
 * `--json` shapes (`json.ts`), the MCP server. The only layer that prints or
 * exits.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`,
 * `lib/format/`, `lib/repository/`, `lib/integrations/git/`,
 * `lib/workspace/`, `lib/history/`, `lib/workspace/move/`,
 * `lib/integrations/watch/`, `lib/share/`, `lib/integrations/agents/`, `lib/remote/`,
 * `lib/view/`, `lib/app/`.
 *
 * @module
 */
