/// <reference lib="dom" />
/**
 * The Replay page in a real browser (headless Chromium from Debian, driven by
 * playwright-core): it makes no network request, renders hostile snapshot
 * text literally and runs none of it, works from the keyboard, opens diffs,
 * filters, updates live under `ctxsnap serve`, and the server cannot be read
 * through DNS rebinding or from another local page.
 *
 * Run with `deno task test:browser` (a long suite, kept out of `deno task
 * test`). Screenshots are kept in `dist/test-artifacts/browser/` (printed).
 *
 * @module
 */
import * as http from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Page } from "playwright-core";
import { assert, assertEquals } from "../_assert.ts";
import { sharedTimelineFixture, type TimelineFixture, XSS } from "../_timeline_fixture.ts";
import { runCli } from "../_cli.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { Store } from "../../lib/repository/store.ts";
import { serveTimeline } from "../../lib/view/serve.ts";
import { renderPage } from "../../lib/view/html.ts";
import { timelineFromStore } from "../../lib/view/model.ts";
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { Keyring } from "../../lib/keys/keyring.ts";
import { ARTIFACTS, launch, screenshot, type Watched, watchedPage } from "./_browser.ts";
import { makeSigner, recordInterleaved } from "../_agent_history.ts";

/** Writes the page of the fixture's store with `ctxsnap timeline --html` (in-process). */
async function writePage(fx: TimelineFixture, file: string, extra: string[] = []): Promise<void> {
  const run = await runCli(["timeline", "--html", file, ...extra], {
    cwd: fx.workspace,
    env: { HOME: fx.root, CTXSNAP_CONFIG_DIR: join(fx.root, "me-config") },
  });
  assertEquals(run.code, 0, run.stderr);
}

/** Row order of the fixture, newest first. */
function rowOrder(fx: TimelineFixture): string[] {
  const ids = fx.ids;
  return [ids.bob, ids.restore, ids.main2, ids.experiment, ids.hostile, ids.first];
}

async function selected(page: Page): Promise<string> {
  return await page.$eval("#rows li.sel .sid", (e) => e.textContent ?? "");
}

async function press(page: Page, ...keys: string[]): Promise<void> {
  for (const key of keys) await page.keyboard.press(key);
}

/** Nothing ran: no global set, no dialog, no error, no element that could run or load anything. */
async function expectNothingRan(w: Watched): Promise<void> {
  const state = await w.page.evaluate(() => ({
    xss: (globalThis as { __xss?: unknown }).__xss ?? null,
    loaders:
      document.querySelectorAll("img, iframe, object, embed, link[rel=stylesheet], a").length,
    handlers:
      [...document.querySelectorAll("*")].filter((e) =>
        [...e.attributes].some((a) => a.name.toLowerCase().startsWith("on"))
      ).length,
    scripts: document.querySelectorAll("script").length,
  }));
  assertEquals(state, { xss: null, loaders: 0, handlers: 0, scripts: 2 });
  assertEquals(w.dialogs, [], "no dialog opened");
  assertEquals(w.pageErrors, [], "no uncaught error");
  assertEquals(w.consoleErrors, [], "no console error (no CSP violation either)");
}

const fixture = sharedTimelineFixture;

Deno.test("the page works from file:// with no network request and shows hostile text literally", async () => {
  const fx = await fixture();
  const file = join(ARTIFACTS, "hostile-timeline.html");
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  await writePage(fx, file);
  const url = pathToFileURL(file).href;
  const browser = await launch();
  try {
    const w = await watchedPage(browser, url);
    await w.page.goto(url);
    await w.page.waitForSelector("html[data-ready]");
    assertEquals(w.requests, [url], "the page is the only request");
    assertEquals(w.refused, []);
    assertEquals(await w.page.$$eval("#rows li", (rows) => rows.length), 6);
    // The hostile snapshot is the fifth row.
    await press(w.page, "j", "j", "j", "j");
    assertEquals(await selected(w.page), rowOrder(fx)[4]!.slice(0, 12));
    assertEquals(await w.page.textContent(".dtitle"), XSS.script);
    const items = await w.page.$$eval("#detail .items li", (li) => li.map((e) => e.textContent));
    for (const text of [XSS.svg, XSS.img, XSS.comment, `${XSS.img}.txt`]) {
      assert(items.includes(text), `${text} is shown as text: ${JSON.stringify(items)}`);
    }
    assert(
      items.includes("access\\u{202E}nimda\\u{202C} granted"),
      "bidi controls are shown as visible escapes",
    );
    const context = w.page.locator("#detail .card", { hasText: "Context" });
    assertEquals(await context.locator("td").first().textContent(), XSS.img, "the task");
    await expectNothingRan(w);
    await screenshot(w.page, "1-hostile-snapshot");
  } finally {
    await browser.close();
  }
});

Deno.test("keyboard: move through the timeline, jump to parent and restore target, open diffs", async () => {
  const fx = await fixture();
  const file = join(ARTIFACTS, "hostile-timeline.html");
  await writePage(fx, file);
  const url = pathToFileURL(file).href;
  const browser = await launch();
  try {
    const w = await watchedPage(browser, url);
    const page = w.page;
    await page.goto(url);
    await page.waitForSelector("html[data-ready]");
    const order = rowOrder(fx).map((id) => id.slice(0, 12));
    assertEquals(await selected(page), order[0], "the newest is selected first");
    await press(page, "j", "ArrowDown");
    assertEquals(await selected(page), order[2]);
    await press(page, "k");
    assertEquals(await selected(page), order[1], "the restore snapshot");
    assert((await page.textContent("#detail"))!.includes("restore of"), "restore shown");
    await press(page, "r");
    assertEquals(await selected(page), fx.ids.first.slice(0, 12), "r jumps to the restore target");
    await press(page, "g");
    assertEquals(await selected(page), order[0]);
    await press(page, "G");
    assertEquals(await selected(page), order[5]);
    await press(page, "k", "k", "u");
    assertEquals(await selected(page), fx.ids.first.slice(0, 12), "u jumps to the parent");

    // The hostile snapshot's changes: Enter goes to the files, Enter opens one.
    await press(page, "g", "j", "j", "j", "j");
    assertEquals(await selected(page), fx.ids.hostile.slice(0, 12));
    await press(page, "Enter");
    assertEquals(await page.evaluate(() => document.activeElement?.className), "fhead");
    const paths = await page.$$eval("#changes .fpath", (e) => e.map((x) => x.textContent));
    assertEquals(paths, ["a.txt", "blob.bin", "notes.md", "src/main.py"]);
    await press(page, "Enter");
    const a = page.locator("#changes .file").nth(0);
    assertEquals(await a.locator(".fhead").getAttribute("aria-expanded"), "true");
    const added = await a.locator(".dl.add .tx").allTextContents();
    assertEquals(added, [XSS.script], "the added line is shown literally");
    await press(page, "ArrowDown", "Enter");
    assert(
      (await page.locator("#changes .file").nth(1).textContent())!.includes(
        "New binary file, 10 B",
      ),
    );
    await press(page, "ArrowDown", "Enter");
    const notes = await page.locator("#changes .file").nth(2).locator(".dl.add .tx")
      .allTextContents();
    assertEquals(notes, ["# notes", XSS.comment, "access\\u{202E}nimda\\u{202C} granted"]);
    await screenshot(page, "2-diff-open");

    // Compare: b marks the hostile snapshot, then the restore is compared with it.
    await press(page, "Escape", "b", "g", "j");
    assertEquals(await selected(page), order[1]);
    const title = await page.textContent("#changes h3");
    assertEquals(title, `Changes from ${fx.ids.hostile.slice(0, 12)} to ${order[1]}`);
    const compared = await page.$$eval(
      "#changes .file",
      (f) =>
        f.map((x) =>
          x.querySelector(".st")!.textContent + " " + x.querySelector(".fpath")!.textContent
        ),
    );
    assertEquals(compared, ["M a.txt", "D blob.bin", "D notes.md", "M src/main.py"]);
    // This pair is not a step, so the file page has no diff for it, and says so.
    await press(page, "Enter", "Enter");
    assert((await page.textContent("#changes .file .fbody"))!.includes("not in the page"));
    await screenshot(page, "3-compare");
    await press(page, "Escape", "Escape");
    assert((await page.textContent("#changes h3"))!.startsWith("Changes since parent"));
    await expectNothingRan(w);
    assertEquals(w.requests, [url]);
  } finally {
    await browser.close();
  }
});

Deno.test("search by text, filter by path and by branch", async () => {
  const fx = await fixture();
  const file = join(ARTIFACTS, "hostile-timeline.html");
  await writePage(fx, file);
  const url = pathToFileURL(file).href;
  const browser = await launch();
  try {
    const w = await watchedPage(browser, url);
    const page = w.page;
    await page.goto(url);
    await page.waitForSelector("html[data-ready]");
    const rows = () => page.$$eval("#rows li .sid", (e) => e.map((x) => x.textContent));
    await press(page, "/");
    await page.keyboard.type("another approach");
    assertEquals(await rows(), [fx.ids.experiment.slice(0, 12)]);
    assertEquals(await page.textContent("#shown"), "1 of 6 shown");
    await page.fill("#q", XSS.img);
    assertEquals(
      await rows(),
      [fx.ids.hostile.slice(0, 12)],
      "search matches hostile text as text",
    );
    await page.fill("#q", "");
    await press(page, "Escape", "p");
    await page.keyboard.type("notes.md");
    assertEquals(
      await rows(),
      [fx.ids.restore, fx.ids.experiment, fx.ids.hostile].map((id) => id.slice(0, 12)),
    );
    await page.fill("#path", "");
    await page.selectOption("#lane", "main/experiment");
    assertEquals(await rows(), [fx.ids.experiment.slice(0, 12)]);
    await page.selectOption("#lane", `main/imported/${fx.bob.keyId}`);
    assertEquals(await rows(), [fx.ids.bob.slice(0, 12)]);
    assert((await page.textContent("#detail .signer"))!.includes("not trusted here"));
    await screenshot(page, "4-filter-imported");
    await expectNothingRan(w);
  } finally {
    await browser.close();
  }
});

Deno.test("a long timeline keeps few rows in the page and the keyboard reaches every snapshot", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-long-timeline-" });
  try {
    const me = await loadOrCreateIdentity(join(dir, "config"));
    const store = Store.init(join(dir, ".ctxsnap"), dir);
    let data;
    try {
      for (let i = 0; i < 400; i++) {
        await createSnapshot(store, me, {
          reason: `step ${i}`,
          workspace: false,
          allowUnchanged: true,
        });
      }
      data = await timelineFromStore(store, { kind: "all" }, new Keyring([], me));
    } finally {
      store.close();
    }
    const file = join(ARTIFACTS, "long-timeline.html");
    await Deno.writeTextFile(file, renderPage(data));
    const url = pathToFileURL(file).href;
    const browser = await launch();
    try {
      const w = await watchedPage(browser, url);
      const page = w.page;
      await page.goto(url);
      await page.waitForSelector("html[data-ready]");
      const rowCount = () => page.$$eval("#rows li", (rows) => rows.length);
      const reason = () => page.textContent("#rows li.sel .reason");
      assert((await rowCount()) < 120, `windowed: ${await rowCount()} rows in the page`);
      assertEquals(await reason(), "step 399");
      await press(page, "G");
      assertEquals(await reason(), "step 0", "End reaches the oldest");
      assertEquals(await page.textContent(".dtitle"), "step 0");
      await press(page, "g", "PageDown", "PageDown", "j");
      assertEquals(await reason(), "step 378");
      await page.evaluate(() => {
        document.getElementById("timeline")!.scrollTop = 200 * 28;
      });
      await page.waitForSelector("#row-200");
      await page.click("#row-205");
      assertEquals(await reason(), "step 194", "a click selects the row under it");
      assert((await rowCount()) < 120);
      await screenshot(page, "6-long-timeline");
      await expectNothingRan(w);
    } finally {
      await browser.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("serve: the live page talks only to its server, updates, previews a restore, loads diffs", async () => {
  const fx = await fixture();
  const store = Store.open(fx.storeDir, { readOnly: true });
  const server = await serveTimeline(store, { kind: "session", session: "main" }, fx.trust, {
    pollMs: 100,
  });
  const browser = await launch();
  try {
    const w = await watchedPage(browser, server.url);
    const page = w.page;
    await page.goto(server.url);
    await page.waitForSelector("html[data-ready]");
    // Open a diff (fetched from the server), then let a snapshot arrive.
    await press(page, "j", "j", "j", "j", "Enter", "Enter");
    await page.waitForSelector("#changes .file .dl.add");
    const writer = Store.open(fx.storeDir);
    try {
      await createSnapshot(writer, fx.me, {
        reason: "made while the page was open",
        allowUnchanged: true, // the fixture's workspace is as its last snapshot recorded
      });
    } finally {
      writer.close();
    }
    await page.waitForFunction(() =>
      document.querySelector("#rows li .reason")?.textContent === "made while the page was open"
    );
    assertEquals(await page.$$eval("#rows li", (r) => r.length), 7);
    assertEquals(await selected(page), fx.ids.hostile.slice(0, 12), "the selection stays");
    assert(await page.isVisible("#changes .file .dl.add"), "the open diff stays open");
    // The hostile snapshot is now sixth; preview restoring it.
    await press(page, "g", "j", "j", "j", "j", "j");
    assertEquals(await selected(page), fx.ids.hostile.slice(0, 12));
    await page.click("#preview-button");
    await page.waitForSelector(".preview .summary");
    assert((await page.textContent(".preview .summary"))!.startsWith("Dry run, nothing changed"));
    assert((await page.textContent(".preview .plan"))!.includes("blob.bin"));
    const previewText = await page.textContent(".preview");
    assert(/Session \((merge)\): /.test(previewText!), previewText!);
    await page.focus("#timeline");
    await press(page, "Enter", "Enter");
    await page.waitForSelector("#changes .file .dl.add");
    assertEquals(
      await page.locator("#changes .file").nth(0).locator(".dl.add .tx").allTextContents(),
      [XSS.script],
    );
    await screenshot(page, "5-serve-live");
    const prefix = server.url;
    assert(w.requests.length >= 4, JSON.stringify(w.requests));
    for (const url of w.requests) assert(url.startsWith(prefix), `request to ${url}`);
    assertEquals(w.refused, []);
    await expectNothingRan(w);
  } finally {
    await browser.close();
    await server.close();
    store.close();
  }
});

Deno.test("serve cannot be read through DNS rebinding or from another local page", async () => {
  const fx = await fixture();
  const store = Store.open(fx.storeDir, { readOnly: true });
  const server = await serveTimeline(store, { kind: "session", session: "main" }, fx.trust);
  // An attacker's page on another local origin.
  const attacker = http.createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end("<!DOCTYPE html><title>attacker</title><p>hello</p>");
  });
  await new Promise<void>((done) => attacker.listen(0, "127.0.0.1", done));
  const attackerPort = (attacker.address() as { port: number }).port;
  const browser = await launch([`--host-resolver-rules=MAP rebind.test 127.0.0.1`]);
  try {
    const w = await watchedPage(browser, "http://");
    // DNS rebinding: a name that resolves to 127.0.0.1 sends its own Host.
    const rebound = await w.page.goto(`http://rebind.test:${server.port}/${server.token}/`);
    assertEquals(rebound?.status(), 403);
    assert(!(await w.page.content()).includes("ctxsnap-data"), "no data behind the refusal");
    // Another local page, even one that knows the token, cannot read the API or frame the page.
    await w.page.goto(`http://127.0.0.1:${attackerPort}/`);
    const outcome = await w.page.evaluate(async (url) => {
      const results: string[] = [];
      try {
        const r = await fetch(url + "api/timeline");
        results.push("read " + (await r.text()).slice(0, 20));
      } catch {
        results.push("blocked");
      }
      try {
        // Cross-Origin-Resource-Policy: same-origin refuses even an opaque response.
        const opaque = await fetch(url + "api/timeline", { mode: "no-cors" });
        results.push(`${opaque.type} ${opaque.status}`);
      } catch {
        results.push("blocked");
      }
      const frame = document.createElement("iframe");
      frame.src = url;
      document.body.appendChild(frame);
      await new Promise((done) => frame.addEventListener("load", done));
      let framed: string;
      try {
        framed = frame.contentDocument?.body?.textContent ?? "no access";
      } catch {
        framed = "no access";
      }
      results.push(framed.includes("ctxsnap") ? "framed" : "not framed");
      return results;
    }, server.url);
    assertEquals(outcome, ["blocked", "blocked", "not framed"]);
    const errors = w.consoleErrors.join("\n");
    assert(errors.includes("blocked by CORS policy"), errors);
    assert(errors.includes("ERR_BLOCKED_BY_RESPONSE.NotSameOrigin"), errors);
    assert(
      errors.includes(
        `violates the following Content Security Policy directive: "frame-ancestors 'none'"`,
      ),
      errors,
    );
    assertEquals(w.dialogs, []);
  } finally {
    await browser.close();
    await server.close();
    store.close();
    await new Promise((done) => attacker.close(done));
  }
});

Deno.test("a received file's page does not contradict itself: a trusted unnamed signer is pinned, and restoring starts with an import", async () => {
  const { withMachines, createSnap, publish, publicKeyHex } = await import("../_share.ts");
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "for review");
    const bundle = await publish(alice, id, "r.ctxbundle", "--with-workspace");
    const page = join(carol.root, "r.html");
    const made = await carol.run([
      "timeline",
      "--html",
      page,
      bundle,
      "--trust",
      await publicKeyHex(alice),
    ]);
    assertEquals(made.code, 0, made.stderr);
    const url = pathToFileURL(page).href;
    const browser = await launch();
    try {
      const w = await watchedPage(browser, url);
      await w.page.goto(url);
      await w.page.waitForSelector("html[data-ready]");
      const signer = await w.page.textContent("#detail .card.signer") ?? "";
      assert(signer.includes("Valid signature by a trusted key"), signer);
      assert(!signer.includes("(not pinned)") && signer.includes("(pinned, no name)"), signer);
      const detail = await w.page.textContent("#detail") ?? "";
      assert(detail.includes(`ctxsnap import r.ctxbundle`), detail);
      assert(!detail.includes("Restore preview: ctxsnap restore"), detail);
    } finally {
      await browser.close();
    }
  });
});

/** Hostile prompt text: markup, a bidi override, terminal escapes and other control characters. */
const HOSTILE_PROMPT =
  `<script>globalThis.__xss=1</script> rename \u202Egnp.exe\u202C\u0007\u001b[31m red`;

Deno.test("Replay by prompt: interleaved agent sessions in lanes of their own, prompts grouped with tools, Bash commands, changed files and diffs, hostile prompt text shown as text", async () => {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-replay-" });
  const ws = join(root, "ws");
  await Deno.mkdir(ws);
  for (const name of ["a.ts", "b.ts", "c.ts"]) {
    await Deno.writeTextFile(join(ws, name), `export const ${name[0]} = 1;\n`);
  }
  const store = Store.init(join(ws, ".ctxsnap"), ws);
  const signer = await makeSigner();
  let page = "";
  try {
    await recordInterleaved(store, signer, ws, {
      snapshots: 12,
      sessions: ["sess-alpha", "sess-beta"],
      paths: ["a.ts", "b.ts", "c.ts"],
      prompt: (session, n) =>
        n === 1 && session === "sess-alpha" ? HOSTILE_PROMPT : `p${n} ${session}`,
    });
    // A conversation slice where one is kept (prompt 1 of sess-alpha), hostile like the prompt.
    const data = await timelineFromStore(store, { kind: "all" }, {
      isTrusted: () => false,
      nameOf: () => null,
    }, {
      conversation: (_harness, session, n) =>
        session === "sess-alpha" && n === 1
          ? {
            messages: [
              { role: "assistant", text: "<img src=x onerror=globalThis.__xss=2>", tool: null },
              { role: "tool_use", text: "rm -rf \u202E/", tool: "Bash" },
            ],
            truncated: 3,
          }
          : null,
    });
    page = renderPage(data);
  } finally {
    store.close();
  }
  const file = join(ARTIFACTS, "replay-by-prompt.html");
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  await Deno.writeTextFile(file, page);
  const url = pathToFileURL(file).href;
  const browser = await launch();
  try {
    const w = await watchedPage(browser, url);
    const p = w.page;
    await p.goto(url);
    await p.waitForSelector("html[data-ready]");
    assertEquals(await p.$eval("#mode", (e) => (e as HTMLSelectElement).value), "prompts");
    // Newest first, the two sessions alternate: each prompt row names its session.
    const sessions = await p.$$eval("#rows li .chip.agent", (e) => e.map((x) => x.textContent));
    const numbers = await p.$$eval("#rows li .pnum", (e) => e.map((x) => x.textContent));
    assertEquals(sessions.length, numbers.length);
    assert(sessions.length >= 4, `prompt rows: ${sessions.length}`);
    for (let i = 1; i < sessions.length; i++) {
      assert(sessions[i] !== sessions[i - 1], `the sessions interleave: ${sessions}`);
    }
    // Kept apart: each session's nodes are drawn in a lane (column) of its own.
    const lanes = await p.$$eval("#rows li", (rows) => rows.map((r) => r.getAttribute("title")));
    assertEquals(
      new Set(lanes),
      new Set(["agent:claude-code/sess-alpha", "agent:claude-code/sess-beta"]),
    );
    const columns = await p.$$eval(
      "#graph path",
      (paths) =>
        paths.filter((e) => (e.getAttribute("class") ?? "").startsWith("node")).map((e) =>
          Number(/^M([0-9.]+)/.exec(e.getAttribute("d") ?? "")?.[1])
        ),
    );
    assertEquals(new Set(columns).size, 2, "two node columns");
    // Prompt 1 of sess-alpha is the oldest row.
    await press(p, "G");
    assertEquals(await p.textContent("#rows li.sel .pnum"), "#1");
    assertEquals(await p.textContent("#rows li.sel .chip.agent"), "sess-alpha");
    const expected =
      "<script>globalThis.__xss=1</script> rename \\u{202E}gnp.exe\\u{202C}\\u{7}\\u{1B}[31m red";
    assertEquals(await p.textContent("#rows li.sel .ptext"), expected, "the row shows it as text");
    assertEquals(await p.textContent("#prompt .ptext-full"), expected, "the details too");
    assertEquals(
      await p.textContent("#resume .resume-command"),
      "ctxsnap resume --agent-session sess-alpha --prompt 1",
    );
    assertEquals(
      await p.$$eval(
        "#conversation .msg",
        (e) =>
          e.map((
            x,
          ) => [x.querySelector(".role")?.textContent, x.querySelector(".mtext")?.textContent]),
      ),
      [
        ["assistant", "<img src=x onerror=globalThis.__xss=2>"],
        ["tool_use Bash", "rm -rf \\u{202E}/"],
      ],
      "the conversation slice, as text",
    );
    assert((await p.textContent("#conversation"))!.includes("3 more messages not shown"));
    // Its events: the prompt, an Edit with its changed file and diff, a Bash command.
    const kinds = await p.$$eval("#events .event .ekind", (e) => e.map((x) => x.textContent));
    assertEquals(kinds, ["UserPromptSubmit", "PostToolUse", "PostToolUse"]);
    const tools = await p.$$eval("#events .chip.tool", (e) => e.map((x) => x.textContent));
    assertEquals(tools, ["Edit", "Bash"]);
    const command = await p.textContent("#events .command");
    assert(command!.startsWith("deno test -A "), `the Bash command: ${command}`);
    const edited = p.locator("#events .event").nth(1);
    assertEquals(await edited.locator(".fhead .st").first().textContent(), "M");
    await edited.locator(".fhead").first().click();
    const diff = await edited.locator(".fbody").first().textContent();
    assert(diff!.includes("edited by sess-alpha at prompt 1"), `the diff: ${diff}`);
    await screenshot(p, "7-replay-by-prompt");
    await press(p, "Escape", "k");
    assert((await p.textContent("#conversation"))!.includes("No conversation is kept"));
    // m shows the snapshots.
    await press(p, "m");
    assertEquals(await p.$eval("#mode", (e) => (e as HTMLSelectElement).value), "snapshots");
    assertEquals(await p.$$eval("#rows li.prompt", (e) => e.length), 0);
    assert((await p.$$eval("#rows li", (e) => e.length)) >= 12);
    await expectNothingRan(w);
  } finally {
    await browser.close();
    await Deno.remove(root, { recursive: true });
  }
});
