// deno-lint-ignore-file no-console
/**
 * Runs `deno doc --lint` on every export path of `deno.json`, one path at a
 * time: run together, the files would vouch for each other (a type one path
 * exports would count as public for another that only mentions it), so a
 * program importing that one path could not name the type. The command
 * line's entry (`./cli`) has no library surface and is skipped.
 *
 * Run by `deno task check`; exits 1 naming each path that fails.
 *
 * @example
 * ```ts ignore
 * import { exportFiles } from "./doc_lint.ts";
 * const files = await exportFiles(".");
 * if (!files.includes("./mod.ts")) throw new Error("mod.ts is the root export");
 * ```
 *
 * @module
 */
import { join } from "node:path";

/** The files of `root/deno.json`'s export paths, except `./cli`. */
export async function exportFiles(root: string): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(join(root, "deno.json")));
  return Object.entries(config.exports as Record<string, string>)
    .filter(([name]) => name !== "./cli")
    .map(([, file]) => file);
}

if (import.meta.main) {
  const failed: string[] = [];
  for (const file of await exportFiles(".")) {
    const { code } = await new Deno.Command(Deno.execPath(), {
      args: ["doc", "--lint", file],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (code !== 0) failed.push(file);
  }
  if (failed.length > 0) {
    console.error(`deno doc --lint failed for ${failed.join(", ")}`);
    Deno.exit(1);
  }
}
