/**
 * A long-lived checkpointing service for one store (layer: watch, above
 * snapshot): it keeps the store open, the signing identity loaded and an
 * {@linkcode IncrementalCapture} watching the workspace, so a checkpoint
 * costs in proportion to what changed. `ctxsnap watch` serves it on a socket
 * (`server.ts`) and `ctxsnap mcp` calls it directly. Checkpoints run one at
 * a time, in arrival order.
 *
 * @example
 * ```ts
 * import { Store } from "../../repository/store.ts";
 * import { loadOrCreateIdentity } from "../../keys/identity.ts";
 * import { WatchService } from "./service.ts";
 * const ws = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${ws}/a.txt`, "a\n");
 * const store = Store.init(`${ws}/.ctxsnap`, ws);
 * const service = new WatchService(store, await loadOrCreateIdentity(await Deno.makeTempDir()));
 * const first = await service.checkpoint({ reason: "first" });
 * await Deno.writeTextFile(`${ws}/a.txt`, "b\n");
 * const second = await service.checkpoint({ reason: "second" });
 * if (second.envelope.body.parent !== first.id) throw new Error("not chained");
 * service.close();
 * store.close();
 * ```
 * @module
 */
import { clearInterval, setInterval } from "node:timers";
import type { Identity } from "../../keys/identity.ts";
import { captureWorkspace } from "../../workspace/capture.ts";
import type { SkippedEntry } from "../../format/tree.ts";
import { IncrementalCapture, type IncrementalStatus } from "../../workspace/incremental.ts";
import type { Store } from "../../repository/store.ts";
import { type CreateOptions, type CreateResult, createSnapshot } from "../../history/create.ts";
import { type AgentEvent, recordAgentEvent } from "../../history/agent.ts";
import { readRetention, retainAfterCheckpoint } from "../../history/retention.ts";

/** Options of a {@linkcode WatchService}. */
export interface WatchServiceOptions {
  /** Largest file captured (the `create` default when omitted). */
  maxFileBytes?: number;
  /** Use filesystem events (default true); false makes every checkpoint walk. */
  watch?: boolean;
  /** Milliseconds between reads of pending events while idle (default 1000; 0: never). */
  pollMs?: number;
}

/**
 * The options of one checkpoint: those of `createSnapshot` a client may
 * give, and an agent event (which sets the source, reason and metadata).
 */
export type CheckpointOptions =
  & { agent?: AgentEvent }
  & Pick<
    CreateOptions,
    | "reason"
    | "context"
    | "workspace"
    | "source"
    | "session"
    | "branch"
    | "expectHead"
    | "allowUnchanged"
    | "metadata"
    | "maxFileBytes"
  >;

/** What {@linkcode WatchService.status} reports. */
export interface WatchServiceStatus {
  /** Workspace watched. */
  workspace: string;
  /** Store written. */
  store: string;
  /** Key id checkpoints are signed with. */
  key_id: string;
  /** Checkpoints served. */
  checkpoints: number;
  /** How captures are made. */
  capture: IncrementalStatus;
}

/** Checkpoints one store's workspace, incrementally. */
export class WatchService {
  /** The incremental capture. */
  readonly engine: IncrementalCapture;
  private queue: Promise<unknown> = Promise.resolve();
  private served = 0;
  private readonly maxFileBytes: number | undefined;
  private readonly timer: ReturnType<typeof setInterval> | null;

  /** Serves `store`, signing with `signer`; the caller keeps owning `store`. */
  constructor(
    readonly store: Store,
    readonly signer: Identity,
    options: WatchServiceOptions = {},
  ) {
    this.maxFileBytes = options.maxFileBytes;
    this.engine = new IncrementalCapture(store, {
      ...(options.maxFileBytes !== undefined ? { maxFileBytes: options.maxFileBytes } : {}),
      ...(options.watch === false ? { watch: false } : {}),
    });
    const pollMs = options.pollMs ?? 1000;
    // While idle: read events, so the kernel's queue stays short, and
    // compress the manifests checkpoints stored uncompressed.
    this.timer = pollMs > 0 ? setInterval(() => this.idle(), pollMs) : null;
    this.timer?.unref();
  }

  /**
   * Walks the workspace once now (the first capture is a full walk), so the
   * first checkpoint asked for costs what any other does.
   */
  warm(): Promise<void> {
    return this.run(() => {
      try {
        this.store.transaction("capture", () => this.engine.capture());
      } catch (error) {
        this.engine.invalidate();
        throw error;
      }
      return Promise.resolve();
    });
  }

  /** Creates a checkpoint (see `createSnapshot`), after the ones already asked for. */
  checkpoint(options: CheckpointOptions): Promise<CreateResult> {
    return this.run(async () => {
      let captured = false;
      let last: { treeId: string; skipped: SkippedEntry[] } | null = null;
      const { agent, ...rest } = options;
      try {
        // A policy file that cannot be used stops the checkpoint before it is made (exit 7).
        const policy = readRetention(this.store.dir);
        const make = (opts: CreateOptions) =>
          createSnapshot(this.store, this.signer, {
            ...opts,
            capture: (captureOptions) => {
              captured = true;
              const ownLimit = captureOptions.maxFileBytes === undefined ||
                captureOptions.maxFileBytes === this.maxFileBytes;
              const result = ownLimit
                ? this.engine.capture()
                : captureWorkspace(this.store, captureOptions);
              last = result;
              return result;
            },
          });
        const skippedOf = (treeId: string) => {
          const kept = last as { treeId: string; skipped: SkippedEntry[] } | null;
          return kept !== null && kept.treeId === treeId ? kept.skipped : null;
        };
        const result = agent === undefined
          ? await make(rest)
          : await recordAgentEvent(this.store, rest, agent, make, skippedOf);
        this.served += 1;
        // The engine notices a gc this runs and walks the workspace again.
        if (result.created) retainAfterCheckpoint(this.store, policy);
        return result;
      } catch (error) {
        // Blobs of a capture whose transaction did not commit are gone.
        if (captured) this.engine.invalidate();
        throw error;
      }
    });
  }

  private busy = false;

  private idle(): void {
    if (this.busy) return;
    this.engine.poll();
    this.pack();
  }

  /** Compresses the manifests stored uncompressed (after the checkpoints queued before). */
  pack(): Promise<void> {
    const ids = this.engine.takeUnpacked();
    if (ids.length === 0) return Promise.resolve();
    return this.run(() => {
      try {
        this.store.transaction("pack", () => {
          for (const id of ids) this.store.packTree(id);
        });
      } catch {
        // Busy or failed: they stay uncompressed, which is as valid.
      }
      return Promise.resolve();
    });
  }

  /** Runs `fn` after everything queued before it; nothing else uses the store meanwhile. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(async () => {
      this.busy = true;
      try {
        return await fn();
      } finally {
        this.busy = false;
      }
    });
    this.queue = next.catch(() => {});
    return next;
  }

  /** What this service has done so far. */
  status(): WatchServiceStatus {
    return {
      workspace: this.store.workspaceRoot,
      store: this.store.dir,
      key_id: this.signer.keyId,
      checkpoints: this.served,
      capture: this.engine.status,
    };
  }

  /** Stops watching (the store stays open: the caller closes it). */
  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.engine.close();
  }
}
