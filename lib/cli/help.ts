/**
 * The one help renderer, generated from the command tree: `ctxsnap help`
 * and `ctxsnap --help` (the command list), `ctxsnap help CMD`,
 * `ctxsnap CMD --help` and `ctxsnap CMD SUB --help` (a command's usage,
 * options, subcommands and examples), in text and with `--json`.
 *
 * @example
 * ```ts
 * import { overviewText } from "./help.ts";
 * if (!overviewText().includes("restore")) throw new Error("help");
 * ```
 * @module
 */
import { EXIT_MEANINGS } from "../errors.ts";
import type { Command, OptionSpec } from "./args.ts";
import { GLOBAL_OPTIONS } from "./flags.ts";
import { COMMANDS, GROUPS, subcommandsOf, topLevel } from "./registry.ts";

/** The command list: `ctxsnap --help`. */
export function overviewText(): string {
  const top = topLevel();
  const width = Math.max(...top.map((c) => c.name.length));
  return [
    "ctxsnap — a context time machine for agent and research workspaces",
    "",
    "Usage: ctxsnap [--store DIR] [--json] COMMAND [SUBCOMMAND] [ARGS]",
    "",
    "Commands:",
    ...top.map((c) => {
      const subs = subcommandsOf(c.name).map((s) => s.name.slice(c.name.length + 1));
      return `  ${c.name.padEnd(width)}  ${c.summary}${
        subs.length > 0 ? ` (${subs.join(", ")})` : ""
      }`;
    }),
    "",
    "Run `ctxsnap COMMAND --help` for a command's options and examples.",
    "",
    "Exit status:",
    ...EXIT_MEANINGS.map((m) => `  ${String(m.exit).padEnd(4)}${m.meaning}`),
  ].join("\n");
}

/** The command list as `--json` prints it: every command and subcommand, with its summary. */
export function overviewJson(): Record<string, unknown> {
  return {
    commands: COMMANDS.map((c) => ({ name: c.name, summary: c.summary })),
    groups: GROUPS.map((g) => ({ name: g.name, summary: g.summary, default: g.default })),
  };
}

/** The summary the registry gives `name` (a command, a subcommand or a group). */
export function summaryOf(name: string): string {
  return COMMANDS.find((c) => c.name === name)?.summary ??
    GROUPS.find((g) => g.name === name)?.summary ?? "";
}

/** One option's help line (without the indent). */
export function optionLine(name: string, spec: OptionSpec): string {
  const flag = `${spec.short ? `-${spec.short}, ` : "    "}--${name}${
    spec.arg ? ` ${spec.arg}` : ""
  }${spec.values ? `[=${spec.values.join("|")}]` : ""}`;
  return `${flag.padEnd(28)} ${spec.help ?? ""}`;
}

function options(lines: string[], title: string, specs: Record<string, OptionSpec>): void {
  const shown = Object.entries(specs).filter(([, spec]) => spec.help !== undefined);
  if (shown.length === 0) return;
  lines.push("", title);
  for (const [name, spec] of shown) lines.push(`  ${optionLine(name, spec)}`);
}

function subcommandLines(lines: string[], name: string): void {
  const subs = subcommandsOf(name);
  if (subs.length === 0) return;
  const width = Math.max(...subs.map((s) => s.name.length - name.length - 1));
  lines.push("", "Subcommands:");
  for (const sub of subs) {
    lines.push(`  ${sub.name.slice(name.length + 1).padEnd(width)}  ${sub.summary}`);
  }
  lines.push("", `Run \`ctxsnap ${name} SUBCOMMAND --help\` for a subcommand's options.`);
}

/** `ctxsnap CMD --help` for a command or subcommand (with its subcommands, if any). */
export function helpText(command: Command): string {
  const lines = [`ctxsnap ${command.name} — ${summaryOf(command.name)}`, "", "Usage:"];
  for (const usage of command.usage.split("\n")) lines.push(`  ctxsnap ${usage}`);
  if (command.args.length > 0) {
    lines.push("", "Arguments:");
    for (const arg of command.args) {
      const shown = `${arg.name}${arg.repeat ? "..." : ""}${arg.optional ? " (optional)" : ""}`;
      lines.push(`  ${shown.padEnd(28)} ${arg.help}`);
    }
  }
  options(lines, "Options:", command.options);
  options(lines, "Global options:", GLOBAL_OPTIONS);
  subcommandLines(lines, command.name);
  if (command.examples.length > 0) {
    lines.push("", "Examples:");
    for (const example of command.examples) lines.push(`  ${example}`);
  }
  return lines.join("\n");
}

/** `ctxsnap CMD --help --json`. */
export function helpJson(command: Command): Record<string, unknown> {
  return {
    command: command.name,
    summary: summaryOf(command.name),
    usage: command.usage,
    arguments: command.args,
    options: Object.keys(command.options),
    examples: command.examples,
    subcommands: subcommandsOf(command.name).map((s) => ({ name: s.name, summary: s.summary })),
  };
}

/** `ctxsnap GROUP --help` for a name that only groups subcommands (`key`, `remote`). */
export async function groupHelp(name: string): Promise<{ text: string; json: unknown }> {
  const subs = await Promise.all(subcommandsOf(name).map((s) => s.load()));
  const lines = [`ctxsnap ${name} — ${summaryOf(name)}`, "", "Usage:"];
  for (const sub of subs) {
    for (const usage of sub.usage.split("\n")) lines.push(`  ctxsnap ${usage}`);
  }
  subcommandLines(lines, name);
  options(lines, "Global options:", GLOBAL_OPTIONS);
  const examples = subs.flatMap((s) => s.examples);
  if (examples.length > 0) {
    lines.push("", "Examples:");
    for (const example of examples) lines.push(`  ${example}`);
  }
  return {
    text: lines.join("\n"),
    json: {
      command: name,
      summary: summaryOf(name),
      usage: subs.map((s) => s.usage).join("\n"),
      options: [],
      examples,
      subcommands: subcommandsOf(name).map((s) => ({ name: s.name, summary: s.summary })),
    },
  };
}
