/**
 * The timeline view's data (`ctxsnap.timeline/v1`): everything the Replay
 * page shows, built from a store (all sessions, one session, or one branch)
 * or from a verified published snapshot or bundle. It is the JSON embedded in
 * the page written by `ctxsnap timeline --html` and served by `ctxsnap serve`
 * (`docs/FORMAT.md` §14).
 *
 * The view layer sits above `share` and below `cli`: encoding → crypto → fs →
 * store → snapshot → restore → share → view → cli.
 *
 * Every string in the data is untrusted text from snapshots (a reason, a
 * path, a file's lines); the page renders it as text only (see `html.ts`).
 * What the data says about trust is computed here, never copied from input:
 * each snapshot's id is recomputed, its signature checked, and its signer
 * looked up in the trust policy. A bundle or published file is verified in
 * full (`verifyStream`) before anything from it is used, and one whose
 * signatures do not all verify is refused.
 *
 * Trees are sent once per tree id, as a delta against the tree of the
 * snapshot's parent when that is smaller; file diffs are keyed by
 * `<old blob>..<new blob>` (empty for a missing side) and computed for every
 * parent → child step within size limits ({@linkcode DEFAULT_LIMITS}).
 *
 * @example
 * ```ts
 * import { Store } from "../repository/store.ts";
 * import { timelineFromStore } from "./model.ts";
 * const dir = await Deno.makeTempDir();
 * const store = Store.init(`${dir}/.ctxsnap`, dir);
 * const data = await timelineFromStore(store, { kind: "all" }, { isTrusted: () => false, nameOf: () => null });
 * if (!(data.schema === "ctxsnap.timeline/v1" && data.snapshots.length === 0)) throw new Error("empty store");
 * store.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { JsonValue } from "../encoding/canonical_json.ts";
import { CtxsnapError, IntegrityError, NotFoundError, quote, UsageError } from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import type { Store } from "../repository/store.ts";
import type { TreeEntry, TreeManifest } from "../format/tree.ts";
import type { DirTree } from "../format/dir_tree.ts";
import { expandDirTree } from "../format/tree_object.ts";
import type {
  GitAnchor,
  SnapshotBody,
  SnapshotContext,
  SnapshotCursors,
  WorkspaceRef,
} from "../format/body.ts";
import { SLICE_FIELDS } from "../format/slices.ts";
import { diffStoredTrees, diffTrees, entryMap, type StoredTreeDiff } from "../repository/diff.ts";
import { checkEnvelope, type Envelope } from "../format/envelope.ts";
import { diffText, type Hunk } from "../history/text_diff.ts";
import {
  branchChain,
  getSnapshotRow,
  listBranches,
  listSnapshotRows,
  readEnvelope,
  readEnvelopeUnverified,
  selection,
  type SnapshotRow,
} from "../history/timeline.ts";
import type { TrustPolicy } from "../history/verify.ts";
import { fdReader } from "../format/tar.ts";
import { openSource, verifyStream } from "../share/verify_file.ts";
import { VERSION } from "../version.ts";
import { agentOfBody, agentSessionsFromSnapshots, agentSessionsFromStore } from "./_agent.ts";

/** The schema tag of the view data. */
export const TIMELINE_SCHEMA = "ctxsnap.timeline/v1";

/** Size limits of the view data. */
export interface ViewLimits {
  /** Files larger than this (either side) are not diffed (`too_large`). */
  max_diff_input_bytes: number;
  /** Diff lines kept per file; the rest is cut (`truncated_lines`). */
  max_diff_lines: number;
  /** Total bytes of diff lines in one page; later diffs are `omitted`. */
  diff_budget_bytes: number;
  /** Skipped records kept per tree (`skipped_total` gives the full count). */
  max_skipped_shown: number;
  /**
   * A step (parent → child) changing more files than this gets no diffs in
   * the page (a first snapshot, a restore far away): they are the workspace's
   * content, not a change to review. `serve` computes any diff on request.
   */
  max_diffs_per_step: number;
}

/** The limits used unless overridden. */
export const DEFAULT_LIMITS: Readonly<ViewLimits> = Object.freeze({
  max_diff_input_bytes: 1024 * 1024,
  max_diff_lines: 2000,
  diff_budget_bytes: 16 * 1024 * 1024,
  max_skipped_shown: 1000,
  max_diffs_per_step: 200,
});

/** How far a snapshot's signature was checked and what it says. */
export interface ViewSigner {
  /** Signer key id. */
  key_id: string;
  /** Signer public key (hex). */
  public_key: string;
  /** Name from the trust policy, or null. */
  name: string | null;
  /** The id is BLAKE3 of the body. */
  id_matches: boolean;
  /** The Ed25519 signature over the id verifies. */
  signature_valid: boolean;
  /** Valid and signed by a pinned key. */
  trusted: boolean;
  /** `trusted`, `untrusted` (valid, unpinned signer) or `invalid`. */
  status: "trusted" | "untrusted" | "invalid";
}

/** One snapshot as the page shows it. */
export interface ViewSnapshot {
  /** Snapshot id. */
  id: string;
  /** `ctxsnap`, or the format it is kept as (`lean-ctx`: imported as itself, no workspace). */
  format: "ctxsnap" | "lean-ctx";
  /** Parent id, or null. */
  parent: string | null;
  /** Session. */
  session: string;
  /** Branch named in the body. */
  branch: string;
  /** The lane it is drawn in: `session/branch`, or `session/imported/<key_id>` for imports. */
  lane: string;
  /** Body's created_at (the signer's clock). */
  created_at: string;
  /** Why it was taken. */
  reason: string;
  /** Idempotency source. */
  source: { kind: string; id: string } | null;
  /** The restore target (from `facets.metadata.reverted_to`), or null. */
  reverted_to: string | null;
  /** The restore a `pre-restore` snapshot was taken for, or null. */
  pre_restore_for: string | null;
  /** Arrived by import. */
  imported: boolean;
  /** The envelope could be read and parsed. */
  readable: boolean;
  /** Session context. */
  context: SnapshotContext;
  /** Replay cursors. */
  cursors: SnapshotCursors | null;
  /** Recovery facets. */
  facets: Record<string, JsonValue>;
  /** The body's `roi`, `lineage` and `ledger` slices that are present, or null when none is. */
  slices: Record<string, JsonValue> | null;
  /** Git anchor. */
  git: GitAnchor | null;
  /** Workspace summary from the body. */
  workspace: WorkspaceRef | null;
  /** The tree id when its content is available here, else null. */
  tree: string | null;
  /** The tool that wrote it. */
  tool: { name: string; version: string } | null;
  /** Signature and trust. */
  signer: ViewSigner;
  /** What is wrong with it (empty when valid). */
  problems: string[];
  /** Paths changed since the parent (the empty tree for a root), or null when unknown or not captured. */
  changes: { added: string[]; changed: string[]; removed: string[] } | null;
  /** The parent's tree id when `changes` is known and the parent captured a workspace, else null. */
  parent_tree: string | null;
  /** The agent event that made it (its body's `facets.metadata.agent`, checked for shape), or null. */
  agent: ViewSnapshotAgent | null;
}

/** The agent event a snapshot was made for (from its signed body). */
export interface ViewSnapshotAgent {
  /** The harness (`claude-code`). */
  harness: string;
  /** The agent's session id. */
  session_id: string;
  /** The hook event (`UserPromptSubmit`, `PostToolUse`, …). */
  event: string;
  /** The prompt it belongs to, or null before the first. */
  prompt: number | null;
}

/** One recorded hook event of an agent session. */
export interface ViewAgentEvent {
  /** Its position in the agent session (0 when known only from a snapshot's metadata). */
  position: number;
  /** The event (`PostToolUse`, …). */
  kind: string;
  /** The tool, for tool events. */
  tool: string | null;
  /** The Bash command of a Bash event, when the hook kept it (`--record-prompts`). */
  command: string | null;
  /** The prompt it belongs to, or null before the first. */
  prompt: number | null;
  /** The snapshot holding the workspace after it (in view). */
  snapshot: string;
  /** It made that snapshot (its changes are the event's); false when nothing changed. */
  created: boolean;
  /** When it was recorded. */
  at: string;
}

/** One message of a prompt's conversation slice. */
export interface ViewMessage {
  /** `user` (the prompt), `assistant` (its text), `tool_use` (a call) or `tool_result`. */
  role: "user" | "assistant" | "tool_use" | "tool_result";
  /** The text, shown as text. */
  text: string;
  /** The tool of a `tool_use` or `tool_result`, else null. */
  tool: string | null;
}

/** The conversation between a prompt and the next, where the transcript is kept. */
export interface ViewConversation {
  /** Messages in order. */
  messages: ViewMessage[];
  /** Messages left out past the page's bound. */
  truncated: number;
}

/** Where conversation slices come from: null when the transcript is not kept. */
export type ConversationSource = (
  harness: string,
  sessionId: string,
  prompt: number,
) => ViewConversation | null;

/** One prompt of an agent session: the group of events recorded for it. */
export interface ViewPrompt {
  /** Its number in the agent session (1, 2, …). */
  prompt: number;
  /** Its text, when the hook kept it (`--record-prompts`), else null. */
  text: string | null;
  /** When it was submitted, or null when unknown. */
  at: string | null;
  /** The snapshot holding the state before it, when in view, else null. */
  before: string | null;
  /** Its events in view, in order. */
  events: ViewAgentEvent[];
  /** Its conversation slice, where the transcript is kept, else null. */
  conversation: ViewConversation | null;
  /** The command that resumes the agent session from the state before it. */
  resume: string;
}

/** An agent session, drawn as a lane of its own. */
export interface ViewAgentSession {
  /** The harness. */
  harness: string;
  /** The agent's session id. */
  session_id: string;
  /** Its lane: `agent:<harness>/<session_id>`. */
  lane: string;
  /** The ctxsnap session its first event was recorded in. */
  ctx_session: string;
  /** Its first and latest events. */
  first_event_at: string;
  /** Its latest event. */
  last_event_at: string;
  /** Why it ended (`SessionEnd`), or null. */
  end_reason: string | null;
  /** From the store's agent records (true), or only from snapshots' metadata (a file). */
  from_records: boolean;
  /** Events before its first prompt (`SessionStart`). */
  before_first_prompt: ViewAgentEvent[];
  /** Its prompts in view, first first. */
  prompts: ViewPrompt[];
}

/** A branch (lane) of the graph. */
export interface ViewBranch {
  /** Session. */
  session: string;
  /** Branch name. */
  name: string;
  /** `session/name`. */
  lane: string;
  /** Head snapshot, or null. */
  head: string | null;
  /** The snapshot a fork started from, or null. */
  base: string | null;
  /** `branch`, `fork` (has a base) or `imported` (a quarantine branch). */
  kind: "branch" | "fork" | "imported";
  /** The session's current branch. */
  current: boolean;
}

/** A tree entry: `[path, "file", blob, size, mode]` or `[path, "symlink", target]`. */
export type ViewEntry = [string, "file", string, number, number] | [string, "symlink", string];

/** A tree, whole (`base` null) or as changes to the tree `base`. */
export interface ViewTree {
  /** The tree this one is a delta of, or null when `set` holds every entry. */
  base: string | null;
  /** Entries added or replaced. */
  set: ViewEntry[];
  /** Paths removed from `base`. */
  unset: string[];
  /** Skipped records (at most `max_skipped_shown`), or null when the same as `base`'s. */
  skipped: { path: string; reason: string }[] | null;
  /** How many skipped records the tree has. */
  skipped_total: number;
}

/** The diff of one file between two blobs. */
export interface FileDiff {
  /** `text`, `binary`, `too_large`, `unavailable` (content not here) or `omitted` (page budget). */
  status: "text" | "binary" | "too_large" | "unavailable" | "omitted";
  /** Old size in bytes, or null for a new file. */
  old_size: number | null;
  /** New size in bytes, or null for a deleted file. */
  new_size: number | null;
  /** Lines added. */
  added: number;
  /** Lines removed. */
  removed: number;
  /** Hunks (only for `text`). */
  hunks: Hunk[];
  /** False when the diff search hit its cost bound (correct, maybe not shortest). */
  exact: boolean;
  /** Diff lines cut off after `max_diff_lines`. */
  truncated_lines: number;
}

/** Where the data came from. */
export interface ViewSource {
  /** `store`, `bundle` or `snapshot` (a published envelope). */
  kind: "store" | "bundle" | "snapshot";
  /** For a store: `all`, `session` or `branch`; for a file: `file`. */
  scope: "all" | "session" | "branch" | "file";
  /** Session of a session or branch scope. */
  session: string | null;
  /** Branch of a branch scope. */
  branch: string | null;
  /** The file's base name (files only). */
  file: string | null;
  /** The file's primary snapshot (files only). */
  primary: string | null;
  /** The file carries workspace content (files only). */
  with_workspace: boolean;
}

/** Everything the page shows. */
export interface TimelineData {
  /** Always {@linkcode TIMELINE_SCHEMA}. */
  schema: typeof TIMELINE_SCHEMA;
  /** When the data was built (ISO 8601 UTC). */
  generated_at: string;
  /** The tool that built it. */
  tool: { name: string; version: string };
  /** Where it came from. */
  source: ViewSource;
  /** Served live by `ctxsnap serve` (diffs are fetched on demand). */
  live: boolean;
  /** Counts of signature verdicts. */
  verification: { trusted: number; untrusted: number; invalid: number };
  /** Branches, in lane order. */
  branches: ViewBranch[];
  /** Snapshots, oldest first. */
  snapshots: ViewSnapshot[];
  /** Trees by id. */
  trees: Record<string, ViewTree>;
  /** File diffs by `<old blob>..<new blob>`. */
  diffs: Record<string, FileDiff>;
  /** The limits applied. */
  limits: ViewLimits;
  /** Notes for the reader (limits reached, content missing). */
  notes: string[];
  /** Agent sessions with events in view, each with its prompts (empty when none). */
  agent_sessions: ViewAgentSession[];
}

/** Which part of a store to show. */
export type StoreScope =
  | { kind: "all" }
  | { kind: "session"; session: string }
  | { kind: "branch"; session: string; branch: string };

/** Options of the builders. */
export interface BuildOptions {
  /** Served live: diffs are not precomputed (the server computes them on request). */
  live?: boolean;
  /** Trees kept between builds (a server rebuilding after each change); trees never change. */
  treeCache?: TreeCache;
  /** Override limits. */
  limits?: Partial<ViewLimits>;
  /** The build time (default now). */
  now?: Date;
  /** Conversation slices of prompts, where transcripts are kept. */
  conversation?: ConversationSource;
}

/** Where trees and blob bytes come from; each returns verified content or null. */
export interface ContentSource {
  /** A tree by id, or null when it is not available. */
  tree(id: string): TreeManifest | null;
  /**
   * The differences between trees `a` and `b` read without expanding either
   * (`diffStoredTrees`: equal subtrees are not read), or null when this
   * source cannot tell; then both trees are compared whole.
   */
  delta?(a: string, b: string): StoredTreeDiff | null;
  /** A blob's verified bytes, or null when not available. */
  blob(id: string): Uint8Array | null;
}

/** One snapshot handed to the assembler. */
interface Input {
  envelope: Envelope | null;
  row: Pick<SnapshotRow, "id" | "session" | "branch" | "parent" | "created_at" | "key_id">;
  imported: boolean;
  lane: string;
  signer: ViewSigner;
  problems: string[];
}

const EMPTY_TREE: TreeManifest = { version: 1, entries: [], skipped: [] };

function slicesOf(body: SnapshotBody): Record<string, JsonValue> | null {
  const found: Record<string, JsonValue> = {};
  for (const field of SLICE_FIELDS) {
    const value = (body as unknown as Record<string, JsonValue | undefined>)[field];
    if (value !== undefined) found[field] = value;
  }
  return Object.keys(found).length > 0 ? found : null;
}

function emptyContext(): SnapshotContext {
  return {
    task: "",
    progress_pct: 0,
    decisions: [],
    files_touched: [],
    findings: [],
    knowledge: [],
    extensions: {},
  };
}

function metaId(metadata: Record<string, JsonValue>, key: string): string | null {
  const value = metadata[key];
  return typeof value === "string" && isHex(value, 64) ? value : null;
}

function signerOf(
  envelope: Envelope,
  check: { idMatches: boolean; signatureValid: boolean },
  agrees: boolean,
  trust: TrustPolicy,
): ViewSigner {
  const { key_id, public_key } = envelope.signature;
  const valid = check.idMatches && check.signatureValid && agrees;
  const trusted = valid && trust.isTrusted(key_id, public_key);
  return {
    key_id,
    public_key,
    name: trust.nameOf(key_id),
    id_matches: check.idMatches,
    signature_valid: check.signatureValid,
    trusted,
    status: !valid ? "invalid" : trusted ? "trusted" : "untrusted",
  };
}

/**
 * Trees by id, kept across builds up to a total number of entries (oldest
 * dropped first). A tree id is the hash of its content, so a kept tree is
 * exactly what the store would return again.
 */
export class TreeCache {
  #trees = new Map<string, TreeManifest>();
  #entries = 0;

  /** Keeps at most `maxEntries` tree entries in all. */
  constructor(private readonly maxEntries: number = 1_000_000) {}

  /** A kept tree, or undefined. */
  get(id: string): TreeManifest | undefined {
    return this.#trees.get(id);
  }

  /** Keeps `tree` (unless it alone is over the limit). */
  set(id: string, tree: TreeManifest): void {
    const size = tree.entries.length + tree.skipped.length + 1;
    if (size > this.maxEntries || this.#trees.has(id)) return;
    this.#trees.set(id, tree);
    this.#entries += size;
    for (const [old, kept] of this.#trees) {
      if (this.#entries <= this.maxEntries) break;
      this.#trees.delete(old);
      this.#entries -= kept.entries.length + kept.skipped.length + 1;
    }
  }
}

/** Content of a store: trees and blobs are hash-checked as they are read. */
export function storeContent(store: Store, notes?: string[], cache?: TreeCache): ContentSource {
  return {
    tree(id) {
      const kept = cache?.get(id);
      if (kept !== undefined) return kept;
      try {
        const tree = store.getTree(id);
        cache?.set(id, tree);
        return tree;
      } catch (error) {
        if (!(error instanceof CtxsnapError)) throw error;
        if (!(error instanceof NotFoundError)) notes?.push(`tree ${id}: ${error.message}`);
        return null;
      }
    },
    delta(a, b) {
      try {
        return diffStoredTrees(store, a, b);
      } catch (error) {
        if (!(error instanceof CtxsnapError)) throw error;
        return null; // compared whole, where the damage is noted
      }
    },
    blob(id) {
      try {
        return store.readBlob(id);
      } catch (error) {
        if (!(error instanceof CtxsnapError)) throw error;
        // Missing content is normal (envelope-only imports); corrupt content is reported.
        if (!(error instanceof NotFoundError)) notes?.push(`file content ${id}: ${error.message}`);
        return null;
      }
    },
  };
}

/**
 * Builds the view of a store's snapshots in `scope`. Read-only, from one
 * committed state of the store (`Store.readAsync`, DESIGN.md §3.4).
 */
export function timelineFromStore(
  store: Store,
  scope: StoreScope,
  trust: TrustPolicy,
  options: BuildOptions = {},
): Promise<TimelineData> {
  return store.readAsync(() => buildFromStore(store, scope, trust, options));
}

async function buildFromStore(
  store: Store,
  scope: StoreScope,
  trust: TrustPolicy,
  options: BuildOptions,
): Promise<TimelineData> {
  const allBranches = listBranches(store, scope.kind === "all" ? undefined : scope.session);
  const scopedBranches = scope.kind === "branch"
    ? allBranches.filter((b) => b.name === scope.branch)
    : allBranches;
  let rows: SnapshotRow[];
  if (scope.kind === "branch") {
    rows = branchChain(store, scope.session, scope.branch).map((id) => getSnapshotRow(store, id)!)
      .filter((row) => row !== null);
  } else {
    rows = listSnapshotRows(store, scope.kind === "session" ? { session: scope.session } : {});
  }
  rows.sort((a, b) => a.seq - b.seq);

  // Imported snapshots are drawn on the quarantine branch that holds them.
  const importedLane = new Map<string, string>();
  for (const branch of allBranches) {
    if (!branch.name.startsWith("imported/")) continue;
    for (const id of branchChain(store, branch.session, branch.name)) {
      if (!importedLane.has(id)) importedLane.set(id, `${branch.session}/${branch.name}`);
    }
  }
  const inputs: Input[] = [];
  for (const row of rows) {
    const imported = row.imported === 1;
    const lane = imported
      ? importedLane.get(row.id) ?? `${row.session}/imported/${row.key_id}`
      : `${row.session}/${row.branch}`;
    let envelope: Envelope | null = null;
    const problems: string[] = [];
    try {
      // Read as stored: this view shows a tampered envelope as NOT VERIFIED
      // (checked just below) instead of refusing the whole timeline.
      envelope = readEnvelopeUnverified(store, row.id);
    } catch (error) {
      if (!(error instanceof CtxsnapError)) throw error;
      problems.push(`envelope unreadable: ${error.message}`);
    }
    let signer: ViewSigner;
    if (envelope === null) {
      signer = {
        key_id: row.key_id,
        public_key: "",
        name: trust.nameOf(row.key_id),
        id_matches: false,
        signature_valid: false,
        trusted: false,
        status: "invalid",
      };
    } else {
      const check = await checkEnvelope(envelope);
      const b = envelope.body;
      const agrees = row.session === b.session && row.branch === b.branch &&
        row.parent === b.parent && row.tree === (b.workspace?.tree ?? null) &&
        row.key_id === envelope.signature.key_id && row.created_at === b.created_at;
      if (!check.idMatches) problems.push("id does not match the body");
      if (!check.signatureValid) problems.push("signature does not verify");
      if (!agrees) problems.push("index row disagrees with the signed body");
      signer = signerOf(envelope, check, agrees, trust);
    }
    inputs.push({ envelope, row, imported, lane, signer, problems });
  }
  const current = new Map<string, string>();
  for (const session of new Set(allBranches.map((b) => b.session))) {
    current.set(session, selection(store, session).branch);
  }
  const branches: ViewBranch[] = scopedBranches.map((b) => ({
    session: b.session,
    name: b.name,
    lane: `${b.session}/${b.name}`,
    head: b.head,
    base: b.base,
    kind: b.name.startsWith("imported/") ? "imported" : b.base !== null ? "fork" : "branch",
    current: current.get(b.session) === b.name,
  }));
  const notes: string[] = [];
  const source: ViewSource = {
    kind: "store",
    scope: scope.kind,
    session: scope.kind === "all" ? null : scope.session,
    branch: scope.kind === "branch" ? scope.branch : null,
    file: null,
    primary: null,
    with_workspace: true,
  };
  const content = storeContent(store, notes, options.treeCache);
  // A parent outside the scope still gives the first step its changes, read
  // verified (id and signature); one that does not verify gives none.
  const inScope = new Set(rows.map((row) => row.id));
  const outsideTrees = new Map<string, string | null>();
  for (const row of rows) {
    if (row.parent === null || inScope.has(row.parent) || outsideTrees.has(row.parent)) continue;
    try {
      const parent = await readEnvelope(store, row.parent);
      outsideTrees.set(row.parent, parent.body.workspace?.tree ?? "");
    } catch (error) {
      if (!(error instanceof CtxsnapError)) throw error;
      outsideTrees.set(row.parent, null);
    }
  }
  const data = await assemble(
    inputs,
    branches,
    content,
    source,
    notes,
    options,
    (id) => outsideTrees.get(id) ?? null,
  );
  await addKept(store, scope, trust, data);
  data.agent_sessions = agentSessionsFromStore(store, data.snapshots, options.conversation);
  return data;
}

/**
 * Adds the stored snapshots of the formats kept as themselves (lean-ctx) in
 * `scope` after the ctxsnap ones, oldest import first, each on the lane of
 * its quarantine branch: their content re-checked by their format (a
 * tampered one is drawn `invalid`, with why), their session slice as the
 * context, no workspace.
 */
async function addKept(
  store: Store,
  scope: StoreScope,
  trust: TrustPolicy,
  data: TimelineData,
): Promise<void> {
  const { keptFormats } = await import("../share/formats/registry.ts");
  const filter = scope.kind === "all"
    ? {}
    : scope.kind === "session"
    ? { session: scope.session }
    : { session: scope.session, branch: scope.branch };
  for (const format of await keptFormats()) {
    const stored = (await format.list(store, filter)).reverse();
    if (stored.length === 0) continue;
    const verdicts = new Map((await format.verifyAll(store, trust)).map((v) => [v.id, v]));
    const added = new Set<string>();
    for (const s of stored) {
      const v = verdicts.get(s.id);
      const verdict = v?.verdict ?? "tampered";
      const status = verdict === "trusted"
        ? "trusted"
        : verdict === "tampered"
        ? "invalid"
        : "untrusted";
      const lane = `${s.session}/${s.branch}`;
      data.snapshots.push({
        id: s.id,
        format: format.name,
        parent: s.parent,
        session: s.session,
        branch: s.branch,
        lane,
        created_at: s.createdAt,
        reason: s.reason ?? "",
        source: null,
        reverted_to: null,
        pre_restore_for: null,
        imported: true,
        readable: s.readable,
        context: s.context,
        cursors: null,
        facets: {},
        slices: s.slices,
        git: s.git,
        workspace: null,
        tree: null,
        tool: s.tool,
        signer: {
          key_id: v?.keyId ?? s.keyId ?? "",
          public_key: v?.publicKey ?? "",
          name: v?.signer ?? null,
          id_matches: v !== undefined && !v.problems.includes("id check failed") &&
            v.problems.every((p) => p.endsWith(" check failed")),
          signature_valid: verdict === "trusted" || verdict === "untrusted",
          trusted: verdict === "trusted",
          status,
        },
        problems: v?.problems ?? ["not re-checked"],
        changes: null,
        parent_tree: null,
        agent: null,
      });
      data.verification[status]++;
      const lanes = data.branches.filter((b) => b.lane === lane);
      if (lanes.length === 0) {
        data.branches.push({
          session: s.session,
          name: s.branch,
          lane,
          head: s.id,
          base: null,
          kind: "imported",
          current: false,
        });
      } else if (added.has(lane)) lanes[0]!.head = s.id; // oldest first: the newest import heads it
      added.add(lane);
    }
  }
}

/** A verified file's content held in memory: trees, and blobs up to the limits. */
class HeldContent implements ContentSource {
  /** Tree objects of either version, verified by the bundle reader. */
  readonly trees = new Map<string, TreeManifest | DirTree>();
  readonly blobs = new Map<string, Uint8Array>();
  readonly #expanded = new Map<string, TreeManifest | null>();
  tree(id: string): TreeManifest | null {
    const object = this.trees.get(id);
    if (object === undefined) return null;
    if (object.version === 1) return object;
    let flat = this.#expanded.get(id);
    if (flat === undefined) {
      flat = expandDirTree(id, object, (sub) => {
        const child = this.trees.get(sub);
        if (child === undefined) throw new NotFoundError(`The file has no tree ${quote(sub)}`);
        return child;
      });
      this.#expanded.set(id, flat);
    }
    return flat;
  }
  blob(id: string): Uint8Array | null {
    return this.blobs.get(id) ?? null;
  }
}

/** Most bytes of blob content held in memory while reading a bundle for the page. */
export const MAX_HELD_BLOB_BYTES: number = 256 * 1024 * 1024;

/**
 * Builds the view of a published snapshot or bundle (a path, or `-`). The
 * whole file is verified first; tampering throws (exit 1) and so does a
 * signature that does not verify: nothing of an unverified file is shown.
 * Untrusted signers are allowed and marked `untrusted`.
 */
export async function timelineFromFile(
  file: string,
  trust: TrustPolicy,
  options: BuildOptions = {},
): Promise<TimelineData> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const held = new HeldContent();
  let heldBytes = 0;
  const notes: string[] = [];
  let skippedBlobs = 0;
  let pending: Uint8Array[] | null = null;
  const fd = openSource(file);
  let report;
  try {
    report = await verifyStream(fdReader(fd), trust, {
      tree(id, tree) {
        held.trees.set(id, tree);
      },
      blobStart(_id, size) {
        if (size > limits.max_diff_input_bytes || heldBytes + size > MAX_HELD_BLOB_BYTES) {
          skippedBlobs++;
          return null;
        }
        heldBytes += size;
        const chunks: Uint8Array[] = [];
        pending = chunks;
        return (chunk) => chunks.push(chunk.slice());
      },
      blobEnd(id, size) {
        // Called only after the blob's hash and size were verified.
        if (pending === null) return;
        const bytes = new Uint8Array(size);
        let at = 0;
        for (const chunk of pending) {
          bytes.set(chunk, at);
          at += chunk.length;
        }
        held.blobs.set(id, bytes);
        pending = null;
      },
    });
  } finally {
    if (fd !== 0) fs.closeSync(fd);
  }
  if (!report.valid) {
    const bad = report.snapshots.filter((s) => !s.valid).map((s) => s.id.slice(0, 12));
    throw new IntegrityError(
      `Signature of snapshot ${bad.join(", ")} does not verify; no page was written`,
      {
        hint: "the file was altered or signed with another key; do not use it",
        check: "signature",
        at: `snapshot ${report.snapshots.find((s) => !s.valid)!.id}`,
      },
    );
  }
  if (skippedBlobs > 0) {
    notes.push(`${skippedBlobs} file contents over the size limits were not loaded for diffs`);
  }
  const verdicts = new Map(report.snapshots.map((s) => [s.id, s]));
  const inputs: Input[] = report.envelopes.map((envelope) => {
    const verdict = verdicts.get(envelope.id)!;
    const b = envelope.body;
    return {
      envelope,
      row: {
        id: envelope.id,
        session: b.session,
        branch: b.branch,
        parent: b.parent,
        created_at: b.created_at,
        key_id: envelope.signature.key_id,
      },
      imported: false,
      lane: `${b.session}/${b.branch}`,
      signer: signerOf(envelope, { idMatches: true, signatureValid: verdict.valid }, true, trust),
      problems: [],
    };
  });
  // Lanes of the file: the last snapshot of each is its head.
  const heads = new Map<string, Input>();
  for (const input of inputs) heads.set(input.lane, input);
  const branches: ViewBranch[] = [...heads.values()].map((input) => ({
    session: input.row.session,
    name: input.row.branch,
    lane: input.lane,
    head: input.row.id,
    base: null,
    kind: "branch",
    current: false,
  }));
  const source: ViewSource = {
    kind: report.kind,
    scope: "file",
    session: null,
    branch: null,
    file: file === "-" ? "-" : path.basename(file),
    primary: report.primary.id,
    with_workspace: report.withWorkspace,
  };
  if (!report.withWorkspace) notes.push("the file carries no workspace content: no file changes");
  const data = await assemble(inputs, branches, held, source, notes, options, () => null);
  data.agent_sessions = agentSessionsFromSnapshots(data.snapshots);
  return data;
}

function emptyDiff(
  status: FileDiff["status"],
  oldBlob: { size: number } | null,
  newBlob: { size: number } | null,
): FileDiff {
  return {
    status,
    old_size: oldBlob?.size ?? null,
    new_size: newBlob?.size ?? null,
    added: 0,
    removed: 0,
    hunks: [],
    exact: true,
    truncated_lines: 0,
  };
}

/** The diff of two blobs (null for a missing side) within the limits. */
export function fileDiff(
  content: ContentSource,
  oldBlob: { id: string; size: number } | null,
  newBlob: { id: string; size: number } | null,
  limits: ViewLimits = DEFAULT_LIMITS,
): FileDiff {
  if (
    (oldBlob?.size ?? 0) > limits.max_diff_input_bytes ||
    (newBlob?.size ?? 0) > limits.max_diff_input_bytes
  ) {
    return emptyDiff("too_large", oldBlob, newBlob);
  }
  const read = (blob: { id: string } | null): Uint8Array | null | undefined =>
    blob === null ? null : content.blob(blob.id) ?? undefined;
  const before = read(oldBlob);
  const after = read(newBlob);
  if (before === undefined || after === undefined) {
    return emptyDiff("unavailable", oldBlob, newBlob);
  }
  const text = diffText(before, after);
  if (text.binary) return emptyDiff("binary", oldBlob, newBlob);
  const diff = emptyDiff("text", oldBlob, newBlob);
  diff.added = text.added;
  diff.removed = text.removed;
  diff.exact = text.exact;
  let kept = 0;
  for (const hunk of text.hunks) {
    if (kept >= limits.max_diff_lines) {
      diff.truncated_lines += hunk.lines.length;
      continue;
    }
    const room = limits.max_diff_lines - kept;
    if (hunk.lines.length <= room) {
      diff.hunks.push(hunk);
      kept += hunk.lines.length;
    } else {
      // Cut inside the hunk; its header keeps the full ranges.
      diff.hunks.push({ ...hunk, lines: hunk.lines.slice(0, room) });
      diff.truncated_lines += hunk.lines.length - room;
      kept = limits.max_diff_lines;
    }
  }
  return diff;
}

/** The key of a file diff: `<old blob>..<new blob>`, a missing side empty. */
export function diffKey(oldBlob: string | null, newBlob: string | null): string {
  return `${oldBlob ?? ""}..${newBlob ?? ""}`;
}

function diffBytes(diff: FileDiff): number {
  let bytes = 0;
  for (const hunk of diff.hunks) for (const line of hunk.lines) bytes += line.length + 8;
  return bytes + 64;
}

function viewEntry(entry: TreeEntry): ViewEntry {
  return entry.type === "file"
    ? [entry.path, "file", entry.blob, entry.size, entry.mode]
    : [entry.path, "symlink", entry.target];
}

async function assemble(
  inputs: Input[],
  branches: ViewBranch[],
  content: ContentSource,
  source: ViewSource,
  notes: string[],
  options: BuildOptions,
  outsideTree: (id: string) => string | null,
): Promise<TimelineData> {
  const limits: ViewLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const live = options.live === true;
  const treeOfId = new Map<string, string | null>(); // snapshot id → tree id ("" none, null unknown)
  const loaded = new Map<string, TreeManifest | null>();
  const loadTree = (id: string): TreeManifest | null => {
    if (!loaded.has(id)) loaded.set(id, content.tree(id));
    return loaded.get(id)!;
  };
  for (const input of inputs) {
    treeOfId.set(input.row.id, input.envelope?.body.workspace?.tree ?? "");
  }
  /** The parent's tree: id ("" when it captured no workspace) and content, or null when unknown. */
  const parentTree = (parent: string | null): { id: string; tree: TreeManifest } | null => {
    if (parent === null) return { id: "", tree: EMPTY_TREE };
    let id = treeOfId.get(parent);
    if (id === undefined) id = outsideTree(parent);
    if (id === null || id === undefined) return null;
    const tree = id === "" ? EMPTY_TREE : loadTree(id);
    return tree === null ? null : { id, tree };
  };

  const trees: Record<string, ViewTree> = {};
  const diffs: Record<string, FileDiff> = {};
  let budget = limits.diff_budget_bytes;
  let omitted = 0;
  let diffInputs = 0;
  let wholeSteps = 0;
  /**
   * Computes the file diffs of one step (within the budget), each diff key
   * once; a step changing more than `max_diffs_per_step` files gets none.
   */
  const stepDiffs = async (
    before: TreeManifest,
    after: TreeManifest,
    changes: NonNullable<ViewSnapshot["changes"]>,
  ): Promise<void> => {
    const stepSize = changes.added.length + changes.changed.length + changes.removed.length;
    if (live) return;
    if (stepSize > limits.max_diffs_per_step) wholeSteps++;
    if (!(stepSize <= limits.max_diffs_per_step)) return;
    const left = entryMap(before);
    const right = entryMap(after);
    for (const p of [...changes.added, ...changes.changed, ...changes.removed]) {
      const a = left.get(p);
      const b = right.get(p);
      const oldBlob = a?.type === "file" ? { id: a.blob, size: a.size } : null;
      const newBlob = b?.type === "file" ? { id: b.blob, size: b.size } : null;
      if (oldBlob === null && newBlob === null) continue;
      if (oldBlob?.id === newBlob?.id) continue; // mode change only
      const key = diffKey(oldBlob?.id ?? null, newBlob?.id ?? null);
      if (key in diffs) continue;
      if (budget <= 0) {
        diffs[key] = emptyDiff("omitted", oldBlob, newBlob);
        omitted++;
        continue;
      }
      const diff = fileDiff(content, oldBlob, newBlob, limits);
      budget -= diffBytes(diff);
      diffs[key] = diff;
      if (++diffInputs % 64 === 0) await Promise.resolve(); // let a server answer meanwhile
    }
  };
  /** The snapshot's entry in the view. */
  const viewSnapshot = (
    input: Input,
    body: SnapshotBody | null,
    tree: string | null,
    changes: ViewSnapshot["changes"],
    parentId: string | null,
  ): ViewSnapshot => {
    const metadata = body?.facets.metadata ?? {};
    return {
      id: input.row.id,
      format: "ctxsnap",
      parent: input.row.parent,
      session: input.row.session,
      branch: input.row.branch,
      lane: input.lane,
      created_at: input.row.created_at,
      reason: body?.reason ?? "",
      source: body?.source ?? null,
      reverted_to: metaId(metadata, "reverted_to"),
      pre_restore_for: metaId(metadata, "pre_restore_for"),
      imported: input.imported,
      readable: body !== null,
      context: body?.context ?? emptyContext(),
      cursors: body?.cursors ?? null,
      facets: (body?.facets ?? {}) as unknown as Record<string, JsonValue>,
      slices: body === null ? null : slicesOf(body),
      git: body?.git ?? null,
      workspace: body?.workspace ?? null,
      tree,
      tool: body?.tool ?? null,
      signer: input.signer,
      problems: input.problems,
      changes,
      parent_tree: changes !== null && parentId !== null && parentId !== "" ? parentId : null,
      agent: agentOfBody(metadata),
    };
  };
  // Entries and skipped records of each tree sent, so that a step can be
  // sent as a delta without loading its tree.
  const sizes = new Map<string, { entries: number; skipped: number }>();
  const sizeOf = (id: string, tree: TreeManifest) =>
    sizes.set(id, { entries: tree.entries.length, skipped: tree.skipped.length });
  /**
   * One step from an emitted parent tree to `treeId` read through the
   * source's delta (O(changed) trees, the unchanged subtrees never read), or
   * null when it must be compared whole: no delta, skipped records changed,
   * or a change large enough that the tree is sent whole.
   */
  const deltaStep = (parentId: string, treeId: string) => {
    const before = sizes.get(parentId);
    if (content.delta === undefined || before === undefined || !(parentId in trees)) return null;
    const step = content.delta(parentId, treeId);
    if (step === null || step.skippedChanged !== false) return null;
    const { added, changed, removed } = step.diff;
    const entries = before.entries + added.length - removed.length;
    if ((added.length + changed.length + removed.length) * 2 >= entries) return null;
    return { step, size: { entries, skipped: before.skipped } };
  };
  const snapshots: ViewSnapshot[] = [];
  for (const input of inputs) {
    const body = input.envelope?.body ?? null;
    const treeId = body?.workspace?.tree ?? null;
    let parentId = input.row.parent === null ? "" : treeOfId.get(input.row.parent);
    if (parentId === undefined) parentId = outsideTree(input.row.parent!);
    const quick = treeId !== null && parentId !== null && parentId !== ""
      ? deltaStep(parentId, treeId)
      : null;
    if (quick !== null && treeId !== null && parentId !== null) {
      const { step, size } = quick;
      if (!(treeId in trees)) {
        const now = entryMap(step.right);
        trees[treeId] = {
          base: parentId,
          set: [...step.diff.added, ...step.diff.changed].sort().map((p) => viewEntry(now.get(p)!)),
          unset: step.diff.removed,
          skipped: null,
          skipped_total: size.skipped,
        };
        sizes.set(treeId, size);
      }
      const changes = step.diff;
      await stepDiffs(step.left, step.right, changes);
      snapshots.push(viewSnapshot(input, body, treeId, changes, parentId));
      continue;
    }
    const tree = treeId === null ? EMPTY_TREE : loadTree(treeId);
    const parent = parentTree(input.row.parent);
    if (parent !== null && parent.id !== "" && !(parent.id in trees)) {
      // The parent is outside the view (another scope, or before an import): send its tree whole.
      trees[parent.id] = encodeTree(parent.tree, null, null, limits);
      sizeOf(parent.id, parent.tree);
    }
    if (treeId !== null && tree !== null && !(treeId in trees)) {
      trees[treeId] = encodeTree(
        tree,
        parent?.tree ?? null,
        parent !== null && parent.id !== "" ? parent.id : null,
        limits,
        parent !== null && parent.id !== "" ? trees[parent.id] ?? null : null,
      );
    }
    const before = parent?.tree ?? null;
    let changes: ViewSnapshot["changes"] = null;
    if (treeId !== null && tree !== null) sizeOf(treeId, tree);
    if (tree !== null && before !== null && body?.workspace) {
      changes = diffTrees(before, tree);
      await stepDiffs(before, tree, changes);
    }
    snapshots.push(
      viewSnapshot(
        input,
        body,
        treeId !== null && tree !== null ? treeId : null,
        changes,
        changes !== null && parent !== null ? parent.id : null,
      ),
    );
  }
  if (wholeSteps > 0) {
    notes.push(
      `${wholeSteps} ${
        wholeSteps === 1 ? "step changes" : "steps change"
      } more than ${limits.max_diffs_per_step} files (a first snapshot, a distant restore): their diffs are not in the page`,
    );
  }
  if (omitted > 0) {
    notes.push(
      `${omitted} file diffs were left out: the page's diff budget (${limits.diff_budget_bytes} bytes) was reached`,
    );
  }
  const verification = { trusted: 0, untrusted: 0, invalid: 0 };
  for (const s of snapshots) verification[s.signer.status]++;
  // Lanes in order of first appearance; branches without snapshots in view last.
  const laneOrder = new Map<string, number>();
  for (const s of snapshots) if (!laneOrder.has(s.lane)) laneOrder.set(s.lane, laneOrder.size);
  const sorted = [...branches].sort((a, b) =>
    (laneOrder.get(a.lane) ?? Infinity) - (laneOrder.get(b.lane) ?? Infinity) ||
    (a.lane < b.lane ? -1 : a.lane > b.lane ? 1 : 0)
  );
  return {
    schema: TIMELINE_SCHEMA,
    generated_at: (options.now ?? new Date()).toISOString(),
    tool: { name: "ctxsnap", version: VERSION },
    source,
    live,
    verification,
    branches: sorted,
    snapshots,
    trees,
    diffs,
    limits,
    notes,
    agent_sessions: [],
  };
}

function encodeTree(
  tree: TreeManifest,
  parent: TreeManifest | null,
  parentId: string | null,
  limits: ViewLimits,
  parentView: ViewTree | null = null,
): ViewTree {
  const skipped = tree.skipped.slice(0, limits.max_skipped_shown);
  const whole: ViewTree = {
    base: null,
    set: tree.entries.map(viewEntry),
    unset: [],
    skipped,
    skipped_total: tree.skipped.length,
  };
  if (parentId === null || parent === null || parentView === null) return whole;
  const change = diffTrees(parent, tree);
  const size = change.added.length + change.changed.length + change.removed.length;
  if (size * 2 >= tree.entries.length) return whole;
  const now = entryMap(tree);
  const sameSkipped = tree.skipped.length === parent.skipped.length &&
    tree.skipped.every((r, i) =>
      r.path === parent.skipped[i]!.path && r.reason === parent.skipped[i]!.reason
    );
  return {
    base: parentId,
    set: [...change.added, ...change.changed].sort().map((p) => viewEntry(now.get(p)!)),
    unset: change.removed,
    skipped: sameSkipped ? null : skipped,
    skipped_total: tree.skipped.length,
  };
}

/** Whether `id` is a snapshot id in `data` (for the server's checks). */
export function hasSnapshotId(data: TimelineData, id: string): boolean {
  return data.snapshots.some((s) => s.id === id);
}

/** Every blob id (with its size) the data's trees name. */
export function blobsOf(data: TimelineData): Map<string, number> {
  const blobs = new Map<string, number>();
  for (const tree of Object.values(data.trees)) {
    for (const entry of tree.set) if (entry[1] === "file") blobs.set(entry[2], entry[3]);
  }
  return blobs;
}

/** Refuses a key that is not `<64 hex or empty>..<64 hex or empty>`. */
export function parseDiffKey(key: string): { old: string | null; new: string | null } {
  const match = /^([0-9a-f]{64})?\.\.([0-9a-f]{64})?$/.exec(key);
  if (match === null || (match[1] === undefined && match[2] === undefined)) {
    throw new UsageError(`Invalid diff key ${quote(key)}`, {
      hint: "a key is <old blob>..<new blob>, each 64 lowercase hex or empty",
    });
  }
  return { old: match[1] ?? null, new: match[2] ?? null };
}
