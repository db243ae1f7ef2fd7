/**
 * Packed remotes (`ctxsnap.remote/v2`): the pack index format against its
 * FORMAT.md vector, each refusal of a malformed index, push packing small
 * objects and skipping what anyone already packed, pull fetching only the
 * packs it lacks, v1 remotes still pulling, and every hostile pack or index
 * refused end to end with nothing landing.
 *
 * @module
 */
import { join } from "node:path";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { toHex } from "../../lib/encoding/hex.ts";
import { IntegrityError } from "../../lib/errors.ts";
import { listBranches, readEnvelope } from "../../lib/history/timeline.ts";
import type { Backend } from "../../lib/remote/backend.ts";
import { FileBackend } from "../../lib/remote/file_backend.ts";
import {
  encodeObject,
  MARKER_KEY,
  objectKey,
  REMOTE_FORMAT,
  REMOTE_FORMAT_V1,
} from "../../lib/remote/layout.ts";
import {
  encodeIndex,
  INDEX_ENTRY_BYTES,
  INDEX_HEADER_BYTES,
  indexKey,
  MAX_PACK_BYTES,
  type PackIndex,
  packKey,
  PackWriter,
  parseIndex,
} from "../../lib/remote/pack.ts";
import { loadRemoteIndex } from "../../lib/remote/_remote_index.ts";
import { push } from "../../lib/remote/push.ts";
import { pull } from "../../lib/remote/pull.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../_assert.ts";
import { prng } from "../_util.ts";
import {
  assertVerifies,
  counts,
  FILES,
  type Machine,
  machine,
  refOf,
  snap,
  trusting,
} from "../_remote.ts";

const encoder = new TextEncoder();

// --- the index format -------------------------------------------------------------------------

/** The vector of FORMAT.md §13.8: "hello\n" (raw) then a tree of 39 bytes (raw). */
const VECTOR = {
  pack: "aa03f61c4c11169817844e457664cc7e543b24dd67d43c5db444ec4b3dedbdf9",
  packHex: "0068656c6c6f0a00" +
    "7b22656e7472696573223a5b5d2c22736b6970706564223a5b5d2c2276657273696f6e223a317d",
  indexHex: "6374787061636b31" +
    "aa03f61c4c11169817844e457664cc7e543b24dd67d43c5db444ec4b3dedbdf9" +
    "0000002f" + "00000002" +
    "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" +
    "00" + "00000000" + "00000007" + "00000006" +
    "d7790d1a20acc201fcb8742a2dbc8aae10d8ac88130b1dccc41d99cb5ad300e1" +
    "01" + "00000007" + "00000028" + "00000027",
};

Deno.test("pack index: the FORMAT.md vector is written byte for byte and parses back", async () => {
  const writer = new PackWriter();
  const hello = encoder.encode("hello\n");
  const tree = encoder.encode('{"entries":[],"skipped":[],"version":1}');
  writer.add(sha256Hex(hello), "blob", hello.length, encodeObject(hello, 0));
  writer.add(sha256Hex(tree), "tree", tree.length, encodeObject(tree, 0));
  const pack = writer.finish();
  assertEquals(pack.id, VECTOR.pack);
  assertEquals(toHex(pack.bytes), VECTOR.packHex);
  assertEquals(toHex(pack.index), VECTOR.indexHex);
  const parsed = parseIndex(pack.index, pack.id);
  assertEquals(parsed.packLength, 47);
  assertEquals(parsed.entries.map((e) => [e.kind, e.offset, e.length, e.size]), [
    ["blob", 0, 7, 6],
    ["tree", 7, 40, 39],
  ]);
  // The spec carries the same bytes.
  const format = (await Deno.readTextFile(new URL("../../docs/FORMAT.md", import.meta.url)))
    .replace(/[\s`]/g, "");
  assert(format.includes(VECTOR.indexHex), "FORMAT.md §13.8 lacks the index vector");
  assert(format.includes(VECTOR.packHex), "FORMAT.md §13.8 lacks the pack vector");
  assert(format.includes(VECTOR.pack), "FORMAT.md §13.8 lacks the pack id");
});

/** A valid three-entry index to edit: blobs of 10, 20 and 30 bytes, raw. */
function sampleIndex(): PackIndex {
  return {
    pack: "ab".repeat(32),
    packLength: 63,
    entries: [
      { id: "01".repeat(32), kind: "blob", offset: 0, length: 11, size: 10 },
      { id: "02".repeat(32), kind: "blob", offset: 11, length: 21, size: 20 },
      { id: "03".repeat(32), kind: "blob", offset: 32, length: 31, size: 30 },
    ],
  };
}

function refusedIndex(bytes: Uint8Array, reason: RegExp, pack = "ab".repeat(32)): void {
  const error = assertThrows(() => parseIndex(bytes, pack), IntegrityError);
  assert(reason.test(error.message), `${error.message} does not match ${reason}`);
}

Deno.test("pack index: a sample index round-trips", () => {
  const index = sampleIndex();
  assertEquals(parseIndex(encodeIndex(index), index.pack), index);
});

Deno.test("pack index: another magic, or an index filed under another pack's key, is refused", () => {
  const bytes = encodeIndex(sampleIndex());
  const other = bytes.slice();
  other[7] = 0x32; // "ctxpack2"
  refusedIndex(other, /not a ctxpack1 index/);
  refusedIndex(bytes, /names another pack/, "cd".repeat(32));
});

Deno.test("pack index: a truncated or padded index is refused", () => {
  const bytes = encodeIndex(sampleIndex());
  refusedIndex(bytes.subarray(0, bytes.length - 1), /has 182 bytes, not 183/);
  refusedIndex(bytes.subarray(0, 20), /not a ctxpack1 index/);
  const padded = new Uint8Array(bytes.length + 1);
  padded.set(bytes);
  refusedIndex(padded, /has 184 bytes, not 183/);
});

Deno.test("pack index: entries out of order or repeated are refused", () => {
  const index = sampleIndex();
  const bytes = encodeIndex(index);
  // Swap the first two entries' ids in place: out of order.
  const swapped = bytes.slice();
  swapped.set(
    bytes.subarray(
      INDEX_HEADER_BYTES + INDEX_ENTRY_BYTES,
      INDEX_HEADER_BYTES + INDEX_ENTRY_BYTES + 32,
    ),
    INDEX_HEADER_BYTES,
  );
  swapped.set(
    bytes.subarray(INDEX_HEADER_BYTES, INDEX_HEADER_BYTES + 32),
    INDEX_HEADER_BYTES + INDEX_ENTRY_BYTES,
  );
  refusedIndex(swapped, /out of order or twice/);
  index.entries[1]!.id = index.entries[0]!.id;
  refusedIndex(encodeIndex(index), /out of order or twice/);
});

Deno.test("pack index: overlapping ranges are refused", () => {
  const index = sampleIndex();
  index.entries[1]!.offset = 5; // overlaps the first
  index.entries[2]!.offset = 26;
  index.packLength = 57;
  refusedIndex(encodeIndex(index), /overlapping ranges/);
});

Deno.test("pack index: a range past the end of the pack, or bytes left unindexed, are refused", () => {
  const index = sampleIndex();
  index.entries[2]!.offset = 40;
  refusedIndex(encodeIndex(index), /past the end of the pack/);
  const gap = sampleIndex();
  gap.packLength = 64;
  refusedIndex(encodeIndex(gap), /unindexed/);
  const hole = sampleIndex();
  hole.entries[2]!.offset = 33;
  hole.packLength = 64;
  refusedIndex(encodeIndex(hole), /unindexed/);
});

Deno.test("pack index: oversize sizes, lengths, packs and entry counts are refused", () => {
  const big = sampleIndex();
  big.entries[0]!.size = 16 * 1024 * 1024 + 1;
  refusedIndex(encodeIndex(big), /oversize/);
  const long = sampleIndex();
  long.entries[0]!.length = 1000; // more than 10 bytes can encode to
  long.entries[1]!.offset = 1000;
  long.entries[2]!.offset = 1021;
  long.packLength = 1052;
  refusedIndex(encodeIndex(long), /oversize/);
  const empty = sampleIndex();
  empty.entries[0]!.length = 0;
  refusedIndex(encodeIndex(empty), /oversize/);
  const huge = sampleIndex();
  huge.packLength = MAX_PACK_BYTES + 1;
  refusedIndex(encodeIndex(huge), /more than 67108864 bytes/);
  const header = encodeIndex(sampleIndex());
  new DataView(header.buffer).setUint32(44, 65_537);
  refusedIndex(header, /has 65537 entries/);
  const kind = encodeIndex(sampleIndex());
  kind[INDEX_HEADER_BYTES + 32] = 2;
  refusedIndex(kind, /kind 2/);
});

// --- push and pull ------------------------------------------------------------------------------

/** A backend that records the keys read, and every read and listing in order. */
class Recording implements Backend {
  readonly gets: string[] = [];
  readonly log: string[] = [];
  constructor(private readonly inner: Backend) {}
  get location(): string {
    return this.inner.location;
  }
  get minPartSize(): number {
    return this.inner.minPartSize;
  }
  get(key: string, maxBytes: number) {
    this.gets.push(key);
    this.log.push(`get ${key}`);
    return this.inner.get(key, maxBytes);
  }
  getStream(key: string, maxBytes: number, onChunk: (chunk: Uint8Array) => void) {
    this.gets.push(key);
    return this.inner.getStream(key, maxBytes, onChunk);
  }
  getRange(key: string, offset: number, length: number) {
    this.gets.push(`${key}@${offset}+${length}`);
    return this.inner.getRange(key, offset, length);
  }
  head(key: string) {
    return this.inner.head(key);
  }
  put(key: string, data: Uint8Array) {
    return this.inner.put(key, data);
  }
  list(prefix: string) {
    this.log.push(`list ${prefix}`);
    return this.inner.list(prefix);
  }
  delete(key: string) {
    return this.inner.delete(key);
  }
  startMultipart(key: string) {
    return this.inner.startMultipart(key);
  }
  flush() {
    return this.inner.flush();
  }
}

async function withRemote(fn: (remote: FileBackend, dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-pack-" });
  try {
    await fn(new FileBackend(join(dir, "remote")), join(dir, "remote"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("push packs small objects: trees and blobs in a pack each with an index, a large blob under its own key", async () => {
  const large = new Uint8Array(5 * 1024 * 1024).map((_, i) => (i * 7919 + (i >> 9)) & 255);
  const alice = await machine({ ...FILES, "big.bin": large });
  try {
    await withRemote(async (remote) => {
      const head = await snap(alice);
      const result = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assertEquals(result.packs, 2);
      const index = await loadRemoteIndex(remote, 4);
      assertEquals(index.refused, []);
      const kinds = [...index.packs.values()].map((
        p,
      ) => [...new Set(p.entries.map((e) => e.kind))]);
      assertEquals(kinds.map((k) => k.join()).sort(), ["blob", "tree"]);
      const root = (await readEnvelope(alice.store, head)).body.workspace!.tree;
      assertEquals(index.byId.get(root)?.entry.kind, "tree");
      for (const text of Object.values(FILES)) {
        assertEquals(index.byId.get(sha256Hex(text))?.entry.kind, "blob");
      }
      assertEquals(index.byId.has(sha256Hex(large)), false);
      assert((await remote.head(objectKey(sha256Hex(large)))) !== null, "the large blob's key");
      assertEquals(
        new TextDecoder().decode((await remote.get(MARKER_KEY, 4096))!),
        `{"format":"${REMOTE_FORMAT}"}`,
      );
      // Requests: marker, snapshot probe, index listing, 2 packs + 2 indexes, the large blob,
      // the envelope, the ref listing and the ref: a handful, not one per object.
      assert(result.requests <= 12, `${result.requests} requests`);
      // Pushing again sends nothing.
      const again = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assertEquals([again.packs, again.objects.uploaded, again.refs[0]!.status], [
        0,
        0,
        "unchanged",
      ]);
    });
  } finally {
    await alice.close();
  }
});

Deno.test("push skips objects another signer already packed: the same files cost no object upload", async () => {
  const alice = await machine();
  const bob = await machine();
  try {
    await withRemote(async (remote) => {
      await snap(alice);
      const first = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assert(first.objects.uploaded > 0);
      await snap(bob);
      const second = await push(bob.store, remote, bob.me, "origin", { kind: "current" });
      assertEquals([second.objects.uploaded, second.packs], [0, 0]);
      assertEquals(second.objects.present, first.objects.uploaded);
      assertEquals(second.snapshots.uploaded, 1);
      // Bob changes one file: only its blob and the trees above it go up, in new packs.
      await Deno.writeTextFile(join(bob.ws, "src/main.ts"), "console.log('delta');\n");
      await snap(bob);
      const third = await push(bob.store, remote, bob.me, "origin", { kind: "current" });
      assertEquals(third.objects.uploaded, 3); // the blob, src/ and the root
      assertEquals(third.packs, 1); // small: trees and blobs in one pack
      const both = await machine({});
      try {
        const result = await pull(both.store, remote, trusting(both, alice, bob), "origin");
        for (const ref of result.refs) assertEquals([ref.status, ref.reason], ["updated", null]);
        await assertVerifies(both.store, trusting(both, alice, bob));
      } finally {
        await both.close();
      }
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("pull reads the indexes first (new ones only) and fetches only the packs holding what it lacks", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (inner) => {
      await snap(alice, "one");
      await push(alice.store, inner, alice.me, "origin", { kind: "current" });
      const remote = new Recording(inner);
      const first = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(first, alice.me.keyId).status, "updated");
      const oldPacks = remote.gets.filter((k) => k.startsWith("packs/"));
      assertEquals(oldPacks.length, 1); // a small push: one pack of trees and blobs
      assertEquals(remote.gets.filter((k) => k.startsWith("objects/")), []);
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "alpha two\n");
      await snap(alice, "two");
      const pushed = await push(alice.store, inner, alice.me, "origin", { kind: "current" });
      assertEquals(pushed.packs, 1);
      remote.gets.length = 0;
      const second = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(second, alice.me.keyId).status, "updated");
      assertEquals(second.objects.fetched, 2); // the blob and the root tree
      const packs = remote.gets.filter((k) => k.startsWith("packs/"));
      assertEquals(packs.length, 1);
      for (const key of packs) assert(!oldPacks.includes(key), `fetched ${key} again`);
      // Indexes read once are cached: only the new one was read.
      assertEquals(remote.gets.filter((k) => k.startsWith("index/")).length, 1);
      await assertVerifies(bob.store, trusting(bob, alice));
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("pull lists the indexes while it reads a newer ref record, and not at all when nothing is newer", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (inner) => {
      await snap(alice, "one");
      await push(alice.store, inner, alice.me, "origin", { kind: "current" });
      const remote = new Recording(inner);
      await pull(bob.store, remote, trusting(bob, alice), "origin");
      // Nothing newer: the marker, the refs listing and the record, no index read.
      remote.log.length = 0;
      const same = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(same, alice.me.keyId).status, "unchanged");
      assertEquals(remote.log.filter((l) => l.includes("index/") || l.includes("packs/")), []);
      assertEquals(same.requests, 3);
      // A newer record: the index listing starts before the record is read.
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "alpha two\n");
      await snap(alice, "two");
      await push(alice.store, inner, alice.me, "origin", { kind: "current" });
      remote.log.length = 0;
      const second = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(second, alice.me.keyId).status, "updated");
      const listed = remote.log.indexOf("list index/");
      const record = remote.log.findIndex((l) => l.startsWith("get refs/"));
      assert(listed !== -1 && record !== -1 && listed < record, remote.log.join("\n"));
      await assertVerifies(bob.store, trusting(bob, alice));
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("a v1 remote (one object per key) still pulls; a packed push to it upgrades the marker and re-sends nothing", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote) => {
      await snap(alice, "one");
      const loose = await push(alice.store, remote, alice.me, "origin", { kind: "current" }, {
        loose: true,
      });
      assertEquals(loose.packs, 0);
      assertEquals(
        new TextDecoder().decode((await remote.get(MARKER_KEY, 4096))!),
        `{"format":"${REMOTE_FORMAT_V1}"}`,
      );
      assertEquals((await remote.list("packs/")).length, 0);
      const pulled = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(pulled, alice.me.keyId).status, "updated");
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "alpha two\n");
      await snap(alice, "two");
      const packed = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assertEquals([packed.objects.uploaded, packed.packs], [2, 1]);
      assertEquals(
        new TextDecoder().decode((await remote.get(MARKER_KEY, 4096))!),
        `{"format":"${REMOTE_FORMAT}"}`,
      );
      // A mixed remote: the new snapshot's old objects are loose, its new ones packed.
      const again = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(again, alice.me.keyId).status, "updated");
      await assertVerifies(bob.store, trusting(bob, alice));
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

// --- hostile packs and indexes, end to end ------------------------------------------------------

interface Scene {
  alice: Machine;
  bob: Machine;
  remote: FileBackend;
  dir: string;
  /** The pack holding Alice's blobs, and its index. */
  blobs: PackIndex;
  /** The pack holding her trees, and its index. */
  trees: PackIndex;
}

/** Alice pushes one packed snapshot; `fn` makes the remote hostile, then Bob pulls. */
async function hostile(
  fn: (scene: Scene) => Promise<void>,
  reason: RegExp,
): Promise<void> {
  // Over 256 KiB, so trees and blobs go in packs of their own.
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote, dir) => {
      await Deno.writeFile(join(alice.ws, "notes/big.bin"), bigFile(300 * 1024));
      await snap(alice);
      await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      const index = await loadRemoteIndex(remote, 4);
      const packs = [...index.packs.values()];
      const blobs = packs.find((p) => p.entries.every((e) => e.kind === "blob"))!;
      const trees = packs.find((p) => p.entries.every((e) => e.kind === "tree"))!;
      await fn({ alice, bob, remote, dir, blobs, trees });
      const before = counts(bob.store);
      const result = await pull(bob.store, remote, trusting(bob, alice), "origin");
      const ref = refOf(result, alice.me.keyId);
      assertEquals(ref.status, "refused");
      assert(reason.test(ref.reason ?? ""), `reason ${ref.reason} does not match ${reason}`);
      assertEquals(counts(bob.store), before, "something landed");
      assertEquals(bob.store.metaWithPrefix("pack-index:"), [], "an index was cached");
      assertEquals(result.operation, null);
      assertEquals(listBranches(bob.store).filter((b) => b.name.startsWith("origin/")), []);
      assertEquals([...Deno.readDirSync(join(bob.ws, ".ctxsnap", "tmp"))], [], "staging left");
      await assertVerifies(bob.store, trusting(bob, alice));
    });
  } finally {
    await alice.close();
    await bob.close();
  }
}

/** Replaces the index of `index.pack` on the remote. */
function writeIndex(dir: string, index: PackIndex, bytes = encodeIndex(index)): Promise<void> {
  return Deno.writeFile(join(dir, indexKey(index.pack)), bytes);
}

Deno.test("pull refuses a pack index with wrong offsets (a range past the pack's end), nothing landing", async () => {
  await hostile(async ({ dir, blobs }) => {
    const last = [...blobs.entries].sort((a, b) => b.offset - a.offset)[0]!;
    last.offset += 1;
    await writeIndex(dir, blobs);
  }, /lacks blob .*past the end of the pack/);
});

Deno.test("pull refuses a pack index with overlapping ranges, nothing landing", async () => {
  await hostile(async ({ dir, blobs }) => {
    const sorted = [...blobs.entries].sort((a, b) => a.offset - b.offset);
    sorted[1]!.offset -= 1;
    await writeIndex(dir, blobs);
  }, /overlapping ranges/);
});

Deno.test("pull refuses an oversize pack index, and a pack larger than its index says, nothing landing", async () => {
  await hostile(async ({ dir, blobs }) => {
    const bytes = new Uint8Array(8 * 1024 * 1024);
    bytes.set(encodeIndex(blobs));
    await writeIndex(dir, blobs, bytes);
  }, /larger than|lacks blob/);
  await hostile(async ({ dir, blobs }) => {
    const file = join(dir, packKey(blobs.pack));
    const bytes = await Deno.readFile(file);
    await Deno.writeFile(file, new Uint8Array([...bytes, 0, 0, 0]));
  }, /pack \w+: .*(larger|more) than/i);
});

Deno.test("pull refuses a truncated pack or index, nothing landing", async () => {
  await hostile(async ({ dir, trees }) => {
    const file = join(dir, packKey(trees.pack));
    const bytes = await Deno.readFile(file);
    await Deno.writeFile(file, bytes.subarray(0, bytes.length - 3));
  }, /pack \w+ is truncated or does not hash to its id/);
  await hostile(async ({ dir, trees }) => {
    const bytes = encodeIndex(trees);
    await writeIndex(dir, trees, bytes.subarray(0, bytes.length - 5));
  }, /lacks tree .*bytes, not/);
});

Deno.test("pull refuses a pack whose bytes were changed under its id, nothing landing", async () => {
  await hostile(async ({ dir, blobs }) => {
    const file = join(dir, packKey(blobs.pack));
    const bytes = await Deno.readFile(file);
    bytes[bytes.length >> 1]! ^= 0x01;
    await Deno.writeFile(file, bytes);
  }, /pack \w+ is truncated or does not hash to its id/);
});

Deno.test("pull refuses an object whose packed bytes do not hash to the id its index gives, nothing landing", async () => {
  await hostile(async ({ dir, blobs, alice }) => {
    // A well-formed pack and index, under their own true id, that file other bytes of the
    // same size under the id of Alice's a.txt; the honest index is withdrawn.
    const id = sha256Hex(FILES["a.txt"]!);
    const other = encoder.encode("alphA\n");
    const writer = new PackWriter();
    writer.add(id, "blob", other.length, encodeObject(other, 0));
    for (const entry of blobs.entries) {
      if (entry.id === id) continue;
      const bytes = alice.store.readBlob(entry.id);
      writer.add(entry.id, "blob", bytes.length, encodeObject(bytes, 0));
    }
    const pack = writer.finish();
    await Deno.writeFile(join(dir, packKey(pack.id)), pack.bytes, { create: true }).catch(
      async () => {
        await Deno.mkdir(join(dir, packKey(pack.id), ".."), { recursive: true });
        await Deno.writeFile(join(dir, packKey(pack.id)), pack.bytes);
      },
    );
    await Deno.writeFile(join(dir, indexKey(pack.id)), pack.index);
    await Deno.remove(join(dir, indexKey(blobs.pack)));
  }, /blob \w+ does not hash to its id/);
});

Deno.test("pull refuses a pack index that files a tree as a blob, nothing landing", async () => {
  await hostile(async ({ dir, trees }) => {
    for (const entry of trees.entries) entry.kind = "blob";
    await writeIndex(dir, trees);
  }, /files tree \w+ as a blob/);
});

/** `size` incompressible bytes. */
function bigFile(size: number): Uint8Array {
  const next = prng(size);
  return new Uint8Array(size).map(() => Math.floor(next() * 256));
}

/** 40 incompressible files of 10 KiB: a blob pack of about 400 KiB. */
function manyFiles(seed: number): Record<string, Uint8Array> {
  const next = prng(seed);
  const files: Record<string, Uint8Array> = {};
  for (let i = 0; i < 40; i++) {
    files[`data/f${String(i).padStart(2, "0")}.bin`] = new Uint8Array(10 * 1024).map(() =>
      Math.floor(next() * 256)
    );
  }
  return files;
}

Deno.test("pull fetches one wanted object of a large pack with a ranged GET, not the whole pack", async () => {
  const files = manyFiles(7);
  const alice = await machine(files);
  // Bob already has every file but one.
  const bob = await machine({ ...files, "data/f17.bin": encoder.encode("bob's own\n") });
  try {
    await withRemote(async (inner) => {
      await snap(alice);
      await push(alice.store, inner, alice.me, "origin", { kind: "current" });
      await snap(bob);
      const index = await loadRemoteIndex(inner, 4);
      const blobPack = [...index.packs.values()].find((p) => p.entries[0]!.kind === "blob")!;
      assert(blobPack.packLength > 400 * 1024, `pack of ${blobPack.packLength} bytes`);
      const remote = new Recording(inner);
      const result = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(result, alice.me.keyId).status, "updated");
      const reads = remote.gets.filter((k) => k.startsWith(packKey(blobPack.pack)));
      const wanted = index.byId.get(sha256Hex(files["data/f17.bin"]!))!.entry;
      assertEquals(reads, [`${packKey(blobPack.pack)}@${wanted.offset}+${wanted.length}`]);
      assert(result.bytesReceived < 64 * 1024, `received ${result.bytesReceived}`);
      await assertVerifies(bob.store, trusting(bob, alice));
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("pull refuses a ranged object cut short or changed in its pack, nothing landing", async () => {
  const files = manyFiles(8);
  for (const change of ["truncate", "flip"] as const) {
    const alice = await machine(files);
    const bob = await machine({ ...files, "data/f17.bin": encoder.encode("bob's own\n") });
    try {
      await withRemote(async (remote, dir) => {
        await snap(alice);
        await push(alice.store, remote, alice.me, "origin", { kind: "current" });
        await snap(bob);
        const index = await loadRemoteIndex(remote, 4);
        const wanted = index.byId.get(sha256Hex(files["data/f17.bin"]!))!;
        const file = join(dir, packKey(wanted.pack));
        const bytes = await Deno.readFile(file);
        if (change === "truncate") {
          await Deno.writeFile(file, bytes.subarray(0, wanted.entry.offset + 10));
        } else {
          bytes[wanted.entry.offset + 100]! ^= 0x01;
          await Deno.writeFile(file, bytes);
        }
        const before = counts(bob.store);
        const result = await pull(bob.store, remote, trusting(bob, alice), "origin");
        const ref = refOf(result, alice.me.keyId);
        assertEquals(ref.status, "refused");
        const reason = change === "truncate" ? /shorter than the range/ : /does not hash to its id/;
        assert(reason.test(ref.reason ?? ""), `${change}: ${ref.reason}`);
        assertEquals(counts(bob.store), before, "something landed");
        await assertVerifies(bob.store, trusting(bob, alice));
      });
    } finally {
      await alice.close();
      await bob.close();
    }
  }
});

Deno.test("a remote whose marker names another layout is refused by push and pull, nothing written", async () => {
  const alice = await machine();
  try {
    await withRemote(async (remote) => {
      await snap(alice);
      await remote.put(MARKER_KEY, encoder.encode('{"format":"ctxsnap.remote/v3"}'));
      await assertRejects(
        () => push(alice.store, remote, alice.me, "origin", { kind: "current" }),
        IntegrityError,
        "ctxsnap.remote/v3",
      );
      assertEquals((await remote.list("")).map((o) => o.key), [MARKER_KEY]);
      const before = counts(alice.store);
      await assertRejects(
        () => pull(alice.store, remote, trusting(alice), "origin"),
        IntegrityError,
        "ctxsnap.remote/v3",
      );
      assertEquals(counts(alice.store), before);
    });
  } finally {
    await alice.close();
  }
});
