/**
 * Tests of sharing: `publish`, `verify FILE|-` and
 * `import`, with real stores, real CLI subprocesses, real GNU tar and
 * `script(1)` for a terminal. Every machine is a separate temp workspace with
 * its own CTXSNAP_CONFIG_DIR and HOME (so its own identity and trusted keys).
 *
 * The "every single-byte change" sweeps run in-process through
 * `verifyStream` (the function `verify FILE` and the first pass of `import`
 * use) and check a sample of the same changes through the CLI.
 *
 * @module
 */
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { Store } from "../../lib/repository/store.ts";
import { createSnapshot } from "../../lib/history/create.ts";
import { publishToFile } from "../../lib/share/publish.ts";
import { importFile } from "../../lib/share/import.ts";
import { dirname, join, relative } from "node:path";
import { sign } from "../../lib/crypto/ed25519.ts";
import { encodeHeader } from "../../lib/format/_tar_header.ts";
import { MAX_MEMBER_BYTES } from "../../lib/format/tar.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { IntegrityError } from "../../lib/errors.ts";
import { toHex } from "../../lib/encoding/hex.ts";
import { type Envelope, signBody, signingMessage, snapshotId } from "../../lib/format/envelope.ts";
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { cliCommand, expectCode, NEEDS_DENO_PERMISSIONS, type TempWorkspace } from "../_cli.ts";
import { exists } from "../_util.ts";
import {
  createSnap,
  decoder,
  encoder,
  flipped,
  machineEnv,
  manifestOf,
  newSigner,
  prettyEnvelope,
  publicKeyHex,
  publish,
  rebundle,
  REFUSED,
  runRaw,
  sh,
  sortedJson,
  storeState,
  tarLayout,
  verdict,
  withMachines,
} from "../_share.ts";

const BIG_BYTES = 1536 * 1024 + 17; // > 1 MiB: stored as a file-backed blob

/** Fills machine A's workspace with nested dirs, a symlink, modes, a big and an empty file. */
async function fillRichWorkspace(ws: TempWorkspace): Promise<void> {
  const p = (rel: string) => join(ws.path, rel);
  await Deno.mkdir(p("src/lib/deep"), { recursive: true });
  await Deno.mkdir(p("bin"));
  await Deno.mkdir(p("docs"));
  await Deno.writeTextFile(p("README.md"), "# rich workspace\n");
  await Deno.writeTextFile(p("src/lib/deep/nested.ts"), "export const deep = 42;\n");
  await Deno.writeTextFile(p("src/main.ts"), "import { deep } from './lib/deep/nested.ts';\n");
  await Deno.writeTextFile(p("bin/run.sh"), "#!/bin/sh\necho run\n");
  await Deno.chmod(p("bin/run.sh"), 0o755);
  await Deno.writeTextFile(p("private.txt"), "owner only\n");
  await Deno.chmod(p("private.txt"), 0o600);
  await Deno.writeFile(p("empty.txt"), new Uint8Array(0));
  const big = new Uint8Array(BIG_BYTES);
  for (let at = 0; at < big.length; at += 65536) {
    crypto.getRandomValues(big.subarray(at, Math.min(at + 65536, big.length)));
  }
  await Deno.writeFile(p("data/big.bin"), big).catch(async () => {
    await Deno.mkdir(p("data"));
    await Deno.writeFile(p("data/big.bin"), big);
  });
  await Deno.symlink("../README.md", p("docs/readme-link"));
  await Deno.symlink("src/main.ts", p("main-link"));
}

/** Every entry below `dir` except `.ctxsnap`: path → kind, mode, content hash or link target. */
async function describeTree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (at: string): Promise<void> => {
    for await (const entry of Deno.readDir(at)) {
      const full = join(at, entry.name);
      const rel = relative(dir, full);
      if (rel === ".ctxsnap") continue;
      const info = await Deno.lstat(full);
      if (info.isSymlink) out.set(rel, `symlink -> ${await Deno.readLink(full)}`);
      else if (info.isDirectory) {
        out.set(rel, "dir");
        await walk(full);
      } else {
        const data = await Deno.readFile(full);
        out.set(
          rel,
          `file mode ${(info.mode! & 0o777).toString(8)} ${data.length} bytes ${sha256Hex(data)}`,
        );
      }
    }
  };
  await walk(dir);
  return out;
}

// ---------------------------------------------------------------------------
// publish → import → restore on another machine

Deno.test("a bundle imported on another machine restores the workspace byte for byte (dirs, symlinks, modes, > 1 MiB, empty)", async () => {
  await withMachines([{}, {}], async (alice, bob) => {
    await fillRichWorkspace(alice);
    const id = await createSnap(alice, "rich");
    const bundle = await publish(alice, id, "rich.ctxbundle", "--with-workspace");
    const key = await publicKeyHex(alice);

    // Bob has his own identity: Alice's key is not his.
    const bobKey = await publicKeyHex(bob);
    assert(bobKey !== key, "the two machines share a key");

    const verify = await bob.run(["verify", bundle, "--trust", key, "--json"]);
    expectCode(verify, 0, "verify on bob");
    assertEquals(verify.json().with_workspace, true);

    const imported = await bob.run(["import", bundle, "--trust", key, "--json"]);
    expectCode(imported, 0, "import on bob");
    assertEquals(imported.json().imported, [id]);
    assertEquals(imported.json().with_workspace, true);

    const restore = await bob.run(["restore", id, "--json"]);
    expectCode(restore, 0, "restore on bob");

    const want = await describeTree(alice.path);
    const got = await describeTree(bob.path);
    // The fixture really has what the test is about.
    assert(want.get("data/big.bin")?.includes(` ${BIG_BYTES} bytes `), want.get("data/big.bin"));
    assert(want.get("empty.txt")?.includes(" 0 bytes "), want.get("empty.txt"));
    assert(want.get("bin/run.sh")?.startsWith("file mode 755"), want.get("bin/run.sh"));
    assert(want.get("private.txt")?.startsWith("file mode 600"), want.get("private.txt"));
    assertEquals(want.get("docs/readme-link"), "symlink -> ../README.md");
    assertEquals(want.get("src/lib/deep"), "dir");
    assertEquals(Object.fromEntries([...got].sort()), Object.fromEntries([...want].sort()));

    // And Bob's store passes a full verification with Alice's key pinned.
    const all = await bob.run(["verify", "--all", "--trust", key, "--json"]);
    expectCode(all, 0, "verify --all on bob");
  });
});

Deno.test("publish --with-workspace --out - to a pipe streams a bundle that import - accepts on another machine", async () => {
  await withMachines([{ "a.txt": "alpha\n", "d/b.txt": "bravo\n" }, {}], async (alice, bob) => {
    const id = await createSnap(alice, "piped");
    const out = await runRaw(alice, ["publish", id, "--with-workspace", "--out", "-"]);
    assertEquals(out.code, 0, `publish --out -: ${out.stderr}`);
    assertEquals(decoder.decode(out.stdout.subarray(257, 262)), "ustar");
    assertEquals(out.stdout.length % 512, 0);

    const key = await publicKeyHex(alice);
    const verify = await runRaw(bob, ["verify", "-", "--trust", key, "--json"], out.stdout);
    assertEquals(verify.code, 0, `verify -: ${verify.stderr}`);
    const doc = JSON.parse(decoder.decode(verify.stdout));
    assertEquals([doc.kind, doc.primary, doc.valid, doc.trusted], ["bundle", id, true, true]);

    const imported = await runRaw(bob, ["import", "-", "--trust", key, "--json"], out.stdout);
    assertEquals(imported.code, 0, `import -: ${imported.stderr}`);
    assertEquals(JSON.parse(decoder.decode(imported.stdout)).imported, [id]);
    expectCode(await bob.run(["restore", id, "--files"]), 0, "restore --files");
    assertEquals(await Deno.readTextFile(join(bob.path, "d/b.txt")), "bravo\n");
  });
});

const hasScript = (() => {
  try {
    return new Deno.Command("script", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();

Deno.test({
  name: "publish --out - refuses to write a bundle to a terminal (exit 2) but prints an envelope",
  ignore: !hasScript,
  async fn() {
    await withMachines([{ "a.txt": "alpha\n" }], async (alice) => {
      const id = await createSnap(alice, "tty");
      const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
      const inTerminal = async (args: string[]) => {
        const command = cliCommand(args).map(quote)
          .join(" ");
        const out = await new Deno.Command("script", {
          args: ["-qec", command, "/dev/null"],
          cwd: alice.path,
          env: { ...machineEnv(alice), SHELL: "/bin/sh", TERM: "dumb" },
          clearEnv: true,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        }).output();
        return { code: out.code, text: decoder.decode(out.stdout) + decoder.decode(out.stderr) };
      };
      const bundle = await inTerminal(["publish", id, "--with-workspace", "--out", "-"]);
      assertEquals(bundle.code, 2, bundle.text);
      assert(/terminal/i.test(bundle.text), bundle.text);
      assert(!bundle.text.includes("ustar"), "tar bytes reached the terminal");

      const envelope = await inTerminal(["publish", id, "--out", "-"]);
      assertEquals(envelope.code, 0, envelope.text);
      assert(envelope.text.includes(id), envelope.text);
    });
  },
});

// ---------------------------------------------------------------------------
// every single-byte change is refused

Deno.test("truncated bundles and bundles with trailing garbage are refused (exit 1) by verify and import", async () => {
  await withMachines([{ "a.txt": "alpha\n", "b.txt": "bravo\n" }, {}], async (alice, bob) => {
    const id = await createSnap(alice, "truncate");
    const file = await publish(alice, id, "t.ctxbundle", "--with-workspace");
    const key = await publicKeyHex(alice);
    const bytes = await Deno.readFile(file);
    const { marker } = tarLayout(bytes);
    const keyId = (await bob.run(["verify", file, "--trust", key, "--json"])).json().signer.key_id;

    // In-process: every cut before the end of the end-of-archive marker is refused.
    const failures: string[] = [];
    for (let cut = 0; cut < marker + 1024; cut += cut < 1536 ? 1 : 97) {
      const v = await verdict(bytes.subarray(0, cut), keyId);
      if (!REFUSED.has(v)) failures.push(`cut at ${cut}: ${v}`);
    }
    assertEquals(failures.slice(0, 20), [], `${failures.length} truncations accepted`);

    const garbage = (extra: Uint8Array) => {
      const out = new Uint8Array(bytes.length + extra.length);
      out.set(bytes);
      out.set(extra, bytes.length);
      return out;
    };
    const oneNonZero = new Uint8Array(4096);
    oneNonZero[4000] = 1;
    const cases: [string, Uint8Array][] = [
      ["cut inside a header", bytes.subarray(0, 700)],
      ["cut inside the last blob", bytes.subarray(0, layout(bytes).lastData + 1)],
      ["cut before the end marker", bytes.subarray(0, marker)],
      ["cut inside the end marker", bytes.subarray(0, marker + 600)],
      ["text appended", garbage(encoder.encode("trailing garbage\n"))],
      ["a non-zero byte deep in appended zeros", garbage(oneNonZero)],
      ["a second copy of the archive appended", garbage(bytes)],
      ["over 1 MiB of appended zeros", garbage(new Uint8Array(1024 * 1024 + 512))],
    ];
    const before = await storeState(bob);
    for (const [what, data] of cases) {
      assert(REFUSED.has(await verdict(data, keyId)), `in-process: ${what}`);
      const path = join(bob.root, "bad.ctxbundle");
      await Deno.writeFile(path, data);
      const verify = await bob.run(["verify", path, "--trust", key]);
      expectCode(verify, 1, `verify, ${what}`);
      expectCode(await bob.run(["import", path, "--trust", key]), 1, `import, ${what}`);
    }
    assertEquals(await storeState(bob), before, "a refused import changed the store");
  });
});

/** Offset just past the data of the last member (for a cut inside it). */
function layout(bytes: Uint8Array): { lastData: number } {
  const { members } = tarLayout(bytes);
  const last = members[members.length - 1]!;
  return { lastData: last.data + Math.floor(last.size / 2) };
}

Deno.test("a published snapshot with a duplicate key, an unknown field or a second document is refused (exit 1)", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "structure");
    const file = await publish(alice, id, "s.ctxsnapshot.json");
    const key = await publicKeyHex(alice);
    const text = await Deno.readTextFile(file);
    const keyId = (JSON.parse(text) as Envelope).signature.key_id;
    const reason = '"reason": "structure"';
    assert(text.includes(reason), text);
    const cases: [string, string][] = [
      // JSON.parse would keep the last value and so the genuine id and signature.
      ["a duplicate key in the body", text.replace(reason, `"reason": "evil", ${reason}`)],
      ["a duplicate id", text.replace('"id": ', `"id": "${"0".repeat(64)}", "id": `)],
      ["an unknown envelope field", text.replace('{\n  "id"', '{\n  "extra": 1,\n  "id"')],
      ["an unknown signature field", text.replace('"alg": "ed25519"', '"alg": "ed25519", "x": 1')],
      ["a second document", text + text],
      ["trailing text", text + "x"],
      ["an empty file", ""],
    ];
    for (const [what, changed] of cases) {
      assert(changed !== text || what === "an empty file", `${what}: nothing changed`);
      const v = await verdict(encoder.encode(changed), keyId);
      assert(REFUSED.has(v), `${what}: ${v}`);
    }
    const results = await Promise.all(cases.map(async ([, changed], i) => {
      const path = join(carol.root, `bad-${i}.ctxsnapshot.json`);
      await Deno.writeTextFile(path, changed);
      return await carol.run(["verify", path, "--trust", key]);
    }));
    results.forEach((r, i) => expectCode(r, 1, `verify, ${cases[i]![0]}`));
  });
});

Deno.test("a bundle member declaring a size above the limit is refused (exit 1) before its data is read", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "sizes");
    const file = await publish(alice, id, "s.ctxbundle", "--with-workspace");
    const key = await publicKeyHex(alice);
    const bytes = await Deno.readFile(file);
    const header = (at: number, size: string): Uint8Array => {
      const out = bytes.slice();
      out.set(encoder.encode(size), at + 124);
      out.fill(0x20, at + 148, at + 156);
      let sum = 0;
      for (let i = at; i < at + 512; i++) sum += out[i]!;
      out.set(encoder.encode(sum.toString(8).padStart(6, "0") + "\0 "), at + 148);
      return out;
    };
    // 8 GiB - 1 for the manifest (limit 256 MiB), and for a blob (the manifest says 6 bytes).
    const { members } = tarLayout(bytes);
    const blob = members.find((m) => m.name.startsWith("blobs/"))!;
    // Each is refused by its own check, before any data is read: the manifest's size cap,
    // and the blob's size against the manifest's.
    const cases: [string, Uint8Array, string][] = [
      ["manifest", header(0, "77777777777\0"), "more than the 268435456 allowed"],
      ["blob", header(blob.header, "77777777777\0"), "has 8589934591 bytes, the manifest says 6"],
    ];
    for (const [what, data, message] of cases) {
      assertEquals(tarLayout(data).members[0]!.name, "ctxsnap-bundle.json", what);
      const path = join(carol.root, `big-${what}.ctxbundle`);
      await Deno.writeFile(path, data);
      const r = await carol.run(["verify", path, "--trust", key]);
      expectCode(r, 1, `verify, ${what} declaring 8 GiB`);
      assert(r.stderr.includes(message), r.stderr);
    }
    // Above the tar reader's own limit (64 GiB, GNU base-256 sizes): refused by the reader
    // itself, before the manifest's or the blob's own size checks are reached.
    const huge = MAX_MEMBER_BYTES + 1;
    for (const [what, member] of [["manifest", members[0]!], ["blob", blob]] as const) {
      const out = bytes.slice();
      out.set(encodeHeader(member.name, huge), member.header);
      const path = join(carol.root, `huge-${what}.ctxbundle`);
      await Deno.writeFile(path, out);
      const r = await carol.run(["verify", path, "--trust", key]);
      expectCode(r, 1, `verify, ${what} declaring ${huge} bytes`);
      assert(r.stderr.includes(`declares ${huge} bytes, more than the limit`), r.stderr);
    }
  });
});

// ---------------------------------------------------------------------------
// crafted bundles

Deno.test("bundles crafted with ../x, /tmp/x, a symlink, a hard link, a directory or a duplicate member are refused (exit 1) and write nothing anywhere", async (t) => {
  await withMachines([{ "a.txt": "alpha\n", "b.txt": "bravo\n" }, {}], async (alice, bob) => {
    const id = await createSnap(alice, "crafted");
    const file = await publish(alice, id, "genuine.ctxbundle", "--with-workspace");
    const key = await publicKeyHex(alice);
    const members = (await sh("tar", ["-tf", file], alice.root)).trim().split("\n");
    assertEquals(members.length, 5);
    const blob = members.find((m) => m.startsWith("blobs/"))!;

    // A staging dir holding the genuine members, plus the attack payloads.
    const stage = join(alice.root, "stage");
    await Deno.mkdir(stage);
    await sh("tar", ["-xf", file, "-C", stage], alice.root);
    await Deno.writeTextFile(join(stage, "x"), "pwned\n");
    const tag = crypto.randomUUID();
    const absTarget = `/tmp/ctxsnap-share-test-${tag}`;
    const linkTarget = `/tmp/ctxsnap-share-link-${tag}`;

    /**
     * A bundle built by GNU tar from a copy of the staging dir (after
     * `mutate`), holding the genuine members then `extra`, with `options`.
     */
    let n = 0;
    const craft = async (
      mutate: (dir: string) => Promise<unknown>,
      extra: string[] = [],
      options: string[] = [],
      order: "extra-last" | "extra-first" = "extra-last",
    ): Promise<string> => {
      const dir = join(alice.root, `stage-${++n}`);
      await sh("cp", ["-a", stage, dir], alice.root);
      await mutate(dir);
      const tarFile = join(alice.root, `crafted-${n}.ctxbundle`);
      const names = order === "extra-last" ? [...members, ...extra] : [...extra, ...members];
      await sh("tar", ["--format=ustar", ...options, "-cf", tarFile, "-C", dir, ...names], dir);
      return tarFile;
    };
    const nothing = () => Promise.resolve();
    const otherBlob = members.filter((m) => m.startsWith("blobs/"))[1]!;
    const unlisted = `blobs/${"e".repeat(64)}`;

    const crafted: { what: string; file: string; listed: RegExp; message: RegExp }[] = [
      {
        what: "a ../x member",
        file: await craft(nothing, ["x"], ["-P", "--transform", "s,^x$,../x,"]),
        listed: /^\.\.\/x$/m,
        message: /"\.\." path segment/,
      },
      {
        what: "a ../x member before the manifest",
        file: await craft(nothing, ["x"], ["-P", "--transform", "s,^x$,../x,"], "extra-first"),
        listed: /^\.\.\/x$/m,
        message: /"\.\." path segment/,
      },
      {
        what: "an absolute /tmp/x member",
        file: await craft(nothing, ["x"], ["-P", "--transform", `s,^x$,${absTarget},`]),
        listed: new RegExp(`^${absTarget}$`, "m"),
        message: /absolute/,
      },
      {
        what: "a symlink member in place of a blob",
        file: await craft(async (dir) => {
          await Deno.remove(join(dir, blob));
          await Deno.symlink(linkTarget, join(dir, blob));
        }),
        listed: new RegExp(`^${blob}$`, "m"),
        message: /symbolic link/,
      },
      {
        what: "a hard link member with a blob name",
        file: await craft(
          (dir) => Deno.link(join(dir, otherBlob), join(dir, "h")),
          ["h"],
          ["--transform", `s,^h$,${unlisted},`],
        ),
        listed: new RegExp(`^${unlisted}$`, "m"),
        message: /hard link/,
      },
      {
        what: "a directory member",
        file: await craft((dir) => Deno.mkdir(join(dir, "blobs", "d")), ["blobs/d"]),
        listed: /^blobs\/d\/$/m,
        message: /directory/,
      },
      {
        what: "a duplicate blob member",
        file: await (async () => {
          const f = await craft(nothing);
          await sh("tar", ["--format=ustar", "-rf", f, "-C", stage, blob], stage);
          return f;
        })(),
        listed: new RegExp(`^${blob}$[\\s\\S]*^${blob}$`, "m"),
        message: /duplicate/,
      },
    ];

    const parents = [alice.root, bob.root, dirname(bob.root), join(bob.path, ".ctxsnap")];
    const before = await storeState(bob);
    const cwdBefore = await describeTree(bob.path);
    for (const c of crafted) {
      await t.step(c.what, async () => {
        // The attack is really in the archive (GNU tar lists it).
        const listing = await sh("tar", ["-tPf", c.file], alice.root);
        assert(c.listed.test(listing), `crafted archive lacks the attack:\n${listing}`);
        const verify = await bob.run(["verify", c.file, "--trust", key]);
        expectCode(verify, 1, `verify ${c.what}`);
        assert(c.message.test(verify.stderr), `verify ${c.what}: ${verify.stderr}`);
        const imported = await bob.run(["import", c.file, "--trust", key, "--allow-untrusted"]);
        expectCode(imported, 1, `import ${c.what}`);
        for (const dir of parents) {
          assert(!await exists(join(dir, "x")), `${join(dir, "x")} was created`);
        }
        assert(!await exists(absTarget), `${absTarget} was created`);
        assert(!await exists(linkTarget), `${linkTarget} was created`);
        assertEquals(await storeState(bob), before, "the store changed");
        assertEquals(await describeTree(bob.path), cwdBefore, "the workspace changed");
      });
    }
    // The same staging, without an attack, gives a bundle that imports.
    const clean = await craft(nothing);
    expectCode(
      await bob.run(["import", clean, "--trust", key]),
      0,
      "import of a clean GNU tar bundle",
    );
  });
});

// ---------------------------------------------------------------------------
// re-signed forgeries

Deno.test("a tampered body re-signed with another key verifies as untrusted (exit 3), never trusted, even with --trust of the original key", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, {}], async (alice, bob) => {
    const id = await createSnap(alice, "genuine reason");
    const published = await publish(alice, id, "genuine.ctxsnapshot.json");
    const bundleFile = await publish(alice, id, "genuine.ctxbundle", "--with-workspace");
    const aliceKey = await publicKeyHex(alice);
    const envelope = JSON.parse(await Deno.readTextFile(published)) as Envelope;
    const mallory = await newSigner();
    const forged = await signBody({ ...envelope.body, reason: "forged reason" }, mallory);
    assert(forged.id !== id, "the forged body has the genuine id");
    assertEquals(forged.id, snapshotId(forged.body));

    const forgedFile = join(bob.root, "forged.ctxsnapshot.json");
    await Deno.writeFile(forgedFile, prettyEnvelope(forged));
    const forgedBundle = join(bob.root, "forged.ctxbundle");
    await Deno.writeFile(forgedBundle, rebundle(await Deno.readFile(bundleFile), [forged]));

    for (const file of [forgedFile, forgedBundle]) {
      for (const who of [bob, alice]) {
        const r = await who.run(["verify", file, "--trust", aliceKey, "--json"]);
        expectCode(r, 3, `verify ${file} on ${who === bob ? "bob" : "alice"}`);
        const doc = r.json();
        assertEquals([doc.valid, doc.trusted, doc.reason], [true, false, "forged reason"]);
        assertEquals(doc.signer.key_id, mallory.keyId);
      }
      expectCode(await bob.run(["verify", file]), 3, "verify with no key pinned");
      // Only pinning Mallory's own key makes it trusted: the signer is Mallory.
      expectCode(
        await bob.run(["verify", file, "--trust", mallory.publicKeyHex]),
        0,
        "verify trusting the forger",
      );
    }

    // import refuses it (3) unless --allow-untrusted, and then quarantines it under Mallory's key.
    const before = await storeState(bob);
    for (const file of [forgedFile, forgedBundle]) {
      expectCode(await bob.run(["import", file, "--trust", aliceKey]), 3, `import ${file}`);
    }
    assertEquals(await storeState(bob), before, "an untrusted import changed the store");
    const allowed = await bob.run(["import", forgedBundle, "--allow-untrusted", "--json"]);
    expectCode(allowed, 0, "import --allow-untrusted");
    assertEquals(allowed.json().branch, `imported/${mallory.keyId}`);
    assertEquals(allowed.json().trusted, false);
  });
});

Deno.test("a tampered body re-hashed and signed by another key but claiming the original signer is invalid (exit 1)", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "genuine");
    const published = await publish(alice, id, "genuine.ctxsnapshot.json");
    const bundleFile = await publish(alice, id, "genuine.ctxbundle", "--with-workspace");
    const aliceKey = await publicKeyHex(alice);
    const envelope = JSON.parse(await Deno.readTextFile(published)) as Envelope;
    const mallory = await newSigner();
    const body = { ...envelope.body, reason: "forged" };
    const forgedId = snapshotId(body);
    const value = toHex(await sign(mallory.seed, signingMessage(forgedId)));
    const forged: Envelope = { id: forgedId, body, signature: { ...envelope.signature, value } };

    const file = join(carol.root, "forged.ctxsnapshot.json");
    await Deno.writeFile(file, prettyEnvelope(forged));
    const bundle = join(carol.root, "forged.ctxbundle");
    await Deno.writeFile(bundle, rebundle(await Deno.readFile(bundleFile), [forged]));
    for (const f of [file, bundle]) {
      const r = await carol.run(["verify", f, "--trust", aliceKey, "--json"]);
      expectCode(r, 1, `verify ${f}`);
      assertEquals(r.json().valid, false);
      assertEquals(r.json().trusted, false);
    }
  });
});

// ---------------------------------------------------------------------------
// offline verification

Deno.test({
  name:
    "verify FILE runs with --allow-read of that file only (no env, no other reads, no writes) and so does verify - with no permission",
  // Deno's permission sandbox is the point; a compiled binary has none.
  ignore: NEEDS_DENO_PERMISSIONS,
}, async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "offline");
    const key = await publicKeyHex(alice);
    const files = [
      await publish(alice, id, "offline.ctxsnapshot.json"),
      await publish(alice, id, "offline.ctxbundle", "--with-workspace"),
    ];
    for (const file of files) {
      const r = await carol.run(["verify", file, "--trust", key, "--json"], {
        permissions: ["--no-prompt", `--allow-read=${file}`],
      });
      expectCode(r, 0, `verify ${file} with --allow-read=${file}`);
      assertEquals([r.json().valid, r.json().trusted, r.json().primary], [true, true, id]);

      // Untrusted and tampered outcomes keep their exit codes under the same sandbox.
      const untrusted = await carol.run(["verify", file], {
        permissions: ["--no-prompt", `--allow-read=${file}`],
      });
      expectCode(untrusted, 3, "verify with no key, sandboxed");

      const stdin = await carol.run(["verify", "-", "--trust", key], {
        permissions: ["--no-prompt"],
        stdin: await Deno.readFile(file),
      });
      expectCode(stdin, 0, "verify - with no permission at all");

      // The sandbox is real: reading a different file is not allowed.
      const other = await carol.run(["verify", file, "--trust", key], {
        permissions: ["--no-prompt", `--allow-read=${join(alice.root, "nothing")}`],
      });
      assert(other.code !== 0, "verify succeeded without read access to its file");
    }
    const tampered = join(alice.root, "tampered.ctxbundle");
    const bytes = await Deno.readFile(files[1]!);
    await Deno.writeFile(tampered, flipped(bytes, bytes.length - 5000));
    const bad = await carol.run(["verify", tampered, "--trust", key], {
      permissions: ["--no-prompt", `--allow-read=${tampered}`],
    });
    expectCode(bad, 1, "verify of a tampered bundle, sandboxed");

    // Nothing was written on the verifying machine.
    assert(!await exists(carol.configDir), "verify created the config dir");
    assertEquals([...(await describeTree(carol.home)).keys()], []);
    assertEquals([...(await describeTree(carol.path)).keys()], []);
  });
});

Deno.test("verify --json of a file prints exactly one JSON document for trusted, untrusted and tampered input", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, {}], async (alice, bob) => {
    const id = await createSnap(alice, "json");
    const key = await publicKeyHex(alice);
    const file = await publish(alice, id, "json.ctxbundle", "--with-workspace");
    const trusted = await bob.run(["verify", file, "--trust", key, "--json"]);
    expectCode(trusted, 0, "trusted");
    const t = trusted.json();
    assertEquals([t.valid, t.trusted, t.kind, t.primary, t.with_workspace], [
      true,
      true,
      "bundle",
      id,
      true,
    ]);
    assertEquals(t.snapshots.length, 1);

    const untrusted = await bob.run(["verify", file, "--json"]);
    expectCode(untrusted, 3, "untrusted");
    assertEquals([untrusted.json().valid, untrusted.json().trusted], [true, false]);

    // With a name from `key trust`, verify names the signer.
    expectCode(await bob.run(["key", "trust", key, "--name", "alice"]), 0, "key trust");
    const named = await bob.run(["verify", file, "--json"]);
    expectCode(named, 0, "trusted by name");
    assertEquals(named.json().signer.name, "alice");
    const text = await bob.run(["verify", file]);
    expectCode(text, 0, "text verify");
    assert(text.stdout.includes("alice"), text.stdout);

    const bytes = await Deno.readFile(file);
    const bad = join(bob.root, "bad.ctxbundle");
    await Deno.writeFile(bad, flipped(bytes, 600));
    const tampered = await bob.run(["verify", bad, "--json"]);
    expectCode(tampered, 1, "tampered");
    assertEquals(tampered.json().error.exit, 1);
    assertEquals([tampered.json().verdict, tampered.json().valid], ["tampered", false]);
  });
});

// ---------------------------------------------------------------------------
// import

Deno.test("import of an untrusted signer exits 3 writing nothing; --allow-untrusted imports; a second import is already present and changes nothing", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, { "mine.txt": "bob's\n" }], async (alice, bob) => {
    const id = await createSnap(alice, "to import");
    const file = await publish(alice, id, "imp.ctxbundle", "--with-workspace");
    await createSnap(bob, "bob's own");

    const before = await storeState(bob);
    const refused = await bob.run(["import", file, "--json"]);
    expectCode(refused, 3, "import untrusted");
    assertEquals(refused.json().error.exit, 3);
    assertEquals(await storeState(bob), before, "an untrusted import changed the store");
    expectCode(await bob.run(["show", id]), 4, "show of a refused import");

    const branchesBefore = (await bob.run(["branch", "list", "--json"])).json();
    const first = await bob.run(["import", file, "--allow-untrusted", "--json"]);
    expectCode(first, 0, "import --allow-untrusted");
    const doc = first.json();
    assertEquals([doc.already_present, doc.imported, doc.trusted], [false, [id], false]);
    expectCode(await bob.run(["show", id]), 0, "show of the imported snapshot");

    // The current branch and its head did not move; the import has its own branch.
    const branchesAfter = (await bob.run(["branch", "list", "--json"])).json();
    assertEquals(branchesAfter.current, branchesBefore.current);
    const head = (j: { branches: { name: string; head: string }[] }, name: string) =>
      j.branches.find((b) => b.name === name)?.head;
    assertEquals(head(branchesAfter, "main"), head(branchesBefore, "main"));
    assertEquals(head(branchesAfter, doc.branch), id);
    assert(/^imported\/[0-9a-f]{16}$/.test(doc.branch), doc.branch);

    const middle = await storeState(bob);
    const second = await bob.run(["import", file, "--allow-untrusted", "--json"]);
    expectCode(second, 0, "second import");
    assertEquals(second.json().already_present, true);
    assertEquals(second.json().imported, []);
    assertEquals(await storeState(bob), middle, "a repeated import changed the store");
  });
});

Deno.test("an envelope-only import cannot restore its workspace (exit 4, names the missing content) but restores its session; its bundle then restores the files", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, {}], async (alice, bob) => {
    expectCode(await alice.run(["session", "set", "--task", "ship share"]), 0, "session set");
    const id = await createSnap(alice, "envelope only");
    const key = await publicKeyHex(alice);
    const envelopeFile = await publish(alice, id, "e.ctxsnapshot.json");
    const bundleFile = await publish(alice, id, "e.ctxbundle", "--with-workspace");

    const first = await bob.run(["import", envelopeFile, "--trust", key, "--json"]);
    expectCode(first, 0, "import envelope");
    assertEquals([first.json().kind, first.json().with_workspace], ["snapshot", false]);

    const restore = await bob.run(["restore", id, "--files"]);
    expectCode(restore, 4, "restore --workspace of an envelope-only import");
    assert(/workspace content/i.test(restore.stderr), restore.stderr);
    assert(/bundle|--with-workspace/.test(restore.stderr), restore.stderr);
    assert(!await exists(join(bob.path, "a.txt")), "a file was restored");

    expectCode(await bob.run(["restore", id, "--session-state"]), 0, "restore --session-state");
    const session = await bob.run(["session", "show", "--json"]);
    expectCode(session, 0, "session show");
    assert(session.stdout.includes("ship share"), session.stdout);

    // The bundle brings the content even though the envelope is already present.
    const second = await bob.run(["import", bundleFile, "--trust", key, "--json"]);
    expectCode(second, 0, "import bundle after envelope");
    assertEquals(second.json().already_present, false);
    expectCode(
      await bob.run(["restore", id, "--files"]),
      0,
      "restore --workspace after bundle",
    );
    assertEquals(await Deno.readTextFile(join(bob.path, "a.txt")), "alpha\n");
  });
});

Deno.test("--history N and --all bundles carry ancestors (oldest first) and import them all", async () => {
  await withMachines([{ "a.txt": "v1\n" }, {}], async (alice, bob) => {
    const ids: string[] = [];
    for (const v of ["v1", "v2", "v3", "v4"]) {
      await Deno.writeTextFile(join(alice.path, "a.txt"), `${v}\n`);
      ids.push(await createSnap(alice, v));
    }
    const key = await publicKeyHex(alice);
    const head = ids[3]!;

    const h1 = await publish(alice, head, "h1.ctxbundle", "--history", "1");
    const m1 = await manifestOf(h1);
    assertEquals(m1.snapshots, ids.slice(2));
    assertEquals([m1.primary, m1.workspace, m1.trees, m1.blobs], [head, false, [], []]);

    const h2 = await publish(alice, head, "h2.ctxbundle", "--history", "2", "--with-workspace");
    const m2 = await manifestOf(h2);
    assertEquals(m2.snapshots, ids.slice(1));
    assertEquals(m2.trees.length, 3);
    assertEquals(m2.blobs.length, 3);

    const all = await publish(alice, head, "all.ctxbundle", "--history", "all", "--with-workspace");
    assertEquals((await manifestOf(all)).snapshots, ids);

    const first = await bob.run(["import", h1, "--trust", key, "--json"]);
    expectCode(first, 0, "import --history 1");
    assertEquals(first.json().imported, ids.slice(2));

    const second = await bob.run(["import", all, "--trust", key, "--json"]);
    expectCode(second, 0, "import --all");
    assertEquals(second.json().imported.sort(), ids.slice(0, 2).sort());
    assertEquals(second.json().present.sort(), ids.slice(2).sort());
    for (const id of ids) expectCode(await bob.run(["show", id]), 0, `show ${id}`);
    // Any ancestor's workspace can be restored from the --all bundle.
    expectCode(await bob.run(["restore", ids[0]!, "--files"]), 0, "restore the oldest");
    assertEquals(await Deno.readTextFile(join(bob.path, "a.txt")), "v1\n");

    const usage = await alice.run(["publish", head, "--all"]);
    expectCode(usage, 2, "publish --all is now --history all");
    assert(usage.stderr.includes("use --history all"), usage.stderr);
  });
});

/** A store in `root/<name>` with one snapshot of one file, published as `root/<name>.ctxbundle`. */
async function publishedBundle(root: string, name: string) {
  const ws = `${root}/${name}`;
  await Deno.mkdir(ws);
  await Deno.writeTextFile(`${ws}/${name}.txt`, `${name} says hello\n`);
  const me = await loadOrCreateIdentity(`${root}/${name}-config`);
  const store = Store.init(`${ws}/.ctxsnap`, ws);
  const snap = await createSnapshot(store, me, { reason: name });
  const file = (await publishToFile(store, snap.id, {
    file: `${root}/${name}.ctxbundle`,
    withWorkspace: true,
  })).path;
  store.close();
  return { me, id: snap.id, file };
}

Deno.test("import reads the file it verified: swapping the path between the passes changes nothing", async () => {
  const root = await Deno.makeTempDir();
  try {
    const alice = await publishedBundle(root, "alice");
    const mallory = await publishedBundle(root, "mallory");
    let swapped = false;
    const trust = {
      isTrusted(keyId: string, publicKeyHex?: string): boolean {
        if (!swapped) {
          swapped = true;
          Deno.renameSync(mallory.file, alice.file); // the path now names mallory's bundle
        }
        return keyId === alice.me.keyId &&
          (publicKeyHex === undefined || publicKeyHex === alice.me.publicKeyHex);
      },
      nameOf: () => null,
    };
    await Deno.mkdir(`${root}/bob`);
    const bob = Store.init(`${root}/bob/.ctxsnap`, `${root}/bob`);
    try {
      const result = await importFile(bob, alice.file, trust);
      assert(swapped, "the swap did not happen");
      assertEquals(result.imported, [alice.id]);
      const ids = (bob.db.prepare("SELECT id FROM snapshots").all() as { id: string }[]).map((r) =>
        r.id
      );
      assertEquals(ids, [alice.id]);
    } finally {
      bob.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("an imported snapshot never answers the user's own create --source, before or after it (quarantine stays out of idempotency)", async () => {
  const root = await Deno.makeTempDir();
  try {
    // Alice's snapshot says it is the checkpoint of "turn:7" and "turn:8" of session main.
    await Deno.mkdir(`${root}/alice`);
    await Deno.writeTextFile(`${root}/alice/a.txt`, "alice\n");
    const alice = await loadOrCreateIdentity(`${root}/alice-config`);
    const aliceStore = Store.init(`${root}/alice/.ctxsnap`, `${root}/alice`);
    const theirs7 = await createSnapshot(aliceStore, alice, {
      reason: "alice",
      source: { kind: "turn", id: "7" },
    });
    const theirs8 = await createSnapshot(aliceStore, alice, {
      reason: "alice",
      source: { kind: "turn", id: "8" },
      allowUnchanged: true,
    });
    const files = [
      (await publishToFile(aliceStore, theirs7.id, { file: `${root}/a7.ctxbundle` })).path,
      (await publishToFile(aliceStore, theirs8.id, { file: `${root}/a8.ctxbundle` })).path,
    ];
    aliceStore.close();

    await Deno.mkdir(`${root}/bob`);
    await Deno.writeTextFile(`${root}/bob/b.txt`, "bob\n");
    const bobId = await loadOrCreateIdentity(`${root}/bob-config`);
    const bob = Store.init(`${root}/bob/.ctxsnap`, `${root}/bob`);
    try {
      const ours7 = await createSnapshot(bob, bobId, {
        reason: "bob",
        source: { kind: "turn", id: "7" },
      });
      const trust = { isTrusted: () => false, nameOf: () => null };
      for (const file of files) await importFile(bob, file, trust, { allowUntrusted: true });
      for (const id of [theirs7.id, theirs8.id]) {
        // Imported rows never hold the key in the index (their signed body keeps the source).
        const row = bob.db.prepare("SELECT source_kind, source_id FROM snapshots WHERE id = ?")
          .get(id);
        assert(row !== undefined);
        assertEquals({ ...row }, { source_kind: null, source_id: null });
      }
      const again7 = await createSnapshot(bob, bobId, { source: { kind: "turn", id: "7" } });
      assertEquals([again7.id, again7.created], [ours7.id, false]);
      await Deno.writeTextFile(`${root}/bob/b.txt`, "bob's change\n");
      const ours8 = await createSnapshot(bob, bobId, { source: { kind: "turn", id: "8" } });
      assert(ours8.created, "bob's change was swallowed by the imported turn:8");
      assertEquals(ours8.envelope.signature.key_id, bobId.keyId);
    } finally {
      bob.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("import refuses a file rewritten in place between verifying and importing, writing nothing", async () => {
  const root = await Deno.makeTempDir();
  try {
    const alice = await publishedBundle(root, "alice");
    const mallory = await publishedBundle(root, "mallory");
    let rewritten = false;
    const trust = {
      isTrusted(keyId: string): boolean {
        if (!rewritten) {
          rewritten = true;
          // Same inode, new bytes: what a writer holding the file open could do.
          Deno.writeFileSync(alice.file, Deno.readFileSync(mallory.file));
        }
        return keyId === alice.me.keyId || keyId === mallory.me.keyId;
      },
      nameOf: () => null,
    };
    await Deno.mkdir(`${root}/bob`);
    const bob = Store.init(`${root}/bob/.ctxsnap`, `${root}/bob`);
    try {
      await assertRejects(() => importFile(bob, alice.file, trust), IntegrityError, "changed");
      assert(rewritten, "the rewrite did not happen");
      assertEquals(bob.db.prepare("SELECT count(*) AS n FROM snapshots").get(), { n: 0 });
    } finally {
      bob.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("import refuses a file rewritten in place between the passes even with the same bytes (its identity changed), writing nothing", async () => {
  const root = await Deno.makeTempDir();
  try {
    const alice = await publishedBundle(root, "alice");
    let rewritten = false;
    const trust = {
      isTrusted(keyId: string): boolean {
        if (!rewritten) {
          rewritten = true;
          // The same bytes written again, and an older mtime: only the file's identity
          // (size, mtime, ctime, inode) tells that it was rewritten.
          Deno.writeFileSync(alice.file, Deno.readFileSync(alice.file));
          Deno.utimeSync(alice.file, 1, 1);
        }
        return keyId === alice.me.keyId;
      },
      nameOf: () => null,
    };
    await Deno.mkdir(`${root}/bob`);
    const bob = Store.init(`${root}/bob/.ctxsnap`, `${root}/bob`);
    try {
      await assertRejects(() => importFile(bob, alice.file, trust), IntegrityError, "changed");
      assert(rewritten, "the rewrite did not happen");
      assertEquals(bob.db.prepare("SELECT count(*) AS n FROM snapshots").get(), { n: 0 });
    } finally {
      bob.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("import reads a bundle from a named pipe", async () => {
  const root = await Deno.makeTempDir();
  try {
    const ws = `${root}/alice`;
    await Deno.mkdir(ws);
    await Deno.writeTextFile(`${ws}/a.txt`, "through a pipe\n");
    const me = await loadOrCreateIdentity(`${root}/alice-config`);
    const store = Store.init(`${ws}/.ctxsnap`, ws);
    const snap = await createSnapshot(store, me, {});
    const file = (await publishToFile(store, snap.id, {
      file: `${root}/a.ctxbundle`,
      withWorkspace: true,
    })).path;
    store.close();
    const fifo = `${root}/pipe`;
    const made = await new Deno.Command("mkfifo", { args: [fifo] }).output();
    assert(made.success, "mkfifo failed");
    const feeder = new Deno.Command("sh", { args: ["-c", `cat '${file}' > '${fifo}'`] }).spawn();
    await Deno.mkdir(`${root}/bob`);
    const bob = Store.init(`${root}/bob/.ctxsnap`, `${root}/bob`);
    try {
      const trust = { isTrusted: (id: string) => id === me.keyId, nameOf: () => null };
      const result = await importFile(bob, fifo, trust);
      assertEquals(result.imported, [snap.id]);
    } finally {
      bob.close();
      await feeder.status;
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

// ---------------------------------------------------------------------------
// verify A B C…: many files, one start-up

Deno.test("verify A B C… reports every file in order and exits with the worst status (1 > 7 > 4 > 3 > 0); --json holds one result per file, each as verify FILE --json prints it", async () => {
  await withMachines(
    [{ "a.txt": "alpha\n" }, { "m.txt": "mallory\n" }, "no-store"],
    async (alice, mallory, carol) => {
      const id = await createSnap(alice, "batch");
      const key = await publicKeyHex(alice);
      const good = await publish(alice, id, "good.ctxsnapshot.json");
      const bundle = await publish(alice, id, "good.ctxbundle", "--with-workspace");
      const other = await publish(mallory, await createSnap(mallory, "m"), "other.ctxbundle");
      const tampered = join(alice.root, "tampered.ctxbundle");
      const bytes = await Deno.readFile(bundle);
      await Deno.writeFile(tampered, flipped(bytes, bytes.length - 5000));
      const missing = join(alice.root, "missing.ctxbundle");
      // A name that would paint a fake verdict on a terminal if printed raw.
      const sneaky = join(alice.root, "x\x1b[2K\rOK  evil.ctxbundle");
      await Deno.copyFile(other, sneaky);

      const verify = (...files: string[]) => carol.run(["verify", ...files, "--trust", key]);
      const cases: [string[], number][] = [
        [[good, bundle], 0],
        [[good, other], 3],
        [[other, missing, good], 4],
        [[missing, tampered, other], 1],
        [[tampered, good], 1],
      ];
      for (const [files, exit] of cases) {
        const r = await verify(...files);
        expectCode(r, exit, `verify ${files.map((f) => f.slice(alice.root.length)).join(" ")}`);
        const lines = r.stdout.trimEnd().split("\n");
        assertEquals(lines.length, files.length + 1, r.stdout);
        files.forEach((file, i) => assert(lines[i]!.includes(file), `line ${i}: ${lines[i]}`));
        assert(lines.at(-1)!.startsWith(`${files.length} files: `), lines.at(-1)!);
        if (exit !== 0) assert(/ctxsnap: error: \d+ of \d+ files did not verify/.test(r.stderr));
      }
      const labels = (await verify(good, other, missing, tampered)).stdout.split("\n")
        .slice(0, 4).map((l) => l.split(/\s{2,}/)[0]);
      assertEquals(labels, ["OK", "UNTRUSTED", "NOT FOUND", "TAMPERED"]);

      const sneakyRun = await verify(good, sneaky);
      expectCode(sneakyRun, 3, "verify with a control character in a file name");
      assert(!sneakyRun.stdout.includes("\x1b") && !sneakyRun.stdout.includes("\r"));
      assert(sneakyRun.stdout.includes(JSON.stringify(sneaky)), sneakyRun.stdout);
      // The same for a name that does not exist (its error message quotes the path).
      const gone = `${sneaky}.gone`;
      const goneRun = await verify(good, gone);
      expectCode(goneRun, 4, "verify of a missing file with a control character in its name");
      assert(!goneRun.stdout.includes("\x1b") && !goneRun.stdout.includes("\r"), goneRun.stdout);
      assert(goneRun.stdout.split("\n")[1]!.startsWith("NOT FOUND"), goneRun.stdout);

      const json = await carol.run([
        "verify",
        good,
        other,
        missing,
        tampered,
        "--trust",
        key,
        "--json",
      ]);
      expectCode(json, 1, "verify --json of four files");
      const doc = json.json();
      assertEquals([doc.ok, doc.exit, doc.files], [false, 1, 4]);
      assertEquals(doc.results.map((r: { exit: number }) => r.exit), [0, 3, 4, 1]);
      assertEquals(doc.results.map((r: { file: string }) => r.file), [
        good,
        other,
        missing,
        tampered,
      ]);
      for (const [i, file] of [good, other].entries()) {
        const single = await carol.run(["verify", file, "--trust", key, "--json"]);
        assertEquals(sortedJson(doc.results[i].result), sortedJson(single.json()));
      }
      assertEquals(doc.results[1].error.code, "untrusted");
      assertEquals([doc.results[2].result, doc.results[2].error.code], [null, "not_found"]);
      // A tampered file's result is the one tamper verdict, as `verify FILE --json` prints it.
      const single = await carol.run(["verify", tampered, "--trust", key, "--json"]);
      assertEquals(doc.results[3].error.code, "failure");
      assertEquals(doc.results[3].result.verdict, "tampered");
      assertEquals(
        sortedJson({ ...doc.results[3].result, file: null, error: null }),
        sortedJson({ ...single.json(), file: null, error: null }),
      );
    },
  );
});

Deno.test("verify with one file prints what it always did; several arguments must all be files, and - only once", async () => {
  await withMachines([{ "a.txt": "alpha\n" }], async (alice) => {
    const id = await createSnap(alice, "one");
    const file = await publish(alice, id, "one.ctxsnapshot.json");
    const single = await alice.run(["verify", file]);
    expectCode(single, 0, "verify FILE");
    assert(single.stdout.startsWith("OK: intact, signed by a trusted key\n"), single.stdout);
    assert(!("results" in (await alice.run(["verify", file, "--json"])).json()));

    expectCode(await alice.run(["verify", file, id]), 2, "verify FILE ID");
    expectCode(await alice.run(["verify", "--all", file, file]), 2, "verify --all FILE FILE");
    expectCode(await alice.run(["verify", "-", "-"]), 2, "verify - -");
    const twice = await alice.run(["verify", file, file]);
    expectCode(twice, 0, "the same file twice");
    assert(twice.stdout.includes("2 files: 2 ok"), twice.stdout);
  });
});

Deno.test("worseStatus ranks verify statuses 1 > 7 > 4 > 3 > 0, anything unlisted with 1", async () => {
  const { worseStatus } = await import("../../lib/cli/commands/verify.ts");
  const worst = (codes: number[]) => codes.reduce(worseStatus, 0);
  assertEquals(worst([0, 3, 0]), 3);
  assertEquals(worst([3, 4, 3]), 4);
  assertEquals(worst([4, 7, 3]), 7);
  assertEquals(worst([7, 1, 4]), 1);
  assertEquals(worst([1, 7]), 1);
  assertEquals(worst([3, 6]), 6); // unlisted (never a per-file status): ranks with failure
  assertEquals(worst([]), 0);
});

// ---------------------------------------------------------------------------
// each layer of the trust rules, reached on its own through `verify FILE`

Deno.test("verify FILE of a bundle mixing a pinned and an unpinned signer is untrusted (exit 3), never trusted", async () => {
  await withMachines([{ "a.txt": "v1\n" }, "no-store"], async (alice, carol) => {
    const first = await createSnap(alice, "signed by alice");
    // The next snapshot of the same chain is signed by another machine's key.
    const otherConfig = join(alice.root, "other-config");
    await Deno.writeTextFile(join(alice.path, "a.txt"), "v2\n");
    const adopt = await alice.run(["init", "--adopt"], {
      env: { CTXSNAP_CONFIG_DIR: otherConfig },
    });
    expectCode(adopt, 0, "adopt the store with the other key");
    const made = await alice.run(["create", "--json", "-m", "signed by other"], {
      env: { CTXSNAP_CONFIG_DIR: otherConfig },
    });
    expectCode(made, 0, "create with the other key");
    const second = made.json().id as string;
    const other = await alice.run(["key", "show", "--json"], {
      env: { CTXSNAP_CONFIG_DIR: otherConfig },
    });
    const otherKey = other.json().public_key as string;
    const aliceKey = await publicKeyHex(alice);
    assert(otherKey !== aliceKey, "two keys");
    const bundle = await publish(
      alice,
      second,
      "mixed.ctxbundle",
      "--history",
      "all",
      "--with-workspace",
    );
    assertEquals((await manifestOf(bundle)).snapshots, [first, second]);

    for (const pinned of [aliceKey, otherKey]) {
      const r = await carol.run(["verify", bundle, "--trust", pinned, "--json"]);
      expectCode(r, 3, `verify trusting only one of the two signers`);
      assertEquals([r.json().valid, r.json().trusted], [true, false]);
      const human = await carol.run(["verify", bundle, "--trust", pinned]);
      expectCode(human, 3, "verify (human output) trusting one signer");
      assert(!/trusted key/.test(human.stdout.replace(/untrusted/g, "")), human.stdout);
    }
    const both = await carol.run(["verify", bundle, "--trust", aliceKey, "--trust", otherKey]);
    expectCode(both, 0, "verify trusting both signers");
  });
});

Deno.test("verify FILE of an envelope whose key_id names a pinned key but whose public key is another is invalid (exit 1), not merely untrusted", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "genuine");
    const published = await publish(alice, id, "genuine.ctxsnapshot.json");
    const aliceKey = await publicKeyHex(alice);
    const envelope = JSON.parse(await Deno.readTextFile(published)) as Envelope;
    const mallory = await newSigner();
    // Mallory signs the genuine body with her own key and claims Alice's key id.
    const signed = await signBody(envelope.body, mallory);
    const forged: Envelope = {
      ...signed,
      signature: { ...signed.signature, key_id: envelope.signature.key_id },
    };
    const file = join(carol.root, "claims-alice.ctxsnapshot.json");
    await Deno.writeFile(file, prettyEnvelope(forged));
    const r = await carol.run(["verify", file, "--trust", aliceKey, "--json"]);
    expectCode(r, 1, "verify of a key_id not matching its public key");
    assertEquals([r.json().valid ?? false, r.json().trusted ?? false], [false, false]);
    assert(/key_id/.test(r.stderr + r.stdout), r.stderr);
  });
});

Deno.test("verifyStream() compares the full public key: a signer whose key id collides with a pinned key (simulated) is untrusted", async () => {
  const { verifyStream } = await import("../../lib/share/verify_file.ts");
  const { Keyring } = await import("../../lib/keys/keyring.ts");
  const { memoryReader } = await import("../_share.ts");
  const alice = await newSigner();
  const mallory = await newSigner();
  const dir = await Deno.makeTempDir();
  try {
    const me = await loadOrCreateIdentity(join(dir, "config"));
    await Deno.mkdir(join(dir, "ws"));
    await Deno.writeTextFile(join(dir, "ws", "a.txt"), "alpha\n");
    const store = Store.init(join(dir, "ws", ".ctxsnap"), join(dir, "ws"));
    let body: Envelope["body"];
    try {
      body = (await createSnapshot(store, me, { reason: "collide" })).envelope.body;
    } finally {
      store.close();
    }
    const signed = await signBody(body, mallory);
    const bytes = prettyEnvelope(signed);
    // A pinned entry under Mallory's key id holding Alice's key: what a 64-bit collision gives.
    const collided = new Keyring([{
      keyId: mallory.keyId,
      publicKeyHex: alice.publicKeyHex,
      name: "alice",
      addedAt: "2026-01-01T00:00:00Z",
    }]);
    const report = await verifyStream(memoryReader(bytes), collided);
    assertEquals([report.valid, report.trusted], [true, false]);
    // The same keyring holding Mallory's real key trusts her: the refusal above is the key compare.
    const real = new Keyring([{
      keyId: mallory.keyId,
      publicKeyHex: mallory.publicKeyHex,
      name: "mallory",
      addedAt: "2026-01-01T00:00:00Z",
    }]);
    assertEquals((await verifyStream(memoryReader(bytes), real)).trusted, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("verify FILE creates no identity or config directory on a machine that has none", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "offline");
    const file = await publish(alice, id, "offline.ctxbundle", "--with-workspace");
    const key = await publicKeyHex(alice);
    assert(!(await exists(carol.configDir)), "carol starts without a config directory");
    expectCode(await carol.run(["verify", file, "--trust", key]), 0, "verify trusting alice");
    expectCode(await carol.run(["verify", file]), 3, "verify with nothing pinned");
    assert(!(await exists(carol.configDir)), "verify created a config directory or identity");
  });
});
