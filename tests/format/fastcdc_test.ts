/**
 * Tests of the content-defined chunker (docs/FORMAT.md 8.6): its boundaries
 * equal the vectors that an independent implementation written from the
 * spec (`tests/vectors/fastcdc/reference.py`) produced, streaming gives the
 * same boundaries whatever the piece sizes, and a one-byte change of a large
 * file changes at most 2 MiB of chunks.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  chunkBoundaries,
  Chunker,
  FASTCDC_AVG,
  FASTCDC_MASK_L,
  FASTCDC_MASK_S,
  FASTCDC_MAX,
  FASTCDC_MIN,
  GEAR,
} from "../../lib/format/fastcdc.ts";
import { assert, assertEquals } from "../_assert.ts";

interface Case {
  name: string;
  input: { kind: "zeros" | "xorshift32"; length: number; seed?: number; invert?: number };
  sha256: string;
  cuts: number[];
}
const vectors = JSON.parse(
  await Deno.readTextFile(new URL("../vectors/fastcdc/vectors.json", import.meta.url)),
) as {
  params: Record<string, number>;
  gear_sha256: string;
  cases: Case[];
};

/** The spec's xorshift32 byte stream (FORMAT.md 8.6, vectors). */
function xorshift(seed: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = seed >>> 0;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

function input(c: Case): Uint8Array {
  const data = c.input.kind === "zeros"
    ? new Uint8Array(c.input.length)
    : xorshift(c.input.seed!, c.input.length);
  if (c.input.invert !== undefined) data[c.input.invert]! ^= 0xff;
  return data;
}

function sha256(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

function streamed(data: Uint8Array, piece: number): number[] {
  const cuts: number[] = [];
  let at = 0;
  const chunker = new Chunker((chunk) => {
    at += chunk.length;
    cuts.push(at);
  });
  for (let i = 0; i < data.length; i += piece) chunker.push(data.subarray(i, i + piece));
  chunker.finish();
  return cuts;
}

Deno.test("the chunker's parameters and gear table are the ones the vectors were made with", () => {
  assertEquals(vectors.params, {
    min: FASTCDC_MIN,
    avg: FASTCDC_AVG,
    max: FASTCDC_MAX,
    mask_s: FASTCDC_MASK_S,
    mask_l: FASTCDC_MASK_L,
  });
  const bytes = new Uint8Array(1024);
  const view = new DataView(bytes.buffer);
  GEAR.forEach((g, i) => view.setUint32(i * 4, g));
  assertEquals(sha256(bytes), vectors.gear_sha256);
});

Deno.test("the written-out gear table is the one FORMAT.md derives from SHA-256", () => {
  const prefix = new TextEncoder().encode("ctxsnap-fastcdc-gear/v1");
  assertEquals(GEAR.length, 256);
  for (let i = 0; i < 256; i++) {
    const digest = createHash("sha256").update(prefix).update(Uint8Array.of(i)).digest();
    assertEquals(GEAR[i], digest.readUInt32BE(0), `entry ${i}`);
  }
});

for (const c of vectors.cases) {
  Deno.test(`chunkBoundaries matches the reference implementation: ${c.name}`, () => {
    const data = input(c);
    assertEquals(sha256(data), c.sha256, "the generated input");
    assertEquals(chunkBoundaries(data), c.cuts);
  });
}

Deno.test("Chunker gives the same boundaries whatever the sizes of the pieces pushed", () => {
  const c = vectors.cases.find((v) => v.name === "8 MiB and a tail of noise")!;
  const data = input(c);
  for (const piece of [1_000_003, 65_536, 4093, FASTCDC_MAX + 7, data.length]) {
    assertEquals(streamed(data, piece), c.cuts, `pieces of ${piece}`);
  }
});

Deno.test("every chunk is between the minimum and the maximum, but the last", () => {
  for (const c of vectors.cases) {
    c.cuts.forEach((cut, i) => {
      const size = cut - (i === 0 ? 0 : c.cuts[i - 1]!);
      assert(size <= FASTCDC_MAX, `${c.name}: chunk ${i} is ${size}`);
      if (i < c.cuts.length - 1) assert(size >= FASTCDC_MIN, `${c.name}: chunk ${i} is ${size}`);
    });
  }
});

Deno.test("changing one byte of a 24 MiB file changes at most 2 MiB of chunks", () => {
  const data = xorshift(11, 24 * 1024 * 1024);
  const chunks = (bytes: Uint8Array) => {
    const ids = new Map<string, number>();
    let at = 0;
    for (const cut of chunkBoundaries(bytes)) {
      ids.set(sha256(bytes.subarray(at, cut)), cut - at);
      at = cut;
    }
    return ids;
  };
  const before = chunks(data);
  for (const offset of [0, 5_000_000, 12_345_678, data.length - 1]) {
    const edited = data.slice();
    edited[offset]! ^= 0x01;
    let added = 0;
    for (const [id, size] of chunks(edited)) if (!before.has(id)) added += size;
    assert(added > 0 && added <= 2 * 1024 * 1024, `byte ${offset}: ${added} new bytes of chunks`);
  }
});
