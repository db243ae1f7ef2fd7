/**
 * `ctxsnap session touch PATH...`: records files the live session touched.
 * @module
 */
import { UsageError } from "../../../errors.ts";
import { appendUnique, editSession } from "../../../history/session_state.ts";
import type { Command } from "../../command.ts";
import { SESSION_FLAG, withSession } from "../../_session.ts";

/** The `session touch` command. */
export const sessionTouch: Command = {
  name: "session touch",
  usage: "session touch PATH... [--session S]",
  examples: ["ctxsnap session touch src/parser.ts src/lexer.ts"],
  options: SESSION_FLAG,
  args: [{ name: "PATH", help: "a file the session touched", repeat: true }],
  run(ctx, parsed) {
    const paths = parsed.positionals;
    if (paths.length === 0) throw new UsageError("session touch needs at least one PATH");
    return withSession(
      ctx,
      parsed,
      (store, session) =>
        editSession(store, session, "touch", (s) => ({
          ...s,
          files_touched: appendUnique(s.files_touched, paths),
        })),
    );
  },
};
