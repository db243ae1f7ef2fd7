/**
 * The byte sweeps of published files (part of `deno task test:long`: each
 * verifies a few thousand altered copies): every single-byte change of a
 * published snapshot and of a bundle is refused, and the CLI refuses a
 * sample of them writing nothing.
 *
 * @module
 */
import { join } from "node:path";
import type { Envelope } from "../../lib/format/envelope.ts";
import { assert, assertEquals } from "../_assert.ts";
import { expectCode } from "../_cli.ts";

import {
  createSnap,
  decoder,
  flipped,
  publicKeyHex,
  publish,
  REFUSED,
  regionOf,
  runRaw,
  sameJsonValue,
  sh,
  storeState,
  tarLayout,
  verdict,
  withMachines,
} from "../_share.ts";

Deno.test("every single-byte change of a published .ctxsnapshot.json is refused (exit 1) unless its JSON value is unchanged", async () => {
  await withMachines([{ "a.txt": "alpha\n" }, "no-store"], async (alice, carol) => {
    const id = await createSnap(alice, "sweep");
    const file = await publish(alice, id, "sweep.ctxsnapshot.json");
    const key = await publicKeyHex(alice);
    const bytes = await Deno.readFile(file);
    const original = JSON.parse(decoder.decode(bytes)) as Envelope;
    const keyId = original.signature.key_id;
    assertEquals(original.id, id);
    assertEquals(await verdict(bytes, keyId), "ok");

    const failures: string[] = [];
    let checked = 0;
    let neutral = 0;
    for (let pos = 0; pos < bytes.length; pos++) {
      for (const mask of [0x01, 0x20, 0x80]) {
        const changed = flipped(bytes, pos, mask);
        if (sameJsonValue(changed, original)) {
          neutral++;
          continue;
        }
        checked++;
        const v = await verdict(changed, keyId);
        if (!REFUSED.has(v)) {
          failures.push(
            `byte ${pos} ${JSON.stringify(String.fromCharCode(bytes[pos]!))} ^ 0x${
              mask.toString(16)
            }: ${v}`,
          );
        }
      }
    }
    assertEquals(failures.slice(0, 20), [], `${failures.length} of ${checked} changes accepted`);
    assert(checked > bytes.length * 2, `only ${checked} changes checked`);
    assert(neutral < bytes.length / 2, `${neutral} changes were whitespace-only`);

    // The CLI agrees, on a sample: exit 1, never 0, 2 or 3.
    const text = decoder.decode(bytes);
    const positions = [
      0, // the opening brace
      text.indexOf(id) + 5, // inside the id
      text.indexOf('"reason"') + 2, // a key name
      text.indexOf("sweep"), // the reason value
      text.indexOf('"value"') + 12, // the signature
      text.indexOf('"key_id"') + 12, // the key id
      text.lastIndexOf("}"), // the closing brace
    ];
    const results = await Promise.all(positions.map(async (pos, i) => {
      const path = join(carol.root, `tampered-${i}.ctxsnapshot.json`);
      await Deno.writeFile(path, flipped(bytes, pos));
      return await carol.run(["verify", path, "--trust", key]);
    }));
    results.forEach((r, i) => expectCode(r, 1, `verify with byte ${positions[i]} flipped`));
    expectCode(
      await carol.run(["verify", file, "--trust", key]),
      0,
      "verify of the untouched file",
    );
  });
});

Deno.test("every single-byte change anywhere in a bundle is refused, and verify and import refuse a sample of them writing nothing", async (t) => {
  await withMachines([{ "a.txt": "alpha\n", "src/b.txt": "bravo\n" }, {}], async (alice, bob) => {
    const id = await createSnap(alice, "bundle sweep");
    const file = await publish(alice, id, "sweep.ctxbundle", "--with-workspace");
    const key = await publicKeyHex(alice);
    const bytes = await Deno.readFile(file);
    const keyId =
      (JSON.parse(await sh("tar", ["-xOf", file, `snapshots/${id}.json`], alice.root)) as Envelope)
        .signature.key_id;
    assertEquals(await verdict(bytes, keyId), "ok");
    const layout = tarLayout(bytes);
    assertEquals(
      layout.members.map((m) => m.name.split("/")[0]),
      // Two directory trees: the root and src/.
      ["ctxsnap-bundle.json", "snapshots", "trees", "trees", "blobs", "blobs"],
    );

    const byRegion = new Map<string, number>();
    const failures: string[] = [];
    for (let pos = 0; pos < bytes.length; pos++) {
      const region = regionOf(layout, pos);
      const masks = region.endsWith(" data") ? [0x01, 0x20, 0x80] : [0x01];
      for (const mask of masks) {
        byRegion.set(region, (byRegion.get(region) ?? 0) + 1);
        const v = await verdict(flipped(bytes, pos, mask), keyId);
        if (!REFUSED.has(v)) {
          failures.push(`byte ${pos} (${region}) ^ 0x${mask.toString(16)}: ${v}`);
        }
      }
    }
    await t.step("in-process: every change of every region is refused", () => {
      assertEquals(failures.slice(0, 20), [], `${failures.length} changes accepted`);
      for (const region of ["manifest data", "snapshots data", "trees data", "blobs data"]) {
        assert((byRegion.get(region) ?? 0) > 0, `no byte of ${region} was changed`);
      }
    });

    await t.step(
      "CLI: verify and import exit 1 for one change in each member and import writes nothing",
      async () => {
        const member = (prefix: string) => layout.members.find((m) => m.name.startsWith(prefix))!;
        const samples: [string, number][] = [
          ["manifest data", member("ctxsnap-bundle.json").data + 20],
          ["envelope data", member("snapshots/").data + 100],
          ["envelope signature", member("snapshots/").data + member("snapshots/").size - 10],
          ["tree data", member("trees/").data + 30],
          ["blob data", member("blobs/").data],
          ["blob header (name)", member("blobs/").header + 10],
          ["record padding", bytes.length - 1],
        ];
        const before = await storeState(bob);
        const branchesBefore = (await bob.run(["branch", "list", "--json"])).stdout;
        for (const [what, pos] of samples) {
          const path = join(bob.root, `tampered.ctxbundle`);
          await Deno.writeFile(path, flipped(bytes, pos));
          expectCode(await bob.run(["verify", path, "--trust", key]), 1, `verify, ${what} changed`);
          const imported = await bob.run(["import", path, "--trust", key, "--json"]);
          expectCode(imported, 1, `import, ${what} changed`);
          assertEquals(imported.json().error.exit, 1);
        }
        // The same through standard input (import spools it first).
        for (const [what, pos] of samples.slice(0, 4)) {
          const piped = await runRaw(bob, ["import", "-", "--trust", key], flipped(bytes, pos));
          assertEquals(piped.code, 1, `import -, ${what} changed: ${piped.stderr}`);
        }
        assertEquals(await storeState(bob), before, "a refused import changed the store");
        assertEquals((await bob.run(["branch", "list", "--json"])).stdout, branchesBefore);
        // The untouched bundle still imports: the refusals were about the changes.
        expectCode(
          await bob.run(["import", file, "--trust", key]),
          0,
          "import of the genuine bundle",
        );
        assert(
          JSON.stringify(await storeState(bob)) !== JSON.stringify(before),
          "a successful import changed nothing: the store comparison sees nothing",
        );
      },
    );
  });
});
