/**
 * Creating a snapshot: capture the workspace, read the git anchor and the
 * live session, build the body, sign it, append it to the branch by
 * compare-and-swap — all in one store transaction, durable before it returns.
 * The captured tree becomes the workspace baseline, and the change is
 * recorded as an undoable `create` operation. When the workspace, git anchor
 * and session are exactly what the branch head recorded, no snapshot is
 * added: the head is returned with `created: false` (unless
 * `allowUnchanged`).
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { createSnapshot } from "./create.ts";
 * import { generateSeed, keyIdOf, publicKeyFromSeed } from "../crypto/ed25519.ts";
 * import { toHex } from "../encoding/hex.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/a.txt`, "a\n");
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const seed = generateSeed();
 * const publicKey = await publicKeyFromSeed(seed);
 * const signer = { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
 * const first = await createSnapshot(store, signer, { reason: "first" });
 * const same = await createSnapshot(store, signer, { reason: "nothing changed" });
 * if (same.created || same.id !== first.id) throw new Error("an unchanged workspace adds nothing");
 * await Deno.writeTextFile(`${dir}/a.txt`, "b\n");
 * const second = await createSnapshot(store, signer, { reason: "second" });
 * if (second.envelope.body.parent !== first.id) throw new Error("chained");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import { canonicalize, type JsonValue } from "../encoding/canonical_json.ts";
import { ConflictError, quote, UsageError } from "../errors.ts";
import {
  type CaptureOptions,
  type CaptureResult,
  type CaptureStats,
  captureWorkspace,
} from "../workspace/capture.ts";
import type { Store } from "../repository/store.ts";
import type { SkippedEntry, TreeManifest } from "../format/tree.ts";
import {
  checkNewSnapshotArguments,
  emptyContext,
  emptyCursors,
  emptyFacets,
  type GitAnchor,
  SNAPSHOT_SCHEMA,
  SNAPSHOT_SCHEMA_V2,
  type SnapshotBody,
  type SnapshotContext,
  type SnapshotCursors,
  type SnapshotFacets,
  validateContext,
  validateCursors,
  validateFacets,
} from "../format/body.ts";
import { type Envelope, signBody, type Signer } from "../format/envelope.ts";
import { type Slices, validateSlices } from "../format/slices.ts";
import { gitAnchor } from "../integrations/git/git.ts";
import { readSessionState } from "./session_state.ts";
import {
  ensureBranch,
  insertSnapshot,
  moveHead,
  readEnvelope,
  resolveSnapshotId,
  selection,
} from "./timeline.ts";
import { VERSION } from "../version.ts";
import type { AgentOutcome } from "./agent.ts";
import { setBaseline } from "../repository/baseline.ts";
import { assertResolved, assertWorkspaceResolved } from "../repository/operations.ts";
import { snapshotIdBySource } from "../repository/snapshot_rows.ts";
import { beginChange, endChange } from "./oplog.ts";

/** Context supplied with `--context`: any subset of context, cursors and facets. */
export interface ContextInput {
  /** Replaces the live task. */
  task?: string;
  /** Replaces the live progress. */
  progress_pct?: number;
  /** Replace the live lists. */
  decisions?: string[];
  /** Replace the live lists. */
  files_touched?: string[];
  /** Replace the live lists. */
  findings?: string[];
  /** Replace the live lists. */
  knowledge?: string[];
  /** Extensions keyed by namespace. */
  extensions?: Record<string, JsonValue>;
  /** Any subset of cursors. */
  cursors?: Partial<SnapshotCursors>;
  /** Any subset of facets. */
  facets?: Partial<SnapshotFacets>;
  /** Token ROI slice of this snapshot. */
  roi?: Slices["roi"];
  /** Lineage slice of this snapshot. */
  lineage?: Slices["lineage"];
  /** Ledger slice of this snapshot. */
  ledger?: Slices["ledger"];
}

const CONTEXT_KEYS = [
  "task",
  "progress_pct",
  "decisions",
  "files_touched",
  "findings",
  "knowledge",
  "extensions",
  "cursors",
  "facets",
  "roi",
  "lineage",
  "ledger",
] as const;

/**
 * Validates a `--context` document. Unknown keys are refused, naming them;
 * values are checked with the body rules.
 */
export function validateContextInput(value: unknown): ContextInput {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new UsageError("The context document is not a JSON object");
  }
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!(CONTEXT_KEYS as readonly string[]).includes(key)) {
      throw new UsageError(`The context document has unknown key ${quote(key)}`, {
        hint: `allowed keys: ${CONTEXT_KEYS.join(", ")}`,
      });
    }
  }
  for (const sub of ["cursors", "facets"] as const) {
    const inner = o[sub];
    if (inner === undefined) continue;
    if (inner === null || typeof inner !== "object" || Array.isArray(inner)) {
      throw new UsageError(`The context document's ${quote(sub)} is not an object`);
    }
    const allowed = Object.keys(sub === "cursors" ? emptyCursors() : emptyFacets());
    for (const key of Object.keys(inner)) {
      if (!allowed.includes(key)) {
        throw new UsageError(`The context document has unknown key ${quote(`${sub}.${key}`)}`, {
          hint: `allowed keys in ${sub}: ${allowed.join(", ")}`,
        });
      }
    }
  }
  try {
    // Check values by building a full context from them.
    resolveContext(emptyContext(), o as ContextInput);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(
      (error as Error).message.replace(/^Invalid [^:]*: /, "The context document is invalid: "),
    );
  }
  return o as ContextInput;
}

function resolveContext(
  live: SnapshotContext,
  input: ContextInput | null | undefined,
): {
  context: SnapshotContext;
  cursors: SnapshotCursors;
  facets: SnapshotFacets;
  slices: Slices;
} {
  const i = input ?? {};
  const context = validateContext({
    task: i.task ?? live.task,
    progress_pct: i.progress_pct ?? live.progress_pct,
    decisions: i.decisions ?? live.decisions,
    files_touched: i.files_touched ?? live.files_touched,
    findings: i.findings ?? live.findings,
    knowledge: i.knowledge ?? live.knowledge,
    extensions: i.extensions ?? live.extensions,
  }, "context document");
  const cursors = validateCursors({ ...emptyCursors(), ...(i.cursors ?? {}) }, "context document");
  const facets = validateFacets({ ...emptyFacets(), ...(i.facets ?? {}) }, "context document");
  const slices = validateSlices(i as Record<string, unknown>, "context document");
  return { context, cursors, facets, slices };
}

/** Options for {@linkcode createSnapshot}. */
export interface CreateOptions {
  /** Why (`-m`). */
  reason?: string;
  /** Context, cursors and facets overriding the live session for this snapshot. */
  context?: ContextInput | null;
  /** Capture the workspace (default true). */
  workspace?: boolean;
  /** Idempotency source: the same source twice returns the existing snapshot. */
  source?: { kind: string; id: string } | null;
  /** Session (default: current). */
  session?: string;
  /** Branch (default: the session's current; created empty if missing). */
  branch?: string;
  /** Compare-and-swap: the branch head must be this id (prefix ok), or null for an empty branch. */
  expectHead?: string | null;
  /** Extra facets.metadata entries (merged over the context's). */
  metadata?: Record<string, JsonValue>;
  /** Progress callback during capture. */
  onProgress?: (seen: number) => void;
  /** Largest file captured (default 256 MiB); larger ones are skipped as `too_large`. */
  maxFileBytes?: number;
  /** The unresolved operation this snapshot completes (a restore finishing). */
  operation?: string;
  /**
   * Same-layer only (`agent.ts` records an agent event in the same
   * transaction): runs inside the transaction before the live session is
   * read. Higher layers compose {@linkcode snapshotBody} and
   * {@linkcode appendSnapshot} in their own transaction instead.
   */
  prepare?: () => void;
  /** Same-layer only (`agent.ts`): runs inside the transaction after the snapshot is recorded, before commit. */
  beforeCommit?: (envelope: Envelope) => void;
  /**
   * Captures the workspace in place of a full walk (a long-lived process's
   * incremental capture, `incremental.ts`); runs inside the transaction and
   * must build the tree a full capture with `options` would.
   */
  capture?: (options: CaptureOptions) => CaptureResult;
  /**
   * A capture already made inside the caller's transaction (the move
   * engine's record walk), recorded as is: no walk.
   */
  captured?: CaptureResult;
  /** Reads the git anchor in place of {@linkcode gitAnchor} (before the transaction). */
  gitAnchor?: () => GitAnchor | null;
  /**
   * Record a new snapshot even when the workspace, git anchor and session
   * are exactly what the branch head recorded (default: return the head,
   * `created: false`).
   */
  allowUnchanged?: boolean;
  /**
   * Record the snapshot (child of the head) without moving the head: it is
   * reachable by its id and `list --all`, not from the branch (the content
   * `undo --force` overwrites is kept this way).
   */
  detached?: boolean;
}

/** What {@linkcode createSnapshot} returns. */
export interface CreateResult {
  /** Snapshot id. */
  id: string;
  /** The signed envelope. */
  envelope: Envelope;
  /**
   * False when `source` matched an existing snapshot, or nothing changed
   * since the branch head: that snapshot is returned.
   */
  created: boolean;
  /** Capture counters, or null when the workspace was not captured. */
  capture: CaptureStats | null;
  /** The `create` operation recorded, or null (nothing changed; part of another operation). */
  operation: string | null;
  /** Files the capture left out as secrets (`secret` by name, `secret_content`), sorted. */
  secrets: SkippedEntry[];
  /** For a checkpoint of an agent event: what the event recorded (`agent.ts`). */
  agent?: AgentOutcome;
}

/**
 * Whether two bodies record the same state: all but time, parent, reason,
 * source and `facets.metadata`, which say how and why a snapshot was made
 * (a restore's `reverted_to`, a hook's `agent`), not what the workspace and
 * session held.
 */
function sameState(a: SnapshotBody, b: SnapshotBody): boolean {
  const state = (body: SnapshotBody) =>
    canonicalize({
      branch: body.branch,
      session: body.session,
      workspace: body.workspace,
      git: body.git,
      context: body.context,
      cursors: body.cursors,
      facets: { ...body.facets, metadata: {} },
    } as unknown as JsonValue);
  return state(a) === state(b);
}

/** Everything a snapshot body is built from: plain data, no store. */
export interface BodyInput {
  /** Session. */
  session: string;
  /** Branch. */
  branch: string;
  /** The branch head the snapshot follows, or null. */
  parent: string | null;
  /** Why. */
  reason: string;
  /** Idempotency source, or null. */
  source: { kind: string; id: string } | null;
  /** The git anchor, or null. */
  git: GitAnchor | null;
  /**
   * The workspace tree recorded (its id and manifest, or its id and the
   * capture's counts, which never build a flat manifest), or null.
   */
  workspace:
    | { treeId: string; tree: TreeManifest }
    | { treeId: string; files: number; bytes: number; skipped: number }
    | null;
  /** The live session state. */
  live: SnapshotContext;
  /** Context, cursors and facets overriding `live`. */
  context?: ContextInput | null;
  /** Extra facets.metadata entries. */
  metadata?: Record<string, JsonValue>;
  /** Creation time (default now). */
  createdAt?: string;
}

/**
 * The workspace part of a body for tree `treeId`: its file count, bytes and
 * skipped count, read from the manifest (what a capture of it counts).
 */
export function workspaceRef(
  treeId: string,
  tree: TreeManifest,
): NonNullable<SnapshotBody["workspace"]> {
  let files = 0;
  let bytes = 0;
  for (const entry of tree.entries) {
    if (entry.type !== "file") continue;
    files += 1;
    bytes += entry.size;
  }
  return { tree: treeId, files, bytes, skipped: tree.skipped.length };
}

/**
 * Builds a snapshot body (pure: no store, no clock unless `createdAt` is
 * left out). The create operation and the move engine's finish both build
 * their bodies here.
 */
export function snapshotBody(input: BodyInput): SnapshotBody {
  const { context, cursors, facets, slices } = resolveContext(input.live, input.context);
  if (input.metadata) facets.metadata = { ...facets.metadata, ...input.metadata };
  return {
    // v1 unless a slice is recorded, so bodies without slices keep their bytes and id.
    schema: Object.keys(slices).length > 0 ? SNAPSHOT_SCHEMA_V2 : SNAPSHOT_SCHEMA,
    created_at: input.createdAt ?? new Date().toISOString(),
    parent: input.parent,
    session: input.session,
    branch: input.branch,
    reason: input.reason,
    source: input.source,
    git: input.git,
    workspace: input.workspace === null
      ? null
      : "tree" in input.workspace
      ? workspaceRef(input.workspace.treeId, input.workspace.tree)
      : {
        tree: input.workspace.treeId,
        files: input.workspace.files,
        bytes: input.workspace.bytes,
        skipped: input.workspace.skipped,
      },
    context,
    cursors,
    facets,
    tool: { name: "ctxsnap", version: VERSION },
    ...slices,
  };
}

/**
 * Signs `body` and appends it: inserts the snapshot and, unless `detached`,
 * moves its branch head from `body.parent` to it (compare-and-swap). Call it
 * inside a store transaction; returns the envelope.
 */
export async function appendSnapshot(
  store: Store,
  signer: Signer,
  body: SnapshotBody,
  detached = false,
): Promise<Envelope> {
  const envelope = await signBody(body, signer);
  insertSnapshot(store, envelope);
  if (!detached) moveHead(store, body.session, body.branch, body.parent, envelope.id);
  return envelope;
}

/** Creates, signs and durably records a snapshot. */
export async function createSnapshot(
  store: Store,
  signer: Signer,
  options: CreateOptions = {},
): Promise<CreateResult> {
  const invalid = checkNewSnapshotArguments(options.reason, options.source);
  if (invalid !== null) throw new UsageError(invalid);
  const sel = selection(store, options.session, options.branch);
  const git = options.gitAnchor ? options.gitAnchor() : gitAnchor(store.workspaceRoot, store.dir);
  return await store.transactionAsync("create", async () => {
    if (options.source) {
      const existing = snapshotIdBySource(
        store,
        sel.session,
        options.source.kind,
        options.source.id,
        signer.keyId,
      );
      if (existing !== null) {
        return {
          id: existing,
          envelope: await readEnvelope(store, existing),
          created: false,
          capture: null,
          operation: null,
          secrets: [],
        };
      }
    }
    assertResolved(store, sel.session, options.operation ?? null);
    if (options.workspace !== false) assertWorkspaceResolved(store, options.operation ?? null);
    // A snapshot made as part of another operation (an undo saving the disk
    // first) belongs to that operation's undo record; otherwise it is a
    // `create` operation of its own, which also sets the baseline.
    const own = options.operation === undefined;
    const pending = own ? beginChange(store, [sel.session]) : null;
    const branch = ensureBranch(store, sel.session, sel.branch);
    if (options.expectHead !== undefined) {
      const expected = options.expectHead === null
        ? null
        : resolveSnapshotId(store, options.expectHead);
      if (expected !== branch.head) {
        throw new ConflictError(
          `The head of branch ${quote(sel.branch)} is ${quote(branch.head ?? "none")}, not ${
            quote(expected ?? "none")
          }`,
          { hint: "another snapshot was created meanwhile; list the branch and decide again" },
        );
      }
    }
    const captureOptions = {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.maxFileBytes !== undefined ? { maxFileBytes: options.maxFileBytes } : {}),
    };
    const capture = options.workspace === false
      ? null
      : options.captured
      ? options.captured
      : options.capture
      ? options.capture(captureOptions)
      : captureWorkspace(store, captureOptions);
    options.prepare?.();
    const body = snapshotBody({
      session: sel.session,
      branch: sel.branch,
      parent: branch.head,
      reason: options.reason ?? "",
      source: options.source ?? null,
      git,
      // The capture's counts, not its flat manifest: a watch process's
      // capture builds that only when read (O(files) per checkpoint).
      workspace: capture === null ? null : {
        treeId: capture.treeId,
        files: capture.stats.files,
        bytes: capture.stats.bytes,
        skipped: capture.skipped.length,
      },
      live: readSessionState(store, sel.session),
      context: options.context ?? null,
      ...(options.metadata ? { metadata: options.metadata } : {}),
    });
    const finish = (id: string, created: boolean): string | null => {
      if (pending === null) return null;
      if (capture !== null) setBaseline(store, capture.treeId, pending.id);
      return endChange(store, pending, {
        kind: "create",
        session: sel.session,
        branch: sel.branch,
        source: branch.head,
        target: id,
        plan: { created, tree: capture?.treeId ?? null },
      });
    };
    const secrets = (capture?.skipped ?? []).filter((s) =>
      s.reason === "secret" || s.reason === "secret_content"
    );
    if (!options.allowUnchanged && !options.detached && branch.head !== null) {
      // A checkpoint of an unchanged workspace and session adds nothing.
      const head = await readEnvelope(store, branch.head); // id and signature checked
      if (sameState(head.body, body)) {
        const operation = finish(head.id, false);
        options.beforeCommit?.(head);
        return {
          id: head.id,
          envelope: head,
          created: false,
          capture: capture?.stats ?? null,
          operation,
          secrets,
        };
      }
    }
    const envelope = await appendSnapshot(store, signer, body, options.detached === true);
    const operation = finish(envelope.id, true);
    options.beforeCommit?.(envelope);
    return {
      id: envelope.id,
      envelope,
      created: true,
      capture: capture?.stats ?? null,
      operation,
      secrets,
    };
  });
}
