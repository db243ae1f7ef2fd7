/**
 * The agent view of the history, in text: one entry per prompt of the
 * recorded agent sessions, in the order they were submitted (sessions that
 * interleave stay interleaved, each entry naming its own), with the tools its
 * events used, its Bash commands (when the hook kept them), and the files its
 * events changed. `ctxsnap log --prompts` prints it; the Replay page shows the
 * same groups (`lib/view/_agent.ts`).
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { promptLog } from "./prompt_log.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * if (promptLog(store, {}).length !== 0) throw new Error("no agent sessions yet");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "../repository/store.ts";
import type { TreeManifest } from "../format/tree.ts";
import { diffTrees } from "../repository/diff.ts";
import { getSnapshotRow } from "../repository/snapshot_rows.ts";
import { allAgentEvents, allAgentSessions, allAgentTurns } from "../repository/agent_rows.ts";
import { CtxsnapError } from "../errors.ts";

/** One prompt of an agent session and what was done for it. */
export interface PromptEntry {
  /** The harness (`claude-code`). */
  harness: string;
  /** The agent's session id. */
  session_id: string;
  /** The prompt's number in its agent session. */
  prompt: number;
  /** When it was submitted (ms since the epoch). */
  at: number;
  /** Its text, when the hook kept it, else null. */
  text: string | null;
  /** The snapshot holding the state before it. */
  before: string;
  /** Tools its events used, in first use order, with how many times. */
  tools: { tool: string; count: number }[];
  /** Its Bash commands, when the hook kept them. */
  commands: string[];
  /** Paths its events changed (each path once, in the order first changed). */
  files: { added: string[]; changed: string[]; removed: string[] };
  /** Events recorded for it. */
  events: number;
}

/** What {@linkcode promptLog} lists. */
export interface PromptLogOptions {
  /** Only this agent session (its row number). */
  agentSession?: number;
}

/** The prompts of the store's agent sessions, oldest first. */
export function promptLog(store: Store, options: PromptLogOptions): PromptEntry[] {
  const sessions = new Map(allAgentSessions(store).map((s) => [s.seq, s]));
  const entries = new Map<string, PromptEntry>();
  const key = (session: number, prompt: number) => `${session}:${prompt}`;
  for (const turn of allAgentTurns(store)) {
    const session = sessions.get(turn.agent_session);
    if (session === undefined) continue;
    if (options.agentSession !== undefined && turn.agent_session !== options.agentSession) continue;
    entries.set(key(turn.agent_session, turn.prompt), {
      harness: session.harness,
      session_id: session.session_id,
      prompt: turn.prompt,
      at: turn.at,
      text: turn.text,
      before: turn.snapshot,
      tools: [],
      commands: [],
      files: { added: [], changed: [], removed: [] },
      events: 0,
    });
  }
  const trees = new Map<string, TreeManifest | null>();
  const treeOf = (id: string | null): TreeManifest | null => {
    if (id === null) return { version: 1, entries: [], skipped: [] };
    if (!trees.has(id)) {
      try {
        trees.set(id, store.getTree(id));
      } catch (error) {
        if (!(error instanceof CtxsnapError)) throw error;
        trees.set(id, null);
      }
    }
    return trees.get(id)!;
  };
  const seen = new Map<PromptEntry, Set<string>>();
  for (const event of allAgentEvents(store)) {
    if (event.prompt === null) continue;
    const entry = entries.get(key(event.agent_session, event.prompt));
    if (entry === undefined) continue;
    entry.events++;
    if (event.tool !== null) {
      const known = entry.tools.find((t) => t.tool === event.tool);
      if (known) known.count++;
      else entry.tools.push({ tool: event.tool, count: 1 });
    }
    if (event.command !== null) entry.commands.push(event.command);
    // A prompt's own snapshot is the state before it: what changed there came before the prompt.
    if (event.created !== 1 || event.kind === "UserPromptSubmit") continue;
    // The files this event changed: its snapshot against its parent (gone when forgotten).
    const row = getSnapshotRow(store, event.snapshot);
    if (row === null || row.tree === null) continue;
    const parent = row.parent === null ? null : getSnapshotRow(store, row.parent);
    if (row.parent !== null && parent === null) continue;
    const before = treeOf(parent?.tree ?? null);
    const after = treeOf(row.tree);
    if (before === null || after === null) continue;
    const change = diffTrees(before, after);
    let paths = seen.get(entry);
    if (paths === undefined) seen.set(entry, paths = new Set());
    for (const kind of ["added", "changed", "removed"] as const) {
      for (const path of change[kind]) {
        if (paths.has(path)) continue;
        paths.add(path);
        entry.files[kind].push(path);
      }
    }
  }
  return [...entries.values()].sort((a, b) => a.at - b.at);
}
