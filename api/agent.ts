/**
 * Agent jobs: checkpoint a workspace for an agent harness, record a hook
 * event with its checkpoint (the harness's session, its prompts and turns),
 * and keep a long-lived incremental checkpointing service for one store
 * (what `ctxsnap watch` and `ctxsnap mcp` run), so a checkpoint costs in
 * proportion to what changed.
 *
 * A hook is two calls: {@linkcode parseClaudeCodeEvent} on the event's JSON
 * (untrusted; strictly parsed and bounded) and {@linkcode checkpoint} with
 * it. A redelivered event returns the first delivery's snapshot.
 *
 * @example A Claude Code hook event, checkpointed; then the service
 * ```ts
 * import { initStore, loadOrCreateIdentity } from "./snapshot.ts";
 * import { checkpoint, parseClaudeCodeEvent, WatchService } from "./agent.ts";
 *
 * const workspace = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${workspace}/a.txt`, "a\n");
 * const store = initStore(`${workspace}/.ctxsnap`, workspace);
 * const me = await loadOrCreateIdentity(await Deno.makeTempDir());
 *
 * const stdin = new TextEncoder().encode(
 *   JSON.stringify({ session_id: "s1", hook_event_name: "Stop", cwd: workspace }),
 * );
 * const event = parseClaudeCodeEvent(stdin, { recordPrompts: false });
 * const made = await checkpoint(store, me, { agent: event });
 * if (!(made.created && made.agent?.sessionId === "s1")) throw new Error("example failed");
 *
 * const service = new WatchService(store, me, { pollMs: 0 });
 * await Deno.writeTextFile(`${workspace}/a.txt`, "b\n");
 * const next = await service.checkpoint({ reason: "turn 2" });
 * if (!(next.envelope.body.parent === made.id)) throw new Error("example failed");
 * service.close();
 * store.close();
 * await Deno.remove(workspace, { recursive: true });
 * ```
 * @module
 */
export { checkpoint } from "../lib/history/checkpoint.ts";
export {
  CLAUDE_CODE,
  MAX_EVENT_BYTES,
  parseClaudeCodeEvent,
  validateAgentEvent,
} from "../lib/history/agent.ts";
export { WatchService } from "../lib/integrations/watch/service.ts";

// Types the signatures above mention.
export type { JsonValue } from "../lib/encoding/canonical_json.ts";
export { SNAPSHOT_SCHEMA, SNAPSHOT_SCHEMA_V2 } from "../lib/format/body.ts";
export type {
  GitAnchor,
  SnapshotBody,
  SnapshotContext,
  SnapshotCursors,
  SnapshotFacets,
  SnapshotSchema,
  WorkspaceRef,
} from "../lib/format/body.ts";
export type {
  DirEntry,
  DirFileEntry,
  DirSkipped,
  DirSubtreeEntry,
  DirSymlinkEntry,
  DirTree,
} from "../lib/format/dir_tree.ts";
export type { CheckDirTreeOptions, DirTreeFacts } from "../lib/format/tree_object.ts";
export type { Envelope, EnvelopeSignature, Signer } from "../lib/format/envelope.ts";
export type {
  LedgerItem,
  LedgerSlice,
  LineageItem,
  LineageSlice,
  RoiSlice,
  Slices,
} from "../lib/format/slices.ts";
export type {
  FileEntry,
  SkippedEntry,
  SymlinkEntry,
  TreeEntry,
  TreeManifest,
} from "../lib/format/tree.ts";
export type { AgentEvent, AgentEventKind, AgentOutcome } from "../lib/history/agent.ts";
export type { TranscriptMark, TranscriptRead } from "../lib/history/transcript.ts";
export type { CheckpointOptions } from "../lib/history/checkpoint.ts";
export type { ContextInput, CreateOptions, CreateResult } from "../lib/history/create.ts";
export type { WatchServiceStatus } from "../lib/integrations/watch/service.ts";
export type { Identity } from "../lib/keys/identity.ts";
export { Store } from "../lib/repository/store.ts";
export type { CaptureOptions, CaptureResult, CaptureStats } from "../lib/workspace/capture.ts";
export type { IncrementalStatus } from "../lib/workspace/incremental.ts";
