/**
 * `ctxsnap hook claude-code`: records one Claude Code hook event read from
 * standard input (docs/FORMAT.md §16) as an event of its agent session,
 * attached to the checkpoint holding the workspace after it. It never
 * blocks or fails the agent: a problem is reported as one escaped line on
 * stderr and the hook exits 0 (unless `--strict`). On stdout it prints
 * nothing, except one `{"systemMessage": …}` object (shown to the user,
 * never the model) the first time an agent session's checkpoint leaves a
 * file out, or the result with `--json`.
 *
 * @module
 */
import * as fs from "node:fs";
import type { SkippedEntry } from "../../format/tree.ts";
import { NoStoreError, quote, UsageError } from "../../errors.ts";
import { type Command, flag, readInput } from "../command.ts";
import { checkpoint, retryWhileBusy } from "../_checkpoint.ts";
import { hookJson } from "../json.ts";

/** The harnesses the hook understands. */
const HARNESSES = ["claude-code"];

/** The `hook` command. */
export const hook: Command = {
  name: "hook",
  summary: "checkpoint for an agent harness's hook event (JSON on stdin); never fails the agent",
  usage: "hook claude-code [--record-prompts] [--strict]",
  examples: [
    "ctxsnap hook claude-code < event.json        # what .claude/settings.json runs (see the README)",
    "ctxsnap hook claude-code --record-prompts    # also keep the text of each prompt",
    "ctxsnap list --agent-session SESSION_ID       # the events of one agent session",
    "ctxsnap list --prompts                        # the latest agent session's prompts",
    "ctxsnap restore prompt:3 --dry-run            # back to the state before its third prompt",
  ],
  options: {
    "record-prompts": {
      type: "boolean",
      help: "keep the text of each prompt in its checkpoint's reason (default: not)",
    },
    strict: {
      type: "boolean",
      help: "exit with ctxsnap's status on a problem (default: report on stderr and exit 0)",
    },
  },
  positionals: 1,
  exitZeroUnless: "--strict",
  async run(ctx, parsed) {
    const harness = parsed.positionals[0];
    if (harness === undefined || !HARNESSES.includes(harness)) {
      throw new UsageError(`Unknown harness ${quote(harness ?? "")}`, {
        hint: `ctxsnap hook ${HARNESSES.join("|")}`,
      });
    }
    const { parseClaudeCodeEvent, MAX_EVENT_BYTES } = await import("../../history/agent.ts");
    const event = parseClaudeCodeEvent(readInput("-", MAX_EVENT_BYTES), {
      recordPrompts: flag(parsed, "record-prompts"),
    });
    const cwd = event.cwd ?? ctx.cwd;
    let isDir = false;
    try {
      isDir = fs.statSync(cwd).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir) throw new UsageError(`The hook event's cwd ${quote(cwd)} is not a directory`);
    let made;
    try {
      made = await retryWhileBusy(ctx, () => checkpoint({ ...ctx, cwd }, { agent: event }));
    } catch (error) {
      if (error instanceof NoStoreError) {
        // Never creates a store: one is made on purpose, with `ctxsnap init`.
        throw new NoStoreError(`No ctxsnap store for ${quote(cwd)}: nothing recorded`, {
          hint: "run `ctxsnap init` at the project's root to checkpoint its agent sessions",
        });
      }
      throw error;
    }
    const { result, via } = made;
    const agent = result.agent;
    const omitted = agent?.omitted ?? [];
    const more = agent?.omittedMore ?? 0;
    if (ctx.out.json) {
      ctx.out.result(hookJson(result, event, via), () => "");
    } else if (omitted.length > 0 || more > 0) {
      // Shown to the user, never to the model (Claude Code's `systemMessage`).
      ctx.out.raw(
        JSON.stringify({ systemMessage: omissionMessage(result.id, omitted, more) }) + "\n",
      );
    }
    return 0;
  },
};

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
