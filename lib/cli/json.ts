/**
 * The command line's `--json` shapes: the one module that maps the
 * library's results (camelCase fields, as `mod.ts` and `api/` return them)
 * to the documents docs/CLI.md specifies (snake_case keys, ISO 8601 UTC
 * times, full ids). A command builds its document here, so a library field
 * can be renamed without changing what scripts read, and the two casings
 * never mix inside one document.
 *
 * Stored and wire formats (docs/FORMAT.md: envelopes, bodies, trees, the
 * session's context) are already snake_case and pass through unchanged.
 *
 * @example
 * ```ts
 * import { gcJson } from "./json.ts";
 * const doc = gcJson({
 *   trees: 1, blobs: 2, bytes: 30, kept: { trees: 4, blobs: 5 },
 *   transcripts: { chains: 0, segments: 0, bytes: 0 }, strays: 0,
 *   dryRun: true, operation: null, index: null,
 * });
 * if (doc.dry_run !== true || "dryRun" in doc) throw new Error("gc --json is snake_case");
 * ```
 * @module
 */
import type { ResumeResult } from "../integrations/agents/resume.ts";
import type { SnapshotSummary } from "../format/summary_shape.ts";
import { summaryOf } from "../format/summary_shape.ts";
import type { BranchSummary } from "../history/summary.ts";
import type { CreateResult } from "../history/create.ts";
import type { AgentEvent, AgentOutcome } from "../history/agent.ts";
import type { Adoption } from "../history/adopt.ts";
import type { GcResult } from "../repository/gc.ts";
import type { VacuumResult } from "../repository/vacuum.ts";
import type { MovePlan } from "../workspace/plan.ts";
import type { RestoreGitState, RestoreResult } from "../workspace/move/restore.ts";
import type { SwitchResult } from "../workspace/move/switch.ts";
import type { RevertResult } from "../workspace/move/undo.ts";
import type { RemoteConfig } from "../remote/remote_config.ts";
import type { PulledRef, PullResult } from "../remote/pull.ts";
import type { SnapshotReport } from "../history/verify.ts";
import type { Operation } from "../repository/operations.ts";

/** A JSON document (an object) as `Output.result` prints it. */
export type JsonDoc = Record<string, unknown>;

/** The one snapshot summary shape of `create`, `list` and `show` (docs/CLI.md). */
export function summaryJson(s: SnapshotSummary): JsonDoc {
  return {
    id: s.id,
    format: s.format,
    created_at: s.createdAt,
    session: s.session,
    branch: s.branch,
    parent: s.parent,
    reason: s.reason,
    source: s.source,
    workspace: s.workspace,
    git: s.git,
    reverted_to: s.revertedTo,
    key_id: s.keyId,
    imported: s.imported,
    readable: s.readable,
  };
}

/** A branch as `branch --json` lists it. */
export function branchJson(b: BranchSummary): JsonDoc {
  return {
    name: b.name,
    head: b.head,
    base: b.base,
    current: b.current,
    created_at: b.createdAt,
    updated_at: b.updatedAt,
  };
}

/**
 * The `create --json` document of a checkpoint (also the MCP `checkpoint`
 * result): the one snapshot summary shape, then what this run did.
 */
export function createJson(result: CreateResult, via: string): JsonDoc {
  return {
    ...summaryJson(summaryOf(result.id, result.envelope, null)),
    created: result.created,
    capture: result.capture,
    operation: result.operation,
    secrets: result.secrets,
    via,
  };
}

/** What recording a hook event did, as `hook --json` and the watch protocol (§15) say it. */
export function agentOutcomeJson(a: AgentOutcome): JsonDoc {
  return {
    session_id: a.sessionId,
    event: a.event,
    position: a.position,
    prompt: a.prompt,
    duplicate: a.duplicate,
    omitted: a.omitted,
    omitted_more: a.omittedMore,
  };
}

/** A move plan as `--json` prints it (entries shown by kind, not content). */
export function planJson(plan: MovePlan | null): unknown {
  if (plan === null) return null;
  return {
    writes: plan.writes.map((w) => ({ path: w.path, action: w.action, type: w.entry.type })),
    deletes: plan.deletes,
    conflicts: plan.conflicts,
    unchanged: plan.unchanged,
    preserved: plan.preserved,
    forced: plan.forced,
  };
}

function gitStateJson(git: RestoreGitState | null): unknown {
  if (git === null) return null;
  return {
    anchor: git.anchor,
    head: git.head,
    differs: git.differs,
    with_git: git.withGit,
    blocking: git.blocking,
    blocking_paths: git.blockingPaths,
  };
}

/** The `restore --json` document. */
export function restoreJson(r: RestoreResult): JsonDoc {
  return {
    target: r.target,
    plan: planJson(r.plan),
    session: r.session,
    dry_run: r.dryRun,
    operation: r.operation,
    snapshot: r.snapshot,
    pre_restore: r.preRestore,
    git_commit: r.gitCommit,
    git: gitStateJson(r.git),
    would_refuse: r.wouldRefuse,
    not_captured: r.notCaptured,
  };
}

/** The `switch --json` document. */
export function switchJson(r: SwitchResult): JsonDoc {
  return {
    session: r.session,
    from: r.from,
    branch: r.branch,
    head: r.head,
    workspace: r.workspace,
    plan: planJson(r.plan),
    dry_run: r.dryRun,
    operation: r.operation,
    pre_switch: r.preSwitch,
  };
}

/** The `undo --json` and `redo --json` document. */
export function revertJson(r: RevertResult): JsonDoc {
  return {
    direction: r.direction,
    reverts: {
      id: r.reverts.id,
      kind: r.reverts.kind,
      session: r.reverts.session,
      finished_at: r.reverts.finishedAt,
    },
    plan: planJson(r.plan),
    dry_run: r.dryRun,
    operation: r.operation,
    saved: r.saved,
    git: r.git,
  };
}

/** The index vacuum a gc ran. */
export function vacuumJson(v: VacuumResult | null): unknown {
  if (v === null) return null;
  return {
    mode: v.mode,
    free_pages_before: v.freePagesBefore,
    free_pages_after: v.freePagesAfter,
    index_bytes_before: v.indexBytesBefore,
    index_bytes_after: v.indexBytesAfter,
  };
}

/** The `gc --json` document. */
export function gcJson(r: GcResult): JsonDoc {
  return {
    trees: r.trees,
    blobs: r.blobs,
    bytes: r.bytes,
    kept: r.kept,
    transcripts: r.transcripts,
    strays: r.strays,
    dry_run: r.dryRun,
    operation: r.operation,
    index: vacuumJson(r.index),
  };
}

/** What `init --adopt --json` says of the adopted store (the command adds its own fields). */
export function adoptionJson(a: Adoption): JsonDoc {
  return {
    untrusted_signers: a.untrustedSigners,
    unresolved_operations: a.unresolvedOperations,
    sessions_with_live_state: a.sessionsWithLiveState,
    extra_files: a.extraFiles,
    allow_secrets: a.allowSecrets,
  };
}

/** A remote as `remote add --json` and `remote list --json` show it. */
export function remoteJson(remote: RemoteConfig): JsonDoc {
  return {
    name: remote.name,
    url: remote.url,
    endpoint: remote.endpoint,
    region: remote.region,
    path_style: remote.pathStyle,
  };
}

/** A ref `pull --json` and `clone --json` report. */
export function refJson(ref: PulledRef): Record<string, unknown> {
  return {
    key_id: ref.keyId,
    session: ref.session,
    branch: ref.branch,
    seq: ref.seq,
    head: ref.head,
    created_at: ref.createdAt,
    local_branch: ref.localBranch,
    status: ref.status,
    reason: ref.reason,
    trusted: ref.trusted,
  };
}

/** The `pull --json` document (`startedAt`: when the command began). */
export function pullJson(
  name: string,
  result: PullResult,
  startedAt: string,
): Record<string, unknown> {
  return {
    remote: name,
    location: result.location,
    initialized: result.initialized,
    refs: result.refs.map(refJson),
    snapshot: result.snapshot,
    snapshots: result.snapshots,
    objects: result.objects,
    bytes_received: result.bytesReceived,
    requests: result.requests,
    operation: result.operation,
    started_at: startedAt,
    finished_at: new Date().toISOString(),
  };
}

/** A snapshot report as `--json` prints it (snake_case). */
export function reportJson(report: SnapshotReport): JsonDoc {
  return {
    id: report.id,
    valid: report.valid,
    trusted: report.trusted,
    key_id: report.keyId,
    signer: report.signer,
    checked: report.checked,
    has_workspace: report.hasWorkspace,
    problems: report.problems,
  };
}

/** The `hook --json` document: the checkpoint and what recording `event` did. */
export function hookJson(result: CreateResult, event: AgentEvent, via: string): JsonDoc {
  const agent = result.agent;
  return {
    id: result.id,
    created: result.created,
    event: event.event,
    agent_session: event.session_id,
    prompt: agent?.prompt ?? null,
    position: agent?.position ?? null,
    duplicate: agent?.duplicate ?? false,
    omitted: agent?.omitted ?? [],
    omitted_more: agent?.omittedMore ?? 0,
    transcript: agent?.transcript ?? null,
    via,
  };
}

/** One operation as `log --json` lists it (times ISO 8601 UTC, null while unfinished). */
export function operationJson(op: Omit<Operation, "plan">): JsonDoc {
  return {
    id: op.id,
    session: op.session,
    branch: op.branch,
    kind: op.kind,
    source: op.source,
    target: op.target,
    status: op.status,
    error: op.error,
    created_at: new Date(op.createdAt).toISOString(),
    finished_at: op.finishedAt === null ? null : new Date(op.finishedAt).toISOString(),
  };
}

/** `resume --json`: the agent session, the fork and the restore (snake_case, docs/CLI.md). */
export function resumeJson(r: ResumeResult): JsonDoc {
  return {
    agent: r.agent,
    agent_session: r.agentSession,
    prompt: r.prompt,
    snapshot: r.snapshot,
    dry_run: r.restore.dryRun,
    session_id: r.fork?.sessionId ?? null,
    transcript_path: r.fork?.path ?? null,
    fork: r.fork === null ? null : {
      session_id: r.fork.sessionId,
      path: r.fork.path,
      lines: r.fork.lines,
      bytes: r.fork.bytes,
      source: r.fork.source,
    },
    continue_command: r.continueCommand,
    prompt_text: r.promptText,
    no_fork_reason: r.noForkReason,
    restore: restoreJson(r.restore),
  };
}
