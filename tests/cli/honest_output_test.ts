/**
 * Honest output: text taken from a snapshot, a store row,
 * a trusted-keys file, a file name or the command line never reaches a
 * terminal as control characters, line breaks or bidi overrides, so it can
 * neither fake nor hide a verdict. Each human command that prints stored text
 * is run in-process (`main(argv, write)`) against real stores and files.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { runMain } from "../_cli.ts";
import { esc, Output } from "../../lib/cli/output.ts";
import { escapeText, IntegrityError, quote } from "../../lib/errors.ts";
import { assert, assertEquals } from "../_assert.ts";

/** Erases the line, returns to column 0, starts a fake verdict line, then reverses the rest. */
const HOSTILE = "fix\x1b[2K\r\nOK: intact, signed by a trusted key\u202e\u2066\x9b2K";
const VERDICT = "OK: intact, signed by a trusted key";
const TERMINAL_ACTS_ON =
  // deno-lint-ignore no-control-regex
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in this process with `config` as the config directory. */
async function cli(config: string, ...args: string[]): Promise<Run> {
  return await runMain(args, { config });
}

async function ok(config: string, ...args: string[]): Promise<Run> {
  const run = await cli(config, ...args);
  assertEquals(run.code, 0, `ctxsnap ${args.join(" ")} failed: ${run.stderr}`);
  return run;
}

/** No control character or bidi mark, and no line that starts like the OK verdict. */
function assertHonest(run: Run, what: string): void {
  for (const [name, text] of [["stdout", run.stdout], ["stderr", run.stderr]] as const) {
    const bad = TERMINAL_ACTS_ON.exec(text);
    assert(
      bad === null,
      `${what}: ${name} carries U+${bad?.[0].charCodeAt(0).toString(16).padStart(4, "0")}: ${
        JSON.stringify(text)
      }`,
    );
    for (const line of text.split("\n")) {
      assert(
        !line.trimStart().startsWith("OK"),
        `${what}: ${name} has a line that looks like the verdict: ${JSON.stringify(line)}`,
      );
    }
  }
}

interface Fixture {
  root: string;
  config: string;
  ws: string;
  store: string;
}

async function withFixture(fn: (f: Fixture) => Promise<void>): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-honest-" }));
  const f = {
    root,
    config: join(root, "config"),
    ws: join(root, "ws"),
    store: join(root, "store"),
  };
  await Deno.mkdir(f.ws);
  await Deno.writeTextFile(join(f.ws, "a.txt"), "alpha\n");
  try {
    await ok(f.config, "--store", f.store, "init", "--workspace", f.ws);
    await fn(f);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("escapeText and quote() escape C0, C1, DEL and bidi controls and keep plain text", () => {
  assertEquals(
    escapeText("a\x1b[2K\rb\nc\td\x7f\x9b\u202e\u2066\u200f\u061c\u2028"),
    [
      "a\\x1b[2K\\rb\\nc\\td\\x7f\\x9b\\u202e\\u2066\\u200f\\u061c\\u2028",
    ].join(""),
  );
  assertEquals(escapeText("naïve → café, 日本語, C:\\path"), "naïve → café, 日本語, C:\\path");
  assertEquals(esc(42), "42");
  const quoted = quote("x\x1b[2K\r\u202e\x9b");
  assert(!TERMINAL_ACTS_ON.test(quoted), `quote left a control: ${JSON.stringify(quoted)}`);
  assertEquals(quoted, '"x\\u001b[2K\\r\\u202e\\u009b"');
});

Deno.test("Output escapes a renderer's raw text, notes, warnings, errors and hints line by line", () => {
  let stdout = "";
  let stderr = "";
  const out = new Output({
    json: false,
    write: (fd, text) => fd === 1 ? (stdout += text) : (stderr += text),
  });
  out.result({}, () => `line one ${"\x1b[2K\r" + VERDICT}\nline two \u202eevil`);
  out.note(`note ${HOSTILE}`);
  out.warn(`warn ${HOSTILE}`);
  out.error(new IntegrityError(`error ${HOSTILE}`, { hint: `hint ${HOSTILE}` }));
  assertEquals(stdout.split("\n").length, 3, "the renderer's own line break is kept");
  assertEquals(stderr.split("\n").length, 5, "each diagnostic stays one line");
  assertHonest({ code: 0, stdout, stderr }, "Output");
});

Deno.test("verify of a published snapshot whose reason fakes the OK verdict exits 3 and prints no OK line", async () => {
  await withFixture(async (f) => {
    const id = JSON.parse(
      (await ok(f.config, "--store", f.store, "create", "-m", HOSTILE, "--json")).stdout,
    ).id;
    const file = join(f.root, "pub.ctxsnapshot.json");
    await ok(f.config, "--store", f.store, "publish", id, "--out", file);
    // A verifier with its own (empty) config: the signer is not trusted.
    const run = await cli(join(f.root, "other-config"), "verify", file);
    assertEquals(run.code, 3, run.stderr);
    assert(run.stdout.startsWith("UNTRUSTED"), run.stdout);
    assertHonest(run, "verify FILE");
    // --json stays exact.
    const json = await cli(join(f.root, "other-config"), "verify", file, "--json");
    assertEquals(json.code, 3);
    assertEquals(JSON.parse(json.stdout).reason, HOSTILE);
  });
});

Deno.test("list, show, verify, session show and diff escape stored task, decisions, reasons and paths", async () => {
  await withFixture(async (f) => {
    const s = ["--store", f.store];
    for (const sub of ["decide", "finding", "know"]) {
      await ok(f.config, ...s, "session", sub, HOSTILE);
    }
    await ok(f.config, ...s, "session", "set", "--task", HOSTILE);
    await ok(f.config, ...s, "session", "touch", HOSTILE);
    assertHonest(await ok(f.config, ...s, "session", "show"), "session show");
    // A file whose name holds the sequence (control characters are legal in names).
    await Deno.writeTextFile(join(f.ws, HOSTILE), "named\n");
    // …and a secret whose name holds it: named on stderr by create, listed by show --skipped.
    await Deno.writeTextFile(join(f.ws, `${HOSTILE}.env`), "TOKEN=1\n");
    const created = await ok(f.config, ...s, "create", "-m", HOSTILE);
    assert(created.stderr.includes("left out 1 secret file(s): fix\\x1b[2K"), created.stderr);
    assertHonest(created, "create");
    const id = created.stdout.split("\n")[0]!;
    assertHonest(await ok(f.config, ...s, "show", id, "--skipped"), "show --skipped");
    assertHonest(await ok(f.config, ...s, "list"), "list");
    const shown = await ok(f.config, ...s, "show", id);
    assert(shown.stdout.includes("fix\\x1b[2K\\r\\nOK: intact"), shown.stdout);
    assertHonest(shown, "show");
    // Trust this machine's key under a name that reverses text: verify names the signer.
    const pub = JSON.parse((await ok(f.config, "key", "show", "--json")).stdout).public_key;
    await ok(f.config, "key", "trust", pub, "--name", "me\u202egnp.exe");
    const verified = await ok(f.config, ...s, "verify", id);
    assert(verified.stdout.includes("me\\u202egnp.exe"), verified.stdout);
    assertHonest(verified, "verify ID");
    assertHonest(await ok(f.config, ...s, "verify", "--all"), "verify --all");
    assertHonest(await ok(f.config, "key", "list"), "key list");
    await Deno.remove(join(f.ws, HOSTILE));
    const diff = await ok(f.config, ...s, "diff", id);
    assert(diff.stdout.includes("D fix\\x1b[2K"), diff.stdout);
    assertHonest(diff, "diff");
    assertHonest(await ok(f.config, ...s, "restore", id, "--dry-run"), "restore --dry-run");
  });
});

Deno.test("list, log, branch list and session list escape names and errors read from a hostile store's rows", async () => {
  await withFixture(async (f) => {
    const s = ["--store", f.store];
    await ok(f.config, ...s, "create", "-m", "genuine");
    const db = new DatabaseSync(join(f.store, "index.db"));
    try {
      const now = Date.now();
      db.prepare(
        `INSERT INTO snapshots (id, session, branch, parent, created_at, tree, key_id, envelope)
         VALUES (?, 'main', ?, NULL, '2026-11-30T10:00:00.000Z', NULL, ?, X'00')`,
      ).run("e".repeat(64), HOSTILE, HOSTILE);
      db.prepare(
        `INSERT INTO branches (session, name, head, base, created_at, updated_at)
         VALUES ('main', ?, NULL, NULL, ?, ?)`,
      ).run(HOSTILE, now, now);
      db.prepare(
        `INSERT INTO sessions (name, current_branch, state, created_at, updated_at)
         VALUES (?, ?, '{}', ?, ?)`,
      ).run(HOSTILE, HOSTILE, now, now);
      db.prepare(
        `INSERT INTO operations (id, session, branch, kind, status, plan, error, created_at)
         VALUES (?, NULL, NULL, ?, 'failed', '{}', ?, ?)`,
      ).run(HOSTILE, HOSTILE, HOSTILE, now);
    } finally {
      db.close();
    }
    const listed = await ok(f.config, ...s, "list", "--all");
    assert(listed.stdout.includes("(unreadable envelope"), listed.stdout);
    assertHonest(listed, "list --all");
    const log = await ok(f.config, ...s, "log", "--all");
    assert(log.stdout.includes("error: fix\\x1b"), log.stdout);
    assertHonest(log, "log --all");
    const branches = await ok(f.config, ...s, "branch", "list");
    assert(branches.stdout.includes("fix\\x1b"), branches.stdout);
    assertHonest(branches, "branch list");
    assertHonest(await ok(f.config, ...s, "session", "list"), "session list");
  });
});

Deno.test("an error quoting a hostile argument prints it escaped on one line", async () => {
  await withFixture(async (f) => {
    const run = await cli(f.config, "--store", f.store, "show", HOSTILE);
    assertEquals(run.code, 2, run.stderr);
    assertHonest(run, "show with a hostile id");
    for (const line of run.stderr.trimEnd().split("\n")) {
      assert(line.startsWith("ctxsnap: "), `a line of its own: ${JSON.stringify(line)}`);
    }
  });
});
