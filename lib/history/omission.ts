/**
 * The one line an agent hook shows the user about what a checkpoint left
 * out (Claude Code's `systemMessage`: shown to the user, never the model),
 * for the command hook and the HTTP hook alike.
 *
 * @example
 * ```ts
 * import { omissionMessage } from "./omission.ts";
 * const line = omissionMessage("ab".repeat(32), [{ path: ".env", reason: "secret" }], 0);
 * if (!line.includes(".env")) throw new Error("the path is not named");
 * ```
 * @module
 */
import type { SkippedEntry } from "../format/tree.ts";
import { ConfigError, IntegrityError, StoreTrustError } from "../errors.ts";

/** Longest list of paths named in one hook message. */
const MAX_NAMED = 12;

const WHY: Record<string, string> = {
  secret: "secret by name",
  secret_content: "holds a key or token",
  too_large: "too large",
  special_file: "not a regular file",
  unreadable: "unreadable",
  unsafe_name: "unusable name",
  changed_while_reading: "changed while read",
};

/**
 * The one line the hook shows the user about what a checkpoint left out that
 * this agent session had not been told yet (at most ~2,000 characters).
 */
export function omissionMessage(id: string, omitted: SkippedEntry[], more: number): string {
  const named = omitted.slice(0, MAX_NAMED).map((e) =>
    `${JSON.stringify(e.path.length > 120 ? `${e.path.slice(0, 120)}…` : e.path)} (${
      WHY[e.reason] ?? e.reason
    })`
  );
  if (omitted.length > MAX_NAMED) named.push(`${omitted.length - MAX_NAMED} more`);
  const parts = [];
  if (named.length > 0) parts.push(named.join(", "));
  if (more > 0) parts.push("ignored or excluded paths (.gitignore, node_modules)");
  return `ctxsnap: checkpoint ${id.slice(0, 12)} left out ${
    parts.join("; and ")
  }: a restore cannot bring them back (\`ctxsnap show ${
    id.slice(0, 12)
  } --skipped\` lists all; the store's allow-secrets file re-includes a secret)`;
}

/**
 * The one line told to the user (Claude Code's `systemMessage`) when a hook
 * event records nothing because of a problem that will stop every later
 * event too: a policy file that cannot be used, a store this user may not
 * trust, a damaged store. Null for any other error (a busy store, a
 * malformed event: the agent's harness only logs those).
 */
export function stoppedCheckpointMessage(error: unknown): string | null {
  if (
    !(error instanceof ConfigError || error instanceof StoreTrustError ||
      error instanceof IntegrityError)
  ) return null;
  return `ctxsnap: no checkpoint was recorded: ${error.message} (run \`ctxsnap verify\` or see its stderr)`;
}
