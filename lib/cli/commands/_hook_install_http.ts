/**
 * `ctxsnap hook install claude-code --http [--dry-run]`: merges Claude Code
 * hooks that record every event through the watch process into
 * `.claude/settings.local.json` (lib/integrations/watch/claude_code_http.ts),
 * and prints what it changed. A watch process already running without the
 * HTTP hooks is asked to stop: the next event starts one that serves them.
 *
 * @module
 */
import { UsageError } from "../../errors.ts";
import { configDir } from "../../keys/config_dir.ts";
import { locateStore } from "../../repository/locate.ts";
import { checkRegistered } from "../../repository/trust.ts";
import type { CommandContext } from "../command.ts";
import { openStore } from "../command.ts";

/** Runs the installer for `harness` (only `claude-code`). */
export async function installHttp(
  ctx: CommandContext,
  harness: string | undefined,
  dryRun: boolean,
): Promise<number> {
  if (harness !== "claude-code") {
    throw new UsageError(`HTTP hooks exist for claude-code only, not ${JSON.stringify(harness)}`, {
      hint: "ctxsnap hook install claude-code --http",
    });
  }
  const storeDir = locateStore({ store: ctx.store, cwd: ctx.cwd });
  checkRegistered(configDir(), storeDir);
  const store = openStore(ctx, { readOnly: true });
  const workspace = store.workspaceRoot;
  store.close();
  const [{ installHttpHooks }, { askWatch }] = await Promise.all([
    import("../../integrations/watch/claude_code_http.ts"),
    import("../../integrations/watch/client.ts"),
  ]);
  const done = await installHttpHooks(workspace, storeDir, { dryRun });
  let restarted = false;
  if (!dryRun) {
    const status = await askWatch(storeDir, "status", null, { timeoutMs: 5_000 });
    if (status !== null && status.result.http === null) {
      restarted = (await askWatch(storeDir, "stop", null, { timeoutMs: 5_000 })) !== null;
    }
  }
  ctx.out.result({ ...done, watch_restarted: restarted }, () =>
    [
      `${dryRun ? "would write" : done.written ? "wrote" : "unchanged:"} ${done.settings}`,
      ...done.changes.map((c) => `  ${c.event}: ${c.type} hook ${c.action}`),
      `  HTTP events go to ${done.url} with the store's token (in that file only; mode 0600)`,
      ...(done.git_excluded !== null ? [`  added it to ${done.git_excluded}`] : []),
      ...(restarted
        ? ["  asked the running watch process to stop: the next event starts one serving HTTP"]
        : []),
    ].join("\n"));
  return 0;
}
