/**
 * Cheaper start: the dispatcher loads a command's module
 * only when that command runs, and `ctxsnap --version` and `--help` load no
 * `node:` module (under Deno the first one starts Node.js compatibility) and
 * none of the store, crypto or capture code.
 *
 * @module
 */
import { COMMANDS } from "../../lib/cli/main.ts";
import { assert, assertEquals } from "../_assert.ts";
import { CLI } from "../_cli.ts";

Deno.test("start: every command in the registry loads with the name the registry gives", async () => {
  const names = new Set<string>();
  for (const entry of COMMANDS) {
    const command = await entry.load();
    assertEquals(command.name, entry.name, entry.name);
    assert(entry.summary.length > 0, `${entry.name} has a summary`);
    assert(!names.has(entry.name), `${entry.name} twice`);
    names.add(entry.name);
  }
});

Deno.test("start: the modules loaded before a command runs are a handful, with no node: module", async () => {
  const seen = await staticSpecifiers(CLI);
  const names = seen.map((s) => s.replace(/^.*\/(lib\/|cli\.ts)/, (_, p) => p ?? "cli.ts"));
  assert(!names.some((n) => n.startsWith("node:") || n.startsWith("npm:")), names.join(" "));
  assert(!names.some((n) => /store|crypto|snapshot|share|restore|fs\//.test(n)), names.join(" "));
  assert(seen.length <= 8, `${seen.length} modules: ${names.join(" ")}`);
});

/** The specifiers `root` imports statically, transitively (dynamic imports left out). */
async function staticSpecifiers(root: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", root],
    stdout: "piped",
    stderr: "null",
  }).output();
  const info = JSON.parse(new TextDecoder().decode(out.stdout));
  // deno-lint-ignore no-explicit-any
  const modules = new Map<string, any>(info.modules.map((m: any) => [m.specifier, m]));
  const seen = new Set<string>();
  const stack: string[] = [...info.roots];
  while (stack.length > 0) {
    const specifier = stack.pop()!;
    if (seen.has(specifier)) continue;
    seen.add(specifier);
    for (const dep of modules.get(specifier)?.dependencies ?? []) {
      if (dep.code?.specifier && !dep.isDynamic) stack.push(dep.code.specifier);
    }
  }
  return [...seen];
}

/** The modules `root` imports statically, transitively, named from `lib/`. */
async function staticClosure(root: string): Promise<string[]> {
  return (await staticSpecifiers(root)).map((s) => s.replace(/^.*\/lib\//, ""));
}

Deno.test("start: the hook command hands off to a watch process without loading capture or the workspace modules", async () => {
  const names = await staticClosure(
    new URL("../../lib/cli/commands/hook.ts", import.meta.url).href,
  );
  for (
    const heavy of [
      "cli/command.ts",
      "app/workspace.ts",
      "workspace/capture.ts",
      "workspace/io/walk.ts",
      "history/checkpoint.ts",
      "history/create.ts",
      "keys/identity.ts",
    ]
  ) {
    assert(
      !names.includes(heavy),
      `hook.ts loads ${heavy} before the hand-off: ${names.join(" ")}`,
    );
  }
});
