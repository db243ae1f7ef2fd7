/**
 * The tools and resources of `ctxsnap mcp` (layer: cli). A checkpoint goes
 * through the long-lived {@linkcode WatchService}; every other tool runs the
 * matching command in this process with `--json` and returns its document,
 * so the MCP results are exactly what the command line prints.
 *
 * Arguments are untrusted: they are checked against the tool's declared
 * input schema (unknown keys refused, ids and names by pattern) and passed
 * to the command after `--` or as `--option=value`, so none can be read as
 * an option.
 *
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { isSafeRelativePath } from "../../fs/path.ts";
import type { WatchService } from "../../watch/service.ts";
import type { Schema } from "./schema.ts";

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

/** Runs a command with `--json` and turns its document or error into an outcome. */
async function command(ctx: ToolContext, argv: string[]): Promise<ToolOutcome> {
  const { code, stdout, stderr } = await ctx.cli(["--store", ctx.storeDir, "--json", ...argv]);
  let doc: unknown = null;
  try {
    doc = JSON.parse(stdout);
  } catch {
    doc = null;
  }
  if (code === 0 && doc !== null && typeof doc === "object" && !Array.isArray(doc)) {
    return { ok: true, value: doc as Record<string, unknown> };
  }
  const message = stderr.trim() || `ctxsnap ${argv[0]} failed with exit status ${code}`;
  return { ok: false, message: `${message}\n(exit status ${code})` };
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
      const { createJson } = await import("../commands/create.ts");
      const result = await ctx.service.checkpoint({
        reason: typeof args.reason === "string" ? args.reason : "",
        workspace: args.workspace !== false,
        source,
      });
      return { ok: true, value: createJson(result, "mcp") };
    },
  },
  {
    name: "list",
    title: "List checkpoints",
    description:
      "The timeline, newest first: the current branch, every snapshot (all), or the checkpoints " +
      "an agent hook recorded for one agent session (agent_session, optionally the one made " +
      "when prompt N was submitted).",
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
      properties: { snapshots: { type: "array", items: OBJECT } },
      required: ["snapshots"],
    },
    annotations: readOnly,
    run(ctx, args) {
      const argv = ["list", `--limit=${args.limit ?? 50}`];
      if (args.all === true) argv.push("--all");
      if (typeof args.session === "string") argv.push(`--session=${args.session}`);
      if (typeof args.branch === "string") argv.push(`--branch=${args.branch}`);
      if (typeof args.agent_session === "string") {
        argv.push(`--agent-session=${args.agent_session}`);
      }
      if (typeof args.prompt === "number") argv.push(`--prompt=${args.prompt}`);
      return command(ctx, argv);
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
    run: (ctx, args) => command(ctx, ["show", "--", args.id as string]),
  },
  {
    name: "diff",
    title: "Compare checkpoints",
    description:
      "Files added, changed and removed from snapshot `from` to snapshot `to`, or to the " +
      "workspace as it is now when `to` is omitted.",
    inputSchema: object({ from: ID, to: ID }, ["from"]),
    outputSchema: OBJECT,
    annotations: readOnly,
    run: (ctx, args) =>
      command(ctx, [
        "diff",
        "--",
        args.from as string,
        ...(typeof args.to === "string" ? [args.to] : []),
      ]),
  },
  {
    name: "restore_preview",
    title: "Preview a restore",
    description:
      "The three-way plan restoring snapshot `id` would carry out: files written and deleted, " +
      "conflicts with work it did not create. Changes nothing.",
    inputSchema: object({ id: ID }, ["id"]),
    outputSchema: OBJECT,
    annotations: readOnly,
    run: (ctx, args) => command(ctx, ["restore", "--dry-run", "--", args.id as string]),
  },
  {
    name: "restore",
    title: "Restore a checkpoint",
    description:
      "Restore the workspace and session to snapshot `id`, three-way: work it did not create is " +
      "never overwritten (conflicts stop it). Changes files: call restore_preview first, and " +
      "pass confirm: true. `undo` on the command line reverts it.",
    inputSchema: object({
      id: ID,
      confirm: { type: "boolean", const: true, description: "must be true: this changes files" },
    }, ["id", "confirm"]),
    outputSchema: OBJECT,
    annotations: { ...writes, destructiveHint: true },
    run: (ctx, args) => command(ctx, ["restore", "--", args.id as string]),
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
      return command(ctx, ["session", "show"]);
    },
  },
  {
    name: "verify",
    title: "Verify checkpoints",
    description:
      "Recompute ids, check signatures and re-hash content: the branch head, snapshot `id`, or " +
      "every object and chain in the store (all).",
    inputSchema: object({ id: ID, all: { type: "boolean" } }),
    outputSchema: OBJECT,
    annotations: readOnly,
    run(ctx, args) {
      if (args.all === true) return command(ctx, ["verify", "--all"]);
      return command(ctx, ["verify", ...(typeof args.id === "string" ? ["--", args.id] : [])]);
    },
  },
  {
    name: "publish",
    title: "Publish a checkpoint",
    description:
      "Write snapshot `id` to a portable file that verifies offline: the signed envelope, or with " +
      "with_workspace a bundle holding every file. Written in the workspace (or at `out`, a new " +
      "file's path relative to the workspace).",
    inputSchema: object({
      id: ID,
      with_workspace: { type: "boolean" },
      history: { type: "integer", minimum: 0, maximum: 1_000_000 },
      out: { type: "string", minLength: 1, maxLength: 1024 },
    }, ["id"]),
    outputSchema: OBJECT,
    annotations: { ...writes, idempotentHint: true },
    run(ctx, args) {
      const argv = ["publish"];
      if (args.with_workspace === true) argv.push("--with-workspace");
      if (typeof args.history === "number") argv.push(`--history=${args.history}`);
      if (typeof args.out === "string") {
        // Only a new file inside the workspace, never outside it or in .git.
        if (!isSafeRelativePath(args.out)) {
          return Promise.resolve({ ok: false, message: "out must be a plain relative path" });
        }
        const file = path.join(ctx.workspace, args.out);
        if (fs.existsSync(file)) {
          return Promise.resolve({ ok: false, message: `${args.out} exists: pick a new name` });
        }
        argv.push(`--out=${file}`);
      }
      argv.push("--", args.id as string);
      return command(ctx, argv);
    },
  },
];

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
    description: "The current branch's checkpoints, newest first (ctxsnap list --json).",
    read: (ctx) => command(ctx, ["list", "--limit=200"]),
  },
  {
    uri: "ctxsnap://head",
    name: "head",
    description: "The current branch's newest checkpoint (ctxsnap show HEAD --json).",
    async read(ctx) {
      const listed = await command(ctx, ["list", "--limit=1"]);
      if (!listed.ok) return listed;
      const first = (listed.value.snapshots as { id?: string }[] | undefined)?.[0];
      if (first?.id === undefined) return { ok: true, value: { id: null, head: null } };
      return command(ctx, ["show", "--", first.id]);
    },
  },
  {
    uri: "ctxsnap://session",
    name: "session",
    description:
      "The live session state the next checkpoint records (ctxsnap session show --json).",
    read: (ctx) => command(ctx, ["session", "show"]),
  },
];
