/**
 * `ctxsnap list`: the timeline, newest first.
 * @module
 */
import { parseTime } from "../../history/names.ts";
import { listSnapshots, type SnapshotSummary, summarize } from "../../history/summary.ts";
import {
  branchChain,
  listBranches,
  readEnvelopeUnverified,
  selection,
} from "../../history/timeline.ts";
import type { Envelope } from "../../format/envelope.ts";
import { getSnapshotRow } from "../../repository/snapshot_rows.ts";
import type { Store } from "../../repository/store.ts";
import { UsageError } from "../../errors.ts";
import { type Command, flag, intOption, openStore, short, str } from "../command.ts";
import { esc } from "../output.ts";
import { SELECTION_FLAGS } from "../flags.ts";
import { summaryJson } from "../json.ts";

/** A listed snapshot as `list --json` prints it (with its agent event, if any). */
function listedJson(item: SnapshotSummary & { agent?: unknown }): Record<string, unknown> {
  return item.agent === undefined ? summaryJson(item) : { ...summaryJson(item), agent: item.agent };
}

/**
 * Summaries of the stored snapshots of every format kept as itself
 * (lean-ctx), newest import first; the task stands in for the reason.
 */
async function keptItems(
  store: Store,
  filter: { session?: string; branch?: string },
): Promise<SnapshotSummary[]> {
  const { keptFormats } = await import("../../share/formats/registry.ts");
  const items: SnapshotSummary[] = [];
  for (const format of await keptFormats()) {
    for (const stored of await format.list(store, filter)) {
      const { context: _c, tree: _t, tool: _tool, slices: _s, ...summary } = stored;
      items.push(summary);
    }
  }
  return items;
}

/**
 * The branches (`session/branch`) whose history holds each snapshot: where a
 * snapshot really is, which for an import is `imported/<key id>`, not the
 * branch its author recorded in the body.
 */
function branchesHolding(store: Store): Map<string, string[]> {
  const on = new Map<string, string[]>();
  for (const b of listBranches(store)) {
    for (const id of branchChain(store, b.session, b.name)) {
      const names = on.get(id) ?? [];
      names.push(`${b.session}/${b.name}`);
      on.set(id, names);
    }
  }
  return on;
}

/** Where to look when the selected branch is empty but others are not (after an import). */
function elsewhere(store: Store, session: string, branch: string): string | null {
  const others = listBranches(store).filter((b) =>
    b.head !== null && !(b.session === session && b.name === branch)
  );
  if (others.length === 0) return null;
  const imported = others.find((b) => b.session === session && b.name.startsWith("imported/")) ??
    others.find((b) => b.name.startsWith("imported/"));
  const pick = imported ?? others[0]!;
  const sessionFlag = pick.session === session ? "" : ` --session ${pick.session}`;
  return `No snapshots on ${session}/${branch} yet. ${
    imported ? "Imported snapshots are" : "Snapshots are"
  } on ${pick.session}/${pick.name}: \`ctxsnap list --branch ${pick.name}${sessionFlag}\` (every branch: \`ctxsnap list --all\`).`;
}

/** When the agent event a row describes happened (ISO 8601), or null for a snapshot's row. */
function eventTime(item: object): string | null {
  const agent = (item as { agent?: { at?: unknown } }).agent;
  return typeof agent?.at === "string" ? agent.at : null;
}

/** The `list` command. */
export const list: Command = {
  name: "list",
  usage:
    "list [--session S] [--branch B] [--all] [--limit N] [--before TIME]\nlist --agent-session ID [--prompt N] [--limit N]\nlist --prompts [--agent-session ID] [--limit N]",
  examples: [
    "ctxsnap list                  # the current branch's timeline",
    "ctxsnap list --all --json     # every snapshot in the store",
    "ctxsnap list --before 2026-11-30T10:00   # what existed at 10:00 UTC",
    "ctxsnap list --agent-session 3f6c0b0e-…             # what the hook recorded for one Claude Code session",
    "ctxsnap list --agent-session 3f6c0b0e-… --prompt 3  # the state before its third prompt",
    "ctxsnap list --prompts                              # the prompts of the latest agent session",
  ],
  options: {
    session: { ...SELECTION_FLAGS.session, help: "session (default: current)" },
    branch: { ...SELECTION_FLAGS.branch, help: "branch (default: the session's current)" },
    all: { ...SELECTION_FLAGS.all, help: "every snapshot of every session and branch" },
    limit: { type: "string", arg: "N", help: "show at most N snapshots" },
    before: {
      ...SELECTION_FLAGS.before,
      help: "only snapshots created at or before TIME (ISO 8601; UTC without a zone)",
    },
    "agent-session": {
      type: "string",
      arg: "ID",
      help:
        "the events the agent hook recorded for agent session ID (or a unique prefix), newest first, each with the snapshot holding the workspace after it",
    },
    prompts: {
      type: "boolean",
      help:
        "the prompts of agent session ID (without --agent-session: the one with the newest event), first first, each with the snapshot holding the state before it",
    },
    prompt: {
      type: "string",
      arg: "N",
      help:
        "with --agent-session: the snapshot holding the state before prompt N (the revision prompt:N:ID); exit 4 if there is no prompt N",
    },
  },
  args: [],
  async run(ctx, parsed) {
    const limit = intOption(parsed, "limit", 1, 1_000_000);
    const beforeText = str(parsed, "before");
    const before = beforeText === undefined ? undefined : parseTime(beforeText);
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return await store.readAsync(async () => {
        const agentSession = str(parsed, "agent-session");
        const prompt = intOption(parsed, "prompt", 1, Number.MAX_SAFE_INTEGER);
        if (prompt !== undefined && agentSession === undefined) {
          throw new UsageError("--prompt needs --agent-session");
        }
        if (flag(parsed, "prompts")) {
          if (prompt !== undefined || flag(parsed, "all") || before !== undefined) {
            throw new UsageError("--prompts lists prompts: not with --prompt, --all or --before");
          }
          const { agentPrompts } = await import("../../history/agent.ts");
          const found = agentPrompts(store, agentSession ?? null);
          const all = found.prompts;
          const shown = limit === undefined ? all : all.slice(Math.max(0, all.length - limit));
          const s = found.session;
          const doc = {
            agent_session: {
              harness: s.harness,
              session_id: s.session_id,
              cwd: s.cwd,
              transcript_path: s.transcript_path,
              first_event_at: new Date(s.first_event_at).toISOString(),
              last_event_at: new Date(s.last_event_at).toISOString(),
              end_reason: s.end_reason,
              prompts: s.prompts,
              events: s.events,
            },
            prompts: shown.map((t) => ({
              prompt: t.prompt,
              revision: `prompt:${t.prompt}:${s.session_id}`,
              prompt_id: t.prompt_id,
              snapshot: t.snapshot,
              // The state before it is gone when its snapshot was forgotten (forget, retention).
              forgotten: getSnapshotRow(store, t.snapshot) === null,
              at: new Date(t.at).toISOString(),
              text: t.text === null || t.text.length <= 200 ? t.text : `${t.text.slice(0, 200)}…`,
            })),
            omitted_earlier: all.length - shown.length,
          };
          ctx.out.result(doc, () =>
            [
              `agent session ${esc(s.session_id)}: ${s.prompts} prompts, ${s.events} events${
                s.end_reason === null ? "" : `, ended (${esc(s.end_reason)})`
              }`,
              ...doc.prompts.map((t) =>
                `  prompt:${t.prompt}  ${t.forgotten ? "(forgotten)" : short(t.snapshot)}  ${
                  t.at.replace("T", " ").slice(0, 19)
                }${t.text === null ? "" : `  ${esc(t.text)}`}`
              ),
            ].join("\n"));
          return 0;
        }
        let rows: (SnapshotSummary & { agent?: unknown })[];
        let forgotten = 0;
        let on: Record<string, string[]> | null = null;
        let emptyHint: string | null = null;
        if (agentSession !== undefined) {
          if (
            flag(parsed, "all") || str(parsed, "branch") !== undefined || before !== undefined ||
            str(parsed, "session") !== undefined
          ) {
            throw new UsageError(
              "--agent-session lists one agent session: not with --all, --session, --branch or --before",
            );
          }
          const { agentPrompt, agentSessionEvents, findAgentSession, snapshotBeforePrompt } =
            await import(
              "../../history/agent.ts"
            );
          const found = findAgentSession(store, agentSession);
          const describe = (id: string, agent: Record<string, unknown>) => {
            let envelope: Envelope | undefined;
            try {
              envelope = readEnvelopeUnverified(store, id); // only described, never acted on
            } catch {
              envelope = undefined;
            }
            return { ...summarize(store, id, envelope), agent };
          };
          const agentItems = prompt !== undefined
            ? [describe(snapshotBeforePrompt(store, found.session_id, prompt), {
              session_id: found.session_id,
              event: "UserPromptSubmit",
              prompt,
              prompt_id: agentPrompt(store, found, prompt)?.prompt_id ?? null,
              text: agentPrompt(store, found, prompt)?.text ?? null,
            })]
            : agentSessionEvents(store, found, limit ?? 1_000_000).reverse().filter((row) => {
              // An event whose snapshot was forgotten (forget, retention) has no state to show.
              const kept = getSnapshotRow(store, row.snapshot) !== null;
              if (!kept) forgotten++;
              return kept;
            }).map((row) =>
              describe(row.snapshot, {
                session_id: found.session_id,
                event: row.kind,
                tool: row.tool,
                tool_use_id: row.tool_use_id,
                position: row.position,
                prompt: row.prompt,
                created: row.created === 1,
                at: new Date(row.at).toISOString(),
              })
            );
          rows = limit === undefined ? agentItems : agentItems.slice(0, limit);
          if (forgotten > 0) {
            ctx.out.note(
              `${forgotten} event(s) of this agent session name snapshots that were forgotten ` +
                "(by `forget` or the retention policy); they are not listed",
            );
          }
        } else {
          const all = flag(parsed, "all");
          const sel = selection(store, str(parsed, "session"), str(parsed, "branch"));
          const items = listSnapshots(store, {
            all,
            session: sel.session,
            branch: sel.branch,
            ...(limit !== undefined ? { limit } : {}),
            ...(before !== undefined ? { before } : {}),
          });
          // Snapshots kept as themselves (lean-ctx) follow, newest import first.
          let keptList = await keptItems(
            store,
            all ? {} : { session: sel.session, branch: sel.branch },
          );
          if (before !== undefined) {
            keptList = keptList.filter((item) => Date.parse(item.createdAt) <= before);
          }
          if (limit !== undefined) {
            keptList = keptList.slice(0, Math.max(0, limit - items.length));
          }
          rows = [...items, ...keptList];
          // Where each row really is (an import: imported/<key id>, not the body's branch).
          const holding = all ? branchesHolding(store) : null;
          on = {};
          for (const item of rows) {
            on[item.id] = holding === null
              ? [`${sel.session}/${sel.branch}`]
              : holding.get(item.id) ?? [`${item.session}/${item.branch}`];
          }
          if (rows.length === 0) emptyHint = elsewhere(store, sel.session, sel.branch);
        }
        const where = on;
        ctx.out.result(
          where === null ? { snapshots: rows.map(listedJson) } : {
            snapshots: rows.map(listedJson),
            on: rows.map((item) => ({ id: item.id, branches: where[item.id] ?? [] })),
          },
          () => {
            if (rows.length === 0) {
              return emptyHint ?? "No snapshots yet. Run `ctxsnap create -m REASON`.";
            }
            return rows.map((item) =>
              [
                esc(short(item.id)),
                // An agent event's row shows when the event happened (several events can name
                // one older snapshot), a snapshot's row when it was made.
                esc(String(eventTime(item) ?? item.createdAt).replace("T", " ").slice(0, 19)),
                where?.[item.id] !== undefined
                  ? esc(where[item.id]!.join(", "))
                  : `${esc(item.session)}/${esc(item.branch)}`,
                ...("agent" in item && item.agent
                  ? [
                    agentLabel(
                      item.agent as { prompt: number | null; event: string; tool?: string },
                    ),
                  ]
                  : []),
                item.format !== "ctxsnap"
                  ? item.format
                  : item.workspace === null
                  ? "no workspace"
                  : `${item.workspace.files} files`,
                item.readable
                  ? (esc(item.reason ?? "") || "-")
                  : "(unreadable envelope: run `ctxsnap verify`)",
              ].join("  ")
            ).join("\n");
          },
        );
        return 0;
      });
    } finally {
      store.close();
    }
  },
};

function agentLabel(agent: { prompt: number | null; event: string; tool?: string | null }): string {
  const tool = agent.tool ? ` ${esc(agent.tool)}` : "";
  return `prompt ${agent.prompt ?? "-"}  ${esc(agent.event)}${tool}`;
}
