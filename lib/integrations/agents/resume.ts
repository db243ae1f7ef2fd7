/**
 * Resume an agent session from prompt N (`ctxsnap resume`, docs/CLI.md):
 * the workspace goes back to the state before prompt N through the move
 * engine's restore (three-way, undoable with `ctxsnap undo`), and where the
 * agent can resume a transcript (Claude Code, Codex, Gemini CLI) a fork of
 * it ending just before that prompt is written under a new session id next
 * to the original (`./fork.ts`), with the command that continues it. The
 * original transcript is never modified.
 *
 * The transcript forked is the copy the store kept (checked against the
 * recorded SHA-256); when none was kept (capture off, or too large) the
 * agent's file is read, within the same bounds as at capture. When the
 * kept copy ends before prompt N (transcripts lag the hooks), the agent's
 * file is used if it still starts with exactly the kept bytes. For agents
 * whose transcripts cannot be forked (Cursor, OpenCode) only the files are
 * restored, and the prompt to re-enter is reported when it is known.
 *
 * The fork is computed before anything changes, the restore runs next (a
 * refused restore writes no fork), and the fork is written last, created
 * exclusively (`wx`, mode 0600).
 *
 * @example
 * ```ts
 * import { continueCommand } from "./fork.ts";
 * if (continueCommand("claude-code", "abc") !== "claude --resume abc") throw new Error("cmd");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { NotFoundError } from "../../errors.ts";
import { sha256Hex } from "../../crypto/hash.ts";
import type { Signer } from "../../format/envelope.ts";
import type { Store } from "../../repository/store.ts";
import { agentPrompt, findAgentSession, snapshotBeforePrompt } from "../../history/agent.ts";
import { keptTranscript, readTranscript } from "../../history/transcript.ts";
import { latestTranscriptEvent } from "../../repository/agent_rows.ts";
import { readTranscriptPolicy } from "../../repository/transcript_policy.ts";
import {
  type RestoreOptions,
  type RestoreResult,
  restoreSnapshot,
} from "../../workspace/move/restore.ts";
import { continueCommand, FORKABLE, forkFileName, forkTranscript } from "./fork.ts";

/** Options of {@linkcode resumeFromPrompt}. */
export interface ResumeOptions {
  /** Plan only: restore nothing, write no fork. */
  dryRun?: boolean;
  /** Passed to the restore: overwrite conflicts after snapshotting the current content. */
  force?: boolean;
  /** Restore progress. */
  onProgress?: RestoreOptions["onProgress"];
}

/** What a resume did (or would do). */
export interface ResumeResult {
  /** The agent. */
  agent: string;
  /** The agent session resumed from. */
  agentSession: string;
  /** The prompt. */
  prompt: number;
  /** The snapshot holding the state before it. */
  snapshot: string;
  /** What the restore did. */
  restore: RestoreResult;
  /** The forked transcript, or null when the agent's cannot be forked or none is known. */
  fork: {
    sessionId: string;
    path: string;
    lines: number;
    bytes: number;
    source: "kept" | "agent_file";
  } | null;
  /** The command that continues the forked session, or null. */
  continueCommand: string | null;
  /** Prompt N's text, when known (to re-enter where there is no fork). */
  promptText: string | null;
  /** Why there is no fork, or null. */
  noForkReason: string | null;
}

/** The transcript to fork: the kept copy, else the agent's file; null when neither. */
function sourceTranscript(
  store: Store,
  session: { seq: number; harness: string; transcript_path: string | null },
): { bytes: Uint8Array; path: string; source: "kept" | "agent_file" } | null {
  const latest = latestTranscriptEvent(store, session.seq);
  if (latest !== null && latest.transcript_chain !== null) {
    return {
      bytes: keptTranscript(
        store,
        session.seq,
        latest.transcript_chain,
        latest.transcript_len!,
        latest.transcript_sha256!,
      ),
      path: latest.transcript_path!,
      source: "kept",
    };
  }
  const file = latest?.transcript_path ?? session.transcript_path;
  return file === null ? null : agentFile(store, session.harness, file);
}

/** The agent's transcript file read under the capture rules (§16.3), or null. */
function agentFile(
  store: Store,
  harness: string,
  file: string,
): { bytes: Uint8Array; path: string; source: "agent_file" } | null {
  const policy = { ...readTranscriptPolicy(store.dir), capture: true };
  const read = readTranscript(harness, file, policy);
  return read.bytes === null ? null : { bytes: read.bytes, path: file, source: "agent_file" };
}

/**
 * The agent's file, when the kept copy ends before prompt N (the transcript
 * lags the hooks): used only if it still starts with exactly the kept bytes.
 */
function grownAgentFile(
  store: Store,
  session: { seq: number; harness: string },
  kept: { bytes: Uint8Array; path: string },
): { bytes: Uint8Array; path: string; source: "agent_file" } | null {
  const live = agentFile(store, session.harness, kept.path);
  if (live === null || live.bytes.byteLength <= kept.bytes.byteLength) return null;
  const prefix = live.bytes.subarray(0, kept.bytes.byteLength);
  return sha256Hex(prefix) === sha256Hex(kept.bytes) ? live : null;
}

/**
 * Resumes agent session `spec` (null: the latest) from prompt `prompt`
 * (see the module doc).
 *
 * @throws {NotFoundError} No such session or prompt, or its state was forgotten.
 * @throws {RestoreConflictError} When the restore would overwrite work (nothing changed).
 */
export async function resumeFromPrompt(
  store: Store,
  signer: Signer,
  spec: string | null,
  prompt: number,
  options: ResumeOptions = {},
): Promise<ResumeResult> {
  const session = findAgentSession(store, spec);
  const snapshot = snapshotBeforePrompt(store, session.session_id, prompt);
  const turn = agentPrompt(store, session, prompt);
  let fork: ReturnType<typeof forkTranscript> | null = null;
  let source: ReturnType<typeof sourceTranscript> = null;
  let noFork: string | null = null;
  const newId = crypto.randomUUID();
  if (!FORKABLE.includes(session.harness)) {
    noFork = `${session.harness} transcripts cannot be forked: re-enter the prompt`;
  } else {
    source = sourceTranscript(store, session);
    if (source === null) noFork = "no transcript of this session is known";
    else {
      const attempt = (from: { bytes: Uint8Array }) =>
        forkTranscript(
          session.harness,
          from.bytes,
          session.session_id,
          prompt,
          turn?.prompt_id ?? null,
          newId,
        );
      try {
        fork = attempt(source);
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        noFork = error.message;
        const grown = source.source === "kept" ? grownAgentFile(store, session, source) : null;
        if (grown !== null) {
          try {
            fork = attempt(grown);
            source = grown;
            noFork = null;
          } catch (again) {
            if (!(again instanceof NotFoundError)) throw again;
          }
        }
      }
    }
  }
  const restore = await restoreSnapshot(store, signer, snapshot, {
    dryRun: options.dryRun === true,
    force: options.force === true,
    ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
  });
  let written: ResumeResult["fork"] = null;
  if (fork !== null && source !== null) {
    const file = path.join(
      path.dirname(source.path),
      forkFileName(session.harness, path.basename(source.path), session.session_id, newId),
    );
    if (options.dryRun !== true) {
      fs.writeFileSync(file, fork.bytes, { flag: "wx", mode: 0o600 });
    }
    written = {
      sessionId: newId,
      path: file,
      lines: fork.lines,
      bytes: fork.bytes.byteLength,
      source: source.source,
    };
  }
  return {
    agent: session.harness,
    agentSession: session.session_id,
    prompt,
    snapshot,
    restore,
    fork: written,
    continueCommand: written === null ? null : continueCommand(session.harness, newId),
    promptText: turn?.text ?? fork?.promptText ?? null,
    noForkReason: noFork,
  };
}
