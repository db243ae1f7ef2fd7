/**
 * `ctxsnap session set`: sets the live session's task or progress.
 * @module
 */
import { UsageError } from "../../../errors.ts";
import { editSession } from "../../../history/session_state.ts";
import { type Command, intOption, str } from "../../command.ts";
import { SESSION_FLAG, withSession } from "../../_session.ts";

/** The `session set` command. */
export const sessionSet: Command = {
  name: "session set",
  usage: "session set [--task T] [--progress N] [--session S]",
  examples: ['ctxsnap session set --task "migrate the parser" --progress 30'],
  options: {
    task: { type: "string", arg: "T", help: "the task" },
    progress: { type: "string", arg: "N", help: "progress, whole percent 0-100" },
    ...SESSION_FLAG,
  },
  args: [],
  run(ctx, parsed) {
    const task = str(parsed, "task");
    const progress = intOption(parsed, "progress", 0, 100);
    if (task === undefined && progress === undefined) {
      throw new UsageError("session set needs --task or --progress");
    }
    return withSession(ctx, parsed, (store, session) =>
      editSession(store, session, "set", (s) => ({
        ...s,
        task: task ?? s.task,
        progress_pct: progress ?? s.progress_pct,
      })));
  },
};
