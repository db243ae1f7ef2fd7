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
import { IncrementalCapture, type IncrementalStatus } from "../../workspace/incremental.ts";
import type { Store } from "../../repository/store.ts";
import type { CreateResult } from "../../history/create.ts";
import { checkpoint, type CheckpointOptions } from "../../history/checkpoint.ts";

/** Options of a {@linkcode WatchService}. */
export interface WatchServiceOptions {
  /** Largest file captured (the `create` default when omitted). */
  maxFileBytes?: number;
  /** Use filesystem events (default true); false makes every checkpoint walk. */
  watch?: boolean;
  /** Milliseconds between reads of pending events while idle (default 1000; 0: never). */
  pollMs?: number;
}

export type { CheckpointOptions } from "../../history/checkpoint.ts";

/** What {@linkcode WatchService.status} reports. */
export interface WatchServiceStatus {
  /** Workspace watched. */
  workspace: string;
  /** Store written. */
  store: string;
  /** Key id checkpoints are signed with. */
  keyId: string;
  /** Checkpoints served. */
  checkpoints: number;
  /** How captures are made. */
  capture: IncrementalStatus;
}

/** How captures are made, in the watch protocol's shape (docs/FORMAT.md §15, snake_case). */
export function captureStatusWire(s: IncrementalStatus): Record<string, unknown> {
  return {
    mode: s.mode,
    reason: s.reason,
    watched: s.watched,
    full_walks: s.fullWalks,
    incremental: s.incremental,
    last_changed: s.lastChanged,
  };
}

/** A {@linkcode WatchServiceStatus} in the watch protocol's shape (`status`, docs/FORMAT.md §15). */
export function serviceStatusWire(s: WatchServiceStatus): Record<string, unknown> {
  return {
    workspace: s.workspace,
    store: s.store,
    key_id: s.keyId,
    checkpoints: s.checkpoints,
    capture: captureStatusWire(s.capture),
  };
}

/** Checkpoints one store's workspace, incrementally. */
export class WatchService {
  /** The incremental capture. */
  private readonly engine: IncrementalCapture;
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
      try {
        const result = await checkpoint(this.store, this.signer, options, (captureOptions) => {
          captured = true;
          const ownLimit = captureOptions.maxFileBytes === undefined ||
            captureOptions.maxFileBytes === this.maxFileBytes;
          return ownLimit ? this.engine.capture() : captureWorkspace(this.store, captureOptions);
        });
        // The engine notices a gc retention runs and walks the workspace again.
        this.served += 1;
        return result;
      } catch (error) {
        // Blobs of a capture whose transaction did not commit are gone.
        if (captured) this.engine.invalidate();
        throw error;
      }
    });
  }

  private busy = false;

  /** While idle: reads pending events and compresses stored manifests. */
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
      keyId: this.signer.keyId,
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
