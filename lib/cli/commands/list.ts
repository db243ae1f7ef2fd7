/**
 * `ctxsnap list`: the timeline, newest first.
 * @module
 */
import type { Envelope } from "../../snapshot/envelope.ts";
import {
  branchChain,
  getSnapshotRow,
  listSnapshots,
  readEnvelopeUnverified,
  selection,
  type SnapshotRow,
} from "../../snapshot/timeline.ts";
import { type LeanCtxRow, leanCtxRows } from "../../store/leanctx_rows.ts";
import type { Store } from "../../store/store.ts";
import { UsageError } from "../../errors.ts";
import { type Command, flag, intOption, openStore, short, str } from "../command.ts";
import { esc } from "../output.ts";

/** List items of stored lean-ctx snapshots; the task stands in for the reason. */
async function leanCtxItems(store: Store, rows: LeanCtxRow[]) {
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
      created_at: lean?.created_at ?? row.created_at,
      session: row.session,
      branch: row.branch,
      parent: lean?.parent_id ?? null,
      reason: lean?.session?.task ?? null,
      files: null,
      bytes: null,
      git_commit: lean?.git.commit ?? null,
      key_id: row.key_id,
      imported: true,
      readable: lean !== null,
    };
  });
}

/** The `list` command. */
export const list: Command = {
  name: "list",
  summary: "list snapshots, newest first",
  usage:
    "list [--session S] [--branch B] [--all] [--limit N]\nlist --agent-session ID [--prompt N] [--session S] [--limit N]",
  examples: [
    "ctxsnap list                  # the current branch's timeline",
    "ctxsnap list --all --json     # every snapshot in the store",
    "ctxsnap list --agent-session 3f6c0b0e-…             # what the hook recorded for one Claude Code session",
    "ctxsnap list --agent-session 3f6c0b0e-… --prompt 3  # the state before its third prompt",
  ],
  options: {
    session: { type: "string", arg: "S", help: "session (default: current)" },
    branch: { type: "string", arg: "B", help: "branch (default: the session's current)" },
    all: { type: "boolean", help: "every snapshot of every session and branch" },
    limit: { type: "string", arg: "N", help: "show at most N snapshots" },
    "agent-session": {
      type: "string",
      arg: "ID",
      help:
        "the checkpoints the agent hook made for agent session ID (any ctxsnap session unless --session)",
    },
    prompt: {
      type: "string",
      arg: "N",
      help:
        "with --agent-session: the checkpoint made when prompt N was submitted (the state before it)",
    },
  },
  positionals: 0,
  async run(ctx, parsed) {
    const store = openStore(ctx, { readOnly: true });
    try {
      const limit = intOption(parsed, "limit", 1, 1_000_000);
      let rows: SnapshotRow[];
      let leanRows: LeanCtxRow[];
      const agentSession = str(parsed, "agent-session");
      const prompt = intOption(parsed, "prompt", 1, Number.MAX_SAFE_INTEGER);
      if (prompt !== undefined && agentSession === undefined) {
        throw new UsageError("--prompt needs --agent-session");
      }
      if (agentSession !== undefined) {
        if (flag(parsed, "all") || str(parsed, "branch") !== undefined) {
          throw new UsageError(
            "--agent-session lists one agent session: not with --all or --branch",
          );
        }
        const { agentSnapshots } = await import("../../snapshot/agent.ts");
        const agentRows = agentSnapshots(store, str(parsed, "session") ?? null, agentSession)
          .filter((row) => prompt === undefined || row.event === "UserPromptSubmit")
          .reverse();
        rows = agentRows.map((row) => getSnapshotRow(store, row.id)!).filter((row) => row !== null);
        leanRows = [];
      } else if (flag(parsed, "all")) {
        rows = listSnapshots(store, limit === undefined ? {} : { limit });
        leanRows = leanCtxRows(store, {});
      } else {
        const sel = selection(store, str(parsed, "session"), str(parsed, "branch"));
        const chain = branchChain(store, sel.session, sel.branch);
        rows = (limit === undefined ? chain : chain.slice(0, limit))
          .map((id) => getSnapshotRow(store, id)!)
          .filter((row) => row !== null);
        leanRows = leanCtxRows(store, { session: sel.session, branch: sel.branch });
      }
      // lean-ctx snapshots (imported as themselves) follow, newest import first.
      if (limit !== undefined) leanRows = leanRows.slice(0, Math.max(0, limit - rows.length));
      const leanItems = leanRows.length === 0 ? [] : await leanCtxItems(store, leanRows);
      const items = rows.map((row) => {
        let envelope: Envelope | null = null;
        try {
          envelope = readEnvelopeUnverified(store, row.id); // only its reason is shown
        } catch {
          envelope = null;
        }
        const b = envelope?.body;
        const agentItem = agentSession === undefined ? {} : {
          agent: {
            session_id: agentSession,
            event: b?.source?.id.slice(agentSession.length + 1).split(":")[0] ?? null,
            prompt: b?.cursors.message ?? null,
          },
        };
        return {
          id: row.id,
          format: "ctxsnap",
          created_at: row.created_at,
          session: row.session,
          branch: row.branch,
          parent: row.parent,
          reason: b?.reason ?? null,
          files: b?.workspace?.files ?? null,
          bytes: b?.workspace?.bytes ?? null,
          git_commit: b?.git?.commit ?? null,
          key_id: row.key_id,
          imported: row.imported === 1,
          readable: envelope !== null,
          ...agentItem,
        };
      }).filter((item) =>
        prompt === undefined ||
        (item as { agent?: { prompt: number | null } }).agent?.prompt === prompt
      );
      const limited = limit === undefined || agentSession === undefined
        ? items
        : items.slice(0, limit);
      const all = [...limited, ...leanItems];
      ctx.out.result({ snapshots: all }, () => {
        if (all.length === 0) return "No snapshots yet. Run `ctxsnap create -m REASON`.";
        return all.map((item) =>
          [
            esc(short(item.id)),
            esc(String(item.created_at).replace("T", " ").slice(0, 19)),
            `${esc(item.session)}/${esc(item.branch)}`,
            ...("agent" in item && item.agent
              ? [`prompt ${(item.agent as { prompt: number | null }).prompt ?? "-"}`]
              : []),
            item.format === "lean-ctx"
              ? "lean-ctx"
              : item.files === null
              ? "no workspace"
              : `${item.files} files`,
            item.readable
              ? (esc(item.reason ?? "") || "-")
              : "(unreadable envelope: run `ctxsnap verify`)",
          ].join("  ")
        ).join("\n");
      });
      return 0;
    } finally {
      store.close();
    }
  },
};
