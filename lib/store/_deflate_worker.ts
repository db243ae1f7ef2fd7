/**
 * The compression worker of {@linkcode DeflatePool} (see `_deflate_pool.ts`).
 *
 * It receives shared memory once, says it is ready, then compresses slot
 * after slot in order: a slot marked FULL holds `len` input bytes; the worker
 * writes the compressed bytes over them when that pays ({@linkcode packPays}),
 * records the outcome in `len` and marks the slot DONE. It never touches the
 * store, the filesystem or the network.
 * @module
 */
import { deflateRawSync } from "node:zlib";
import { DEFLATE_OPTIONS, packPays } from "./_pack.ts";
import { DONE, FULL, KEEP_RAW, READY, slotIndex, STOP, WORKER_FAILED } from "./_deflate_pool.ts";

interface Setup {
  control: SharedArrayBuffer;
  data: SharedArrayBuffer;
  slots: number;
  slotBytes: number;
}

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;

scope.onmessage = (event: MessageEvent<Setup>) => {
  const { slots, slotBytes } = event.data;
  const control = new Int32Array(event.data.control);
  const data = new Uint8Array(event.data.data);
  Atomics.store(control, READY, 1);
  Atomics.notify(control, READY);
  let slot = 0;
  for (;;) {
    const state = slotIndex(slot);
    for (;;) {
      if (Atomics.load(control, STOP) !== 0) {
        scope.close();
        return;
      }
      const now = Atomics.load(control, state);
      if (now === FULL) break;
      Atomics.wait(control, state, now, 250);
    }
    const length = Atomics.load(control, state + 1);
    const view = data.subarray(slot * slotBytes, slot * slotBytes + length);
    let outcome: number;
    try {
      // A private copy: zlib is not given memory another thread may write.
      const packed = deflateRawSync(view.slice(), DEFLATE_OPTIONS);
      if (packPays(length, packed.byteLength)) {
        view.set(packed);
        outcome = packed.byteLength;
      } else {
        outcome = KEEP_RAW;
      }
    } catch {
      outcome = WORKER_FAILED;
    }
    Atomics.store(control, state + 1, outcome);
    Atomics.store(control, state, DONE);
    Atomics.notify(control, state);
    slot = (slot + 1) % slots;
  }
};
