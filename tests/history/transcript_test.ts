/**
 * The kept transcript (lib/history/transcript.ts): appended segments
 * reassemble into exactly the bytes recorded, a tampered segment is
 * refused, and a file outside the agent's transcript directory is never
 * read.
 *
 * @module
 */
import { join } from "node:path";
import { assertEquals, assertThrows } from "../_assert.ts";
import { IntegrityError } from "../../lib/errors.ts";
import { Store } from "../../lib/repository/store.ts";
import { DEFAULT_TRANSCRIPT_POLICY } from "../../lib/repository/transcript_policy.ts";
import {
  insideRoots,
  keepTranscript,
  keptTranscript,
  readTranscript,
} from "../../lib/history/transcript.ts";

const enc = new TextEncoder();

async function withTempStore(fn: (store: Store, dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-transcript-" }));
  const store = Store.init(join(dir, ".ctxsnap"), dir);
  try {
    await fn(store, dir);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("keepTranscript() stores only appended bytes and keptTranscript() reassembles any recorded prefix", async () => {
  await withTempStore((store) => {
    const read = (text: string) => ({ path: "/t.jsonl", bytes: enc.encode(text), refused: null });
    const policy = DEFAULT_TRANSCRIPT_POLICY;
    const marks = store.transaction("t", () => [
      keepTranscript(store, 1, read('{"a":1}\n'), policy, 1),
      keepTranscript(store, 1, read('{"a":1}\n{"b":2}\n'), policy, 2),
      keepTranscript(store, 1, read('{"a":1}\n{"b":2}\n'), policy, 3),
    ]);
    assertEquals(marks.map((m) => [m.chain, m.len, m.restarted]), [[1, 8, false], [1, 16, false], [
      1,
      16,
      false,
    ]]);
    const rows = store.stmt("SELECT start, length FROM agent_transcripts").all();
    assertEquals(rows.map((r) => [r.start, r.length]), [[0, 8], [8, 8]]);
    const first = keptTranscript(store, 1, 1, 8, marks[0]!.sha256!);
    assertEquals(new TextDecoder().decode(first), '{"a":1}\n');
    return Promise.resolve();
  });
});

Deno.test("keptTranscript() refuses segments altered in the store (IntegrityError)", async () => {
  await withTempStore((store) => {
    const bytes = enc.encode('{"a":1}\n');
    const mark = store.transaction(
      "t",
      () =>
        keepTranscript(
          store,
          1,
          { path: "/t.jsonl", bytes, refused: null },
          DEFAULT_TRANSCRIPT_POLICY,
          1,
        ),
    );
    store.transaction(
      "tamper",
      () => store.stmt("UPDATE agent_transcripts SET data = ?").run(enc.encode('{"a":2}\n')),
    );
    assertThrows(() => keptTranscript(store, 1, 1, 8, mark.sha256!), IntegrityError, "reassemble");
    return Promise.resolve();
  });
});

Deno.test("readTranscript() reads nothing outside the agent's transcript directory, nor a path with ..", async () => {
  const home = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-home-" }));
  try {
    const dir = join(home, ".claude", "projects", "-p");
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(join(dir, "s.jsonl"), "{}\n");
    await Deno.writeTextFile(join(home, "secret.jsonl"), "{}\n");
    const env = { HOME: home };
    const ok = readTranscript("claude-code", join(dir, "s.jsonl"), DEFAULT_TRANSCRIPT_POLICY, env);
    assertEquals(ok.refused, null);
    const outside = readTranscript(
      "claude-code",
      join(home, "secret.jsonl"),
      DEFAULT_TRANSCRIPT_POLICY,
      env,
    );
    assertEquals(outside.refused, "outside");
    assertEquals(
      insideRoots(`${dir}/../../../secret.jsonl`, [join(home, ".claude", "projects")]),
      false,
    );
    // Another agent's directory is not this agent's.
    assertEquals(
      readTranscript("codex", join(dir, "s.jsonl"), DEFAULT_TRANSCRIPT_POLICY, env).refused,
      "outside",
    );
    const small = { ...DEFAULT_TRANSCRIPT_POLICY, maxBytes: 2 };
    assertEquals(
      readTranscript("claude-code", join(dir, "s.jsonl"), small, env).refused,
      "too_large",
    );
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
