/**
 * Tests of lib/workspace/io: path rules, capture policy, ignore files, the no-follow
 * walk, safe reads and atomic writes, on real files in temporary directories.
 *
 * @module
 */
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { ConflictError, CtxsnapError, NotFoundError, PathError } from "../../lib/errors.ts";
import { SafeWriter } from "../../lib/workspace/io/safe_write.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { fsyncDir, TEMP_PREFIX, writeFileAtomic } from "../../lib/workspace/io/atomic.ts";
import { IgnoreFileError, IgnoreStack } from "../../lib/workspace/io/ignore.ts";
import {
  checkEntryPaths,
  comparePaths,
  isSafeRelativePath,
  normalizeRelativePath,
} from "../../lib/workspace/io/path.ts";
import {
  DEFAULT_EXCLUDED_DIRS,
  DEFAULT_MAX_FILE_BYTES,
  isSecretName,
} from "../../lib/workspace/io/capture_policy.ts";
import {
  FileChangedError,
  readRegularNoFollow,
  statInfoOf,
  UnreadableError,
} from "../../lib/workspace/io/safe_read.ts";
import { type WalkItem, type WalkOptions, walkWorkspace } from "../../lib/workspace/io/walk.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { foldName } from "../../lib/workspace/io/reserved.ts";
import { prng } from "../_util.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const SECRET = "SECRET-bytes-that-must-never-be-captured";
const isRoot = detectRoot();
/**
 * A swapped-in symlink fails with ELOOP when Deno runs with all permissions;
 * otherwise Deno resolves the link before open and the inode check refuses it.
 */
const SWAP_MESSAGE = /became a symlink|was replaced between lstat and open/;

/** Root reads files whatever their mode; permission tests are skipped then. */
function detectRoot(): boolean {
  try {
    return Deno.uid() === 0;
  } catch {
    // Without --allow-sys, ask `id` (needs --allow-run).
    const output = new Deno.Command("id", { args: ["-u"] }).outputSync();
    return new TextDecoder().decode(output.stdout).trim() === "0";
  }
}

async function withTempDir(fn: (dir: string) => void | Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-fs-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Creates files (string content) and directories (keys ending in "/") below `root`. */
function layout(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    const abs = join(root, path);
    if (path.endsWith("/")) {
      Deno.mkdirSync(abs, { recursive: true });
    } else {
      Deno.mkdirSync(join(abs, ".."), { recursive: true });
      Deno.writeTextFileSync(abs, content);
    }
  }
}

function walk(root: string, options?: WalkOptions): WalkItem[] {
  return [...walkWorkspace(root, options)];
}

/** One line per item: "file:path", "symlink:path->target", "skip:path:reason". */
function summary(items: WalkItem[]): string[] {
  return items.map((item) =>
    item.kind === "file"
      ? `file:${item.path}`
      : item.kind === "symlink"
      ? `symlink:${item.path}->${item.target}`
      : `skip:${item.path}:${item.reason}`
  );
}

function mkfifo(path: string): void {
  const result = new Deno.Command("mkfifo", { args: [path] }).outputSync();
  assert(result.success, `mkfifo failed: ${decoder.decode(result.stderr)}`);
}

// ---------------------------------------------------------------- path rules

Deno.test("normalizeRelativePath returns normalized relative paths unchanged", () => {
  for (const path of ["a", "a/b/c.txt", "é/ü.md", "line\nbreak", ".hidden/.x", "a..b", "..a"]) {
    assertEquals(normalizeRelativePath(path), path);
    assert(isSafeRelativePath(path), path);
  }
  const longest = "a/".repeat(2047) + "bc"; // 4096 bytes
  assertEquals(normalizeRelativePath(longest), longest);
});

Deno.test("normalizeRelativePath refuses traversal, absolute and unnormalized paths", () => {
  const bad = [
    "..",
    "../x",
    "a/../b",
    "a/..",
    "/abs",
    "",
    "a//b",
    "a/",
    "./a",
    "a/./b",
    ".",
    "a\\b",
    "a\0b",
    "\ud800x",
    "é".repeat(2049), // 4098 UTF-8 bytes
  ];
  for (const path of bad) {
    assertThrows(() => normalizeRelativePath(path), PathError);
    assert(!isSafeRelativePath(path), JSON.stringify(path));
  }
  assertThrows(() => normalizeRelativePath("../x"), PathError, '"../x"');
});

Deno.test("comparePaths orders by UTF-16 code units like the default sort", () => {
  const paths = ["ab", "a/b", "a.b", "a-b", "B", "b", "\u{10000}", "\uffff", "é"];
  const sorted = [...paths].sort(comparePaths);
  assertEquals(sorted, [...paths].sort());
  assertEquals(sorted.slice(0, 5), ["B", "a-b", "a.b", "a/b", "ab"]);
  // An astral character (a surrogate pair, 0xD800...) sorts before U+FFFF.
  assert(comparePaths("\u{10000}", "\uffff") < 0);
  assertEquals(comparePaths("x", "x"), 0);
});

Deno.test("checkEntryPaths accepts sorted, unique, non-nested entries", () => {
  checkEntryPaths([]);
  checkEntryPaths(["a-b", "a.b", "a/b", "a/c/d", "ab", "b"]);
  checkEntryPaths(["a", "a-x/y", "a.b", "ab/c"]);
});

Deno.test("checkEntryPaths refuses duplicates, disorder, nesting and bad paths", () => {
  assertThrows(() => checkEntryPaths(["a", "a"]), PathError, "more than once");
  assertThrows(() => checkEntryPaths(["b", "a"]), PathError, "out of order");
  assertThrows(() => checkEntryPaths(["a/b", "a-b"]), PathError, '"a-b"');
  assertThrows(() => checkEntryPaths(["a", "a/x"]), PathError, '"a/x" sits below entry "a"');
  // Entries sorting between the directory and its child do not hide the nesting.
  assertThrows(() => checkEntryPaths(["a", "a-b", "a.b", "a/x"]), PathError, '"a/x"');
  assertThrows(() => checkEntryPaths(["a/b", "a/b/c/d"]), PathError, '"a/b/c/d"');
  assertThrows(() => checkEntryPaths(["a", "../x"]), PathError, '"../x"');
  assertThrows(() => checkEntryPaths(["x/", "y"]), PathError);
});

Deno.test("checkEntryPaths accepts a sorted 200,000-path manifest and finds one nesting in it", () => {
  const paths: string[] = [];
  for (let i = 0; i < 200_000; i++) paths.push(`d${i % 100}/f${i}`);
  paths.sort(comparePaths);
  checkEntryPaths(paths);
  const nested = [...paths, "d7/f7/x"].sort(comparePaths);
  assertThrows(() => checkEntryPaths(nested), PathError, '"d7/f7/x"');
});

// ---------------------------------------------------------------- policy

Deno.test("isSecretName matches the secret patterns case-insensitively", () => {
  const secrets = [
    ".env",
    ".ENV",
    ".env.local",
    ".env.production",
    "server.key",
    "cert.PEM",
    "bundle.p12",
    "cert.pfx",
    "credentials",
    "Credentials.json",
    "service-account.json",
    "service_account.json",
  ];
  for (const name of secrets) assert(isSecretName(name), name);
  const ordinary = [
    "env",
    "environment.ts",
    "keys.txt",
    "key",
    "pem.md",
    "credentials.md",
    "my-service-account.json.bak",
  ];
  for (const name of ordinary) assert(!isSecretName(name), name);
});

Deno.test("default policy excludes the tool and dependency directories", () => {
  assertEquals(
    [...DEFAULT_EXCLUDED_DIRS].sort(),
    [".ctxsnap", ".git", ".venv", "__pycache__", "node_modules"],
  );
  assertEquals(DEFAULT_MAX_FILE_BYTES, 256 * 1024 * 1024);
});

// ---------------------------------------------------------------- ignore rules

Deno.test("IgnoreStack lets deeper .gitignore files override shallower ones", () => {
  const stack = IgnoreStack.root().withRules("", "*.log\n# comment\n").withRules(
    "sub",
    "!keep.log",
  );
  assert(stack.ignores("a.log", false));
  assert(stack.ignores("sub/a.log", false));
  assert(!stack.ignores("sub/keep.log", false));
  assert(stack.ignores("keep.log", false)); // the negation only applies below sub/
  assert(!stack.ignores("sub", true));
});

Deno.test("IgnoreStack lets a deeper .gitignore re-include a directory and its contents", () => {
  const stack = IgnoreStack.root().withRules("", "build/").withRules("a", "!build/");
  assert(stack.ignores("build", true));
  assert(!stack.ignores("a/build", true));
  assert(!stack.ignores("a/build/x.js", false));
});

Deno.test("IgnoreStack applies .ctxsnapignore after every .gitignore", () => {
  const stack = IgnoreStack.root()
    .withRules("", "", "!generated/\nnotes.txt")
    .withRules("pkg", "generated/\n/local.txt");
  assert(!stack.ignores("pkg/generated", true)); // re-included by the root .ctxsnapignore
  assert(stack.ignores("pkg/notes.txt", false));
  assert(stack.ignores("pkg/local.txt", false));
  assert(!stack.ignores("pkg/deeper/local.txt", false)); // anchored to pkg/
  assert(!stack.ignores("local.txt", false));
});

Deno.test("IgnoreStack is case-sensitive and keeps directory-only patterns for directories", () => {
  const stack = IgnoreStack.root().withRules("", "build/\nREADME.tmp");
  assert(stack.ignores("build", true));
  assert(!stack.ignores("build", false));
  // Only the entry's own rules count: the walker never descends into "build".
  assert(!stack.ignores("build/x.js", false));
  assert(!stack.ignores("readme.tmp", false));
});

Deno.test("IgnoreStack.child reads ignore files but refuses one that is a symlink (fail closed)", async () => {
  await withTempDir((dir) => {
    layout(dir, {
      "sub/.gitignore": "*.tmp\n",
      "elsewhere/rules": "*.md\n",
      "plain/.gitignore": "*.tmp\n",
    });
    Deno.symlinkSync(join(dir, "elsewhere/rules"), join(dir, "sub/.ctxsnapignore"));
    const root = IgnoreStack.root().child("", dir);
    assertEquals(root, IgnoreStack.root().child("", dir)); // no files: unchanged
    const plain = root.child("plain", join(dir, "plain"));
    assert(plain.ignores("plain/x.tmp", false));
    // Never read through the link, and never silently dropped either.
    assertThrows(() => root.child("sub", join(dir, "sub")), IgnoreFileError, "not a regular file");
    assert(summary(walk(dir)).includes("skip:sub:unreadable"));
  });
});

// ---------------------------------------------------------------- walk

Deno.test("walk records a symlink with its target and never reads or follows it", async () => {
  await withTempDir((dir) => {
    const outside = join(dir, "outside");
    const ws = join(dir, "ws");
    layout(outside, { "secret.txt": SECRET, "tree/inner.txt": SECRET });
    layout(ws, { "real.txt": "hello" });
    Deno.symlinkSync(join(outside, "secret.txt"), join(ws, "link.txt"));
    Deno.symlinkSync(join(outside, "tree"), join(ws, "linkdir"));
    Deno.symlinkSync("missing-target", join(ws, "dangling"));

    const items = walk(ws);
    assertEquals(summary(items), [
      "symlink:dangling->missing-target",
      `symlink:link.txt->${join(outside, "secret.txt")}`,
      `symlink:linkdir->${join(outside, "tree")}`,
      "file:real.txt",
    ]);
    assert(!JSON.stringify(items).includes(SECRET));
    assert(!items.some((item) => item.path.startsWith("linkdir/")));

    // Reading the symlink path as if it were a file fails instead of following it.
    const stat = statInfoOf(lstatSync(join(ws, "link.txt")));
    const error = assertThrows(
      () => readRegularNoFollow(join(ws, "link.txt"), stat, { maxBytes: 1 << 20 }),
      FileChangedError,
    );
    assert(SWAP_MESSAGE.test(error.message), error.message);
  });
});

Deno.test("a symlink swapped in between lstat and open is never read", async () => {
  await withTempDir((dir) => {
    layout(dir, { "notes.txt": "harmless", "secret.txt": SECRET });
    const file = join(dir, "notes.txt");
    const expected = statInfoOf(lstatSync(file));
    Deno.removeSync(file);
    Deno.symlinkSync(join(dir, "secret.txt"), file);
    let chunks = 0;
    const error = assertThrows(
      () =>
        readRegularNoFollow(file, expected, {
          maxBytes: 1 << 20,
          onChunk: () => chunks++,
        }),
      FileChangedError,
    );
    assert(SWAP_MESSAGE.test(error.message), error.message);
    assertEquals(chunks, 0); // refused before a single byte was read
  });
});

Deno.test("a file replaced by another regular file between lstat and open is refused", async () => {
  await withTempDir((dir) => {
    layout(dir, { "notes.txt": "original", "secret.txt": SECRET });
    const file = join(dir, "notes.txt");
    const expected = statInfoOf(lstatSync(file));
    Deno.renameSync(join(dir, "secret.txt"), file); // new inode at the same path
    assertThrows(
      () => readRegularNoFollow(file, expected, { maxBytes: 1 << 20 }),
      FileChangedError,
      "was replaced between lstat and open",
    );
  });
});

Deno.test("a FIFO is reported as special_file and never blocks a walk or a read", async () => {
  await withTempDir(async (dir) => {
    const ws = join(dir, "ws");
    layout(ws, { "a.txt": "a" });
    mkfifo(join(ws, "pipe"));
    // Run in a subprocess with a deadline: a blocking open would hang forever.
    const script = join(dir, "probe.ts");
    Deno.writeTextFileSync(
      script,
      `
      import { walkWorkspace } from ${
        JSON.stringify(import.meta.resolve("../../lib/workspace/io/walk.ts"))
      };
      import { readRegularNoFollow } from ${
        JSON.stringify(import.meta.resolve("../../lib/workspace/io/safe_read.ts"))
      };
      import { lstatSync } from "node:fs";
      const ws = ${JSON.stringify(ws)};
      const items = [...walkWorkspace(ws)];
      const real = lstatSync(ws + "/pipe");
      const fake = { size: 10, mtimeMs: 0, ctimeMs: 0, ino: real.ino, dev: real.dev, mode: 0o644 };
      let readError = "none";
      try {
        readRegularNoFollow(ws + "/pipe", fake, { maxBytes: 100 });
      } catch (error) {
        readError = error.name + ": " + error.message;
      }
      console.log(JSON.stringify({ items, readError }));
      `,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-env",
        "--config",
        new URL("../../deno.json", import.meta.url).pathname,
        script,
      ],
      cwd: Deno.cwd(),
      signal: AbortSignal.timeout(20_000),
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert(output.success, decoder.decode(output.stderr));
    const { items, readError } = JSON.parse(decoder.decode(output.stdout));
    assertEquals(summary(items), ["file:a.txt", "skip:pipe:special_file"]);
    assertEquals(items[1].detail, "fifo");
    assert(readError.startsWith("FileChangedError"), readError);
    assert(readError.includes("no longer a regular file"), readError);
  });
});

Deno.test("walk skips secrets by name without opening them", async () => {
  await withTempDir((dir) => {
    layout(dir, {
      ".env": SECRET,
      ".env.local": SECRET,
      "config/prod.pem": SECRET,
      "config/app.json": "{}",
      "gcp/service-account.json": SECRET,
      "CREDENTIALS": SECRET,
    });
    Deno.symlinkSync("/nonexistent/key", join(dir, "deploy.key"));
    const items = walk(dir);
    assertEquals(summary(items), [
      "skip:.env:secret",
      "skip:.env.local:secret",
      "skip:CREDENTIALS:secret",
      "file:config/app.json",
      "skip:config/prod.pem:secret",
      "skip:deploy.key:secret",
      "skip:gcp/service-account.json:secret",
    ]);
    if (!isRoot) {
      // An unreadable secret is still just "secret": it is never opened.
      Deno.chmodSync(join(dir, ".env"), 0o000);
      assertEquals(summary(walk(dir))[0], "skip:.env:secret");
    }
  });
});

Deno.test("walk honors nested .gitignore with negation and directory-only patterns", async () => {
  await withTempDir((dir) => {
    layout(dir, {
      ".gitignore": "*.log\nbuild/\n",
      "app.log": "x",
      "keep.log": "x",
      "build/out.js": "x",
      "src/build": "a file named build is not a directory",
      "src/.gitignore": "!keep.log\n/local.txt\n",
      "src/keep.log": "x",
      "src/other.log": "x",
      "src/local.txt": "x",
      "src/deep/local.txt": "x",
    });
    assertEquals(summary(walk(dir)), [
      "file:.gitignore",
      "skip:app.log:ignored",
      "skip:build:ignored",
      "skip:keep.log:ignored",
      "file:src/.gitignore",
      "file:src/build",
      "file:src/deep/local.txt",
      "file:src/keep.log",
      "skip:src/local.txt:ignored",
      "skip:src/other.log:ignored",
    ]);
    // useIgnoreFiles: false captures everything.
    assertEquals(walk(dir, { useIgnoreFiles: false }).filter((i) => i.kind === "skip"), []);
  });
});

Deno.test("walk honors .ctxsnapignore, which can override .gitignore", async () => {
  await withTempDir((dir) => {
    layout(dir, {
      ".gitignore": "dist/\n",
      ".ctxsnapignore": "!dist/\n*.bak\ndata/\n",
      "dist/bundle.js": "x",
      "notes.bak": "x",
      "data/huge.csv": "x",
      "sub/.ctxsnapignore": "*.md\n",
      "sub/readme.md": "x",
      "readme.md": "x",
    });
    assertEquals(summary(walk(dir)), [
      "file:.ctxsnapignore",
      "file:.gitignore",
      "skip:data:ignored",
      "file:dist/bundle.js",
      "skip:notes.bak:ignored",
      "file:readme.md",
      "file:sub/.ctxsnapignore",
      "skip:sub/readme.md:ignored",
    ]);
  });
});

Deno.test("walk skips default directories once each, at any depth, without descending", async () => {
  await withTempDir((dir) => {
    layout(dir, {
      ".git/HEAD": "ref",
      ".git/objects/ab/cd": "x",
      ".ctxsnap/store.db": "x",
      ".venv/bin/python": "x",
      "pkg/__pycache__/m.pyc": "x",
      "pkg/node_modules/dep/index.js": "x",
      "pkg/m.py": "x",
    });
    assertEquals(summary(walk(dir)), [
      "skip:.ctxsnap:reserved",
      "skip:.git:reserved",
      "skip:.venv:excluded_dir",
      "skip:pkg/__pycache__:excluded_dir",
      "file:pkg/m.py",
      "skip:pkg/node_modules:excluded_dir",
    ]);
    const custom = walk(dir, { excludeDirs: new Set(["pkg"]) });
    assert(summary(custom).includes("skip:pkg:excluded_dir"));
    // Reserved names stay out whatever the excluded set says.
    assert(summary(custom).includes("skip:.git:reserved"));
  });
});

Deno.test("walk skips files over maxFileBytes and accepts exactly maxFileBytes", async () => {
  await withTempDir((dir) => {
    Deno.writeFileSync(join(dir, "at-limit.bin"), new Uint8Array(1000));
    Deno.writeFileSync(join(dir, "over-limit.bin"), new Uint8Array(1001));
    const items = walk(dir, { maxFileBytes: 1000 });
    assertEquals(summary(items), ["file:at-limit.bin", "skip:over-limit.bin:too_large"]);
    const file = items[0]!;
    assert(file.kind === "file");
    assertEquals(file.stat.size, 1000);
    assertEquals(file.absPath, join(dir, "at-limit.bin"));
    const skip = items[1]!;
    assert(skip.kind === "skip");
    assertEquals(skip.detail, "1001 bytes");
  });
});

Deno.test("walk yields paths in comparePaths order across directories", async () => {
  await withTempDir((dir) => {
    layout(dir, {
      "a-b": "x",
      "a/b": "x",
      "a.b": "x",
      "ab": "x",
      "a/c-d/e": "x",
      "a/c/d": "x",
      "a/c.d": "x",
      "B": "x",
      "é": "x",
    });
    Deno.symlinkSync("a", join(dir, "a0"));
    const paths = walk(dir).map((item) => item.path);
    assertEquals(paths, [...paths].sort(comparePaths));
    assertEquals(paths, ["B", "a-b", "a.b", "a/b", "a/c-d/e", "a/c.d", "a/c/d", "a0", "ab", "é"]);
    checkEntryPaths(paths);
  });
});

Deno.test("walk leaves out empty directories", async () => {
  await withTempDir((dir) => {
    layout(dir, { "empty/": "", "nested/empty/": "", "x.txt": "x" });
    assertEquals(summary(walk(dir)), ["file:x.txt"]);
  });
});

Deno.test("walk reports names that cannot be manifest paths as unsafe_name", async () => {
  await withTempDir((dir) => {
    layout(dir, { "ok.txt": "x", "back\\slash.txt": "x", "new\nline.txt": "x" });
    // A name that is not valid UTF-8.
    const made = new Deno.Command("sh", {
      args: ["-c", `touch "$1/$(printf 'bad\\377name')"`, "sh", dir],
    }).outputSync();
    assert(made.success);
    const lines = summary(walk(dir));
    assert(lines.includes("skip:back\\slash.txt:unsafe_name"), lines.join(" | "));
    assert(lines.includes("file:new\nline.txt"));
    assert(lines.includes("file:ok.txt"));
    assert(lines.includes("skip:bad\ufffdname:unsafe_name"), lines.join(" | "));
    assertEquals(lines.length, 4);
  });
});

Deno.test("walk checks names below the root as it does at the root: unsafe names deep in the tree", async () => {
  await withTempDir((dir) => {
    layout(dir, { "a/b/back\\slash.txt": "x", "a/b/ok.txt": "x", "a/c\\d/e.txt": "x" });
    const made = new Deno.Command("sh", {
      args: ["-c", `touch "$1/a/b/$(printf 'bad\\377name')"`, "sh", dir],
    }).outputSync();
    assert(made.success);
    const items = walk(dir);
    const lines = summary(items);
    assertEquals(lines, [
      "skip:a/b/back\\slash.txt:unsafe_name",
      "skip:a/b/bad\ufffdname:unsafe_name",
      "file:a/b/ok.txt",
      "skip:a/c\\d:unsafe_name",
    ]);
    const backslash = items[0] as { detail?: string };
    assertEquals(backslash.detail, 'Path "a/b/back\\\\slash.txt" contains a backslash');
  });
});

Deno.test("walk reports an unreadable directory and keeps going", {
  ignore: isRoot,
}, async () => {
  await withTempDir((dir) => {
    layout(dir, { "locked/x.txt": "x", "z.txt": "z" });
    Deno.chmodSync(join(dir, "locked"), 0o000);
    try {
      const items = walk(dir);
      assertEquals(summary(items), ["skip:locked:unreadable", "file:z.txt"]);
    } finally {
      Deno.chmodSync(join(dir, "locked"), 0o755);
    }
  });
});

Deno.test("walk refuses a missing or non-directory root", async () => {
  await withTempDir((dir) => {
    assertThrows(() => walk(join(dir, "missing")), NotFoundError, "does not exist");
    layout(dir, { "file.txt": "x" });
    assertThrows(() => walk(join(dir, "file.txt")), CtxsnapError, "is not a directory");
  });
});

// ---------------------------------------------------------------- safe read

Deno.test("readRegularNoFollow hashes in chunks, streams, and keeps small files", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "big.bin");
    const bytes = new Uint8Array(2.5 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) & 0xff;
    Deno.writeFileSync(file, bytes);
    Deno.chmodSync(file, 0o640);
    const expected = statInfoOf(lstatSync(file));
    const chunks: Uint8Array[] = [];
    const result = readRegularNoFollow(file, expected, {
      maxBytes: bytes.length,
      onChunk: (chunk) => chunks.push(chunk.slice()),
    });
    assertEquals(result.size, bytes.length);
    assertEquals(result.sha256, sha256Hex(bytes));
    assertEquals(result.stat, expected);
    assertEquals(result.stat.mode, 0o640);
    assert(result.data !== null);
    assertEquals(sha256Hex(result.data), sha256Hex(bytes));
    assertEquals(chunks.length, 3);
    const joined = new Uint8Array(bytes.length);
    let offset = 0;
    for (const chunk of chunks) {
      joined.set(chunk, offset);
      offset += chunk.length;
    }
    assertEquals(sha256Hex(joined), result.sha256);

    const streamed = readRegularNoFollow(file, expected, {
      maxBytes: bytes.length,
      keepBytesUpTo: 1024,
    });
    assertEquals(streamed.data, null);
    assertEquals(streamed.sha256, result.sha256);
  });
});

Deno.test("readRegularNoFollow reads a file edited after the walk's lstat afresh, whole", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "notes.md");
    Deno.writeFileSync(file, encoder.encode("first draft"));
    const expected = statInfoOf(lstatSync(file));
    // Same inode, new content and size: an ordinary edit between walk and read.
    Deno.writeFileSync(file, encoder.encode("second, longer draft"));
    const result = readRegularNoFollow(file, expected, { maxBytes: 1 << 20 });
    assertEquals(new TextDecoder().decode(result.data!), "second, longer draft");
    assertEquals(result.sha256, sha256Hex("second, longer draft"));
    assertEquals(result.size, 20);
    assertEquals(result.stat, statInfoOf(lstatSync(file)));
    assertEquals(result.stat.ino, expected.ino);
  });
});

Deno.test("readRegularNoFollow's one-read path for a confirmed small file returns exactly its bytes, and a grown one whole", async () => {
  await withTempDir((dir) => {
    const real = Deno.realPathSync(dir);
    for (const text of ["", "x", "exactly these bytes\n"]) {
      const file = join(real, "same.txt");
      Deno.writeFileSync(file, encoder.encode(text));
      const expected = statInfoOf(lstatSync(file));
      const result = readRegularNoFollow(file, expected, {
        maxBytes: 1 << 20,
        expectedRealPath: file,
      });
      assertEquals(result.data!.byteLength, text.length);
      assertEquals(new TextDecoder().decode(result.data!), text);
      assertEquals(result.sha256, sha256Hex(text));
      assertEquals(result.size, text.length);
    }
    const file = join(real, "grown.log");
    Deno.writeFileSync(file, encoder.encode("line 1\n"));
    const expected = statInfoOf(lstatSync(file));
    Deno.writeFileSync(file, encoder.encode("line 2\n"), { append: true });
    const result = readRegularNoFollow(file, expected, {
      maxBytes: 1 << 20,
      expectedRealPath: file,
    });
    assertEquals(new TextDecoder().decode(result.data!), "line 1\nline 2\n");
    assertEquals(result.size, 14);
    assertEquals(result.sha256, sha256Hex("line 1\nline 2\n"));
  });
});

Deno.test("readRegularNoFollow reads an empty file", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "empty");
    Deno.writeFileSync(file, new Uint8Array());
    const result = readRegularNoFollow(file, statInfoOf(lstatSync(file)), { maxBytes: 0 });
    assertEquals(result.size, 0);
    assertEquals(result.data, new Uint8Array());
    assertEquals(result.sha256, sha256Hex(""));
  });
});

Deno.test("a file that grows while being read is reported, never half-captured", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "growing.log");
    Deno.writeFileSync(file, new Uint8Array(3 * 1024 * 1024).fill(65));
    const expected = statInfoOf(lstatSync(file));
    let calls = 0;
    assertThrows(
      () =>
        readRegularNoFollow(file, expected, {
          maxBytes: 1 << 30,
          onChunk: () => {
            if (calls++ === 0) {
              Deno.writeFileSync(file, encoder.encode("more"), { append: true });
            }
          },
        }),
      FileChangedError,
      "changed while being read",
    );
    assert(calls >= 1 && calls <= 4);
  });
});

Deno.test("a file that shrinks or is rewritten while being read is reported", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "data.bin");
    Deno.writeFileSync(file, new Uint8Array(3 * 1024 * 1024).fill(66));
    const expected = statInfoOf(lstatSync(file));
    let first = true;
    assertThrows(
      () =>
        readRegularNoFollow(file, expected, {
          maxBytes: 1 << 30,
          onChunk: () => {
            if (first) Deno.truncateSync(file, 1024);
            first = false;
          },
        }),
      FileChangedError,
      "changed while being read",
    );
  });
});

Deno.test("readRegularNoFollow refuses a file beyond maxBytes", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "f.bin");
    Deno.writeFileSync(file, new Uint8Array(101));
    const expected = statInfoOf(lstatSync(file));
    assertThrows(
      () => readRegularNoFollow(file, expected, { maxBytes: 100 }),
      FileChangedError,
      "size limit",
    );
  });
});

Deno.test("an exception from onChunk propagates unchanged", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "f.txt");
    Deno.writeTextFileSync(file, "content");
    class StorageFull extends Error {}
    assertThrows(
      () =>
        readRegularNoFollow(file, statInfoOf(lstatSync(file)), {
          maxBytes: 100,
          onChunk: () => {
            throw new StorageFull("disk full");
          },
        }),
      StorageFull,
      "disk full",
    );
  });
});

Deno.test("a file that disappears between walk and read is unreadable", async () => {
  await withTempDir((dir) => {
    layout(dir, { "gone.txt": "x" });
    const [item] = walk(dir);
    assert(item?.kind === "file");
    Deno.removeSync(item.absPath);
    assertThrows(
      () => readRegularNoFollow(item.absPath, item.stat, { maxBytes: 100 }),
      UnreadableError,
      "disappeared",
    );
  });
});

Deno.test("a file without read permission is unreadable", { ignore: isRoot }, async () => {
  await withTempDir((dir) => {
    layout(dir, { "locked.txt": "x" });
    const file = join(dir, "locked.txt");
    Deno.chmodSync(file, 0o000);
    const [item] = walk(dir);
    assert(item?.kind === "file"); // lstat works; only the read fails
    const error = assertThrows(
      () => readRegularNoFollow(file, item.stat, { maxBytes: 100 }),
      UnreadableError,
      "Permission denied",
    );
    assertEquals(error.code, "failure");
  });
});

// ---------------------------------------------------------------- atomic write

function leftovers(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith(TEMP_PREFIX));
}

Deno.test("writeFileAtomic writes the content with the requested mode and no temp file", async () => {
  await withTempDir((dir) => {
    const file = join(dir, "out.txt");
    writeFileAtomic(file, "first\n");
    assertEquals(Deno.readTextFileSync(file), "first\n");
    writeFileAtomic(file, encoder.encode("second\n"), { mode: 0o600 });
    assertEquals(Deno.readTextFileSync(file), "second\n");
    assertEquals(Deno.statSync(file).mode! & 0o777, 0o600);
    writeFileAtomic(file, "third\n", { mode: 0o755, fsync: false });
    assertEquals(Deno.readTextFileSync(file), "third\n");
    assertEquals(Deno.statSync(file).mode! & 0o777, 0o755);
    assertEquals(leftovers(dir), []);
  });
});

Deno.test("writeFileAtomic replaces a symlink at the destination instead of following it", async () => {
  await withTempDir((dir) => {
    layout(dir, { "target.txt": "target stays" });
    const link = join(dir, "link.txt");
    Deno.symlinkSync(join(dir, "target.txt"), link);
    writeFileAtomic(link, "new content");
    assert(Deno.lstatSync(link).isFile);
    assertEquals(Deno.readTextFileSync(link), "new content");
    assertEquals(Deno.readTextFileSync(join(dir, "target.txt")), "target stays");
    assertEquals(leftovers(dir), []);
  });
});

Deno.test("writeFileAtomic fails with a typed error and leaves no temp file", async () => {
  await withTempDir((dir) => {
    assertThrows(
      () => writeFileAtomic(join(dir, "missing", "x.txt"), "x"),
      CtxsnapError,
      "Cannot write file",
    );
    Deno.mkdirSync(join(dir, "occupied"));
    assertThrows(() => writeFileAtomic(join(dir, "occupied"), "x"), CtxsnapError, "occupied");
    assert(Deno.statSync(join(dir, "occupied")).isDirectory);
    assertEquals(leftovers(dir), []);
  });
});

Deno.test("fsyncDir succeeds on a directory", async () => {
  await withTempDir((dir) => {
    fsyncDir(dir);
  });
});

Deno.test("SafeWriter refuses to write through a parent directory replaced after it was checked", async () => {
  const root = await Deno.makeTempDir();
  const outside = await Deno.makeTempDir();
  try {
    const writer = new SafeWriter(root);
    writer.writeFile("a/first.txt", 0o644, (write) => write(new TextEncoder().encode("one\n")));
    // `a` is now known to be a real directory; swap it for a symlink to outside.
    await Deno.remove(`${root}/a`, { recursive: true });
    await Deno.symlink(outside, `${root}/a`);
    assertThrows(
      () =>
        writer.writeFile(
          "a/second.txt",
          0o644,
          (write) => write(new TextEncoder().encode("two\n")),
        ),
      ConflictError,
      "replaced",
    );
    assertEquals([...Deno.readDirSync(outside)].map((e) => e.name), []);
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("walk skips a .git file (a worktree's gitdir pointer) and any case of .Git or .CTXSNAP as reserved", async () => {
  await withTempDir((dir) => {
    layout(dir, {
      "sub/.git": "gitdir: ../elsewhere",
      ".Git/x": "x",
      "a/.CTXSNAP": "x",
      "ok.txt": "x",
    });
    assertEquals(summary(walk(dir)), [
      "skip:.Git:reserved",
      "skip:a/.CTXSNAP:reserved",
      "file:ok.txt",
      "skip:sub/.git:reserved",
    ]);
  });
});

Deno.test("walk leaves out a directory whose ignore file cannot be applied (fail closed)", async () => {
  await withTempDir((dir) => {
    layout(dir, { "private/notes.txt": "secret-ish", "ok.txt": "x" });
    Deno.writeTextFileSync(
      join(dir, "private/.ctxsnapignore"),
      "notes.txt\n" + "#".repeat(2 * 1024 * 1024),
    );
    const items = summary(walk(dir));
    assert(items.includes("skip:private:unreadable"), items.join("\n"));
    assert(!items.some((i) => i.includes("notes.txt")), items.join("\n"));
  });
});

Deno.test("foldName's printable-ASCII fast path folds exactly as the full Unicode folding does", () => {
  const full = (name: string) => {
    const folded = name.replace(/\p{Default_Ignorable_Code_Point}/gu, "").normalize("NFC")
      .toUpperCase().toLowerCase();
    const colon = folded.indexOf(":");
    return (colon === -1 ? folded : folded.slice(0, colon)).replace(/[. ]+$/, "");
  };
  const rand = prng(20261130);
  const names = [".git", ".GIT. ", "GIT~1", ".ctxsnap:stream", "Notes.MD", "a b .", "~"];
  for (let code = 0x20; code <= 0x7e; code++) names.push(String.fromCharCode(code));
  for (let i = 0; i < 5000; i++) {
    let name = "";
    const length = 1 + Math.floor(rand() * 12);
    for (let j = 0; j < length; j++) name += String.fromCharCode(0x20 + Math.floor(rand() * 95));
    names.push(name);
  }
  for (const name of names) assertEquals(foldName(name), full(name), JSON.stringify(name));
});

Deno.test("SafeWriter opens every directory O_NOFOLLOW: a symlinked parent is refused as a symlink before anything is opened through it", async () => {
  if (!(await Deno.stat("/proc/self/fd").then(() => true, () => false))) return; // no descriptors here
  const root = await Deno.makeTempDir();
  const outside = await Deno.makeTempDir();
  try {
    await Deno.symlink(outside, `${root}/a`);
    await Deno.symlink(`${outside}/not-yet`, `${root}/dangling`);
    const writer = new SafeWriter(root);
    try {
      // Refused at the open (ELOOP), not by the later location re-check ("replaced").
      for (const path of ["a/x.txt", "a/sub/x.txt", "dangling/x.txt"]) {
        const error = assertThrows(
          () => writer.writeFile(path, 0o644, (write) => write(new TextEncoder().encode("x\n"))),
          ConflictError,
        );
        assert(/is a symlink/.test(error.message), `${path}: ${error.message}`);
      }
      assertThrows(() => writer.list("a"), ConflictError, "is a symlink");
    } finally {
      writer.close();
    }
    assertEquals([...Deno.readDirSync(outside)].map((e) => e.name), []);
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("readRegularNoFollow() opens O_NOFOLLOW: the walked file moved outside with a symlink left in its place is never read (same inode)", async () => {
  await withTempDir((dir) => {
    Deno.mkdirSync(join(dir, "ws"));
    Deno.mkdirSync(join(dir, "outside"));
    layout(join(dir, "ws"), { "notes.txt": SECRET });
    const file = join(dir, "ws", "notes.txt");
    const expected = statInfoOf(lstatSync(file));
    // The very inode the walk saw, now outside the workspace, reached through a symlink:
    // the identity check alone would accept it.
    Deno.renameSync(file, join(dir, "outside", "notes.txt"));
    Deno.symlinkSync(join(dir, "outside", "notes.txt"), file);
    let chunks = 0;
    const error = assertThrows(
      () => readRegularNoFollow(file, expected, { maxBytes: 1 << 20, onChunk: () => chunks++ }),
      FileChangedError,
    );
    assert(/became a symlink/.test(error.message), error.message);
    assertEquals(chunks, 0);
  });
});

Deno.test("walkWorkspace() yields nothing of a directory onListed claims, still walks its subdirectories, and reports leaving each directory", async () => {
  await withTempDir((root) => {
    layout(root, {
      "a.txt": "a",
      ".env": "x",
      "known/b.txt": "b",
      "known/.env": "x",
      "known/sub/c.txt": "c",
      "other/d.txt": "d",
    });
    const listed: string[] = [];
    const left: string[] = [];
    const items = walk(root, {
      onListed: (path, entries) => {
        listed.push(`${path}:${entries.map((e) => e.name).join(",")}`);
        return path === "known";
      },
      onLeave: (path) => left.push(path),
    });
    assertEquals(summary(items), [
      "skip:.env:secret",
      "file:a.txt",
      "file:known/sub/c.txt",
      "file:other/d.txt",
    ]);
    assertEquals(listed, [
      ":.env,a.txt,known,other",
      "known:.env,b.txt,sub",
      "known/sub:c.txt",
      "other:d.txt",
    ]);
    assertEquals(left, ["known/sub", "known", "other", ""]);
  });
});

Deno.test("readRegularNoFollow refuses a file reached through a parent directory swapped for a symlink after the walk, before reading a byte, and reads the walked file through another name", async () => {
  await withTempDir((dir) => {
    const ws = join(dir, "ws");
    const outside = join(dir, "outside");
    Deno.mkdirSync(join(ws, "sub"), { recursive: true });
    Deno.mkdirSync(outside);
    Deno.writeFileSync(join(ws, "sub", "notes.txt"), encoder.encode("notes\n"));
    Deno.writeFileSync(join(outside, "notes.txt"), encoder.encode("SECRET\n"));
    const expected = statInfoOf(lstatSync(join(ws, "sub", "notes.txt")));
    // The walk's directory moves away and a symlink to outside takes its place.
    Deno.renameSync(join(ws, "sub"), join(dir, "moved"));
    Deno.symlinkSync(outside, join(ws, "sub"));
    const seen: string[] = [];
    assertThrows(
      () =>
        readRegularNoFollow(join(ws, "sub", "notes.txt"), expected, {
          maxBytes: 1 << 20,
          inspect: (chunk) => void seen.push(new TextDecoder().decode(chunk)),
        }),
      FileChangedError,
      "replaced",
    );
    assertEquals(seen, []);
    // Through a link to where the walked directory now is, the same inode is
    // read, and its bytes are the walked file's.
    Deno.removeSync(join(ws, "sub"));
    Deno.symlinkSync(join(dir, "moved"), join(ws, "sub"));
    const read = readRegularNoFollow(join(ws, "sub", "notes.txt"), expected, { maxBytes: 1 << 20 });
    assertEquals(new TextDecoder().decode(read.data!), "notes\n");
  });
});
