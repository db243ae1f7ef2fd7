/**
 * Nested `.gitignore` and `.ctxsnapignore` matching with git semantics
 * (negation with `!`, directory-only patterns ending in `/`, anchoring with a
 * leading or inner `/`, `**`), built on the `ignore` package, the standard
 * gitignore matcher.
 *
 * Each ignore file applies to its own directory and everything below it, with
 * paths taken relative to that directory. Precedence:
 *
 * 1. All `.gitignore` files are consulted first, outermost to innermost; the
 *    last matching rule wins, so a deeper file overrides a shallower one.
 * 2. Then all `.ctxsnapignore` files, in the same order. If any of their rules
 *    matches, it decides, so `.ctxsnapignore` can both add exclusions and
 *    re-include (`!pattern`) what a `.gitignore` excludes.
 *
 * As in git, a file inside an ignored directory cannot be re-included: the
 * walker never descends into an ignored directory. A missing ignore file adds
 * no rules. One that exists but cannot be applied (a symlink or not a regular
 * file, larger than {@linkcode MAX_IGNORE_FILE_BYTES}, unreadable) fails
 * closed: {@linkcode IgnoreStack.child} throws {@linkcode IgnoreFileError}
 * and the walker leaves that directory out.
 * Matching is case-sensitive (git's default on Linux).
 *
 * @example
 * ```ts
 * import { IgnoreStack } from "./ignore.ts";
 *
 * const stack = IgnoreStack.root().withRules("", ["*.log", "build/"], ["!keep.log"]);
 * if (!(stack.ignores("debug.log", false))) throw new Error("Example failed");
 * if (!(!stack.ignores("keep.log", false))) throw new Error("Example failed");
 * if (!(stack.ignores("build", true))) throw new Error("Example failed");
 * if (!(!stack.ignores("build", false))) throw new Error("Example failed"); // "build/" only matches directories
 * ```
 * @module
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  type Stats,
} from "node:fs";
import { join } from "node:path";
import ignore, { type Ignore } from "npm:ignore@7.0.5";
import { type CtxsnapErrorOptions, errnoOf, IntegrityError, quote } from "../../errors.ts";

/** Ignore files larger than this (1 MiB) are refused (their directory is left out). */
export const MAX_IGNORE_FILE_BYTES: number = 1024 * 1024;

/** File names of the ignore files, in the order their layers apply. */
export const IGNORE_FILE_NAMES: readonly [".gitignore", ".ctxsnapignore"] = [
  ".gitignore",
  ".ctxsnapignore",
];

interface Layer {
  /** Directory of the ignore file relative to the workspace root, `""` for the root. */
  readonly base: string;
  readonly git: Ignore | null;
  readonly ctx: Ignore | null;
}

/**
 * An immutable stack of ignore rules for one directory of a walk: the rules
 * of the workspace root and of every directory down to it. Descending into a
 * directory returns a new stack; the parent's stack is left untouched.
 */
export class IgnoreStack {
  readonly #layers: readonly Layer[];

  private constructor(layers: readonly Layer[]) {
    this.#layers = layers;
  }

  /** An empty stack, for the workspace root before its ignore files are read. */
  static root(): IgnoreStack {
    return new IgnoreStack([]);
  }

  /**
   * The stack for directory `dirRel` (relative to the workspace root, `""` for
   * the root itself), adding the `.gitignore` and `.ctxsnapignore` found in
   * `absDir` when present. Returns `this` when the directory has neither.
   *
   * @param dirRel The directory's normalized relative path, or `""` for the root.
   * @param absDir The same directory as an absolute (or cwd-relative) path.
   * @param names The directory's entry names, when already listed: ignore
   *   files not among them are not opened.
   */
  child(dirRel: string, absDir: string, names?: ReadonlySet<string>): IgnoreStack {
    const [gitName, ctxName] = IGNORE_FILE_NAMES;
    const git = names && !names.has(gitName) ? null : readIgnoreFile(join(absDir, gitName));
    const ctx = names && !names.has(ctxName) ? null : readIgnoreFile(join(absDir, ctxName));
    if (git === null && ctx === null) return this;
    return this.withRules(dirRel, git ?? [], ctx ?? []);
  }

  /**
   * The stack with one more layer of rules for directory `dirRel`, given as
   * the text (or lines) of a `.gitignore` and of a `.ctxsnapignore`.
   *
   * @param dirRel The directory the rules belong to, `""` for the root.
   * @param gitRules `.gitignore` content or lines.
   * @param ctxsnapRules `.ctxsnapignore` content or lines.
   */
  withRules(
    dirRel: string,
    gitRules: string | readonly string[],
    ctxsnapRules: string | readonly string[] = [],
  ): IgnoreStack {
    const layer: Layer = {
      base: dirRel,
      git: matcherOf(gitRules),
      ctx: matcherOf(ctxsnapRules),
    };
    if (layer.git === null && layer.ctx === null) return this;
    return new IgnoreStack([...this.#layers, layer]);
  }

  /**
   * Whether the entry at `relPath` (relative to the workspace root) is
   * ignored. Pass `isDir` true for a directory so directory-only patterns
   * apply; symlinks count as files, as in git.
   *
   * Like git during a walk, only rules matching the entry itself count, not
   * rules matching its parent directories: the caller must not descend into
   * a directory this reports as ignored (so `"build/x.js"` is not reported
   * for a `build/` rule; `"build"` is, and is never entered).
   *
   * @param relPath A normalized relative path below every layer's directory.
   * @param isDir Whether the entry is a directory.
   */
  ignores(relPath: string, isDir: boolean): boolean {
    const git = this.#decide(relPath, isDir, "git");
    const ctx = this.#decide(relPath, isDir, "ctx");
    return ctx ?? git ?? false;
  }

  /** The decision of one kind of layer: true/false from the last match, null if none matched. */
  #decide(relPath: string, isDir: boolean, kind: "git" | "ctx"): boolean | null {
    let decision: boolean | null = null;
    for (const layer of this.#layers) {
      const matcher = layer[kind];
      if (matcher === null) continue;
      let local: string;
      if (layer.base === "") local = relPath;
      else if (relPath.startsWith(layer.base + "/")) local = relPath.slice(layer.base.length + 1);
      else continue;
      const result = testOwn(matcher, isDir ? local + "/" : local);
      if (result.ignored) decision = true;
      else if (result.unignored) decision = false;
    }
    return decision;
  }
}

interface TestResult {
  ignored: boolean;
  unignored: boolean;
}

/** The rule list inside an `ignore` instance (`ignore@7`; pinned in deno.json). */
interface RuleList {
  test(path: string, checkUnignored: boolean, mode: "regex"): TestResult;
}

/**
 * Tests `path` against its own patterns only, as git does during a walk.
 * `Ignore.test` also reports a path as ignored when one of its parent
 * directories matches in the same file; but the walker only asks about
 * entries whose directories were not ignored overall (a deeper file or a
 * `.ctxsnapignore` may have re-included them), so that inheritance would be
 * wrong here. `ignore` has no public own-path test, hence its rule list; if
 * that ever disappears, this falls back to `test` (the tests catch it).
 */
function testOwn(matcher: Ignore, path: string): TestResult {
  const rules = (matcher as unknown as { _rules?: Partial<RuleList> })._rules;
  if (typeof rules?.test === "function") return rules.test(path, true, "regex");
  return matcher.test(path);
}

function matcherOf(rules: string | readonly string[]): Ignore | null {
  const lines = typeof rules === "string" ? rules.split(/\r?\n/) : rules;
  const useful = lines.filter((line) => line.trim() !== "" && !line.startsWith("#"));
  if (useful.length === 0) return null;
  return ignore({ ignorecase: false }).add(useful as string[]);
}

/** Reads a small regular file without following a symlink; `null` when absent or unusable. */
function readIgnoreFile(absPath: string): string | null {
  const refuse = (why: string, cause?: unknown): never => {
    throw new IgnoreFileError(`Ignore file ${quote(absPath)} ${why}`, {
      hint: "its rules cannot be applied, so the directory is left out; fix or remove the file",
      ...(cause === undefined ? {} : { cause }),
    });
  };
  let fd: number;
  let linkStats: Stats;
  try {
    // lstat first: under Deno without full permissions, open resolves symlinks
    // itself before applying O_NOFOLLOW, so the inode comparison is what counts.
    linkStats = lstatSync(absPath);
  } catch (error) {
    if (errnoOf(error) === "ENOENT") return null; // absent: no rules
    return refuse("cannot be read", error);
  }
  // Present but unusable: fail closed rather than capture what it excludes.
  if (!linkStats.isFile()) return refuse("is not a regular file");
  try {
    fd = openSync(absPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    return refuse("cannot be opened", error);
  }
  try {
    const stats = fstatSync(fd);
    if (stats.ino !== linkStats.ino || stats.dev !== linkStats.dev) {
      refuse("was replaced while read");
    }
    if (!stats.isFile()) refuse("is not a regular file");
    if (stats.size > MAX_IGNORE_FILE_BYTES) refuse(`is larger than ${MAX_IGNORE_FILE_BYTES} bytes`);
    const buffer = new Uint8Array(stats.size + 1);
    let total = 0;
    while (total < buffer.length) {
      const count = readSync(fd, buffer, total, buffer.length - total, total);
      if (count === 0) break;
      total += count;
    }
    if (total > MAX_IGNORE_FILE_BYTES) refuse(`is larger than ${MAX_IGNORE_FILE_BYTES} bytes`);
    return new TextDecoder().decode(buffer.subarray(0, total));
  } catch (error) {
    if (error instanceof IgnoreFileError) throw error;
    return refuse("cannot be read", error);
  } finally {
    try {
      closeSync(fd);
    } catch {
      // Nothing useful to do about a failed close of a read-only descriptor.
    }
  }
}

/** An ignore file exists but cannot be applied (too large, unreadable, not a file). */
export class IgnoreFileError extends IntegrityError {
  /** Creates the error. */
  constructor(message: string, options: CtxsnapErrorOptions = {}) {
    super(message, options);
    this.name = "IgnoreFileError";
  }
}
