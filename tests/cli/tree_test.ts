/**
 * Tests of the command tree (`lib/cli/registry.ts`): every command and
 * subcommand takes only the flags it declares, a flag has one type across
 * the tree, help is generated from it, commands do not import each other,
 * and docs/CLI.md documents exactly what it declares.
 *
 * @module
 */
import { join } from "node:path";
import { type Command, parseCommandArgs } from "../../lib/cli/args.ts";
import { GLOBAL_OPTIONS } from "../../lib/cli/flags.ts";
import { COMMANDS, GROUPS } from "../../lib/cli/registry.ts";
import { UsageError } from "../../lib/errors.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { expectCode, REPO, tempWorkspace } from "../_cli.ts";

async function tree(): Promise<Command[]> {
  return await Promise.all(COMMANDS.map((entry) => entry.load()));
}

/** Every flag name any command declares. */
function allFlags(commands: Command[]): Set<string> {
  return new Set(commands.flatMap((c) => Object.keys(c.options)));
}

async function refused(
  args: string[],
  flag: string,
  command: string,
  owner: string,
): Promise<void> {
  const ws = await tempWorkspace();
  try {
    expectCode(await ws.run(["init"]), 0, "init");
    const result = await ws.run(args);
    expectCode(result, 2, args.join(" "));
    assert(
      result.stderr.includes(
        `ctxsnap: error: Option ${flag} does not apply to \`ctxsnap ${command}\``,
      ),
      result.stderr,
    );
    assert(
      result.stderr.includes(`ctxsnap: hint: ${flag} is an option of \`ctxsnap ${owner}\``),
      result.stderr,
    );
    assertEquals(result.stdout, "");
  } finally {
    await ws.cleanup();
  }
}

Deno.test("key show --force is a usage error (exit 2): --force belongs to key import", async () => {
  await refused(["key", "show", "--force"], "--force", "key show", "key import");
});

Deno.test("session show --task X is a usage error (exit 2): --task belongs to session set", async () => {
  await refused(["session", "show", "--task", "X"], "--task", "session show", "session set");
});

Deno.test("remote list --region x is a usage error (exit 2): --region belongs to remote add", async () => {
  await refused(["remote", "list", "--region", "x"], "--region", "remote list", "remote add");
});

Deno.test("a group's default subcommand refuses another subcommand's flag too (key --force, remote --region x)", async () => {
  await refused(["key", "--force"], "--force", "key show", "key import");
  await refused(["remote", "--region", "x"], "--region", "remote list", "remote add");
});

Deno.test("property: every command refuses every flag it does not declare, and accepts each it does", async () => {
  const commands = await tree();
  const flags = [...allFlags(commands), "no-such-flag", "workspace-x"];
  let checked = 0;
  for (const command of commands) {
    for (const name of flags) {
      const declared = command.options[name] ?? GLOBAL_OPTIONS[name];
      const bare = `--${name}`;
      if (declared === undefined) {
        const error = assertThrows(() => parseCommandArgs(command, [bare]), UsageError);
        assert(
          error.message.includes(`--${name} does not apply to \`ctxsnap ${command.name}\``),
          `${command.name} ${bare}: ${error.message}`,
        );
        checked++;
      } else {
        const argv = declared.type === "string" ? [bare, "1"] : [bare];
        const parsed = parseCommandArgs(command, argv);
        assert(parsed.values[name] !== undefined, `${command.name} ${argv.join(" ")}`);
      }
    }
  }
  assert(checked > COMMANDS.length * 10, `only ${checked} refusals checked`);
});

Deno.test("each flag name has one type across the command tree (and the old spellings name the new one)", async () => {
  const commands = await tree();
  const types = new Map<string, Map<string, string[]>>();
  for (const command of commands) {
    for (const [name, spec] of Object.entries({ ...GLOBAL_OPTIONS, ...command.options })) {
      const type = JSON.stringify([
        spec.type,
        spec.multiple === true,
        spec.values ?? null,
        spec.short ?? null,
      ]);
      const byType = types.get(name) ?? new Map<string, string[]>();
      byType.set(type, [...(byType.get(type) ?? []), command.name]);
      types.set(name, byType);
    }
  }
  const mixed = [...types].filter(([, byType]) => byType.size > 1).map(([name, byType]) =>
    `--${name}: ${[...byType].map(([type, where]) => `${type} on ${where.join(", ")}`).join("; ")}`
  );
  assertEquals(mixed, []);
  // The renamed flags: the old spelling is refused, naming the new one.
  const restore = commands.find((c) => c.name === "restore")!;
  for (const [old, now] of [["workspace", "--files"], ["session", "--session-state"]]) {
    const error = assertThrows(() => parseCommandArgs(restore, [`--${old}`]), UsageError);
    assert(error.hint?.includes(`use ${now}`), error.hint);
  }
  const publish = commands.find((c) => c.name === "publish")!;
  const error = assertThrows(() => parseCommandArgs(publish, ["--all"]), UsageError);
  assert(error.hint?.includes("use --history all"), error.hint);
});

Deno.test("an unknown subcommand is a usage error naming the subcommands; a known one takes its own arguments", async () => {
  const ws = await tempWorkspace();
  try {
    const result = await ws.run(["key", "frobnicate"]);
    expectCode(result, 2, "key frobnicate");
    assert(result.stderr.includes('Unknown key subcommand "frobnicate"'), result.stderr);
    assert(result.stderr.includes("one of: show, export, import, trust, untrust, list"));
    // Global flags may come between a command and its subcommand.
    const list = await ws.run(["key", "--json", "list"]);
    expectCode(list, 0, "key --json list");
    assertEquals(list.json(), { keys: [] });
  } finally {
    await ws.cleanup();
  }
});

Deno.test("help is rendered from the tree: help, CMD --help, CMD SUB --help and help CMD SUB agree, listing each declared argument and flag", async () => {
  const ws = await tempWorkspace();
  try {
    const overview = await ws.run(["help"]);
    expectCode(overview, 0, "help");
    for (const top of new Set(COMMANDS.map((c) => c.name.split(" ")[0]!))) {
      assert(overview.stdout.includes(`\n  ${top} `), `help lists ${top}`);
    }
    for (const entry of COMMANDS) {
      const command = await entry.load();
      const path = entry.name.split(" ");
      const own = await ws.run([...path, "--help"]);
      expectCode(own, 0, `${entry.name} --help`);
      assert(own.stdout.startsWith(`ctxsnap ${entry.name} — ${entry.summary}\n`), own.stdout);
      for (const name of Object.keys(command.options)) {
        assert(own.stdout.includes(`--${name}`), `${entry.name} --help shows --${name}`);
      }
      for (const arg of command.args) {
        assert(own.stdout.includes(`\n  ${arg.name}`), `${entry.name} --help shows ${arg.name}`);
      }
      const viaHelp = await ws.run(["help", ...path]);
      assertEquals(viaHelp.stdout, own.stdout, `help ${entry.name}`);
      const json = await ws.run([...path, "--help", "--json"]);
      assertEquals(json.json().options, Object.keys(command.options));
    }
    for (const group of GROUPS) {
      const help = await ws.run([group.name, "--help"]);
      expectCode(help, 0, `${group.name} --help`);
      for (const sub of COMMANDS.filter((c) => c.name.startsWith(`${group.name} `))) {
        assert(help.stdout.includes(sub.name.slice(group.name.length + 1)), sub.name);
      }
    }
    expectCode(await ws.run(["help", "key", "nope"]), 2, "help of an unknown subcommand");
  } finally {
    await ws.cleanup();
  }
});

Deno.test("commands do not import each other: shared code lives in lib/cli's _ files", async () => {
  const dir = join(REPO, "lib", "cli", "commands");
  const offenders: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for await (const entry of Deno.readDir(at)) {
      const file = join(at, entry.name);
      if (entry.isDirectory) await walk(file);
      else if (entry.name.endsWith(".ts")) {
        const text = await Deno.readTextFile(file);
        for (const m of text.matchAll(/(?:from|import\()\s*"([^"]+)"/g)) {
          if (!m[1]!.startsWith(".")) continue;
          const target = join(at, m[1]!);
          const base = target.split("/").at(-1)!;
          if (target.startsWith(dir + "/") && !base.startsWith("_")) {
            offenders.push(`${file.slice(REPO.length + 1)} imports ${m[1]}`);
          }
        }
      }
    }
  };
  await walk(dir);
  assertEquals(offenders, []);
});

/** The sections of docs/CLI.md by `## NAME` heading. */
function sections(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const parts = text.split(/^## /m).slice(1);
  for (const part of parts) {
    const newline = part.indexOf("\n");
    out.set(part.slice(0, newline).trim(), part.slice(newline + 1));
  }
  return out;
}

/** The flags a section declares: in its usage block (the first code block) and its option tables. */
function documentedFlags(section: string): Set<string> {
  const flags = new Set<string>();
  const usage = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  const rows = section.split("\n").filter((line) => /^\| `-/.test(line)).map((l) =>
    l.split("|")[1]!
  );
  for (const text of [usage, ...rows]) {
    for (const m of text.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g)) flags.add(m[1]!);
  }
  return flags;
}

Deno.test("docs/CLI.md documents every command, subcommand, argument and flag the tree declares, and no flag it does not", async () => {
  const text = await Deno.readTextFile(join(REPO, "docs", "CLI.md"));
  const bySection = sections(text);
  const commands = await tree();
  const problems: string[] = [];
  const tops = new Set(COMMANDS.map((c) => c.name.split(" ")[0]!));
  for (const top of tops) {
    const section = bySection.get(top);
    if (section === undefined) {
      problems.push(`no "## ${top}" section`);
      continue;
    }
    const leaves = commands.filter((c) => c.name === top || c.name.startsWith(`${top} `));
    const declared = new Set(Object.keys(GLOBAL_OPTIONS));
    for (const leaf of leaves) {
      const [, sub] = leaf.name.split(" ");
      if (sub !== undefined && !new RegExp(`ctxsnap ${top} \\[?${sub}\\b`).test(section)) {
        problems.push(`"## ${top}" does not show \`ctxsnap ${leaf.name}\``);
      }
      const usage = /```\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
      for (const arg of leaf.args) {
        if (!arg.name.split("|").every((part) => usage.includes(part))) {
          problems.push(`"## ${top}" usage does not show ${arg.name} (of ${leaf.name})`);
        }
      }
      for (const name of Object.keys(leaf.options)) {
        declared.add(name);
        if (!new RegExp(`(?<![\\w-])--${name}(?![\\w-])`).test(section)) {
          problems.push(`"## ${top}" does not document --${name} (of ${leaf.name})`);
        }
      }
    }
    for (const name of documentedFlags(section)) {
      if (!declared.has(name) && name !== "version") {
        problems.push(`"## ${top}" documents --${name}, which ${top} does not take`);
      }
    }
  }
  for (const heading of bySection.keys()) {
    if (/^[a-z]+$/.test(heading) && !tops.has(heading)) {
      problems.push(`"## ${heading}" documents a command the tree does not have`);
    }
  }
  assertEquals(problems, []);
});
