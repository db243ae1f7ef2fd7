/**
 * Conversation slices leaving the machine: never by default (publish,
 * bundles and push carry no transcript), and with `publish
 * --with-conversation` only as a side file whose secrets the scanner
 * redacted.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../_assert.ts";
import { expectCode, withStore } from "../../_cli.ts";
import { exists } from "../../_util.ts";
import { redactSecrets } from "../../../lib/integrations/agents/conversation.ts";
import {
  CLAUDE_SESSION,
  claudeTranscriptPath,
  fixture,
  hook,
  recordClaudeSession,
  writeTranscript,
} from "./_session.ts";

const TOKEN = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A";

Deno.test("publish leaves the agents' transcripts out: a bundle of every snapshot holds no conversation text", async () => {
  await withStore(async (ws) => {
    await recordClaudeSession(ws);
    const out = join(ws.root, "out.ctxbundle");
    expectCode(
      await ws.run(["publish", "HEAD", "--with-workspace", "--history", "all", "--out", out]),
      0,
      "publish",
    );
    const bytes = new TextDecoder().decode(await Deno.readFile(out));
    for (const text of ["Appended a line.", "Created notes.txt.", "Now delete the notes file"]) {
      assert(!bytes.includes(text), text);
    }
    assertEquals(await exists(`${out}.conversation.jsonl`), false);
  });
});

Deno.test("publish --with-conversation writes the slices beside the file, with what the secret scanner finds redacted", async () => {
  await withStore(async (ws) => {
    const path = claudeTranscriptPath(ws);
    const line = {
      type: "assistant",
      sessionId: CLAUDE_SESSION,
      uuid: "a-t",
      message: { role: "assistant", content: [{ type: "text", text: `use ${TOKEN}\nthen push` }] },
    };
    await writeTranscript(path, [JSON.stringify(line) + "\n"], 1);
    await Deno.writeTextFile(join(ws.path, "a.txt"), "changed\n");
    const made = await hook(ws, "claude-code", await fixture(ws, "claude-code", "stop_1.json"));
    expectCode(made, 0, "hook");
    const out = join(ws.root, "one.ctxsnapshot.json");
    const result = await ws.run([
      "publish",
      made.json().id,
      "--out",
      out,
      "--with-conversation",
      "--json",
    ]);
    expectCode(result, 0, "publish");
    assertEquals([result.json().conversation.items, result.json().conversation.redacted], [1, 1]);
    const text = await Deno.readTextFile(`${out}.conversation.jsonl`);
    assert(!text.includes(TOKEN), text);
    const item = JSON.parse(text.trim());
    assertEquals(item.text, "[redacted: GitHub token]\nthen push");
    assertEquals([item.role, item.agent_session], ["assistant", CLAUDE_SESSION]);
    assertEquals((await Deno.stat(`${out}.conversation.jsonl`)).mode! & 0o777, 0o600);
  });
});

Deno.test("redactSecrets() redacts a private key spread over lines as a whole", () => {
  const pem = "-----BEGIN OPENSSH PRIVATE KEY-----\n" +
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n" +
    "-----END OPENSSH PRIVATE KEY-----";
  const result = redactSecrets(`here:\n${pem}`);
  assertEquals(result.text, "[redacted: private key]");
  assertEquals(redactSecrets("nothing secret").redacted, []);
});
