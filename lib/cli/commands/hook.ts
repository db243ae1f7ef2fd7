/**
 * `ctxsnap hook <agent>`: records one hook event of Claude Code, Gemini CLI,
 * Codex, Cursor or OpenCode read from standard input (docs/FORMAT.md §16;
 * each agent's payload mapped by `lib/integrations/agents/`) as an event of
 * its agent session,
 * attached to the checkpoint holding the workspace after it. It never
 * blocks or fails the agent: a problem is reported as one escaped line on
 * stderr and the hook exits 0 (unless `--strict`). On stdout it prints
 * only what the agent expects (Claude Code, Codex: nothing, except one
 * `{"systemMessage": …}` object, shown to the user and never the model, the
 * first time an agent session's checkpoint leaves a file out; Gemini CLI:
 * `{}` or that object; Cursor: its "allow" answer), or the result with
 * `--json`. `ctxsnap hook install AGENT` is `./hook/install.ts`.
 *
 * @module
 */
import * as fs from "node:fs";
import { omissionMessage, stoppedCheckpointMessage } from "../../history/omission.ts";
import { NoStoreError, quote, UsageError } from "../../errors.ts";
import { type Command, flag, readInput } from "../args.ts";
import { checkpoint, retryWhileBusy } from "../_checkpoint.ts";
import { hookJson } from "../json.ts";

/** The agents the hook understands (lib/integrations/agents/adapters.ts). */
const HARNESSES = ["claude-code", "gemini-cli", "codex", "cursor", "opencode"];

/** The `hook` command. */
export const hook: Command = {
  name: "hook",
  usage: "hook claude-code|gemini-cli|codex|cursor|opencode [--record-prompts] [--strict]",
  examples: [
    "ctxsnap hook claude-code < event.json        # what .claude/settings.json runs (see the README)",
    "ctxsnap hook claude-code --record-prompts    # also keep the text of each prompt",
    "ctxsnap list --agent-session SESSION_ID       # the events of one agent session",
    "ctxsnap list --prompts                        # the latest agent session's prompts",
    "ctxsnap restore prompt:3 --dry-run            # back to the state before its third prompt",
    "ctxsnap hook install codex --dry-run          # what installing the hooks would change",
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
  args: [{
    name: "AGENT",
    help: "the agent whose hook event is on stdin: " + HARNESSES.join(", "),
  }],
  exitZeroUnless: "--strict",
  async run(ctx, parsed) {
    const harness = parsed.positionals[0];
    if (harness === undefined || !HARNESSES.includes(harness) || parsed.positionals.length > 1) {
      throw new UsageError(`Unknown harness ${quote(parsed.positionals.join(" "))}`, {
        hint: `ctxsnap hook ${HARNESSES.join("|")}, or ctxsnap hook install AGENT`,
      });
    }
    const [{ MAX_EVENT_BYTES }, { adapterFor }] = await Promise.all([
      import("../../history/agent.ts"),
      import("../../integrations/agents/adapters.ts"),
    ]);
    const adapter = adapterFor(harness)!;
    let answered = false;
    const answer = (event: string | null, message: string | null) => {
      const text = ctx.out.json || answered ? null : adapter.answer(event, message);
      answered = true;
      if (text !== null) ctx.out.raw(text + "\n");
    };
    let event;
    try {
      event = adapter.parse(readInput("-", MAX_EVENT_BYTES), {
        recordPrompts: flag(parsed, "record-prompts"),
      });
    } catch (error) {
      answer(null, null);
      throw error;
    }
    // An agent that waits for a permission answers first: nothing below may block it.
    if (harness === "cursor") answer(event.event, null);
    const cwd = event.cwd ?? ctx.cwd;
    let isDir = false;
    try {
      isDir = fs.statSync(cwd).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir) {
      answer(event.event, null);
      throw new UsageError(`The hook event's cwd ${quote(cwd)} is not a directory`);
    }
    let made;
    try {
      made = await retryWhileBusy(ctx, () => checkpoint({ ...ctx, cwd }, { agent: event }));
    } catch (error) {
      answer(event.event, null);
      if (error instanceof NoStoreError) {
        // Never creates a store: one is made on purpose, with `ctxsnap init`.
        throw new NoStoreError(`No ctxsnap store for ${quote(cwd)}: nothing recorded`, {
          hint: "run `ctxsnap init` at the project's root to checkpoint its agent sessions",
        });
      }
      const told = ctx.out.json ? null : stoppedCheckpointMessage(error);
      if (told !== null) {
        // It will stop every later event too: told to the user, not only to stderr, which an
        // agent harness hides on exit 0. Shown to the user, never to the model.
        ctx.out.raw(JSON.stringify({ systemMessage: told }) + "\n");
      }
      throw error;
    }
    const { result, via } = made;
    const transcript = result.agent?.transcript ?? null;
    if (transcript?.restarted === true && !ctx.out.json) {
      ctx.out.note(
        `the transcript ${
          JSON.stringify(transcript.path)
        } no longer starts with the bytes kept before: a new segment chain begins`,
      );
    }
    const agent = result.agent;
    const omitted = agent?.omitted ?? [];
    const more = agent?.omittedMore ?? 0;
    if (ctx.out.json) {
      ctx.out.result(hookJson(result, event, via), () => "");
    } else {
      // Shown to the user, never to the model (Claude Code's `systemMessage`).
      answer(
        event.event,
        omitted.length > 0 || more > 0 ? omissionMessage(result.id, omitted, more) : null,
      );
    }
    return 0;
  },
};

export { omissionMessage };
