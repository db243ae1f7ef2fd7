/**
 * Names for snapshots: everywhere the command line takes a snapshot id it
 * takes a **revision** (grammar in docs/CLI.md, "Naming snapshots"):
 *
 * ```
 * REVISION := BASE SUFFIX*
 * BASE     := "HEAD" | "@" | HEX | BRANCH          (empty before "@{": HEAD)
 *           | "prompt:" N [":" AGENT_SESSION]      (the state before prompt N)
 * SUFFIX   := "~" [N]                               (N parents back; "~" alone is "~1")
 *           | "@{" TIME "}"                        (the newest at or before TIME)
 * TIME     := YYYY-MM-DD ["T" HH:MM [":" SS ["." FRACTION]]] [ "Z" | ("+"|"-") HH:MM ]
 * ```
 *
 * - `HEAD` and `@` are the head of the current branch of the session.
 * - `HEX` is a snapshot id or a unique prefix of at least 4 hex characters;
 *   64 hex characters always name a snapshot, never a branch.
 * - `BRANCH` is a branch of the session (`main`, `exp`, `imported/<key id>`),
 *   naming its head.
 * - A string that is both a branch of the session and a hex prefix of a
 *   snapshot (say a branch `cafe`) names the **branch**, as git prefers a ref
 *   to an abbreviated id; {@linkcode resolveRevision} reports it through
 *   `onWarning`, and more hex digits (or the full id) name the snapshot.
 * - `prompt:N` is the snapshot holding the workspace when prompt N (1, 2, …)
 *   of the agent session with the newest recorded event was submitted: the
 *   state before that prompt. `prompt:N:S` names agent session S (its id or
 *   a unique prefix of at least 4 characters). Neither branch names nor ids
 *   hold a `:`, so the form is never ambiguous.
 * - `~N` follows `parent` links N times (0 ≤ N ≤ 1,000,000); past the first
 *   snapshot, or into a forgotten one, is "not found".
 * - `@{TIME}` walks back from the snapshot named so far to the newest whose
 *   `created_at` is at or before TIME. A time without a zone is UTC; a date
 *   alone is its midnight UTC.
 *
 * @example
 * ```ts
 * import { parseRevision, parseTime } from "./names.ts";
 * const rev = parseRevision("main~2@{2026-11-30T10:00}");
 * if (rev.base !== "main" || rev.steps.length !== 2) throw new Error("parsed");
 * if (parseTime("2026-11-30T10:00") !== Date.parse("2026-11-30T10:00:00Z")) throw new Error("UTC");
 * ```
 * @module
 */
import { NotFoundError, quote, UsageError } from "../errors.ts";
import type { Store } from "../repository/store.ts";
import { isValidName } from "../format/body.ts";
import { snapshotBeforePrompt } from "./agent.ts";
import { getBranch, getSnapshotRow, resolveSnapshotId, selection } from "./timeline.ts";

/** One step after the base of a revision. */
export type RevisionStep = { kind: "parents"; count: number } | { kind: "before"; time: number };

/** A parsed revision. */
export interface Revision {
  /** `HEAD`, a hex prefix or a branch name. */
  base: string;
  /** Steps applied in order. */
  steps: RevisionStep[];
}

/** Most parents `~N` may go back. */
export const MAX_PARENT_STEPS = 1_000_000;

const TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|[+-]\d{2}:\d{2})?$/;

/**
 * Parses a time of a revision or of `--before` into milliseconds since the
 * epoch. Without a zone it is UTC. Throws {@linkcode UsageError}.
 */
export function parseTime(text: string): number {
  const m = TIME.exec(text.trim());
  if (m === null) {
    throw new UsageError(`Time ${quote(text)} is not an ISO 8601 date or time`, {
      hint: "for example 2026-11-30, 2026-11-30T10:00 (UTC) or 2026-11-30T10:00+01:00",
    });
  }
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone = "Z"] = m;
  const ms = frac.padEnd(3, "0").slice(0, 3);
  const iso = `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}${zone}`;
  const value = Date.parse(iso);
  // Round-trip the fields: no February 30, no hour 24.
  const check = new Date(Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`)).toISOString();
  if (Number.isNaN(value) || check !== `${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`) {
    throw new UsageError(`Time ${quote(text)} is not a real date or time`);
  }
  return value;
}

/** Splits a revision into its base and steps. Throws {@linkcode UsageError} on bad syntax. */
export function parseRevision(text: string): Revision {
  const t = text.trim();
  let rest: string;
  let base: string;
  if (t === "@" || t.startsWith("@~") || t.startsWith("@{")) {
    base = "HEAD";
    rest = t.startsWith("@{") ? t : t.slice(1);
  } else {
    const cut = t.search(/~|@\{/);
    base = cut === -1 ? t : t.slice(0, cut);
    rest = cut === -1 ? "" : t.slice(cut);
  }
  if (base === "") throw new UsageError(`Revision ${quote(text)} names nothing`);
  const steps: RevisionStep[] = [];
  while (rest !== "") {
    const parents = /^~(\d*)/.exec(rest);
    if (parents !== null) {
      const count = parents[1] === "" ? 1 : Number(parents[1]);
      if (!Number.isSafeInteger(count) || count > MAX_PARENT_STEPS) {
        throw new UsageError(`Revision ${quote(text)}: ~N takes 0 to ${MAX_PARENT_STEPS}`);
      }
      steps.push({ kind: "parents", count });
      rest = rest.slice(parents[0].length);
      continue;
    }
    const before = /^@\{([^}]*)\}/.exec(rest);
    if (before !== null) {
      steps.push({ kind: "before", time: parseTime(before[1]!) });
      rest = rest.slice(before[0].length);
      continue;
    }
    throw new UsageError(`Revision ${quote(text)} is not understood at ${quote(rest)}`, {
      hint: "write ID, HEAD, BRANCH, then ~N or @{TIME} (see `ctxsnap help show`)",
    });
  }
  return { base, steps };
}

/** Whether `text` is written as a revision rather than a plain id or name (`HEAD`, `@`, `~`, `@{`). */
export function hasRevisionSyntax(text: string): boolean {
  const t = text.trim();
  return t === "HEAD" || t === "@" || t.includes("~") || t.includes("@{") ||
    t.startsWith("prompt:");
}

const PROMPT_BASE = /^prompt:(\d{1,15})(?::([A-Za-z0-9][A-Za-z0-9._-]{0,127}))?$/;

/**
 * The prompt a revision names when it is exactly `prompt:N` or
 * `prompt:N:SESSION` (no `~` steps, no `@{TIME}`): its number and the agent
 * session it gives (null: the latest). Null for any other revision.
 */
export function promptOfRevision(text: string): { prompt: number; session: string | null } | null {
  const m = PROMPT_BASE.exec(text.trim());
  if (m === null || Number(m[1]) < 1) return null;
  return { prompt: Number(m[1]), session: m[2] ?? null };
}

/** Options of {@linkcode resolveRevision}. */
export interface ResolveOptions {
  /** Session whose branches and HEAD are meant (default: the current). */
  session?: string;
  /** Branch `HEAD` means (default: the session's current). */
  branch?: string;
  /** Applied last, as `@{TIME}` (`--before`). */
  before?: string;
  /** Told when a name is both a branch and a snapshot id prefix (the branch wins). */
  onWarning?: (message: string) => void;
}

function headOf(store: Store, session: string, branch: string, what: string): string {
  const row = getBranch(store, session, branch);
  if (row === null) {
    throw new NotFoundError(`No branch ${quote(branch)} in session ${quote(session)}`);
  }
  if (row.head === null) {
    throw new NotFoundError(`${what} names branch ${quote(branch)}, which has no snapshots yet`, {
      hint: "create one with `ctxsnap create`",
    });
  }
  return row.head;
}

function resolveBase(store: Store, base: string, text: string, opts: ResolveOptions): string {
  const sel = selection(store, opts.session, opts.branch);
  if (base === "HEAD") return headOf(store, sel.session, sel.branch, quote(text));
  if (base.startsWith("prompt:")) {
    const m = PROMPT_BASE.exec(base);
    if (m === null || Number(m[1]) < 1) {
      throw new UsageError(`${quote(text)} is not a prompt name`, {
        hint: "write prompt:N (the latest agent session) or prompt:N:SESSION_ID, with N from 1",
      });
    }
    return snapshotBeforePrompt(store, m[2] ?? null, Number(m[1]));
  }
  const lower = base.toLowerCase();
  if (/^[0-9a-f]{64}$/.test(lower)) return resolveSnapshotId(store, lower);
  const isBranch = isValidName(base) && getBranch(store, sel.session, base) !== null;
  const looksHex = /^[0-9a-f]{4,63}$/.test(lower);
  if (isBranch) {
    if (looksHex) {
      let also: string | null = null;
      try {
        also = resolveSnapshotId(store, lower);
      } catch {
        also = null; // no snapshot (or several): only the branch is meant
      }
      if (also !== null) {
        opts.onWarning?.(
          `${quote(base)} is both a branch and a prefix of snapshot ${
            also.slice(0, 12)
          }; using the branch (give more hex digits for the snapshot)`,
        );
      }
    }
    return headOf(store, sel.session, base, quote(text));
  }
  // All hex (too short to be an id prefix, or not one): an id was meant.
  if (/^[0-9a-f]+$/.test(lower)) return resolveSnapshotId(store, lower);
  if (isValidName(base)) {
    throw new NotFoundError(
      `No branch or snapshot ${quote(base)} in session ${quote(sel.session)}`,
      { hint: "run `ctxsnap branch` for branches, `ctxsnap list --all` for snapshots" },
    );
  }
  throw new UsageError(`${quote(text)} is not a snapshot id, HEAD or a branch name`, {
    hint: "ids are 4 to 64 hex characters; see `ctxsnap help show` for names",
  });
}

/**
 * Resolves a revision (see the module doc) to a full snapshot id.
 * Unknown → {@linkcode NotFoundError}; bad syntax or an ambiguous id prefix
 * → {@linkcode UsageError}.
 */
export function resolveRevision(store: Store, text: string, opts: ResolveOptions = {}): string {
  const rev = parseRevision(text);
  if (opts.before !== undefined) rev.steps.push({ kind: "before", time: parseTime(opts.before) });
  let id = resolveBase(store, rev.base, text, opts);
  for (const step of rev.steps) {
    if (step.kind === "parents") {
      for (let i = 0; i < step.count; i++) {
        const row = getSnapshotRow(store, id);
        if (row?.parent === null || row === null) {
          throw new NotFoundError(`${quote(text)} goes back past the first snapshot`);
        }
        if (getSnapshotRow(store, row.parent) === null) {
          throw new NotFoundError(
            `${quote(text)} reaches snapshot ${row.parent.slice(0, 12)}, which was forgotten`,
          );
        }
        id = row.parent;
      }
      continue;
    }
    let cursor: string | null = id;
    const seen = new Set<string>();
    let found: string | null = null;
    while (cursor !== null && !seen.has(cursor)) {
      seen.add(cursor);
      const row = getSnapshotRow(store, cursor);
      if (row === null) break;
      if (Date.parse(row.created_at) <= step.time) {
        found = cursor;
        break;
      }
      cursor = row.parent;
    }
    if (found === null) {
      throw new NotFoundError(
        `No snapshot of ${quote(text)}'s history was created at or before ${
          new Date(step.time).toISOString()
        }`,
      );
    }
    id = found;
  }
  return id;
}
