/**
 * `ctxsnap session finding TEXT`: records a finding in the live session
 * (once: the same text twice is kept once).
 * @module
 */
import { appendUnique, editSession } from "../../../history/session_state.ts";
import type { Command } from "../../command.ts";
import { needText, SESSION_FLAG, withSession } from "../../_session.ts";

/** The `session finding` command. */
export const sessionFinding: Command = {
  name: "session finding",
  usage: "session finding TEXT [--session S]",
  examples: ['ctxsnap session finding "the parser allocates per token"'],
  options: SESSION_FLAG,
  args: [{ name: "TEXT", help: "the finding (the words are joined with spaces)", repeat: true }],
  run(ctx, parsed) {
    const text = needText("finding", parsed.positionals);
    return withSession(
      ctx,
      parsed,
      (store, session) =>
        editSession(
          store,
          session,
          "finding",
          (s) => ({ ...s, findings: appendUnique(s.findings, [text]) }),
        ),
    );
  },
};
