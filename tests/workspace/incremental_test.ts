/**
 * Incremental capture: after random edits, renames,
 * deletes, symlink swaps, ignore-file changes, hard links and special files,
 * the tree a long-lived {@linkcode IncrementalCapture} builds from inotify
 * events is exactly the tree a full capture of the same workspace builds.
 *
 * `CTXSNAP_INCREMENTAL_ROUNDS` sets the rounds of the property test (default
 * 40 here; the long suite runs many more); `CTXSNAP_TEST_SEED` replays one.
 *
 * @module
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { IGNORE_FILE_NAMES } from "../../lib/workspace/io/ignore.ts";
import { captureWorkspace } from "../../lib/workspace/capture.ts";
import { IncrementalCapture } from "../../lib/workspace/incremental.ts";
import { Store } from "../../lib/repository/store.ts";
import { statCachePaths } from "../../lib/repository/stat_cache.ts";
import { collectGarbage } from "../../lib/repository/gc.ts";
import { openInotify } from "../../lib/runtime.ts";
import { assert, assertEquals } from "../_assert.ts";
import { prng, seedFromEnv } from "../_util.ts";

const HAVE_EVENTS = (() => {
  const inotify = openInotify();
  inotify?.close();
  return inotify !== null;
})();

function rounds(fallback: number): number {
  const raw = Number(Deno.env.get("CTXSNAP_INCREMENTAL_ROUNDS") ?? fallback);
  return Number.isSafeInteger(raw) && raw > 0 ? raw : fallback;
}

async function withWorkspace(
  fn: (ws: string, store: Store) => Promise<void> | void,
): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-incr-" }));
  const ws = join(root, "ws");
  fs.mkdirSync(ws);
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  try {
    await fn(ws, store);
  } finally {
    store.close();
    await Deno.remove(root, { recursive: true });
  }
}

/** Captures incrementally and fully; fails unless both give the same tree. */
function compare(
  store: Store,
  incremental: IncrementalCapture,
  what: string,
  maxFileBytes?: number,
): { hashed: number } {
  const next = store.transaction("capture", () => incremental.capture());
  const full = store.transaction(
    "capture",
    () =>
      captureWorkspace(store, {
        persist: false,
        useStatCache: false,
        ...(maxFileBytes === undefined ? {} : { maxFileBytes }),
      }),
  );
  if (next.treeId !== full.treeId) {
    const lines = (tree: typeof full.tree) =>
      new Set([...tree.entries, ...tree.skipped].map((x) => JSON.stringify(x)));
    const mine = lines(next.tree);
    const theirs = lines(full.tree);
    const extra = [...mine].filter((x) => !theirs.has(x));
    const missing = [...theirs].filter((x) => !mine.has(x));
    throw new Error(
      `${what}: incremental tree differs from a full capture\n  only incremental: ${
        extra.join("\n    ")
      }\n  only full: ${missing.join("\n    ")}`,
    );
  }
  assertEquals(next.treeId, full.treeId, what);
  // The flat manifest rebuilt from the interned model: same entries, same order.
  assertEquals(next.tree, full.tree, `${what}: flat manifest`);
  assertEquals(next.skipped, full.skipped, `${what}: skipped records`);
  assertEquals(next.stats.files, full.stats.files, `${what}: files`);
  assertEquals(next.stats.bytes, full.stats.bytes, `${what}: bytes`);
  assertEquals(next.stats.symlinks, full.stats.symlinks, `${what}: symlinks`);
  assertEquals(next.stats.skipped, full.stats.skipped, `${what}: skipped`);
  // The stored manifest is readable and is the same tree.
  assertEquals(store.getTree(next.treeId), full.tree, `${what}: stored manifest`);
  return { hashed: next.stats.hashed };
}

Deno.test({
  name: "incremental capture re-reads only what changed and builds the full capture's tree",
  ignore: !HAVE_EVENTS,
  fn: () =>
    withWorkspace((ws, store) => {
      for (let d = 0; d < 5; d++) {
        fs.mkdirSync(join(ws, `d${d}`));
        for (let f = 0; f < 20; f++) fs.writeFileSync(join(ws, `d${d}`, `f${f}.txt`), `${d}/${f}`);
      }
      const incremental = new IncrementalCapture(store);
      try {
        compare(store, incremental, "first capture");
        assertEquals(incremental.status.mode, "events");
        assertEquals(incremental.status.fullWalks, 1);
        // Unchanged: nothing is read.
        assertEquals(compare(store, incremental, "unchanged").hashed, 0);
        assertEquals(incremental.status.lastChanged, 0);
        // One file edited: exactly one file read.
        fs.writeFileSync(join(ws, "d3", "f7.txt"), "edited");
        assertEquals(compare(store, incremental, "one edit").hashed, 1);
        // Its directory trees were stored uncompressed; packing one later keeps the same tree.
        const unpacked = incremental.takeUnpacked().find((id) =>
          (store.objectSize(id) ?? 0) >= 1024
        );
        const before = store.getTree(unpacked!);
        assert(store.transaction("pack", () => store.packTree(unpacked!)), "packed");
        assertEquals(store.getTree(unpacked!), before);
        assert(!store.transaction("pack", () => store.packTree(unpacked!)), "once");
        assertEquals(incremental.status.lastChanged, 1);
        assertEquals(incremental.status.fullWalks, 1);
        // A .gitignore in a subdirectory: that directory is walked again.
        fs.writeFileSync(join(ws, "d1", ".gitignore"), "f1*.txt\n");
        compare(store, incremental, "subdirectory ignore file");
        // One at the root: a full walk.
        fs.writeFileSync(join(ws, ".gitignore"), "d4/\n");
        compare(store, incremental, "root ignore file");
        assertEquals(incremental.status.fullWalks, 2);
      } finally {
        incremental.close();
      }
    }),
});

Deno.test({
  name:
    "incremental capture's first walk reads stat-cache rows one by one and trusts only fresh ones",
  ignore: !HAVE_EVENTS,
  fn: () =>
    withWorkspace(async (ws, store) => {
      for (let i = 0; i < 20; i++) fs.writeFileSync(join(ws, `f${i}.txt`), `file ${i}\n`);
      // Until the rows are trusted (written past the files' racy window).
      while (store.transaction("capture", () => captureWorkspace(store)).stats.hashed > 0) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      fs.writeFileSync(join(ws, "f3.txt"), "changed since the rows were written");
      fs.rmSync(join(ws, "f4.txt"));
      const incremental = new IncrementalCapture(store);
      try {
        // A new process: every unchanged file is recognised by its row, the
        // changed one is read again, and the removed one's row goes.
        assertEquals(compare(store, incremental, "first walk of a new process").hashed, 1);
        const rows = store.transaction("rows", () => statCachePaths(store)).sort();
        assertEquals(rows.includes("f4.txt"), false);
        assertEquals(rows.length, 19);
      } finally {
        incremental.close();
      }
    }),
});

Deno.test({
  name:
    "incremental capture after a gc that removed its directory trees stores them again, so its root names only stored trees",
  ignore: !HAVE_EVENTS,
  fn: () =>
    withWorkspace((ws, store) => {
      for (const dir of ["a", "b"]) {
        fs.mkdirSync(join(ws, dir));
        for (let i = 0; i < 3; i++) fs.writeFileSync(join(ws, dir, `f${i}.txt`), `${dir} ${i}\n`);
      }
      const incremental = new IncrementalCapture(store);
      try {
        // Captured, but no snapshot names the trees: the next gc removes them.
        const first = store.transaction("capture", () => incremental.capture());
        const gc = collectGarbage(store);
        assert(gc.trees >= 3, `gc removed the capture's trees (${gc.trees})`);
        assertEquals(store.hasObject(first.treeId), false);
        fs.writeFileSync(join(ws, "a", "f0.txt"), "edited after the gc\n");
        const next = store.transaction("capture", () => incremental.capture());
        // Every tree the new root reaches is stored: b/ (unchanged) included.
        const tree = store.getTree(next.treeId);
        assertEquals(tree.entries.length, 6);
        const full = store.transaction("capture", () => captureWorkspace(store));
        assertEquals(next.treeId, full.treeId);
      } finally {
        incremental.close();
      }
    }),
});

Deno.test({
  name: "incremental capture sees writes through another hard link",
  ignore: !HAVE_EVENTS,
  fn: () =>
    withWorkspace((ws, store) => {
      const outside = join(ws, "..", "outside.txt");
      fs.writeFileSync(outside, "one");
      fs.linkSync(outside, join(ws, "linked.txt"));
      const incremental = new IncrementalCapture(store);
      try {
        compare(store, incremental, "first");
        fs.writeFileSync(outside, "two, written outside the workspace");
        compare(store, incremental, "after a write through the other link");
      } finally {
        incremental.close();
      }
    }),
});

Deno.test({
  name: "incremental capture falls back to a full walk when the model may be stale",
  ignore: !HAVE_EVENTS,
  fn: () =>
    withWorkspace((ws, store) => {
      fs.writeFileSync(join(ws, "a.txt"), "a");
      const incremental = new IncrementalCapture(store, { maxFileBytes: 1024 });
      try {
        compare(store, incremental, "first", 1024);
        // A transaction that did not commit: its blobs are gone.
        fs.writeFileSync(join(ws, "b.txt"), "b");
        try {
          store.transaction("capture", () => {
            incremental.capture();
            throw new Error("roll back");
          });
        } catch (error) {
          assert((error as Error).message === "roll back");
        }
        incremental.invalidate();
        compare(store, incremental, "after a rolled-back capture", 1024);
        assertEquals(incremental.status.fullWalks, 2);
      } finally {
        incremental.close();
      }
      // Turned off: every capture walks, and says why.
      const walking = new IncrementalCapture(store, { watch: false });
      try {
        compare(store, walking, "walking");
        assertEquals(walking.status.mode, "walk");
        assert(walking.status.reason !== null);
      } finally {
        walking.close();
      }
    }),
});

// ---------------------------------------------------------------------------
// property test

// Names that sort around `a/…` ("a-b", "a.b", "a0"), differ only in case
// ("A"), or are not ASCII (composed and decomposed "é", CJK, an emoji: a
// surrogate pair, whose UTF-16 order differs from its code point order).
const NAMES = [
  "a",
  "b",
  "c.txt",
  "d.md",
  "a-b",
  "a.b",
  "a0",
  "A",
  "x y",
  ".env",
  "k.pem",
  "node_modules",
  "\u00e9",
  "e\u0301",
  "\u65e5\u672c",
  "\u{1f600}",
  "\uff61",
];

type Op = (ws: string, rand: () => number) => void;

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

/** Every path below `ws` (not the store), relative, directories included. */
function listAll(ws: string): { files: string[]; dirs: string[]; all: string[] } {
  const files: string[] = [];
  const dirs: string[] = [];
  const all: string[] = [];
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(rel === "" ? ws : join(ws, rel))) {
      if (rel === "" && name === ".ctxsnap") continue;
      const child = rel === "" ? name : `${rel}/${name}`;
      all.push(child);
      const stat = fs.lstatSync(join(ws, child));
      if (stat.isDirectory()) {
        dirs.push(child);
        walk(child);
      } else files.push(child);
    }
  };
  walk("");
  return { files, dirs, all };
}

function randomDir(ws: string, rand: () => number): string {
  const { dirs } = listAll(ws);
  return rand() < 0.3 || dirs.length === 0 ? "" : pick(rand, dirs);
}

function randomPath(ws: string, rand: () => number): string {
  const dir = randomDir(ws, rand);
  const name = pick(rand, NAMES);
  return dir === "" ? name : `${dir}/${name}`;
}

function lstatOrNull(path: string): fs.Stats | null {
  try {
    return fs.lstatSync(path);
  } catch {
    return null;
  }
}

function removeAny(path: string): void {
  fs.rmSync(path, { recursive: true, force: true });
}

const OPS: Record<string, Op> = {
  write(ws, rand) {
    const path = join(ws, randomPath(ws, rand));
    const stat = lstatOrNull(path);
    if (stat?.isDirectory()) return;
    if (stat !== null && !stat.isFile()) fs.unlinkSync(path); // never open a FIFO
    fs.writeFileSync(path, `content ${Math.floor(rand() * 1000)}\n`.repeat(1 + (rand() * 3 | 0)));
  },
  edit(ws, rand) {
    const { files } = listAll(ws);
    if (files.length === 0) return;
    const path = join(ws, pick(rand, files));
    if (!fs.lstatSync(path).isFile()) return;
    // Same size, new bytes: only the event can tell.
    const bytes = fs.readFileSync(path);
    if (bytes.byteLength > 0) bytes[0] = (bytes[0]! + 1) % 256;
    fs.writeFileSync(path, bytes);
  },
  mkdir(ws, rand) {
    const path = join(ws, randomPath(ws, rand));
    if (lstatOrNull(path) !== null) return;
    fs.mkdirSync(path);
    for (let i = 0; i < 3; i++) fs.writeFileSync(join(path, `n${i}.txt`), `new ${i}`);
    fs.mkdirSync(join(path, "deep"));
    fs.writeFileSync(join(path, "deep", "z.txt"), "deep");
  },
  remove(ws, rand) {
    const { all } = listAll(ws);
    if (all.length === 0) return;
    removeAny(join(ws, pick(rand, all)));
  },
  rename(ws, rand) {
    const { all } = listAll(ws);
    if (all.length === 0) return;
    const from = pick(rand, all);
    const to = randomPath(ws, rand);
    if (to === from || to.startsWith(`${from}/`)) return;
    const target = join(ws, to);
    if (lstatOrNull(target)?.isDirectory()) removeAny(target);
    fs.renameSync(join(ws, from), target);
  },
  symlinkSwap(ws, rand) {
    // Replace a file or directory by a symlink (to a file, a directory, or nowhere), or back.
    const path = join(ws, randomPath(ws, rand));
    const stat = lstatOrNull(path);
    if (stat?.isSymbolicLink()) {
      fs.unlinkSync(path);
      if (rand() < 0.5) fs.mkdirSync(path);
      else fs.writeFileSync(path, "was a link");
      return;
    }
    if (stat !== null) removeAny(path);
    fs.symlinkSync(pick(rand, ["a", "../a", "/etc", "nowhere", "d.md"]), path);
  },
  chmod(ws, rand) {
    const { files } = listAll(ws);
    if (files.length === 0) return;
    const path = join(ws, pick(rand, files));
    if (fs.lstatSync(path).isFile()) fs.chmodSync(path, pick(rand, [0o600, 0o644, 0o755]));
  },
  ignoreFile(ws, rand) {
    const dir = randomDir(ws, rand);
    const name = pick(rand, [".gitignore", ".ctxsnapignore"]);
    const path = join(ws, dir, name);
    const stat = lstatOrNull(path);
    if (stat !== null && !stat.isFile()) return;
    if (rand() < 0.3 && stat !== null) fs.unlinkSync(path);
    else fs.writeFileSync(path, `${pick(rand, ["a", "*.md", "b/", "!c.txt", "x y", "deep"])}\n`);
  },
  hardLink(ws, rand) {
    // A new link next to the file (inotify cannot see links made from
    // directories it does not watch: docs/FORMAT.md, "watch").
    const { files } = listAll(ws);
    if (files.length === 0) return;
    const source = pick(rand, files);
    const from = join(ws, source);
    const to = join(ws, source, "..", pick(rand, NAMES));
    if (!fs.lstatSync(from).isFile() || lstatOrNull(to) !== null) return;
    fs.linkSync(from, to);
  },
  fifo(ws, rand) {
    const path = join(ws, randomPath(ws, rand));
    if (lstatOrNull(path) !== null) return;
    new Deno.Command("mkfifo", { args: [path] }).outputSync();
  },
  secretContent(ws, rand) {
    // A token in the content: left out as secret_content, until the allow list names it.
    const path = join(ws, randomPath(ws, rand));
    const stat = lstatOrNull(path);
    if (stat !== null && !stat.isFile()) return;
    fs.writeFileSync(path, "token = ghp_8f3Kq0ZrT5bLm2Xw9Yc4Nd7Ve1Hj6Ua0Ps3Q\n");
  },
  allowList(ws, rand) {
    // The store's allow list changes what may be captured: a full walk.
    const { files } = listAll(ws);
    const named = files.filter(() => rand() < 0.5).join("\n");
    fs.writeFileSync(join(ws, ".ctxsnap", "allow-secrets"), `${named}\n`, { mode: 0o600 });
  },
  big(ws, rand) {
    const path = join(ws, randomPath(ws, rand));
    if (lstatOrNull(path)?.isDirectory()) return;
    removeAny(path);
    fs.writeFileSync(path, new Uint8Array(rand() < 0.5 ? 2000 : 100));
  },
};

Deno.test({
  name: "property: the incremental tree equals a full capture after random edits",
  ignore: !HAVE_EVENTS,
  fn: async () => {
    const seed = seedFromEnv();
    const rand = prng(seed);
    const total = rounds(40);
    await withWorkspace((ws, store) => {
      for (const dir of ["a", "b", "node_modules"]) {
        fs.mkdirSync(join(ws, dir));
        fs.writeFileSync(join(ws, dir, "c.txt"), dir);
      }
      const incremental = new IncrementalCapture(store, { maxFileBytes: 1024 });
      const names = Object.keys(OPS);
      try {
        compare(store, incremental, `seed ${seed}: first`, 1024);
        for (let round = 0; round < total; round++) {
          const done: string[] = [];
          const count = 1 + Math.floor(rand() * 6);
          for (let i = 0; i < count; i++) {
            const name = pick(rand, names);
            try {
              OPS[name]!(ws, rand);
              done.push(name);
            } catch (error) {
              // A random operation that does not apply here (renaming a file
              // over a directory, say) is simply not done.
              if (!/^E(NOTDIR|ISDIR|NOTEMPTY|NOENT|EXIST)/.test(String((error as Error).message))) {
                throw error;
              }
            }
          }
          compare(store, incremental, `seed ${seed}, round ${round} (${done.join(", ")})`, 1024);
        }
        // Events, not walks: whatever the random rounds left, an edit of one
        // file below the root is captured incrementally, reading that file
        // only. (A random round may need a full walk: a change in the root's
        // own listing or an ignore file at the root walks everything.)
        // A root ignore file hard-linked elsewhere may change through the
        // other link unseen, so it makes every capture walk: unlink it first.
        for (const name of IGNORE_FILE_NAMES) {
          const path = join(ws, name);
          const stat = fs.lstatSync(path, { throwIfNoEntry: false });
          if (stat?.isFile() && stat.nlink > 1) {
            const text = fs.readFileSync(path);
            fs.unlinkSync(path);
            fs.writeFileSync(path, text);
          }
        }
        fs.mkdirSync(join(ws, "zz-last"), { recursive: true });
        fs.writeFileSync(join(ws, "zz-last", "f.txt"), "one");
        compare(store, incremental, `seed ${seed}: a new directory`, 1024);
        const before = { ...incremental.status };
        fs.writeFileSync(join(ws, "zz-last", "f.txt"), "two");
        compare(store, incremental, `seed ${seed}: one edit`, 1024);
        const after = incremental.status;
        assertEquals(
          [after.incremental - before.incremental, after.fullWalks - before.fullWalks],
          [1, 0],
          `seed ${seed}: ${JSON.stringify(after)}`,
        );
        assert(incremental.status.incremental > 0, `seed ${seed}: events were never used`);
      } finally {
        incremental.close();
      }
    });
  },
});
