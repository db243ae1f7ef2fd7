/**
 * Tests of the application layer's workspace rules (`lib/app/workspace.ts`)
 * as the library meets them through `mod.ts`: `initStore` refuses what
 * `ctxsnap init` refuses, and keeps the store out of git like it.
 *
 * @module
 */
import { join } from "node:path";
import { ConflictError, exitCodeOf, initStore, openStore, StoreTrustError } from "../../mod.ts";
import { isRegistered } from "../../api/snapshot.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { exists } from "../_util.ts";

function git(cwd: string, ...args: string[]): void {
  const out = new Deno.Command("git", { args, cwd, stdout: "null", stderr: "piped" }).outputSync();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
}

Deno.test("initStore() refuses a store nested in another store's workspace, as ctxsnap init does, unless nested: true", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-app-" }));
  try {
    initStore(join(root, ".ctxsnap"), root).close();
    const sub = join(root, "src");
    await Deno.mkdir(sub);
    const error = assertThrows(
      () => initStore(join(sub, ".ctxsnap"), sub),
      ConflictError,
      "inside the workspace of the store",
    );
    assertEquals(exitCodeOf(error), 5);
    assert(!(await exists(join(sub, ".ctxsnap"))), "a refused initStore created a store");
    const nested = initStore(join(sub, ".ctxsnap"), sub, { nested: true });
    assertEquals(nested.workspaceRoot, sub);
    nested.close();
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("initStore() registers a new store with a registry, refuses to reopen an unregistered one, and adds the store to git's info/exclude", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-app-" }));
  try {
    const ws = join(root, "ws");
    const config = join(root, "config");
    await Deno.mkdir(ws);
    await Deno.mkdir(config, { mode: 0o700 });
    git(ws, "init", "-q");
    const dir = join(ws, ".ctxsnap");
    initStore(dir, ws, { registry: config }).close();
    assert(isRegistered(config, dir), "the new store is registered");
    const exclude = await Deno.readTextFile(join(ws, ".git", "info", "exclude"));
    assert(exclude.split("\n").includes("/.ctxsnap/"), exclude);
    openStore(dir, { registry: config }).close();

    const other = join(root, "other-config");
    await Deno.mkdir(other, { mode: 0o700 });
    assertThrows(() => initStore(dir, ws, { registry: other }), StoreTrustError);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
