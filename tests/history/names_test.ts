/**
 * Tests of names for snapshots (docs/CLI.md, "Naming snapshots"):
 * `HEAD`, `@`, `~N`, branch names, `imported/<key id>`, `@{TIME}` and
 * `--before`, the ambiguity rules, and the refusals. The command line runs
 * in-process; the parser and time rules are also checked directly.
 *
 * @module
 */
import { join } from "node:path";
import { parseRevision, parseTime } from "../../lib/history/names.ts";
import { UsageError } from "../../lib/errors.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { expectCode, type TempWorkspace, withStore } from "../_cli.ts";

// deno-lint-ignore no-explicit-any
async function json(ws: TempWorkspace, args: string[], code = 0): Promise<any> {
  const result = await ws.run([...args, "--json"]);
  expectCode(result, code, args.join(" "));
  return result.json();
}

async function idOf(ws: TempWorkspace, revision: string, ...more: string[]): Promise<string> {
  return (await json(ws, ["show", revision, ...more])).id;
}

/** Three snapshots on main, a fourth on branch exp forked from the second. */
async function history(ws: TempWorkspace): Promise<{ ids: string[]; exp: string }> {
  const ids: string[] = [];
  for (const text of ["one", "two", "three"]) {
    await Deno.writeTextFile(join(ws.path, "a.txt"), `${text}\n`);
    ids.push((await json(ws, ["create", "-m", text])).id);
  }
  expectCode(await ws.run(["fork", "HEAD~1", "--name", "exp"]), 0, "fork HEAD~1");
  expectCode(await ws.run(["switch", "exp"]), 0, "switch exp");
  await Deno.writeTextFile(join(ws.path, "a.txt"), "exp\n");
  const exp = (await json(ws, ["create", "-m", "on exp"])).id;
  expectCode(await ws.run(["switch", "main"]), 0, "switch main");
  return { ids, exp };
}

Deno.test("names: HEAD, @, HEAD~N, ~ alone, BRANCH, BRANCH~N and id prefixes resolve as documented, in every command that takes a snapshot", async () => {
  await withStore(async (ws) => {
    const { ids, exp } = await history(ws);
    const [one, two, three] = ids as [string, string, string];
    assertEquals(await idOf(ws, "HEAD"), three);
    assertEquals(await idOf(ws, "@"), three);
    assertEquals(await idOf(ws, "HEAD~0"), three);
    assertEquals(await idOf(ws, "HEAD~"), two);
    assertEquals(await idOf(ws, "HEAD~2"), one);
    assertEquals(await idOf(ws, "@~1"), two);
    assertEquals(await idOf(ws, "HEAD~1~1"), one);
    assertEquals(await idOf(ws, "main"), three);
    assertEquals(await idOf(ws, "exp"), exp);
    assertEquals(await idOf(ws, "exp~1"), two);
    assertEquals(await idOf(ws, `${three.slice(0, 8)}~2`), one);
    assertEquals(await idOf(ws, three.toUpperCase()), three);
    assertEquals((await json(ws, ["show"])).id, three, "show without a revision is HEAD");
    // Other commands take the same names.
    assertEquals((await json(ws, ["diff", "HEAD~1", "HEAD"])).changed, ["a.txt"]);
    assertEquals((await json(ws, ["verify", "HEAD~2"])).id, one);
    assertEquals((await json(ws, ["verify", "exp~0"])).id, exp);
    assertEquals((await json(ws, ["restore", "HEAD~2", "--dry-run"])).target, one);
    assertEquals((await json(ws, ["fork", "exp~1", "--name", "again"])).head, two);
    const dest = join(ws.root, "m");
    assertEquals((await json(ws, ["materialize", "HEAD~1", dest])).id, two);
    assertEquals(await Deno.readTextFile(join(dest, "a.txt")), "two\n");
    assertEquals(
      (await json(ws, ["create", "--expect-head", "HEAD", "--allow-unchanged"])).parent,
      three,
    );
  });
});

Deno.test("names: HEAD~N past the first snapshot, an unknown branch and a forgotten parent exit 4; bad syntax and short hex exit 2", async () => {
  await withStore(async (ws) => {
    const { ids } = await history(ws);
    expectCode(await ws.run(["show", "HEAD~3"]), 4, "past the first snapshot");
    expectCode(await ws.run(["show", "nosuch"]), 4, "an unknown branch");
    expectCode(await ws.run(["show", "nosuch~1"]), 4, "an unknown branch with ~");
    expectCode(await ws.run(["show", ids[0]!.slice(0, 3)]), 2, "3 hex characters");
    expectCode(await ws.run(["show", "HEAD~x"]), 2, "~ with a non-number");
    expectCode(await ws.run(["show", "HEAD@{yesterday}"]), 2, "a time that is not ISO 8601");
    expectCode(await ws.run(["show", "HEAD@{2026-02-30}"]), 2, "February 30");
    expectCode(await ws.run(["show", "a b"]), 2, "not a name");
    expectCode(await ws.run(["forget", ids[0]!]), 0, "forget the first");
    const missing = await ws.run(["show", "HEAD~2"]);
    expectCode(missing, 4, "into a forgotten snapshot");
    assert(missing.stderr.includes("forgotten"), missing.stderr);
  });
});

Deno.test("names: a string that is both a branch and an id prefix names the branch, with a warning; more hex digits or the full id name the snapshot", async () => {
  await withStore(async (ws) => {
    const { ids } = await history(ws);
    const target = ids[0]!;
    const prefix = target.slice(0, 6);
    expectCode(await ws.run(["fork", "HEAD", "--name", prefix]), 0, "a branch named like a prefix");
    const shown = await ws.run(["show", prefix, "--json"]);
    expectCode(shown, 0, "show PREFIX");
    assertEquals(shown.json().id, ids[2], "the branch wins");
    assert(shown.stderr.includes("both a branch and a prefix"), shown.stderr);
    assertEquals(await idOf(ws, target.slice(0, 10)), target, "more digits: the snapshot");
    assertEquals(await idOf(ws, target), target, "the full id is never a branch");
    // A full id as a branch name is still the snapshot.
    expectCode(await ws.run(["fork", "HEAD", "--name", ids[1]!]), 0, "a branch named like an id");
    assertEquals(await idOf(ws, ids[1]!), ids[1]);
  });
});

Deno.test("names: @{TIME} and --before pick the newest snapshot at or before a time (UTC without a zone); list --before filters", async () => {
  await withStore(async (ws) => {
    const { ids } = await history(ws);
    const times = await Promise.all(
      ids.map(async (id) => (await json(ws, ["show", id])).created_at as string),
    );
    const t1 = times[1]!;
    assertEquals(await idOf(ws, `HEAD@{${t1}}`), ids[1]);
    assertEquals(await idOf(ws, `@{${t1}}`), ids[1]);
    assertEquals(await idOf(ws, "HEAD", "--before", t1), ids[1]);
    assertEquals(await idOf(ws, `main@{${times[2]}}`), ids[2]);
    const early = new Date(Date.parse(times[0]!) - 1).toISOString();
    expectCode(await ws.run(["show", `HEAD@{${early}}`]), 4, "before every snapshot");
    const listed = await json(ws, ["list", "--before", t1]);
    assertEquals(listed.snapshots.map((s: { id: string }) => s.id), [ids[1], ids[0]]);
    // A zone moves the instant; none means UTC.
    assertEquals(parseTime("2026-11-30T10:00"), Date.parse("2026-11-30T10:00:00.000Z"));
    assertEquals(parseTime("2026-11-30T11:00+01:00"), Date.parse("2026-11-30T10:00:00.000Z"));
    assertEquals(parseTime("2026-11-30"), Date.parse("2026-11-30T00:00:00.000Z"));
    assertEquals(parseTime("2026-11-30T10:00:00.123456Z"), Date.parse("2026-11-30T10:00:00.123Z"));
    assertThrows(() => parseTime("2026-11-30T24:00"), UsageError);
    assertEquals(parseRevision("main~2@{2026-11-30}~1").steps.map((s) => s.kind), [
      "parents",
      "before",
      "parents",
    ]);
    assertThrows(() => parseRevision("~1"), UsageError);
    assertThrows(() => parseRevision("HEAD~9999999"), UsageError);
  });
});

Deno.test("names: imported/<key id> names the quarantine branch, which never moves back when an older snapshot is imported after a newer one", async () => {
  await withStore(async (alice) => {
    const ids: string[] = [];
    for (const text of ["v1", "v2"]) {
      await Deno.writeTextFile(join(alice.path, "a.txt"), `${text}\n`);
      ids.push((await json(alice, ["create", "-m", text])).id);
    }
    const out = join(alice.root, "out");
    await Deno.mkdir(out);
    for (const id of ids) {
      expectCode(await alice.run(["publish", id, "--out", `${out}/`]), 0, `publish ${id}`);
    }
    const key = (await json(alice, ["key", "show"])).public_key as string;
    const keyId = (await json(alice, ["key", "show"])).key_id as string;
    const file = (id: string) => join(out, `${id.slice(0, 12)}.ctxsnapshot.json`);
    await withStore(async (bob) => {
      const newer = await json(bob, ["import", file(ids[1]!), "--trust", key]);
      assertEquals([newer.head, newer.head_moved], [ids[1], true]);
      const older = await json(bob, ["import", file(ids[0]!), "--trust", key]);
      assertEquals([older.head, older.head_moved], [ids[1], false], "the head moved back");
      assertEquals(await idOf(bob, `imported/${keyId}`), ids[1]);
      assertEquals(await idOf(bob, `imported/${keyId}~1`), ids[0]);
    });
  });
});

Deno.test("names: prompt:N[:SESSION] names the state before a prompt in show, diff, materialize and restore; malformed or unknown ones are refused", async () => {
  await withStore(async (ws) => {
    const none = await ws.run(["show", "prompt:1"]);
    expectCode(none, 4, "no agent session yet");
    assert(none.stderr.includes("No agent session is recorded"), none.stderr);
    const send = async (fields: Record<string, unknown>) =>
      expectCode(
        await ws.run(["hook", "claude-code", "--strict"], {
          stdin: JSON.stringify({ session_id: "names-sess-1", cwd: ws.path, ...fields }),
        }),
        0,
        JSON.stringify(fields),
      );
    await send({ hook_event_name: "UserPromptSubmit" });
    await Deno.writeTextFile(join(ws.path, "a.txt"), "after prompt 1\n");
    await send({ hook_event_name: "PostToolUse", tool_name: "Write", tool_use_id: "t1" });
    await send({ hook_event_name: "UserPromptSubmit" });
    const out = join(ws.root, "at-prompt-1");
    expectCode(await ws.run(["materialize", "prompt:1", out]), 0, "materialize");
    assertEquals(await Deno.readTextFile(join(out, "a.txt")), "alpha\n");
    const diff = await ws.run(["diff", "prompt:1:names-sess", "prompt:2", "--json"]);
    assertEquals(diff.json().changed, ["a.txt"]);
    const parent = await ws.run(["show", "prompt:2~1", "--json"]);
    const first = await ws.run(["show", "prompt:1", "--json"]);
    assertEquals(parent.json().id, first.json().id);
    for (const bad of ["prompt:0", "prompt:x", "prompt:1:", "prompt:1:a/b", "prompt:"]) {
      expectCode(await ws.run(["show", bad]), 2, bad);
    }
    const missing = await ws.run(["show", "prompt:3"]);
    expectCode(missing, 4, "no prompt 3");
    assert(missing.stderr.includes("has no prompt 3: it has 2 prompts"), missing.stderr);
    expectCode(await ws.run(["show", "prompt:1:zzzz-nope"]), 4, "no such agent session");
  });
});
