/**
 * `ctxsnap hook install AGENT [--dry-run]`: merges ctxsnap's hooks into the
 * agent's project configuration at the workspace root (the directory
 * holding the store, else the current directory) and prints what changed
 * (`lib/integrations/agents/install.ts`). Unlike the hook itself it fails
 * like any command: a file it cannot merge is an error, nothing written.
 *
 * @module
 */
import * as path from "node:path";
import { NoStoreError, quote, UsageError } from "../../../errors.ts";
import { locateStore } from "../../../repository/locate.ts";
import { esc } from "../../output.ts";
import { type Command, type CommandContext, flag, type Parsed } from "../../command.ts";

/** The `hook install` command. */
export const hookInstall: Command = {
  name: "hook install",
  usage:
    "hook install claude-code|gemini-cli|codex|cursor|opencode [--dry-run]\nhook install claude-code --http [--dry-run]",
  examples: [
    "ctxsnap hook install claude-code            # merge the hooks into .claude/settings.local.json",
    "ctxsnap hook install codex --dry-run        # what installing the hooks would change",
    "ctxsnap hook install claude-code --http     # events over HTTP to the background watch",
  ],
  options: {
    "dry-run": { type: "boolean", help: "print what would change, write nothing" },
    http: {
      type: "boolean",
      help:
        "claude-code: events other than SessionStart and UserPromptSubmit go over HTTP to the watch process",
    },
  },
  args: [{ name: "AGENT", help: "the agent whose configuration gets ctxsnap's hooks" }],
  run: runHookInstall,
};

/** Runs `hook install AGENT`. */
async function runHookInstall(ctx: CommandContext, parsed: Parsed): Promise<number> {
  const { INSTALLABLE, applyInstall, planInstall } = await import(
    "../../../integrations/agents/install.ts"
  );
  const agent = parsed.positionals[0];
  if (flag(parsed, "http")) {
    const { installHttp } = await import("../_hook_install_http.ts");
    return await installHttp(ctx, agent, flag(parsed, "dry-run"));
  }
  if (agent === undefined || !INSTALLABLE.includes(agent)) {
    throw new UsageError(`Unknown agent ${quote(agent ?? "")}`, {
      hint: `ctxsnap hook install ${INSTALLABLE.join("|")} [--dry-run]`,
    });
  }
  let root = ctx.cwd;
  try {
    root = path.dirname(locateStore({ store: ctx.store, cwd: ctx.cwd }));
  } catch (error) {
    if (!(error instanceof NoStoreError)) throw error;
  }
  const plan = planInstall(agent, root);
  const dryRun = flag(parsed, "dry-run");
  if (!dryRun) applyInstall(plan);
  ctx.out.result({
    agent: plan.agent,
    file: plan.file,
    action: plan.action,
    added: plan.added,
    present: plan.present,
    notes: plan.notes,
    dry_run: dryRun,
  }, () => {
    const would = dryRun ? "would " : "";
    const lines: string[] = [];
    const file = esc(path.relative(ctx.cwd, plan.file) || plan.file);
    if (plan.action === "unchanged") {
      lines.push(`${file}: unchanged (ctxsnap's hooks are already there)`);
    } else {
      lines.push(
        `${file}: ${would}${plan.action} (${plan.added.length} hook${
          plan.added.length === 1 ? "" : "s"
        } ${would}added, ${plan.present.length} already there)`,
      );
      for (const event of plan.added) lines.push(`  + ${esc(event)}  ctxsnap hook ${agent}`);
    }
    for (const note of plan.notes) lines.push(`note: ${note}`);
    return lines.join("\n");
  });
  return 0;
}
