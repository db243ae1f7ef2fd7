/**
 * The tree cache against random edits: every capture stores exactly the
 * tree a capture without any cache computes.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { checked, KEY, put, settle, withWorkspace, writeTree } from "../_known_dirs.ts";

Deno.test("captureWorkspace() keeps directories after random edits exactly as a capture without a cache computes", async () => {
  await withWorkspace(async (store, root) => {
    writeTree(root);
    await settle();
    checked(store);
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const dirs = ["", "d0", "d1", "d2", "d3", "d0/sub", "d2/sub", "new", "new/deep"];
    for (let round = 0; round < 60; round++) {
      const dir = dirs[random(dirs.length)]!;
      const at = (name: string) => (dir === "" ? name : `${dir}/${name}`);
      const name = `g${random(4)}.txt`;
      switch (random(9)) {
        case 0:
          put(root, at(name), `round ${round}\n`);
          break;
        case 1:
          fs.rmSync(join(root, at(name)), { force: true });
          break;
        case 2:
          put(root, at(".gitignore"), random(2) === 0 ? "g1.txt\n" : "sub/\n");
          break;
        case 3:
          fs.rmSync(join(root, at(".gitignore")), { force: true });
          break;
        case 4:
          fs.mkdirSync(join(root, dir), { recursive: true });
          fs.rmSync(join(root, at("link")), { force: true });
          fs.symlinkSync(`target-${random(3)}`, join(root, at("link")));
          break;
        case 5:
          put(root, at("keys.txt"), random(2) === 0 ? KEY : "harmless\n");
          break;
        case 6:
          if (dir !== "") fs.rmSync(join(root, dir), { recursive: true, force: true });
          break;
        case 7:
          fs.mkdirSync(join(root, at("empty")), { recursive: true });
          break;
        default:
          // Nothing changes: the next capture keeps everything it can.
          break;
      }
      checked(store);
      if (round % 20 === 19) await settle();
    }
  });
});
