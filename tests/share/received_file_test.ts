/**
 * The reviewer's side of a published file: writers never replace evidence,
 * keys paste as text, key mistakes say what was given and what is needed,
 * every kind of tampering gets one verdict, `show FILE` reads a file without
 * a store, and imports say where they went.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "../_assert.ts";
import { expectCode, NEEDS_DENO_PERMISSIONS } from "../_cli.ts";
import {
  createSnap,
  flipped,
  publicKeyHex,
  publish,
  sh,
  tarLayout,
  withMachines,
} from "../_share.ts";

const sameBytes = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

// ---------------------------------------------------------------------------
// never overwrite evidence

Deno.test("timeline --html refuses to replace its own input, even with --force, and the bundle is unchanged", async () => {
  await withMachines([{ "a.txt": "alpha\n" }], async (alice) => {
    const id = await createSnap(alice, "evidence");
    const bundle = await publish(alice, id, "review.ctxbundle", "--with-workspace");
    const before = await Deno.readFile(bundle);
    for (const extra of [[], ["--force"]]) {
      const r = await alice.run(["timeline", "--html", bundle, bundle, ...extra]);
      expectCode(r, 5, `timeline --html X X ${extra.join(" ")}`);
      assert(r.stderr.includes("it is the input of this command"), r.stderr);
    }
    assert(sameBytes(await Deno.readFile(bundle), before), "the bundle changed");
  });
});

Deno.test("timeline --html over a published file is refused with a hint naming the right command; --force replaces it", async () => {
  await withMachines([{ "a.txt": "alpha\n" }], async (alice) => {
    const id = await createSnap(alice, "evidence");
    const bundle = await publish(alice, id, "review.ctxbundle", "--with-workspace");
    const before = await Deno.readFile(bundle);
    // Typed in a store as "show this file as HTML".
    const r = await alice.run(["timeline", "--html", bundle]);
    expectCode(r, 5, "timeline --html BUNDLE");
    assert(r.stderr.includes("it is a ctxsnap bundle, not a ctxsnap timeline page"), r.stderr);
    assert(r.stderr.includes(`ctxsnap timeline --html review.html ${bundle}`), r.stderr);
    assert(sameBytes(await Deno.readFile(bundle), before), "the bundle changed");
    // The file alone, without --html: a usage error whose hint is the command that makes its page.
    const alone = await alice.run(["timeline", bundle]);
    expectCode(alone, 2, "timeline BUNDLE");
    assert(
      alone.stderr.includes(
        `hint: ctxsnap timeline --html ${join(alice.root, "review.html")} ${bundle}`,
      ),
      alone.stderr,
    );
    // Any other file that is not a page is kept too.
    const notes = join(alice.root, "notes.txt");
    await Deno.writeTextFile(notes, "my notes\n");
    expectCode(await alice.run(["timeline", "--html", notes]), 5, "timeline over notes");
    assertEquals(await Deno.readTextFile(notes), "my notes\n");
    // A page replaces a page; --force replaces anything else.
    const page = join(alice.root, "t.html");
    expectCode(await alice.run(["timeline", "--html", page]), 0, "first page");
    expectCode(await alice.run(["timeline", "--html", page]), 0, "page over page");
    expectCode(await alice.run(["timeline", "--html", notes, "--force"]), 0, "--force");
    assert((await Deno.readTextFile(notes)).startsWith("<!DOCTYPE html>"));
  });
});

Deno.test("publish --out refuses to replace a file of another kind unless --force, and replaces its own kind", async () => {
  await withMachines([{ "a.txt": "alpha\n" }], async (alice) => {
    const id = await createSnap(alice, "one");
    const bundle = await publish(alice, id, "x.ctxbundle", "--with-workspace");
    const before = await Deno.readFile(bundle);
    const over = await alice.run(["publish", id, "--out", bundle]); // a snapshot over a bundle
    expectCode(over, 5, "publish snapshot over bundle");
    assert(over.stderr.includes("it is a ctxsnap bundle, not a published snapshot"), over.stderr);
    assert(sameBytes(await Deno.readFile(bundle), before), "the bundle changed");
    const readme = join(alice.root, "README.md");
    await Deno.writeTextFile(readme, "# mine\n");
    expectCode(await alice.run(["publish", id, "--out", readme]), 5, "publish over README");
    assertEquals(await Deno.readTextFile(readme), "# mine\n");
    expectCode(
      await alice.run(["publish", id, "--with-workspace", "--out", bundle]),
      0,
      "bundle over bundle",
    );
    expectCode(await alice.run(["publish", id, "--out", readme, "--force"]), 0, "--force");
    assert((await Deno.readTextFile(readme)).startsWith("{"));
  });
});

// ---------------------------------------------------------------------------
// keys that paste, and errors that explain

Deno.test("PEM text works as a --trust value and as the key trust argument", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "pem");
    const file = await publish(alice, id, "p.ctxbundle", "--with-workspace");
    const pem = (await alice.run(["key", "export"])).stdout;
    assert(pem.startsWith("-----BEGIN PUBLIC KEY-----"), pem);
    const verify = await carol.run(["verify", file, "--trust", pem, "--json"]);
    expectCode(verify, 0, "verify --trust PEM-TEXT");
    assertEquals(verify.json().trusted, true);
    const trusted = await carol.run(["key", "trust", pem, "--name", "alice", "--json"]);
    expectCode(trusted, 0, "key trust PEM-TEXT");
    assertEquals(trusted.json().name, "alice");
    expectCode(await carol.run(["verify", file]), 0, "verify after key trust");
  });
});

Deno.test("key mistakes name what was given and what is needed, with one exit status per kind", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, { "b.txt": "b\n" }], async (alice, bob) => {
    const id = await createSnap(alice, "keys");
    const file = await publish(alice, id, "k.ctxsnapshot.json");
    const keyId = (await alice.run(["key", "show", "--json"])).json().key_id as string;
    const bobKey = await publicKeyHex(bob);
    // A key id where the full key is needed: 7.
    const byId = await bob.run(["verify", file, "--trust", keyId]);
    expectCode(byId, 7, "--trust KEY-ID");
    assert(
      byId.stderr.includes(`"${keyId}" is a key id`) && byId.stderr.includes("full public key"),
      byId.stderr,
    );
    expectCode(await bob.run(["key", "trust", keyId]), 7, "key trust KEY-ID");
    // A wrong key: 3, saying that the pinned key is not the signer.
    const wrong = await bob.run(["verify", file, "--trust", bobKey]);
    expectCode(wrong, 3, "--trust WRONG");
    assert(wrong.stderr.includes("is not the signer"), wrong.stderr);
    // A key file where a trusted-keys file is expected: 7, naming both.
    const pemFile = join(alice.root, "alice.pub.pem");
    await Deno.writeTextFile(pemFile, (await alice.run(["key", "export"])).stdout);
    const keysFile = await bob.run(["verify", file, "--trusted-keys", pemFile]);
    expectCode(keysFile, 7, "--trusted-keys PEM");
    assert(
      keysFile.stderr.includes("holds a public key, but a trusted-keys file"),
      keysFile.stderr,
    );
    assert(keysFile.stderr.includes("--trust FILE"), keysFile.stderr);
    assert(!keysFile.stderr.includes("fix or remove"), keysFile.stderr);
    // A trusted-keys file where one key is expected: 7.
    const tk = join(bob.configDir, "trusted_keys.json");
    expectCode(await bob.run(["key", "trust", pemFile, "--name", "alice"]), 0, "key trust FILE");
    const jsonAsKey = await bob.run(["verify", file, "--trust", tk]);
    expectCode(jsonAsKey, 7, "--trust KEYS-FILE");
    assert(jsonAsKey.stderr.includes("--trusted-keys FILE"), jsonAsKey.stderr);
    // No such key file: 4. Bad PEM text: 7, never echoed.
    expectCode(await bob.run(["verify", file, "--trust", "alice.pem"]), 4, "--trust MISSING");
    const bad = await bob.run([
      "verify",
      file,
      "--trust",
      "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----",
    ]);
    expectCode(bad, 7, "--trust PRIVATE-PEM");
    assert(bad.stderr.includes('"PRIVATE KEY"') && !bad.stderr.includes("MC4CAQ"), bad.stderr);
  });
});

Deno.test({
  name: "verify FILE under Deno with --allow-read only warns that pinned keys cannot be read",
  ignore: NEEDS_DENO_PERMISSIONS,
}, async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "env");
    const file = await publish(alice, id, "e.ctxsnapshot.json");
    const r = await carol.run(["verify", file], { permissions: ["--no-prompt", "--allow-read"] });
    expectCode(r, 3, "untrusted without the config dir");
    assert(r.stderr.includes("warning: cannot read the environment"), r.stderr);
    assert(r.stderr.includes("keys pinned there are not used"), r.stderr);
  });
});

// ---------------------------------------------------------------------------
// one tamper verdict

Deno.test("every kind of tampering prints the same TAMPERED headline, hint and --json shape", async () => {
  await withMachines(
    [{ "a.txt": "alpha\n", "b.txt": "bravo\n" }, "no-store"],
    async (alice, carol) => {
      const id = await createSnap(alice, "tamper");
      const key = await publicKeyHex(alice);
      const bundle = await publish(alice, id, "t.ctxbundle", "--with-workspace");
      const snapshot = await publish(alice, id, "t.ctxsnapshot.json");
      const bytes = await Deno.readFile(bundle);
      const layout = tarLayout(bytes);
      const blob = layout.members.find((m) => m.name.startsWith("blobs/"))!;
      const envelope = JSON.parse(await Deno.readTextFile(snapshot));
      const sig = envelope.signature.value as string;
      envelope.signature.value = (sig[0] === "0" ? "1" : "0") + sig.slice(1);
      const cases: [string, Uint8Array, string, string][] = [
        ["blob", flipped(bytes, blob.data), "blob_hash", blob.name],
        [
          "signature",
          new TextEncoder().encode(JSON.stringify(envelope)),
          "signature",
          `snapshot ${id}`,
        ],
      ];
      for (const [what, tampered, check, at] of cases) {
        const path = join(carol.root, `${what}.tampered`);
        await Deno.writeFile(path, tampered);
        const text = await carol.run(["verify", path, "--trust", key]);
        expectCode(text, 1, `verify ${what}`);
        assert(text.stdout.startsWith(`TAMPERED: ${at}: the ${check} check failed`), text.stdout);
        assert(text.stderr.includes("ctxsnap: hint: do not use this file"), text.stderr);
        const json = await carol.run(["verify", path, "--trust", key, "--json"]);
        expectCode(json, 1, `verify ${what} --json`);
        const doc = json.json();
        assertEquals(
          [doc.verdict, doc.valid, doc.trusted, doc.failed_check, doc.at],
          ["tampered", false, false, check, at],
        );
        assertEquals(doc.error.exit, 1);
        assert(doc.error.hint.startsWith("do not use this file"), JSON.stringify(doc));
        assert(!("reason" in doc) && !("created_at" in doc), JSON.stringify(doc));
      }
    },
  );
});

// ---------------------------------------------------------------------------
// inspect without a store; where imports went

/** Alice records two steps with decisions and findings and publishes the history as a bundle. */
async function reviewBundle(
  alice: Awaited<ReturnType<typeof import("../_share.ts").machine>>,
): Promise<{ bundle: string; pem: string; ids: string[] }> {
  expectCode(await alice.run(["session", "set", "--task", "fix the parser"]), 0, "task");
  const first = await createSnap(alice, "first");
  expectCode(await alice.run(["session", "decide", "keep the old API"]), 0, "decide");
  expectCode(await alice.run(["session", "finding", "the lexer is quadratic"]), 0, "finding");
  await Deno.writeTextFile(join(alice.path, "a.txt"), "alpha\nbeta\n");
  await Deno.writeTextFile(join(alice.path, ".env"), "TOKEN=x\n");
  const second = await createSnap(alice, "second");
  const bundle = await publish(
    alice,
    second,
    "review.ctxbundle",
    "--with-workspace",
    "--history",
    "all",
  );
  const pem = join(alice.root, "alice.pub.pem");
  await Deno.writeTextFile(pem, (await alice.run(["key", "export"])).stdout);
  return { bundle, pem, ids: [first, second] };
}

Deno.test("show FILE verifies a bundle and prints its context, git anchor, files, what was left out and each step's changes, with no store", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const { bundle, pem, ids } = await reviewBundle(alice);
    const r = await carol.run(["show", bundle, "--trust", pem]);
    expectCode(r, 0, "show FILE");
    const out = r.stdout;
    assert(out.startsWith("OK: intact, signed by a trusted key"), out);
    for (
      const want of [
        `snapshot   ${ids[1]}`,
        "task       fix the parser",
        "  - keep the old API",
        "  - the lexer is quadratic",
        "files (1):",
        "a.txt",
        "left out (",
        ".env",
        "history (2, oldest first):",
        "+ decision: keep the old API",
        "+ finding: the lexer is quadratic",
        "files: ~a.txt",
      ]
    ) assert(out.includes(want), `missing ${JSON.stringify(want)} in\n${out}`);
    const json = (await carol.run(["show", bundle, "--trust", pem, "--json"])).json();
    assertEquals(json.steps.map((s: { id: string }) => s.id), ids);
    assertEquals(json.steps[1].context_added.decisions, ["keep the old API"]);
    assert(json.skipped.some((s: { path: string; reason: string }) => s.path === ".env"));
    const skipped = await carol.run(["show", bundle, "--skipped", "--trust", pem, "--json"]);
    expectCode(skipped, 0, "show FILE --skipped");
    assert(skipped.json().skipped.some((s: { path: string }) => s.path === ".env"));
    // Untrusted: still readable, labelled, exit 3. Tampered: nothing shown, exit 1.
    const untrusted = await carol.run(["show", bundle]);
    expectCode(untrusted, 3, "show FILE untrusted");
    assert(untrusted.stdout.startsWith("UNTRUSTED"), untrusted.stdout);
    const bytes = await Deno.readFile(bundle);
    const blob = tarLayout(bytes).members.find((m) => m.name.startsWith("blobs/"))!;
    const bad = join(carol.root, "bad.ctxbundle");
    await Deno.writeFile(bad, flipped(bytes, blob.data));
    const tampered = await carol.run(["show", bad, "--trust", pem]);
    expectCode(tampered, 1, "show tampered");
    assert(tampered.stdout.startsWith("TAMPERED: blobs/"), tampered.stdout);
    assert(!tampered.stdout.includes("keep the old API"), tampered.stdout);
    // A published snapshot whose signature was changed: the tamper verdict only, as for a bundle.
    const published = await publish(alice, ids[1]!, "sig.ctxsnapshot.json");
    const envelope = JSON.parse(await Deno.readTextFile(published));
    const sig = envelope.signature.value as string;
    envelope.signature.value = (sig[0] === "0" ? "1" : "0") + sig.slice(1);
    const forged = join(carol.root, "forged.ctxsnapshot.json");
    await Deno.writeTextFile(forged, JSON.stringify(envelope));
    const badSig = await carol.run(["show", forged, "--trust", pem]);
    expectCode(badSig, 1, "show a snapshot file with a changed signature");
    assert(badSig.stdout.startsWith("TAMPERED: "), badSig.stdout);
    assert(!badSig.stdout.includes("keep the old API"), badSig.stdout);
    // verify's text names the branch and the skipped count.
    const v = await carol.run(["verify", bundle, "--trust", pem]);
    assert(/timeline main\/main/.test(v.stdout) && /\d+ left out/.test(v.stdout), v.stdout);
  });
});

Deno.test("verify FILE reports the reserved .git and .ctxsnap apart from what the capture left out, in text and --json", async () => {
  await withMachines([{ "a.txt": "alpha\n", ".env": "TOKEN=1\n" }], async (alice) => {
    await Deno.mkdir(join(alice.path, ".git"));
    await Deno.writeTextFile(join(alice.path, ".git", "HEAD"), "ref: refs/heads/main\n");
    const id = await createSnap(alice, "reserved");
    const skipped = (await alice.run(["show", id, "--skipped", "--json"])).json().skipped as {
      reason: string;
    }[];
    const reserved = skipped.filter((s) => s.reason === "reserved").length;
    assert(reserved >= 2 && skipped.length === reserved + 1, JSON.stringify(skipped));
    // A bundle holds the tree: one left out (.env), the reserved names counted apart.
    const bundle = await publish(alice, id, "r.ctxbundle", "--with-workspace");
    const v = await alice.run(["verify", bundle]);
    expectCode(v, 0, "verify bundle");
    assert(v.stdout.includes(`; 1 left out (`), v.stdout);
    assert(v.stdout.includes(`, ${reserved} reserved (.git, .ctxsnap`), v.stdout);
    assert(!v.stdout.includes(`${skipped.length} left out`), v.stdout);
    const json = (await alice.run(["verify", bundle, "--json"])).json();
    assertEquals([json.workspace.skipped, json.reserved_skipped], [skipped.length, reserved]);
    const batch = (await alice.run(["verify", bundle, bundle, "--json"])).json();
    assertEquals(batch.results[0].result.reserved_skipped, reserved);
    const shown = await alice.run(["show", bundle]);
    assert(shown.stdout.includes("1 left out"), shown.stdout);
    assertEquals((await alice.run(["show", bundle, "--json"])).json().reserved_skipped, reserved);
    // A published envelope holds no tree: the count is not called "left out".
    const published = await publish(alice, id, "r.ctxsnapshot.json");
    const p = await alice.run(["verify", published]);
    expectCode(p, 0, "verify published");
    assert(!/\d+ left out/.test(p.stdout), p.stdout);
    assert(p.stdout.includes(`${skipped.length} skipped (left out, or reserved`), p.stdout);
    assertEquals((await alice.run(["verify", published, "--json"])).json().reserved_skipped, null);
  });
});

Deno.test("import says where snapshots landed and that --trust was for this run; list points there and rows show the real branch", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, {}], async (alice, bob) => {
    const { bundle, pem } = await reviewBundle(alice);
    const keyId = (await alice.run(["key", "show", "--json"])).json().key_id as string;
    const imported = await bob.run(["import", bundle, "--trust", pem]);
    expectCode(imported, 0, "import");
    assert(imported.stdout.includes(`onto main/imported/${keyId}`), imported.stdout);
    assert(imported.stdout.includes(`ctxsnap list --branch imported/${keyId}`), imported.stdout);
    assert(imported.stdout.includes("--trust applied to this import only"), imported.stdout);
    const listed = await bob.run(["list"]);
    expectCode(listed, 0, "list");
    assert(listed.stdout.includes(`ctxsnap list --branch imported/${keyId}`), listed.stdout);
    const all = await bob.run(["list", "--all"]);
    assert(all.stdout.includes(`main/imported/${keyId}`), all.stdout);
    assert(!all.stdout.includes("main/main"), all.stdout);
    const json = (await bob.run(["list", "--all", "--json"])).json();
    assert(json.snapshots.length === 2 && json.on.length === 2, JSON.stringify(json));
    for (const entry of json.on) assertEquals(entry.branches, [`main/imported/${keyId}`]);
    assertEquals(json.snapshots[0].branch, "main", "each row keeps the branch its author recorded");
  });
});

Deno.test("a reviewer goes from a received bundle to its decisions and diffs in three commands, offline, with no store", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const { bundle, pem } = await reviewBundle(alice);
    // 1. Is it intact, and from Alice?
    expectCode(await carol.run(["verify", bundle, "--trust", pem]), 0, "verify");
    // 2. Her decisions and findings, step by step, with every text diff.
    const read = await carol.run(["show", bundle, "--patch", "--trust", pem]);
    expectCode(read, 0, "show --patch");
    assert(read.stdout.includes("+ decision: keep the old API"), read.stdout);
    assert(read.stdout.includes("--- a/a.txt") && read.stdout.includes("+beta"), read.stdout);
    // 3. The same as one page to keep.
    const page = join(carol.root, "review.html");
    expectCode(await carol.run(["timeline", "--html", page, bundle, "--trust", pem]), 0, "page");
    assert((await Deno.readTextFile(page)).includes("keep the old API"));
    // Nothing was created but the page: no store, no config.
    const made = [...Deno.readDirSync(carol.path)].map((e) => e.name);
    assertEquals(made, []);
  });
});

Deno.test("content is authenticated, bytes are not: a bundle cut inside the zero padding after its end-of-archive marker verifies, a cut before it is TAMPERED", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "padding");
    const key = await publicKeyHex(alice);
    const bytes = await Deno.readFile(await publish(alice, id, "p.ctxbundle", "--with-workspace"));
    const layout = tarLayout(bytes);
    const marker = layout.marker; // offset of the two zero blocks that end the archive
    const cases: [string, Uint8Array, number][] = [
      ["cut inside the padding after the marker", bytes.subarray(0, marker + 1024 + 512), 0],
      ["cut at the end of the marker", bytes.subarray(0, marker + 1024), 0],
      ["cut inside the marker", bytes.subarray(0, marker + 512), 1],
      ["cut before the marker", bytes.subarray(0, marker - 1), 1],
    ];
    assert(bytes.length > marker + 1024 + 512, `no padding after the marker: ${bytes.length}`);
    for (const [what, cut, exit] of cases) {
      const file = join(carol.root, "cut.ctxbundle");
      await Deno.writeFile(file, cut);
      const r = await carol.run(["verify", file, "--trust", key]);
      expectCode(r, exit, what);
      if (exit === 1) assert(r.stdout.startsWith("TAMPERED: "), r.stdout);
    }
  });
});

/** The key problems table of docs/CLI.md: kind -> documented exit status (or null for a warning). */
async function keyProblemsTable(): Promise<Map<string, number | null>> {
  const text = await Deno.readTextFile(new URL("../../docs/CLI.md", import.meta.url));
  const start = text.indexOf("**Key problems.**");
  assert(start >= 0, "docs/CLI.md has no key problems table");
  const table = new Map<string, number | null>();
  for (const line of text.slice(start).split("\n").slice(1)) {
    if (table.size > 0 && !line.startsWith("|")) break;
    const cells = line.split("|").map((c) => c.trim());
    if (cells.length < 4 || cells[1] === "kind" || cells[1]!.startsWith("-")) continue;
    const exit = cells.at(-2)!;
    table.set(cells[1]!, exit === "—" ? null : Number(exit));
  }
  return table;
}

Deno.test("every kind of key problem exits as docs/CLI.md's key problems table says", async () => {
  const table = await keyProblemsTable();
  assertEquals([...table.keys()].sort(), [
    "no-config-dir",
    "no-such-file",
    "not-a-key",
    "unreadable",
    "wrong-file",
    "wrong-key",
  ]);
  await withMachines([{ "a.txt": "alpha\n" }, { "b.txt": "b\n" }], async (alice, bob) => {
    const id = await createSnap(alice, "table");
    const file = await publish(alice, id, "t.ctxsnapshot.json");
    const keyId = (await alice.run(["key", "show", "--json"])).json().key_id as string;
    const pemFile = join(alice.root, "alice.pub.pem");
    await Deno.writeTextFile(pemFile, (await alice.run(["key", "export"])).stdout);
    const exposed = join(bob.root, "exposed.json");
    await Deno.writeTextFile(exposed, '{"version":1,"keys":[]}\n');
    await Deno.chmod(exposed, 0o666);
    const runs: [string, string[]][] = [
      ["not-a-key", ["verify", file, "--trust", keyId]],
      ["not-a-key", ["key", "trust", "abcd"]],
      ["wrong-file", ["verify", file, "--trusted-keys", pemFile]],
      ["no-such-file", ["verify", file, "--trust", join(bob.root, "nope.pem")]],
      ["no-such-file", ["verify", file, "--trusted-keys", join(bob.root, "nope.json")]],
      ["wrong-key", ["verify", file, "--trust", await publicKeyHex(bob)]],
      ["unreadable", ["verify", file, "--trusted-keys", exposed]],
    ];
    for (const [kind, args] of runs) {
      const r = await bob.run(args);
      expectCode(r, table.get(kind)!, `${kind}: ${args.join(" ")}`);
    }
  });
});

Deno.test({
  name:
    "show FILE needs only read access: it runs under Deno with --allow-read alone, and reads standard input",
  ignore: NEEDS_DENO_PERMISSIONS,
}, async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const { bundle, ids } = await reviewBundle(alice);
    const key = await publicKeyHex(alice);
    const r = await carol.run(["show", bundle, "--trust", key, "--json"], {
      permissions: ["--no-prompt", `--allow-read=${bundle}`],
    });
    expectCode(r, 0, "show FILE with --allow-read of that file only");
    assertEquals(r.json().steps.map((s: { id: string }) => s.id), ids);
    const stdin = await carol.run(["show", "-", "--trust", key], {
      permissions: ["--no-prompt"],
      stdin: await Deno.readFile(bundle),
    });
    expectCode(stdin, 0, "show - with no permission at all");
    assert(stdin.stdout.includes("+ decision: keep the old API"), stdin.stdout);
  });
});

Deno.test("timeline and import of a tampered file end with the same TAMPERED verdict and hint as verify, writing nothing; import with the wrong --trust key says it is not the signer", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, {}], async (alice, bob) => {
    const id = await createSnap(alice, "tampered elsewhere");
    const key = await publicKeyHex(alice);
    const bytes = await Deno.readFile(await publish(alice, id, "x.ctxbundle", "--with-workspace"));
    const blob = tarLayout(bytes).members.find((m) => m.name.startsWith("blobs/"))!;
    const bad = join(bob.root, "bad.ctxbundle");
    await Deno.writeFile(bad, flipped(bytes, blob.data));
    const page = join(bob.root, "bad.html");
    const runs = [
      await bob.run(["timeline", "--html", page, bad, "--trust", key]),
      await bob.run(["import", bad, "--trust", key]),
    ];
    for (const r of runs) {
      expectCode(r, 1, r.stderr);
      assert(r.stderr.includes(`${bad} is TAMPERED at ${blob.name}`), r.stderr);
      assert(r.stderr.includes("ctxsnap: hint: do not use this file"), r.stderr);
    }
    assertEquals(await Deno.stat(page).then(() => true, () => false), false, "a page was written");
    const good = join(bob.root, "good.ctxbundle");
    await Deno.writeFile(good, bytes);
    const wrong = await bob.run(["import", good, "--trust", await publicKeyHex(bob)]);
    expectCode(wrong, 3, "import --trust WRONG");
    assert(wrong.stderr.includes("is not the signer"), wrong.stderr);
    const list = await bob.run(["list", "--all", "--json"]);
    assertEquals(list.json().snapshots, [], "a refused import wrote something");
  });
});

Deno.test("show FILE of a published snapshot prints its git commit and branch and context, and says which parts only a bundle carries", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const git = (...args: string[]) =>
      sh("git", ["-c", "user.name=a", "-c", "user.email=a@example.com", ...args], alice.path);
    await git("init", "-q", "-b", "feature/review");
    await git("add", "a.txt");
    await git("commit", "-q", "-m", "one");
    const commit = (await git("rev-parse", "HEAD")).trim();
    expectCode(await alice.run(["session", "decide", "ship it"]), 0, "decide");
    const id = await createSnap(alice, "envelope only");
    const file = await publish(alice, id, "e.ctxsnapshot.json");
    const key = await publicKeyHex(alice);
    const r = await carol.run(["show", file, "--trust", key]);
    expectCode(r, 0, "show SNAPSHOT-FILE");
    assert(r.stdout.includes(`git        ${commit} feature/review`), r.stdout);
    assert(r.stdout.includes("  - ship it"), r.stdout);
    assert(r.stdout.includes("not in this file"), r.stdout);
    const skipped = await carol.run(["show", file, "--skipped", "--trust", key, "--json"]);
    expectCode(skipped, 0, "show SNAPSHOT-FILE --skipped");
    assertEquals([skipped.json().tree_included, skipped.json().skipped], [false, null]);
    assert(skipped.json().skipped_count >= 1, JSON.stringify(skipped.json()));
    const v = await carol.run(["verify", file, "--trust", key]);
    assert(v.stdout.includes(`git      ${commit} feature/review`), v.stdout);
  });
});

Deno.test("show FILE prints a received file's hostile text escaped, so it cannot paint a verdict", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    // A newline too: each line the renderer writes is escaped again, but a raw newline would
    // still start a line of its own.
    const fake =
      "x\x1b[2K\rOK: intact, signed by a trusted key\u202e\nOK: intact, signed by a trusted key";
    expectCode(await alice.run(["session", "set", "--task", fake]), 0, "task");
    expectCode(await alice.run(["session", "decide", fake]), 0, "decide");
    await Deno.writeTextFile(join(alice.path, "n\x1b[2Kame.txt"), "x\n");
    const id = await createSnap(alice, fake);
    const file = await publish(alice, id, "h.ctxbundle", "--with-workspace");
    for (const extra of [[], ["--patch"], ["--skipped"]]) {
      const r = await carol.run(["show", file, ...extra]); // untrusted: exit 3
      expectCode(r, 3, `show ${extra.join(" ")}`);
      assert(r.stdout.startsWith("UNTRUSTED"), r.stdout);
      for (const bad of ["\x1b", "\r", "\u202e"]) {
        assert(
          !r.stdout.includes(bad),
          `raw ${JSON.stringify(bad)} in ${JSON.stringify(r.stdout)}`,
        );
      }
      assertEquals(r.stdout.split("\n").filter((l) => l.startsWith("OK")), []);
    }
  });
});

Deno.test("show HEAD and show BRANCH name snapshots even where the workspace holds files of those names; ./NAME reads the file", async () => {
  await withMachines([{ "a.txt": "alpha\n" }], async (alice) => {
    const older = await createSnap(alice, "older");
    // A repository commits files named like revisions, holding another published file.
    const bundle = await publish(alice, older, "planted.ctxbundle", "--with-workspace");
    await Deno.writeTextFile(join(alice.path, "a.txt"), "beta\n");
    const id = await createSnap(alice, "mine");
    for (const name of ["HEAD", "main"]) {
      await Deno.copyFile(bundle, join(alice.path, name));
      const r = await alice.run(["show", name, "--json"]);
      expectCode(r, 0, `show ${name}`);
      assertEquals(r.json().id, id, `show ${name} showed the file, not the snapshot`);
    }
    const file = await alice.run(["show", "./HEAD"]);
    expectCode(file, 0, "show ./HEAD (a file, signed by this machine)");
    assert(/^file +\.\/HEAD /m.test(file.stdout), file.stdout);
  });
});
