/**
 * `ctxsnap hook install AGENT [--dry-run]`: merges each agent's project
 * configuration without clobbering anything, says what it changed, is
 * idempotent, and refuses (writing nothing) a file it cannot merge.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../_assert.ts";
import { expectCode, withStore } from "../../_cli.ts";
import { exists } from "../../_util.ts";
import {
  claudeCodeHookEntries,
  mergeHookGroups,
} from "../../../lib/integrations/agents/install.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("hook install claude-code merges into an existing settings.json, keeping every key and hook, and prints what it added", async () => {
  await withStore(async (ws) => {
    const file = join(ws.path, ".claude", "settings.json");
    await Deno.mkdir(join(ws.path, ".claude"));
    const mine = { type: "command", command: "./lint.sh" };
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        model: "opus",
        permissions: { allow: ["Bash(npm test)"] },
        hooks: { PostToolUse: [{ matcher: "Edit", hooks: [mine] }] },
      }),
    );
    const result = await ws.run(["hook", "install", "claude-code"]);
    expectCode(result, 0, "install");
    assert(result.stdout.includes("update (12 hooks added, 0 already there)"), result.stdout);
    assert(result.stdout.includes("  + PostToolUse  ctxsnap hook claude-code"), result.stdout);
    const after = JSON.parse(await Deno.readTextFile(file));
    assertEquals(after.model, "opus");
    assertEquals(after.permissions, { allow: ["Bash(npm test)"] });
    assertEquals(after.hooks.PostToolUse[0], { matcher: "Edit", hooks: [mine] });
    assertEquals(after.hooks.PostToolUse[1], {
      matcher: "*",
      hooks: [{ type: "command", command: "ctxsnap hook claude-code", timeout: 10 }],
    });
    assertEquals(Object.keys(after.hooks).length, 12);
    // Again: nothing to add, nothing written.
    const again = await ws.run(["hook", "install", "claude-code", "--json"]);
    expectCode(again, 0, "again");
    assertEquals([again.json().action, again.json().added.length], ["unchanged", 0]);
    assertEquals(JSON.parse(await Deno.readTextFile(file)), after);
  });
});

Deno.test("hook install --dry-run prints the change and writes nothing", async () => {
  await withStore(async (ws) => {
    const result = await ws.run(["hook", "install", "gemini-cli", "--dry-run"]);
    expectCode(result, 0, "dry run");
    assert(result.stdout.includes("would create (7 hooks would added"), result.stdout);
    assertEquals(await exists(join(ws.path, ".gemini")), false);
  });
});

Deno.test("hook install writes each agent's documented shape: Gemini (ms timeouts), Codex (with the trust note), Cursor (version 1), OpenCode (plugin)", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["hook", "install", "gemini-cli"]), 0, "gemini");
    const gemini = JSON.parse(await Deno.readTextFile(join(ws.path, ".gemini/settings.json")));
    assertEquals(gemini.hooks.BeforeTool, [{
      matcher: "*",
      hooks: [{
        type: "command",
        name: "ctxsnap",
        command: "ctxsnap hook gemini-cli",
        timeout: 10000,
      }],
    }]);
    const codex = await ws.run(["hook", "install", "codex", "--json"]);
    expectCode(codex, 0, "codex");
    assert(codex.json().notes[0].includes("/hooks"), codex.stdout);
    const codexFile = JSON.parse(await Deno.readTextFile(join(ws.path, ".codex/hooks.json")));
    assertEquals(Object.keys(codexFile.hooks).length, 7);
    await Deno.mkdir(join(ws.path, ".cursor"));
    await Deno.writeTextFile(
      join(ws.path, ".cursor/hooks.json"),
      JSON.stringify({ version: 1, hooks: { stop: [{ command: "./notify.sh" }] } }),
    );
    expectCode(await ws.run(["hook", "install", "cursor"]), 0, "cursor");
    const cursor = JSON.parse(await Deno.readTextFile(join(ws.path, ".cursor/hooks.json")));
    assertEquals(cursor.hooks.stop, [{ command: "./notify.sh" }, {
      command: "ctxsnap hook cursor",
    }]);
    assertEquals(cursor.version, 1);
    expectCode(await ws.run(["hook", "install", "opencode"]), 0, "opencode");
    const plugin = await Deno.readTextFile(join(ws.path, ".opencode/plugins/ctxsnap.ts"));
    assert(plugin.includes('Bun.spawn(["ctxsnap", "hook", "opencode"]'), plugin);
    const again = await ws.run(["hook", "install", "opencode", "--json"]);
    assertEquals(again.json().action, "unchanged");
  });
});

Deno.test("hook install refuses a settings file that is not JSON, writing nothing and exiting non-zero", async () => {
  await withStore(async (ws) => {
    const file = join(ws.path, ".claude", "settings.json");
    await Deno.mkdir(join(ws.path, ".claude"));
    await Deno.writeTextFile(file, "{ // a comment\n}");
    const result = await ws.run(["hook", "install", "claude-code"]);
    assert(result.code !== 0, result.stdout);
    assert(result.stderr.includes("is not valid JSON"), result.stderr);
    assertEquals(await Deno.readTextFile(file), "{ // a comment\n}");
  });
});

Deno.test("hook install refuses a hooks value that is not an object", async () => {
  await withStore(async (ws) => {
    await Deno.mkdir(join(ws.path, ".codex"));
    const file = join(ws.path, ".codex", "hooks.json");
    await Deno.writeTextFile(file, '{"hooks": ["x"]}');
    const result = await ws.run(["hook", "install", "codex"]);
    assert(result.code !== 0 && result.stderr.includes("`hooks` is not an object"), result.stderr);
    assertEquals(await Deno.readTextFile(file), '{"hooks": ["x"]}');
  });
});

Deno.test("hook install refuses an event whose value is not a list", () => {
  const config: Record<string, unknown> = { hooks: { Stop: { command: "x" } } };
  let error: Error | null = null;
  try {
    mergeHookGroups(config, claudeCodeHookEntries(), "settings.json");
  } catch (e) {
    error = e as Error;
  }
  assert(error?.message.includes("`hooks.Stop` is not a list"), String(error));
  assertEquals(config, { hooks: { Stop: { command: "x" } } });
});

Deno.test("hook install never follows a symbolic link in place of the settings file", async () => {
  await withStore(async (ws) => {
    const target = join(ws.root, "elsewhere.json");
    await Deno.writeTextFile(target, "{}");
    await Deno.mkdir(join(ws.path, ".claude"));
    await Deno.symlink(target, join(ws.path, ".claude", "settings.json"));
    const result = await ws.run(["hook", "install", "claude-code"]);
    assert(result.code !== 0 && result.stderr.includes("not a regular file"), result.stderr);
    assertEquals(await Deno.readTextFile(target), "{}");
  });
});

Deno.test("hook install opencode refuses to replace a plugin file that is not ctxsnap's", async () => {
  await withStore(async (ws) => {
    const file = join(ws.path, ".opencode", "plugins", "ctxsnap.ts");
    await Deno.mkdir(join(ws.path, ".opencode", "plugins"), { recursive: true });
    await Deno.writeTextFile(file, "// mine\n");
    const result = await ws.run(["hook", "install", "opencode"]);
    assert(result.code !== 0 && result.stderr.includes("is not ctxsnap's plugin"), result.stderr);
    assertEquals(await Deno.readTextFile(file), "// mine\n");
  });
});

Deno.test("hook install of an unknown agent is a usage error", async () => {
  await withStore(async (ws) => {
    const result = await ws.run(["hook", "install", "aider"]);
    expectCode(result, 2, "unknown");
    assert(result.stderr.includes("Unknown agent"), result.stderr);
  });
});
