/**
 * `ctxsnap resume --agent-session S --prompt N`: back to the state before
 * prompt N of an agent session, files and conversation
 * (`lib/integrations/agents/resume.ts`): the files three-way as `restore`
 * does (undoable with `ctxsnap undo`), the transcript forked under a new
 * session id where the agent can resume one, and the command to continue.
 *
 * @module
 */
import { UsageError } from "../../errors.ts";
import { esc } from "../output.ts";
import { type Command, flag, identity, openStore, str } from "../command.ts";
import { intOption, short } from "../args.ts";
import { notCapturedLines, planLines, showConflicts } from "../_plan.ts";
import { MOVE_FLAGS } from "../flags.ts";
import { resumeJson } from "../json.ts";

/** The `resume` command. */
export const resume: Command = {
  name: "resume",
  usage: "resume --prompt N [--agent-session S] [--dry-run] [--force]",
  examples: [
    "ctxsnap resume --agent-session 3f6c --prompt 3 --dry-run   # what would change",
    "ctxsnap resume --agent-session 3f6c --prompt 3             # then: claude --resume <new id>",
    "ctxsnap resume --prompt 2 --json                           # the latest agent session",
  ],
  options: {
    "agent-session": {
      type: "string",
      arg: "S",
      help: "the agent session (its id or a prefix of 4+ characters; default: the latest)",
    },
    prompt: { type: "string", arg: "N", help: "the prompt to go back before (1, 2, …)" },
    "dry-run": { ...MOVE_FLAGS["dry-run"], help: "print the plan, change nothing, write no fork" },
    force: MOVE_FLAGS.force,
  },
  args: [],
  async run(ctx, parsed) {
    const prompt = intOption(parsed, "prompt", 1, 1_000_000_000);
    if (prompt === undefined) {
      throw new UsageError("resume needs --prompt N", {
        hint: "`ctxsnap list --prompts --agent-session S` lists the prompts",
      });
    }
    const { resumeFromPrompt } = await import("../../integrations/agents/resume.ts");
    const signer = await identity();
    const store = openStore(ctx);
    try {
      let result;
      try {
        result = await resumeFromPrompt(
          store,
          signer,
          str(parsed, "agent-session") ?? null,
          prompt,
          {
            dryRun: flag(parsed, "dry-run"),
            force: flag(parsed, "force"),
            onProgress: (done, total) => ctx.out.progress("restoring", done, total),
          },
        );
      } catch (error) {
        showConflicts(ctx.out, error);
      }
      const r = result.restore;
      ctx.out.result(resumeJson(result), () => {
        const lines: string[] = [];
        const head = r.dryRun ? "plan to resume" : "resumed";
        lines.push(
          `${head} ${esc(result.agent)} session ${
            esc(result.agentSession)
          } before prompt ${prompt} (${short(result.snapshot)})${
            r.dryRun ? " (dry run, nothing changed)" : ""
          }:`,
        );
        if (r.plan) lines.push(...planLines(r.plan));
        lines.push(...notCapturedLines(r.notCaptured));
        for (const refusal of r.wouldRefuse) {
          lines.push(`the restore would be refused: ${esc(refusal.message)}`);
        }
        if (!r.dryRun && r.snapshot) {
          lines.push(`restored; recorded as ${short(r.snapshot)} (\`ctxsnap undo\` takes it back)`);
        }
        if (result.fork !== null) {
          lines.push(
            `${
              r.dryRun ? "would fork" : "forked"
            } the conversation (${result.fork.lines} lines) to ${esc(result.fork.path)}`,
          );
          lines.push(`continue with: ${esc(result.continueCommand!)}`);
        } else if (result.noForkReason !== null) {
          lines.push(`conversation not forked: ${esc(result.noForkReason)}`);
        }
        if (result.promptText !== null && result.fork === null) {
          lines.push(`prompt ${prompt} to re-enter: ${esc(result.promptText)}`);
        } else if (result.fork === null) {
          lines.push(
            `prompt ${prompt}'s text was not recorded (\`ctxsnap hook … --record-prompts\` keeps it)`,
          );
        }
        return lines.join("\n");
      });
      return r.wouldRefuse.length > 0 ? 5 : 0;
    } finally {
      store.close();
    }
  },
};
