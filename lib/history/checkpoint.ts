/**
 * One agent checkpoint: a snapshot made with the store's retention policy
 * applied after it, and, when an agent harness's hook event comes with it,
 * that event recorded against it (`agent.ts`). The same operation serves
 * `ctxsnap create` and `ctxsnap hook` when no watch process runs, the watch
 * service (`lib/integrations/watch/service.ts`, with its incremental
 * capture) and the library's `checkpoint` (`api/agent.ts`).
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { loadOrCreateIdentity } from "../keys/identity.ts";
 * import { checkpoint } from "./checkpoint.ts";
 * import { parseClaudeCodeEvent } from "./agent.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "a\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 * const event = { session_id: "s1", hook_event_name: "Stop" };
 * const agent = parseClaudeCodeEvent(new TextEncoder().encode(JSON.stringify(event)), {
 *   recordPrompts: false,
 * });
 * const made = await checkpoint(store, me, { agent });
 * if (!(made.created && made.agent?.sessionId === "s1")) throw new Error("not recorded");
 * store.close();
 * await Deno.remove(ws, { recursive: true });
 * ```
 * @module
 */
import type { Store } from "../repository/store.ts";
import type { Signer } from "../format/envelope.ts";
import { type CreateOptions, type CreateResult, createSnapshot } from "./create.ts";
import { type AgentEvent, recordAgentEvent } from "./agent.ts";
import { type CaptureOptions, captureWorkspace } from "../workspace/capture.ts";
import type { SkippedEntry } from "../format/tree.ts";
import { readRetention, retainAfterCheckpoint } from "./retention.ts";

/**
 * The options of one checkpoint: those of `createSnapshot` a client may
 * give, and an agent event (which sets the source, reason and metadata).
 */
export type CheckpointOptions =
  & {
    /** The hook event this checkpoint records (`parseClaudeCodeEvent`, `validateAgentEvent`). */
    agent?: AgentEvent;
  }
  & Pick<
    CreateOptions,
    | "reason"
    | "context"
    | "workspace"
    | "source"
    | "session"
    | "branch"
    | "expectHead"
    | "allowUnchanged"
    | "metadata"
    | "maxFileBytes"
    | "onProgress"
  >;

/**
 * Makes one checkpoint of `store`'s workspace signed by `signer` (see the
 * module doc). A retention policy file that cannot be used stops it before
 * it is made (`ConfigError`, exit 7); a redelivered agent event returns the
 * first delivery's snapshot and records nothing.
 */
export async function checkpoint(
  store: Store,
  signer: Signer,
  options: CheckpointOptions,
  capture?: CreateOptions["capture"],
): Promise<CreateResult> {
  const { agent, ...rest } = options;
  const policy = readRetention(store.dir);
  // The capture's own skipped records answer the agent event's omissions, so
  // recording it never reads the whole tree back from the store.
  let last: { treeId: string; skipped: SkippedEntry[] } | null = null;
  const own = (o: CaptureOptions) => {
    const result = capture === undefined ? captureWorkspace(store, o) : capture(o);
    last = result;
    return result;
  };
  const make = (o: CreateOptions) => createSnapshot(store, signer, { ...o, capture: own });
  const skippedOf = (treeId: string) => {
    const kept = last as { treeId: string; skipped: SkippedEntry[] } | null;
    return kept !== null && kept.treeId === treeId ? kept.skipped : null;
  };
  const result = agent === undefined
    ? await make(rest)
    : await recordAgentEvent(store, rest, agent, make, skippedOf);
  if (result.created) retainAfterCheckpoint(store, policy);
  return result;
}
