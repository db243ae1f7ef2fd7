/**
 * The snapshot body (`ctxsnap.snapshot/v1`) and its strict validation.
 *
 * A body records the workspace tree, the git anchor, the session context,
 * cursors, facets and the parent snapshot. Bodies hold only strings,
 * booleans, null, arrays, objects and safe integers; unknown fields are
 * refused, sizes are capped (see `docs/FORMAT.md`).
 *
 * @example
 * ```ts
 * import { emptyContext, emptyCursors, emptyFacets, validateBody, SNAPSHOT_SCHEMA } from "./body.ts";
 * const body = validateBody({
 *   schema: SNAPSHOT_SCHEMA, created_at: "2026-01-01T00:00:00.000Z", parent: null,
 *   session: "main", branch: "main", reason: "demo", source: null, git: null, workspace: null,
 *   context: emptyContext(), cursors: emptyCursors(), facets: emptyFacets(),
 *   tool: { name: "ctxsnap", version: "0.1.0" },
 * });
 * if (!(body.reason === "demo")) throw new Error("Example failed");
 * ```
 * @module
 */
import { canonicalBytes, type JsonValue } from "../encoding/canonical_json.ts";
import { IntegrityError, quote } from "../errors.ts";
import { isHex } from "../encoding/hex.ts";
import { SLICE_FIELDS, type Slices, validateSlices } from "./slices.ts";

/** The body schema tag of a body without slices (every body ctxsnap 0.1.0 wrote). */
export const SNAPSHOT_SCHEMA = "ctxsnap.snapshot/v1";
/**
 * The body schema tag of a body carrying at least one of the optional
 * `roi`, `lineage` and `ledger` slices (and only such a body).
 */
export const SNAPSHOT_SCHEMA_V2 = "ctxsnap.snapshot/v2";
/** The body schema tags this code reads and writes. */
export type SnapshotSchema = typeof SNAPSHOT_SCHEMA | typeof SNAPSHOT_SCHEMA_V2;
/** Largest canonical body accepted, in bytes. */
export const MAX_BODY_BYTES: number = 1024 * 1024;
/** Longest free-text field (task, reason, a decision, a finding…), in UTF-16 code units. */
export const MAX_TEXT = 16 * 1024;
/** Most items in one context list. */
export const MAX_LIST_ITEMS = 10_000;
/** Longest `reason`, in UTF-16 code units. */
export const MAX_REASON: number = 1024;
/** Longest `source.id`, in UTF-16 code units. */
export const MAX_SOURCE_ID: number = 256;

/** The session's context at capture time. */
export interface SnapshotContext {
  /** What the session is doing. */
  task: string;
  /** Progress, whole percent 0–100. */
  progress_pct: number;
  /** Decisions made, oldest first, unique. */
  decisions: string[];
  /** Files the session touched, unique. */
  files_touched: string[];
  /** Findings, unique. */
  findings: string[];
  /** Project knowledge in play, unique. */
  knowledge: string[];
  /** Harness-specific data keyed by namespace. */
  extensions: Record<string, JsonValue>;
}

/** Replay cursors of an agent run. */
export interface SnapshotCursors {
  /** Last action index, or null. */
  action: number | null;
  /** Last message index, or null. */
  message: number | null;
  /** Last notebook cell index, or null. */
  cell: number | null;
  /** Auto-event counter. */
  auto_event: number;
}

/** Recovery facets (seed 002's checkpoint facts). */
export interface SnapshotFacets {
  /** Versions of artifacts produced so far. */
  artifact_versions: JsonValue[];
  /** Environment pins (package versions, images…). */
  environment_pins: Record<string, JsonValue>;
  /** References to model generations. */
  generation_refs: Record<string, JsonValue>;
  /** Capability state. */
  capabilities: Record<string, JsonValue>;
  /** Permission state. */
  permissions: Record<string, JsonValue>;
  /** A safe recipe to recover the run. */
  recovery_recipe: Record<string, JsonValue>;
  /** Free metadata; ctxsnap itself writes `reverted_to`, `imported`. */
  metadata: Record<string, JsonValue>;
}

/** The git state at capture time. */
export interface GitAnchor {
  /** HEAD commit (40 or 64 hex), or null in a repository with no commit yet. */
  commit: string | null;
  /** Checked-out branch, or null when detached. */
  branch: string | null;
  /** Whether `git status --porcelain` listed anything. */
  dirty: boolean;
}

/** Summary of the captured workspace. */
export interface WorkspaceRef {
  /** Tree manifest id (SHA-256 hex). */
  tree: string;
  /** Number of files. */
  files: number;
  /** Total bytes of files. */
  bytes: number;
  /** Number of paths left out. */
  skipped: number;
}

/**
 * A snapshot body. Its id is BLAKE3 of its canonical JSON. The slices
 * (`roi`, `lineage`, `ledger`) are absent unless recorded; a body holding
 * any of them has schema {@linkcode SNAPSHOT_SCHEMA_V2}.
 */
export interface SnapshotBody extends Slices {
  /** {@linkcode SNAPSHOT_SCHEMA}, or {@linkcode SNAPSHOT_SCHEMA_V2} exactly when a slice is present. */
  schema: SnapshotSchema;
  /** RFC 3339 UTC timestamp with milliseconds. */
  created_at: string;
  /** The previous snapshot on the branch, or null. */
  parent: string | null;
  /** Session name. */
  session: string;
  /** Branch name. */
  branch: string;
  /** Why the snapshot was taken. */
  reason: string;
  /** Idempotency source (`{kind,id}`), or null. */
  source: { kind: string; id: string } | null;
  /** Git anchor, or null outside a git work tree. */
  git: GitAnchor | null;
  /** Workspace summary, or null when no workspace was captured. */
  workspace: WorkspaceRef | null;
  /** Session context. */
  context: SnapshotContext;
  /** Replay cursors. */
  cursors: SnapshotCursors;
  /** Recovery facets. */
  facets: SnapshotFacets;
  /** The tool that wrote it. */
  tool: { name: string; version: string };
}

/** An empty context. */
export function emptyContext(): SnapshotContext {
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

/** Cursors with nothing recorded. */
export function emptyCursors(): SnapshotCursors {
  return { action: null, message: null, cell: null, auto_event: 0 };
}

/** Facets with nothing recorded. */
export function emptyFacets(): SnapshotFacets {
  return {
    artifact_versions: [],
    environment_pins: {},
    generation_refs: {},
    capabilities: {},
    permissions: {},
    recovery_recipe: {},
    metadata: {},
  };
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(\/[A-Za-z0-9][A-Za-z0-9._-]{0,63}){0,3}$/;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SOURCE_KIND_RE = /^[a-z][a-z0-9_-]{0,31}$/;

/**
 * The problem with a `reason` or `source` given for a new snapshot, or null
 * when both are what {@linkcode validateBody} accepts. Callers check it before
 * any shortcut (an unchanged workspace, a source already recorded), so
 * invalid input is refused whatever else happens.
 */
export function checkNewSnapshotArguments(
  reason: string | undefined,
  source: { kind: string; id: string } | null | undefined,
): string | null {
  if (reason !== undefined && reason.length > MAX_REASON) {
    return `The reason is ${reason.length} characters long, over the limit of ${MAX_REASON}`;
  }
  if (source !== undefined && source !== null) {
    if (!SOURCE_KIND_RE.test(source.kind)) {
      return `The source kind ${quote(source.kind)} is not valid`;
    }
    if (source.id.length === 0 || source.id.length > MAX_SOURCE_ID) {
      return `The source id ${
        quote(source.id.slice(0, 64))
      } is not 1 to ${MAX_SOURCE_ID} characters`;
    }
  }
  return null;
}
const NAMESPACE_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** Whether `name` is a valid session or branch name (e.g. `main`, `imported/ab12…`). */
export function isValidName(name: string): boolean {
  return NAME_RE.test(name) && !name.split("/").some((part) => part === ".." || part.endsWith("."));
}

class Checker {
  constructor(private readonly where: string) {}

  fail(message: string): never {
    throw new IntegrityError(`Invalid ${this.where}: ${message}`);
  }

  object(value: unknown, what: string): Record<string, unknown> {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      this.fail(`${what} is not an object`);
    }
    return value as Record<string, unknown>;
  }

  exactKeys(object: Record<string, unknown>, keys: readonly string[], what: string): void {
    for (const key of Object.keys(object)) {
      if (!keys.includes(key)) this.fail(`${what} has unknown field ${quote(key)}`);
    }
    for (const key of keys) if (!(key in object)) this.fail(`${what} lacks field ${quote(key)}`);
  }

  text(value: unknown, what: string, max = MAX_TEXT): string {
    if (typeof value !== "string") this.fail(`${what} is not a string`);
    if (value.length > max) this.fail(`${what} is longer than ${max} characters`);
    return value;
  }

  name(value: unknown, what: string): string {
    if (typeof value !== "string" || !isValidName(value)) {
      this.fail(`${what} ${quote(value)} is not a valid name`);
    }
    return value;
  }

  id(value: unknown, what: string): string {
    if (typeof value !== "string" || !isHex(value, 64)) this.fail(`${what} is not a 64-hex id`);
    return value;
  }

  count(value: unknown, what: string, max = Number.MAX_SAFE_INTEGER): number {
    if (!Number.isSafeInteger(value) || (value as number) < 0 || (value as number) > max) {
      this.fail(`${what} ${quote(value)} is not an integer from 0 to ${max}`);
    }
    return value as number;
  }

  nullableCount(value: unknown, what: string): number | null {
    return value === null ? null : this.count(value, what);
  }

  textList(value: unknown, what: string): string[] {
    if (!Array.isArray(value)) this.fail(`${what} is not an array`);
    if (value.length > MAX_LIST_ITEMS) this.fail(`${what} has more than ${MAX_LIST_ITEMS} items`);
    const seen = new Set<string>();
    for (const item of value) {
      const text = this.text(item, `an item of ${what}`);
      if (seen.has(text)) this.fail(`${what} repeats ${quote(text)}`);
      seen.add(text);
    }
    return value as string[];
  }

  jsonObject(value: unknown, what: string): Record<string, JsonValue> {
    return this.object(value, what) as Record<string, JsonValue>;
  }
}

/** Validates an untrusted context value (a body's `context`). */
export function validateContext(value: unknown, where = "snapshot body"): SnapshotContext {
  const c = new Checker(where);
  const o = c.object(value, "context");
  c.exactKeys(o, [
    "task",
    "progress_pct",
    "decisions",
    "files_touched",
    "findings",
    "knowledge",
    "extensions",
  ], "context");
  const extensions = c.jsonObject(o.extensions, "context.extensions");
  for (const key of Object.keys(extensions)) {
    if (!NAMESPACE_RE.test(key)) c.fail(`extension namespace ${quote(key)} is not valid`);
  }
  return {
    task: c.text(o.task, "context.task"),
    progress_pct: c.count(o.progress_pct, "context.progress_pct", 100),
    decisions: c.textList(o.decisions, "context.decisions"),
    files_touched: c.textList(o.files_touched, "context.files_touched"),
    findings: c.textList(o.findings, "context.findings"),
    knowledge: c.textList(o.knowledge, "context.knowledge"),
    extensions,
  };
}

/** Validates untrusted cursors. */
export function validateCursors(value: unknown, where = "snapshot body"): SnapshotCursors {
  const c = new Checker(where);
  const o = c.object(value, "cursors");
  c.exactKeys(o, ["action", "message", "cell", "auto_event"], "cursors");
  return {
    action: c.nullableCount(o.action, "cursors.action"),
    message: c.nullableCount(o.message, "cursors.message"),
    cell: c.nullableCount(o.cell, "cursors.cell"),
    auto_event: c.count(o.auto_event, "cursors.auto_event"),
  };
}

/** Validates untrusted facets. */
export function validateFacets(value: unknown, where = "snapshot body"): SnapshotFacets {
  const c = new Checker(where);
  const o = c.object(value, "facets");
  c.exactKeys(o, [
    "artifact_versions",
    "environment_pins",
    "generation_refs",
    "capabilities",
    "permissions",
    "recovery_recipe",
    "metadata",
  ], "facets");
  if (!Array.isArray(o.artifact_versions)) c.fail("facets.artifact_versions is not an array");
  return {
    artifact_versions: o.artifact_versions as JsonValue[],
    environment_pins: c.jsonObject(o.environment_pins, "facets.environment_pins"),
    generation_refs: c.jsonObject(o.generation_refs, "facets.generation_refs"),
    capabilities: c.jsonObject(o.capabilities, "facets.capabilities"),
    permissions: c.jsonObject(o.permissions, "facets.permissions"),
    recovery_recipe: c.jsonObject(o.recovery_recipe, "facets.recovery_recipe"),
    metadata: c.jsonObject(o.metadata, "facets.metadata"),
  };
}

/**
 * Validates an untrusted body and returns it typed. Refuses unknown fields,
 * an unknown schema, invalid names, ids and counts, and bodies whose
 * canonical form is larger than {@linkcode MAX_BODY_BYTES}.
 */
export function validateBody(value: unknown): SnapshotBody {
  const c = new Checker("snapshot body");
  const o = c.object(value, "body");
  if (o.schema !== SNAPSHOT_SCHEMA && o.schema !== SNAPSHOT_SCHEMA_V2) {
    throw new IntegrityError(`Unsupported snapshot schema ${quote(o.schema)}`, {
      hint: `this ctxsnap reads ${SNAPSHOT_SCHEMA} and ${SNAPSHOT_SCHEMA_V2}; upgrade ctxsnap`,
    });
  }
  const sliced = SLICE_FIELDS.filter((key) => key in o);
  if (o.schema === SNAPSHOT_SCHEMA_V2 && sliced.length === 0) {
    c.fail(`schema ${SNAPSHOT_SCHEMA_V2} needs at least one of ${SLICE_FIELDS.join(", ")}`);
  }
  c.exactKeys(o, [
    ...(o.schema === SNAPSHOT_SCHEMA_V2 ? sliced : []),
    "schema",
    "created_at",
    "parent",
    "session",
    "branch",
    "reason",
    "source",
    "git",
    "workspace",
    "context",
    "cursors",
    "facets",
    "tool",
  ], "body");
  const createdAt = c.text(o.created_at, "created_at", 32);
  if (
    !TIMESTAMP_RE.test(createdAt) || Number.isNaN(Date.parse(createdAt)) ||
    new Date(createdAt).toISOString() !== createdAt // no Feb 30, no hour 24
  ) {
    c.fail(`created_at ${quote(createdAt)} is not an RFC 3339 UTC timestamp with milliseconds`);
  }
  let source: SnapshotBody["source"] = null;
  if (o.source !== null) {
    const s = c.object(o.source, "source");
    c.exactKeys(s, ["kind", "id"], "source");
    if (typeof s.kind !== "string" || !SOURCE_KIND_RE.test(s.kind)) {
      c.fail(`source.kind ${quote(s.kind)} is not valid`);
    }
    const id = c.text(s.id, "source.id", MAX_SOURCE_ID);
    if (id.length === 0) c.fail("source.id is empty");
    source = { kind: s.kind as string, id };
  }
  let git: GitAnchor | null = null;
  if (o.git !== null) {
    const g = c.object(o.git, "git");
    c.exactKeys(g, ["commit", "branch", "dirty"], "git");
    if (
      g.commit !== null &&
      (typeof g.commit !== "string" || !/^([0-9a-f]{40}|[0-9a-f]{64})$/.test(g.commit))
    ) {
      c.fail(`git.commit ${quote(g.commit)} is not a commit id`);
    }
    if (typeof g.dirty !== "boolean") c.fail("git.dirty is not a boolean");
    git = {
      commit: g.commit as string | null,
      branch: g.branch === null ? null : c.text(g.branch, "git.branch", 1024),
      dirty: g.dirty as boolean,
    };
  }
  let workspace: WorkspaceRef | null = null;
  if (o.workspace !== null) {
    const w = c.object(o.workspace, "workspace");
    c.exactKeys(w, ["tree", "files", "bytes", "skipped"], "workspace");
    workspace = {
      tree: c.id(w.tree, "workspace.tree"),
      files: c.count(w.files, "workspace.files"),
      bytes: c.count(w.bytes, "workspace.bytes"),
      skipped: c.count(w.skipped, "workspace.skipped"),
    };
  }
  const tool = c.object(o.tool, "tool");
  c.exactKeys(tool, ["name", "version"], "tool");
  const body: SnapshotBody = {
    schema: o.schema,
    created_at: createdAt,
    parent: o.parent === null ? null : c.id(o.parent, "parent"),
    session: c.name(o.session, "session"),
    branch: c.name(o.branch, "branch"),
    reason: c.text(o.reason, "reason", MAX_REASON),
    source,
    git,
    workspace,
    context: validateContext(o.context),
    cursors: validateCursors(o.cursors),
    facets: validateFacets(o.facets),
    tool: {
      name: c.text(tool.name, "tool.name", 64),
      version: c.text(tool.version, "tool.version", 64),
    },
  };
  Object.assign(body, validateSlices(o));
  // canonicalBytes also refuses floats, NaN and lone surrogates anywhere inside.
  if (canonicalBytes(body).byteLength > MAX_BODY_BYTES) {
    c.fail(`body is larger than ${MAX_BODY_BYTES} bytes`);
  }
  return body;
}
