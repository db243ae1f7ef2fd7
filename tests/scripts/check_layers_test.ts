/**
 * Tests of `scripts/check_layers.ts`, the check `deno task check` runs to
 * keep the layering rules of docs/DESIGN.md §8 true: it must find each kind
 * of violation in a planted tree, and find none in this repository.
 *
 * @module
 */
import { join } from "node:path";
import {
  checkCycles,
  checkFolderDocs,
  checkLayers,
  readLayerTable,
} from "../../scripts/check_layers.ts";
import { assertEquals } from "../_assert.ts";

const TABLE = `# Design

| rank | folders                  | owns      |
| ---- | ------------------------ | --------- |
| 0    | \`lib/errors.ts\`          | errors    |
| 1    | \`lib/encoding/\`          | bytes     |
| 2    | \`lib/workspace/io/\`      | files     |
| 3    | \`lib/repository/\`        | the store |
| 4    | \`lib/workspace/\`         | capture   |
| 5    | \`lib/view/\`, \`lib/remote/\` | peers     |
| 6    | \`lib/cli/\`               | commands  |

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
      { rank: 2, folders: ["workspace/io"] },
      { rank: 3, folders: ["repository"] },
      { rank: 4, folders: ["workspace"] },
      { rank: 5, folders: ["view", "remote"] },
      { rank: 6, folders: ["cli"] },
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("checkLayers() reports upward, peer and private imports, SQL outside the repository, printing outside the CLI, and knows a layer folder inside another", async () => {
  const root = await plant({
    "docs/DESIGN.md": TABLE,
    "lib/errors.ts": "export class E extends Error {}\n",
    "lib/encoding/hex.ts": 'import { E } from "../errors.ts";\nexport const x = E;\n',
    "lib/workspace/io/_errno.ts": "export const errno = 1;\n",
    "lib/workspace/io/walk.ts": [
      'import { errno } from "./_errno.ts";', // own folder's private file: fine
      'import { open } from "../../repository/store.ts";', // upward
      'import { c } from "../capture.ts";', // up into the enclosing folder's layer
      "export const w = errno + open + c;",
      "",
    ].join("\n"),
    "lib/repository/store.ts": [
      'import { errno } from "../workspace/io/_errno.ts";', // another layer's private file
      'export const open = errno; const q = "SELECT id FROM snapshots";',
      "",
    ].join("\n"),
    "lib/workspace/capture.ts": [
      'import { w } from "./io/walk.ts";', // down into the inner layer: fine
      'import { open } from "../repository/store.ts";', // down: fine
      "export const c = w + open;",
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
      'lib/remote/pull.ts:1: lib/remote (layer 5) imports "../cli/main.ts" (lib/cli, layer 6)',
      'lib/remote/pull.ts:2: lib/remote (layer 5) imports "../cli/side.ts" (lib/cli, layer 6)',
      'lib/repository/store.ts:1: imports "../workspace/io/_errno.ts", private to lib/workspace/io',
      'lib/stray/x.ts: folder "lib/stray" is not in the layer table',
      "lib/view/page.ts:2: console.assert only prints; throw in examples",
      'lib/view/page.ts:1: lib/view (layer 5) imports "../remote/pull.ts" (lib/remote, layer 5)',
      "lib/view/page.ts:3: SQL outside lib/repository",
      "lib/view/page.ts:4: prints or exits outside lib/cli",
      'lib/workspace/io/walk.ts:2: lib/workspace/io (layer 2) imports "../../repository/store.ts" (lib/repository, layer 3)',
      'lib/workspace/io/walk.ts:3: lib/workspace/io (layer 2) imports "../capture.ts" (lib/workspace, layer 4)',
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

/** A layer folder's doc.ts as the check wants it. */
function folderDoc(rank: number, mayUse: string[], extra = ""): string {
  return [
    "/**",
    ` * The folder (layer ${rank} of docs/DESIGN.md §8).`,
    " *",
    " * Owns: what it owns.",
    " *",
    ` * May use: ${mayUse.map((f) => `\`${f}\``).join(",\n * ")}.`,
    " *",
    " * @module",
    " */",
    extra,
  ].join("\n");
}

Deno.test('checkFolderDocs() wants a doc.ts per layer folder whose rank and "May use" list agree with the layer table', async () => {
  const root = await plant({
    "docs/DESIGN.md": TABLE,
    // Right: every lower layer, the rank-0 files by any of their names.
    "lib/encoding/doc.ts": folderDoc(1, ["lib/errors.ts"]),
    "lib/workspace/io/doc.ts": folderDoc(2, ["lib/errors.ts", "lib/encoding/"]),
    // Omits a lower layer (lib/workspace/io/).
    "lib/repository/doc.ts": folderDoc(3, ["lib/errors.ts", "lib/encoding/"]),
    // Lists a peer (lib/remote/, same rank) and says the wrong rank.
    "lib/view/doc.ts": folderDoc(4, [
      "lib/errors.ts",
      "lib/encoding/",
      "lib/workspace/io/",
      "lib/repository/",
      "lib/workspace/",
      "lib/remote/",
    ]),
    // Holds code besides its doc.
    "lib/remote/doc.ts": folderDoc(5, [
      "lib/errors.ts",
      "lib/encoding/",
      "lib/workspace/io/",
      "lib/repository/",
      "lib/workspace/",
    ], "export const x = 1;\n"),
    // No "May use" paragraph at all.
    "lib/cli/doc.ts":
      "/**\n * The command line (layer 6).\n *\n * Owns: commands.\n *\n * @module\n */\n",
    // lib/workspace/ has no doc.ts.
  });
  try {
    const violations = await checkFolderDocs(
      root,
      await readLayerTable(join(root, "docs/DESIGN.md")),
    );
    assertEquals(violations, [
      'lib/repository/doc.ts: "May use" omits lib/workspace/io/, below layer 3 in the table',
      "lib/workspace/: no doc.ts saying what the layer owns and may use",
      "lib/view/doc.ts: says layer 4; the table gives layer 5",
      'lib/view/doc.ts: "May use" lists lib/remote/, not below layer 5 in the table',
      "lib/remote/doc.ts: holds code; it holds only the folder's module doc",
      'lib/cli/doc.ts: no "May use:" paragraph',
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("checkCycles() names an import cycle inside one folder, and ignores type-only and dynamic imports", async () => {
  const root = await plant({
    "lib/history/a.ts": 'import { b } from "./b.ts";\nexport const a = b;\n',
    "lib/history/b.ts": 'import { c } from "./c.ts";\nexport const b = c;\n',
    "lib/history/c.ts": 'import { a } from "./a.ts";\nexport const c = 1 + a;\n',
    "lib/history/d.ts": 'import type { E } from "./e.ts";\nexport type D = E;\n',
    "lib/history/e.ts":
      'import type { D } from "./d.ts";\nexport type E = D | 1;\nexport const f = () => import("./d.ts");\n',
  });
  try {
    assertEquals(await checkCycles(root), [
      "import cycle: lib/history/a.ts -> lib/history/b.ts -> lib/history/c.ts -> lib/history/a.ts",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("this repository's layer folders each have a doc.ts that agrees with docs/DESIGN.md §8, and no layering violation or import cycle", async () => {
  const root = join(import.meta.dirname!, "..", "..");
  const layers = await readLayerTable(join(root, "docs/DESIGN.md"));
  assertEquals(await checkFolderDocs(root, layers), []);
  assertEquals(await checkLayers(root, layers), []);
  assertEquals(await checkCycles(root), []);
});
