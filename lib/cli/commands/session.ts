/**
 * `ctxsnap session`: the live session state the next snapshot records.
 * @module
 */
import { NotFoundError, quote, UsageError } from "../../errors.ts";
import type { SnapshotContext } from "../../format/body.ts";
import {
  appendUnique,
  editSession,
  readSessionState,
  switchSession,
} from "../../history/session_state.ts";
import { checkName, selection } from "../../history/timeline.ts";
import { listSessionRows } from "../../repository/session_rows.ts";
import { type Command, intOption, iso, openStore, str } from "../command.ts";
import { esc } from "../output.ts";

/** What `session remove KIND TEXT` removes from. */
const LISTS = {
  decision: "decisions",
  finding: "findings",
  knowledge: "knowledge",
  file: "files_touched",
} as const;

function render(session: string, branch: string, s: SnapshotContext): string {
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

const SUBCOMMANDS = [
  "show",
  "set",
  "decide",
  "touch",
  "finding",
  "know",
  "remove",
  "list",
  "switch",
];

/** The `session` command. */
export const session: Command = {
  name: "session",
  summary: "show or edit the live session state that the next snapshot records",
  usage: [
    "session [show]",
    "session set [--task T] [--progress N]",
    "session decide TEXT | finding TEXT | know TEXT",
    "session touch PATH...",
    "session remove decision|finding|knowledge|file TEXT",
    "session list | switch NAME",
  ].join("\n"),
  examples: [
    'ctxsnap session set --task "migrate the parser" --progress 30',
    'ctxsnap session decide "keep the old API behind a flag"',
    "ctxsnap session touch src/parser.ts src/lexer.ts",
    'ctxsnap session remove decision "keep the old API behind a flag"',
    "ctxsnap undo                          # an edit of the session is undone like any operation",
    "ctxsnap session switch experiment   # later snapshots go to session 'experiment'",
  ],
  options: {
    task: { type: "string", arg: "T", help: "with set: the task" },
    progress: { type: "string", arg: "N", help: "with set: progress, whole percent 0-100" },
    session: { type: "string", arg: "S", help: "session to act on (default: current)" },
  },
  positionals: "any",
  run(ctx, parsed) {
    const [sub = "show", ...rest] = parsed.positionals;
    if (!SUBCOMMANDS.includes(sub)) {
      throw new UsageError(`Unknown session subcommand ${JSON.stringify(sub)}`, {
        hint: `one of: ${SUBCOMMANDS.join(", ")}`,
      });
    }
    const store = openStore(ctx);
    try {
      if (sub === "list") {
        const current = selection(store).session;
        const rows = listSessionRows(store);
        ctx.out.result(
          {
            current,
            sessions: rows.map((r) => ({
              name: r.name,
              branch: r.current_branch,
              current: r.name === current,
              updated_at: iso(r.updated_at),
            })),
          },
          () =>
            rows.length === 0
              ? `* ${esc(current)} (no snapshots yet)`
              : rows.map((r) =>
                `${r.name === current ? "*" : " "} ${esc(r.name)}  (branch ${
                  esc(r.current_branch)
                })`
              ).join("\n"),
        );
        return Promise.resolve(0);
      }
      if (sub === "switch") {
        const name = checkName(rest[0] ?? "", "session");
        switchSession(store, name);
        ctx.out.result({ current: name }, () => `Switched to session ${esc(name)}`);
        return Promise.resolve(0);
      }
      const sel = selection(store, str(parsed, "session"));
      const needText = (what: string): string => {
        const text = rest.join(" ").trim();
        if (text === "") throw new UsageError(`session ${what} needs TEXT`);
        return text;
      };
      let state: SnapshotContext;
      switch (sub) {
        case "show":
          state = readSessionState(store, sel.session);
          break;
        case "set": {
          const task = str(parsed, "task");
          const progress = intOption(parsed, "progress", 0, 100);
          if (task === undefined && progress === undefined) {
            throw new UsageError("session set needs --task or --progress");
          }
          state = editSession(store, sel.session, "set", (s) => ({
            ...s,
            task: task ?? s.task,
            progress_pct: progress ?? s.progress_pct,
          }));
          break;
        }
        case "remove": {
          const [kind = "", ...words] = rest;
          const list = LISTS[kind as keyof typeof LISTS];
          if (list === undefined) {
            throw new UsageError(`session remove takes ${Object.keys(LISTS).join(", ")}`, {
              hint: 'for example: ctxsnap session remove decision "keep the old API"',
            });
          }
          const text = words.join(" ").trim();
          if (text === "") throw new UsageError(`session remove ${kind} needs TEXT`);
          if (!readSessionState(store, sel.session)[list].includes(text)) {
            throw new NotFoundError(`The session has no ${kind} ${quote(text)}`, {
              hint: "`ctxsnap session show` lists them; the text must match exactly",
            });
          }
          state = editSession(store, sel.session, `remove ${kind}`, (s) => ({
            ...s,
            [list]: s[list].filter((item) => item !== text),
          }));
          break;
        }
        case "decide": {
          const text = needText("decide");
          state = editSession(
            store,
            sel.session,
            "decide",
            (s) => ({ ...s, decisions: appendUnique(s.decisions, [text]) }),
          );
          break;
        }
        case "finding": {
          const text = needText("finding");
          state = editSession(
            store,
            sel.session,
            "finding",
            (s) => ({ ...s, findings: appendUnique(s.findings, [text]) }),
          );
          break;
        }
        case "know": {
          const text = needText("know");
          state = editSession(
            store,
            sel.session,
            "know",
            (s) => ({ ...s, knowledge: appendUnique(s.knowledge, [text]) }),
          );
          break;
        }
        default: {
          if (rest.length === 0) throw new UsageError("session touch needs at least one PATH");
          state = editSession(store, sel.session, "touch", (s) => ({
            ...s,
            files_touched: appendUnique(s.files_touched, rest),
          }));
        }
      }
      ctx.out.result(
        { session: sel.session, branch: sel.branch, state },
        () => render(sel.session, sel.branch, state),
      );
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
