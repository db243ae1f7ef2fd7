/**
 * The tools and resources of `ctxsnap mcp` (layer: cli). A checkpoint goes
 * through the long-lived {@linkcode WatchService}; `read_file` and
 * `next_page` answer from the store and the session's pages; every other
 * tool runs the matching command in this process with `--json` and returns
 * its document, shaped for a model where it could be long (counts and pages
 * instead of whole path lists).
 *
 * Arguments are untrusted: they are checked against the tool's declared
 * input schema (unknown keys refused, ids and names by pattern) and passed
 * to the command after `--` or as `--option=value`, so none can be read as
 * an option. A model chooses data, never paths: a snapshot argument is
 * resolved to a full snapshot id first (never opened as a file), so one that
 * names nothing is answered "No snapshot …"; the only path a tool takes is
 * `publish`'s output, a new file created below the workspace without
 * following a symlink.
 *
 * Answers are for a model: each is at most `MAX_ANSWER_CHARS` characters
 * (`_bound.ts`): long lists come as counts plus the first items, paged with
 * `next_cursor` and the `next_page` tool; errors and hints speak in tool
 * arguments, never command-line flags (`_wording.ts`).
 *
 * @module
 */
import type { Store } from "../../repository/store.ts";
import type { WatchService } from "../../integrations/watch/service.ts";
import type { Schema } from "./schema.ts";
import { CtxsnapError, NotFoundError } from "../../errors.ts";
import { fit, MAX_ANSWER_CHARS, Pages, size } from "./_bound.ts";
import { speak, toolError, type Words } from "./_wording.ts";
import { readFileAt } from "./_read_file.ts";

/** What a tool call returns: a JSON document, or an error for the model to read. */
export type ToolOutcome =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; message: string };

/** What a tool runs with. */
export interface ToolContext {
  /** The store directory (absolute). */
  storeDir: string;
  /** The workspace root (absolute). */
  workspace: string;
  /** The checkpointing service. */
  service: WatchService;
  /** The store, open (the service's). */
  store: Store;
  /** Runs `ctxsnap ARGV --json` in this process; the exit status and stdout. */
  cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** One tool. */
export interface Tool {
  /** Name (`[a-z_]+`). */
  name: string;
  /** Display name. */
  title: string;
  /** What it does, for the model. */
  description: string;
  /** Its arguments. */
  inputSchema: Schema;
  /** Its structured result. */
  outputSchema: Schema;
  /** Behaviour hints. */
  annotations: {
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
  /** Runs it with checked arguments. */
  run(ctx: ToolContext, args: Record<string, unknown>): Promise<ToolOutcome>;
}

const ID: Schema = {
  type: "string",
  description:
    "a snapshot id or unique prefix (at least 4 hex characters), or a name the command line accepts",
  pattern: "^[A-Za-z0-9][A-Za-z0-9._~^@:/-]{0,127}$",
};
const NAME: Schema = {
  type: "string",
  pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(/[A-Za-z0-9][A-Za-z0-9._-]{0,63}){0,3}$",
};
const TEXT: Schema = { type: "string", minLength: 1, maxLength: 16384 };
const OBJECT: Schema = { type: "object" };

function object(
  properties: Record<string, Schema>,
  required: string[] = [],
): Schema {
  return { type: "object", properties, required, additionalProperties: false };
}

const readOnly = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};
const writes = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
};

const CURSOR_OUT: Schema = { anyOf: [{ type: "string" }, { type: "null" }] };
const FORCE: Schema = {
  type: "boolean",
  description: "also overwrite conflicts and local changes, after saving them in a snapshot",
};
const GIT: Schema = {
  type: "boolean",
  description: "also check out the snapshot's git commit (refused over uncommitted changes)",
};
/** What restore_preview, restore, undo and redo answer. */
const PLAN_OUT: Schema = {
  type: "object",
  properties: {
    counts: OBJECT,
    changes: { type: "array", items: OBJECT },
    next_cursor: CURSOR_OUT,
  },
  required: ["next_cursor"],
};

/** The restore flags of `force` and `git`. */
function moveFlags(args: Record<string, unknown>): string[] {
  return [...(args.force === true ? ["--force"] : []), ...(args.git === true ? ["--git"] : [])];
}

/** A session's state cut to the bound, keeping the newest items of its lists. */
function newest(outcome: ToolOutcome): ToolOutcome {
  return outcome.ok ? { ok: true, value: fit(outcome.value, MAX_ANSWER_CHARS, "last") } : outcome;
}

/** An outcome whose document is cut to the bound. */
function bounded(outcome: ToolOutcome): ToolOutcome {
  return outcome.ok ? { ok: true, value: fit(outcome.value) } : outcome;
}

/** Characters the first page of a list may take in an answer. */
const FIRST_PAGE_CHARS = 8_000;

/** The paged lists of each server session. */
const sessions = new WeakMap<ToolContext, Pages>();

/** The paged lists of `ctx`'s server session. */
function pagesOf(ctx: ToolContext): Pages {
  let pages = sessions.get(ctx);
  if (pages === undefined) sessions.set(ctx, pages = new Pages());
  return pages;
}

/** How the restore, undo and redo tools say their commands' flags. */
const MOVE_WORDS: Words = {
  "restore --git": "restore with git: true",
  "--dry-run": "restore_preview",
  "--force": "force: true",
  "--git": "git: true",
};
const UNDO_WORDS: Words = { "--dry-run": "dry_run: true", "--force": "force: true" };

/**
 * Runs a command with `--json` and turns its document or error into an
 * outcome; `accept` lists exit statuses other than 0 that still carry the
 * command's document (a dry run that would refuse exits 5).
 */
async function command(
  ctx: ToolContext,
  argv: string[],
  words: Words = {},
  accept: readonly number[] = [],
): Promise<ToolOutcome> {
  const { code, stdout, stderr } = await ctx.cli(["--store", ctx.storeDir, "--json", ...argv]);
  let doc: unknown = null;
  try {
    doc = JSON.parse(stdout);
  } catch {
    doc = null;
  }
  const isObject = doc !== null && typeof doc === "object" && !Array.isArray(doc);
  if ((code === 0 || accept.includes(code)) && isObject && !Object.hasOwn(doc as object, "error")) {
    return { ok: true, value: doc as Record<string, unknown> };
  }
  const error = isObject ? (doc as { error?: { message?: unknown; hint?: unknown } }).error : null;
  if (error !== null && error !== undefined && typeof error.message === "string") {
    return {
      ok: false,
      message: toolError({
        message: error.message,
        hint: typeof error.hint === "string" ? error.hint : null,
      }, words),
    };
  }
  const lines = stderr.split("\n").filter((l) => l.startsWith("ctxsnap: error: "));
  const message = lines.map((l) => l.slice("ctxsnap: error: ".length)).join("\n") ||
    `${argv[0]} failed (exit status ${code})`;
  return { ok: false, message: toolError({ message, hint: null }, words) };
}

/**
 * Resolves a snapshot argument (an id, a prefix, a name) to a full id, or
 * the error naming what is missing: "No snapshot zzzz".
 */
async function resolve(
  ctx: ToolContext,
  given: string,
): Promise<{ ok: true; id: string } | { ok: false; message: string }> {
  // Resolved in the store, never through a command that would also take a file: a model's id
  // (`a/../../x`, `-`, a name a repository committed as a file) names a snapshot or nothing.
  const { resolveRevision } = await import("../../history/names.ts");
  try {
    try {
      return { ok: true, id: resolveRevision(ctx.store, given) };
    } catch (error) {
      // No ctxsnap snapshot: a stored snapshot of a kept format (lean-ctx) may match.
      if (!(error instanceof NotFoundError)) throw error;
      const { findKept } = await import("../../share/formats/registry.ts");
      const found = await findKept(ctx.store, given);
      if (found === null) throw error;
      return { ok: true, id: found.id };
    }
  } catch (error) {
    if (error instanceof NotFoundError) {
      return {
        ok: false,
        message: `No snapshot ${JSON.stringify(given)}\n` +
          "hint: the list tool shows the snapshots (ids, or names such as HEAD~1 and branch names)",
      };
    }
    if (error instanceof CtxsnapError) {
      return {
        ok: false,
        message: toolError({ message: error.message, hint: error.hint ?? null }, {}),
      };
    }
    throw error;
  }
}

/** Runs `fn` with the snapshot arguments `names` of `args` resolved to full ids. */
async function withIds(
  ctx: ToolContext,
  args: Record<string, unknown>,
  names: string[],
  fn: (ids: Record<string, string>) => Promise<ToolOutcome>,
): Promise<ToolOutcome> {
  const ids: Record<string, string> = {};
  for (const name of names) {
    if (typeof args[name] !== "string") continue;
    const found = await resolve(ctx, args[name] as string);
    if (!found.ok) return found;
    ids[name] = found.id;
  }
  return fn(ids);
}

/** `value` with its list `key` replaced by the first page of `items` that fits. */
function paged(
  ctx: ToolContext,
  value: Record<string, unknown>,
  key: string,
  items: readonly unknown[],
): Record<string, unknown> {
  const rest = { ...value, [key]: [], next_cursor: "0000000000000000.000000000" };
  const page = pagesOf(ctx).first(
    items,
    Math.min(FIRST_PAGE_CHARS, MAX_ANSWER_CHARS - 500 - size(rest)),
  );
  return { ...value, [key]: page.items, next_cursor: page.next_cursor };
}

/** A move plan as `--json` prints it. */
interface PlanJson {
  writes: { path: string; action: string; type: string }[];
  deletes: string[];
  conflicts: { path: string; reason: string }[];
  unchanged: string[];
  preserved: string[];
  forced: string[];
}

/**
 * A move plan for a model: counts of every list, and the paths that change
 * (writes, deletes, conflicts), paged; unchanged and preserved paths are
 * only counted.
 */
function boundedPlan(
  ctx: ToolContext,
  document: Record<string, unknown>,
  words: Words,
): Record<string, unknown> {
  const value = { ...document };
  if (Array.isArray(value.would_refuse)) {
    value.would_refuse = (value.would_refuse as { message: string; hint: string | null }[])
      .map((r) => ({ ...r, ...speak(r, words) }));
  }
  const plan = value.plan as PlanJson | null | undefined;
  if (plan === null || plan === undefined) return fit({ ...value, next_cursor: null });
  const forced = new Set(plan.forced);
  const changes = [
    ...plan.conflicts.map((c) => ({ path: c.path, action: "conflict", reason: c.reason })),
    ...plan.writes.map((w) => ({
      path: w.path,
      action: w.action,
      ...(w.type !== "file" ? { type: w.type } : {}),
      ...(forced.has(w.path) ? { forced: true } : {}),
    })),
    ...plan.deletes.map((d) => ({
      path: d,
      action: "delete",
      ...(forced.has(d) ? { forced: true } : {}),
    })),
  ];
  const { plan: _plan, ...rest } = value;
  const shaped = fit({
    ...rest,
    counts: {
      writes: plan.writes.length,
      deletes: plan.deletes.length,
      conflicts: plan.conflicts.length,
      unchanged: plan.unchanged.length,
      preserved: plan.preserved.length,
      forced: plan.forced.length,
    },
  }, MAX_ANSWER_CHARS / 2);
  return paged(ctx, shaped, "changes", changes);
}

/** The tools of `ctxsnap mcp`, in the order `tools/list` gives them. */
export const TOOLS: readonly Tool[] = [
  {
    name: "checkpoint",
    title: "Checkpoint the workspace and session",
    description:
      "Record a signed checkpoint of the workspace files and the session state (task, progress, " +
      "decisions, findings, knowledge) on the current branch. Cheap: only what changed since the " +
      "last checkpoint is read. When nothing changed, the head is returned (created: false). " +
      "Call it before and after risky changes.",
    inputSchema: object({
      reason: { type: "string", maxLength: 1024, description: "why: shown in the timeline" },
      source: {
        type: "string",
        pattern: "^[a-z][a-z0-9_-]{0,31}:.{1,256}$",
        description: "idempotency key KIND:ID: the same source again returns the same checkpoint",
      },
      workspace: { type: "boolean", description: "capture the files (default true)" },
    }),
    outputSchema: {
      type: "object",
      properties: {
        id: { type: "string" },
        created: { type: "boolean" },
        parent: { anyOf: [{ type: "string" }, { type: "null" }] },
        capture: { anyOf: [{ type: "object" }, { type: "null" }] },
      },
      required: ["id", "created"],
    },
    annotations: { ...writes, idempotentHint: true },
    async run(ctx, args) {
      const source = typeof args.source === "string"
        ? {
          kind: args.source.slice(0, args.source.indexOf(":")),
          id: args.source.slice(args.source.indexOf(":") + 1),
        }
        : null;
      const { createJson } = await import("../json.ts");
      const result = await ctx.service.checkpoint({
        reason: typeof args.reason === "string" ? args.reason : "",
        workspace: args.workspace !== false,
        source,
      });
      return { ok: true, value: fit(createJson(result, "mcp")) };
    },
  },
  {
    name: "list",
    title: "List checkpoints",
    description:
      "The timeline, newest first: the current branch, every snapshot (all), or the checkpoints " +
      "an agent hook recorded for one agent session (agent_session, optionally the one made " +
      "when prompt N was submitted). Long answers are paged: pass next_cursor to next_page.",
    inputSchema: object({
      limit: {
        type: "integer",
        minimum: 1,
        maximum: 1000,
        description: "at most this many (default 50)",
      },
      all: { type: "boolean" },
      session: NAME,
      branch: NAME,
      agent_session: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$" },
      prompt: { type: "integer", minimum: 1, maximum: 1_000_000_000 },
    }),
    outputSchema: {
      type: "object",
      properties: {
        snapshots: { type: "array", items: OBJECT },
        next_cursor: CURSOR_OUT,
      },
      required: ["snapshots", "next_cursor"],
    },
    annotations: readOnly,
    async run(ctx, args) {
      const argv = ["list", `--limit=${args.limit ?? 50}`];
      if (args.all === true) argv.push("--all");
      if (typeof args.session === "string") argv.push(`--session=${args.session}`);
      if (typeof args.branch === "string") argv.push(`--branch=${args.branch}`);
      if (typeof args.agent_session === "string") {
        argv.push(`--agent-session=${args.agent_session}`);
      }
      if (typeof args.prompt === "number") argv.push(`--prompt=${args.prompt}`);
      const outcome = await command(ctx, argv);
      if (!outcome.ok) return outcome;
      const snapshots = outcome.value.snapshots as unknown[];
      return { ok: true, value: paged(ctx, { ...outcome.value }, "snapshots", snapshots) };
    },
  },
  {
    name: "agent_prompts",
    title: "List an agent session's prompts",
    description:
      "The prompts of one agent session (agent_session: its id or a unique prefix; default: the " +
      "session with the newest event), first first: each with the snapshot holding the state " +
      "before it and its revision name prompt:N:SESSION, which show, diff, restore_preview and " +
      "restore accept as id. The latest `limit` (default 10, at most 20: an answer stays under " +
      "10,000 characters); `omitted_earlier` counts the others.",
    inputSchema: object({
      agent_session: { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$" },
      limit: { type: "integer", minimum: 1, maximum: 20, description: "at most this many" },
    }),
    outputSchema: {
      type: "object",
      properties: { agent_session: OBJECT, prompts: { type: "array", items: OBJECT } },
      required: ["agent_session", "prompts"],
    },
    annotations: readOnly,
    run(ctx, args) {
      const argv = ["list", "--prompts", `--limit=${args.limit ?? 10}`];
      if (typeof args.agent_session === "string") {
        argv.push(`--agent-session=${args.agent_session}`);
      }
      return command(ctx, argv);
    },
  },
  {
    name: "show",
    title: "Show a checkpoint",
    description:
      "What a snapshot recorded: timeline, signer, git anchor, workspace counts, context.",
    inputSchema: object({ id: ID }, ["id"]),
    outputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    annotations: readOnly,
    run: (ctx, args) =>
      withIds(
        ctx,
        args,
        ["id"],
        async (ids) => bounded(await command(ctx, ["show", "--", ids.id!])),
      ),
  },
  {
    name: "diff",
    title: "Compare checkpoints",
    description:
      "Files added, changed and removed from snapshot `from` to snapshot `to`, or to the " +
      "workspace as it is now when `to` is omitted: counts, and the changed paths (paged: " +
      "pass next_cursor to next_page), and what changed in the session.",
    inputSchema: object({ from: ID, to: ID }, ["from"]),
    outputSchema: {
      type: "object",
      properties: {
        counts: OBJECT,
        changes: { type: "array", items: OBJECT },
        next_cursor: CURSOR_OUT,
      },
      required: ["counts", "changes", "next_cursor"],
    },
    annotations: readOnly,
    run: (ctx, args) =>
      withIds(ctx, args, ["from", "to"], async (ids) => {
        const outcome = await command(ctx, [
          "diff",
          "--",
          ids.from!,
          ...(ids.to !== undefined ? [ids.to] : []),
        ]);
        if (!outcome.ok) return outcome;
        const { added, changed, removed, ...rest } = outcome.value as Record<string, string[]>;
        const changes = [
          ...(added ?? []).map((p) => ({ path: p, change: "added" })),
          ...(changed ?? []).map((p) => ({ path: p, change: "changed" })),
          ...(removed ?? []).map((p) => ({ path: p, change: "removed" })),
        ];
        const shaped = fit({
          ...rest,
          counts: {
            added: added?.length ?? 0,
            changed: changed?.length ?? 0,
            removed: removed?.length ?? 0,
          },
        }, MAX_ANSWER_CHARS / 2);
        return { ok: true, value: paged(ctx, shaped, "changes", changes) };
      }),
  },
  {
    name: "restore_preview",
    title: "Preview a restore",
    description:
      "The three-way plan restoring snapshot `id` would carry out, changing nothing: counts, the " +
      "paths it writes, deletes or finds in conflict with work it did not create (paged: pass " +
      "next_cursor to next_page), the session change, where git HEAD is against the snapshot's " +
      "commit (git) and every reason the restore would be refused (would_refuse).",
    inputSchema: object({ id: ID, force: FORCE, git: GIT }, ["id"]),
    outputSchema: PLAN_OUT,
    annotations: readOnly,
    run: (ctx, args) =>
      withIds(ctx, args, ["id"], async (ids) => {
        const outcome = await command(
          ctx,
          ["restore", "--dry-run", ...moveFlags(args), "--", ids.id!],
          MOVE_WORDS,
          [5],
        );
        return outcome.ok
          ? { ok: true, value: boundedPlan(ctx, outcome.value, MOVE_WORDS) }
          : outcome;
      }),
  },
  {
    name: "restore",
    title: "Restore a checkpoint",
    description:
      "Restore the workspace and session to snapshot `id`, three-way: work it did not create is " +
      "never overwritten (conflicts stop it, unless force: true, which first saves the current " +
      "content in a snapshot). git: true also checks out the snapshot's commit. Changes files: " +
      "call restore_preview first, and pass confirm: true. The undo tool reverts it.",
    inputSchema: object({
      id: ID,
      confirm: { type: "boolean", const: true, description: "must be true: this changes files" },
      force: FORCE,
      git: GIT,
    }, ["id", "confirm"]),
    outputSchema: PLAN_OUT,
    annotations: { ...writes, destructiveHint: true },
    run: (ctx, args) =>
      withIds(ctx, args, ["id"], async (ids) => {
        const outcome = await command(
          ctx,
          ["restore", ...moveFlags(args), "--", ids.id!],
          MOVE_WORDS,
        );
        return outcome.ok
          ? { ok: true, value: boundedPlan(ctx, outcome.value, MOVE_WORDS) }
          : outcome;
      }),
  },
  ...(["undo", "redo"] as const).map((direction): Tool => ({
    name: direction,
    title: direction === "undo" ? "Undo the last operation" : "Redo what undo reverted",
    description: direction === "undo"
      ? "Revert the last operation that changed the workspace, a session or a branch (a " +
        "restore, a checkpoint, a session edit…): files go back three-way, edits made since to " +
        "other paths are kept. Call it again to revert the one before. dry_run: true only " +
        "shows what would change; force: true overwrites paths changed since, after saving " +
        "them in a snapshot. The redo tool re-applies it."
      : "Re-apply the operation the last undo reverted, by the same rules as undo. Available " +
        "until another operation changes something.",
    inputSchema: object({
      dry_run: { type: "boolean", description: "only show what would change" },
      force: FORCE,
    }),
    outputSchema: PLAN_OUT,
    annotations: { ...writes, destructiveHint: true },
    async run(ctx, args) {
      const argv: string[] = [direction];
      if (args.dry_run === true) argv.push("--dry-run");
      if (args.force === true) argv.push("--force");
      const outcome = await command(ctx, argv, UNDO_WORDS);
      return outcome.ok
        ? { ok: true, value: boundedPlan(ctx, outcome.value, UNDO_WORDS) }
        : outcome;
    },
  })),
  {
    name: "read_file",
    title: "Read a file at a checkpoint",
    description:
      "The content of file `path` (relative to the workspace) as snapshot `id` recorded it, " +
      "verified against its hash: text as UTF-8, a part at a time (offset and length in bytes; " +
      "next_offset reads on). A binary file is marked binary: true and its content not shown; " +
      "a symlink gives its target. A path the snapshot left out says why.",
    inputSchema: object({
      id: ID,
      path: { type: "string", minLength: 1, maxLength: 4096 },
      offset: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      length: {
        type: "integer",
        minimum: 1,
        maximum: 8000,
        description: "at most this many bytes (default and most 8000)",
      },
    }, ["id", "path"]),
    outputSchema: {
      type: "object",
      properties: {
        id: { type: "string" },
        path: { type: "string" },
        type: { type: "string" },
        size: { type: "integer" },
        binary: { type: "boolean" },
        content: { anyOf: [{ type: "string" }, { type: "null" }] },
        next_offset: { anyOf: [{ type: "integer" }, { type: "null" }] },
      },
      required: ["id", "path", "type", "size", "binary", "content", "next_offset"],
    },
    annotations: readOnly,
    run: (ctx, args) =>
      withIds(ctx, args, ["id"], async (ids) => {
        try {
          const value = await readFileAt(ctx.service.store, ids.id!, args.path as string, {
            offset: typeof args.offset === "number" ? args.offset : 0,
            length: typeof args.length === "number" ? args.length : 8000,
            maxChars: MAX_ANSWER_CHARS - 1000,
          });
          return { ok: true, value: value as unknown as Record<string, unknown> };
        } catch (error) {
          const e = error as { message?: string; hint?: string };
          return {
            ok: false,
            message: toolError({ message: String(e.message), hint: e.hint }, {}),
          };
        }
      }),
  },
  {
    name: "next_page",
    title: "Next page of an answer",
    description:
      "The next items of a long answer (list, diff, restore_preview, restore, undo, redo, " +
      "verify): pass the next_cursor it gave. Cursors last as long as this server session.",
    inputSchema: object({
      cursor: {
        type: "string",
        minLength: 1,
        maxLength: 64,
        pattern: "^[0-9a-f]{16}\\.[0-9]{1,9}$",
      },
    }, ["cursor"]),
    outputSchema: {
      type: "object",
      properties: {
        offset: { type: "integer" },
        total: { type: "integer" },
        items: { type: "array" },
        next_cursor: CURSOR_OUT,
      },
      required: ["offset", "total", "items", "next_cursor"],
    },
    annotations: readOnly,
    run(ctx, args) {
      try {
        const page = pagesOf(ctx).next(args.cursor as string);
        return Promise.resolve({ ok: true, value: fit({ ...page }) });
      } catch (error) {
        const e = error as { message?: string; hint?: string };
        return Promise.resolve({
          ok: false,
          message: toolError({ message: String(e.message), hint: e.hint }, {}),
        });
      }
    },
  },
  {
    name: "session_update",
    title: "Edit the session",
    description:
      "Set the task or progress, or add a decision, a finding or a knowledge item to the live " +
      "session the next checkpoint records. Returns the session state.",
    inputSchema: object({
      task: { type: "string", maxLength: 16384 },
      progress_pct: { type: "integer", minimum: 0, maximum: 100 },
      decision: TEXT,
      finding: TEXT,
      knowledge: TEXT,
    }),
    outputSchema: {
      type: "object",
      properties: { session: { type: "string" }, state: OBJECT },
      required: ["session", "state"],
    },
    annotations: writes,
    async run(ctx, args) {
      const steps: string[][] = [];
      const set: string[] = [];
      if (typeof args.task === "string") set.push(`--task=${args.task}`);
      if (typeof args.progress_pct === "number") set.push(`--progress=${args.progress_pct}`);
      if (set.length > 0) steps.push(["session", "set", ...set]);
      if (typeof args.decision === "string") steps.push(["session", "decide", "--", args.decision]);
      if (typeof args.finding === "string") steps.push(["session", "finding", "--", args.finding]);
      if (typeof args.knowledge === "string") steps.push(["session", "know", "--", args.knowledge]);
      for (const step of steps) {
        const outcome = await command(ctx, step);
        if (!outcome.ok) return outcome;
      }
      return newest(await command(ctx, ["session", "show"]));
    },
  },
  {
    name: "verify",
    title: "Verify checkpoints",
    description:
      "Recompute ids, check signatures and re-hash content: the branch head, snapshot `id`, or " +
      "every object and chain in the store (all: counts, and the snapshots that are not valid " +
      "and trusted, paged). ok and trusted give the verdict.",
    inputSchema: object({ id: ID, all: { type: "boolean" } }),
    outputSchema: OBJECT,
    annotations: readOnly,
    async run(ctx, args) {
      if (args.all === true) {
        // Exit 1 or 3 still carries the report: a tampered or untrusted snapshot is the answer.
        const outcome = await command(ctx, ["verify", "--all"], {}, [1, 3]);
        if (!outcome.ok) return outcome;
        const report = outcome.value as {
          snapshots?: { valid?: boolean; trusted?: boolean }[];
          objects?: { checked?: number; corrupt?: unknown[] };
        };
        const snapshots = report.snapshots ?? [];
        const failing = snapshots.filter((s) => s.valid !== true || s.trusted !== true);
        const shaped = fit({
          ...outcome.value,
          snapshots: [],
          counts: {
            snapshots: snapshots.length,
            invalid: snapshots.filter((s) => s.valid !== true).length,
            untrusted: snapshots.filter((s) => s.valid === true && s.trusted !== true).length,
            objects_checked: report.objects?.checked ?? 0,
            objects_corrupt: report.objects?.corrupt?.length ?? 0,
          },
        }, MAX_ANSWER_CHARS / 2);
        const { snapshots: _all, ...rest } = shaped;
        return { ok: true, value: paged(ctx, rest, "failing", failing) };
      }
      return withIds(
        ctx,
        args,
        ["id"],
        async (ids) =>
          bounded(
            await command(ctx, ["verify", ...(ids.id !== undefined ? ["--", ids.id] : [])], {}, [
              1,
              3,
            ]),
          ),
      );
    },
  },
  {
    name: "publish",
    title: "Publish a checkpoint",
    description:
      "Write snapshot `id` to a portable file that verifies offline: the signed envelope, or with " +
      "with_workspace a bundle holding every file. Written in the store's published/ directory, " +
      "or at `out`: a new file's path relative to the workspace, ending in .ctxbundle or " +
      ".ctxsnapshot.json, outside .git and .ctxsnap, never over an existing file.",
    inputSchema: object({
      id: ID,
      with_workspace: { type: "boolean" },
      history: { type: "integer", minimum: 0, maximum: 1_000_000 },
      out: { type: "string", minLength: 1, maxLength: 1024 },
    }, ["id"]),
    outputSchema: OBJECT,
    annotations: { ...writes, idempotentHint: true },
    async run(ctx, args) {
      const out = typeof args.out === "string" ? args.out : undefined;
      if (out !== undefined && !/\.(ctxbundle|ctxsnapshot\.json)$/.test(out)) {
        return { ok: false, message: "out must name a .ctxbundle or .ctxsnapshot.json file" };
      }
      const id = await snapshotId(ctx, args.id as string);
      if (typeof id !== "string") return id;
      const { publishToFile } = await import("../../share/publish.ts");
      try {
        const result = await publishToFile(ctx.store, id, {
          withWorkspace: args.with_workspace === true,
          history: typeof args.history === "number" ? args.history : 0,
          below: out === undefined
            ? { root: ctx.storeDir, dir: "published", replace: true }
            : { root: ctx.workspace, file: out },
        });
        return { ok: true, value: { ...result } };
      } catch (error) {
        return { ok: false, message: (error as Error).message };
      }
    },
  },
];

/** The full id of the snapshot `given` names (an id, a prefix or a revision), or the error. */
async function snapshotId(ctx: ToolContext, given: string): Promise<string | ToolOutcome> {
  const found = await resolve(ctx, given);
  return found.ok ? found.id : found;
}

/** A resource: a JSON document read with a command. */
export interface Resource {
  /** Its URI. */
  uri: string;
  /** Name. */
  name: string;
  /** Description. */
  description: string;
  /** Reads it. */
  read(ctx: ToolContext): Promise<ToolOutcome>;
}

/** The resources of `ctxsnap mcp`. */
export const RESOURCES: readonly Resource[] = [
  {
    uri: "ctxsnap://timeline",
    name: "timeline",
    description: "The current branch's 20 newest checkpoints, newest first.",
    read: async (ctx) => bounded(await command(ctx, ["list", "--limit=20"])),
  },
  {
    uri: "ctxsnap://head",
    name: "head",
    description: "The current branch's newest checkpoint (ctxsnap show HEAD --json).",
    async read(ctx) {
      // The head resolved in the store (never a file named HEAD), then shown by its full id.
      const found = await resolve(ctx, "HEAD");
      if (!found.ok) return { ok: true, value: { id: null, head: null } };
      return bounded(await command(ctx, ["show", "--", found.id]));
    },
  },
  {
    uri: "ctxsnap://session",
    name: "session",
    description:
      "The live session state the next checkpoint records (ctxsnap session show --json).",
    read: async (ctx) => newest(await command(ctx, ["session", "show"])),
  },
];
