/**
 * Test helpers: replays the recorded agent sessions of
 * tests/fixtures/agents/ into a temporary workspace, writing the agent's
 * transcript line by line as the agent would.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type CliResult, REPO, type TempWorkspace } from "../../_cli.ts";

/** The fixtures folder. */
export const AGENT_FIXTURES: string = join(REPO, "tests", "fixtures", "agents");
/** The Claude Code fixture session's id. */
export const CLAUDE_SESSION = "0ab3352c-0614-4d2c-942c-0051f270eaf3";

/** A fixture's text with `/HOME` and `/PROJECT` made real. */
export async function fixture(ws: TempWorkspace, agent: string, name: string): Promise<string> {
  const text = await Deno.readTextFile(join(AGENT_FIXTURES, agent, name));
  return text.replaceAll("/HOME", ws.home).replaceAll("-PROJECT", "-project")
    .replaceAll("/PROJECT", ws.path);
}

/** Runs `ctxsnap hook <agent> [flags]` in-process with `payload` on stdin. */
export function hook(
  ws: TempWorkspace,
  agent: string,
  payload: string,
  flags: string[] = ["--json"],
): Promise<CliResult> {
  return ws.run(["hook", agent, ...flags], { stdin: payload, mode: "in-process" });
}

/** The transcript lines of an agent's fixture (each with its newline). */
export async function transcriptLines(ws: TempWorkspace, agent: string): Promise<string[]> {
  const text = await fixture(ws, agent, "transcript.jsonl");
  return text.split("\n").filter((l) => l !== "").map((l) => l + "\n");
}

/** Writes the first `n` of `lines` to `path` (the agent appending). */
export async function writeTranscript(path: string, lines: string[], n: number): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, lines.slice(0, n).join(""));
}

/** The Claude Code transcript path of the fixture session in `ws`. */
export function claudeTranscriptPath(ws: TempWorkspace): string {
  return join(ws.home, ".claude", "projects", "-project", `${CLAUDE_SESSION}.jsonl`);
}

/** Reads rows from the store's index (read-only). */
export function queryStore(
  ws: TempWorkspace,
  sql: string,
  ...args: (string | number)[]
): unknown[] {
  const db = new DatabaseSync(join(ws.path, ".ctxsnap", "index.db"), { readOnly: true });
  try {
    return db.prepare(sql).all(...args);
  } finally {
    db.close();
  }
}

/**
 * Replays the three-prompt Claude Code session: per prompt, the transcript
 * grows, the workspace changes (notes.txt created, appended, deleted) and
 * the hook events arrive. Returns each event's `--json` result by name.
 */
export async function recordClaudeSession(
  ws: TempWorkspace,
  flags: string[] = ["--json"],
): Promise<Record<string, Record<string, unknown>>> {
  const lines = await transcriptLines(ws, "claude-code");
  const path = claudeTranscriptPath(ws);
  const notes = join(ws.path, "notes.txt");
  const steps: [string, number, (() => Promise<void>) | null][] = [
    ["session_start", 0, null],
    ["prompt_1", 2, null],
    ["post_write_1", 4, () => Deno.writeTextFile(notes, "one\n")],
    ["stop_1", 5, null],
    ["prompt_2", 7, null],
    ["post_bash_2", 9, () => Deno.writeTextFile(notes, "one\ntwo\n")],
    ["stop_2", 10, null],
    ["prompt_3", 11, null],
    ["post_bash_3", 13, () => Deno.remove(notes)],
    ["stop_3", 14, null],
  ];
  const results: Record<string, Record<string, unknown>> = {};
  for (const [name, n, edit] of steps) {
    if (n > 0) await writeTranscript(path, lines, n);
    await edit?.();
    const result = await hook(
      ws,
      "claude-code",
      await fixture(ws, "claude-code", `${name}.json`),
      flags,
    );
    if (result.code !== 0 || result.stderr !== "") {
      throw new Error(`${name}: exit ${result.code}: ${result.stderr}`);
    }
    results[name] = flags.includes("--json") ? result.json() : {};
  }
  return results;
}
