/**
 * Tests of safe defaults and JSON style: `publish` never writes
 * into the captured workspace unless asked and takes a directory for
 * `--out`; `init` refuses a nested store without `--nested` and keeps the
 * store out of git; every command's `--json` uses snake_case keys and ISO
 * 8601 UTC times, with one snapshot summary shape in `create`, `list`,
 * `show` and the library. The command line runs in-process; git is real.
 *
 * @module
 */
import { join } from "node:path";
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { listSnapshots } from "../../lib/history/summary.ts";
import { Store } from "../../lib/repository/store.ts";
import { summaryJson } from "../../lib/cli/json.ts";
import { assert, assertEquals } from "../_assert.ts";
import { expectCode, type TempWorkspace, tempWorkspace, withStore } from "../_cli.ts";
import { exists } from "../_util.ts";

// deno-lint-ignore no-explicit-any
async function json(ws: TempWorkspace, args: string[], opts = {}): Promise<any> {
  const result = await ws.run([...args, "--json"], opts);
  expectCode(result, 0, args.join(" "));
  return result.json();
}

function git(cwd: string, ...args: string[]): string {
  const out = new Deno.Command("git", { args, cwd, stdout: "piped", stderr: "piped" }).outputSync();
  if (!out.success) {
    throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

Deno.test("publish never writes into the captured workspace unless asked: inside it the default is the store's published/ directory; --out takes a directory", async () => {
  await withStore(async (ws) => {
    const id = (await json(ws, ["create", "-m", "one"])).id as string;
    const name = `${id.slice(0, 12)}.ctxsnapshot.json`;
    const inside = await json(ws, ["publish", id]);
    assertEquals(inside.path, join(ws.path, ".ctxsnap", "published", name));
    assert(!(await exists(join(ws.path, name))), "published into the workspace");
    // The next capture does not see it.
    const again = await json(ws, ["create", "-m", "after publishing"]);
    assertEquals(again.created, false, "the published file changed the workspace");
    // From outside the workspace, the default is the current directory.
    const outside = join(ws.root, "elsewhere");
    await Deno.mkdir(outside);
    const there = await json(ws, ["--store", join(ws.path, ".ctxsnap"), "publish", id], {
      cwd: outside,
    });
    assertEquals(there.path, join(outside, name));
    // --out DIR: an existing directory, or a path ending in "/" (created).
    const dir = join(ws.root, "out");
    await Deno.mkdir(dir);
    assertEquals((await json(ws, ["publish", id, "--out", dir])).path, join(dir, name));
    const fresh = join(ws.root, "fresh", "sub");
    assertEquals(
      (await json(ws, ["publish", id, "--with-workspace", "--out", `${fresh}/`])).path,
      join(fresh, `${id.slice(0, 12)}.ctxbundle`),
    );
    // --out FILE inside the workspace is asked for: written there.
    const asked = join(ws.path, "share.ctxsnapshot.json");
    assertEquals((await json(ws, ["publish", id, "--out", asked])).path, asked);
  });
});

Deno.test("publish --out FILE replaces that snapshot's own published file, and refuses another snapshot's (exit 5) unless --force", async () => {
  await withStore(async (ws) => {
    const a = (await json(ws, ["create", "-m", "one"])).id as string;
    await Deno.writeTextFile(join(ws.path, "b.txt"), "two\n");
    const b = (await json(ws, ["create", "-m", "two"])).id as string;
    for (const [file, extra] of [["x.ctxbundle", ["--with-workspace"]], ["x.json", []]] as const) {
      const out = join(ws.root, file);
      await json(ws, ["publish", a, ...extra, "--out", out]);
      const first = await Deno.readFile(out);
      await json(ws, ["publish", a, ...extra, "--out", out]); // the same snapshot again: fine
      const refused = await ws.run(["publish", b, ...extra, "--out", out]);
      expectCode(refused, 5, `publish another snapshot over ${file}`);
      assert(refused.stderr.includes(a.slice(0, 12)), refused.stderr);
      assertEquals(await Deno.readFile(out), first, "the other snapshot's file is untouched");
      await json(ws, ["publish", b, ...extra, "--out", out, "--force"]);
    }
  });
});

Deno.test("init refuses a store nested in another store's workspace (exit 5) unless --nested, and adds the store to git's info/exclude once", async () => {
  const ws = await tempWorkspace();
  try {
    git(ws.path, "init", "-q");
    const first = await json(ws, ["init"]);
    const exclude = join(ws.path, ".git", "info", "exclude");
    assertEquals(first.git_exclude, exclude);
    assert((await Deno.readTextFile(exclude)).split("\n").includes("/.ctxsnap/"));
    // git add -A no longer picks the store up.
    git(ws.path, "add", "-A");
    const staged = git(ws.path, "diff", "--cached", "--name-only");
    assert(!staged.includes(".ctxsnap"), staged);
    // Again: the line is not added twice.
    const second = await json(ws, ["init"]);
    assertEquals(second.git_exclude, null);
    const lines = (await Deno.readTextFile(exclude)).split("\n").filter((l) => l === "/.ctxsnap/");
    assertEquals(lines.length, 1);

    const sub = join(ws.path, "src");
    const nested = await ws.run(["init"], { cwd: sub });
    expectCode(nested, 5, "init in a subdirectory");
    assert(nested.stderr.includes("inside the workspace of the store"), nested.stderr);
    assert(!(await exists(join(sub, ".ctxsnap"))), "a refused init created a store");
    const allowed = await json(ws, ["init", "--nested"], { cwd: sub });
    assertEquals(allowed.store, join(sub, ".ctxsnap"));
    assert((await Deno.readTextFile(exclude)).split("\n").includes("/src/.ctxsnap/"));
  } finally {
    await ws.cleanup();
  }
});

Deno.test("init leaves a symlinked info/exclude alone (never writes through it)", async () => {
  const ws = await tempWorkspace();
  try {
    git(ws.path, "init", "-q");
    const victim = join(ws.root, "victim.txt");
    await Deno.writeTextFile(victim, "untouched\n");
    await Deno.remove(join(ws.path, ".git", "info", "exclude")).catch(() => {});
    await Deno.symlink(victim, join(ws.path, ".git", "info", "exclude"));
    assertEquals((await json(ws, ["init"])).git_exclude, null);
    assertEquals(await Deno.readTextFile(victim), "untouched\n");
  } finally {
    await ws.cleanup();
  }
});

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Every key of a JSON document: snake_case; every *_at value: ISO 8601 UTC or null. */
function checkStyle(value: unknown, where: string, problems: string[]): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkStyle(v, `${where}[${i}]`, problems));
    return;
  }
  if (value === null || typeof value !== "object") return;
  for (const [key, v] of Object.entries(value)) {
    // Free-form content recorded by users is not ctxsnap's JSON.
    if (["extensions", "metadata", "envelope", "snapshot", "state"].includes(key)) continue;
    if (!/^[a-z][a-z0-9_]*$/.test(key) && !/^[a-z-]+$/.test(key)) {
      problems.push(`${where}.${key}: not snake_case`);
    }
    if (key.endsWith("_at") && v !== null && !(typeof v === "string" && ISO.test(v))) {
      problems.push(`${where}.${key}: ${JSON.stringify(v)} is not an ISO 8601 UTC time`);
    }
    checkStyle(v, `${where}.${key}`, problems);
  }
}

Deno.test("every command's --json uses snake_case keys and ISO 8601 UTC times; create, list and show share the snapshot summary with the library", async () => {
  await withStore(async (ws) => {
    const docs: [string, unknown][] = [];
    const run = async (...args: string[]) => {
      const doc = await json(ws, args);
      docs.push([args.join(" "), doc]);
      return doc;
    };
    const made = await run("create", "-m", "one");
    await Deno.writeTextFile(join(ws.path, "a.txt"), "changed\n");
    const second = await run("create", "-m", "two");
    await run("list");
    await run("list", "--all");
    const shown = await run("show", made.id);
    await run("verify");
    await run("verify", "--all");
    await run("diff", made.id);
    await run("restore", made.id, "--dry-run");
    await run("restore", made.id);
    await run("undo", "--dry-run");
    await run("undo");
    await run("redo", "--dry-run");
    await run("fork", "HEAD", "--name", "exp");
    await run("switch", "exp", "--dry-run");
    await run("switch", "exp");
    await run("branch");
    await run("log", "--all");
    await run("session", "decide", "d");
    await run("session", "list");
    await run("forget", "--keep-last", "1", "--dry-run");
    await run("gc", "--dry-run");
    await run("recover");
    await run("key", "list");
    const out = join(ws.root, "out");
    const published = await run("publish", second.id, "--with-workspace", "--out", `${out}/`);
    await run("verify", published.path);
    const problems: string[] = [];
    for (const [what, doc] of docs) checkStyle(doc, what, problems);
    assertEquals(problems, []);

    // One summary shape.
    const listed = (await json(ws, ["list", "--all"])).snapshots.find(
      (s: { id: string }) => s.id === made.id,
    );
    const summaryKeys = Object.keys(listed).sort();
    for (const doc of [made, shown]) {
      for (const key of summaryKeys) assert(key in doc, `${key} missing`);
      assertEquals(doc.workspace, listed.workspace);
      assertEquals(doc.created_at, listed.created_at);
    }
    const store = Store.open(join(ws.path, ".ctxsnap"), { readOnly: true });
    try {
      const lib = listSnapshots(store, { all: true }).find((s) => s.id === made.id);
      // The same summary, in the library's casing, mapped by lib/cli/json.ts.
      assertEquals(JSON.parse(JSON.stringify(summaryJson(lib!))), listed);
      assertEquals([lib!.createdAt, lib!.keyId], [listed.created_at, listed.key_id]);
    } finally {
      store.close();
    }
  });
});

Deno.test("the library's createSnapshot result and listSnapshots rows describe the same snapshot", async () => {
  const root = await Deno.makeTempDir();
  try {
    const me = await loadOrCreateIdentity(join(root, "config"));
    await Deno.writeTextFile(join(root, "a.txt"), "a\n");
    const store = Store.init(join(root, ".ctxsnap"), root);
    try {
      const made = await createSnapshot(store, me, { reason: "r" });
      const [row] = listSnapshots(store);
      assertEquals(row?.id, made.id);
      assertEquals(row?.workspace, made.envelope.body.workspace);
      assertEquals(row?.reason, "r");
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
