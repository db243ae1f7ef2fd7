/**
 * The Replay view's conversation of each prompt (`promptConversation`): what
 * the kept transcript holds between one prompt and the next, read from the
 * store's checked segments, and what `ctxsnap timeline` puts on the page.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../_assert.ts";
import { expectCode, withStore } from "../../_cli.ts";
import { Store } from "../../../lib/repository/store.ts";
import { promptConversation } from "../../../lib/integrations/agents/conversation.ts";
import { CLAUDE_SESSION, recordClaudeSession } from "./_session.ts";

Deno.test("promptConversation() gives each prompt its own slice of the kept transcript: the prompt, the assistant's text and its tool calls", async () => {
  await withStore(async (ws) => {
    await recordClaudeSession(ws);
    const store = Store.open(join(ws.path, ".ctxsnap"), { readOnly: true });
    try {
      const slices = [1, 2, 3].map((n) =>
        promptConversation(store, "claude-code", CLAUDE_SESSION, n)
      );
      const said = slices.map((slice) =>
        slice?.messages.map((m) => `${m.role}${m.tool ? `:${m.tool}` : ""} ${m.text}`)
      );
      assertEquals(said[1], [
        "user Run the tests; the session id 0ab3352c-0614-4d2c-942c-0051f270eaf3 stays in this text",
        "tool_use:Bash echo two >> notes.txt",
        "assistant Appended a line.",
      ]);
      assertEquals(said[2], [
        "user Now delete the notes file",
        "tool_use:Bash rm notes.txt",
        "assistant Deleted.",
      ]);
      assertEquals(said[0]?.[0], "user Add a notes file");
      assertEquals(slices.map((s) => s?.truncated), [0, 0, 0]);
      // No such prompt, or another agent session: nothing.
      assertEquals(promptConversation(store, "claude-code", CLAUDE_SESSION, 4), null);
      assertEquals(promptConversation(store, "claude-code", "someone-else", 1), null);
    } finally {
      store.close();
    }
  });
});

Deno.test("timeline --html puts each prompt's conversation on the page, from the kept transcript", async () => {
  await withStore(async (ws) => {
    await recordClaudeSession(ws);
    const page = join(ws.root, "replay.html");
    expectCode(await ws.run(["timeline", "--html", page]), 0, "timeline --html");
    const html = await Deno.readTextFile(page);
    // The assistant's words exist only in the transcript: the page has them from the store.
    assert(html.includes("Appended a line."), "prompt 2's conversation is on the page");
    assert(html.includes("rm notes.txt"), "prompt 3's tool call is on the page");
  });
});
