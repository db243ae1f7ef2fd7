/**
 * `ctxsnap hook install <agent>`: merges ctxsnap's hooks into an agent's
 * project configuration without clobbering anything (docs/CLI.md, "hook
 * install"). Every handler, matcher group, event and key already there is
 * kept as it was; an event that already runs `ctxsnap hook <agent>` is left
 * alone; a file that is not the documented shape (not JSON, `hooks` not an
 * object, an event not a list) is refused with nothing written; a symbolic
 * link is never followed.
 *
 * | agent       | file                          | shape                                          |
 * | ----------- | ----------------------------- | ---------------------------------------------- |
 * | claude-code | `.claude/settings.json`       | `hooks.<Event>[{matcher?, hooks[{type, command, timeout}]}]` |
 * | gemini-cli  | `.gemini/settings.json`       | the same, `timeout` in ms, `name`              |
 * | codex       | `.codex/hooks.json`           | the same (Codex then asks to trust them: `/hooks`) |
 * | cursor      | `.cursor/hooks.json`          | `{version: 1, hooks.<event>[{command}]}`       |
 * | opencode    | `.opencode/plugins/ctxsnap.ts`| a plugin file, written only when absent        |
 *
 * The claude-code entries are {@linkcode claudeCodeHookEntries} and the merge
 * {@linkcode mergeHookGroups}: a variant (HTTP hooks) passes its own
 * entries to {@linkcode planInstall} (`options.entries`), each with the
 * marker (`command` or `url`) that makes a second install a no-op.
 *
 * @example
 * ```ts
 * import { claudeCodeHookEntries, mergeHookGroups } from "./install.ts";
 * const config: Record<string, unknown> = { model: "opus", hooks: { Stop: [] } };
 * const merged = mergeHookGroups(config, claudeCodeHookEntries(), "settings.json");
 * if (merged.added.length !== 12 || config.model !== "opus") throw new Error("merge");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError, quote } from "../../errors.ts";
import { writeFileAtomic } from "../../workspace/io/atomic.ts";

/** One hook ctxsnap adds: the event, its matcher (tool events) and the handler. */
export interface HookEntry {
  /** The event name. */
  event: string;
  /** The matcher group's `matcher`, or undefined for events without one. */
  matcher?: string;
  /** The handler object (`{type: "command", command, …}`). */
  handler: Record<string, unknown>;
  /** The text that marks a handler as ctxsnap's own (the command, or the URL). */
  marker: string;
}

/** What merging did to a configuration object. */
export interface MergeResult {
  /** Events a handler was added to. */
  added: string[];
  /** Events that already ran ctxsnap (left alone). */
  present: string[];
}

/** What installing would do (or did) for one agent. */
export interface InstallPlan {
  /** The agent. */
  agent: string;
  /** The file changed (absolute). */
  file: string;
  /** `create`, `update` or `unchanged`. */
  action: "create" | "update" | "unchanged";
  /** Events whose hook was added. */
  added: string[];
  /** Events that already ran ctxsnap. */
  present: string[];
  /** What the user must still do (Codex: trust the hooks). */
  notes: string[];
  /** The new content (null when unchanged). */
  content: string | null;
  /** The mode of the file written. */
  mode: number;
}

/** The agents an installer exists for. */
export const INSTALLABLE: readonly string[] = [
  "claude-code",
  "gemini-cli",
  "codex",
  "cursor",
  "opencode",
];

/** Largest configuration file read (bytes). */
const MAX_CONFIG_BYTES = 1024 * 1024;

/** The command hooks of Claude Code (docs: interop facts §1a). */
export function claudeCodeHookEntries(command = "ctxsnap hook claude-code"): HookEntry[] {
  const events = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
  ];
  const tool = new Set(["PreToolUse", "PostToolUse", "PostToolUseFailure"]);
  return events.map((event) => ({
    event,
    ...(tool.has(event) ? { matcher: "*" } : {}),
    handler: { type: "command", command, timeout: event === "SessionEnd" ? 5 : 10 },
    marker: command,
  }));
}

function geminiEntries(command = "ctxsnap hook gemini-cli"): HookEntry[] {
  const events = [
    "SessionStart",
    "BeforeAgent",
    "BeforeTool",
    "AfterTool",
    "AfterAgent",
    "PreCompress",
    "SessionEnd",
  ];
  return events.map((event) => ({
    event,
    ...(event === "BeforeTool" || event === "AfterTool" ? { matcher: "*" } : {}),
    handler: {
      type: "command",
      name: "ctxsnap",
      command,
      timeout: event === "SessionEnd" ? 5000 : 10000,
    },
    marker: command,
  }));
}

function codexEntries(command = "ctxsnap hook codex"): HookEntry[] {
  const events = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "PreCompact",
    "PostCompact",
  ];
  return events.map((event) => ({
    event,
    ...(event === "PreToolUse" || event === "PostToolUse" ? { matcher: "*" } : {}),
    handler: { type: "command", command, timeout: 10 },
    marker: command,
  }));
}

const CURSOR_EVENTS = [
  "sessionStart",
  "beforeSubmitPrompt",
  "preToolUse",
  "postToolUse",
  "postToolUseFailure",
  "beforeShellExecution",
  "afterShellExecution",
  "afterFileEdit",
  "subagentStop",
  "preCompact",
  "stop",
  "sessionEnd",
];

/** The OpenCode plugin `install opencode` writes (events sent on the hook's stdin). */
export const OPENCODE_PLUGIN =
  `// Written by \`ctxsnap hook install opencode\`: sends OpenCode's events to
// \`ctxsnap hook opencode\` on standard input (never as arguments: a prompt
// must not show in the process list). Never throws: ctxsnap never blocks.
import type { Plugin } from "@opencode-ai/plugin";

export const Ctxsnap: Plugin = async ({ directory }) => {
  const send = async (hook_event_name: string, data: unknown) => {
    try {
      const proc = Bun.spawn(["ctxsnap", "hook", "opencode"], {
        stdin: new Blob([JSON.stringify({ hook_event_name, directory, data })]),
        stdout: "ignore",
        stderr: "ignore",
      });
      await proc.exited;
    } catch {
      // ctxsnap missing or failing: the agent goes on.
    }
  };
  return {
    "chat.message": async (input, output) =>
      void (await send("chat.message", { ...input, parts: output.parts })),
    "tool.execute.before": async (input, output) =>
      void (await send("tool.execute.before", { ...input, args: output.args })),
    "tool.execute.after": async (input, output) =>
      void (await send("tool.execute.after", { ...input, title: output.title })),
    event: async ({ event }) => {
      const p = (event.properties ?? {}) as { sessionID?: string; info?: { id?: string } };
      const sessionID = p.sessionID ?? p.info?.id;
      if (
        sessionID !== undefined &&
        ["session.created", "session.idle", "session.error", "session.compacted", "session.deleted"]
          .includes(event.type)
      ) await send(event.type, { sessionID });
    },
  };
};
`;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Adds each of `entries` to `config.hooks.<event>` as a new matcher group,
 * unless a handler of that event already holds the entry's marker (its
 * command). Everything else in `config` is kept. `file` names the file in
 * refusals.
 *
 * @throws {ConfigError} When `config.hooks`, an event's list or a group is not the documented shape.
 */
export function mergeHookGroups(
  config: Record<string, unknown>,
  entries: readonly HookEntry[],
  file: string,
): MergeResult {
  const refuse = (what: string): never => {
    throw new ConfigError(`${quote(file)}: ${what}: nothing changed`, {
      hint: "fix the file by hand (or move it aside), then install again",
    });
  };
  if (config.hooks !== undefined && !isObject(config.hooks)) refuse("`hooks` is not an object");
  // Merged into a copy: a refusal half-way leaves `config` as it was.
  const hooks = structuredClone(config.hooks ?? {}) as Record<string, unknown>;
  const result: MergeResult = { added: [], present: [] };
  for (const entry of entries) {
    const list = hooks[entry.event] ?? [];
    if (!Array.isArray(list)) refuse(`\`hooks.${entry.event}\` is not a list`);
    let present = false;
    for (const group of list as unknown[]) {
      if (!isObject(group)) refuse(`\`hooks.${entry.event}\` holds something other than objects`);
      const handlers = (group as Record<string, unknown>).hooks;
      if (handlers === undefined) continue;
      if (!Array.isArray(handlers)) refuse(`a group of \`hooks.${entry.event}\` has no hook list`);
      for (const handler of handlers as unknown[]) {
        if (
          isObject(handler) &&
          (handler.command === entry.marker || handler.url === entry.marker)
        ) present = true;
      }
    }
    if (present) {
      result.present.push(entry.event);
      continue;
    }
    hooks[entry.event] = [
      ...(list as unknown[]),
      {
        ...(entry.matcher !== undefined ? { matcher: entry.matcher } : {}),
        hooks: [entry.handler],
      },
    ];
    result.added.push(entry.event);
  }
  config.hooks = hooks;
  return result;
}

function mergeCursor(config: Record<string, unknown>, file: string): MergeResult {
  const refuse = (what: string): never => {
    throw new ConfigError(`${quote(file)}: ${what}: nothing changed`, {
      hint: "fix the file by hand (or move it aside), then install again",
    });
  };
  if (config.version !== undefined && config.version !== 1) {
    refuse(`\`version\` is ${quote(config.version)}, not 1`);
  }
  if (config.hooks !== undefined && !isObject(config.hooks)) refuse("`hooks` is not an object");
  const hooks = structuredClone(config.hooks ?? {}) as Record<string, unknown>;
  const command = "ctxsnap hook cursor";
  const result: MergeResult = { added: [], present: [] };
  for (const event of CURSOR_EVENTS) {
    const list = hooks[event] ?? [];
    if (!Array.isArray(list)) refuse(`\`hooks.${event}\` is not a list`);
    if ((list as unknown[]).some((h) => isObject(h) && h.command === command)) {
      result.present.push(event);
      continue;
    }
    hooks[event] = [...(list as unknown[]), { command }];
    result.added.push(event);
  }
  config.version = 1;
  config.hooks = hooks;
  return result;
}

/** The project file of `agent` under `root`. */
export function installFile(agent: string, root: string): string {
  const rel: Record<string, string> = {
    "claude-code": ".claude/settings.json",
    "gemini-cli": ".gemini/settings.json",
    codex: ".codex/hooks.json",
    cursor: ".cursor/hooks.json",
    opencode: ".opencode/plugins/ctxsnap.ts",
  };
  return path.join(root, rel[agent]!);
}

/** The current text and mode of `file`, or null when absent; never through a link. */
function readConfig(file: string): { text: string; mode: number } | null {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch {
    return null;
  }
  if (!stat.isFile()) {
    throw new ConfigError(`${quote(file)} is not a regular file (a link?): nothing changed`);
  }
  if (stat.size > MAX_CONFIG_BYTES) {
    throw new ConfigError(
      `${quote(file)} is larger than ${MAX_CONFIG_BYTES} bytes: nothing changed`,
    );
  }
  const bytes = fs.readFileSync(file);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ConfigError(`${quote(file)} is not UTF-8 text: nothing changed`);
  }
  return { text, mode: stat.mode & 0o777 };
}

/**
 * Plans installing `agent`'s hooks in the project at `root` (reads, never
 * writes; {@linkcode applyInstall} writes).
 *
 * @throws {ConfigError} When the existing file cannot be merged without clobbering it.
 */
export function planInstall(
  agent: string,
  root: string,
  options: {
    /** The hooks to merge instead of the agent's command hooks (a variant: HTTP hooks). */
    entries?: readonly HookEntry[];
  } = {},
): InstallPlan {
  const file = installFile(agent, root);
  const current = readConfig(file);
  const notes: string[] = [];
  if (agent === "opencode") {
    if (current !== null && current.text !== OPENCODE_PLUGIN) {
      throw new ConfigError(`${quote(file)} exists and is not ctxsnap's plugin: nothing changed`, {
        hint: "move it aside, then install again",
      });
    }
    const unchanged = current !== null;
    return {
      agent,
      file,
      action: unchanged ? "unchanged" : "create",
      added: unchanged ? [] : ["plugin"],
      present: unchanged ? ["plugin"] : [],
      notes,
      content: unchanged ? null : OPENCODE_PLUGIN,
      mode: 0o644,
    };
  }
  let config: unknown = {};
  if (current !== null && current.text.trim() !== "") {
    try {
      config = JSON.parse(current.text);
    } catch (error) {
      throw new ConfigError(
        `${quote(file)} is not valid JSON (${(error as Error).message}): nothing changed`,
        { hint: "fix the file by hand, then install again" },
      );
    }
  }
  if (!isObject(config)) {
    throw new ConfigError(`${quote(file)} is not a JSON object: nothing changed`);
  }
  const merged = agent === "cursor" ? mergeCursor(config, file) : mergeHookGroups(
    config,
    options.entries !== undefined
      ? options.entries
      : agent === "claude-code"
      ? claudeCodeHookEntries()
      : agent === "gemini-cli"
      ? geminiEntries()
      : codexEntries(),
    file,
  );
  if (agent === "codex" && merged.added.length > 0) {
    notes.push("Codex runs new hooks only once trusted: open `/hooks` in Codex and trust them");
  }
  const unchanged = merged.added.length === 0;
  return {
    agent,
    file,
    action: unchanged ? "unchanged" : current === null ? "create" : "update",
    ...merged,
    notes,
    content: unchanged ? null : JSON.stringify(config, null, 2) + "\n",
    mode: current?.mode ?? 0o644,
  };
}

/** Writes what `plan` holds (atomically; parent directories made). */
export function applyInstall(plan: InstallPlan): void {
  if (plan.content === null) return;
  fs.mkdirSync(path.dirname(plan.file), { recursive: true });
  writeFileAtomic(plan.file, plan.content, { mode: plan.mode });
}
