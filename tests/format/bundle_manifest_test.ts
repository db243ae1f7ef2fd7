/**
 * Bundle manifests are validated with bounded memory: the
 * streaming {@linkcode ManifestScanner} accepts exactly the canonical v1
 * layout, whatever the chunk boundaries, agrees with the generic validator,
 * and a 32 MiB manifest is verified inside a 64 MiB JavaScript heap (the
 * generic parser needed about 16 times the manifest's size).
 *
 * @module
 */
import { join } from "node:path";
import { canonicalBytes, parseCanonical } from "../../lib/encoding/canonical_json.ts";
import { BundleFormatError, TarWriter } from "../../lib/format/tar.ts";
import { ManifestScanner, type PackedManifest } from "../../lib/format/_manifest.ts";
import { validateManifest } from "../../lib/format/bundle.ts";
import { CtxsnapError } from "../../lib/errors.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { tempWorkspace } from "../_cli.ts";
import { prng, seedFromEnv } from "../_util.ts";

const encoder = new TextEncoder();
/** A 64-hex id: `prefix` then `n` in hex, so ids of one prefix sort by `n`. */
const hex = (n: number, prefix = "0") => prefix + n.toString(16).padStart(63, "0");

interface ManifestValue {
  blobs: { id: string; size: number }[];
  format: string;
  primary: string;
  snapshots: string[];
  trees: string[];
  workspace: boolean;
}

function manifest(blobs: number, trees: number, snapshots = 2): ManifestValue {
  const snaps = Array.from({ length: snapshots }, (_, i) => hex(1000 + i, "f"));
  return {
    blobs: Array.from({ length: blobs }, (_, i) => ({ id: hex(i * 7 + 1), size: i * 1000 })),
    format: "ctxsnap.bundle/v1",
    primary: snaps[snaps.length - 1]!,
    snapshots: snaps,
    trees: Array.from({ length: trees }, (_, i) => hex(i * 3 + 2, "1")),
    workspace: blobs + trees > 0,
  };
}

function scan(bytes: Uint8Array, chunk = bytes.length): PackedManifest {
  const scanner = new ManifestScanner();
  for (let at = 0; at < bytes.length; at += chunk) scanner.push(bytes.subarray(at, at + chunk));
  return scanner.finish();
}

function unpack(m: PackedManifest): ManifestValue {
  return {
    blobs: Array.from({ length: m.blobs.count }, (_, i) => ({
      id: m.blobs.hexAt(i),
      size: m.blobSizes[i]!,
    })),
    format: "ctxsnap.bundle/v1",
    primary: m.primary,
    snapshots: m.snapshots,
    trees: Array.from({ length: m.trees.count }, (_, i) => m.trees.hexAt(i)),
    workspace: m.workspace,
  };
}

Deno.test("ManifestScanner reads a canonical manifest identically at every chunk size", () => {
  for (const value of [manifest(0, 0, 1), manifest(3, 2), manifest(50, 10, 5)]) {
    const bytes = canonicalBytes(value);
    for (const chunk of [1, 2, 3, 7, 64, 65, 1000, bytes.length]) {
      const read = scan(bytes, chunk);
      assertEquals(unpack(read), value, `chunk ${chunk}`);
      for (let i = 0; i < read.blobs.count; i++) {
        assertEquals(read.blobs.indexOf(value.blobs[i]!.id), i);
      }
      assertEquals(read.trees.indexOf(hex(999_999)), -1);
    }
  }
});

Deno.test("ManifestScanner refuses every departure from the canonical v1 layout", () => {
  const good = new TextDecoder().decode(canonicalBytes(manifest(3, 2)));
  const b = manifest(3, 2).blobs;
  const bad: Record<string, string> = {
    "whitespace": good.replace(`"blobs":[`, `"blobs": [`),
    "keys reordered": good.replace(
      `{"id":"${b[0]!.id}","size":0}`,
      `{"size":0,"id":"${b[0]!.id}"}`,
    ),
    "unsorted blobs": good.replace(b[0]!.id, hex(99_999)),
    "repeated blob": good.replace(b[1]!.id, b[0]!.id),
    "uppercase id": good.replace(b[0]!.id, b[0]!.id.toUpperCase().replace(/^0/, "A")),
    "short id": good.replace(b[0]!.id, b[0]!.id.slice(1)),
    "leading zero": good.replace(`"size":1000`, `"size":01000`),
    "unsafe size": good.replace(`"size":1000`, `"size":9007199254740993`),
    "negative size": good.replace(`"size":1000`, `"size":-1`),
    "float size": good.replace(`"size":1000`, `"size":1000.0`),
    "escape": good.replace(`"format"`, `"form\\u0061t"`),
    "format v2": good.replace("bundle/v1", "bundle/v2"),
    "primary not last": good.replace(`"primary":"f`, `"primary":"e`),
    "extra field": good.replace(`"workspace":true}`, `"workspace":true,"zzz":1}`),
    "workspace false with blobs": good.replace(`"workspace":true`, `"workspace":false`),
    "trailing bytes": good + " ",
    "truncated": good.slice(0, -1),
    "unsorted trees": good.replace(
      `"trees":["${manifest(3, 2).trees[0]}","${manifest(3, 2).trees[1]}"]`,
      `"trees":["${manifest(3, 2).trees[1]}","${manifest(3, 2).trees[0]}"]`,
    ),
    "no snapshots": good.replace(/"snapshots":\[[^\]]*\]/, `"snapshots":[]`),
    "empty": "",
  };
  for (const [name, text] of Object.entries(bad)) {
    assert(text !== good, `${name}: the edit did not apply`);
    for (const chunk of [1, 5, 4096]) {
      const error = assertThrows(() => scan(encoder.encode(text), chunk), BundleFormatError);
      assert(error.message.length > 0, name);
    }
  }
  assertThrows(
    () => scan(encoder.encode(bad["format v2"]!)),
    BundleFormatError,
    "Unsupported bundle format",
  );
});

Deno.test("ManifestScanner accepts a mutated manifest only when the generic validator does too", () => {
  const seed = seedFromEnv();
  const random = prng(seed);
  const good = canonicalBytes(manifest(6, 3));
  let accepted = 0;
  for (let round = 0; round < 3000; round++) {
    const bytes = good.slice();
    const edits = 1 + Math.floor(random() * 2);
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(random() * bytes.length);
      bytes[at] = random() < 0.5 ? bytes[Math.floor(random() * bytes.length)]! : random() * 256;
    }
    let scanned: ManifestValue | null = null;
    try {
      scanned = unpack(scan(bytes, 1 + Math.floor(random() * 40)));
    } catch (error) {
      assert(error instanceof CtxsnapError, `seed ${seed}: ${error}`);
    }
    let generic: ManifestValue | null = null;
    try {
      generic = validateManifest(parseCanonical(bytes)) as ManifestValue;
    } catch (error) {
      assert(error instanceof CtxsnapError, `seed ${seed}: ${error}`);
    }
    if (scanned !== null) {
      accepted++;
      assert(generic !== null, `seed ${seed}: only the scanner accepted round ${round}`);
      assertEquals(scanned, generic, `seed ${seed}, round ${round}`);
    }
  }
  assert(accepted > 0, `seed ${seed}: no mutation was accepted (ids and sizes change freely)`);
});

Deno.test("verify of a bundle holding only a 32 MiB manifest runs in a 64 MiB heap and exits 1", async () => {
  const ws = await tempWorkspace();
  try {
    // ~380k blob records, then the bundle ends before the first listed snapshot.
    const snapshot = "a".repeat(64);
    const parts = [`{"blobs":[`];
    let length = 0;
    for (let i = 0; length < 32 * 1024 * 1024; i++) {
      const record = `${i === 0 ? "" : ","}{"id":"${hex(i)}","size":${1000 + i}}`;
      parts.push(record);
      length += record.length;
    }
    parts.push(
      `],"format":"ctxsnap.bundle/v1","primary":"${snapshot}","snapshots":["${snapshot}"],` +
        `"trees":[],"workspace":true}`,
    );
    const file = join(ws.root, "huge-manifest.ctxbundle");
    const out = await Deno.open(file, { write: true, create: true });
    const tar = new TarWriter((chunk) => {
      let at = 0;
      while (at < chunk.length) at += out.writeSync(chunk.subarray(at));
    });
    tar.addFile("ctxsnap-bundle.json", encoder.encode(parts.join("")));
    tar.finish();
    out.close();
    // The generic parser needs about 500 MiB for this manifest and dies of heap exhaustion.
    const run = await ws.run(["verify", file], {
      permissions: ["-A", "--v8-flags=--max-old-space-size=64"],
      timeoutMs: 120_000,
    });
    assertEquals(run.code, 1, run.stderr.slice(0, 2000));
    assert(run.stderr.includes(`ends before "snapshots/${snapshot}.json"`), run.stderr);
  } finally {
    await ws.cleanup();
  }
});
