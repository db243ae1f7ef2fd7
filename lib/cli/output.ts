/**
 * Output for the command line: results on stdout (human text or one JSON
 * document), diagnostics on stderr as `ctxsnap: error: …` / `ctxsnap: hint: …`,
 * colour only on a terminal and never with `NO_COLOR`, progress only when
 * stderr is a terminal. Only `lib/cli` prints.
 *
 * Human-readable text never carries a character a terminal acts on from
 * stored or user text: renderers pass every such value through
 * {@linkcode esc} (so a newline inside it cannot start a line of its own),
 * and {@linkcode Output} escapes whatever reaches it once more, line by line,
 * so no control sequence (`\r`, `ESC [2K`, a bidi override) is ever written
 * by a result, note, warning or error. `--json` output is exact (JSON escapes
 * control characters itself).
 *
 * @example
 * ```ts
 * import { Output } from "./output.ts";
 * const chunks: string[] = [];
 * const out = new Output({ json: true, write: (_fd, text) => chunks.push(String(text)) });
 * out.result({ ok: true }, () => "ok");
 * if (!(JSON.parse(chunks.join("")).ok === true)) throw new Error("Example failed");
 * ```
 * @module
 */
import { CtxsnapError, escapeText, EXIT_MEANINGS, exitCodeOf } from "../errors.ts";
import { getEnv, isTerminal, writeStdio } from "../runtime.ts";

/**
 * Escapes stored or user text for a human-readable line (see
 * {@linkcode escapeText}): controls, newlines and bidi overrides become
 * visible escapes. Every renderer passes each such value through it.
 *
 * @example
 * ```ts
 * import { esc } from "./output.ts";
 * if (esc("fix\nOK: intact") !== "fix\\nOK: intact") throw new Error("newline kept");
 * ```
 */
export const esc: (value: unknown) => string = escapeText;

/** Escapes each line of `text`, keeping the line breaks the renderer itself wrote. */
function escapeLines(text: string): string {
  return text.split("\n").map(escapeText).join("\n");
}

/** Where output goes; fd 1 is stdout, fd 2 is stderr. Bytes only from {@linkcode Output.raw}. */
export type Writer = (fd: 1 | 2, text: string | Uint8Array) => void;

function defaultWrite(fd: 1 | 2, text: string | Uint8Array): void {
  writeStdio(fd, typeof text === "string" ? new TextEncoder().encode(text) : text);
}

/** Options for {@linkcode Output}. */
export interface OutputOptions {
  /** Emit one JSON document instead of human text. */
  json: boolean;
  /** Override the writer (tests). */
  write?: Writer;
  /** Suppress progress and notes. */
  quiet?: boolean;
}

/** Formats and writes everything a command shows. */
export class Output {
  /** Whether `--json` is in effect. */
  readonly json: boolean;
  /** Whether colour may be used on stdout. */
  readonly color: boolean;
  private readonly write: Writer;
  private readonly quiet: boolean;
  private readonly progressOn: boolean;
  private progressShown = false;
  private resultWritten = false;
  private lastProgress = 0;
  private readonly startedAt = Date.now();

  /** Creates an output. */
  constructor(options: OutputOptions) {
    this.json = options.json;
    this.write = options.write ?? defaultWrite;
    this.quiet = options.quiet ?? false;
    const noColor = (getEnv("NO_COLOR") ?? "") !== "";
    this.color = !noColor && !this.json && options.write === undefined && isTerminal(1);
    this.progressOn = !this.quiet && options.write === undefined && isTerminal(2);
  }

  /** Writes the command's result: `value` as JSON with `--json`, else `human()`. */
  result(value: unknown, human: () => string): void {
    this.clearProgress();
    this.resultWritten = true;
    if (this.json) {
      this.write(1, JSON.stringify(value, null, 2) + "\n");
    } else {
      const text = escapeLines(human());
      if (text !== "") this.write(1, text.endsWith("\n") ? text : text + "\n");
    }
  }

  /** Writes raw text or bytes to stdout (publish to `-`, key export). */
  raw(text: string | Uint8Array): void {
    this.write(1, text);
  }

  /** A note on stderr (`ctxsnap: …`), suppressed with `--quiet`. */
  note(message: string): void {
    if (this.quiet) return;
    this.clearProgress();
    this.write(2, `ctxsnap: ${escapeText(message)}\n`);
  }

  /** A warning on stderr. */
  warn(message: string): void {
    this.clearProgress();
    this.write(2, `ctxsnap: warning: ${escapeText(message)}\n`);
  }

  /** Reports an error on stderr (and as JSON on stdout with `--json`); returns the exit status. */
  error(error: unknown): number {
    this.clearProgress();
    const code = exitCodeOf(error);
    const message = error instanceof Error ? error.message : String(error);
    const hint = error instanceof CtxsnapError ? error.hint : undefined;
    const kind = error instanceof CtxsnapError ? error.code : "failure";
    this.write(2, `ctxsnap: error: ${escapeText(message)}\n`);
    if (hint !== undefined) this.write(2, `ctxsnap: hint: ${escapeText(hint)}\n`);
    if (!(error instanceof CtxsnapError) && error instanceof Error && getEnv("CTXSNAP_DEBUG")) {
      this.write(2, `${escapeLines(error.stack ?? "")}\n`);
    }
    // One JSON document per run: a command that already printed its result
    // (e.g. a verify report saying "untrusted") does not add an error document.
    if (this.json && !this.resultWritten) {
      this.write(
        1,
        JSON.stringify(
          { error: { code: kind, exit: code, message, hint: hint ?? null } },
          null,
          2,
        ) +
          "\n",
      );
    }
    return code;
  }

  /**
   * Reports an error as one escaped line on stderr (`WHO: error: MESSAGE
   * (hint: HINT); nothing recorded`), for a command that must not fail its
   * caller (the agent hook); with `--json` the error document is printed too.
   */
  errorLine(error: unknown, who: string): void {
    this.clearProgress();
    const message = error instanceof Error ? error.message : String(error);
    const hint = error instanceof CtxsnapError ? error.hint : undefined;
    let line = `${message}${hint === undefined ? "" : ` (hint: ${hint})`}`
      // deno-lint-ignore no-control-regex
      .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "") // a runtime error's colours
      .replace(/\s*\r?\n\s*/g, " | ");
    line = escapeText(line);
    if (line.length > 1000) line = `${line.slice(0, 1000)}…`;
    this.write(2, `${who}: error: ${line}; nothing recorded, the agent continues\n`);
    if (this.json && !this.resultWritten) {
      const kind = error instanceof CtxsnapError ? error.code : "failure";
      this.write(
        1,
        JSON.stringify({
          error: { code: kind, exit: exitCodeOf(error), message, hint: hint ?? null },
        }) + "\n",
      );
    }
  }

  /** Shows `label done/total` on a terminal, at most ~10 times a second, after one second. */
  progress(label: string, done: number, total?: number): void {
    if (!this.progressOn) return;
    const now = Date.now();
    if (now - this.startedAt < 1000 || now - this.lastProgress < 100) return;
    this.lastProgress = now;
    const count = total === undefined ? `${done}` : `${done}/${total}`;
    this.write(2, `\r\x1b[2Kctxsnap: ${escapeText(label)} ${count}`);
    this.progressShown = true;
  }

  /** Erases the progress line, if any. */
  clearProgress(): void {
    if (!this.progressShown) return;
    this.write(2, "\r\x1b[2K");
    this.progressShown = false;
  }

  /** Bold text when colour is on. */
  bold(text: string): string {
    return this.color ? `\x1b[1m${text}\x1b[0m` : text;
  }

  /** Dim text when colour is on. */
  dim(text: string): string {
    return this.color ? `\x1b[2m${text}\x1b[0m` : text;
  }
}

/** The exit-code table for `--help` (statuses 1 and up; the caller prints 0's line). */
export const EXIT_TABLE: string = EXIT_MEANINGS.filter((m) => m.exit !== 0)
  .map((m) => `  ${String(m.exit).padEnd(4)}${m.meaning}`)
  .join("\n");
