/**
 * Tests of `scripts/check_layers.ts`, the check `deno task check` runs to
 * keep the layering rules of docs/DESIGN.md §8 true: it must find each kind
 * of violation in a planted tree, and find none in this repository.
 *
 * @module
 */
import { join } from "node:path";
import { checkLayers, readLayerTable } from "../scripts/check_layers.ts";
import { assertEquals } from "./_assert.ts";

const TABLE = `# Design

| rank | folders                  | owns      |
| ---- | ------------------------ | --------- |
| 0    | \`lib/errors.ts\`          | errors    |
| 1    | \`lib/encoding/\`          | bytes     |
| 2    | \`lib/fs/\`                | files     |
| 3    | \`lib/store/\`             | the store |
| 4    | \`lib/view/\`, \`lib/remote/\` | peers     |
| 5    | \`lib/cli/\`               | commands  |

After the table.
`;

async function plant(files: Record<string, string>): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "ctxsnap-layers-" });
  for (const [name, text] of Object.entries(files)) {
    const path = join(root, name);
    await Deno.mkdir(join(path, ".."), { recursive: true });
    await Deno.writeTextFile(path, text);
  }
  return root;
}

Deno.test("readLayerTable() reads ranks and folders from the design document's table", async () => {
  const root = await plant({ "docs/DESIGN.md": TABLE });
  try {
    assertEquals(await readLayerTable(join(root, "docs/DESIGN.md")), [
      { rank: 0, folders: ["."] },
      { rank: 1, folders: ["encoding"] },
      { rank: 2, folders: ["fs"] },
      { rank: 3, folders: ["store"] },
      { rank: 4, folders: ["view", "remote"] },
      { rank: 5, folders: ["cli"] },
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("checkLayers() reports upward, peer and private imports, SQL outside the store, printing outside the CLI", async () => {
  const root = await plant({
    "docs/DESIGN.md": TABLE,
    "lib/errors.ts": "export class E extends Error {}\n",
    "lib/encoding/hex.ts": 'import { E } from "../errors.ts";\nexport const x = E;\n',
    "lib/fs/_errno.ts": "export const errno = 1;\n",
    "lib/fs/walk.ts": [
      'import { errno } from "./_errno.ts";', // own folder's private file: fine
      'import { open } from "../store/store.ts";', // upward
      "export const w = errno + open;",
      "",
    ].join("\n"),
    "lib/store/store.ts": [
      'import { errno } from "../fs/_errno.ts";', // another folder's private file
      'export const open = errno; const q = "SELECT id FROM snapshots";',
      "",
    ].join("\n"),
    "lib/view/page.ts": [
      'import { r } from "../remote/pull.ts";', // a peer
      "/** console.log(1) in a comment is fine, console.assert(x) is not */",
      'export const p = r; const sql = "UPDATE branches SET head = ?";',
      "console.log(p);",
      "",
    ].join("\n"),
    "lib/remote/pull.ts":
      'export const r = await import("../cli/main.ts");\nimport "../cli/side.ts";\n',
    "lib/cli/main.ts": 'console.log("fine here");\nexport {};\n',
    "lib/stray/x.ts": "export {};\n",
  });
  try {
    const violations = await checkLayers(root, await readLayerTable(join(root, "docs/DESIGN.md")));
    assertEquals(violations, [
      'lib/fs/walk.ts:2: lib/fs (layer 2) imports "../store/store.ts" (lib/store, layer 3)',
      'lib/remote/pull.ts:1: lib/remote (layer 4) imports "../cli/main.ts" (lib/cli, layer 5)',
      'lib/remote/pull.ts:2: lib/remote (layer 4) imports "../cli/side.ts" (lib/cli, layer 5)',
      'lib/store/store.ts:1: imports "../fs/_errno.ts", private to lib/fs',
      'lib/stray/x.ts: folder "lib/stray" is not in the layer table',
      "lib/view/page.ts:2: console.assert only prints; throw in examples",
      'lib/view/page.ts:1: lib/view (layer 4) imports "../remote/pull.ts" (lib/remote, layer 4)',
      "lib/view/page.ts:3: SQL outside lib/store",
      "lib/view/page.ts:4: prints or exits outside lib/cli",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
