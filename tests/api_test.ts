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
