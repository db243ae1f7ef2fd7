/**
 * `hook install claude-code --http` (`lib/integrations/watch/claude_code_http.ts`):
 * merging keeps every hook and setting ctxsnap did not write and replaces
 * only its own; the token goes only into `.claude/settings.local.json`
 * (mode 0600), never when git tracks that file, and the file is kept out of
 * git when nothing ignores it; a settings file that is not a JSON object is
 * left as it was.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { expectCode, withStore } from "../_cli.ts";
import {
  COMMAND_EVENTS,
  HTTP_EVENTS,
  isCtxsnapHandler,
  mergeHttpHooks,
} from "../../lib/integrations/watch/claude_code_http.ts";

const CONF = { port: 45123, token: `ctxsnap_hook_${"ab".repeat(32)}` };

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("mergeHttpHooks keeps the user's hooks, matchers and settings and replaces only ctxsnap's own", () => {
  const mine = {
    model: "opus",
    permissions: { allow: ["Bash(ls)"] },
    hooks: {
      PostToolUse: [
        { matcher: "Write", hooks: [{ type: "command", command: "prettier --write" }] },
        {
          matcher: "*",
          hooks: [
            { type: "command", command: "ctxsnap hook claude-code" },
            { type: "command", command: "notify-send edit" },
          ],
        },
      ],
      Notification: [{ hooks: [{ type: "command", command: "say hi" }] }],
    },
  };
  const { settings, changes } = mergeHttpHooks(mine, CONF);
  const hooks = settings.hooks as Record<string, Any[]>;
  assertEquals(settings.model, "opus");
  assertEquals(settings.permissions, mine.permissions);
  assertEquals(hooks.Notification, mine.hooks.Notification);
  // The user's handlers stay; ctxsnap's old command handler is gone, its HTTP one added once.
  const post = hooks.PostToolUse!;
  assertEquals(post[0], mine.hooks.PostToolUse[0]);
  assertEquals(post[1].hooks, [{ type: "command", command: "notify-send edit" }]);
  assertEquals(post.length, 3);
  assertEquals(post[2].hooks[0].type, "http");
  assertEquals(post[2].hooks[0].url, "http://127.0.0.1:45123/hook/claude-code");
  assertEquals(post[2].hooks[0].headers.Authorization, `Bearer ${CONF.token}`);
  // SessionStart cannot be HTTP.
  assertEquals(hooks.SessionStart![0].hooks[0].type, "command");
  assertEquals(
    changes.find((c) => c.event === "PostToolUse")?.action,
    "updated",
  );
  assertEquals(
    changes.length,
    Object.keys(COMMAND_EVENTS).length + Object.keys(HTTP_EVENTS).length,
  );
  // Merging again changes nothing; another port replaces the URL and nothing else.
  const again = mergeHttpHooks(settings, CONF);
  assertEquals(again.settings, settings);
  assert(again.changes.every((c) => c.action === "unchanged"));
  const moved = mergeHttpHooks(settings, { ...CONF, port: 45124 });
  assertEquals((moved.settings.hooks as Record<string, Any[]>).PostToolUse!.length, 3);
  assert(moved.changes.some((c) => c.action === "updated"));
});

Deno.test("mergeHttpHooks refuses settings that are not shaped as Claude Code reads them", () => {
  for (const bad of [[], "x", { hooks: [] }, { hooks: { Stop: {} } }]) {
    let threw = false;
    try {
      mergeHttpHooks(bad, CONF);
    } catch (error) {
      threw = error instanceof TypeError;
    }
    assert(threw, JSON.stringify(bad));
  }
});

Deno.test("isCtxsnapHandler recognises only what ctxsnap writes", () => {
  assert(isCtxsnapHandler({ type: "command", command: "ctxsnap hook claude-code" }));
  assert(
    isCtxsnapHandler({ type: "command", command: "/opt/bin/ctxsnap hook claude-code --strict" }),
  );
  assert(isCtxsnapHandler({ type: "http", url: "http://127.0.0.1:4000/hook/claude-code" }));
  assert(!isCtxsnapHandler({ type: "http", url: "http://evil.example:4000/hook/claude-code" }));
  assert(!isCtxsnapHandler({ type: "command", command: "echo ctxsnap hook claude-code" }));
  assert(!isCtxsnapHandler(null));
});

Deno.test("hook install claude-code --http writes the token only into an untracked settings.local.json (0600), excludes it from git, and refuses a tracked one", async () => {
  await withStore(async (ws) => {
    const git = (...args: string[]) =>
      new Deno.Command("git", { args, cwd: ws.path, stdout: "null", stderr: "null" }).outputSync();
    git("init", "-q");
    const install = await ws.run(["hook", "install", "claude-code", "--http", "--json"]);
    expectCode(install, 0, "install");
    const result = install.json();
    const file = join(ws.path, ".claude", "settings.local.json");
    assertEquals(result.settings, file);
    assertEquals((await Deno.lstat(file)).mode! & 0o777, 0o600);
    assert(result.git_excluded?.endsWith("info/exclude"), JSON.stringify(result));
    assertEquals(git("check-ignore", "-q", ".claude/settings.local.json").code, 0);
    // The committed settings file is never written.
    let shared = true;
    try {
      await Deno.lstat(join(ws.path, ".claude", "settings.json"));
    } catch {
      shared = false;
    }
    assertEquals(shared, false);
    const token = JSON.parse(await Deno.readTextFile(join(ws.path, ".ctxsnap", "run", "http.json")))
      .token;
    assert((await Deno.readTextFile(file)).includes(token));

    // Tracked by git: refused (exit 2), the file left as it was.
    git("add", "-f", ".claude/settings.local.json");
    const before = await Deno.readTextFile(file);
    const tracked = await ws.run(["hook", "install", "claude-code", "--http"]);
    expectCode(tracked, 2, "install into a tracked file");
    assert(tracked.stderr.includes("would be committed"), tracked.stderr);
    assertEquals(await Deno.readTextFile(file), before);
  });
});

Deno.test("hook install claude-code --http leaves a settings file that is not a JSON object as it was (exit 7); --dry-run writes nothing", async () => {
  await withStore(async (ws) => {
    const file = join(ws.path, ".claude", "settings.local.json");
    const dry = await ws.run(["hook", "install", "claude-code", "--http", "--dry-run", "--json"]);
    expectCode(dry, 0, "dry run");
    assertEquals(dry.json().dry_run, true);
    let made = true;
    try {
      await Deno.lstat(file);
    } catch {
      made = false;
    }
    assertEquals(made, false, "--dry-run wrote the settings");
    await Deno.mkdir(join(ws.path, ".claude"));
    await Deno.writeTextFile(file, "{ // comments are not JSON\n}");
    const bad = await ws.run(["hook", "install", "claude-code", "--http"]);
    expectCode(bad, 7, "install into a broken file");
    assertEquals(await Deno.readTextFile(file), "{ // comments are not JSON\n}");
  });
});
