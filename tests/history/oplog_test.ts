/**
 * Tests of the operations log: undo and redo of every kind of
 * operation, the undo stack (a second undo goes further back, redo is
 * explicit, a new operation clears redo), what forget and gc do to it,
 * refusals of tampered undo records, and no duplicate checkpoints.
 *
 * Real stores and files in temporary directories; the library in-process,
 * and the command line in-process where its output is the point.
 *
 * @module
 */
import { join } from "node:path";
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import type { Identity } from "../../lib/keys/identity.ts";
import { ConflictError, IntegrityError, NotFoundError } from "../../lib/errors.ts";
import { restoreSnapshot } from "../../lib/workspace/move/restore.ts";
import { switchTo } from "../../lib/workspace/move/switch.ts";
import { nextRedo, nextUndo, redo, undo } from "../../lib/workspace/move/undo.ts";
import { forkBranch } from "../../lib/history/branch.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { forgetImpact, forgetSnapshots, planForget } from "../../lib/history/forget.ts";
import { editSession, readSessionState, switchSession } from "../../lib/history/session_state.ts";
import { currentSelection, listBranches } from "../../lib/history/timeline.ts";
import { publishToFile } from "../../lib/share/publish.ts";
import { importFile } from "../../lib/share/import.ts";
import { Keyring } from "../../lib/keys/keyring.ts";
import { readBaseline } from "../../lib/repository/baseline.ts";
import { collectGarbage } from "../../lib/repository/gc.ts";
import { Store } from "../../lib/repository/store.ts";
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { expectCode, withStore } from "../_cli.ts";

/** A fresh workspace with a store and a signer; removed afterwards. */
async function withLib(
  fn: (ctx: { ws: string; store: Store; me: Identity; root: string }) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-oplog-" });
  const ws = join(root, "ws");
  await Deno.mkdir(ws);
  const me = await loadOrCreateIdentity(join(root, "config"));
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  try {
    await fn({ ws, store, me, root });
  } finally {
    store.close();
    await Deno.remove(root, { recursive: true });
  }
}

/** Everything undo may change, as one comparable value. */
async function state(store: Store, ws: string): Promise<unknown> {
  const files: Record<string, string> = {};
  for await (const item of Deno.readDir(ws)) {
    if (item.name === ".ctxsnap") continue;
    const info = await Deno.lstat(join(ws, item.name));
    files[item.name] = info.isFile ? await Deno.readTextFile(join(ws, item.name)) : "(other)";
  }
  // A session row with nothing in it reads exactly like no row (undo never removes rows).
  const empty = JSON.stringify(readSessionState(store, "no such session"));
  const sessions = (store.db.prepare("SELECT name, current_branch FROM sessions ORDER BY name")
    .all() as { name: string; current_branch: string }[])
    .map((s) => [s.name, s.current_branch, JSON.stringify(readSessionState(store, s.name))])
    .filter(([, branch, text]) => branch !== "main" || text !== empty);
  return {
    files,
    baseline: readBaseline(store),
    current: currentSelection(store),
    branches: listBranches(store).map((b) => [b.session, b.name, b.head, b.base]),
    sessions,
  };
}

/**
 * Runs `op`, then checks that undo returns every part of the state to what
 * it was before, that redo brings back what it was after, and that undo
 * names the operation's kind.
 */
async function undoRedo(
  ctx: { store: Store; ws: string; me: Identity },
  kind: string,
  op: () => Promise<unknown>,
): Promise<void> {
  const before = await state(ctx.store, ctx.ws);
  await op();
  const after = await state(ctx.store, ctx.ws);
  assert(JSON.stringify(before) !== JSON.stringify(after), `${kind} changed nothing`);
  assertEquals(nextUndo(ctx.store)?.kind, kind, `undo would revert the ${kind}`);
  const undone = await undo(ctx.store, ctx.me);
  assertEquals(undone.reverts.kind, kind);
  assertEquals(await state(ctx.store, ctx.ws), before, `after undoing the ${kind}`);
  assertEquals(nextRedo(ctx.store)?.kind, kind);
  await redo(ctx.store, ctx.me);
  assertEquals(await state(ctx.store, ctx.ws), after, `after redoing the ${kind}`);
}

Deno.test("undo reverts, and redo re-applies, every kind of operation: create, restore, switch, pointer-only switch, fork, import, session set/decide/remove/switch", async () => {
  await withLib(async (ctx) => {
    const { ws, store, me, root } = ctx;
    await Deno.writeTextFile(join(ws, "a.txt"), "one\n");
    await undoRedo(ctx, "create", () => createSnapshot(store, me, { reason: "one" }));
    const first = currentHead(store);
    await Deno.writeTextFile(join(ws, "a.txt"), "two\n");
    await Deno.writeTextFile(join(ws, "b.txt"), "only in two\n");
    await undoRedo(ctx, "create", () => createSnapshot(store, me, { reason: "two" }));
    await undoRedo(ctx, "restore", () => restoreSnapshot(store, me, first));
    await undoRedo(ctx, "fork", () => Promise.resolve(forkBranch(store, first, "exp")));
    await undoRedo(ctx, "switch", () => switchTo(store, me, "exp"));
    await undoRedo(ctx, "switch", () => switchTo(store, me, "main", { pointerOnly: true }));
    await undoRedo(
      ctx,
      "session",
      () => Promise.resolve(editSession(store, "main", "set", (s) => ({ ...s, task: "port" }))),
    );
    await undoRedo(
      ctx,
      "session",
      () =>
        Promise.resolve(
          editSession(store, "main", "decide", (s) => ({ ...s, decisions: ["keep API"] })),
        ),
    );
    await undoRedo(
      ctx,
      "session",
      () => Promise.resolve(editSession(store, "main", "remove", (s) => ({ ...s, decisions: [] }))),
    );
    await undoRedo(ctx, "session", () => Promise.resolve(switchSession(store, "other")));

    // An import from another store moves a quarantine branch.
    const other = join(root, "other");
    await Deno.mkdir(other);
    const alice = await loadOrCreateIdentity(join(root, "alice"));
    const otherStore = Store.init(join(other, ".ctxsnap"), other);
    await Deno.writeTextFile(join(other, "x.txt"), "x\n");
    const shared = await createSnapshot(otherStore, alice, {});
    const file = (await publishToFile(otherStore, shared.id, { dir: root, withWorkspace: true }))
      .path;
    otherStore.close();
    const trust = new Keyring([]);
    trust.add(alice.publicKey, "alice");
    await undoRedo(ctx, "import", () => importFile(store, file, trust));
  });
});

function currentHead(store: Store): string {
  const sel = currentSelection(store);
  return listBranches(store, sel.session).find((b) => b.name === sel.branch)!.head!;
}

Deno.test("undo twice reverts two operations, never redoes; redo is explicit and a new operation clears it", async () => {
  await withLib(async ({ ws, store, me }) => {
    const heads: string[] = [];
    for (const text of ["1", "2", "3"]) {
      await Deno.writeTextFile(join(ws, "a.txt"), `${text}\n`);
      heads.push((await createSnapshot(store, me, {})).id);
    }
    await undo(store, me);
    assertEquals(currentHead(store), heads[1]);
    await undo(store, me);
    assertEquals(currentHead(store), heads[0], "a second undo goes further back");
    await redo(store, me);
    assertEquals(currentHead(store), heads[1]);
    // A new operation: nothing is left to redo.
    await Deno.writeTextFile(join(ws, "a.txt"), "4\n");
    await createSnapshot(store, me, {});
    assertEquals(nextRedo(store), null);
    await assertRejects(() => redo(store, me), NotFoundError, "Nothing to redo");
    // Undo, after ten checkpoints, targets the last one (not the last restore).
    await restoreSnapshot(store, me, heads[0]!);
    for (let i = 0; i < 10; i++) {
      await Deno.writeTextFile(join(ws, "a.txt"), `turn ${i}\n`);
      await createSnapshot(store, me, {});
    }
    assertEquals(nextUndo(store)?.kind, "create");
  });
});

Deno.test("undo of a restore keeps edits made since to other paths, and a path edited since is a conflict unless --force, which saves it in a snapshot no branch points at", async () => {
  await withLib(async ({ ws, store, me }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "a1\n");
    await Deno.writeTextFile(join(ws, "b.txt"), "b1\n");
    const s1 = await createSnapshot(store, me, {});
    await Deno.writeTextFile(join(ws, "a.txt"), "a2\n");
    await createSnapshot(store, me, {});
    await restoreSnapshot(store, me, s1.id);
    await Deno.writeTextFile(join(ws, "b.txt"), "b edited after the restore\n");
    await undo(store, me);
    assertEquals(await Deno.readTextFile(join(ws, "a.txt")), "a2\n");
    assertEquals(await Deno.readTextFile(join(ws, "b.txt")), "b edited after the restore\n");
    await redo(store, me);
    assertEquals(await Deno.readTextFile(join(ws, "a.txt")), "a1\n");
    await Deno.writeTextFile(join(ws, "a.txt"), "a edited\n");
    await assertRejects(() => undo(store, me), ConflictError, "in conflict");
    assertEquals(await Deno.readTextFile(join(ws, "a.txt")), "a edited\n");
    const forced = await undo(store, me, { force: true });
    assertEquals(await Deno.readTextFile(join(ws, "a.txt")), "a2\n");
    assert(forced.saved !== null, "no snapshot saved the overwritten edit");
    const saved = store.getTree(
      (await (await import("../../lib/history/timeline.ts")).readEnvelope(store, forced.saved)).body
        .workspace!.tree,
    );
    const blob = saved.entries.find((e) => e.path === "a.txt");
    assert(blob?.type === "file");
    assertEquals(new TextDecoder().decode(store.readBlob(blob.blob)), "a edited\n");
    assert(!listBranches(store).some((b) => b.head === forced.saved), "a branch points at it");
  });
});

Deno.test("forget says exactly which operations become un-undoable, undo stops above them, and gc keeps what undo still needs", async () => {
  await withLib(async ({ ws, store, me }) => {
    const heads: string[] = [];
    for (let i = 1; i <= 10; i++) {
      await Deno.writeTextFile(join(ws, "a.txt"), `v${i}\n`);
      heads.push((await createSnapshot(store, me, {})).id);
    }
    const ids = planForget(store, { keepLast: 5 });
    const impact = forgetImpact(store, ids);
    // Undoing creates 1..6 needs a forgotten head (6's parent is 5): those six are cut.
    assertEquals(impact.length, 6);
    assert(impact.every((u) => u.kind === "create"));
    const result = forgetSnapshots(store, ids);
    assertEquals(result.unundoable, impact);
    collectGarbage(store);
    for (let i = 9; i >= 6; i--) {
      await undo(store, me);
      assertEquals(currentHead(store), heads[i - 1], `undo to v${i}`);
    }
    await assertRejects(() => undo(store, me), NotFoundError, "Nothing to undo");
    // Redo works after gc too.
    await redo(store, me);
    assertEquals(currentHead(store), heads[6]);
  });
});

Deno.test("gc never removes the files an undoable restore needs, even when the snapshot it restored is forgotten", async () => {
  await withLib(async ({ ws, store, me }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "old\n");
    await Deno.writeTextFile(join(ws, "local.txt"), "committed\n");
    const s1 = await createSnapshot(store, me, {});
    await Deno.writeTextFile(join(ws, "a.txt"), "new, and only in s2\n");
    await createSnapshot(store, me, {});
    await Deno.writeTextFile(join(ws, "local.txt"), "uncommitted edit\n");
    await restoreSnapshot(store, me, s1.id, { workspace: true });
    // The restore's target goes: the restore stays undoable (its record does not
    // need s1), the two creates below it do not (undoing them needs s1).
    const cut = forgetSnapshots(store, [s1.id]).unundoable;
    assertEquals(cut.map((u) => u.kind), ["create", "create"]);
    assertEquals(nextUndo(store)?.kind, "restore");
    collectGarbage(store);
    await undo(store, me);
    assertEquals(await Deno.readTextFile(join(ws, "a.txt")), "new, and only in s2\n");
    assertEquals(await Deno.readTextFile(join(ws, "local.txt")), "uncommitted edit\n");
    await assertRejects(() => undo(store, me), NotFoundError, "Nothing to undo");
  });
});

Deno.test("undo refuses a tampered undo record (exit 1) and changes nothing", async () => {
  await withLib(async ({ ws, store, me }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "1\n");
    const first = await createSnapshot(store, me, {});
    await Deno.writeTextFile(join(ws, "a.txt"), "2\n");
    await createSnapshot(store, me, {});
    const op = nextUndo(store)!.id;
    store.db.prepare("UPDATE operations SET undo = ? WHERE id = ?").run(
      JSON.stringify({
        files: null,
        baseline: null,
        current_session: null,
        sessions: [],
        branches: [{
          session: "main",
          name: "main",
          before: { head: "../../etc/passwd", base: null },
          after: { head: first.id, base: null },
        }],
      }),
      op,
    );
    const before = currentHead(store);
    await assertRejects(() => undo(store, me), IntegrityError, "malformed undo record");
    assertEquals(currentHead(store), before);
    store.db.prepare("UPDATE operations SET undo = ? WHERE id = ?").run("{not json", op);
    await assertRejects(() => undo(store, me), IntegrityError, "unreadable undo record");
  });
});

Deno.test("undo refuses (exit 5) when what it would put back was changed by other means since", async () => {
  await withLib(async ({ ws, store, me }) => {
    await Deno.writeTextFile(join(ws, "a.txt"), "1\n");
    const first = await createSnapshot(store, me, {});
    forkBranch(store, first.id, "exp");
    // A branch deleted by forget (which cannot be undone) cannot be "un-forked" either.
    store.db.exec("DELETE FROM branches WHERE name = 'exp'");
    await assertRejects(() => undo(store, me), ConflictError, "moved");
  });
});

Deno.test("create on an unchanged workspace and session returns the head (created: false) and records nothing; --allow-unchanged forces one", async () => {
  await withStore(async (ws) => {
    const first = await ws.run(["create", "-m", "first", "--json"]);
    expectCode(first, 0, "create");
    const again = await ws.run(["create", "-m", "turn 2", "--json"]);
    expectCode(again, 0, "create again");
    assertEquals([again.json().created, again.json().id], [false, first.json().id]);
    assertEquals((await ws.run(["list", "--json"])).json().snapshots.length, 1);
    // The session counts: a decision makes the next checkpoint a new snapshot.
    expectCode(await ws.run(["session", "decide", "keep the API"]), 0, "decide");
    const decided = (await ws.run(["create", "--json"])).json();
    assertEquals(decided.created, true);
    const forced = (await ws.run(["create", "--allow-unchanged", "--json"])).json();
    assertEquals([forced.created, forced.parent], [true, decided.id]);
    assertEquals((await ws.run(["list", "--json"])).json().snapshots.length, 3);
  });
});

Deno.test("restore --session-state=replace rewinds the live session exactly; the default merge keeps later decisions; session remove removes one item (exit 4 when absent)", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["session", "decide", "D1"]), 0, "decide");
    const snap = (await ws.run(["create", "--json"])).json().id;
    expectCode(await ws.run(["session", "decide", "D2 made later"]), 0, "decide");
    expectCode(await ws.run(["session", "finding", "F later"]), 0, "finding");

    const merged = await ws.run(["restore", snap, "--session-state", "--dry-run", "--json"]);
    expectCode(merged, 0, "restore --session --dry-run");
    assertEquals(merged.json().session.mode, "merge");
    assertEquals(merged.json().session.change.decisions, { added: [], removed: [] });

    const replaced = await ws.run(["restore", snap, "--session-state=replace", "--json"]);
    expectCode(replaced, 0, "restore --session-state=replace");
    assertEquals(replaced.json().session.mode, "replace");
    assertEquals(replaced.json().session.change.decisions.removed, ["D2 made later"]);
    const state = (await ws.run(["session", "show", "--json"])).json().state;
    assertEquals([state.decisions, state.findings], [["D1"], []]);
    expectCode(
      await ws.run(["restore", snap, "--session-state=rewind"]),
      2,
      "a bad --session-state value",
    );

    expectCode(await ws.run(["session", "remove", "decision", "D1"]), 0, "remove");
    assertEquals((await ws.run(["session", "show", "--json"])).json().state.decisions, []);
    expectCode(await ws.run(["session", "remove", "decision", "D1"]), 4, "remove again");
    expectCode(await ws.run(["session", "remove", "mood", "x"]), 2, "an unknown list");
  });
});

Deno.test("log --json lists creates, session edits and undos with ISO 8601 times and names what undo and redo would revert", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "one"]), 0, "create");
    expectCode(await ws.run(["session", "set", "--task", "t"]), 0, "set");
    const log = (await ws.run(["log", "--json"])).json();
    assertEquals(log.operations.map((o: { kind: string }) => o.kind), ["session", "create"]);
    assertEquals(log.next_undo, log.operations[0].id);
    for (const op of log.operations) {
      assert(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(op.created_at), op.created_at);
    }
    expectCode(await ws.run(["undo"]), 0, "undo");
    const after = (await ws.run(["log", "--json"])).json();
    assertEquals(after.operations[0].kind, "undo");
    assertEquals(after.next_redo, log.operations[0].id);
    assertEquals(after.next_undo, log.operations[1].id);
  });
});

Deno.test("recover finishes an interrupted switch (current branch, baseline, undo record) or aborts it back to the content before", async () => {
  for (const abort of [false, true]) {
    await withLib(async ({ ws, store, me }) => {
      const { planPhase, recordPhase, applyPhase } = await import(
        "../../lib/workspace/move/move.ts"
      );
      const { entryMap } = await import("../../lib/repository/diff.ts");
      const { recover } = await import("../../lib/workspace/move/recover.ts");
      await Deno.writeTextFile(join(ws, "a.txt"), "main\n");
      const base = await createSnapshot(store, me, {});
      forkBranch(store, base.id, "exp");
      await switchTo(store, me, "exp");
      await Deno.writeTextFile(join(ws, "a.txt"), "exp\n");
      await Deno.writeTextFile(join(ws, "b.txt"), "only on exp\n");
      const expHead = await createSnapshot(store, me, {});
      await switchTo(store, me, "main");
      const before = await state(store, ws);
      // A switch to exp dies after its first write (what switchTo does, cut short).
      const target = store.getTree(expHead.envelope.body.workspace!.tree);
      const { plan, disk } = planPhase(store, target);
      const op = recordPhase(store, {
        kind: "switch",
        session: "main",
        branch: "exp",
        source: null,
        target: expHead.id,
        targetTree: expHead.envelope.body.workspace!.tree,
        plan,
        planned: disk,
        baseline: expHead.envelope.body.workspace!.tree,
        sessions: ["main"],
        extra: { from_branch: "main", to_branch: "exp" },
      });
      applyPhase(store, entryMap(target), plan.writes.slice(0, 1).map((w) => w.path), []);
      // Meanwhile every move of the workspace is refused.
      await assertRejects(() => restoreSnapshot(store, me, base.id), ConflictError, "unresolved");
      const result = await recover(store, me, { abort });
      assertEquals([result.kind, result.status], ["switch", abort ? "aborted" : "done"]);
      if (abort) {
        assertEquals(await state(store, ws), before, "aborted: back to before");
      } else {
        assertEquals(currentSelection(store).branch, "exp");
        assertEquals(await Deno.readTextFile(join(ws, "b.txt")), "only on exp\n");
        assertEquals(readBaseline(store), expHead.envelope.body.workspace!.tree);
        assertEquals(nextUndo(store)?.id, op.id, "the finished switch can be undone");
        await undo(store, me);
        assertEquals(await state(store, ws), before);
      }
    });
  }
});

Deno.test("recover finishes a restore left applying by an older ctxsnap (a plan without view, sessions or baseline); a malformed plan is refused (exit 1) and only --discard ends it", async () => {
  await withLib(async ({ ws, store, me }) => {
    const { startOperation } = await import("../../lib/repository/operations.ts");
    const { recover } = await import("../../lib/workspace/move/recover.ts");
    const { captureWorkspace } = await import("../../lib/workspace/capture.ts");
    await Deno.writeTextFile(join(ws, "a.txt"), "one\n");
    const first = await createSnapshot(store, me, {});
    await Deno.writeTextFile(join(ws, "a.txt"), "two\n");
    await createSnapshot(store, me, {});
    const legacy = (plan: Record<string, unknown>) =>
      store.transaction("t", () =>
        startOperation(store, {
          kind: "restore",
          session: "main",
          branch: "main",
          target: first.id,
          plan: plan as never,
        }).id);
    const pre = store.transaction("t", () => captureWorkspace(store).treeId);
    const op = legacy({
      target_tree: first.envelope.body.workspace!.tree,
      pre_tree: pre,
      writes: ["a.txt"],
      deletes: [],
      workspace: true,
      session: true,
      pre_restore: null,
      git_commit: null,
      git_back: null,
    });
    const done = await recover(store, me);
    assertEquals([done.operation, done.status], [op, "done"]);
    assertEquals(await Deno.readTextFile(join(ws, "a.txt")), "one\n");
    assertEquals(readBaseline(store), first.envelope.body.workspace!.tree);

    const bad = legacy({ pre_tree: "../x", writes: [], deletes: [], workspace: true });
    await assertRejects(() => recover(store, me), IntegrityError, "invalid plan");
    const discarded = await recover(store, me, { discard: true });
    assertEquals([discarded.operation, discarded.status, discarded.discarded], [
      bad,
      "aborted",
      true,
    ]);
  });
});

Deno.test("a pull is one undoable operation: undo takes the tracking branch back, redo moves it again", async () => {
  await withStore(async (alice) => {
    await withStore(async (bob) => {
      const url = `file://${alice.root}/remote`;
      expectCode(await alice.run(["remote", "add", "origin", url]), 0, "remote add");
      expectCode(await alice.run(["create", "-m", "one"]), 0, "create");
      expectCode(await alice.run(["push"]), 0, "push");
      const key = (await alice.run(["key", "show", "--json"])).json().public_key as string;
      expectCode(await bob.run(["remote", "add", "origin", url]), 0, "bob remote add");
      const pulled = await bob.run(["pull", "--trust", key, "--json"]);
      expectCode(pulled, 0, "pull");
      const branch = pulled.json().refs[0].local_branch as string;
      const log = (await bob.run(["log", "--json"])).json();
      assertEquals(log.operations[0].kind, "pull");
      assertEquals(log.next_undo, pulled.json().operation ?? log.operations[0].id);
      const undone = await bob.run(["undo", "--json"]);
      expectCode(undone, 0, "undo the pull");
      assertEquals(undone.json().reverts.kind, "pull");
      const branches = (await bob.run(["branch", "--json"])).json().branches as {
        name: string;
      }[];
      assert(!branches.some((b) => b.name === branch), "the tracking branch is still there");
      expectCode(await bob.run(["redo"]), 0, "redo the pull");
      const again = (await bob.run(["branch", "--json"])).json().branches as { name: string }[];
      assert(again.some((b) => b.name === branch), "redo did not bring the branch back");
    });
  });
});
