/**
 * A recorded agent history for the Replay view: two Claude Code sessions
 * whose prompts interleave on one branch, each prompt an edit and a Bash
 * command, over any workspace (the std-like tree of `_std_tree.ts` for the
 * page-size check). Events go through the real hook path
 * (`parseClaudeCodeEvent` → `recordAgentEvent` → `createSnapshot`).
 *
 * @module
 */
import { join } from "node:path";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../lib/crypto/ed25519.ts";
import { toHex } from "../lib/encoding/hex.ts";
import type { Signer } from "../lib/format/envelope.ts";
import { createSnapshot } from "../lib/history/create.ts";
import { parseClaudeCodeEvent, recordAgentEvent } from "../lib/history/agent.ts";
import type { Store } from "../lib/repository/store.ts";

/** A fresh signer. */
export async function makeSigner(): Promise<Signer> {
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}

/** One hook event: its payload's fields besides `cwd`. */
export type HookPayload = Record<string, unknown>;

/** Delivers one Claude Code hook event for the workspace `dir`; returns the snapshot id. */
export async function deliver(
  store: Store,
  signer: Signer,
  dir: string,
  payload: HookPayload,
  recordPrompts = true,
): Promise<string> {
  const event = parseClaudeCodeEvent(
    new TextEncoder().encode(JSON.stringify({ cwd: dir, ...payload })),
    { recordPrompts },
  );
  const result = await recordAgentEvent(
    store,
    {},
    event,
    (o) => createSnapshot(store, signer, o),
  );
  return result.id;
}

/**
 * Records prompts of `sessions` agent sessions taking turns (prompt 1 of
 * each, then prompt 2 of each, …) until `snapshots` snapshots were made:
 * each prompt submits `prompt N of <session>`, edits `edit(n)` paths
 * (PostToolUse Edit) and runs a Bash command (PostToolUse Bash).
 */
export async function recordInterleaved(
  store: Store,
  signer: Signer,
  dir: string,
  options: {
    snapshots: number;
    sessions?: string[];
    paths: string[];
    prompt?: (session: string, n: number) => string;
  },
): Promise<string[]> {
  const sessions = options.sessions ?? ["sess-alpha", "sess-beta"];
  const made = new Set<string>();
  let n = 0;
  let tool = 0;
  while (made.size < options.snapshots) {
    n++;
    for (const session of sessions) {
      if (made.size >= options.snapshots) break;
      const text = options.prompt?.(session, n) ?? `prompt ${n} of ${session}`;
      made.add(
        await deliver(store, signer, dir, {
          session_id: session,
          hook_event_name: "UserPromptSubmit",
          prompt: text,
        }),
      );
      const path = options.paths[(n * 7 + session.length * 13 + tool) % options.paths.length]!;
      await Deno.writeTextFile(
        join(dir, path),
        `// edited by ${session} at prompt ${n}\n` + (await Deno.readTextFile(join(dir, path))),
      );
      made.add(
        await deliver(store, signer, dir, {
          session_id: session,
          hook_event_name: "PostToolUse",
          tool_name: "Edit",
          tool_use_id: `toolu_${++tool}`,
          tool_input: { file_path: join(dir, path) },
        }),
      );
      if (made.size >= options.snapshots) break;
      await Deno.writeTextFile(join(dir, `out-${session}.log`), `run ${n}\n`);
      made.add(
        await deliver(store, signer, dir, {
          session_id: session,
          hook_event_name: "PostToolUse",
          tool_name: "Bash",
          tool_use_id: `toolu_${++tool}`,
          tool_input: { command: `deno test -A ${path} > out-${session}.log` },
        }),
      );
    }
  }
  return [...made];
}
