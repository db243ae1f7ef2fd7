/**
 * Tests of the retention policy (docs/CLI.md "Retention", docs/FORMAT.md
 * 8.5): the policy file's strict parsing, what `planRetention` keeps and
 * drops, `forget --policy [--dry-run]`, and the automatic pass after
 * checkpoints keeping an agent run bounded, on real stores.
 *
 * @module
 */
import { join } from "node:path";
import { ConfigError } from "../../lib/errors.ts";
import { type Identity, loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { undo } from "../../lib/workspace/move/undo.ts";
import { forkBranch } from "../../lib/history/branch.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import {
  applyRetention,
  planRetention,
  retainAfterCheckpoint,
  type RetentionPolicy,
} from "../../lib/history/retention.ts";
import { branchChain, currentSelection } from "../../lib/history/timeline.ts";
import {
  DEFAULT_RETENTION,
  parseRetention,
  readRetention,
} from "../../lib/repository/retention_file.ts";
import { Store } from "../../lib/repository/store.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { expectCode, type TempWorkspace, withStore } from "../_cli.ts";

async function withLib(
  fn: (ctx: { ws: string; store: Store; me: Identity }) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-retention-" });
  const ws = join(root, "ws");
  await Deno.mkdir(ws);
  const me = await loadOrCreateIdentity(join(root, "config"));
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  try {
    await fn({ ws, store, me });
  } finally {
    store.close();
    await Deno.remove(root, { recursive: true });
  }
}

/** An agent checkpoint (it has an idempotency source), optionally at a given time. */
async function checkpoint(store: Store, me: Identity, n: number, branch?: string): Promise<string> {
  const made = await createSnapshot(store, me, {
    reason: `turn ${n}`,
    workspace: false,
    allowUnchanged: true,
    source: { kind: "agent", id: `turn-${n}` },
    ...(branch !== undefined ? { branch } : {}),
  });
  return made.id;
}

function policy(keepLast: number, keepWithinMs = 0): RetentionPolicy {
  return { keepLast, keepWithinMs, auto: true };
}

// ---------------------------------------------------------------------------
// the policy file

Deno.test("parseRetention reads keep-last, keep-within and auto, and defaults the rest", () => {
  assertEquals(parseRetention(""), { ...DEFAULT_RETENTION });
  assertEquals(DEFAULT_RETENTION, { keepLast: 100, keepWithinMs: 0, auto: true });
  assertEquals(
    parseRetention("# mine\r\nkeep-last 20\n\nkeep-within 3d\nauto off\n"),
    { keepLast: 20, keepWithinMs: 3 * 86_400_000, auto: false },
  );
  assertEquals(parseRetention("keep-within 0").keepWithinMs, 0);
  assertEquals(parseRetention("keep-within 90s").keepWithinMs, 90_000);
  assertEquals(parseRetention("keep-last 0").keepLast, 0);
});

Deno.test("parseRetention refuses an unknown setting", () => {
  assertThrows(() => parseRetention("keep-daily 7"), ConfigError, "unknown setting");
});

Deno.test("parseRetention refuses a setting given twice", () => {
  assertThrows(() => parseRetention("keep-last 5\nkeep-last 6"), ConfigError, "twice");
});

Deno.test("parseRetention refuses a keep-last that is not a whole number up to 1000000", () => {
  for (const value of ["-1", "1.5", "01", "2000000", "ten", "1e3"]) {
    assertThrows(() => parseRetention(`keep-last ${value}`), ConfigError, "keep-last");
  }
});

Deno.test("parseRetention refuses a keep-within without a unit or with an unknown one", () => {
  for (const value of ["30", "2w", "1.5h", "h", "-1d"]) {
    assertThrows(() => parseRetention(`keep-within ${value}`), ConfigError, "keep-within");
  }
});

Deno.test("parseRetention refuses an auto other than on or off", () => {
  assertThrows(() => parseRetention("auto yes"), ConfigError, "auto must be");
});

Deno.test("parseRetention refuses a line that is not KEY VALUE", () => {
  assertThrows(() => parseRetention("keep-last"), ConfigError, "not `KEY VALUE`");
  assertThrows(() => parseRetention("keep-last 5 6"), ConfigError, "not `KEY VALUE`");
});

Deno.test("readRetention refuses a policy file that is a symbolic link", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "elsewhere"), "keep-last 1\n");
    await Deno.symlink(join(dir, "elsewhere"), join(dir, "retention"));
    assertThrows(() => readRetention(dir), ConfigError, "not a regular file");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readRetention refuses a policy file writable by group or others", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "retention"), "keep-last 1\n");
    // Each of group-writable and other-writable alone is refused.
    for (const mode of [0o620, 0o602, 0o666]) {
      await Deno.chmod(join(dir, "retention"), mode);
      assertThrows(() => readRetention(dir), ConfigError, "writable by group or others");
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readRetention refuses a policy file over 4 KiB", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "retention"), "#".repeat(5000) + "\n");
    assertThrows(() => readRetention(dir), ConfigError, "larger than");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------
// what the policy keeps

Deno.test("planRetention drops the oldest agent checkpoints beyond keep-last, never the head or a named snapshot", async () => {
  await withLib(async ({ store, me }) => {
    const named = (await createSnapshot(store, me, {
      reason: "before the refactor",
      workspace: false,
      allowUnchanged: true,
    })).id;
    const turns: string[] = [];
    for (let i = 0; i < 8; i++) turns.push(await checkpoint(store, me, i));
    const plan = planRetention(store, policy(3));
    assertEquals(plan.drop, turns.slice(0, 5), "the five oldest checkpoints go, oldest first");
    assert(!plan.drop.includes(named), "a snapshot made without a source is named: kept");
    assertEquals(plan.kept.named, 1);
    // keep-last 0 still keeps the head.
    const none = planRetention(store, policy(0));
    assertEquals(none.drop, turns.slice(0, 7));
  });
});

Deno.test("planRetention keeps every checkpoint within keep-within", async () => {
  await withLib(async ({ store, me }) => {
    const turns: string[] = [];
    for (let i = 0; i < 6; i++) turns.push(await checkpoint(store, me, i));
    assertEquals(planRetention(store, policy(1, 3_600_000)).drop, [], "all are younger than 1h");
    const later = Date.now() + 2 * 3_600_000;
    assertEquals(planRetention(store, policy(1, 3_600_000), later).drop, turns.slice(0, 5));
  });
});

Deno.test("planRetention keeps a fork's base and the history another branch still counts", async () => {
  await withLib(async ({ store, me }) => {
    const main: string[] = [];
    for (let i = 0; i < 5; i++) main.push(await checkpoint(store, me, i));
    forkBranch(store, main[1]!, "exp");
    const exp = [await checkpoint(store, me, 100, "exp")];
    const plan = planRetention(store, policy(2));
    // main keeps its newest two (main[4], main[3]); exp's chain (its checkpoint, then main[1],
    // main[0]) keeps its newest two, and main[1] is also exp's base.
    assertEquals(plan.drop, [main[0]!, main[2]!]);
    assert(!plan.drop.includes(exp[0]!));
  });
});

Deno.test("planRetention keeps the head recorded for a remote ref (pushed)", async () => {
  await withLib(async ({ store, me }) => {
    const turns: string[] = [];
    for (let i = 0; i < 5; i++) turns.push(await checkpoint(store, me, i));
    store.transaction("test", () =>
      store.setMeta(
        `remote-ref:origin:${"a".repeat(16)}:main@main`,
        JSON.stringify({ head: turns[0], record: "b".repeat(64), seq: 1 }),
      ));
    const plan = planRetention(store, policy(2));
    assertEquals(plan.drop, turns.slice(1, 3));
    assertEquals(plan.kept.pushed, 1);
  });
});

Deno.test("after the policy runs, undo of the newest checkpoint still works and verify passes", async () => {
  await withLib(async ({ store, me }) => {
    const turns: string[] = [];
    for (let i = 0; i < 12; i++) turns.push(await checkpoint(store, me, i));
    const result = applyRetention(store, policy(4));
    assertEquals(result.forget?.forgotten.length, 8);
    const sel = currentSelection(store);
    assertEquals(branchChain(store, sel.session, sel.branch), turns.slice(8).reverse());
    await undo(store, me);
    assertEquals(branchChain(store, sel.session, sel.branch)[0], turns[10]);
  });
});

Deno.test("the automatic pass waits for its slack, drops at most a batch, and runs gc after enough drops", async () => {
  await withLib(async ({ store, me }) => {
    for (let i = 0; i < 9; i++) await checkpoint(store, me, i);
    const waiting = retainAfterCheckpoint(store, policy(1));
    assert(waiting !== null && !("skipped" in waiting));
    assertEquals(waiting.forget, null, "8 to drop is under the slack of 10");
    for (let i = 9; i < 80; i++) await checkpoint(store, me, i);
    const first = retainAfterCheckpoint(store, policy(1));
    assert(first !== null && !("skipped" in first));
    assertEquals(first.forget?.forgotten.length, 50, "one batch");
    assertEquals(first.remaining, 29);
    assertEquals(first.gc, null, "50 dropped since the last gc: not yet");
    const second = retainAfterCheckpoint(store, policy(1));
    assert(second !== null && !("skipped" in second));
    assertEquals(second.forget?.forgotten.length, 29);
    assertEquals(second.gc, null, "79 dropped since the last gc: not yet");
    for (let i = 80; i < 110; i++) await checkpoint(store, me, i);
    const third = retainAfterCheckpoint(store, policy(1));
    assert(third !== null && !("skipped" in third));
    assertEquals(third.forget?.forgotten.length, 30);
    assert(third.gc !== null && third.gc.operation !== null, "109 dropped: gc ran");
    const fourth = applyRetention(store, policy(1), { gcEvery: 100 });
    assertEquals(fourth.forget, null);
    assertEquals(fourth.gc, null, "the count starts again after a gc");
  });
});

// ---------------------------------------------------------------------------
// the command line

// deno-lint-ignore no-explicit-any
async function runJson(ws: TempWorkspace, args: string[], code = 0): Promise<any> {
  const result = await ws.run([...args, "--json"]);
  expectCode(result, code, args.join(" "));
  return result.json();
}

async function cliCheckpoint(ws: TempWorkspace, n: number): Promise<string> {
  return (await runJson(ws, [
    "create",
    "--no-workspace",
    "--allow-unchanged",
    "--source",
    `agent:turn-${n}`,
    "-m",
    `turn ${n}`,
  ])).id;
}

async function chainIds(ws: TempWorkspace): Promise<string[]> {
  return ((await runJson(ws, ["list"])).snapshots as { id: string }[]).map((s) => s.id);
}

async function allIds(ws: TempWorkspace): Promise<string[]> {
  return ((await runJson(ws, ["list", "--all"])).snapshots as { id: string }[]).map((s) => s.id);
}

Deno.test("forget --policy --dry-run shows what the policy would drop and forgets nothing; forget --policy drops it", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, ".ctxsnap", "retention"), "keep-last 2\nauto off\n");
    const named = (await runJson(ws, ["create", "-m", "named by me"])).id;
    const turns: string[] = [];
    for (let i = 0; i < 6; i++) turns.push(await cliCheckpoint(ws, i));
    assertEquals((await chainIds(ws)).length, 7, "auto off: nothing dropped");
    const dry = await runJson(ws, ["forget", "--policy", "--dry-run"]);
    assertEquals(dry.dry_run, true);
    assertEquals(dry.forget, turns.slice(0, 4));
    assertEquals(dry.kept.named, 1);
    assertEquals((await chainIds(ws)).length, 7, "a dry run forgets nothing");
    const text = await ws.run(["forget", "--policy", "--dry-run"]);
    assert(text.stdout.includes("4 snapshot(s); keeping"), text.stdout);
    const done = await runJson(ws, ["forget", "--policy"]);
    assertEquals(done.forgotten, turns.slice(0, 4));
    assertEquals(await chainIds(ws), [turns[5], turns[4]]);
    assertEquals((await allIds(ws)).sort(), [turns[5]!, turns[4]!, named].sort());
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all after forget --policy");
    const again = await runJson(ws, ["forget", "--policy"]);
    assertEquals(again.forgotten, []);
  });
});

Deno.test("forget --policy takes no other selector", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["forget", "--policy", "--keep-last", "2"]), 2, "two selectors");
    expectCode(await ws.run(["forget", "--policy", "--session", "main"]), 2, "--session");
  });
});

Deno.test("checkpoints apply the policy automatically: an agent run stays bounded and the newest checkpoint undoes", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, ".ctxsnap", "retention"), "keep-last 3\n");
    const named = (await runJson(ws, ["create", "-m", "named by me"])).id;
    const turns: string[] = [];
    for (let i = 0; i < 30; i++) {
      turns.push(await cliCheckpoint(ws, i));
      const chain = await chainIds(ws);
      assert(chain.length <= 1 + 3 + 10, `turn ${i}: ${chain.length} snapshots on the branch`);
      const all = await allIds(ws);
      assert(all.length <= 1 + 3 + 10, `turn ${i}: ${all.length} snapshots in the store`);
      assert(all.includes(named), "the named snapshot stays");
      assertEquals(chain[0], turns[i], "the head is the newest checkpoint");
    }
    const log = await runJson(ws, ["log"]);
    assert(
      (log.operations as { kind: string }[]).some((op) => op.kind === "forget"),
      "the automatic pass is recorded as a forget",
    );
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all after the run");
    expectCode(await ws.run(["undo"]), 0, "undo the newest checkpoint");
    assertEquals((await chainIds(ws))[0], turns[28]);
  });
});

Deno.test("a policy file that cannot be used stops a checkpoint with exit 7 and records nothing", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, ".ctxsnap", "retention"), "keep-last many\n");
    const result = await ws.run(["create", "-m", "x"]);
    expectCode(result, 7, "create with a bad policy file");
    assert(result.stderr.includes("keep-last"), result.stderr);
    assertEquals((await runJson(ws, ["list"])).snapshots, []);
    expectCode(await ws.run(["forget", "--policy", "--dry-run"]), 7, "forget --policy");
  });
});

Deno.test("retention keeps the state before each of an agent session's newest keep-last prompts, so prompt:N still restores them", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, ".ctxsnap", "retention"), "keep-last 2\n");
    const event = (name: string, extra: Record<string, unknown> = {}) =>
      ws.run(["hook", "claude-code"], {
        stdin: JSON.stringify({
          session_id: "sess-ret",
          cwd: ws.path,
          hook_event_name: name,
          ...extra,
        }),
      });
    for (let prompt = 1; prompt <= 6; prompt++) {
      expectCode(await event("UserPromptSubmit"), 0, `prompt ${prompt}`);
      // Two edits a prompt: each a checkpoint of its own.
      for (let edit = 0; edit < 2; edit++) {
        await Deno.writeTextFile(join(ws.path, "work.txt"), `prompt ${prompt} edit ${edit}\n`);
        expectCode(
          await event("PostToolUse", { tool_name: "Write", tool_use_id: `t-${prompt}-${edit}` }),
          0,
          `edit ${prompt}.${edit}`,
        );
      }
    }
    const dry = await runJson(ws, ["forget", "--policy", "--dry-run"]);
    assert(((dry.kept as Record<string, number>).prompt ?? 0) >= 1, JSON.stringify(dry.kept));
    expectCode(await ws.run(["forget", "--policy"]), 0, "forget --policy");
    // The two newest prompts' states survive and restore to what they held.
    for (const [prompt, text] of [[5, "prompt 4 edit 1\n"], [6, "prompt 5 edit 1\n"]] as const) {
      expectCode(await ws.run(["restore", `prompt:${prompt}`, "--force"]), 0, `prompt:${prompt}`);
      assertEquals(await Deno.readTextFile(join(ws.path, "work.txt")), text);
    }
    // An older prompt's state went with the rest of the thinned history, and says so.
    expectCode(await ws.run(["show", "prompt:2"]), 4, "prompt:2 was forgotten");
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all");
  });
});

Deno.test("a hook event under a policy file that cannot be used tells the user (systemMessage), exits 0 and records nothing", async () => {
  await withStore(async (ws) => {
    await Deno.writeTextFile(join(ws.path, ".ctxsnap", "retention"), "keep-last many\n");
    const before = await allIds(ws);
    const run = await ws.run(["hook", "claude-code"], {
      stdin: JSON.stringify({
        session_id: "sess-policy",
        cwd: ws.path,
        hook_event_name: "UserPromptSubmit",
      }),
    });
    expectCode(run, 0, "a hook never fails the agent");
    const message = JSON.parse(run.stdout) as { systemMessage?: string };
    assert(message.systemMessage?.includes("no checkpoint was recorded"), run.stdout);
    assert(message.systemMessage?.includes("keep-last"), run.stdout);
    assertEquals(run.stderr.trim().split("\n").filter((l) => l.includes("error")).length, 1);
    await Deno.remove(join(ws.path, ".ctxsnap", "retention"));
    assertEquals(await allIds(ws), before, "nothing recorded");
  });
});
