/**
 * Tests of the public API as another program sees it: `mod.ts` imported by
 * path from a directory with no configuration of its own (no deno.json, no
 * import map, no lock file).
 *
 * @module
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { assertEquals } from "./_assert.ts";

const MOD = pathToFileURL(join(import.meta.dirname!, "..", "mod.ts")).href;

Deno.test("mod.ts is importable by URL from a program in another directory with no configuration", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-api-" }));
  try {
    const program = `
      import { createSnapshot, initStore, Keyring, loadOrCreateIdentity, verifySnapshot } from ${
      JSON.stringify(MOD)
    };
      const workspace = ${JSON.stringify(join(dir, "ws"))};
      await Deno.mkdir(workspace);
      await Deno.writeTextFile(workspace + "/notes.md", "# findings\\n");
      const me = await loadOrCreateIdentity(${JSON.stringify(join(dir, "config"))});
      const store = initStore(workspace + "/.ctxsnap", workspace);
      const { id } = await createSnapshot(store, me, { reason: "from elsewhere" });
      const report = await verifySnapshot(store, id, new Keyring([], me));
      store.close();
      console.log(JSON.stringify({ id, valid: report.valid, trusted: report.trusted }));
    `;
    await Deno.writeTextFile(join(dir, "program.ts"), program);
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-lock", "--quiet", "-A", "program.ts"],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const stderr = new TextDecoder().decode(output.stderr);
    assertEquals(output.code, 0, stderr);
    const result = JSON.parse(new TextDecoder().decode(output.stdout));
    assertEquals({ valid: result.valid, trusted: result.trusted }, { valid: true, trusted: true });
    assertEquals(/^[0-9a-f]{64}$/.test(result.id), true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The classes among a module's exports that are `base` or extend it, by export name. */
function errorClasses(module: Record<string, unknown>, base: unknown): Map<string, unknown> {
  const found = new Map<string, unknown>();
  for (const [name, value] of Object.entries(module)) {
    if (typeof value !== "function") continue;
    if (value === base || (value as { prototype?: unknown }).prototype instanceof (base as never)) {
      found.set(name, value);
    }
  }
  return found;
}

Deno.test("mod.ts exports every error class of lib/errors.ts, and the exit-status table", async () => {
  const errors = await import("../lib/errors.ts");
  const mod: Record<string, unknown> = await import("../mod.ts");
  const inErrors = errorClasses(errors, errors.CtxsnapError);
  // The module holds the base class and at least one class per exit status it maps.
  assertEquals(inErrors.size >= 10, true, `only ${[...inErrors.keys()]}`);
  const missing = [...inErrors].filter(([name, cls]) => mod[name] !== cls).map(([name]) => name);
  assertEquals(missing, []);
  assertEquals(mod.EXIT_CODES, errors.EXIT_CODES);
  assertEquals(mod.EXIT_MEANINGS, errors.EXIT_MEANINGS);
  assertEquals(mod.exitCodeOf, errors.exitCodeOf);
});

Deno.test("mod.ts exports every CtxsnapError subclass that a module below lib/cli exports", async () => {
  const { CtxsnapError } = await import("../mod.ts");
  const mod: Record<string, unknown> = await import("../mod.ts");
  const exported = new Set(errorClasses(mod, CtxsnapError).values());
  const lib = join(import.meta.dirname!, "..", "lib");
  const missing: string[] = [];
  let seen = 0;
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) {
        if (entry.name !== "cli") await walk(path);
      } else if (entry.name.endsWith(".ts") && !entry.name.startsWith("_")) {
        const module = await import(pathToFileURL(path).href);
        for (const [name, cls] of errorClasses(module, CtxsnapError)) {
          seen += 1;
          if (!exported.has(cls)) missing.push(`${name} (${path.slice(lib.length + 1)})`);
        }
      }
    }
  };
  await walk(lib);
  assertEquals(seen > 10, true, `only ${seen} error classes found under lib/`);
  assertEquals(missing, []);
});

Deno.test("a caller catches a refused restore through mod.ts and reads its plan", async () => {
  const {
    ConflictError,
    createSnapshot,
    CtxsnapError,
    exitCodeOf,
    initStore,
    listSnapshots,
    loadOrCreateIdentity,
    MoveConflictError,
    resolveRevision,
    RestoreConflictError,
    restoreSnapshot,
  } = await import("../mod.ts");
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-api-" }));
  try {
    const workspace = join(dir, "ws");
    await Deno.mkdir(workspace);
    const me = await loadOrCreateIdentity(join(dir, "config"));
    const store = initStore(join(workspace, ".ctxsnap"), workspace);
    try {
      await Deno.writeTextFile(join(workspace, "a.txt"), "v1\n");
      await Deno.writeTextFile(join(workspace, "b.txt"), "same\n");
      await createSnapshot(store, me, { reason: "v1" });
      await Deno.writeTextFile(join(workspace, "a.txt"), "v2\n");
      await Deno.writeTextFile(join(workspace, "b.txt"), "b2\n");
      await createSnapshot(store, me, { reason: "v2" });
      // Unsaved work at a path the restore would write; b.txt is as ctxsnap left it.
      await Deno.writeTextFile(join(workspace, "a.txt"), "mine\n");
      const target = resolveRevision(store, "HEAD~1");
      const before = listSnapshots(store, {}).map((s) => s.id);

      const dry = await restoreSnapshot(store, me, target, { dryRun: true });
      const error = await restoreSnapshot(store, me, target).then(
        () => null,
        (e: unknown) => e,
      );
      if (!(error instanceof RestoreConflictError)) throw error ?? new Error("not refused");
      assertEquals(error instanceof MoveConflictError, true);
      assertEquals(error instanceof ConflictError, true);
      assertEquals(error instanceof CtxsnapError, true);
      assertEquals([error.name, error.code, exitCodeOf(error)], [
        "RestoreConflictError",
        "conflict",
        5,
      ]);
      assertEquals(error.conflicts, [{ path: "a.txt", reason: "changed_since_baseline" }]);
      assertEquals(error.plan.conflicts, error.conflicts);
      assertEquals(error.plan.writes.map((w) => w.path), ["b.txt"]);
      // The plan in the error is the plan a dry run shows.
      assertEquals(error.plan, dry.plan);
      // Nothing was written, nothing recorded.
      assertEquals(await Deno.readTextFile(join(workspace, "a.txt")), "mine\n");
      assertEquals(await Deno.readTextFile(join(workspace, "b.txt")), "b2\n");
      assertEquals(listSnapshots(store, {}).map((s) => s.id), before);
    } finally {
      store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
