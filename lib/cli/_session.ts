/**
 * What the `session` subcommands share: the human rendering of a session
 * state, and running one edit of the live state and printing the result.
 *
 * @example
 * ```ts ignore
 * import { editCommand } from "./_session.ts";
 * const decide = editCommand("decide", (s, text) => ({ ...s, decisions: [...s.decisions, text] }));
 * ```
 * @module
 */
import { UsageError } from "../errors.ts";
import type { SnapshotContext } from "../format/body.ts";
import type { Store } from "../repository/store.ts";
import { selection } from "../history/timeline.ts";
import { type CommandContext, openStore, type Parsed, str } from "./command.ts";
import { SELECTION_FLAGS } from "./flags.ts";
import { esc } from "./output.ts";

/** `--session S`, as every session subcommand that reads or edits a state takes it. */
export const SESSION_FLAG = {
  session: { ...SELECTION_FLAGS.session, help: "session to act on (default: current)" },
};

/** The human lines of a session state. */
export function renderSession(session: string, branch: string, s: SnapshotContext): string {
  const lines = [
    `session    ${esc(session)} (branch ${esc(branch)})`,
    `task       ${esc(s.task || "-")}`,
    `progress   ${s.progress_pct}%`,
  ];
  const section = (title: string, items: string[]) => {
    lines.push(`${title}: ${items.length === 0 ? "none" : ""}`);
    for (const item of items) lines.push(`  - ${esc(item)}`);
  };
  section("decisions", s.decisions);
  section("files touched", s.files_touched);
  section("findings", s.findings);
  section("knowledge", s.knowledge);
  return lines.join("\n");
}

/**
 * Runs `step` on the selected session (`--session`, default current) in
 * an open store and prints the state it returns.
 */
export function withSession(
  ctx: CommandContext,
  parsed: Parsed,
  step: (store: Store, session: string) => SnapshotContext,
): Promise<number> {
  const store = openStore(ctx);
  try {
    const sel = selection(store, str(parsed, "session"));
    const state = step(store, sel.session);
    ctx.out.result(
      { session: sel.session, branch: sel.branch, state },
      () => renderSession(sel.session, sel.branch, state),
    );
    return Promise.resolve(0);
  } finally {
    store.close();
  }
}

/** The words after a subcommand as one TEXT (`session decide keep the API`); never empty. */
export function needText(what: string, words: string[]): string {
  const text = words.join(" ").trim();
  if (text === "") throw new UsageError(`session ${what} needs TEXT`);
  return text;
}
