/**
 * `ctxsnap hook claude-code`: checkpoints the workspace and session for one
 * Claude Code hook event read from standard input (docs/FORMAT.md §16). It
 * never blocks or fails the agent: a problem is reported on stderr and the
 * hook exits 0 (unless `--strict`), and nothing is printed on stdout (unless
 * `--json`), since Claude Code reads a hook's stdout.
 * @module
 */
import * as fs from "node:fs";
import { NoStoreError, quote, UsageError } from "../../errors.ts";
import { type Command, flag, readInput } from "../command.ts";
import { checkpoint, retryWhileBusy } from "../_checkpoint.ts";

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
    "ctxsnap list --agent-session SESSION_ID       # the checkpoints of one agent session",
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
    const { parseClaudeCodeEvent, MAX_EVENT_BYTES } = await import("../../snapshot/agent.ts");
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
    const body = result.envelope.body;
    if (ctx.out.json) {
      ctx.out.result({
        id: result.id,
        created: result.created,
        event: event.event,
        agent_session: event.session_id,
        prompt: body.cursors.message,
        via,
      }, () => "");
    }
    return 0;
  },
};
