/**
 * `ctxsnap session decide TEXT`: records a decision in the live session
 * (once: the same text twice is kept once).
 * @module
 */
import { appendUnique, editSession } from "../../../history/session_state.ts";
import type { Command } from "../../command.ts";
import { needText, SESSION_FLAG, withSession } from "../../_session.ts";

/** The `session decide` command. */
export const sessionDecide: Command = {
  name: "session decide",
  usage: "session decide TEXT [--session S]",
  examples: ['ctxsnap session decide "keep the old API behind a flag"'],
  options: SESSION_FLAG,
  args: [{ name: "TEXT", help: "the decision (the words are joined with spaces)", repeat: true }],
  run(ctx, parsed) {
    const text = needText("decide", parsed.positionals);
    return withSession(
      ctx,
      parsed,
      (store, session) =>
        editSession(
          store,
          session,
          "decide",
          (s) => ({ ...s, decisions: appendUnique(s.decisions, [text]) }),
        ),
    );
  },
};
