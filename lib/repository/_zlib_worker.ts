/**
 * The worker of {@linkcode ZlibPool} (see `zlib_pool.ts`).
 *
 * It receives shared memory once, says it is ready, then works slot after
 * slot in order: a slot marked FULL holds an operation and its input; the
 * worker writes its output over the input, records the outcome and marks
 * the slot DONE. It only transforms bytes: no store, filesystem or network.
 * @module
 */
import { createHash } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { DEFLATE_OPTIONS, packPays, sampleCompresses } from "./compression.ts";
import {
  DONE,
  FULL,
  KEEP_RAW,
  OP_DEFLATE,
  OP_HASH,
  OP_INFLATE,
  READY,
  slotIndex,
  STOP,
  WORKER_FAILED,
} from "./zlib_pool.ts";

interface Setup {
  control: SharedArrayBuffer;
  data: SharedArrayBuffer;
  digests: SharedArrayBuffer;
  slots: number;
  slotBytes: number;
}

// deno-lint-ignore no-explicit-any
const scope = globalThis as any;

scope.onmessage = (event: MessageEvent<Setup>) => {
  const { slots, slotBytes } = event.data;
  const control = new Int32Array(event.data.control);
  const data = new Uint8Array(event.data.data);
  const digests = new Uint8Array(event.data.digests);
  Atomics.store(control, READY, 1);
  Atomics.notify(control, READY);
  let slot = 0;
  for (;;) {
    const at = slotIndex(slot);
    for (;;) {
      if (Atomics.load(control, STOP) !== 0) {
        scope.close();
        return;
      }
      const now = Atomics.load(control, at);
      if (now === FULL) break;
      Atomics.wait(control, at, now, 250);
    }
    const op = Atomics.load(control, at + 1);
    const length = Atomics.load(control, at + 2);
    const size = Atomics.load(control, at + 3);
    const view = data.subarray(slot * slotBytes, slot * slotBytes + length);
    let outcome: number;
    try {
      // Private copies: zlib and the hash are not given memory another thread may write.
      const input = view.slice();
      if (op === OP_DEFLATE) {
        const packed = sampleCompresses(input, (sample) => deflateRawSync(sample, DEFLATE_OPTIONS))
          ? deflateRawSync(input, DEFLATE_OPTIONS)
          : null;
        outcome = packed !== null && packPays(length, packed.byteLength)
          ? packed.byteLength
          : KEEP_RAW;
        if (packed !== null && outcome !== KEEP_RAW) view.set(packed);
      } else if (op === OP_INFLATE || op === OP_HASH) {
        const plain = op === OP_HASH
          ? input
          : inflateRawSync(input, { maxOutputLength: Math.max(1, size) });
        if (plain.byteLength > slotBytes) throw new RangeError("output larger than a slot");
        if (op === OP_INFLATE) data.set(plain, slot * slotBytes);
        digests.set(createHash("sha256").update(plain).digest(), slot * 32);
        outcome = plain.byteLength;
      } else {
        outcome = WORKER_FAILED;
      }
    } catch {
      outcome = WORKER_FAILED;
    }
    Atomics.store(control, at + 2, outcome);
    Atomics.store(control, at, DONE);
    Atomics.notify(control, at);
    slot = (slot + 1) % slots;
  }
};
