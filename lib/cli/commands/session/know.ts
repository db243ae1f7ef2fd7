/**
 * `ctxsnap session know TEXT`: records a piece of knowledge in the live session
 * (once: the same text twice is kept once).
 * @module
 */
import { appendUnique, editSession } from "../../../history/session_state.ts";
import type { Command } from "../../command.ts";
import { needText, SESSION_FLAG, withSession } from "../../_session.ts";

/** The `session know` command. */
export const sessionKnow: Command = {
  name: "session know",
  usage: "session know TEXT [--session S]",
  examples: ['ctxsnap session know "the CI runs on ARM"'],
  options: SESSION_FLAG,
  args: [{
    name: "TEXT",
    help: "the piece of knowledge (the words are joined with spaces)",
    repeat: true,
  }],
  run(ctx, parsed) {
    const text = needText("know", parsed.positionals);
    return withSession(
      ctx,
      parsed,
      (store, session) =>
        editSession(
          store,
          session,
          "know",
          (s) => ({ ...s, knowledge: appendUnique(s.knowledge, [text]) }),
        ),
    );
  },
};
