/**
 * The standalone executable, end to end (`scripts/e2e_binary.sh`).
 *
 * Building it takes seconds to minutes (and the first build installs a pinned
 * runtime and esbuild from npm), so this test only runs when asked:
 *
 *     CTXSNAP_TEST_COMPILE=1 deno task test tests/scripts/compile_test.ts
 *
 * It tests `$CTXSNAP_BINARY` if set, else `dist/ctxsnap`, building that first
 * with `deno task compile` when it is missing.
 */
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const enabled = Deno.env.get("CTXSNAP_TEST_COMPILE") === "1";

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test({
  name: "compiled executable: e2e without deno, node, HOME or network",
  ignore: !enabled,
  async fn() {
    const binary = Deno.env.get("CTXSNAP_BINARY") ?? `${root}dist/ctxsnap`;
    if (!(await exists(binary))) {
      const build = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", `${root}scripts/compile.ts`, "--out", binary],
        cwd: root,
        stdout: "inherit",
        stderr: "inherit",
      }).output();
      if (build.code !== 0) throw new Error(`deno task compile failed (exit ${build.code})`);
    }
    const e2e = await new Deno.Command("sh", {
      args: [`${root}scripts/e2e_binary.sh`, binary],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(e2e.stdout) + new TextDecoder().decode(e2e.stderr);
    if (e2e.code !== 0 || !/e2e_binary: PASS/.test(out)) {
      throw new Error(`e2e_binary.sh exited ${e2e.code}:\n${out}`);
    }
  },
});
