/**
 * One checkpoint for `ctxsnap create` and the agent hook: handed to the
 * `ctxsnap watch` process serving the store when one runs (it knows from
 * filesystem events what changed), made here with a full walk otherwise,
 * after which a watch process is started in the background for the next one
 * (`lib/integrations/watch/daemon.ts`; `CTXSNAP_DAEMON=off` turns that off).
 * The store, identity and capture modules are loaded only on that second
 * path, so a handed-off checkpoint starts little more than the client; the
 * store must be registered as this user's (`lib/repository/trust.ts`) before
 * its watch process is asked.
 *
 * @module
 */
import * as path from "node:path";
import { parseJson } from "../encoding/canonical_json.ts";
import { BusyError, IntegrityError } from "../errors.ts";
import { getEnv } from "../runtime.ts";
import { DEFAULT_BUSY_TIMEOUT_MS } from "../repository/store.ts";
import type { CreateResult } from "../history/create.ts";
import type { CheckpointOptions } from "../history/checkpoint.ts";
import type { CheckpointArgs } from "../integrations/watch/protocol.ts";
import { askWatch } from "../integrations/watch/client.ts";
import { configDir } from "../keys/config_dir.ts";
import { locateStore } from "../repository/locate.ts";
import { checkRegistered } from "../repository/trust.ts";
import type { CommandContext } from "./command.ts";

/** A checkpoint made, and where. */
export interface Checkpoint {
  /** What `createSnapshot` returned (or the watch process did). */
  result: CreateResult;
  /** The store directory. */
  storeDir: string;
  /** `watch` when a watch process made it, else `local`. */
  via: "watch" | "local";
}

/** The options of {@linkcode checkpoint}: those of `createSnapshot` a CLI run gives. */
export type CheckpointRequest = CheckpointOptions & {
  /** Progress while walking (local only). */
  onProgress?: (seen: number) => void;
};

/** Makes one checkpoint of the store `ctx` refers to (see the module doc). */
export async function checkpoint(
  ctx: CommandContext,
  request: CheckpointRequest,
): Promise<Checkpoint> {
  const storeDir = locateStore({ store: ctx.store, cwd: ctx.cwd });
  const explicit = ctx.store !== undefined || (getEnv("CTXSNAP_STORE") ?? "") !== "";
  // Only this user's store is used, even to find a watch process: a store
  // committed into a repository or unpacked from an archive could hold a
  // `run/watch.json` naming someone else's socket (which would receive the
  // checkpoint's arguments, an agent's prompt among them).
  const config = configDir();
  checkRegistered(config, storeDir);
  const handed = await askWatch(storeDir, "checkpoint", toArgs(request), {
    configDir: config,
    // A store found by walking up must belong to the directory holding it.
    ...(explicit ? {} : { expectWorkspace: path.dirname(storeDir) }),
  });
  if (handed !== null) {
    const result = await fromWatch(handed.result);
    await checkWatchAnswer(storeDir, config, result);
    return { result, storeDir, via: "watch" };
  }
  const [{ identity, openStore }, { checkpoint: checkpointHere }] = await Promise.all([
    import("./command.ts"),
    import("../history/checkpoint.ts"),
  ]);
  const signer = await identity();
  const store = openStore(ctx);
  try {
    const result = await checkpointHere(store, signer, request);
    return { result, storeDir: store.dir, via: "local" };
  } finally {
    store.close();
    // No watch process answered: start one in the background for the next
    // checkpoint (unless turned off; see lib/integrations/watch/daemon.ts).
    // After this one, so the two walks do not compete.
    const { startDaemon } = await import("../integrations/watch/daemon.ts");
    await startDaemon(storeDir, explicit ? ctx.cwd : path.dirname(storeDir));
  }
}

/**
 * Verifies a watch process's answer against the store before it is
 * reported: the snapshot must be in this store with a valid id and
 * signature, be exactly the envelope the answer holds, and (when new) be
 * signed with this user's identity. Throws {@linkcode IntegrityError}.
 */
async function checkWatchAnswer(
  storeDir: string,
  config: string,
  result: CreateResult,
): Promise<void> {
  // Only what the check needs: not `./command.ts`, whose imports (the
  // workspace, capture and move modules) a handed-off checkpoint never uses.
  const [{ Store }, { readEnvelope }, { envelopeBytes }, { loadOrCreateIdentity }] = await Promise
    .all([
      import("../repository/store.ts"),
      import("../history/timeline.ts"),
      import("../format/envelope.ts"),
      import("../keys/identity.ts"),
    ]);
  const identity = () => loadOrCreateIdentity(config);
  const refuse = (why: string): never => {
    throw new IntegrityError(
      `The watch process answered with snapshot ${result.id.slice(0, 12)}, which ${why}`,
      { hint: "stop it (`ctxsnap watch --stop`) and retry; nothing it says is reported" },
    );
  };
  const store = Store.open(storeDir, { readOnly: true, registry: config });
  try {
    let stored;
    try {
      stored = await readEnvelope(store, result.id); // id and signature checked
    } catch {
      return refuse("this store does not hold with a valid signature");
    }
    const same = (a: Uint8Array, b: Uint8Array) =>
      a.byteLength === b.byteLength && a.every((x, i) => x === b[i]);
    if (!same(envelopeBytes(stored), envelopeBytes(result.envelope))) {
      refuse("differs from the one this store holds");
    }
    if (result.created && stored.signature.public_key !== (await identity()).publicKeyHex) {
      refuse("is not signed with your key");
    }
    result.envelope = stored;
  } finally {
    store.close();
  }
}

/**
 * How long an agent hook keeps trying a busy store, in all: a checkpoint
 * given up is an agent's turn lost, and a harness waits longer for a hook
 * (Claude Code: 60 s) than the busy timeout. Six busy timeouts: 30 s by
 * default (`CTXSNAP_BUSY_TIMEOUT_MS` 5000).
 */
export function hookBusyBudgetMs(): number {
  const raw = Number(getEnv("CTXSNAP_BUSY_TIMEOUT_MS") ?? "");
  const timeout = Number.isSafeInteger(raw) && raw >= 0 ? raw : DEFAULT_BUSY_TIMEOUT_MS;
  return 6 * timeout;
}

/**
 * Runs `fn` again while it fails because the store is busy (nothing was
 * written: the write transaction never began), until `budgetMs` has passed;
 * then the last `BusyError` (exit 6). The first retry says so on stderr, once
 * (a hook's stderr is one line of news, not a log).
 */
export async function retryWhileBusy<T>(
  ctx: CommandContext,
  fn: () => Promise<T>,
  budgetMs: number = hookBusyBudgetMs(),
): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof BusyError) || Date.now() >= deadline) throw error;
      if (attempt === 1) {
        ctx.out.note(
          `the store is busy; trying again for up to ${Math.ceil(budgetMs / 1000)} s`,
        );
      }
    }
  }
}

function toArgs(request: CheckpointRequest): CheckpointArgs {
  return {
    reason: request.reason ?? "",
    context: (request.context ?? null) as Record<string, unknown> | null,
    workspace: request.workspace !== false,
    source: request.source ?? null,
    session: request.session ?? null,
    branch: request.branch ?? null,
    ...(request.expectHead !== undefined ? { expect_head: request.expectHead } : {}),
    max_file_bytes: request.maxFileBytes ?? null,
    metadata: (request.metadata ?? null) as Record<string, unknown> | null,
    agent: (request.agent ?? null) as Record<string, unknown> | null,
    ...(request.allowUnchanged === true ? { allow_unchanged: true } : {}),
  };
}

/**
 * Checks what a watch process answered (strictly, like anything read): the
 * body against the body rules, the id and signature fields by form. The
 * signature itself is not re-verified here (the watch process, which shares
 * this user's private store files, made it; `verify` checks it any time), so
 * no signature code is loaded on this path.
 */
async function fromWatch(result: Record<string, unknown>): Promise<CreateResult> {
  const { validateBody } = await import("../format/body.ts");
  // Re-parse with the strict parser: integers only, no duplicate keys.
  const value = parseJson(JSON.stringify(result)) as Record<string, unknown>;
  const envelope = value.envelope as Record<string, unknown> | null;
  const signature = envelope?.signature as Record<string, unknown> | undefined;
  const hex = (v: unknown, n: number) =>
    typeof v === "string" && new RegExp(`^[0-9a-f]{${n}}$`).test(v);
  if (
    envelope === null || typeof envelope !== "object" || !hex(envelope.id, 64) ||
    value.id !== envelope.id || signature === undefined || !hex(signature.key_id, 16) ||
    typeof value.created !== "boolean" || !Array.isArray(value.secrets) ||
    !(value.operation === null ||
      (typeof value.operation === "string" && /^op-[0-9a-f]{16}$/.test(value.operation)))
  ) {
    throw new IntegrityError("The watch process answered with a malformed snapshot");
  }
  const body = validateBody(envelope.body);
  return {
    id: envelope.id as string,
    envelope: { ...envelope, body } as unknown as CreateResult["envelope"],
    created: value.created,
    capture: (value.capture ?? null) as CreateResult["capture"],
    secrets: value.secrets as CreateResult["secrets"],
    operation: (value.operation ?? null) as string | null,
    ...(value.agent === undefined ? {} : { agent: agentOutcome(value.agent) }),
  };
}

/** Checks the agent outcome a watch process answered (strictly, by form). */
function agentOutcome(value: unknown): NonNullable<CreateResult["agent"]> {
  const bad = (): never => {
    throw new IntegrityError("The watch process answered with a malformed agent event record");
  };
  if (value === null || typeof value !== "object" || Array.isArray(value)) bad();
  const o = value as Record<string, unknown>;
  const count = (v: unknown) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
  if (
    typeof o.session_id !== "string" || typeof o.event !== "string" || !count(o.position) ||
    !(o.prompt === null || count(o.prompt)) || typeof o.duplicate !== "boolean" ||
    !Array.isArray(o.omitted) || !count(o.omitted_more)
  ) bad();
  const omitted = (o.omitted as unknown[]).map((e) => {
    const entry = e as Record<string, unknown>;
    if (
      entry === null || typeof entry !== "object" || typeof entry.path !== "string" ||
      typeof entry.reason !== "string"
    ) bad();
    return { path: entry.path as string, reason: entry.reason as string };
  });
  return {
    sessionId: o.session_id as string,
    event: o.event as string,
    position: o.position as number,
    prompt: o.prompt as number | null,
    duplicate: o.duplicate as boolean,
    omitted,
    omittedMore: o.omitted_more as number,
    ...(o.transcript === undefined ? {} : { transcript: transcriptMark(o.transcript, bad) }),
  };
}

/** Checks the transcript mark a watch process answered (by form). */
function transcriptMark(
  value: unknown,
  bad: () => never,
): NonNullable<NonNullable<CreateResult["agent"]>["transcript"]> | null {
  if (value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) bad();
  const o = value as Record<string, unknown>;
  const count = (v: unknown) =>
    v === null || (typeof v === "number" && Number.isSafeInteger(v) && v >= 0);
  if (
    typeof o.path !== "string" || !count(o.len) || !count(o.chain) ||
    !(o.sha256 === null || (typeof o.sha256 === "string" && /^[0-9a-f]{64}$/.test(o.sha256))) ||
    typeof o.restarted !== "boolean" ||
    !(o.refused === null ||
      ["outside", "too_large", "unreadable", "off"].includes(o.refused as string))
  ) bad();
  return {
    path: o.path as string,
    len: o.len as number | null,
    sha256: o.sha256 as string | null,
    chain: o.chain as number | null,
    restarted: o.restarted as boolean,
    refused: o.refused as "outside" | "too_large" | "unreadable" | "off" | null,
  };
}
