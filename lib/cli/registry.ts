/**
 * The command tree: every command and subcommand of the CLI, by its path
 * as typed (`restore`, `key show`, `remote add`), with its one-line summary
 * (written here only) and a loader. A command's module, and what it
 * imports (the store, crypto, capture), is loaded only when it runs or its
 * help is shown, so `--version` and `--help` load almost nothing.
 *
 * Adding a subcommand is one file under `lib/cli/commands/` exporting a
 * {@linkcode Command} named by its path, plus one line here. A name with
 * subcommands runs the leaf of its own name if there is one (`hook
 * claude-code`), else its group's default (`key` is `key show`).
 *
 * @example
 * ```ts
 * import { COMMANDS, resolveCommand } from "./registry.ts";
 * const found = resolveCommand("key", ["--json", "list"]);
 * if (found.entry?.name !== "key list" || found.rest.join(" ") !== "--json") throw new Error("tree");
 * if (!COMMANDS.some((c) => c.name === "restore")) throw new Error("registry");
 * ```
 * @module
 */
import type { Command } from "./args.ts";

/** A command as the dispatcher knows it before loading it. */
export interface CommandEntry {
  /** Its path as typed: `init`, or `key show` for a subcommand. */
  name: string;
  /** One line for the command list and the top of its help. */
  summary: string;
  /** Loads the command. */
  load(): Promise<Command>;
}

/** A name that only groups subcommands (no leaf of its own). */
export interface GroupEntry {
  /** The group's name (`key`). */
  name: string;
  /** One line for the command list. */
  summary: string;
  /** The subcommand run when none is named (`show` for `key`). */
  default: string;
}

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "init",
    summary: "create a store for this workspace, or adopt one you did not create here",
    load: async () => (await import("./commands/init.ts")).init,
  },
  {
    name: "create",
    summary: "capture the workspace and session into a signed snapshot",
    load: async () => (await import("./commands/create.ts")).create,
  },
  {
    name: "list",
    summary: "list snapshots, newest first",
    load: async () => (await import("./commands/list.ts")).list,
  },
  {
    name: "show",
    summary: "show what a snapshot recorded",
    load: async () => (await import("./commands/show.ts")).show,
  },
  {
    name: "verify",
    summary: "check snapshots: id, signature, signer trust, tree and every blob",
    load: async () => (await import("./commands/verify.ts")).verify,
  },
  {
    name: "diff",
    summary: "show what changed between snapshots: files and session",
    load: async () => (await import("./commands/diff.ts")).diff,
  },
  {
    name: "restore",
    summary: "restore a snapshot's workspace and session, three-way, losing nothing",
    load: async () => (await import("./commands/restore.ts")).restore,
  },
  {
    name: "switch",
    summary: "switch to a branch, moving the workspace files to its head (three-way)",
    load: async () => (await import("./commands/switch.ts")).switchCommand,
  },
  {
    name: "recover",
    summary: "finish an interrupted restore, switch, undo or redo, or --abort it",
    load: async () => (await import("./commands/recover.ts")).recover,
  },
  {
    name: "undo",
    summary: "revert the last operation that changed the workspace, the session or a branch",
    load: async () => (await import("./commands/undo.ts")).undo,
  },
  {
    name: "redo",
    summary: "re-apply the operation the last undo reverted",
    load: async () => (await import("./commands/undo.ts")).redo,
  },
  {
    name: "branch list",
    summary: "list the branches of a session",
    load: async () => (await import("./commands/branch/list.ts")).branchList,
  },
  {
    name: "branch switch",
    summary: "switch to a branch, moving the workspace files to its head (same as switch)",
    load: async () => alias((await import("./commands/switch.ts")).switchCommand, "branch switch"),
  },
  {
    name: "fork",
    summary: "start a new branch at a snapshot",
    load: async () => (await import("./commands/fork.ts")).fork,
  },
  {
    name: "log",
    summary:
      "show the operations log: creates, restores, switches, undos, edits, forks, imports, gc",
    load: async () => (await import("./commands/log.ts")).log,
  },
  {
    name: "timeline",
    summary: "write the timeline as one self-contained HTML page (graph, context, signers, diffs)",
    load: async () => (await import("./commands/timeline.ts")).timeline,
  },
  {
    name: "serve",
    summary: "serve the timeline page live on 127.0.0.1 (read-only, token in the URL)",
    load: async () => (await import("./commands/serve.ts")).serve,
  },
  {
    name: "forget",
    summary: "remove snapshots (objects are freed by gc)",
    load: async () => (await import("./commands/forget.ts")).forget,
  },
  {
    name: "gc",
    summary: "remove trees and blobs that no retained snapshot references; return the disk",
    load: async () => (await import("./commands/gc.ts")).gc,
  },
  {
    name: "materialize",
    summary: "write a snapshot's tree, or some paths of it, into a directory (deletes nothing)",
    load: async () => (await import("./commands/materialize.ts")).materialize,
  },
  {
    name: "publish",
    summary: "write a snapshot to a portable, verifiable file",
    load: async () => (await import("./commands/publish.ts")).publish,
  },
  {
    name: "import",
    summary:
      "verify a published snapshot, bundle or lean-ctx snapshot, then add it on a quarantine branch",
    load: async () => (await import("./commands/import.ts")).importCommand,
  },
  {
    name: "remote list",
    summary: "list the remotes of this store",
    load: async () => (await import("./commands/remote/list.ts")).remoteList,
  },
  {
    name: "remote add",
    summary: "add a remote: an S3 prefix or a shared directory",
    load: async () => (await import("./commands/remote/add.ts")).remoteAdd,
  },
  {
    name: "remote remove",
    summary: "forget a remote (nothing on the remote is touched)",
    load: async () => (await import("./commands/remote/remove.ts")).remoteRemove,
  },
  {
    name: "push",
    summary: "upload snapshots and a signed ref to a remote",
    load: async () => (await import("./commands/push.ts")).push,
  },
  {
    name: "pull",
    summary: "download, verify and quarantine what a remote has that this store lacks",
    load: async () => (await import("./commands/pull.ts")).pull,
  },
  {
    name: "clone",
    summary: "create a workspace and store from a remote",
    load: async () => (await import("./commands/clone.ts")).clone,
  },
  {
    name: "session show",
    summary: "show the live session state",
    load: async () => (await import("./commands/session/show.ts")).sessionShow,
  },
  {
    name: "session set",
    summary: "set the session's task or progress",
    load: async () => (await import("./commands/session/set.ts")).sessionSet,
  },
  {
    name: "session decide",
    summary: "record a decision in the session",
    load: async () => (await import("./commands/session/decide.ts")).sessionDecide,
  },
  {
    name: "session finding",
    summary: "record a finding in the session",
    load: async () => (await import("./commands/session/finding.ts")).sessionFinding,
  },
  {
    name: "session know",
    summary: "record a piece of knowledge in the session",
    load: async () => (await import("./commands/session/know.ts")).sessionKnow,
  },
  {
    name: "session touch",
    summary: "record files the session touched",
    load: async () => (await import("./commands/session/touch.ts")).sessionTouch,
  },
  {
    name: "session remove",
    summary: "remove a decision, finding, piece of knowledge or file from the session",
    load: async () => (await import("./commands/session/remove.ts")).sessionRemove,
  },
  {
    name: "session list",
    summary: "list the sessions of the store",
    load: async () => (await import("./commands/session/list.ts")).sessionList,
  },
  {
    name: "session switch",
    summary: "make another session the current one",
    load: async () => (await import("./commands/session/switch.ts")).sessionSwitch,
  },
  {
    name: "key show",
    summary: "show this machine's key id, public key and key file",
    load: async () => (await import("./commands/key/show.ts")).keyShow,
  },
  {
    name: "key export",
    summary: "print this machine's public key as PEM",
    load: async () => (await import("./commands/key/export.ts")).keyExport,
  },
  {
    name: "key import",
    summary: "make a lean-ctx signing key this machine's identity",
    load: async () => (await import("./commands/key/import.ts")).keyImport,
  },
  {
    name: "key trust",
    summary: "trust a signer's public key",
    load: async () => (await import("./commands/key/trust.ts")).keyTrust,
  },
  {
    name: "key untrust",
    summary: "stop trusting a key",
    load: async () => (await import("./commands/key/untrust.ts")).keyUntrust,
  },
  {
    name: "key list",
    summary: "list the trusted keys",
    load: async () => (await import("./commands/key/list.ts")).keyList,
  },
  {
    name: "watch",
    summary:
      "watch the workspace and make checkpoints for create and hooks at the speed of a change",
    load: async () => (await import("./commands/watch.ts")).watch,
  },
  {
    name: "hook",
    summary: "checkpoint for an agent harness's hook event (JSON on stdin); never fails the agent",
    load: async () => (await import("./commands/hook.ts")).hook,
  },
  {
    name: "hook install",
    summary: "merge ctxsnap's hooks into an agent's project configuration, keeping everything else",
    load: async () => (await import("./commands/hook/install.ts")).hookInstall,
  },
  {
    name: "resume",
    summary: "rewind files and conversation to before prompt N of an agent session, then continue",
    load: async () => (await import("./commands/resume.ts")).resume,
  },
  {
    name: "mcp",
    summary: "serve the store to an agent over the Model Context Protocol (stdio)",
    load: async () => (await import("./commands/mcp.ts")).mcp,
  },
];

/** `command` under another path in the tree (`branch switch` is `switch`). */
function alias(command: Command, name: string): Command {
  return {
    ...command,
    name,
    usage: command.usage.split("\n").map((u) => u.replace(command.name, name)).join("\n"),
  };
}

/** The names that only group subcommands, with the subcommand each runs by default. */
export const GROUPS: readonly GroupEntry[] = [
  {
    name: "branch",
    summary: "list branches, or switch to one (moving the workspace)",
    default: "list",
  },
  {
    name: "remote",
    summary: "add, list or remove the remotes snapshots are pushed to and pulled from",
    default: "list",
  },
  {
    name: "session",
    summary: "show or edit the live session state that the next snapshot records",
    default: "show",
  },
  {
    name: "key",
    summary: "show, export or import (from lean-ctx) this machine's key; manage trusted keys",
    default: "show",
  },
];

/** The top-level names in `--help` order, each with its summary (a group's, or its leaf's). */
export function topLevel(): { name: string; summary: string }[] {
  const seen = new Map<string, string>();
  for (const entry of COMMANDS) {
    const top = entry.name.split(" ")[0]!;
    if (seen.has(top)) continue;
    const group = GROUPS.find((g) => g.name === top);
    const leaf = COMMANDS.find((c) => c.name === top);
    seen.set(top, leaf?.summary ?? group?.summary ?? entry.summary);
  }
  return [...seen].map(([name, summary]) => ({ name, summary }));
}

/** The subcommands of `name` (`key` → `key show`, `key export`, …), empty for a plain command. */
export function subcommandsOf(name: string): CommandEntry[] {
  return COMMANDS.filter((c) => c.name.startsWith(`${name} `));
}

/** Global options that may come between a command and its subcommand (`key --json list`). */
const GLOBAL_FLAGS = ["--json", "--quiet", "-q"];

/**
 * Which command `ctxsnap NAME REST…` runs: a subcommand when the first
 * argument after the global flags names one (it is taken out of `rest`),
 * else the leaf called NAME, else its group's default. `word` is that first
 * argument when it names no subcommand (for the "unknown subcommand"
 * message); `group` is set when NAME has subcommands.
 */
export function resolveCommand(
  name: string,
  rest: readonly string[],
): {
  entry: CommandEntry | undefined;
  rest: string[];
  group: string | undefined;
  word: string | undefined;
} {
  const subs = subcommandsOf(name);
  const leaf = COMMANDS.find((c) => c.name === name);
  if (subs.length === 0) return { entry: leaf, rest: [...rest], group: undefined, word: undefined };
  let i = 0;
  while (i < rest.length) {
    const arg = rest[i]!;
    if (arg === "--store") i += 2;
    else if (arg.startsWith("--store=") || GLOBAL_FLAGS.includes(arg)) i += 1;
    else break;
  }
  const word = rest[i];
  const sub = word === undefined ? undefined : subs.find((c) => c.name === `${name} ${word}`);
  if (sub !== undefined) {
    return { entry: sub, rest: rest.filter((_, j) => j !== i), group: name, word: undefined };
  }
  const group = GROUPS.find((g) => g.name === name);
  const fallback = leaf ?? subs.find((c) => c.name === `${name} ${group?.default}`);
  return {
    entry: fallback,
    rest: [...rest],
    group: name,
    word: word !== undefined && !word.startsWith("-") ? word : undefined,
  };
}
