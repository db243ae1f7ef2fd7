/**
 * gc of kept agent transcripts (lib/repository/gc.ts,
 * lib/repository/transcript_rows.ts): a transcript chain goes once no agent
 * event of a retained snapshot names it, in gc's one write transaction; a
 * chain still named stays; `verify --all` passes after.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { expectCode, type TempWorkspace, withStore } from "../_cli.ts";
import {
  CLAUDE_SESSION,
  fixture,
  hook,
  queryStore,
  transcriptLines,
  writeTranscript,
} from "../integrations/agents/_session.ts";

const OTHER_SESSION = "5f1c2d3e-4a5b-4c6d-8e7f-0123456789ab";

/** Replays the fixture's Claude Code session under agent session id `id`. */
async function replay(ws: TempWorkspace, id: string): Promise<void> {
  const swap = (text: string) => text.replaceAll(CLAUDE_SESSION, id);
  const lines = (await transcriptLines(ws, "claude-code")).map(swap);
  const path = join(ws.home, ".claude", "projects", "-project", `${id}.jsonl`);
  const notes = join(ws.path, "notes.txt");
  const steps: [string, number, (() => Promise<void>) | null][] = [
    ["session_start", 0, null],
    ["prompt_1", 2, () => Deno.writeTextFile(join(ws.path, `${id}.txt`), "started\n")],
    ["post_write_1", 4, () => Deno.writeTextFile(notes, "one\n")],
    ["stop_1", 5, null],
    ["prompt_2", 7, null],
    ["post_bash_2", 9, () => Deno.writeTextFile(notes, "one\ntwo\n")],
    ["stop_2", 10, null],
  ];
  for (const [name, n, edit] of steps) {
    if (n > 0) await writeTranscript(path, lines, n);
    await edit?.();
    const result = await hook(
      ws,
      "claude-code",
      swap(await fixture(ws, "claude-code", `${name}.json`)),
    );
    expectCode(result, 0, `${id} ${name}`);
  }
}

function segmentsOf(ws: TempWorkspace, id: string): number {
  const rows = queryStore(
    ws,
    `SELECT COUNT(*) AS n FROM agent_transcripts t JOIN agent_sessions s ON s.seq = t.agent_session
     WHERE s.session_id = ?`,
    id,
  ) as { n: number }[];
  return Number(rows[0]!.n);
}

Deno.test("gc removes a kept transcript once no retained snapshot's events name it, keeps one still named, and verify --all passes", async () => {
  await withStore(async (ws) => {
    expectCode(await ws.run(["create", "-m", "base"]), 0, "create");
    expectCode(await ws.run(["fork", "HEAD", "--name", "agent"]), 0, "fork");
    expectCode(await ws.run(["switch", "agent"]), 0, "switch agent");
    await replay(ws, CLAUDE_SESSION);
    expectCode(await ws.run(["switch", "main", "--force"]), 0, "switch main");
    await replay(ws, OTHER_SESSION);
    const forgotten = segmentsOf(ws, CLAUDE_SESSION);
    const kept = segmentsOf(ws, OTHER_SESSION);
    assert(forgotten > 1 && kept > 1, `segments ${forgotten}, ${kept}`);

    // Forgetting the snapshots alone frees nothing yet; gc does.
    expectCode(await ws.run(["forget", "--branch", "agent"]), 0, "forget the agent branch");
    assertEquals(segmentsOf(ws, CLAUDE_SESSION), forgotten);
    const dry = await ws.run(["gc", "--dry-run", "--json"]);
    expectCode(dry, 0, "gc --dry-run");
    assertEquals(dry.json().transcripts.chains, 1);
    assertEquals(dry.json().transcripts.segments, forgotten);
    assertEquals(segmentsOf(ws, CLAUDE_SESSION), forgotten, "a dry run deletes nothing");
    const dryText = await ws.run(["gc", "--dry-run"]);
    assert(dryText.stdout.includes("Would remove 1 kept agent transcript(s)"), dryText.stdout);
    const gc = await ws.run(["gc", "--json"]);
    expectCode(gc, 0, "gc");
    assertEquals(gc.json().transcripts.chains, 1);
    assertEquals(gc.json().transcripts.segments, forgotten);
    assert(gc.json().transcripts.bytes > 0, JSON.stringify(gc.json().transcripts));
    assertEquals(segmentsOf(ws, CLAUDE_SESSION), 0, "the unneeded chain is gone");
    assertEquals(segmentsOf(ws, OTHER_SESSION), kept, "the chain still named stays");
    // The forgotten session's events still name the transcript's path, length and hash, no chain.
    const linked = queryStore(
      ws,
      `SELECT COUNT(*) AS n FROM agent_events e JOIN agent_sessions s ON s.seq = e.agent_session
       WHERE s.session_id = ? AND e.transcript_chain IS NOT NULL`,
      CLAUDE_SESSION,
    ) as { n: number }[];
    assertEquals(Number(linked[0]!.n), 0);
    expectCode(await ws.run(["verify", "--all"]), 0, "verify --all after gc");
    // The kept session's conversation still reads back; a second gc frees nothing.
    const show = await ws.run(["show", "HEAD"]);
    expectCode(show, 0, "show HEAD");
    assert(show.stdout.includes("conversation"), show.stdout);
    const again = await ws.run(["gc"]);
    expectCode(again, 0, "gc again");
    assert(!again.stdout.includes("transcript"), again.stdout);
  });
});
