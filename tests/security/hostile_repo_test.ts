/**
 * A workspace ctxsnap did not write can never turn it against its
 * user. Names other filesystems fold to reserved ones, custom store
 * locations, modes, git run as data, stored plans and envelopes read before
 * use, race-free restore writes, and store trust.
 * @module
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { ConflictError, IntegrityError, StoreTrustError } from "../../lib/errors.ts";
import { canonicalBytes } from "../../lib/encoding/canonical_json.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../../lib/crypto/ed25519.ts";
import { toHex } from "../../lib/encoding/hex.ts";
import { walkWorkspace } from "../../lib/workspace/io/walk.ts";
import { umask } from "../../lib/runtime.ts";
import { validateTree } from "../../lib/format/tree.ts";
import { Store } from "../../lib/repository/store.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { type Envelope, signBody, type Signer } from "../../lib/format/envelope.ts";
import { writeBundle } from "../../lib/format/bundle.ts";
import { concatBytes, editBehindCtxsnap, exists } from "../_util.ts";
import { expectCode, withStore } from "../_cli.ts";
import { restoreSwapRace } from "../_restore_race.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";

/** Spellings that some filesystem (NTFS, HFS+, APFS) treats as `.git` or `.ctxsnap`. */
const FOLDED_RESERVED: readonly string[] = [
  ".git.",
  ".git ",
  ".git. .",
  ".GIT",
  "GIT~1",
  "git~2",
  "gi7a2b~1",
  ".g\u200cit",
  ".\u200dgit",
  ".gi\ufefft",
  ".g\u202eit",
  ".g\u0131t",
  ".git::$INDEX_ALLOCATION",
  ".ctxsnap.",
  ".CtxSnap ",
  "CTXSNA~1",
  ".ctx\u017Fnap",
  ".ctx\u200bsnap",
];

async function makeSigner(): Promise<Signer> {
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}

async function withTempDir(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-hostile-" }));
  try {
    await fn(dir);
  } finally {
    await new Deno.Command("chmod", { args: ["-R", "u+rwX", dir] }).output();
    await Deno.remove(dir, { recursive: true });
  }
}

// ---------------------------------------------------------------------------
// 5. names other filesystems fold to reserved ones

Deno.test("reserved names: validateTree refuses every spelling other filesystems fold to .git or .ctxsnap", () => {
  for (const name of FOLDED_RESERVED) {
    for (const path of [name, `${name}/hooks/post-checkout`, `sub/${name}/config`]) {
      assertThrows(
        () =>
          validateTree({
            version: 1,
            entries: [{ path, type: "symlink", target: "x" }],
            skipped: [],
          }),
        IntegrityError,
        "reserved",
      );
    }
  }
  // Names that merely look alike are ordinary names.
  const ordinary = [
    ".github",
    ".gitignore",
    "git",
    ".git-credentials.md",
    ".ctxsnapignore",
    "a.git",
  ];
  validateTree({
    version: 1,
    entries: ordinary.sort().map((path) => ({ path, type: "symlink" as const, target: "x" })),
    skipped: [],
  });
});

Deno.test("reserved names: capture skips every folded spelling as reserved, never descending", async () => {
  await withTempDir((dir) => {
    for (const name of FOLDED_RESERVED) {
      fs.mkdirSync(join(dir, "d", name), { recursive: true });
      fs.writeFileSync(join(dir, "d", name, "config"), "[core]\n");
    }
    fs.writeFileSync(join(dir, "ok.txt"), "ok\n");
    const items = [...walkWorkspace(dir)];
    assertEquals(items.filter((i) => i.kind !== "skip").map((i) => i.path), ["ok.txt"]);
    const reserved = items.filter((i) => i.kind === "skip" && i.reason === "reserved");
    assertEquals(reserved.length, FOLDED_RESERVED.length);
  });
});

/** A bundle whose one snapshot, signed by `signer`, names `tree` (bytes written as given). */
async function craftedBundle(signer: Signer, treeValue: unknown): Promise<Uint8Array> {
  const blob = new TextEncoder().encode("[core]\n\tfsmonitor = /tmp/evil\n");
  const treeBytes = canonicalBytes(treeValue as never);
  const treeId = sha256Hex(treeBytes);
  let envelope: Envelope | null = null;
  await withTempDir(async (ws) => {
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const made = await createSnapshot(store, signer, { reason: "template" });
      envelope = await signBody({
        ...made.envelope.body,
        workspace: { tree: treeId, files: 1, bytes: blob.length, skipped: 0 },
      }, signer);
    } finally {
      store.close();
    }
  });
  const chunks: Uint8Array[] = [];
  writeBundle({
    envelopes: [envelope!],
    trees: new Map([[treeId, treeBytes]]),
    blobs: new Map([[sha256Hex(blob), blob.length]]),
    streamBlob: (_id, onChunk) => onChunk(blob),
  }, (chunk) => chunks.push(chunk.slice()));
  return concatBytes(chunks);
}

Deno.test("reserved names: import refuses a bundle whose tree writes .git. or GIT~1 and writes nothing", async () => {
  const { importFile } = await import("../../lib/share/import.ts");
  const { Keyring } = await import("../../lib/keys/keyring.ts");
  const signer = await makeSigner();
  for (const name of [".git.", "GIT~1", ".g\u200cit", ".ctx\u017Fnap"]) {
    const blob = new TextEncoder().encode("[core]\n\tfsmonitor = /tmp/evil\n");
    const bundle = await craftedBundle(signer, {
      version: 1,
      entries: [{
        path: `${name}/config`,
        type: "file",
        blob: sha256Hex(blob),
        size: blob.length,
        mode: 0o644,
      }],
      skipped: [],
    });
    await withTempDir(async (ws) => {
      const file = join(ws, "..", `${crypto.randomUUID()}.ctxbundle`);
      await Deno.writeFile(file, bundle);
      const store = Store.init(join(ws, ".ctxsnap"), ws);
      try {
        const trust = new Keyring([], null);
        trust.add(signer.publicKey, "crafter");
        const error = await importFile(store, file, trust).then(() => null, (e) => e);
        assert(error instanceof IntegrityError, `${JSON.stringify(name)}: ${error}`);
        assert(String(error.message).includes("reserved"), error.message);
        assertEquals(store.stmt("SELECT count(*) AS n FROM snapshots").get(), { n: 0 });
        assertEquals(store.stmt("SELECT count(*) AS n FROM objects").get(), { n: 0 });
        assert(!(await exists(join(ws, name))), `${name} was written`);
      } finally {
        store.close();
        await Deno.remove(file);
      }
    });
  }
});

// ---------------------------------------------------------------------------
// 10. a custom store location excludes exactly that path

Deno.test("custom store: a store at data/store excludes exactly that directory, and other directories named store are captured", async () => {
  await withTempDir(async (ws) => {
    for (const rel of ["store/x.txt", "other/store/y.txt", "data/storex/z.txt", "a.txt"]) {
      fs.mkdirSync(join(ws, rel, ".."), { recursive: true });
      fs.writeFileSync(join(ws, rel), rel);
    }
    const store = Store.init(join(ws, "data", "store"), ws);
    try {
      const made = await createSnapshot(store, await makeSigner(), { reason: "custom" });
      const tree = store.getTree(made.envelope.body.workspace!.tree);
      assertEquals(tree.entries.map((e) => e.path), [
        "a.txt",
        "data/storex/z.txt",
        "other/store/y.txt",
        "store/x.txt",
      ]);
      assertEquals(tree.skipped, [{ path: "data/store", reason: "excluded_dir" }]);
    } finally {
      store.close();
    }
  });
});

Deno.test("custom store: restore and materialize refuse a tree that writes into the store's location in a folded spelling, writing nothing", async () => {
  await withTempDir(async (ws) => {
    fs.writeFileSync(join(ws, "a.txt"), "a\n");
    const store = Store.init(join(ws, "mystore"), ws);
    try {
      const signer = await makeSigner();
      // On Linux "MyStore." is another directory, so it is captured; on NTFS
      // or APFS it would be the store itself.
      fs.mkdirSync(join(ws, "MyStore."));
      fs.writeFileSync(join(ws, "MyStore.", "index.db"), "planted\n");
      const planted = await createSnapshot(store, signer, { reason: "planted" });
      fs.rmSync(join(ws, "MyStore."), { recursive: true });
      await createSnapshot(store, signer, { reason: "clean" });
      const { restoreSnapshot } = await import("../../lib/workspace/move/restore.ts");
      const { materialize } = await import("../../lib/workspace/move/materialize.ts");
      const error = await restoreSnapshot(store, signer, planted.id).then(
        () => null,
        (e) => e,
      );
      assert(error instanceof IntegrityError, String(error));
      assert(String(error.message).includes("store"), error.message);
      assert(!(await exists(join(ws, "MyStore."))), "restore wrote into the store's location");
      assertThrows(
        () => materialize(store, planted.envelope.body.workspace!.tree, ws),
        IntegrityError,
        "store",
      );
      assert(!(await exists(join(ws, "MyStore."))), "materialize wrote into the store's location");
    } finally {
      store.close();
    }
  });
});

// ---------------------------------------------------------------------------
// 7. modes: the umask applies; no setuid, setgid, sticky or world-write bit

/**
 * Restores `first` and materializes it into `dest` under a given umask, in a
 * child process: the umask is process-wide, and test modules share one.
 */
const UMASK_CHILD = `
import { Store } from "${new URL("../../lib/repository/store.ts", import.meta.url)}";
import { restoreSnapshot } from "${new URL(
  "../../lib/workspace/move/restore.ts",
  import.meta.url,
)}";
import { materialize } from "${new URL(
  "../../lib/workspace/move/materialize.ts",
  import.meta.url,
)}";
import { loadIdentity } from "${new URL("../../lib/keys/identity.ts", import.meta.url)}";
const [storeDir, config, first, tree, dest, restoreMask, materializeMask] = Deno.args;
const store = Store.open(storeDir);
const me = loadIdentity(config);
Deno.umask(Number(restoreMask));
await restoreSnapshot(store, me, first);
Deno.umask(Number(materializeMask));
materialize(store, tree, dest);
const again = materialize(store, tree, dest);
store.close();
console.log(JSON.stringify({ written: again.written.length, identical: again.identical.length }));
`;

Deno.test("modes: restored and materialized files honour the umask and never get setuid, setgid, sticky or world-write bits", async () => {
  const recorded: Record<string, number> = {
    "suid.sh": 0o4777,
    "sgid.sh": 0o2775,
    "sticky.txt": 0o1666,
    "open.txt": 0o666,
    "private.txt": 0o600,
    "run.sh": 0o755,
  };
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    const config = join(root, "config");
    fs.mkdirSync(ws);
    for (const [name, mode] of Object.entries(recorded)) {
      fs.writeFileSync(join(ws, name), name);
      fs.chmodSync(join(ws, name), mode);
    }
    const { loadOrCreateIdentity } = await import("../../lib/keys/identity.ts");
    const me = await loadOrCreateIdentity(config);
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    let first: Envelope;
    try {
      first = (await createSnapshot(store, me, { reason: "modes" })).envelope;
      const tree = store.getTree(first.body.workspace!.tree);
      assertEquals(
        Object.fromEntries(tree.entries.map((e) => [e.path, e.type === "file" ? e.mode : 0])),
        recorded,
      );
      for (const name of Object.keys(recorded)) fs.writeFileSync(join(ws, name), "changed");
      await createSnapshot(store, me, { reason: "changed" });
    } finally {
      store.close();
    }
    const script = join(root, "umask.ts");
    fs.writeFileSync(script, UMASK_CHILD);
    const dest = join(root, "dest");
    // Restore under umask 027, materialize under umask 0: still nothing world-writable.
    const out = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--quiet",
        "--config",
        new URL("../../deno.json", import.meta.url).pathname,
        script,
        join(ws, ".ctxsnap"),
        config,
        first.id,
        first.body.workspace!.tree,
        dest,
        String(0o027),
        "0",
      ],
      stdout: "piped",
      stderr: "piped",
    }).outputSync();
    assert(out.success, new TextDecoder().decode(out.stderr));
    const modesIn = (dir: string) =>
      Object.fromEntries(
        Object.keys(recorded).map((name) => [name, fs.lstatSync(join(dir, name)).mode & 0o7777]),
      );
    assertEquals(modesIn(ws), {
      "suid.sh": 0o750,
      "sgid.sh": 0o750,
      "sticky.txt": 0o640,
      "open.txt": 0o640,
      "private.txt": 0o600,
      "run.sh": 0o750,
    });
    assertEquals(modesIn(dest), {
      "suid.sh": 0o775,
      "sgid.sh": 0o775,
      "sticky.txt": 0o664,
      "open.txt": 0o664,
      "private.txt": 0o600,
      "run.sh": 0o755,
    });
    // Materializing again finds every file identical (the mode rule), none in conflict.
    assertEquals(JSON.parse(new TextDecoder().decode(out.stdout)), {
      written: 0,
      identical: Object.keys(recorded).length,
    });
  });
});

// ---------------------------------------------------------------------------
// 4. git is data, not code

function git(cwd: string, ...args: string[]): string {
  const out = new Deno.Command("git", {
    args: ["-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout).trim();
}

/** What the test itself passes to git once a repository is armed. */
const DISARMED = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "filter.evil.clean=",
  "-c",
  "filter.evil.smudge=",
  "-c",
  "filter.evil.process=",
];

/** Makes every program `.git/config` and hooks can name write to `marker` (and pass data through). */
function armRepository(ws: string, marker: string): void {
  const script = join(ws, "..", "evil.sh");
  fs.writeFileSync(script, `#!/bin/sh\necho "$0 $*" >> '${marker}'\ncat\n`, { mode: 0o755 });
  git(ws, "config", "core.fsmonitor", script);
  git(ws, "config", "filter.evil.clean", `${script} clean`);
  git(ws, "config", "filter.evil.smudge", `${script} smudge`);
  git(ws, "config", "filter.evil.process", `${script} process`);
  git(ws, "config", "core.pager", script);
  git(ws, "config", "diff.external", script);
  git(ws, "config", "credential.helper", script);
  git(ws, "config", "core.askPass", script);
  fs.writeFileSync(join(ws, ".git", "info", "attributes"), "* filter=evil\n");
  for (const hook of ["post-checkout", "reference-transaction", "post-index-change"]) {
    fs.writeFileSync(join(ws, ".git", "hooks", hook), `#!/bin/sh\n'${script}' hook\n`, {
      mode: 0o755,
    });
  }
}

Deno.test("git: create and restore --git never run the repository's fsmonitor, hooks, filters, pager or helpers", async () => {
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    const marker = join(root, "marker");
    fs.mkdirSync(ws);
    git(ws, "init", "-q");
    fs.writeFileSync(join(ws, "a.txt"), "one\n");
    fs.writeFileSync(join(ws, ".gitignore"), ".ctxsnap/\n");
    git(ws, "add", "-A");
    git(ws, "commit", "-qm", "one");
    armRepository(ws, marker);
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const signer = await makeSigner();
      const first = await createSnapshot(store, signer, { reason: "one" });
      assertEquals(first.envelope.body.git?.dirty, false);
      fs.writeFileSync(join(ws, "a.txt"), "two\n");
      const dirty = await createSnapshot(store, signer, { reason: "dirty" });
      assertEquals(dirty.envelope.body.git?.dirty, true);
      git(ws, ...DISARMED, "commit", "-qam", "two");
      fs.writeFileSync(join(ws, "a.txt"), "two\n"); // a racily clean entry: git re-reads (and cleans) it
      await createSnapshot(store, signer, { reason: "two" });
      const { restoreSnapshot } = await import("../../lib/workspace/move/restore.ts");
      const result = await restoreSnapshot(store, signer, first.id, { git: true });
      assertEquals(result.gitCommit, first.envelope.body.git?.commit);
      assertEquals(fs.readFileSync(join(ws, "a.txt"), "utf8"), "one\n");
      assertEquals(git(ws, ...DISARMED, "rev-parse", "HEAD"), result.gitCommit);
      assert(!(await exists(marker)), `git ran a repository program:\n${await readIfAny(marker)}`);
    } finally {
      store.close();
    }
  });
});

async function readIfAny(file: string): Promise<string> {
  try {
    return await Deno.readTextFile(file);
  } catch {
    return "";
  }
}

Deno.test("git: core.worktree in .git/config cannot point a restore --git at another directory", async () => {
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    const outside = join(root, "outside");
    fs.mkdirSync(ws);
    git(ws, "init", "-q");
    fs.writeFileSync(join(ws, ".gitignore"), ".ctxsnap/\n");
    fs.writeFileSync(join(ws, "a.txt"), "one\n");
    git(ws, "add", "-A");
    git(ws, "commit", "-qm", "one");
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const signer = await makeSigner();
      const first = await createSnapshot(store, signer, { reason: "one" });
      fs.writeFileSync(join(ws, "a.txt"), "two\n");
      git(ws, "commit", "-qam", "two");
      await createSnapshot(store, signer, { reason: "two" });
      // The planted config names a directory holding exactly what the index
      // expects, so git, if it obeyed, would find a clean tree there and
      // check the old commit out into it.
      fs.mkdirSync(outside);
      fs.writeFileSync(join(outside, ".gitignore"), ".ctxsnap/\n");
      fs.writeFileSync(join(outside, "a.txt"), "two\n");
      git(ws, "config", "core.worktree", outside);
      const { restoreSnapshot } = await import("../../lib/workspace/move/restore.ts");
      await restoreSnapshot(store, signer, first.id, { git: true });
      assertEquals(fs.readFileSync(join(ws, "a.txt"), "utf8"), "one\n");
      assertEquals(fs.readFileSync(join(outside, "a.txt"), "utf8"), "two\n");
      assertEquals(fs.readdirSync(outside).sort(), [".gitignore", "a.txt"]);
    } finally {
      store.close();
    }
  });
});

Deno.test("git: a repository owned by another user is refused by git's own safe.directory rule (no anchor)", async () => {
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    fs.mkdirSync(ws);
    git(ws, "init", "-q");
    fs.writeFileSync(join(ws, "a.txt"), "one\n");
    git(ws, "add", "-A");
    git(ws, "commit", "-qm", "one");
    const { gitAnchor } = await import("../../lib/integrations/git/git.ts");
    assert(gitAnchor(ws) !== null, "own repository has an anchor");
    if (Deno.uid() !== 0) return; // only root can give the repository away
    const other = 4242;
    await new Deno.Command("chown", { args: ["-R", `${other}:${other}`, ws] }).output();
    try {
      assertEquals(gitAnchor(ws), null);
    } finally {
      await new Deno.Command("chown", { args: ["-R", "0:0", ws] }).output();
    }
  });
});

// ---------------------------------------------------------------------------
// 3. the durability fallback never opens a FIFO or a device

Deno.test("durability fallback: a restore with no `sync -f` never opens a FIFO next to the files it writes (no hang)", async () => {
  await withStore(async (ws) => {
    // A PATH holding git but no `sync`: the writer must fall back to fsyncing files itself.
    const bin = join(ws.root, "bin");
    fs.mkdirSync(bin);
    const gitPath = new TextDecoder().decode(
      new Deno.Command("sh", { args: ["-c", "command -v git"], stdout: "piped" }).outputSync()
        .stdout,
    ).trim();
    fs.symlinkSync(gitPath, join(bin, "git"));
    const env = { PATH: bin };
    fs.mkdirSync(join(ws.path, "d"));
    fs.writeFileSync(join(ws.path, "d", "a.txt"), "one\n");
    const first = (await ws.run(["create", "-m", "one", "--json"], { env })).json().id as string;
    fs.writeFileSync(join(ws.path, "d", "a.txt"), "two\n");
    expectCode(await ws.run(["create", "-m", "two"], { env }), 0, "create two");
    const mkfifo = await new Deno.Command("mkfifo", { args: [join(ws.path, "d", "pipe")] })
      .output();
    assert(mkfifo.success, "mkfifo");
    const restored = await ws.run(["restore", first, "--json"], { env, timeoutMs: 30_000 });
    expectCode(restored, 0, "restore next to a FIFO without sync");
    assertEquals(fs.readFileSync(join(ws.path, "d", "a.txt"), "utf8"), "one\n");
    assert(fs.lstatSync(join(ws.path, "d", "pipe")).isFIFO(), "the FIFO is left alone");
  });
});

// ---------------------------------------------------------------------------
// 3. a directory swapped for a symlink while a restore writes

Deno.test({
  name:
    "races: a directory swapped for a symlink while restores write and delete never lets them touch anything outside the workspace",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const rounds = Number(Deno.env.get("CTXSNAP_RESTORE_RACE_ROUNDS") ?? "6");
    const { flips, outcomes } = await restoreSwapRace(rounds);
    // deno-lint-ignore no-console
    console.log(`  ${flips} flips, outcomes ${JSON.stringify(outcomes)}`);
  },
});

Deno.test("races: a parent directory swapped for a symlink between two changes of a restore stops it, and nothing outside is touched", async () => {
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    const outside = join(root, "outside");
    fs.mkdirSync(join(ws, "dir", "sub"), { recursive: true });
    fs.mkdirSync(outside);
    const names = ["a.txt", "b.txt", "c.txt"];
    const doomed = ["del-1.txt", "del-2.txt", "del-3.txt"];
    for (const name of [...names, ...doomed]) fs.writeFileSync(join(outside, name), "SENTINEL\n");
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const signer = await makeSigner();
      for (const name of names) fs.writeFileSync(join(ws, "dir", "sub", name), `A ${name}\n`);
      const a = await createSnapshot(store, signer, { reason: "A" });
      for (const name of [...names, ...doomed]) {
        fs.writeFileSync(join(ws, "dir", "sub", name), `B ${name}\n`);
      }
      await createSnapshot(store, signer, { reason: "B" });
      const { restoreSnapshot } = await import("../../lib/workspace/move/restore.ts");
      const { recover } = await import("../../lib/workspace/move/recover.ts");
      let swapped = false;
      const error = await restoreSnapshot(store, signer, a.id, {
        onProgress: () => {
          if (swapped) return;
          swapped = true; // after the first delete: swap the directory out
          fs.renameSync(join(ws, "dir", "sub"), join(ws, "parked"));
          fs.symlinkSync(outside, join(ws, "dir", "sub"));
        },
      }).then(() => null, (e) => e);
      assert(swapped, "the restore reached its first change");
      assert(error instanceof ConflictError, String(error));
      assertEquals(fs.readdirSync(outside).sort(), [...names, ...doomed].sort());
      for (const name of [...names, ...doomed]) {
        assertEquals(fs.readFileSync(join(outside, name), "utf8"), "SENTINEL\n", name);
      }
      // The directory comes back; the interrupted restore can be aborted.
      fs.rmSync(join(ws, "dir", "sub"));
      fs.renameSync(join(ws, "parked"), join(ws, "dir", "sub"));
      const ended = await recover(store, signer, { abort: true, force: true });
      assert(ended.operation === null || ended.status === "aborted", JSON.stringify(ended));
      for (const name of names) {
        assertEquals(fs.readFileSync(join(ws, "dir", "sub", name), "utf8"), `B ${name}\n`);
      }
    } finally {
      store.close();
    }
  });
});

Deno.test("races: without /proc descriptors, each change re-checks the whole parent chain and refuses a directory swapped for a symlink", async () => {
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    const outside = join(root, "outside");
    fs.mkdirSync(join(ws, "dir", "sub"), { recursive: true });
    fs.mkdirSync(outside);
    fs.writeFileSync(join(outside, "gone.txt"), "SENTINEL\n");
    fs.writeFileSync(join(ws, "dir", "sub", "gone.txt"), "mine\n");
    const { SafeWriter } = await import("../../lib/workspace/io/safe_write.ts");
    const writer = new SafeWriter(ws, { descriptors: false });
    try {
      const bytes = new TextEncoder().encode("one\n");
      writer.writeFile("dir/sub/first.txt", 0o644, (write) => write(bytes));
      // `dir/sub` was checked for that write; swap it now.
      fs.renameSync(join(ws, "dir", "sub"), join(ws, "parked"));
      fs.symlinkSync(outside, join(ws, "dir", "sub"));
      assertThrows(
        () => writer.writeFile("dir/sub/second.txt", 0o644, (write) => write(bytes)),
        ConflictError,
        "symlink",
      );
      assertThrows(() => writer.remove("dir/sub/gone.txt"), ConflictError, "symlink");
      assertEquals(fs.readdirSync(outside), ["gone.txt"]);
      assertEquals(fs.readFileSync(join(outside, "gone.txt"), "utf8"), "SENTINEL\n");
    } finally {
      writer.close();
    }
  });
});

// ---------------------------------------------------------------------------
// 2 and 10. stored plans are validated; every state a restore leaves can be ended

type Spec = Record<string, string | { text: string; mode: number } | { link: string }>;

function writeSpec(ws: string, spec: Spec): void {
  for (const [rel, value] of Object.entries(spec)) {
    const abs = join(ws, rel);
    fs.mkdirSync(join(abs, ".."), { recursive: true });
    if (typeof value === "string") fs.writeFileSync(abs, value);
    else if ("link" in value) fs.symlinkSync(value.link, abs);
    else {
      fs.writeFileSync(abs, value.text);
      fs.chmodSync(abs, value.mode);
    }
  }
}

/** Every path below `ws` but the store: file text, or `-> target` for a symlink. */
function contentOf(ws: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(join(ws, rel)).sort()) {
      if (rel === "" && name === ".ctxsnap") continue;
      const path = rel === "" ? name : `${rel}/${name}`;
      const stat = fs.lstatSync(join(ws, path));
      if (stat.isSymbolicLink()) out[path] = `-> ${fs.readlinkSync(join(ws, path))}`;
      else if (stat.isDirectory()) walk(path);
      else out[path] = fs.readFileSync(join(ws, path), "utf8");
    }
  };
  walk("");
  return out;
}

function expected(spec: Spec): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [rel, value] of Object.entries(spec)) {
    out[rel] = typeof value === "string"
      ? value
      : "link" in value
      ? `-> ${value.link}`
      : value.text;
  }
  return out;
}

/**
 * A store whose branch head recorded `pre` (the workspace holds it) and an
 * `applying` restore to a snapshot of `target`, recorded as `restore` does;
 * `plan` may be overridden to craft one. Returns the store and the ids.
 */
async function interrupted(
  ws: string,
  pre: Spec,
  target: Spec,
  craft: (plan: Record<string, unknown>) => void = () => {},
): Promise<{ store: Store; signer: Signer; op: string }> {
  const { planMove } = await import("../../lib/workspace/plan.ts");
  const { startOperation } = await import("../../lib/repository/operations.ts");
  writeSpec(ws, target);
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  const signer = await makeSigner();
  const t = await createSnapshot(store, signer, { reason: "target" });
  for (const rel of Object.keys(target)) {
    fs.rmSync(join(ws, rel.split("/")[0]!), { recursive: true, force: true });
  }
  writeSpec(ws, pre);
  const p = await createSnapshot(store, signer, { reason: "pre" });
  const preTree = store.getTree(p.envelope.body.workspace!.tree);
  const targetTree = store.getTree(t.envelope.body.workspace!.tree);
  const made = planMove({ target: targetTree, base: preTree, disk: preTree });
  const plan: Record<string, unknown> = {
    target_tree: t.envelope.body.workspace!.tree,
    pre_tree: p.envelope.body.workspace!.tree,
    writes: made.writes.map((w) => w.path),
    deletes: made.deletes,
    workspace: true,
    session: true,
    pre_restore: null,
    git_commit: null,
    git_back: null,
  };
  craft(plan);
  const op = store.transaction("restore", () =>
    startOperation(store, {
      kind: "restore",
      session: "main",
      branch: "main",
      source: p.id,
      target: t.id,
      plan: plan as never,
    }));
  return { store, signer, op: op.id };
}

/** States a restore can be killed in, as the steps it had done by then. */
const KILLED_STATES: { name: string; pre: Spec; target: Spec; done: (ws: string) => void }[] = [
  {
    name: "file to directory, nothing done",
    pre: { a: "A" },
    target: { "a/x": "X" },
    done: () => {},
  },
  {
    name: "file to directory, file deleted",
    pre: { a: "A" },
    target: { "a/x": "X" },
    done: (ws) => fs.rmSync(join(ws, "a")),
  },
  {
    name: "file to directory, directory made, file not yet renamed in",
    pre: { a: "A" },
    target: { "a/x": "X" },
    done: (ws) => {
      fs.rmSync(join(ws, "a"));
      fs.mkdirSync(join(ws, "a"));
      fs.writeFileSync(join(ws, "a", ".ctxsnap-tmp-0123456789abcdef"), "X");
    },
  },
  {
    name: "file to directory, file written",
    pre: { a: "A" },
    target: { "a/x": "X" },
    done: (ws) => {
      fs.rmSync(join(ws, "a"));
      writeSpec(ws, { "a/x": "X" });
    },
  },
  {
    name: "directory to file, directory emptied and pruned",
    pre: { "b/y": "Y" },
    target: { b: "B" },
    done: (ws) => fs.rmSync(join(ws, "b"), { recursive: true }),
  },
  {
    name: "directory to file, file written",
    pre: { "b/y": "Y" },
    target: { b: "B" },
    done: (ws) => {
      fs.rmSync(join(ws, "b"), { recursive: true });
      fs.writeFileSync(join(ws, "b"), "B");
    },
  },
  {
    name: "directory to symlink, symlink written",
    pre: { "c/z": "Z" },
    target: { c: { link: "elsewhere" } },
    done: (ws) => {
      fs.rmSync(join(ws, "c"), { recursive: true });
      fs.symlinkSync("elsewhere", join(ws, "c"));
    },
  },
  {
    name: "file written with its mode under the umask",
    pre: { "m.txt": "M1" },
    target: { "m.txt": { text: "M2", mode: 0o666 } },
    done: (ws) => {
      fs.rmSync(join(ws, "m.txt"));
      fs.writeFileSync(join(ws, "m.txt"), "M2", { mode: 0o666 & ~umask() });
    },
  },
];

Deno.test("recover: every state a killed restore leaves can be ended by recover and by recover --abort", async () => {
  const { recover } = await import("../../lib/workspace/move/recover.ts");
  for (const state of KILLED_STATES) {
    for (const abort of [false, true]) {
      await withTempDir(async (ws) => {
        const { store, signer, op } = await interrupted(ws, state.pre, state.target);
        try {
          state.done(ws);
          const what = `${state.name}, recover${abort ? " --abort" : ""}`;
          const result = await recover(store, signer, { abort }).catch((error) => {
            throw new Error(`${what}: ${error}`);
          });
          assertEquals(result.operation, op, what);
          assertEquals(contentOf(ws), expected(abort ? state.pre : state.target), what);
        } finally {
          store.close();
        }
      });
    }
  }
});

Deno.test("recover: a crafted plan naming .git internals, a path its trees do not hold or an option as git_back is refused, and --discard ends it touching nothing", async () => {
  const { recover } = await import("../../lib/workspace/move/recover.ts");
  const crafts: [string, (plan: Record<string, unknown>) => void][] = [
    ["deletes .git/config", (plan) => (plan.deletes as string[]).push(".git/config")],
    ["deletes .GIT./hooks", (plan) => (plan.deletes as string[]).push(".GIT./hooks")],
    ["deletes an ignored file", (plan) => (plan.deletes as string[]).push("ignored.log")],
    ["writes a path not in its target", (plan) => (plan.writes as string[]).push("new.txt")],
    ["git_back is an option", (plan) => (plan.git_back = "--orphan=x")],
    ["writes ../escape", (plan) => (plan.writes as string[]).push("../escape")],
    ["has an unknown field", (plan) => (plan.run = "rm -rf ~")],
  ];
  for (const [name, craft] of crafts) {
    await withTempDir(async (ws) => {
      const { store, signer, op } = await interrupted(
        ws,
        { "keep.txt": "K", "a.txt": "A1" },
        { "keep.txt": "K", "a.txt": "A2" },
        craft,
      );
      try {
        fs.mkdirSync(join(ws, ".git"));
        fs.writeFileSync(join(ws, ".git", "config"), "[core]\n");
        fs.writeFileSync(join(ws, ".gitignore"), "ignored.log\n");
        fs.writeFileSync(join(ws, "ignored.log"), "log\n");
        const before = contentOf(ws);
        for (const abort of [false, true]) {
          const error = await recover(store, signer, { abort }).then(() => null, (e) => e);
          assert(error instanceof IntegrityError, `${name}: ${error}`);
          assertEquals(contentOf(ws), before, name);
        }
        const closed = await recover(store, signer, { discard: true });
        assertEquals([closed.operation, closed.status, closed.discarded], [op, "aborted", true]);
        assertEquals(contentOf(ws), before, name);
        await createSnapshot(store, signer, { reason: "unblocked" });
      } finally {
        store.close();
      }
    });
  }
});

Deno.test("recover: a crafted switch, undo or redo plan (a .git path, a path its trees do not hold, a bad branch or reverts, an unknown or missing field) is refused, and --discard ends it touching nothing", async () => {
  const { recover } = await import("../../lib/workspace/move/recover.ts");
  const { startOperation } = await import("../../lib/repository/operations.ts");
  const { captureView } = await import("../../lib/history/oplog.ts");
  type Plan = Record<string, unknown> & { writes: string[]; deletes: string[] };
  const crafts: [string, string, (plan: Plan) => void][] = [
    ["switch", "none (the control: it finishes)", () => {}],
    ["switch", "writes .git/config", (plan) => plan.writes.push(".git/config")],
    ["switch", "deletes .GIT./hooks", (plan) => plan.deletes.push(".GIT./hooks")],
    ["switch", "deletes an ignored file", (plan) => plan.deletes.push("ignored.log")],
    ["switch", "writes a path not in its target", (plan) => plan.writes.push("new.txt")],
    ["switch", "to_branch is not a name", (plan) => (plan.to_branch = "../x")],
    ["switch", "has no view_before (only a restore may be legacy)", (plan) => {
      delete plan.view_before;
    }],
    ["undo", "reverts is an option", (plan) => (plan.reverts = "--all")],
    ["redo", "has an unknown field", (plan) => (plan.run = "rm -rf ~")],
    ["undo", "lacks a field", (plan) => delete plan.baseline],
  ];
  for (const [kind, name, craft] of crafts) {
    await withTempDir(async (ws) => {
      fs.writeFileSync(join(ws, "keep.txt"), "K");
      fs.writeFileSync(join(ws, "a.txt"), "A2");
      const store = Store.init(join(ws, ".ctxsnap"), ws);
      try {
        const signer = await makeSigner();
        const target = await createSnapshot(store, signer, { reason: "target" });
        fs.writeFileSync(join(ws, "a.txt"), "A1");
        const pre = await createSnapshot(store, signer, { reason: "pre" });
        const plan: Plan = {
          target_tree: target.envelope.body.workspace!.tree,
          pre_tree: pre.envelope.body.workspace!.tree,
          writes: ["a.txt"],
          deletes: [],
          workspace: true,
          baseline: target.envelope.body.workspace!.tree,
          sessions: ["main"],
          view_before: captureView(store, ["main"]) as unknown,
          ...(kind === "switch"
            ? { from_branch: "main", to_branch: "main" }
            : { reverts: "op-0123456789abcdef" }),
        };
        craft(plan);
        const op = store.transaction(kind, () =>
          startOperation(store, {
            kind: kind as "switch",
            session: "main",
            branch: "main",
            target: kind === "switch" ? target.id : null,
            plan: plan as never,
          }).id);
        fs.mkdirSync(join(ws, ".git"));
        fs.writeFileSync(join(ws, ".git", "config"), "[core]\n");
        fs.writeFileSync(join(ws, ".gitignore"), "ignored.log\n");
        fs.writeFileSync(join(ws, "ignored.log"), "log\n");
        const before = contentOf(ws);
        const what = `${kind}, ${name}`;
        if (name.startsWith("none")) {
          const done = await recover(store, signer);
          assertEquals([done.operation, done.kind, done.status], [op, "switch", "done"], what);
          assertEquals(fs.readFileSync(join(ws, "a.txt"), "utf8"), "A2", what);
          return;
        }
        for (const abort of [false, true]) {
          const error = await recover(store, signer, { abort }).then(() => null, (e) => e);
          assert(error instanceof IntegrityError, `${what}: ${error}`);
          assert(/invalid plan/.test(error.message), `${what}: ${error.message}`);
          assertEquals(contentOf(ws), before, what);
        }
        const closed = await recover(store, signer, { discard: true });
        assertEquals([closed.operation, closed.status, closed.discarded], [op, "aborted", true]);
        assertEquals(contentOf(ws), before, what);
        await createSnapshot(store, signer, { reason: "unblocked" });
      } finally {
        store.close();
      }
    });
  }
});

Deno.test("recover: a secret a crafted pre-restore tree lists with other content is a conflict, never deleted or overwritten", async () => {
  const { recover } = await import("../../lib/workspace/move/recover.ts");
  await withTempDir(async (ws) => {
    // The crafted pre tree holds an `.env` entry; the real one holds something else.
    const fake = new TextEncoder().encode("FAKE=1\n");
    fs.writeFileSync(join(ws, "a.txt"), "A\n");
    const s = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const me = await makeSigner();
      const target = await createSnapshot(s, me, { reason: "target" });
      const targetTree = s.getTree(target.envelope.body.workspace!.tree);
      const blob = s.putBlob(fake);
      const preTree = validateTree({
        version: 1,
        entries: [
          { path: ".env", type: "file", blob, size: fake.length, mode: 0o600 },
          ...targetTree.entries,
        ],
        skipped: [],
      });
      const preId = s.putTree(preTree);
      const { startOperation } = await import("../../lib/repository/operations.ts");
      s.transaction("restore", () =>
        startOperation(s, {
          kind: "restore",
          session: "main",
          branch: "main",
          source: target.id,
          target: target.id,
          plan: {
            target_tree: target.envelope.body.workspace!.tree,
            pre_tree: preId,
            writes: [],
            deletes: [".env"],
            workspace: true,
            session: false,
            pre_restore: null,
            git_commit: null,
            git_back: null,
          },
        }));
      fs.writeFileSync(join(ws, ".env"), "REAL_TOKEN=42\n");
      for (const abort of [false, true]) {
        const error = await recover(s, me, { abort }).then(() => null, (e) => e);
        assert(error instanceof ConflictError, String(error));
        assertEquals(fs.readFileSync(join(ws, ".env"), "utf8"), "REAL_TOKEN=42\n");
      }
    } finally {
      s.close();
    }
  });
});

Deno.test("recover --abort: a stored git_back naming a tracked file is switched to as a ref, never checked out as a path (the edit stays)", async () => {
  const { recover } = await import("../../lib/workspace/move/recover.ts");
  await withTempDir(async (ws) => {
    git(ws, "init", "-q");
    fs.writeFileSync(join(ws, ".gitignore"), ".ctxsnap/\n");
    fs.writeFileSync(join(ws, "a.txt"), "committed\n");
    git(ws, "add", "-A");
    git(ws, "commit", "-qm", "one");
    const { store, signer } = await interrupted(ws, {}, {}, (plan) => {
      plan.git_back = "a.txt";
    });
    try {
      fs.writeFileSync(join(ws, "a.txt"), "my edit\n");
      const result = await recover(store, signer, { abort: true });
      assertEquals(result.status, "aborted");
      assertEquals(fs.readFileSync(join(ws, "a.txt"), "utf8"), "my edit\n");
    } finally {
      store.close();
    }
  });
});

// ---------------------------------------------------------------------------
// 2. nothing unverified is acted on: envelopes are checked when read

/** Rewrites snapshot `id`'s stored envelope with `edit`, the way someone with file access could. */
async function tamperEnvelope(
  storeDir: string,
  id: string,
  edit: (envelope: Envelope) => void,
): Promise<void> {
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(join(storeDir, "index.db"));
  try {
    const row = db.prepare("SELECT envelope FROM snapshots WHERE id = ?").get(id) as {
      envelope: Uint8Array;
    };
    const envelope = JSON.parse(new TextDecoder().decode(row.envelope)) as Envelope;
    edit(envelope);
    editBehindCtxsnap(db, "snapshots", () => {
      db.prepare("UPDATE snapshots SET envelope = ? WHERE id = ?").run(
        canonicalBytes(envelope as never),
        id,
      );
    });
  } finally {
    db.close();
  }
}

Deno.test("envelopes: restore, switch, materialize, diff, show and publish refuse an envelope edited in the store, acting on nothing", async () => {
  const { restoreSnapshot } = await import("../../lib/workspace/move/restore.ts");
  const { switchTo } = await import("../../lib/workspace/move/switch.ts");
  const { forkBranch } = await import("../../lib/history/branch.ts");
  const { planPublish } = await import("../../lib/share/publish.ts");
  const { loadOrCreateIdentity } = await import("../../lib/keys/identity.ts");
  await withStore(async (ws) => {
    const storeDir = join(ws.path, ".ctxsnap");
    const me = await loadOrCreateIdentity(ws.configDir);
    let a: string, b: string;
    const store = Store.open(storeDir);
    try {
      fs.writeFileSync(join(ws.path, "a.txt"), "A\n");
      a = (await createSnapshot(store, me, { reason: "A" })).id;
      forkBranch(store, a, "exp");
      fs.writeFileSync(join(ws.path, "a.txt"), "B\n");
      b = (await createSnapshot(store, me, { reason: "B" })).id;
      await restoreSnapshot(store, me, a);
      fs.writeFileSync(join(ws.path, "a.txt"), "C\n");
      await createSnapshot(store, me, { reason: "C" });
      // A's reason (also the head of branch exp) is edited without re-signing;
      // B's signature is flipped.
      await tamperEnvelope(storeDir, a, (e) => (e.body.reason = "edited"));
      await tamperEnvelope(storeDir, b, (e) => {
        e.signature.value = (e.signature.value[0] === "0" ? "1" : "0") + e.signature.value.slice(1);
      });
      const refusals: [string, () => Promise<unknown>][] = [
        ["restore (body edited)", () => restoreSnapshot(store, me, a)],
        ["restore (signature flipped)", () => restoreSnapshot(store, me, b)],
        ["switch (the branch head's body edited)", () => switchTo(store, me, "exp")],
        ["publish", () => planPublish(store, a, { withWorkspace: true })],
      ];
      for (const [what, attempt] of refusals) {
        const error = await attempt().then(() => null, (e) => e);
        assert(error instanceof IntegrityError, `${what}: ${error}`);
        assert(/not intact|does not verify/.test(error.message), `${what}: ${error.message}`);
      }
    } finally {
      store.close();
    }
    // The commands that read an envelope themselves refuse it too.
    const dest = join(ws.root, "dest");
    for (const args of [["materialize", a, dest], ["diff", a], ["show", b]]) {
      const result = await ws.run(args);
      assertEquals(result.code, 1, `${args[0]}: ${result.stderr}`);
      assert(/not intact|does not verify/.test(result.stderr), `${args[0]}: ${result.stderr}`);
    }
    assertEquals(fs.readFileSync(join(ws.path, "a.txt"), "utf8"), "C\n");
    assert(!(await exists(dest)), "materialize wrote something");
  });
});

// ---------------------------------------------------------------------------
// 1. store trust

/** Every file below `dir` with its bytes, to prove nothing was written. */
function snapshotFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (abs: string) => {
    for (const name of fs.readdirSync(abs)) {
      const path = join(abs, name);
      const stat = fs.lstatSync(path);
      if (stat.isDirectory()) walk(path);
      else out.set(path, stat.isFile() ? sha256Hex(fs.readFileSync(path)) : "link");
    }
  };
  walk(dir);
  return out;
}

Deno.test("store trust: a store committed into a repository is refused in a clone by every command until adopted, and nothing is written", async () => {
  await withStore(async (ws) => {
    git(ws.path, "init", "-q");
    expectCode(await ws.run(["create", "-m", "mine"]), 0, "create");
    git(ws.path, "add", "-A");
    git(ws.path, "commit", "-qm", "with the store");
    const clone = join(ws.root, "clone");
    git(ws.root, "clone", "-q", ws.path, clone);
    assert(fs.existsSync(join(clone, ".ctxsnap", "index.db")), "the clone holds the store");
    const before = snapshotFiles(join(clone, ".ctxsnap"));
    // Same user, same config directory: still not the store they created.
    for (const args of [["list"], ["create", "-m", "x"], ["gc"], ["init"]]) {
      const result = await ws.run(args, { cwd: clone });
      assertEquals(result.code, 1, `${args.join(" ")}: ${result.stderr}`);
      assert(/did not create or adopt|not created or adopted/.test(result.stderr), result.stderr);
      assert(result.stderr.includes("init --adopt"), result.stderr);
    }
    const dry = await ws.run(["init", "--adopt", "--dry-run", "--json"], { cwd: clone });
    expectCode(dry, 0, "adopt --dry-run");
    assertEquals([dry.json().adopted, dry.json().snapshots], [false, 1]);
    assertEquals(dry.json().already_registered, false);
    assertEquals(snapshotFiles(join(clone, ".ctxsnap")), before);
    // The user's own store, by contrast, is said to be theirs already, not "would adopt".
    const own = await ws.run(["init", "--adopt", "--dry-run"]);
    expectCode(own, 0, "adopt --dry-run of the user's own store");
    assert(own.stdout.includes("is already yours"), own.stdout);
    assert(!own.stdout.includes("Would adopt"), own.stdout);
    // Adopting it again takes nothing away: its run files (the HTTP hooks' token) and policies stay.
    const run = join(ws.path, ".ctxsnap", "run");
    await Deno.mkdir(run, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(join(run, "http.json"), "{}\n", { mode: 0o600 });
    await Deno.writeTextFile(join(ws.path, ".ctxsnap", "retention"), "keep-last 50\n", {
      mode: 0o600,
    });
    const again = await ws.run(["init", "--adopt", "--json"]);
    expectCode(again, 0, "adopt of the user's own store");
    assert(
      (again.json().extra_files as { action: string }[]).every((f) => f.action === "kept"),
      JSON.stringify(again.json().extra_files),
    );
    assert(fs.existsSync(join(run, "http.json")), "the HTTP hooks' token file is kept");
    assert(fs.existsSync(join(ws.path, ".ctxsnap", "retention")), "the retention policy is kept");
    expectCode(await ws.run(["list"], { cwd: clone }), 1, "still refused after a dry run");
    const adopted = await ws.run(["init", "--adopt", "--json"], { cwd: clone });
    expectCode(adopted, 0, "adopt");
    assertEquals(adopted.json().adopted, true);
    expectCode(
      await ws.run(["create", "-m", "now mine"], { cwd: clone }),
      0,
      "create after adopting",
    );
  });
});

Deno.test("store trust: a moved or copied store must be adopted again, while the original keeps working", async () => {
  const { Keyring } = await import("../../lib/keys/keyring.ts");
  const { adoptStore } = await import("../../lib/history/adopt.ts");
  const { registerStore } = await import("../../lib/repository/trust.ts");
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    const config = join(root, "config");
    fs.mkdirSync(ws);
    fs.writeFileSync(join(ws, "a.txt"), "a\n");
    Store.init(join(ws, ".ctxsnap"), ws).close();
    registerStore(config, join(ws, ".ctxsnap"), "init");
    const opens = (dir: string) => {
      try {
        Store.open(join(dir, ".ctxsnap"), { registry: config }).close();
        return true;
      } catch (error) {
        if (error instanceof StoreTrustError) return false;
        throw error;
      }
    };
    assert(opens(ws), "the store its user created");
    const copy = join(root, "copy");
    await new Deno.Command("cp", { args: ["-a", ws, copy] }).output();
    assert(!opens(copy), "a copy is someone else's until adopted");
    assert(opens(ws), "the original still opens");
    const moved = join(root, "moved");
    fs.renameSync(ws, moved);
    assert(!opens(moved), "a moved store");
    await adoptStore(join(moved, ".ctxsnap"), moved, config, new Keyring([], null));
    assert(opens(moved), "a moved store, adopted");
  });
});

Deno.test("store trust: every store path is checked with lstat (symlink, file type, owner, group/world-writable, stray entry) before the index is opened", async () => {
  const cases: [string, (dir: string, outside: string) => void][] = [
    ["tmp/ is a symlink", (dir, outside) => {
      fs.rmSync(join(dir, "tmp"), { recursive: true });
      fs.symlinkSync(outside, join(dir, "tmp"));
    }],
    ["objects/ is a symlink", (dir, outside) => {
      fs.rmSync(join(dir, "objects"), { recursive: true });
      fs.symlinkSync(outside, join(dir, "objects"));
    }],
    [
      "objects/ab is a symlink",
      (dir, outside) => fs.symlinkSync(outside, join(dir, "objects", "ab")),
    ],
    ["objects/ holds a stray file", (dir) => fs.writeFileSync(join(dir, "objects", "evil"), "")],
    ["index.db-wal is a symlink", (dir, outside) => {
      fs.symlinkSync(join(outside, "wal"), join(dir, "index.db-wal"));
    }],
    ["index.db-journal is a directory", (dir) => fs.mkdirSync(join(dir, "index.db-journal"))],
    ["index.db is world-writable", (dir) => fs.chmodSync(join(dir, "index.db"), 0o666)],
    ["the store is group-writable", (dir) => fs.chmodSync(dir, 0o770)],
    ["tmp/ is world-writable", (dir) => fs.chmodSync(join(dir, "tmp"), 0o777)],
    [
      "objects/ab is group-writable",
      (dir) => {
        fs.mkdirSync(join(dir, "objects", "ab"));
        fs.chmodSync(join(dir, "objects", "ab"), 0o775);
      },
    ],
    ["index.db is owned by another user", (dir) => fs.chownSync(join(dir, "index.db"), 4242, 4242)],
    ["objects/ab is owned by another user", (dir) => {
      fs.mkdirSync(join(dir, "objects", "ab"), { mode: 0o700 });
      fs.chownSync(join(dir, "objects", "ab"), 4242, 4242);
    }],
  ];
  for (const [what, plant] of cases) {
    if (what.includes("another user") && Deno.uid() !== 0) continue; // needs root to give away
    await withTempDir((root) => {
      const ws = join(root, "ws");
      const outside = join(root, "outside");
      fs.mkdirSync(ws);
      fs.mkdirSync(outside);
      fs.writeFileSync(join(outside, "keep.txt"), "outside\n");
      const dir = join(ws, ".ctxsnap");
      Store.init(dir, ws).close();
      plant(dir, outside);
      for (const open of [() => Store.open(dir), () => Store.open(dir, { readOnly: true })]) {
        const error = (() => {
          try {
            open().close();
            return null;
          } catch (e) {
            return e;
          }
        })();
        assert(error instanceof StoreTrustError, `${what}: ${error}`);
        // Each refusal is its own check's: a symlink is refused as one (by lstat), never
        // merely as "not a directory".
        if (what.endsWith("is a symlink")) {
          assert(error.message.includes("is a symbolic link"), `${what}: ${error.message}`);
        }
      }
      assertThrows(() => Store.init(dir, ws).close(), StoreTrustError);
      assertEquals(fs.readdirSync(outside), ["keep.txt"], what);
    });
  }
});

Deno.test("store trust: a schema with an extra trigger, view, table or index, or a changed definition, is refused before anything is written", async () => {
  const { DatabaseSync } = await import("node:sqlite");
  const changes = [
    // The attack: rewrite what capture trusts, so a benign file is recorded as other bytes.
    "CREATE TRIGGER poison AFTER INSERT ON stat_cache BEGIN UPDATE stat_cache SET blob = 'x' WHERE path = NEW.path; END",
    "CREATE VIEW v AS SELECT 1",
    "CREATE TABLE extra (x)",
    "CREATE INDEX extra_i ON objects (size)",
    "DROP TRIGGER snapshots_are_immutable",
  ];
  for (const sql of changes) {
    await withTempDir(async (ws) => {
      fs.writeFileSync(join(ws, "a.txt"), "a\n");
      const dir = join(ws, ".ctxsnap");
      const store = Store.init(dir, ws);
      try {
        await createSnapshot(store, await makeSigner(), { reason: "one" });
      } finally {
        store.close();
      }
      const db = new DatabaseSync(join(dir, "index.db"));
      db.exec(sql);
      db.close();
      const before = snapshotFiles(dir);
      for (const open of [() => Store.open(dir), () => Store.open(dir, { readOnly: true })]) {
        const error = (() => {
          try {
            open().close();
            return null;
          } catch (e) {
            return e;
          }
        })();
        assert(error instanceof StoreTrustError, `${sql}: ${error}`);
        assert(error.message.includes("schema"), error.message);
      }
      assertThrows(() => Store.init(dir, ws).close(), StoreTrustError, "schema");
      assertEquals(snapshotFiles(dir), before, "nothing written");
    });
  }
});

Deno.test("gc: tmp/ or objects/xx swapped for a symlink after the store was opened stops the sweep, and nothing outside is deleted", async () => {
  const { collectGarbage } = await import("../../lib/repository/gc.ts");
  for (const victim of ["tmp", "objects/ab"]) {
    await withTempDir((root) => {
      const ws = join(root, "ws");
      const outside = join(root, "outside");
      fs.mkdirSync(ws);
      fs.mkdirSync(outside);
      for (const name of ["precious.txt", "t-1", "a".repeat(64)]) {
        fs.writeFileSync(join(outside, name), "outside\n");
      }
      const dir = join(ws, ".ctxsnap");
      const store = Store.init(dir, ws);
      try {
        store.putBlob(new Uint8Array(2 * 1024 * 1024)); // a file-backed blob nothing references
        fs.rmSync(join(dir, victim), { recursive: true, force: true });
        fs.symlinkSync(outside, join(dir, victim));
        let stopped = false;
        try {
          collectGarbage(store);
        } catch {
          stopped = true;
        }
        assert(stopped, `gc went on through ${victim}`);
        assertEquals(fs.readdirSync(outside).sort(), ["a".repeat(64), "precious.txt", "t-1"]);
      } finally {
        store.close();
      }
    });
  }
});

Deno.test("store trust: init never creates a store through a planted .ctxsnap symlink", async () => {
  await withTempDir((root) => {
    const ws = join(root, "ws");
    const outside = join(root, "outside");
    fs.mkdirSync(ws);
    fs.mkdirSync(outside);
    fs.symlinkSync(outside, join(ws, ".ctxsnap"));
    assertThrows(() => Store.init(join(ws, ".ctxsnap"), ws), StoreTrustError, "symbolic link");
    assertEquals(fs.readdirSync(outside), []);
  });
});

Deno.test("store trust: adopt refuses a store that does not verify or names another workspace, and clears the stat cache and tree cache of one it adopts", async () => {
  const { Keyring } = await import("../../lib/keys/keyring.ts");
  const { adoptStore } = await import("../../lib/history/adopt.ts");
  const { isRegistered } = await import("../../lib/repository/trust.ts");
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    const config = join(root, "config");
    fs.mkdirSync(ws);
    fs.writeFileSync(join(ws, "a.txt"), "a\n");
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    let id: string;
    try {
      id = (await createSnapshot(store, await makeSigner(), { reason: "one" })).id;
    } finally {
      store.close();
    }
    const trust = new Keyring([], null);
    const before = Store.open(join(ws, ".ctxsnap"), { readOnly: true });
    try {
      assertEquals(before.stmt("SELECT count(*) AS n FROM tree_cache").get(), { n: 1 });
    } finally {
      before.close();
    }
    // A tampered copy is not adopted.
    const tampered = join(root, "tampered");
    await new Deno.Command("cp", { args: ["-a", ws, tampered] }).output();
    await tamperEnvelope(join(tampered, ".ctxsnap"), id, (e) => (e.body.reason = "edited"));
    const refused = await adoptStore(join(tampered, ".ctxsnap"), tampered, config, trust)
      .then(() => null, (e) => e);
    assert(refused instanceof IntegrityError, String(refused));
    assert(refused.message.includes("does not verify"), refused.message);
    assert(!isRegistered(config, join(tampered, ".ctxsnap")), "a tampered store was registered");
    // A store recorded for another workspace is not adopted for this one.
    const other = join(root, "other");
    await new Deno.Command("cp", { args: ["-a", ws, other] }).output();
    const elsewhere = await adoptStore(join(other, ".ctxsnap"), root, config, trust)
      .then(() => null, (e) => e);
    assert(elsewhere instanceof ConflictError, String(elsewhere));
    // Adopting clears the stat cache (it describes files on the machine it came from).
    const adopted = await adoptStore(join(other, ".ctxsnap"), other, config, trust);
    assertEquals([adopted.adopted, adopted.snapshots, adopted.untrustedSigners.length], [
      true,
      1,
      1,
    ]);
    const reopened = Store.open(join(other, ".ctxsnap"), { readOnly: true, registry: config });
    try {
      assertEquals(reopened.stmt("SELECT count(*) AS n FROM stat_cache").get(), { n: 0 });
      assertEquals(reopened.stmt("SELECT count(*) AS n FROM tree_cache").get(), { n: 0 });
    } finally {
      reopened.close();
    }
  });
});

Deno.test("git: a .git/config that makes git block (include.path naming a FIFO) cannot hang create", async () => {
  await withStore(async (ws) => {
    git(ws.path, "init", "-q");
    const fifo = join(ws.root, "config.fifo");
    assert((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success, "mkfifo");
    git(ws.path, "config", "include.path", fifo);
    const made = await ws.run(["create", "-m", "x", "--json"], {
      env: { CTXSNAP_GIT_TIMEOUT_MS: "1000" },
      timeoutMs: 60_000,
    });
    expectCode(made, 0, "create next to a blocking git config");
    assert("git" in made.json(), "create --json names its git anchor");
    assertEquals(made.json().git, null); // git was killed: no anchor, no hang
  });
});

// ---------------------------------------------------------------------------
// each layer of a layered defence, on its own

Deno.test("validateStoredPlan() refuses a reserved name in any segment of a path, not only the first", async () => {
  const { validateStoredPlan } = await import("../../lib/workspace/move/_stored_plan.ts");
  const plan = (writes: string[], deletes: string[]) => ({
    id: "op-0123456789abcdef",
    kind: "restore",
    session: "main",
    branch: "main",
    target: "a".repeat(64),
    plan: {
      target_tree: "b".repeat(64),
      pre_tree: "c".repeat(64),
      writes,
      deletes,
      workspace: true,
      session: false,
      pre_restore: null,
      git_commit: null,
      git_back: null,
    },
  });
  // The same plan without the reserved segment is accepted: the refusal below is this check's.
  validateStoredPlan(plan(["sub/a.txt"], ["sub/b.txt"]), "/w", "/w/.ctxsnap");
  for (const path of ["sub/.git/config", "a/b/GIT~1/hooks/post-checkout", "x/.ctxsnap/index.db"]) {
    for (const [writes, deletes] of [[[path], []], [[], [path]]] as const) {
      assertThrows(
        () => validateStoredPlan(plan([...writes], [...deletes]), "/w", "/w/.ctxsnap"),
        IntegrityError,
        "reserved name",
      );
    }
  }
});

/** The `-c` overrides every git run carries, in order (lib/integrations/git/git.ts, SECURITY.md). */
const EXPECTED_GIT_OVERRIDES = [
  "core.fsmonitor=false",
  "core.hooksPath=/dev/null",
  "submodule.recurse=false",
];

Deno.test({
  name:
    "git: every git run carries exactly the documented overrides and environment (recorded by a git wrapper first on PATH)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withTempDir((root) => {
      const ws = join(root, "ws");
      const bin = join(root, "bin");
      const runs = join(root, "runs");
      fs.mkdirSync(ws);
      fs.mkdirSync(bin);
      fs.mkdirSync(runs);
      git(ws, "init", "-q");
      fs.writeFileSync(join(ws, ".gitignore"), ".ctxsnap/\n");
      fs.writeFileSync(join(ws, "a.txt"), "one\n");
      git(ws, "add", "-A");
      git(ws, "commit", "-qm", "one");
      git(ws, "config", "filter.evil.clean", "false");
      git(ws, "config", "filter.lfs.smudge", "false");
      const real = new TextDecoder().decode(
        new Deno.Command("sh", { args: ["-c", "command -v git"], stdout: "piped" }).outputSync()
          .stdout,
      ).trim();
      assert(real.startsWith("/"), `git is on PATH (${real})`);
      fs.writeFileSync(
        join(bin, "git"),
        `#!/bin/sh\nd=$(mktemp -d '${runs}/run.XXXXXX')\nprintf '%s\\0' "$@" > "$d/argv"\nenv -0 > "$d/env"\nexec '${real}' "$@"\n`,
        { mode: 0o755 },
      );
      // Variables that would point git at another repository, config or program never reach
      // it (ctxsnap's own values replace the others).
      const HOSTILE_ENV: Record<string, string> = {
        GIT_DIR: join(root, "elsewhere"),
        GIT_INDEX_FILE: join(root, "index"),
        GIT_SSH_COMMAND: "false",
        GIT_EXTERNAL_DIFF: "false",
        GIT_CONFIG_PARAMETERS: "'core.fsmonitor'='false'",
      };
      // The scenario runs in a child process: the wrapper on PATH and the hostile variables must
      // not reach the other test modules this runner executes at the same time in its process.
      const lib = (p: string) => JSON.stringify(new URL(`../../lib/${p}`, import.meta.url).href);
      const script = join(root, "scenario.ts");
      fs.writeFileSync(
        script,
        `import { Store } from ${lib("repository/store.ts")};
import { createSnapshot } from ${lib("history/create.ts")};
import { restoreSnapshot } from ${lib("workspace/move/restore.ts")};
import { generateSeed, keyIdOf, publicKeyFromSeed } from ${lib("crypto/ed25519.ts")};
import { toHex } from ${lib("encoding/hex.ts")};
const ws = ${JSON.stringify(ws)};
const seed = generateSeed();
const publicKey = await publicKeyFromSeed(seed);
const signer = { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
const store = Store.init(ws + "/.ctxsnap", ws);
const first = await createSnapshot(store, signer, { reason: "one" });
Deno.writeTextFileSync(ws + "/a.txt", "two\\n");
// The scenario's own commit, with the real git and a clean environment.
const commit = new Deno.Command(${JSON.stringify(real)}, {
  args: ["-c", "user.email=t@example.invalid", "-c", "user.name=t", "-c", "filter.evil.clean=",
    "-c", "filter.lfs.smudge=", "commit", "-qam", "two"],
  cwd: ws, clearEnv: true, env: { PATH: "/usr/bin:/bin", HOME: ${JSON.stringify(root)} },
}).outputSync();
if (!commit.success) throw new Error(new TextDecoder().decode(commit.stderr));
await createSnapshot(store, signer, { reason: "two" });
await restoreSnapshot(store, signer, first.id, { git: true });
store.close();
`,
      );
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-lock", script],
        env: {
          ...HOSTILE_ENV,
          PATH: `${bin}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
          GIT_ALLOW_PROTOCOL: "file:ext",
          GIT_CEILING_DIRECTORIES: "/nowhere",
        },
        stdout: "piped",
        stderr: "piped",
      }).outputSync();
      assert(child.success, new TextDecoder().decode(child.stderr));
      const recorded = fs.readdirSync(runs).map((name) => {
        const argv = fs.readFileSync(join(runs, name, "argv"), "utf8").split("\0").slice(0, -1);
        const env = new Map(
          fs.readFileSync(join(runs, name, "env"), "utf8").split("\0").filter((l) => l !== "")
            .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
        );
        return { argv, env };
      }).filter(({ argv }) => argv[1] !== "user.email=t@example.invalid"); // the test's own git
      assert(recorded.length >= 4, `only ${recorded.length} git runs recorded`);
      const filterArgs = ["evil", "lfs"].flatMap((driver) => [
        ...["clean", "smudge", "process"].map((c) =>
          `--config-env=filter.${driver}.${c}=CTXSNAP_GIT_EMPTY`
        ),
        `--config-env=filter.${driver}.required=CTXSNAP_GIT_FALSE`,
      ]);
      const prefix = EXPECTED_GIT_OVERRIDES.flatMap((s) => ["-c", s]);
      const commands = new Set<string>();
      for (const { argv, env } of recorded) {
        assertEquals(argv.slice(0, prefix.length), prefix, `overrides of git ${argv.join(" ")}`);
        let rest = argv.slice(prefix.length);
        if (rest[0] === "config") {
          assertEquals(rest, ["config", "-z", "--name-only", "--get-regexp", "^filter\\."]);
        } else {
          const given = rest.slice(0, filterArgs.length);
          assertEquals(
            given.slice().sort(),
            filterArgs.slice().sort(),
            `filters of ${rest.join(" ")}`,
          );
          rest = rest.slice(filterArgs.length);
        }
        commands.add(rest[0]!);
        assert(
          ["config", "status", "ls-files", "switch"].includes(rest[0]!),
          `an unexpected git command: ${rest.join(" ")}`,
        );
        if (rest[0] === "switch") {
          assertEquals(rest.slice(0, 4), ["switch", "--quiet", "--detach", "--end-of-options"]);
        }
        const expectedEnv: Record<string, string> = {
          GIT_OPTIONAL_LOCKS: "0",
          LC_ALL: "C",
          GIT_TERMINAL_PROMPT: "0",
          GIT_NO_LAZY_FETCH: "1",
          GIT_ALLOW_PROTOCOL: "",
          GIT_WORK_TREE: ws,
          GIT_CEILING_DIRECTORIES: root,
          CTXSNAP_GIT_EMPTY: "",
          CTXSNAP_GIT_FALSE: "false",
        };
        for (const [name, value] of Object.entries(expectedEnv)) {
          assertEquals(env.get(name), value, `${name} of git ${rest[0]}`);
        }
        for (const name of Object.keys(HOSTILE_ENV)) {
          assert(!env.has(name), `${name} reached git ${rest[0]}`);
        }
      }
      assertEquals([...commands].sort(), ["config", "ls-files", "status", "switch"]);
    });
  },
});

Deno.test("git: a repository's protocol.<name>.allow cannot re-enable a transport for ctxsnap's git runs", async () => {
  await withTempDir(async (root) => {
    const src = join(root, "src");
    const ws = join(root, "ws");
    fs.mkdirSync(src);
    fs.mkdirSync(ws);
    git(src, "init", "-q");
    git(src, "commit", "-q", "--allow-empty", "-m", "x");
    git(ws, "init", "-q");
    git(ws, "config", "protocol.file.allow", "always");
    git(ws, "config", "protocol.ext.allow", "always");
    // Outside ctxsnap, the planted config lets git reach the other repository...
    git(ws, "-c", "protocol.allow=never", "ls-remote", `file://${src}`);
    // ...while a ctxsnap git run refuses every transport.
    const { runGit } = await import("../../lib/integrations/git/git.ts");
    const run = runGit(ws, ["ls-remote", `file://${src}`]);
    assert(run.status !== 0, `ls-remote succeeded: ${run.stdout}`);
    assert(/not allowed/.test(run.stderr), run.stderr);
  });
});

Deno.test("git: submodule.recurse in .git/config cannot make restore --git check out a submodule's files", async () => {
  await withTempDir(async (root) => {
    const lib = join(root, "lib");
    const ws = join(root, "ws");
    fs.mkdirSync(lib);
    fs.mkdirSync(ws);
    git(lib, "init", "-q");
    fs.writeFileSync(join(lib, "lib.txt"), "lib one\n");
    git(lib, "add", "-A");
    git(lib, "commit", "-qm", "lib one");
    git(ws, "init", "-q");
    fs.writeFileSync(join(ws, ".gitignore"), ".ctxsnap/\n");
    git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib");
    git(ws, "add", "-A");
    git(ws, "commit", "-qm", "one");
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const signer = await makeSigner();
      const first = await createSnapshot(store, signer, { reason: "one" });
      // The submodule moves on and the superproject records it.
      fs.writeFileSync(join(ws, "lib", "lib.txt"), "lib two\n");
      git(join(ws, "lib"), "commit", "-qam", "lib two");
      const libTwo = git(join(ws, "lib"), "rev-parse", "HEAD");
      git(ws, "commit", "-qam", "two");
      await createSnapshot(store, signer, { reason: "two" });
      git(ws, "config", "submodule.recurse", "true");
      const { restoreSnapshot } = await import("../../lib/workspace/move/restore.ts");
      await restoreSnapshot(store, signer, first.id, { git: true });
      // HEAD moved; the submodule's own checkout did not (recursing, git would have moved it).
      assertEquals(git(ws, "rev-parse", "HEAD"), first.envelope.body.git?.commit);
      assertEquals(git(join(ws, "lib"), "rev-parse", "HEAD"), libTwo);
    } finally {
      store.close();
    }
  });
});

Deno.test("store folder: init refuses a committed .ctxsnap/ without an index (tmp/stamp link, allow-secrets, published link, run/watch.json) and creates nothing", async () => {
  await withStore(async (ws) => {
    const fresh = join(ws.root, "fresh");
    const planted = join(fresh, ".ctxsnap");
    const victim = join(ws.root, "victim.txt");
    fs.writeFileSync(victim, "precious\n");
    fs.mkdirSync(join(planted, "tmp"), { recursive: true });
    fs.mkdirSync(join(planted, "run"), { mode: 0o700 });
    fs.symlinkSync(victim, join(planted, "tmp", "stamp"));
    fs.writeFileSync(join(planted, "allow-secrets"), ".env\n");
    fs.symlinkSync(ws.home, join(planted, "published"));
    fs.writeFileSync(join(planted, "run", "watch.json"), "{}", { mode: 0o600 });
    fs.writeFileSync(join(fresh, ".env"), "TOKEN=1\n");
    const before = snapshotFiles(planted);
    const init = await ws.run(["init"], { cwd: fresh });
    assertEquals(init.code, 1, init.stderr);
    assert(init.stderr.includes("init --adopt"), init.stderr);
    assert(!fs.existsSync(join(planted, "index.db")), "a store was created in the planted folder");
    assertEquals(snapshotFiles(planted), before);
    assertEquals(fs.readFileSync(victim, "utf8"), "precious\n");
    // Only regular files, each of which passes the path checks: still not taken over.
    fs.rmSync(join(planted, "tmp", "stamp"));
    fs.rmSync(join(planted, "published"));
    const files = snapshotFiles(planted);
    const again = await ws.run(["init"], { cwd: fresh });
    assertEquals(again.code, 1, again.stderr);
    assert(again.stderr.includes('"allow-secrets"'), again.stderr);
    assert(again.stderr.includes("which ctxsnap did not create"), again.stderr);
    assert(again.stderr.includes("init --adopt"), again.stderr);
    assertEquals(snapshotFiles(planted), files);
    assert(!fs.existsSync(join(planted, "index.db")));
    // An empty folder, and what an interrupted init leaves, are fine.
    const empty = join(ws.root, "empty");
    fs.mkdirSync(join(empty, ".ctxsnap", "objects"), { recursive: true });
    fs.mkdirSync(join(empty, ".ctxsnap", "tmp"));
    expectCode(await ws.run(["init"], { cwd: empty }), 0, "init over an interrupted init");
  });
});

Deno.test("store folder: every entry of a store is expected and checked: a stray file, a tmp/stamp or published/ link, a foreign run/ entry are refused before anything is written", async () => {
  await withStore(async (ws) => {
    const store = join(ws.path, ".ctxsnap");
    const victim = join(ws.root, "victim.txt");
    fs.writeFileSync(victim, "precious\n");
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    const plants: [string, () => void, () => void][] = [
      [
        "a stray file",
        () => fs.writeFileSync(join(store, "notes.txt"), "x"),
        () => fs.rmSync(join(store, "notes.txt")),
      ],
      [
        "tmp/stamp -> victim",
        () => fs.symlinkSync(victim, join(store, "tmp", "stamp")),
        () => fs.rmSync(join(store, "tmp", "stamp")),
      ],
      [
        "published -> home",
        () => fs.symlinkSync(ws.home, join(store, "published")),
        () => fs.rmSync(join(store, "published")),
      ],
      ["a link in published/", () => {
        fs.mkdirSync(join(store, "published"));
        fs.symlinkSync(victim, join(store, "published", "x.ctxbundle"));
      }, () => fs.rmSync(join(store, "published"), { recursive: true })],
      ["a foreign run/ entry", () => {
        fs.mkdirSync(join(store, "run"), { mode: 0o700 });
        fs.writeFileSync(join(store, "run", "other.sock"), "");
      }, () => fs.rmSync(join(store, "run"), { recursive: true })],
      [
        "allow-secrets as a directory",
        () => fs.mkdirSync(join(store, "allow-secrets")),
        () => fs.rmSync(join(store, "allow-secrets"), { recursive: true }),
      ],
    ];
    for (const [what, plant, undo] of plants) {
      plant();
      const files = snapshotFiles(store);
      for (const args of [["create", "-m", "x"], ["list"], ["publish", "HEAD"]]) {
        const run = await ws.run(args);
        assertEquals(run.code, 1, `${what}: ${args.join(" ")}: ${run.stderr}`);
      }
      assertEquals(snapshotFiles(store), files, `${what}: the store changed`);
      assertEquals(fs.readFileSync(victim, "utf8"), "precious\n", what);
      undo();
    }
    expectCode(await ws.run(["create", "-m", "two"]), 0, "create once clean");
  });
});

Deno.test("store folder: capture's time stamp is a new file (O_EXCL, O_NOFOLLOW), never a tmp/stamp link planted after the store was opened", async () => {
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    fs.mkdirSync(ws);
    fs.writeFileSync(join(ws, "a.txt"), "a\n");
    const victim = join(root, "victim.txt");
    fs.writeFileSync(victim, "precious\n");
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      fs.symlinkSync(victim, join(store.dir, "tmp", "stamp"));
      await createSnapshot(store, await makeSigner(), { reason: "one" });
    } finally {
      store.close();
    }
    assertEquals(fs.readFileSync(victim, "utf8"), "precious\n");
  });
});

Deno.test("store folder: publish's default published/ is written without following a link swapped in after the store was opened", async () => {
  const { publishToFile } = await import("../../lib/share/publish.ts");
  await withTempDir(async (root) => {
    const ws = join(root, "ws");
    const elsewhere = join(root, "elsewhere");
    fs.mkdirSync(ws);
    fs.mkdirSync(elsewhere);
    fs.writeFileSync(join(ws, "a.txt"), "a\n");
    const store = Store.init(join(ws, ".ctxsnap"), ws);
    try {
      const { id } = await createSnapshot(store, await makeSigner(), { reason: "one" });
      fs.symlinkSync(elsewhere, join(store.dir, "published"));
      let refused: unknown = null;
      try {
        await publishToFile(store, id, {
          below: { root: store.dir, dir: "published", replace: true },
        });
      } catch (error) {
        refused = error;
      }
      assert(refused instanceof ConflictError, String(refused));
      assertEquals(fs.readdirSync(elsewhere), []);
    } finally {
      store.close();
    }
  });
});

Deno.test("store folder: init --adopt lists every non-core file, clears tmp/ and run/, and refuses an allow list or published/ files unless kept, showing the allow list", async () => {
  await withStore(async (ws) => {
    git(ws.path, "init", "-q");
    expectCode(await ws.run(["create", "-m", "mine"]), 0, "create");
    const store = join(ws.path, ".ctxsnap");
    fs.writeFileSync(join(store, "allow-secrets"), ".env\nkeys/deploy.pem\n");
    fs.mkdirSync(join(store, "published"), { recursive: true });
    fs.writeFileSync(join(store, "published", "old.ctxsnapshot.json"), "{}");
    const copy = join(ws.root, "copy");
    await new Deno.Command("cp", { args: ["-a", ws.path, copy] }).output();
    const copied = join(copy, ".ctxsnap");
    fs.mkdirSync(join(copied, "run"), { mode: 0o700 });
    fs.writeFileSync(join(copied, "run", "watch.json"), "{}", { mode: 0o600 });
    fs.writeFileSync(join(copied, "tmp", "t-leftover"), "x");
    const dry = await ws.run(["init", "--adopt", "--dry-run", "--json"], { cwd: copy });
    expectCode(dry, 0, "adopt --dry-run");
    assertEquals(dry.json().allow_secrets, [".env", "keys/deploy.pem"]);
    assertEquals(dry.json().extra_files, [
      { path: "allow-secrets", action: "refused" },
      { path: "published/old.ctxsnapshot.json", action: "refused" },
      { path: "run/watch.json", action: "cleared" },
      { path: "tmp/t-leftover", action: "cleared" },
    ]);
    const human = await ws.run(["init", "--adopt", "--dry-run"], { cwd: copy });
    assert(human.stdout.includes("keys/deploy.pem"), human.stdout);
    const refused = await ws.run(["init", "--adopt"], { cwd: copy });
    assertEquals(refused.code, 1, refused.stderr);
    assert(refused.stderr.includes("--keep allow-secrets"), refused.stderr);
    assert(refused.stderr.includes("keys/deploy.pem"), refused.stderr);
    expectCode(await ws.run(["list"], { cwd: copy }), 1, "not adopted");
    assert(fs.existsSync(join(copied, "run", "watch.json")), "a refused adoption changed files");
    const kept = await ws.run(
      ["init", "--adopt", "--keep", "allow-secrets", "--keep", "published", "--json"],
      { cwd: copy },
    );
    expectCode(kept, 0, "adopt, keeping both");
    assertEquals(kept.json().extra_files.map((f: { action: string }) => f.action), [
      "kept",
      "kept",
      "cleared",
      "cleared",
    ]);
    assertEquals(fs.readdirSync(join(copied, "run")), []);
    assertEquals(fs.readdirSync(join(copied, "tmp")), []);
    expectCode(await ws.run(["list"], { cwd: copy }), 0, "adopted");
  });
});

Deno.test("store folder: init --adopt refuses another store's retention policy unless kept (it decides what the store forgets)", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "mine"]), 0, "create");
    const copy = join(ws.root, "copy");
    await new Deno.Command("cp", { args: ["-a", ws.path, copy] }).output();
    fs.writeFileSync(join(copy, ".ctxsnap", "retention"), "keep-last 1\n", { mode: 0o600 });
    const dry = await ws.run(["init", "--adopt", "--dry-run", "--json"], { cwd: copy });
    expectCode(dry, 0, "adopt --dry-run");
    assertEquals(dry.json().extra_files, [{ path: "retention", action: "refused" }]);
    const refused = await ws.run(["init", "--adopt"], { cwd: copy });
    assertEquals(refused.code, 1, refused.stderr);
    assert(refused.stderr.includes("--keep retention"), refused.stderr);
    expectCode(await ws.run(["list"], { cwd: copy }), 1, "not adopted");
    const kept = await ws.run(["init", "--adopt", "--keep", "retention", "--json"], { cwd: copy });
    expectCode(kept, 0, "adopt, keeping the policy");
    assertEquals(kept.json().extra_files, [{ path: "retention", action: "kept" }]);
    expectCode(await ws.run(["list"], { cwd: copy }), 0, "adopted");
  });
});

Deno.test("store folder: init --adopt refuses another store's transcript policy and daemon.conf unless kept, and writes nothing on refusal", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "mine"]), 0, "create");
    const copy = join(ws.root, "copy");
    await new Deno.Command("cp", { args: ["-a", ws.path, copy] }).output();
    const copied = join(copy, ".ctxsnap");
    fs.writeFileSync(join(copied, "transcripts"), "max-bytes 268435456\n", { mode: 0o600 });
    fs.writeFileSync(join(copied, "daemon.conf"), "enabled = true\n", { mode: 0o600 });
    fs.writeFileSync(join(copied, "tmp", "t-leftover"), "x");
    const dry = await ws.run(["init", "--adopt", "--dry-run", "--json"], { cwd: copy });
    expectCode(dry, 0, "adopt --dry-run");
    assertEquals(dry.json().extra_files, [
      { path: "daemon.conf", action: "refused" },
      { path: "tmp/t-leftover", action: "cleared" },
      { path: "transcripts", action: "refused" },
    ]);
    const human = await ws.run(["init", "--adopt", "--dry-run"], { cwd: copy });
    assert(human.stdout.includes("--keep daemon.conf"), human.stdout);
    assert(human.stdout.includes("--keep transcripts"), human.stdout);
    const refused = await ws.run(["init", "--adopt"], { cwd: copy });
    assertEquals(refused.code, 1, refused.stderr);
    assert(refused.stderr.includes("--keep daemon.conf --keep transcripts"), refused.stderr);
    expectCode(await ws.run(["list"], { cwd: copy }), 1, "not adopted");
    assert(fs.existsSync(join(copied, "tmp", "t-leftover")), "a refused adoption changed files");
    const one = await ws.run(["init", "--adopt", "--keep", "transcripts"], { cwd: copy });
    assertEquals(one.code, 1, "daemon.conf is still refused");
    assert(one.stderr.includes("--keep daemon.conf"), one.stderr);
    assert(!one.stderr.includes("--keep transcripts"), one.stderr);
    const kept = await ws.run(
      ["init", "--adopt", "--keep", "transcripts", "--keep", "daemon.conf", "--json"],
      { cwd: copy },
    );
    expectCode(kept, 0, "adopt, keeping both");
    assertEquals(kept.json().extra_files, [
      { path: "daemon.conf", action: "kept" },
      { path: "tmp/t-leftover", action: "cleared" },
      { path: "transcripts", action: "kept" },
    ]);
    assert(
      fs.existsSync(join(copied, "transcripts")) && fs.existsSync(join(copied, "daemon.conf")),
    );
    expectCode(await ws.run(["list"], { cwd: copy }), 0, "adopted");
  });
});
