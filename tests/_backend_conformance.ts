/**
 * The one conformance suite every remote backend passes (restic's
 * approach): `file://` in `tests/remote/remote_test.ts` (the fast suite) and
 * `s3://` against a real OpenStack Swift in `tests/remote/swift_suite.ts`.
 * It checks exactly the guarantees lib/remote/backend.ts promises and the
 * layout relies on: absent keys, atomic replacement, sorted complete
 * listings, byte bounds, multipart upload and abort, concurrent writers,
 * delete, and refusal of malformed keys.
 *
 * @module
 */
import type { Backend } from "../lib/remote/backend.ts";
import { IntegrityError } from "../lib/errors.ts";
import { assert, assertEquals, assertRejects } from "./_assert.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function pattern(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** A fresh, empty backend and a way to throw it away. */
export interface ConformanceSubject {
  /** The backend under test (empty). */
  backend: Backend;
  /** Removes whatever it holds. */
  cleanup(): Promise<void>;
}

/** Registers the conformance test of one backend. */
export function backendConformance(
  name: string,
  open: () => Promise<ConformanceSubject>,
  options: { ignore?: boolean } = {},
): void {
  Deno.test({
    name: `backend conformance (${name})`,
    ignore: options.ignore ?? false,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn(t) {
      const subject = await open();
      const b = subject.backend;
      try {
        await t.step("an absent key reads as absent everywhere", async () => {
          assertEquals(await b.get("objects/00/none", 10), null);
          assertEquals(await b.getStream("objects/00/none", 10, () => {}), false);
          assertEquals(await b.head("objects/00/none"), null);
          assertEquals(await b.list(""), []);
          await b.delete("objects/00/none"); // not an error
        });

        await t.step("put, get, head and getStream round-trip every byte value", async () => {
          const bytes = new Uint8Array(256 * 3).map((_, i) => i & 0xff);
          await b.put("a/all-bytes", bytes);
          assertEquals(await b.get("a/all-bytes", bytes.length), bytes);
          assertEquals(await b.head("a/all-bytes"), { key: "a/all-bytes", size: bytes.length });
          const big = pattern(3 * 1024 * 1024 + 17, 7);
          await b.put("a/big", big);
          const chunks: Uint8Array[] = [];
          assert(await b.getStream("a/big", big.length, (c) => chunks.push(c.slice())));
          const joined = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
          let at = 0;
          for (const c of chunks) {
            joined.set(c, at);
            at += c.length;
          }
          assertEquals(joined, big);
          await b.put("a/empty", new Uint8Array());
          assertEquals(await b.get("a/empty", 0), new Uint8Array());
        });

        await t.step("getRange reads exactly a byte range, refuses one past the end", async () => {
          const bytes = pattern(100_000, 5);
          await b.put("a/ranged", bytes);
          assertEquals(await b.getRange("a/ranged", 0, 1), bytes.subarray(0, 1));
          assertEquals(
            await b.getRange("a/ranged", 12_345, 54_321),
            bytes.subarray(12_345, 66_666),
          );
          assertEquals(await b.getRange("a/ranged", 99_990, 10), bytes.subarray(99_990));
          assertEquals(await b.getRange("a/none", 0, 10), null);
          await assertRejects(() => b.getRange("a/ranged", 99_990, 11), IntegrityError);
        });

        await t.step("a put replaces the object whole", async () => {
          await b.put("a/replace", encoder.encode("first version, longer"));
          await b.put("a/replace", encoder.encode("second"));
          assertEquals(decoder.decode((await b.get("a/replace", 100))!), "second");
          assertEquals((await b.head("a/replace"))?.size, 6);
        });

        await t.step("reads refuse more than their byte bound", async () => {
          await b.put("a/bounded", pattern(1000, 3));
          await assertRejects(() => b.get("a/bounded", 999), IntegrityError);
          await assertRejects(() => b.getStream("a/bounded", 999, () => {}), IntegrityError);
          assertEquals((await b.get("a/bounded", 1000))?.length, 1000);
        });

        await t.step("list returns every key under a prefix, sorted, across pages", async () => {
          const keys: string[] = [];
          for (let i = 0; i < 23; i++) {
            keys.push(
              `objects/${(i % 4).toString(16).padStart(2, "0")}/k${String(i).padStart(3, "0")}`,
            );
          }
          keys.push("refs/0123456789abcdef/main@exp/one/0000000000000001-00112233aabbccdd.json");
          for (const key of keys) await b.put(key, encoder.encode(key));
          const objects = await b.list("objects/");
          assertEquals(
            objects.map((o) => o.key),
            keys.filter((k) => k.startsWith("objects/")).sort(),
          );
          for (const o of objects) assertEquals(o.size, encoder.encode(o.key).length);
          const refs = await b.list("refs/0123456789abcdef/");
          assertEquals(refs.map((o) => o.key), [keys[keys.length - 1]]);
          assertEquals((await b.list("objects/02/")).length, 6);
          assertEquals(await b.list("nothing/"), []);
          const all = await b.list("");
          assertEquals(all.map((o) => o.key), [...all.map((o) => o.key)].sort());
        });

        await t.step("a multipart upload appears whole on complete, never on abort", async () => {
          const part1 = pattern(b.minPartSize, 11);
          const part2 = pattern(1234, 12);
          const upload = await b.startMultipart("m/complete");
          await upload.putPart(1, part1);
          assertEquals(await b.head("m/complete"), null);
          await upload.putPart(2, part2);
          await upload.complete();
          const got = await b.get("m/complete", part1.length + part2.length);
          assertEquals(got?.length, part1.length + part2.length);
          assertEquals(got!.subarray(0, part1.length), part1);
          assertEquals(got!.subarray(part1.length), part2);
          const aborted = await b.startMultipart("m/aborted");
          await aborted.putPart(1, part1);
          await aborted.abort();
          assertEquals(await b.head("m/aborted"), null);
          assert(!(await b.list("m/")).some((o) => o.key === "m/aborted"));
        });

        await t.step("concurrent writers of one key and of many keys", async () => {
          const same = pattern(200_000, 5);
          await Promise.all(Array.from({ length: 8 }, () => b.put("c/same", same)));
          assertEquals(await b.get("c/same", same.length), same);
          await Promise.all(
            Array.from({ length: 16 }, (_, i) => b.put(`c/many/${i}`, encoder.encode(`v${i}`))),
          );
          assertEquals((await b.list("c/many/")).length, 16);
        });

        await t.step("delete removes an object and its listing", async () => {
          await b.put("d/gone", encoder.encode("x"));
          await b.delete("d/gone");
          assertEquals(await b.head("d/gone"), null);
          assertEquals(await b.list("d/"), []);
          await b.flush();
        });

        await t.step("malformed keys and prefixes are refused before any request", async () => {
          for (const key of ["", "/abs", "a//b", "../x", "a/../b", "a/./b", "a b", "a\\b"]) {
            await assertRejects(() => b.put(key, new Uint8Array([1])));
            await assertRejects(() => b.get(key, 1));
          }
          await assertRejects(() => b.list("objects"));
          await assertRejects(() => b.list("../"));
        });
      } finally {
        await subject.cleanup();
      }
    },
  });
}
