/**
 * Errors for a model (layer: cli): a failed command's error and hint are
 * reworded in the terms of the tools, never the command line's. Each tool
 * names how its command's flags read as tool arguments (`--force` becomes
 * `force: true`, `--dry-run` of a restore becomes `restore_preview`); the
 * commands every tool may mention (`ctxsnap list`, `ctxsnap verify --all`)
 * become tool calls; a hint that still needs the command line (`ctxsnap
 * recover`) is addressed to the user; any other flag is never shown.
 *
 * @example
 * ```ts
 * import { toolError } from "./_wording.ts";
 * const text = toolError(
 *   { message: "Restore refused: 1 path(s) in conflict", hint: "see them with --dry-run; --force first snapshots" },
 *   { "--dry-run": "restore_preview", "--force": "force: true" },
 * );
 * if (text.includes("--")) throw new Error("no flags");
 * ```
 * @module
 */

/** How a tool says its command's flags (longest first is not needed: they are matched whole). */
export type Words = Readonly<Record<string, string>>;

/** What every tool says for the commands a hint may name. */
const COMMON: Words = {
  "ctxsnap verify --all": "the verify tool with all: true",
  "ctxsnap list --all": "the list tool with all: true",
  "ctxsnap list": "the list tool",
  "ctxsnap branch": "the list tool with all: true",
  "ctxsnap undo": "the undo tool",
  "ctxsnap redo": "the redo tool",
  "publish --with-workspace": "publish with with_workspace: true",
};

/** A flag, not inside a word. */
const FLAG = /(^|[\s(`'"[{,;:])--([a-z][a-z0-9-]*)(=[^\s`'")\],;]*)?/g;

function translate(text: string, words: Words): string {
  let out = text;
  const all = { ...words, ...COMMON };
  const keys = Object.keys(all).sort((a, b) => b.length - a.length);
  for (const key of keys) {
    out = out.replaceAll(`\`${key}\``, all[key]!).replaceAll(key, all[key]!);
  }
  return out;
}

/**
 * An error's `message` and `hint` in the tool's terms (`words`): a flag left
 * in the message is named as the argument it would be; a hint that needs
 * the command line is addressed to the user, and one naming a flag no tool
 * argument stands for is dropped (null).
 */
export function speak(
  error: { message: string; hint: string | null | undefined },
  words: Words,
): { message: string; hint: string | null } {
  const message = translate(error.message, words).replace(
    FLAG,
    (_all, before: string, name: string) => `${before}${name.replaceAll("-", "_")}`,
  );
  let hint = error.hint ? translate(error.hint, words) : null;
  if (hint !== null && /\bctxsnap [a-z]/.test(hint)) {
    hint = `for the user, on the command line: ${hint}`;
  } else if (hint !== null && new RegExp(FLAG.source).test(hint)) {
    hint = null;
  }
  return { message, hint: hint === "" ? null : hint };
}

/** One error for the model: {@linkcode speak}'s message, then its hint. */
export function toolError(
  error: { message: string; hint: string | null | undefined },
  words: Words,
): string {
  const { message, hint } = speak(error, words);
  return hint === null ? message : `${message}\nhint: ${hint}`;
}
