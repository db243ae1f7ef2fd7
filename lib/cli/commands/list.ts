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
import { type LeanCtxRow, leanCtxRows } from "../../repository/leanctx_rows.ts";
import { getSnapshotRow } from "../../repository/snapshot_rows.ts";
import type { Store } from "../../repository/store.ts";
import { UsageError } from "../../errors.ts";
import { type Command, flag, intOption, openStore, short, str } from "../command.ts";
import { esc } from "../output.ts";
import { summaryJson } from "../json.ts";

/** A listed snapshot as `list --json` prints it (with its agent event, if any). */
function listedJson(item: SnapshotSummary & { agent?: unknown }): Record<string, unknown> {
  return item.agent === undefined ? summaryJson(item) : { ...summaryJson(item), agent: item.agent };
}

/** Summaries of stored lean-ctx snapshots; the task stands in for the reason. */
async function leanCtxItems(store: Store, rows: LeanCtxRow[]): Promise<SnapshotSummary[]> {
  const { readLeanCtx } = await import("../../share/leanctx_store.ts");
  return rows.map((row) => {
    let lean = null;
    try {
      lean = readLeanCtx(store, row.id).snapshot;
    } catch {
      lean = null;
    }
    return {
      id: row.id,
      format: "lean-ctx",
      createdAt: lean?.created_at ?? row.created_at,
      session: row.session,
      branch: row.branch,
      parent: lean?.parent_id ?? null,
      reason: lean?.session?.task ?? null,
      source: null,
      workspace: null,
      git: lean?.git ?? null,
      revertedTo: null,
      keyId: row.key_id,
      imported: true,
      readable: lean !== null,
    };
  });
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

/** The `list` command. */
export const list: Command = {
  name: "list",
  summary: "list snapshots, newest first",
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
    session: { type: "string", arg: "S", help: "session (default: current)" },
    branch: { type: "string", arg: "B", help: "branch (default: the session's current)" },
    all: { type: "boolean", help: "every snapshot of every session and branch" },
    limit: { type: "string", arg: "N", help: "show at most N snapshots" },
    before: {
      type: "string",
      arg: "TIME",
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
  positionals: 0,
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
          // lean-ctx snapshots (imported as themselves) follow, newest import first.
          const leanRows = leanCtxRows(
            store,
            all ? {} : { session: sel.session, branch: sel.branch },
          );
          let leanItems = leanRows.length === 0 ? [] : await leanCtxItems(store, leanRows);
          if (before !== undefined) {
            leanItems = leanItems.filter((item) => Date.parse(item.createdAt) <= before);
          }
          if (limit !== undefined) {
            leanItems = leanItems.slice(0, Math.max(0, limit - items.length));
          }
          rows = [...items, ...leanItems];
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
                esc(String(item.createdAt).replace("T", " ").slice(0, 19)),
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
                item.format === "lean-ctx"
                  ? "lean-ctx"
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
