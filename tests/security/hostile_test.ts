// deno-lint-ignore-file no-console
/**
 * Hostile-filesystem, disk-full and read-only-store tests (docs/DESIGN.md §3, §4): a symlink-swap race during capture, files growing
 * while read, permission denied, awkward names, deep trees, the size limit,
 * a full filesystem under the store and a read-only store.
 *
 * Tests that need root, `setpriv` or `mount` are ignored, with the reason
 * printed, when this machine cannot provide them. Knobs:
 * CTXSNAP_SWAP_CREATES (default 8) CLI creates and CTXSNAP_SWAP_MS (default
 * 2500) ms of in-process captures during the symlink-swap race.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../_assert.ts";
import { cliCommand, type CliResult, type TempWorkspace, tempWorkspace } from "../_cli.ts";
import { Store } from "../../lib/repository/store.ts";
import { expandDirTree, parseTreeObject } from "../../lib/format/tree_object.ts";
import { captureWorkspace } from "../../lib/workspace/capture.ts";
import type { TreeManifest } from "../../lib/format/tree.ts";
import { readObjectBytes } from "../_objects.ts";

// ---------------------------------------------------------------------------
// helpers

function envNumber(name: string, fallback: number): number {
  const raw = Number(Deno.env.get(name) ?? String(fallback));
  return Number.isSafeInteger(raw) && raw > 0 ? raw : fallback;
}

function sha256(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function describe(args: string[], result: CliResult): string {
  return `ctxsnap ${
    args.join(" ")
  } → exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
}

async function ok(ws: TempWorkspace, args: string[], opts = {}): Promise<CliResult> {
  const result = await ws.run(args, opts);
  if (result.code !== 0) throw new Error(`expected exit 0: ${describe(args, result)}`);
  return result;
}

/** A failure must be a one-line diagnosis, never a stack trace. */
function assertCleanFailure(args: string[], result: CliResult, code = 1): void {
  const text = describe(args, result);
  console.log(`  ${args.slice(2).join(" ")}: ${result.stderr.trim().split("\n").join(" | ")}`);
  assertEquals(result.code, code, text);
  assert(result.stderr.includes("ctxsnap: error:"), `no "ctxsnap: error:" line: ${text}`);
  assert(!/Uncaught|\n\s+at /.test(result.stderr), `stack trace on stderr: ${text}`);
}

function sh(script: string, cwd?: string): { code: number; stdout: string; stderr: string } {
  const out = new Deno.Command("sh", {
    args: ["-c", script],
    ...(cwd ? { cwd } : {}),
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

function shOk(script: string, cwd?: string): string {
  const out = sh(script, cwd);
  if (out.code !== 0) throw new Error(`sh -c ${script} failed: ${out.stderr}`);
  return out.stdout;
}

/** Reads the manifest `treeId` from the store in `storeDir` (read-only). */
function readTree(storeDir: string, treeId: string): TreeManifest {
  const store = Store.open(storeDir, { readOnly: true });
  try {
    return store.getTree(treeId);
  } finally {
    store.close();
  }
}

/**
 * Reads manifest `treeId` straight from the index, for a store another user
 * owns (which `Store.open` rightly refuses to open for this one).
 */
function readOtherUsersTree(storeDir: string, treeId: string): TreeManifest {
  const db = new DatabaseSync(join(storeDir, "index.db"), { readOnly: true });
  try {
    // Expands a directory tree straight from the rows (no Store for this user).
    const read = (id: string) => parseTreeObject(readObjectBytes(db, id));
    const root = read(treeId);
    return root.version === 1 ? root : expandDirTree(treeId, root, read);
  } finally {
    db.close();
  }
}

function readBlob(storeDir: string, blob: string): Uint8Array {
  const store = Store.open(storeDir, { readOnly: true });
  try {
    return store.readBlob(blob);
  } finally {
    store.close();
  }
}

/** Every regular file below `dir` (not following symlinks). */
function filesBelow(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const abs = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesBelow(abs));
    else if (entry.isFile()) out.push(abs);
  }
  return out;
}

/** Which objects hold `marker`, and which tree entries name them (for a failure message). */
function leakReport(storeDir: string, marker: string): string {
  const db = new DatabaseSync(join(storeDir, "index.db"), { readOnly: true });
  try {
    const rows = db.prepare(
      "SELECT id, kind FROM objects WHERE instr(data, CAST(? AS BLOB)) > 0",
    ).all(marker) as { id: string; kind: string }[];
    const hits = new Set(rows.map((r) => r.id));
    const named: string[] = [];
    for (const row of db.prepare("SELECT id, data FROM objects WHERE kind = 'tree'").all()) {
      const tree = JSON.parse(new TextDecoder().decode((row as { data: Uint8Array }).data));
      for (const e of tree.entries) if (hits.has(e.blob)) named.push(`${e.path} (${e.blob})`);
    }
    return `objects ${JSON.stringify(rows)}; named by tree entries ${JSON.stringify(named)}` +
      (rows.length === 0 ? " (only in free pages / journal: a rolled-back or deleted row)" : "");
  } finally {
    db.close();
  }
}

/** Spawns a small Deno script (its source given) as a child process. */
async function spawnScript(
  root: string,
  name: string,
  source: string,
  args: string[],
): Promise<Deno.ChildProcess> {
  const file = join(root, name);
  await Deno.writeTextFile(file, source);
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", file, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

async function finishChild(child: Deno.ChildProcess): Promise<string> {
  const out = await child.output();
  const stdout = new TextDecoder().decode(out.stdout);
  if (out.code !== 0) {
    throw new Error(`child failed (${out.code}): ${new TextDecoder().decode(out.stderr)}`);
  }
  return stdout.trim();
}

// ---------------------------------------------------------------------------
// capabilities, computed once at load time

function commandWorks(cmd: string, args: string[]): boolean {
  try {
    return new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).outputSync().success;
  } catch {
    return false;
  }
}

const IS_ROOT = Deno.uid() === 0;

/** Why the unprivileged-user test cannot run here, or null. */
const NO_UNPRIVILEGED_USER: string | null = !IS_ROOT
  ? "not running as root, so no other user can be switched to"
  : !commandWorks("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
  ? "`setpriv --reuid=65534` does not work here"
  : null;

type MountKind = "tmpfs" | "loop-ext4";

/** Mounts a small filesystem of `mib` MiB at `dir`; returns its kind, or null. */
function mountSmall(dir: string, mib: number, imageDir: string): MountKind | null {
  if (commandWorks("mount", ["-t", "tmpfs", "-o", `size=${mib}m,mode=0755`, "tmpfs", dir])) {
    return "tmpfs";
  }
  const image = join(imageDir, `fs-${crypto.randomUUID()}.img`);
  if (
    commandWorks("dd", ["if=/dev/zero", `of=${image}`, "bs=1M", `count=${mib}`, "status=none"]) &&
    commandWorks("mkfs.ext4", ["-q", "-m", "0", image]) &&
    commandWorks("mount", ["-o", "loop", image, dir])
  ) {
    return "loop-ext4";
  }
  fs.rmSync(image, { force: true });
  return null;
}

function unmount(dir: string): void {
  if (!commandWorks("umount", [dir])) commandWorks("umount", ["-l", dir]);
}

/** Why no small filesystem can be mounted here, or null. */
const NO_MOUNT: string | null = (() => {
  if (!IS_ROOT) return "not running as root: cannot mount a small tmpfs or loop filesystem";
  const dir = Deno.makeTempDirSync({ prefix: "ctxsnap-mount-probe-" });
  try {
    const kind = mountSmall(dir, 8, dir + "-img");
    if (kind === null) {
      return "neither `mount -t tmpfs` nor a loop-mounted ext4 image works in this sandbox";
    }
    unmount(dir);
    return null;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(dir + "-img", { recursive: true, force: true });
  }
})();

for (const [what, reason] of [["unprivileged user", NO_UNPRIVILEGED_USER], ["mount", NO_MOUNT]]) {
  if (reason !== null) console.log(`hostile_test: ${what} tests ignored: ${reason}`);
}

/** Runs `fn` with a small filesystem mounted at a fresh directory below `root`. */
async function withSmallFs(
  root: string,
  mib: number,
  fn: (dir: string, kind: MountKind) => Promise<void>,
): Promise<void> {
  const dir = join(root, "small");
  const images = join(root, "images");
  await Deno.mkdir(dir);
  await Deno.mkdir(images);
  const kind = mountSmall(dir, mib, images);
  if (kind === null) throw new Error("could not mount a small filesystem");
  try {
    await fn(dir, kind);
  } finally {
    commandWorks("mount", ["-o", "remount,rw", dir]);
    unmount(dir);
  }
}

// ---------------------------------------------------------------------------
// 4. hostile filesystem

const SWAPPER = `
const [ws, outside, stop] = Deno.args;
const victim = ws + "/victim.txt";
const dirVictim = ws + "/dirvictim";
const parked = ws + "/parked-dir";
let flips = 0;
const started = Date.now();
for (;;) {
  if (flips % 32 === 0) {
    try { Deno.statSync(stop); break; } catch { /* keep going */ }
    if (Date.now() - started > 120000) break;
  }
  // A regular file with harmless content, then a symlink to the secret, each renamed in.
  Deno.writeTextFileSync(ws + "/swap-file.tmp", "harmless\\n");
  Deno.renameSync(ws + "/swap-file.tmp", victim);
  Deno.symlinkSync(outside + "/secret.txt", ws + "/swap-link.tmp");
  Deno.renameSync(ws + "/swap-link.tmp", victim);
  // A real directory, then a symlink to the outside directory, in its place.
  Deno.renameSync(dirVictim, parked);
  Deno.symlinkSync(outside, ws + "/swap-dirlink.tmp");
  Deno.renameSync(ws + "/swap-dirlink.tmp", dirVictim);
  Deno.renameSync(dirVictim, ws + "/swap-dirlink.tmp");
  Deno.removeSync(ws + "/swap-dirlink.tmp");
  Deno.renameSync(parked, dirVictim);
  flips += 4;
}
console.log(flips);
`;

Deno.test({
  name: "hostile: symlink-swap race during capture never lets the secret's bytes into the store",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace();
    try {
      const marker = `SECRET-${crypto.randomUUID()}`;
      const outside = join(ws.root, "outside");
      await Deno.mkdir(outside);
      await Deno.writeTextFile(join(outside, "secret.txt"), `${marker}\n`);
      await Deno.writeTextFile(join(outside, "inner.txt"), `${marker} inner\n`);
      await Deno.writeTextFile(join(ws.path, "victim.txt"), "harmless\n");
      await Deno.mkdir(join(ws.path, "dirvictim"));
      await Deno.writeTextFile(join(ws.path, "dirvictim", "inner.txt"), "harmless\n");
      await ok(ws, ["init"]);
      const libStoreDir = join(ws.root, "lib-store");
      const stop = join(ws.root, "stop");

      const child = await spawnScript(ws.root, "swapper.ts", SWAPPER, [ws.path, outside, stop]);
      const created: string[] = [];
      const trees: string[] = [];
      let captures = 0;
      let flips = 0;
      try {
        await new Promise((r) => setTimeout(r, 300)); // let the swapper start
        for (let i = 0; i < envNumber("CTXSNAP_SWAP_CREATES", 8); i++) {
          const result = await ok(ws, ["create", "-m", `race ${i}`, "--json"]);
          created.push(result.json().id);
          trees.push(result.json().workspace.tree);
        }
        const store = Store.init(libStoreDir, ws.path);
        try {
          const until = performance.now() + envNumber("CTXSNAP_SWAP_MS", 2500);
          while (performance.now() < until) {
            const { tree } = store.transaction("capture", () => captureWorkspace(store));
            captures++;
            for (const entry of tree.entries) {
              if (entry.type !== "file") continue;
              assert(
                entry.path !== "victim.txt" || entry.blob === sha256("harmless\n"),
                `victim.txt captured with foreign content: ${JSON.stringify(entry)}`,
              );
              assert(!entry.path.startsWith("dirvictim/") || entry.path === "dirvictim/inner.txt");
            }
          }
        } finally {
          store.close();
        }
      } finally {
        await Deno.writeTextFile(stop, "");
        flips = Number(await finishChild(child));
      }
      console.log(
        `  ${flips} flips, ${created.length} CLI creates, ${captures} in-process captures`,
      );
      assert(flips >= 1000, `only ${flips} flips: the race was not exercised`);

      const needle = Buffer.from(marker);
      for (const dir of [join(ws.path, ".ctxsnap"), libStoreDir]) {
        for (const file of filesBelow(dir)) {
          if (!Buffer.from(fs.readFileSync(file)).includes(needle)) continue;
          throw new Error(`${marker} found in ${file}: ${leakReport(dir, marker)}`);
        }
      }
      const verify = await ok(ws, ["verify", "--all", "--json"]);
      assertEquals(verify.json().ok, true);
      for (const id of created) await ok(ws, ["verify", id]);
      for (const treeId of trees) {
        const victim = readTree(join(ws.path, ".ctxsnap"), treeId).entries.find((e) =>
          e.path === "victim.txt"
        );
        if (victim?.type === "file") assertEquals(victim.blob, sha256("harmless\n"));
      }
    } finally {
      await ws.cleanup();
    }
  },
});

/** The byte at offset `i` of the growing file: a position-dependent pattern. */
const PATTERN = `function fill(buf, offset) {
  for (let j = 0; j < buf.length; j++) {
    const i = offset + j;
    buf[j] = (i * 31 + (i >>> 12) + (i >>> 20)) & 0xff;
  }
  return buf;
}`;
// deno-lint-ignore no-explicit-any
const fill = new Function(`${PATTERN}; return fill;`)() as any as (
  buf: Uint8Array,
  offset: number,
) => Uint8Array;

const INITIAL = 2 * 1024 * 1024;
const CHUNK = 16 * 1024;
const MAX_GROWN = 8 * 1024 * 1024;

const APPENDER = `${PATTERN}
const [file, stop] = Deno.args;
const f = Deno.openSync(file, { append: true });
let size = Deno.statSync(file).size;
let appends = 0;
const pause = new Int32Array(new SharedArrayBuffer(4));
for (;;) {
  if (appends % 16 === 0) {
    try { Deno.statSync(stop); break; } catch { /* keep going */ }
  }
  if (size >= ${MAX_GROWN}) {
    f.truncateSync(${INITIAL}); // still a prefix of the same stream
    size = ${INITIAL};
  }
  const chunk = fill(new Uint8Array(${CHUNK}), size);
  let done = 0;
  while (done < chunk.length) done += f.writeSync(chunk.subarray(done));
  size += ${CHUNK};
  appends++;
  // Bursts of appends, then quiet spells: captures see both.
  if (appends % 16 === 0) Atomics.wait(pause, 0, 0, 40);
}
f.close();
console.log(appends);
`;

Deno.test({
  name: "hostile: a file appended to during capture is skipped or captured whole, never torn",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace();
    try {
      const big = join(ws.path, "growing.bin");
      await Deno.writeFile(big, fill(new Uint8Array(INITIAL), 0));
      await ok(ws, ["init"]);
      const stop = join(ws.root, "stop");
      const child = await spawnScript(ws.root, "appender.ts", APPENDER, [big, stop]);
      const storeDir = join(ws.path, ".ctxsnap");
      const outcomes = { whole: 0, changed: 0 };
      const check = (tree: TreeManifest, blobOf: (id: string) => Uint8Array) => {
        const entry = tree.entries.find((e) => e.path === "growing.bin");
        if (entry === undefined) {
          const skip = tree.skipped.find((s) => s.path === "growing.bin");
          assertEquals(skip?.reason, "changed_while_reading", JSON.stringify(tree.skipped));
          outcomes.changed++;
          return;
        }
        assert(entry.type === "file");
        assertEquals((entry.size - INITIAL) % CHUNK, 0, `torn size ${entry.size}`);
        const expected = fill(new Uint8Array(entry.size), 0);
        assertEquals(entry.blob, sha256(expected), `blob of ${entry.size} bytes is torn`);
        const stored = blobOf(entry.blob);
        assertEquals(stored.byteLength, entry.size);
        assertEquals(sha256(stored), entry.blob);
        outcomes.whole++;
      };
      let appends = 0;
      const trees: string[] = [];
      try {
        await new Promise((r) => setTimeout(r, 200));
        for (let i = 0; i < 6; i++) {
          trees.push((await ok(ws, ["create", "-m", `grow ${i}`, "--json"])).json().workspace.tree);
        }
        const libDir = join(ws.root, "lib-store");
        const store = Store.init(libDir, ws.path);
        try {
          const until = performance.now() + 2000;
          while (performance.now() < until) {
            const { tree } = store.transaction(
              "capture",
              () => captureWorkspace(store, { useStatCache: false }),
            );
            check(tree, (id) => store.readBlob(id));
          }
          const leftovers = fs.readdirSync(join(libDir, "tmp")).filter((n) => n !== "stamp");
          assertEquals(leftovers, [], "temp files left behind in the store");
        } finally {
          store.close();
        }
      } finally {
        await Deno.writeTextFile(stop, "");
        appends = Number(await finishChild(child));
      }
      for (const treeId of trees) check(readTree(storeDir, treeId), (id) => readBlob(storeDir, id));
      console.log(`  ${appends} appends; captures: ${JSON.stringify(outcomes)}`);
      assert(appends > 100, "the appender barely ran");
      await ok(ws, ["verify", "--all"]);
    } finally {
      await ws.cleanup();
    }
  },
});

Deno.test({
  name: "hostile: as an unprivileged user, a mode-000 file and directory are skipped as unreadable",
  ignore: NO_UNPRIVILEGED_USER !== null,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace({ "a.txt": "alpha\n", "locked.txt": "no peeking\n" });
    try {
      await Deno.mkdir(join(ws.path, "locked-dir"));
      await Deno.writeTextFile(join(ws.path, "locked-dir", "inside.txt"), "hidden\n");
      // The unprivileged user needs its own copy of Deno's npm cache (root's is 0700).
      const info = new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stderr: "null" })
        .outputSync();
      const denoDir = Deno.env.get("DENO_DIR") ??
        JSON.parse(new TextDecoder().decode(info.stdout)).denoDir as string;
      const userDenoDir = join(ws.root, "deno-dir");
      await Deno.mkdir(userDenoDir);
      shOk(`cp -r '${denoDir}/npm' '${userDenoDir}/'`);
      shOk(`chmod 0755 '${ws.root}' && chmod -R a+rX '${userDenoDir}'`);
      await Deno.mkdir(ws.configDir, { recursive: true });
      shOk(`chown -R 65534:65534 '${ws.path}' '${ws.configDir}' '${ws.home}'`);
      await Deno.chmod(join(ws.path, "locked.txt"), 0o000);
      await Deno.chmod(join(ws.path, "locked-dir"), 0o000);

      const runAsNobody = (args: string[]) => {
        const out = new Deno.Command("setpriv", {
          args: [
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "env",
            "-i",
            `PATH=${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
            `HOME=${ws.home}`,
            `DENO_DIR=${userDenoDir}`,
            `CTXSNAP_CONFIG_DIR=${ws.configDir}`,
            "NO_COLOR=1",
            "CTXSNAP_DAEMON=off",
            "DENO_NO_UPDATE_CHECK=1",
            ...cliCommand(args),
          ],
          cwd: ws.path,
          stdout: "piped",
          stderr: "piped",
        }).outputSync();
        const stdout = new TextDecoder().decode(out.stdout);
        const result: CliResult = {
          code: out.code,
          stdout,
          stderr: new TextDecoder().decode(out.stderr),
          json: () => JSON.parse(stdout),
        };
        if (result.code !== 0) throw new Error(`as nobody: ${describe(args, result)}`);
        return result;
      };
      // Root can still read it; the unprivileged user cannot.
      assert(
        !commandWorks("setpriv", [
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          "cat",
          join(ws.path, "locked.txt"),
        ]),
        "the unprivileged user can read a mode-000 file",
      );
      runAsNobody(["init"]);
      const created = runAsNobody(["create", "--json"]).json();
      const tree = readOtherUsersTree(join(ws.path, ".ctxsnap"), created.workspace.tree);
      assertEquals(tree.entries.map((e) => e.path), ["a.txt"]);
      const reasons = Object.fromEntries(tree.skipped.map((s) => [s.path, s.reason]));
      assertEquals(reasons["locked.txt"], "unreadable", JSON.stringify(tree.skipped));
      assertEquals(reasons["locked-dir"], "unreadable", JSON.stringify(tree.skipped));
      runAsNobody(["verify", "--all"]);
    } finally {
      await ws.cleanup();
    }
  },
});

/** Path → "file <sha256> <mode>" or "symlink <target>" for everything below `dir`. */
function fingerprint(dir: string, skip: Set<string> = new Set([".ctxsnap"])): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const name of fs.readdirSync(rel === "" ? dir : join(dir, rel))) {
      if (rel === "" && skip.has(name)) continue;
      const childRel = rel === "" ? name : `${rel}/${name}`;
      const abs = join(dir, childRel);
      let stat: fs.Stats;
      try {
        stat = fs.lstatSync(abs);
      } catch {
        out.set(childRel, "(name not valid UTF-8)");
        continue;
      }
      if (stat.isSymbolicLink()) {
        let target = "(not valid UTF-8)";
        try {
          target = fs.readlinkSync(abs);
        } catch { /* an invalid target: recorded as such */ }
        out.set(childRel, `symlink ${target}`);
      } else if (stat.isDirectory()) {
        walk(childRel);
      } else {
        const mode = (stat.mode & 0o777).toString(8);
        out.set(childRel, `file ${sha256(fs.readFileSync(abs))} ${mode}`);
      }
    }
  };
  walk("");
  return out;
}

const AWKWARD: Record<string, string> = {
  "line\nbreak.txt": "newline in the name\n",
  "tab\there.txt": "tab in the name\n",
  "\u0001ctrl": "control character\n",
  "caf\u00e9.txt": "NFC spelling\n",
  "cafe\u0301.txt": "NFD spelling\n",
  "Readme.md": "mixed case\n",
  "README.md": "upper case\n",
  "readme.md": "lower case\n",
  "emoji-\u{1F600}.txt": "astral plane\n",
  " leading and trailing space ": "spaces\n",
  "dir\nwith newline/inner.txt": "below a newline directory\n",
};

Deno.test({
  name:
    "hostile: names with newlines, NFC/NFD, case variants are captured and restored byte for byte; invalid UTF-8 is skipped",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace(AWKWARD);
    try {
      // Invalid UTF-8: a file, a directory holding a file, a symlink target.
      shOk(
        `printf 'x\\n' > "$(printf 'bad\\377name')" && mkdir "$(printf 'dir\\376')" && ` +
          `printf 'y\\n' > "$(printf 'dir\\376')/inside.txt" && ln -s "$(printf 'tar\\377get')" badlink`,
        ws.path,
      );
      await ok(ws, ["init"]);
      const created = (await ok(ws, ["create", "--json"])).json();
      const storeDir = join(ws.path, ".ctxsnap");
      const tree = readTree(storeDir, created.workspace.tree);
      assertEquals(
        tree.entries.map((e) => e.path).sort(),
        Object.keys(AWKWARD).sort(),
        "every valid name is recorded, exactly as spelled",
      );
      const unsafe = tree.skipped.filter((s) => s.reason === "unsafe_name").map((s) => s.path);
      assertEquals(unsafe.length, 3, JSON.stringify(tree.skipped));
      assert(unsafe.some((p) => p.startsWith("bad")), JSON.stringify(unsafe));
      assert(unsafe.some((p) => p.startsWith("dir")), JSON.stringify(unsafe));
      assert(unsafe.includes("badlink"), JSON.stringify(unsafe));

      const expected = fingerprint(ws.path);
      for (const key of [...expected.keys()]) {
        if (!Object.hasOwn(AWKWARD, key)) expected.delete(key); // the invalid names
      }
      // Into a fresh directory.
      const fresh = join(ws.root, "fresh");
      await ok(ws, ["materialize", created.id, fresh]);
      assertEquals(fingerprint(fresh), expected);
      // Into the workspace, after deleting the valid files.
      for (const name of Object.keys(AWKWARD)) await Deno.remove(join(ws.path, name));
      await Deno.remove(join(ws.path, "dir\nwith newline"));
      // Deleted since the baseline: only --force brings deletions back.
      await ok(ws, ["restore", created.id, "--force"]);
      const restored = fingerprint(ws.path);
      for (const [path, value] of expected) assertEquals(restored.get(path), value, path);
      // The invalid names were left alone.
      assert(shOk("ls -b", ws.path).includes("bad\\377name"));
      await ok(ws, ["verify", "--all"]);
    } finally {
      await ws.cleanup();
    }
  },
});

Deno.test({
  name: "hostile: two invalid UTF-8 names that decode alike are both skipped, capture succeeds",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace({ "a.txt": "alpha\n" });
    try {
      shOk(
        `printf 1 > "$(printf 'bad\\377name')" && printf 2 > "$(printf 'bad\\376name')"`,
        ws.path,
      );
      await ok(ws, ["init"]);
      const created = (await ok(ws, ["create", "--json"])).json();
      const tree = readTree(join(ws.path, ".ctxsnap"), created.workspace.tree);
      assertEquals(tree.entries.map((e) => e.path), ["a.txt"]);
      assert(tree.skipped.some((s) => s.reason === "unsafe_name"));
    } finally {
      await ws.cleanup();
    }
  },
});

Deno.test({
  name: "hostile: a 200-level deep tree captures and restores; a path past PATH_MAX is skipped",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace({ "top.txt": "top\n" });
    const longChain = join(ws.path, "long");
    try {
      let rel = "";
      for (let depth = 1; depth <= 200; depth++) {
        rel = rel === "" ? "d" : `${rel}/d`;
        if (depth % 50 === 0 || depth === 200) {
          await Deno.mkdir(join(ws.path, rel), { recursive: true });
          await Deno.writeTextFile(join(ws.path, rel, `at-${depth}.txt`), `depth ${depth}\n`);
        }
      }
      // 90 directories of 50 characters: the leaf's path is longer than 4096 bytes.
      const seg = "x".repeat(50);
      // bash's `cd -P` falls back to a relative chdir past PATH_MAX.
      const made = new Deno.Command("bash", {
        args: [
          "-c",
          `mkdir long && cd -P long && i=0; while [ $i -lt 90 ]; do mkdir ${seg} && ` +
          `cd -P ${seg} || exit 1; i=$((i+1)); done; printf 'too deep\\n' > leaf.txt`,
        ],
        cwd: ws.path,
      }).outputSync();
      assert(made.success, new TextDecoder().decode(made.stderr));
      await ok(ws, ["init"]);
      const created = (await ok(ws, ["create", "--json"])).json();
      const tree = readTree(join(ws.path, ".ctxsnap"), created.workspace.tree);
      const deepest = `${rel}/at-200.txt`;
      assert(tree.entries.some((e) => e.path === deepest), "the 200-deep file was not captured");
      assertEquals(tree.entries.filter((e) => e.path.startsWith("d/")).length, 4);
      assert(!tree.entries.some((e) => e.path.startsWith("long/")), "a >4096-byte path captured");
      const longSkips = tree.skipped.filter((s) => s.path.startsWith("long/"));
      assert(
        longSkips.length > 0,
        `nothing under long/ reported skipped: ${
          JSON.stringify(tree.skipped.map((s) => [s.path.length, s.reason]))
        }`,
      );
      for (const s of longSkips) assert(["unsafe_name", "unreadable"].includes(s.reason), s.reason);

      shOk("rm -rf long", ws.path);
      const expected = fingerprint(ws.path);
      const fresh = join(ws.root, "fresh");
      await ok(ws, ["materialize", created.id, fresh]);
      assertEquals(fingerprint(fresh), expected);
      await Deno.remove(join(ws.path, "d"), { recursive: true });
      await ok(ws, ["restore", created.id, "--force"]);
      assertEquals(fingerprint(ws.path), expected);
      await ok(ws, ["verify", "--all"]);
    } finally {
      shOk(`rm -rf '${longChain}'`);
      await ws.cleanup();
    }
  },
});

Deno.test({
  name:
    "hostile: empty files and files exactly at the size limit are captured; one byte over is too_large",
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "ctxsnap-limit-" });
    try {
      for (const limit of [1000, 1024 * 1024, 1024 * 1024 + 7]) {
        const ws = join(root, `ws-${limit}`);
        await Deno.mkdir(ws);
        const exact = fill(new Uint8Array(limit), 0);
        const over = fill(new Uint8Array(limit + 1), 1);
        await Deno.writeFile(join(ws, "empty.txt"), new Uint8Array());
        await Deno.writeFile(join(ws, "exact.bin"), exact);
        await Deno.writeFile(join(ws, "over.bin"), over);
        const store = Store.init(join(root, `store-${limit}`), ws);
        try {
          const { tree, stats } = store.transaction(
            "capture",
            () => captureWorkspace(store, { maxFileBytes: limit }),
          );
          const byPath = new Map(tree.entries.map((e) => [e.path, e]));
          assertEquals(byPath.get("empty.txt"), {
            path: "empty.txt",
            type: "file",
            blob: sha256(new Uint8Array()),
            size: 0,
            mode: 0o644,
          });
          const e = byPath.get("exact.bin");
          assert(e?.type === "file", `exact.bin (${limit} bytes) not captured at limit ${limit}`);
          assertEquals([e.size, e.blob], [limit, sha256(exact)]);
          assertEquals(sha256(store.readBlob(e.blob)), sha256(exact));
          assertEquals(store.readBlob(sha256(new Uint8Array())).byteLength, 0);
          assert(!byPath.has("over.bin"));
          assertEquals(tree.skipped, [{ path: "over.bin", reason: "too_large" }]);
          assertEquals([stats.files, stats.skipped], [2, 1]);
        } finally {
          store.close();
        }
      }
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

// ---------------------------------------------------------------------------
// 5. disk full and read-only store

/** Incompressible bytes (random), so no filesystem trick makes them fit. */
function noise(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, i + 65536));
  return out;
}

Deno.test({
  name: "disk full: create fails with a clear error, the store still verifies and keeps working",
  ignore: NO_MOUNT !== null,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace();
    try {
      await withSmallFs(ws.root, 4, async (small, kind) => {
        console.log(`  store on a 4 MiB ${kind}`);
        const store = join(small, "store");
        const g = ["--store", store];
        await ok(ws, [...g, "init", "--workspace", ws.path]);
        const first = (await ok(ws, [...g, "create", "-m", "small", "--json"])).json().id;

        // Large blobs (object files): 3 × 1.5 MiB of noise on a 4 MiB filesystem.
        for (let i = 0; i < 3; i++) {
          await Deno.writeFile(join(ws.path, `big-${i}.bin`), noise(1536 * 1024));
        }
        const args = [...g, "create", "-m", "too big"];
        assertCleanFailure(args, await ws.run(args));
        await ok(ws, [...g, "verify", "--all"]);
        const ids = (await ok(ws, [...g, "list", "--all", "--json"])).json().snapshots.map((
          s: { id: string },
        ) => s.id);
        assertEquals(ids, [first]);
        assertEquals(
          fs.readdirSync(join(store, "tmp")).filter((n) => n !== "stamp"),
          [],
          "temp files left on the full filesystem",
        );
        for (let i = 0; i < 3; i++) await Deno.remove(join(ws.path, `big-${i}.bin`));

        // Small blobs (inside SQLite): 40 × 100 KiB of noise.
        await Deno.mkdir(join(ws.path, "many"));
        for (let i = 0; i < 40; i++) {
          await Deno.writeFile(join(ws.path, "many", `f${i}.bin`), noise(100 * 1024));
        }
        assertCleanFailure(args, await ws.run(args));
        await ok(ws, [...g, "verify", "--all"]);
        await ok(ws, [...g, "verify", first]);
        assertEquals(
          (await ok(ws, [...g, "list", "--all", "--json"])).json().snapshots.length,
          1,
        );

        // Once there is room again, the same store takes new snapshots.
        await Deno.remove(join(ws.path, "many"), { recursive: true });
        await ok(ws, [...g, "create", "-m", "after"]);
        await ok(ws, [...g, "verify", "--all"]);
      });
    } finally {
      await ws.cleanup();
    }
  },
});

Deno.test({
  name: "read-only store: list, show and verify work; create fails with a clear error",
  ignore: NO_MOUNT !== null,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const ws = await tempWorkspace();
    try {
      await withSmallFs(ws.root, 8, async (small) => {
        const store = join(small, "store");
        const g = ["--store", store];
        await ok(ws, [...g, "init", "--workspace", ws.path]);
        await Deno.writeFile(join(ws.path, "large.bin"), noise(1536 * 1024)); // an object file
        const a = (await ok(ws, [...g, "create", "-m", "one", "--json"])).json().id;
        await Deno.writeTextFile(join(ws.path, "a.txt"), "changed\n");
        const b = (await ok(ws, [...g, "create", "-m", "two", "--json"])).json().id;

        shOk(`mount -o remount,ro '${small}'`);
        assert(sh(`touch '${store}/probe'`).code !== 0, "the store is still writable");

        const listed = (await ok(ws, [...g, "list", "--json"])).json().snapshots.map((
          s: { id: string },
        ) => s.id);
        assertEquals(listed, [b, a]);
        await ok(ws, [...g, "list", "--all"]);
        assertEquals((await ok(ws, [...g, "show", a, "--json"])).json().id, a);
        await ok(ws, [...g, "verify"]);
        await ok(ws, [...g, "verify", a]);
        assertEquals((await ok(ws, [...g, "verify", "--all", "--json"])).json().ok, true);
        await ok(ws, [...g, "diff", a, b]);
        await ok(ws, [...g, "materialize", a, join(ws.root, "out")]);

        const args = [...g, "create", "-m", "refused"];
        assertCleanFailure(args, await ws.run(args));

        shOk(`mount -o remount,rw '${small}'`);
        await ok(ws, [...g, "create", "-m", "writable again"]);
        await ok(ws, [...g, "verify", "--all"]);
      });
    } finally {
      await ws.cleanup();
    }
  },
});
