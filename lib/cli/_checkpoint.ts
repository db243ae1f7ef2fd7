/**
 * One checkpoint for `ctxsnap create` and the agent hook: handed to the
 * `ctxsnap watch` process serving the store when one runs (it knows from
 * filesystem events what changed), made here with a full walk otherwise.
 * The store, identity and capture modules are loaded only on that second
 * path, so a handed-off checkpoint starts little more than the client; the
 * store must be registered as this user's (`lib/store/trust.ts`) before
 * its watch process is asked.
 *
 * @module
 */
import * as path from "node:path";
import { parseJson } from "../encoding/canonical_json.ts";
import { IntegrityError } from "../errors.ts";
import { getEnv } from "../runtime.ts";
import type { CreateResult } from "../snapshot/create.ts";
import type { CheckpointOptions } from "../watch/service.ts";
import type { CheckpointArgs } from "../watch/protocol.ts";
import { askWatch } from "../watch/client.ts";
import { configDir } from "../keys/config_dir.ts";
import { locateStore } from "../store/locate.ts";
import { checkRegistered } from "../store/trust.ts";
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
    return { result: await fromWatch(handed.result), storeDir, via: "watch" };
  }
  const [
    { identity, openStore },
    { createSnapshot },
    { withAgentEvent },
    { readRetention, retainAfterCheckpoint },
  ] = await Promise.all([
    import("./command.ts"),
    import("../snapshot/create.ts"),
    import("../snapshot/agent.ts"),
    import("../snapshot/retention.ts"),
  ]);
  const signer = await identity();
  const store = openStore(ctx);
  try {
    const { agent, ...rest } = request;
    const options = agent === undefined ? rest : withAgentEvent(store, rest, agent);
    // A policy file that cannot be used stops the checkpoint before it is made (exit 7).
    const policy = readRetention(store.dir);
    const result = await createSnapshot(store, signer, options);
    if (result.created) retainAfterCheckpoint(store, policy);
    return { result, storeDir: store.dir, via: "local" };
  } finally {
    store.close();
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
  const { validateBody } = await import("../snapshot/body.ts");
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
  };
}
