/**
 * Claude Code's hook settings for checkpointing through the watch process
 * over HTTP (layer: watch): what `ctxsnap hook install claude-code --http`
 * merges into `.claude/settings.local.json`.
 *
 * - `SessionStart` (which cannot be an HTTP hook) and `UserPromptSubmit` stay
 *   command hooks, `ctxsnap hook claude-code`: each hands its event to the
 *   watch process, and starts one when none runs (after an idle stop, say),
 *   so the HTTP events that follow find it.
 * - Every other event ctxsnap records is an `http` hook POSTing to
 *   `http://127.0.0.1:PORT/hook/claude-code` with the store's bearer token.
 *
 * The token is written only into `.claude/settings.local.json`, the file
 * Claude Code keeps for one user and out of git (mode 0600 here; the
 * installer refuses when git tracks it and adds it to `.git/info/exclude`
 * when nothing ignores it), never into `.claude/settings.json`, which
 * projects commit. Its `ctxsnap_hook_` prefix is a secret the capture
 * recognises by content, so that file never enters a snapshot either. Merging removes only handlers ctxsnap wrote (a command
 * running `ctxsnap hook claude-code`, or an http URL ending in
 * `/hook/claude-code` on 127.0.0.1) and keeps every other hook, matcher
 * group and setting as it was.
 *
 * @example
 * ```ts
 * import { mergeHttpHooks } from "./claude_code_http.ts";
 * const mine = { hooks: { Stop: [{ hooks: [{ type: "command", command: "say done" }] }] } };
 * const { settings } = mergeHttpHooks(mine, { port: 45123, token: `ctxsnap_hook_${"ab".repeat(32)}` });
 * const stop = (settings.hooks as Record<string, unknown[]>).Stop!;
 * if (stop.length !== 2) throw new Error("the user's Stop hook must stay");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError, quote, UsageError } from "../../errors.ts";
import { gitTopLevel, runGit } from "../git/git.ts";
import { writeFileAtomic } from "../../workspace/io/atomic.ts";
import { ensureHttpConf, HOOK_PATH, type HttpConf, readHttpConf } from "./http_hooks.ts";

/** The command the command hooks run. */
export const HOOK_COMMAND = "ctxsnap hook claude-code";

/** Events recorded through a command hook, with their timeouts (seconds). */
export const COMMAND_EVENTS: Readonly<Record<string, number>> = {
  SessionStart: 60,
  UserPromptSubmit: 60,
};

/** Events recorded through an HTTP hook, with their timeouts (seconds) and whether they take a matcher. */
export const HTTP_EVENTS: Readonly<Record<string, { timeout: number; matcher: boolean }>> = {
  PreToolUse: { timeout: 30, matcher: true },
  PostToolUse: { timeout: 30, matcher: true },
  PostToolUseFailure: { timeout: 30, matcher: true },
  Stop: { timeout: 30, matcher: false },
  StopFailure: { timeout: 30, matcher: false },
  SubagentStart: { timeout: 30, matcher: false },
  SubagentStop: { timeout: 30, matcher: false },
  PreCompact: { timeout: 30, matcher: false },
  PostCompact: { timeout: 30, matcher: false },
  SessionEnd: { timeout: 10, matcher: false },
};

/** What merging did to one event. */
export interface HookChange {
  /** The event. */
  event: string;
  /** `added` (none of ours before), `updated` (ours replaced), `unchanged`. */
  action: "added" | "updated" | "unchanged";
  /** `command` or `http`. */
  type: "command" | "http";
}

type Json = Record<string, unknown>;

/** Whether `handler` is one ctxsnap wrote (any version, any port). */
export function isCtxsnapHandler(handler: unknown): boolean {
  if (handler === null || typeof handler !== "object" || Array.isArray(handler)) return false;
  const h = handler as Json;
  if (h.type === "command" && typeof h.command === "string") {
    return /^(\S*\/)?ctxsnap hook claude-code(\s|$)/.test(h.command);
  }
  if (h.type === "http" && typeof h.url === "string") {
    return new RegExp(`^http://127\\.0\\.0\\.1:\\d+${HOOK_PATH}(\\?.*)?$`).test(h.url);
  }
  return false;
}

/** The handler ctxsnap installs for `event`. */
export function handlerFor(event: string, conf: HttpConf): Json {
  if (Object.hasOwn(COMMAND_EVENTS, event)) {
    return { type: "command", command: HOOK_COMMAND, timeout: COMMAND_EVENTS[event] };
  }
  return {
    type: "http",
    url: `http://127.0.0.1:${conf.port}${HOOK_PATH}`,
    headers: { Authorization: `Bearer ${conf.token}` },
    timeout: HTTP_EVENTS[event]!.timeout,
  };
}

/**
 * Merges ctxsnap's hooks into `settings` (a parsed settings file, or
 * undefined for none): for each event, removes the handlers ctxsnap wrote
 * before (dropping a matcher group they leave empty) and appends one group
 * with the current one. Throws TypeError when `settings` or its `hooks` is
 * not shaped as Claude Code reads them (nothing is then written).
 */
export function mergeHttpHooks(
  settings: unknown,
  conf: HttpConf,
): { settings: Json; changes: HookChange[] } {
  if (
    settings !== undefined && (typeof settings !== "object" || settings === null ||
      Array.isArray(settings))
  ) {
    throw new TypeError("the settings are not a JSON object");
  }
  const out: Json = structuredClone((settings ?? {}) as Json);
  if (
    out.hooks !== undefined && (out.hooks === null || typeof out.hooks !== "object" ||
      Array.isArray(out.hooks))
  ) {
    throw new TypeError('its "hooks" is not an object');
  }
  const hooks = (out.hooks ?? {}) as Json;
  const changes: HookChange[] = [];
  for (const event of [...Object.keys(COMMAND_EVENTS), ...Object.keys(HTTP_EVENTS)]) {
    const groups = hooks[event] ?? [];
    if (!Array.isArray(groups)) throw new TypeError(`its hooks.${event} is not an array`);
    const wanted = handlerFor(event, conf);
    const matcher = HTTP_EVENTS[event]?.matcher === true;
    const group: Json = matcher ? { matcher: "*", hooks: [wanted] } : { hooks: [wanted] };
    let ours = 0;
    let same = false;
    const kept: unknown[] = [];
    for (const g of groups) {
      if (g === null || typeof g !== "object" || Array.isArray(g)) {
        kept.push(g);
        continue;
      }
      const handlers = (g as Json).hooks;
      if (!Array.isArray(handlers)) {
        kept.push(g);
        continue;
      }
      const others = handlers.filter((h) => !isCtxsnapHandler(h));
      const removed = handlers.length - others.length;
      if (removed > 0) {
        ours += removed;
        same ||= JSON.stringify(g) === JSON.stringify(group);
      }
      if (removed === 0) kept.push(g);
      else if (others.length > 0) kept.push({ ...(g as Json), hooks: others });
    }
    kept.push(group);
    hooks[event] = kept;
    changes.push({
      event,
      type: wanted.type as "command" | "http",
      action: ours === 0 ? "added" : ours === 1 && same ? "unchanged" : "updated",
    });
  }
  out.hooks = hooks;
  return { settings: out, changes };
}

/** Largest settings file read. */
const MAX_SETTINGS_BYTES = 1024 * 1024;

/** What {@linkcode installHttpHooks} did (or, with `dryRun`, would do). */
export interface HttpInstall {
  /** The settings file. */
  settings: string;
  /** The URL events are POSTed to. */
  url: string;
  /** Per event. */
  changes: HookChange[];
  /** Whether the settings file was (or would be) written. */
  written: boolean;
  /** The `info/exclude` file the settings file was added to, or null. */
  git_excluded: string | null;
  /** Nothing was written. */
  dry_run: boolean;
}

/**
 * Merges the HTTP hooks of the store in `storeDir` into
 * `<workspace>/.claude/settings.local.json` (see the module doc), making the
 * store's port and token first (`run/http.json`) unless `dryRun`. Throws
 * {@linkcode UsageError} when git tracks that file (the token would be
 * committed) and {@linkcode ConfigError} when it cannot be read as a JSON
 * object (it is then left as it was).
 */
export async function installHttpHooks(
  workspace: string,
  storeDir: string,
  options: { dryRun: boolean },
): Promise<HttpInstall> {
  const file = path.join(workspace, ".claude", "settings.local.json");
  const rel = ".claude/settings.local.json";
  const top = gitTopLevel(workspace);
  const relTop = top === null ? null : path.relative(top, file).split(path.sep).join("/");
  if (top !== null && runGit(top, ["ls-files", "--error-unmatch", "--", relTop!]).status === 0) {
    throw new UsageError(`Git tracks ${quote(file)}: a token written there would be committed`, {
      hint: `untrack it first (git rm --cached ${rel}), then run this again`,
    });
  }
  const existing = readSettings(file);
  const conf = options.dryRun
    ? readHttpConf(storeDir) ?? { port: 0, token: "ctxsnap_hook_(made on install)" }
    : await ensureHttpConf(storeDir);
  let merged;
  try {
    merged = mergeHttpHooks(existing, conf);
  } catch (error) {
    throw new ConfigError(`Cannot merge hooks into ${quote(file)}: ${(error as Error).message}`, {
      hint: "fix the file by hand (it is left as it was), then run this again",
    });
  }
  const written = existing === undefined ||
    JSON.stringify(existing) !== JSON.stringify(merged.settings);
  let excluded: string | null = null;
  if (!options.dryRun) {
    if (written) {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      writeFileAtomic(file, `${JSON.stringify(merged.settings, null, 2)}\n`, { mode: 0o600 });
    }
    fs.chmodSync(file, 0o600);
    if (top !== null && runGit(top, ["check-ignore", "-q", "--", relTop!]).status !== 0) {
      excluded = excludeFromGit(top, `/${relTop}`);
    }
  }
  return {
    settings: file,
    url: `http://127.0.0.1:${conf.port === 0 ? "PORT" : conf.port}${HOOK_PATH}`,
    changes: merged.changes,
    written: written,
    git_excluded: excluded,
    dry_run: options.dryRun,
  };
}

/** The parsed settings file, or undefined when there is none. */
function readSettings(file: string): unknown {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(file);
  } catch {
    return undefined;
  }
  if (!stat.isFile()) {
    throw new ConfigError(`${quote(file)} is not a regular file`, {
      hint: "replace it with a regular file (a symbolic link is not followed)",
    });
  }
  if (stat.size > MAX_SETTINGS_BYTES) {
    throw new ConfigError(`${quote(file)} is larger than ${MAX_SETTINGS_BYTES} bytes`);
  }
  const text = fs.readFileSync(file, "utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${quote(file)} is not JSON: ${(error as Error).message}`, {
      hint: "fix the file by hand (it is left as it was), then run this again",
    });
  }
}

/** Appends `line` to the repository's `info/exclude`; the file, or null when it could not. */
function excludeFromGit(top: string, line: string): string | null {
  const run = runGit(top, ["rev-parse", "--git-path", "info/exclude"]);
  if (run.status !== 0) return null;
  const file = path.resolve(top, run.stdout.trim());
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    if (stat !== undefined && !stat.isFile()) return null;
    const text = stat === undefined ? "" : fs.readFileSync(file, "utf8");
    if (text.split(/\r?\n/).includes(line)) return null;
    const prefix = text === "" || text.endsWith("\n") ? "" : "\n";
    fs.appendFileSync(
      file,
      `${prefix}# holds the ctxsnap hook token (ctxsnap hook install)\n${line}\n`,
    );
    return file;
  } catch {
    return null;
  }
}
