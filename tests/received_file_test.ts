/**
 * The reviewer's side of a published file: writers never replace evidence,
 * keys paste as text, key mistakes say what was given and what is needed,
 * every kind of tampering gets one verdict, `show FILE` reads a file without
 * a store, and imports say where they went.
 *
 * @module
 */
import { join } from "node:path";
import { assert, assertEquals } from "./_assert.ts";
import { expectCode, NEEDS_DENO_PERMISSIONS } from "./_cli.ts";
import { createSnap, flipped, publicKeyHex, publish, tarLayout, withMachines } from "./_share.ts";

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
        assert(!("error" in doc) && !("reason" in doc), JSON.stringify(doc));
      }
    },
  );
});
