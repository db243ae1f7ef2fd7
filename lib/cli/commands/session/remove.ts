/**
 * `ctxsnap session remove KIND TEXT`: removes one decision, finding, piece
 * of knowledge or touched file from the live session (exit 4 when absent).
 * @module
 */
import { NotFoundError, quote, UsageError } from "../../../errors.ts";
import { editSession, readSessionState } from "../../../history/session_state.ts";
import type { Command } from "../../command.ts";
import { SESSION_FLAG, withSession } from "../../_session.ts";

/** What `session remove KIND TEXT` removes from. */
const LISTS = {
  decision: "decisions",
  finding: "findings",
  knowledge: "knowledge",
  file: "files_touched",
} as const;

/** The `session remove` command. */
export const sessionRemove: Command = {
  name: "session remove",
  usage: "session remove decision|finding|knowledge|file TEXT [--session S]",
  examples: [
    'ctxsnap session remove decision "keep the old API behind a flag"',
    "ctxsnap undo                          # an edit of the session is undone like any operation",
  ],
  options: SESSION_FLAG,
  args: [{ name: "decision|finding|knowledge|file", help: "which list to remove TEXT from" }, {
    name: "TEXT",
    help: "the item, exactly as `session show` lists it",
    repeat: true,
  }],
  run(ctx, parsed) {
    const [kind = "", ...words] = parsed.positionals;
    const list = LISTS[kind as keyof typeof LISTS];
    if (list === undefined) {
      throw new UsageError(`session remove takes ${Object.keys(LISTS).join(", ")}`, {
        hint: 'for example: ctxsnap session remove decision "keep the old API"',
      });
    }
    const text = words.join(" ").trim();
    if (text === "") throw new UsageError(`session remove ${kind} needs TEXT`);
    return withSession(ctx, parsed, (store, session) => {
      if (!readSessionState(store, session)[list].includes(text)) {
        throw new NotFoundError(`The session has no ${kind} ${quote(text)}`, {
          hint: "`ctxsnap session show` lists them; the text must match exactly",
        });
      }
      return editSession(store, session, `remove ${kind}`, (s) => ({
        ...s,
        [list]: s[list].filter((item) => item !== text),
      }));
    });
  },
};
