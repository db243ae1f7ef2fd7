/**
 * Every answer of `ctxsnap mcp` stays under 10,000 characters on a
 * repository the size of denoland/std (about 2,800 files; generated, since
 * the tests run without network): an agent's session of edits, additions
 * and deletions, a wholesale reformat touching 2,000 files, a long
 * timeline, a session with hundreds of long decisions, and every tool and
 * resource, each page of each paged answer included; and on a 3,000-file
 * tree, that paging through `next_page` gives every path a restore, an undo
 * and a diff change. Long suite (`deno task test:long`).
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { withStore } from "../_cli.ts";
import { allPages, type Any, callRaw, type Client, largest, withClient } from "../_mcp.ts";
import { stdTree, writeTree } from "../_std_tree.ts";

const BOUND = 10_000;

/** Calls a tool, asserting its answer (success or error) is within the bound. */
async function bounded(client: Client, name: string, args: Record<string, unknown> = {}) {
  const raw = await callRaw(client, name, args);
  const text = String(raw.content[0].text);
  assert(
    text.length <= BOUND,
    `${name} ${JSON.stringify(args)} answered ${text.length} characters`,
  );
  if (raw.isError === true) throw new Error(`${name} failed: ${text}`);
  return raw.structuredContent as Any;
}

/** Reads every page of a paged answer, asserting each within the bound. */
async function pages(client: Client, first: Any, key: string): Promise<Any[]> {
  const items = await allPages(client, first, key); // next_page answers go through callRaw too
  assert(largest.chars <= BOUND, `next_page answered ${largest.chars} characters`);
  return items;
}

Deno.test("mcp: on a std-sized repository (2,800 files) every tool's answer stays under 10,000 characters", async () => {
  await withStore(async (ws) => {
    const tree = stdTree(2800);
    await writeTree(ws.path, tree);
    const sources = [...tree.keys()].filter((p) => p.endsWith(".ts")).sort();
    await withClient(ws, async (client) => {
      const s1 = (await bounded(client, "checkpoint", { reason: "prompt 1" })).id;
      // An agent's turn: 40 edits, 12 new files, 6 deletions.
      for (const p of sources.slice(0, 40)) {
        await Deno.writeTextFile(join(ws.path, p), "// edited by the agent\n");
      }
      for (let i = 0; i < 12; i++) {
        await Deno.writeTextFile(
          join(ws.path, `fs/unstable_new_${i}.ts`),
          `export const x = ${i};\n`,
        );
      }
      for (const p of sources.slice(40, 46)) await Deno.remove(join(ws.path, p));
      const s2 = (await bounded(client, "checkpoint", { reason: "prompt 2" })).id;

      // The session grows: hundreds of long decisions and findings.
      for (let i = 0; i < 120; i++) {
        await bounded(client, "session_update", {
          decision: `decision ${i}: ${"keep the public API stable while porting ".repeat(20)}`,
          ...(i % 2 === 0 ? { finding: `finding ${i}: ${"x".repeat(900)}` } : {}),
          progress_pct: i % 101,
        });
      }
      // The answer keeps the newest decisions, and says what it cut.
      const session = await bounded(client, "session_update", {});
      assert(String(session.state.decisions.at(-1)).startsWith("decision 119:"), "the newest");
      assert(session.truncated.length > 0, "what was cut is said");
      // A wholesale reformat: 2,000 files change.
      for (const p of sources.slice(100, 2100)) {
        if (!tree.has(p)) continue;
        await Deno.writeTextFile(join(ws.path, p), `// reformatted\n${tree.get(p)}`);
      }
      const s3 = (await bounded(client, "checkpoint", { reason: "prompt 3: deno fmt" })).id;
      for (let i = 0; i < 40; i++) {
        await Deno.writeTextFile(join(ws.path, "README.md"), `turn ${i}\n`);
        await bounded(client, "checkpoint", { reason: `turn ${i} `.repeat(100) });
      }

      // Looking back.
      const list = await bounded(client, "list", { all: true, limit: 1000 });
      assertEquals((await pages(client, list, "snapshots")).length, 43);
      await bounded(client, "list", { limit: 1000 });
      await bounded(client, "show", { id: s3 });
      await bounded(client, "show", { id: "HEAD" });
      for (const [from, to] of [[s1, s2], [s1, s3], [s2, undefined]]) {
        const diff = await bounded(client, "diff", { from, ...(to ? { to } : {}) });
        const all = await pages(client, diff, "changes");
        assertEquals(
          all.length,
          diff.counts.added + diff.counts.changed + diff.counts.removed,
          "every changed path is paged",
        );
      }
      const big = sources.find((p) => (tree.get(p)?.length ?? 0) > 1000)!;
      const part = await bounded(client, "read_file", { id: s1, path: big, length: 8000 });
      assertEquals(part.binary, false);
      const bin = [...tree.keys()].find((p) => p.endsWith(".bin"));
      if (bin !== undefined) {
        assertEquals((await bounded(client, "read_file", { id: s1, path: bin })).binary, true);
      }
      await bounded(client, "verify", { all: true });
      await bounded(client, "verify", { id: s3 });

      // Going back to before the reformat, then undo and redo.
      const preview = await bounded(client, "restore_preview", { id: s2 });
      assert(preview.counts.unchanged > 700, "unchanged paths are counted, not listed");
      const changing = (a: Any) => a.counts.writes + a.counts.deletes + a.counts.conflicts;
      assertEquals((await pages(client, preview, "changes")).length, changing(preview));
      const restored = await bounded(client, "restore", { id: s2, confirm: true });
      assertEquals((await pages(client, restored, "changes")).length, changing(restored));
      const undone = await bounded(client, "undo", {});
      assertEquals(undone.reverts.kind, "restore");
      await pages(client, undone, "changes");
      await bounded(client, "redo", { dry_run: true });
      const redone = await bounded(client, "redo", {});
      assertEquals(redone.direction, "redo");
      await bounded(client, "restore_preview", { id: s1, git: false, force: true });
      await bounded(client, "publish", { id: s1 });

      for (const uri of ["ctxsnap://timeline", "ctxsnap://head", "ctxsnap://session"]) {
        const read = await client.readResource({ uri }) as Any;
        const text = String(read.contents[0].text);
        assert(text.length <= BOUND, `${uri} is ${text.length} characters`);
      }
    });
    // deno-lint-ignore no-console
    console.log(`largest MCP answer: ${largest.chars} characters (${largest.tool})`);
    assert(largest.chars <= BOUND);
  });
});

Deno.test("mcp: on a tree of 3,000 files every answer stays under 10,000 characters, and next_page gives every path a restore, an undo and a diff change", async () => {
  // The long suite (mcp_bound_test.ts) does the same on a std-like tree with every tool.
  await withStore(async (ws) => {
    const files = Array.from({ length: 3000 }, (_, i) => `pkg_${i % 40}/module_file_${i}.ts`);
    for (let d = 0; d < 40; d++) await Deno.mkdir(join(ws.path, `pkg_${d}`));
    for (const f of files) await Deno.writeTextFile(join(ws.path, f), `export const v = 1;\n`);
    await withClient(ws, async (client) => {
      const bounded = async (name: string, args: Record<string, unknown>) => {
        const raw = await callRaw(client, name, args);
        const text = String(raw.content[0].text);
        assert(text.length <= BOUND, `${name} answered ${text.length} characters`);
        assert(raw.isError !== true, `${name} failed: ${text}`);
        return raw.structuredContent;
      };
      const s1 = (await bounded("checkpoint", { reason: "before" })).id;
      const edited = files.filter((_, i) => i % 10 === 1); // 300 files
      for (const f of edited) await Deno.writeTextFile(join(ws.path, f), `export const v = 2;\n`);
      const s2 = (await bounded("checkpoint", { reason: "after" })).id;

      const preview = await bounded("restore_preview", { id: s1 });
      assertEquals(preview.counts.writes, 300);
      assertEquals(preview.counts.unchanged, 2703, "2,700 files and the three of every workspace");
      assert(!("unchanged" in preview), "unchanged paths are only counted");
      assert(preview.next_cursor !== null, "the changes are paged");
      const planned = await allPages(client, preview, "changes");
      assertEquals(planned.map((c: Any) => c.path).sort(), [...edited].sort());
      assert(planned.every((c: Any) => c.action === "replace"));

      const diff = await bounded("diff", { from: s1, to: s2 });
      assertEquals(diff.counts, { added: 0, changed: 300, removed: 0 });
      assertEquals((await allPages(client, diff, "changes")).length, 300);

      const restored = await bounded("restore", { id: s1, confirm: true });
      assertEquals(restored.counts.writes, 300);
      assertEquals((await allPages(client, restored, "changes")).length, 300);
      assertEquals(await Deno.readTextFile(join(ws.path, edited[7]!)), "export const v = 1;\n");

      // undo reverts the restore, bounded and paged.
      const undone = await bounded("undo", {});
      assertEquals([undone.direction, undone.reverts.kind], ["undo", "restore"]);
      assertEquals((await allPages(client, undone, "changes")).length, 300);
      assertEquals(await Deno.readTextFile(join(ws.path, edited[7]!)), "export const v = 2;\n");
      // redo: in the long suite (mcp_bound_test.ts).

      for (
        const [name, args] of [
          ["list", { all: true, limit: 1000 }],
          ["show", { id: s2 }],
          ["verify", { all: true }],
          ["diff", { from: s2 }],
        ] as const
      ) await bounded(name, args);
    });
  });
});
