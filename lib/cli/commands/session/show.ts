/**
 * `ctxsnap session show`: the live session state the next snapshot records.
 * @module
 */
import { readSessionState } from "../../../history/session_state.ts";
import type { Command } from "../../command.ts";
import { SESSION_FLAG, withSession } from "../../_session.ts";

/** The `session show` command. */
export const sessionShow: Command = {
  name: "session show",
  usage: "session [show] [--session S]",
  examples: ["ctxsnap session show", "ctxsnap session show --session experiment --json"],
  options: SESSION_FLAG,
  args: [],
  run(ctx, parsed) {
    return withSession(ctx, parsed, (store, session) => readSessionState(store, session));
  },
};
