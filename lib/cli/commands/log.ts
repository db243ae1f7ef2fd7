/**
 * `ctxsnap log`: the operations log, and what `undo` and `redo` would revert;
 * with `--prompts`, the agent view: one line per prompt of the recorded agent
 * sessions, with the tools used and the files changed.
 * @module
 */
import { listOperations } from "../../repository/operations.ts";
import { undoStack } from "../../repository/undo_log.ts";
import type { Store } from "../../repository/store.ts";
import { type Command, flag, intOption, iso, openStore, short, str } from "../command.ts";
import { UsageError } from "../../errors.ts";
import type { PromptEntry } from "../../history/prompt_log.ts";
import { selection } from "../../history/timeline.ts";
import { operationJson } from "../json.ts";
import { esc } from "../output.ts";
import { SELECTION_FLAGS } from "../flags.ts";

/** The ids undo and redo would revert next (null for a store not yet migrated, opened read-only). */
function nextReverts(store: Store): { undo: string | null; redo: string | null } {
  try {
    const stack = undoStack(store);
    return { undo: stack.done.at(-1)?.id ?? null, redo: stack.redo.at(-1)?.id ?? null };
  } catch {
    return { undo: null, redo: null };
  }
}

/** The `log` command. */
export const log: Command = {
  name: "log",
  usage: "log [--all] [--limit N]\nlog --prompts [--agent-session ID] [--limit N]",
  examples: [
    "ctxsnap log",
    "ctxsnap log --all --json",
    "ctxsnap log --prompts                     # one line per agent prompt: tools, files changed",
  ],
  options: {
    all: {
      ...SELECTION_FLAGS.all,
      help: "every session (default: current session and store-wide operations)",
    },
    prompts: {
      type: "boolean",
      help:
        "the agent view: one line per prompt of every recorded agent session (interleaved as submitted), with the tools used and the files changed",
    },
    "agent-session": {
      type: "string",
      arg: "ID",
      help: "with --prompts: only this agent session (its id or a unique prefix)",
    },
    limit: { type: "string", arg: "N", help: "at most N entries" },
  },
  args: [],
  async run(ctx, parsed) {
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      if (flag(parsed, "prompts")) return await promptsView(ctx, parsed, store);
      if (str(parsed, "agent-session") !== undefined) {
        throw new UsageError("--agent-session goes with --prompts");
      }
      return await store.read(() => {
        const limit = intOption(parsed, "limit", 1, 1_000_000);
        const ops = listOperations(store, {
          ...(flag(parsed, "all") ? {} : { session: selection(store).session }),
          ...(limit === undefined ? {} : { limit }),
        });
        const next = nextReverts(store);
        ctx.out.result(
          { operations: ops.map(operationJson), next_undo: next.undo, next_redo: next.redo },
          () =>
            ops.length === 0 ? "No operations yet." : ops.map((op) =>
              [
                iso(op.createdAt)!.replace("T", " ").slice(0, 19),
                esc(op.id),
                esc(op.kind).padEnd(8),
                esc(op.status).padEnd(8),
                op.session ? `${esc(op.session)}/${esc(op.branch ?? "-")}` : "store",
                op.target ? `→ ${esc(short(op.target))}` : "",
                op.id === next.undo ? "(undo reverts this)" : "",
                op.id === next.redo ? "(redo re-applies this)" : "",
                op.error ? `error: ${esc(op.error)}` : "",
              ].filter((s) => s !== "").join("  ")
            ).join("\n"),
        );
        return Promise.resolve(0);
      });
    } finally {
      store.close();
    }
  },
};

/** Paths shown on one line; the rest are counted. */
const FILES_SHOWN = 4;
/** Characters of prompt text shown on one line. */
const TEXT_SHOWN = 80;

function promptLine(p: PromptEntry): string {
  const files = [...p.files.added, ...p.files.changed, ...p.files.removed];
  const tools = p.tools.map((t) => (t.count > 1 ? `${esc(t.tool)} ×${t.count}` : esc(t.tool)));
  const text = p.text === null
    ? ""
    : esc(p.text.length > TEXT_SHOWN ? `${p.text.slice(0, TEXT_SHOWN)}…` : p.text);
  return [
    new Date(p.at).toISOString().replace("T", " ").slice(0, 19),
    `${esc(p.session_id)} #${p.prompt}`,
    tools.length === 0 ? "no tools" : tools.join(", "),
    `+${p.files.added.length} ~${p.files.changed.length} −${p.files.removed.length}`,
    files.length === 0 ? "" : files.slice(0, FILES_SHOWN).map(esc).join(", ") +
      (files.length > FILES_SHOWN ? ` (+${files.length - FILES_SHOWN} more)` : ""),
    text === "" ? "" : `"${text}"`,
  ].filter((x) => x !== "").join("  ");
}

async function promptsView(
  ctx: Parameters<Command["run"]>[0],
  parsed: Parameters<Command["run"]>[1],
  store: Store,
): Promise<number> {
  if (flag(parsed, "all")) {
    throw new UsageError("--prompts lists every agent session: not with --all");
  }
  const { findAgentSession } = await import("../../history/agent.ts");
  const { promptLog } = await import("../../history/prompt_log.ts");
  return store.read(() => {
    const limit = intOption(parsed, "limit", 1, 1_000_000);
    const spec = str(parsed, "agent-session");
    const only = spec === undefined ? undefined : findAgentSession(store, spec).seq;
    const all = promptLog(store, only === undefined ? {} : { agentSession: only });
    const shown = limit === undefined ? all : all.slice(Math.max(0, all.length - limit));
    ctx.out.result(
      {
        prompts: shown.map((p) => ({
          ...p,
          at: new Date(p.at).toISOString(),
          revision: `prompt:${p.prompt}:${p.session_id}`,
          resume: `ctxsnap resume --agent-session ${p.session_id} --prompt ${p.prompt}`,
        })),
        omitted_earlier: all.length - shown.length,
      },
      () =>
        shown.length === 0
          ? "No agent prompts are recorded in this store."
          : shown.map(promptLine).join("\n"),
    );
    return Promise.resolve(0);
  });
}
