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
import { omissionMessage } from "../../history/omission.ts";
import { NoStoreError, quote, UsageError } from "../../errors.ts";
import { type Command, flag, readInput } from "../command.ts";
import { checkpoint, retryWhileBusy } from "../_checkpoint.ts";

/** The harnesses the hook understands. */
const HARNESSES = ["claude-code"];

/** The `hook` command. */
export const hook: Command = {
  name: "hook",
  summary: "checkpoint for an agent harness's hook event (JSON on stdin); never fails the agent",
  usage:
    "hook claude-code [--record-prompts] [--strict]\nhook install claude-code --http [--dry-run]",
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
    http: {
      type: "boolean",
      help:
        "install: events other than SessionStart and UserPromptSubmit go over HTTP to the watch process",
    },
    "dry-run": { type: "boolean", help: "install: print what would change, write nothing" },
  },
  positionals: 2,
  exitZeroUnless: "--strict",
  async run(ctx, parsed) {
    if (parsed.positionals[0] === "install" && flag(parsed, "http")) {
      const { installHttp } = await import("./_hook_install_http.ts");
      return await installHttp(ctx, parsed.positionals[1], flag(parsed, "dry-run"));
    }
    const harness = parsed.positionals[0];
    if (parsed.positionals.length > 1) {
      throw new UsageError(`Unexpected argument ${quote(parsed.positionals[1]!)}`, {
        hint: "ctxsnap hook claude-code < event.json, or ctxsnap hook install claude-code --http",
      });
    }
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
    const more = agent?.omitted_more ?? 0;
    if (ctx.out.json) {
      ctx.out.result({
        id: result.id,
        created: result.created,
        event: event.event,
        agent_session: event.session_id,
        prompt: agent?.prompt ?? null,
        position: agent?.position ?? null,
        duplicate: agent?.duplicate ?? false,
        omitted,
        omitted_more: more,
        via,
      }, () => "");
    } else if (omitted.length > 0 || more > 0) {
      // Shown to the user, never to the model (Claude Code's `systemMessage`).
      ctx.out.raw(
        JSON.stringify({ systemMessage: omissionMessage(result.id, omitted, more) }) + "\n",
      );
    }
    return 0;
  },
};

export { omissionMessage };
