/**
 * Bounded answers for a model (layer: cli): no tool result of `ctxsnap mcp`
 * is longer than {@linkcode MAX_ANSWER_CHARS} characters, on any
 * repository. Long lists are paged: an answer carries the first items that
 * fit and a `next_cursor`; the `next_page` tool returns the following items.
 * The pages are held by the server session ({@linkcode Pages}), so paging a
 * restore's changes shows what that restore did, not a plan recomputed
 * later. Anything else too long (a session's thousands of decisions, say) is
 * cut by {@linkcode fit}, which says what it cut in `truncated` (of a
 * session, the newest items are kept).
 *
 * @example
 * ```ts
 * import { fit, MAX_ANSWER_CHARS, Pages } from "./_bound.ts";
 * const pages = new Pages();
 * const items = Array.from({ length: 5000 }, (_, i) => `src/file_${i}.ts`);
 * const first = pages.first(items, 4000);
 * if (first.next_cursor === null || JSON.stringify(first.items).length > 4000) throw new Error();
 * const next = pages.next(first.next_cursor);
 * if (next.offset !== first.items.length) throw new Error("continues");
 * const cut = fit({ text: "x".repeat(50_000) });
 * if (JSON.stringify(cut).length > MAX_ANSWER_CHARS) throw new Error("bounded");
 * ```
 * @module
 */
import { CtxsnapError } from "../../errors.ts";

/** The longest answer (its JSON text), in characters. */
export const MAX_ANSWER_CHARS = 10_000;
/** Characters of items a `next_page` answer carries at most. */
const PAGE_CHARS = 8_000;
/** Items a page carries at most. */
const PAGE_ITEMS = 500;
/** Paged lists a server session keeps (the oldest is dropped first). */
const KEPT = 64;

/** The first page of a list. */
export interface FirstPage {
  /** The items that fit. */
  items: unknown[];
  /** The cursor for the rest, or null when every item is here. */
  next_cursor: string | null;
}

/** A `next_page` answer. */
export interface Page {
  /** Index of the first item. */
  offset: number;
  /** How many items the list has. */
  total: number;
  /** The items. */
  items: unknown[];
  /** The cursor for the rest, or null at the end. */
  next_cursor: string | null;
}

/** A cursor that names no list this session holds, or a position out of it. */
export class CursorError extends CtxsnapError {
  /** Creates the error. */
  constructor(message: string) {
    super(message, "not_found", {
      hint: "call the tool that gave it again; cursors last as long as the server session",
    });
    this.name = "CursorError";
  }
}

/**
 * How many of `items` from `offset` fit in `chars` characters of JSON; with
 * `atLeastOne`, one even if it alone does not (it is then cut by `fit`).
 */
function fitting(
  items: readonly unknown[],
  offset: number,
  chars: number,
  atLeastOne = false,
): number {
  let used = 2;
  let n = 0;
  while (offset + n < items.length && n < PAGE_ITEMS) {
    const size = JSON.stringify(items[offset + n]).length + 1;
    if (used + size > chars && !(atLeastOne && n === 0)) break;
    used += size;
    n += 1;
  }
  return n;
}

/** The paged lists of one server session. */
export class Pages {
  private readonly lists = new Map<string, readonly unknown[]>();

  /** The first items of `items` that fit in `chars` characters, and a cursor for the rest. */
  first(items: readonly unknown[], chars: number): FirstPage {
    const n = fitting(items, 0, Math.max(0, chars));
    return { items: items.slice(0, n), next_cursor: this.cursor(items, n) };
  }

  /** The page `cursor` names. */
  next(cursor: string): Page {
    const match = /^([0-9a-f]{16})\.([0-9]{1,9})$/.exec(cursor);
    const items = match === null ? undefined : this.lists.get(match[1]!);
    if (match === null || items === undefined) {
      throw new CursorError(`No paged answer for cursor ${JSON.stringify(cursor.slice(0, 40))}`);
    }
    const offset = Number(match[2]);
    if (offset > items.length) {
      throw new CursorError(`Cursor ${JSON.stringify(cursor)} is past the end of its list`);
    }
    const n = fitting(items, offset, PAGE_CHARS, true);
    return {
      offset,
      total: items.length,
      items: items.slice(offset, offset + n),
      next_cursor: offset + n < items.length ? `${match[1]}.${offset + n}` : null,
    };
  }

  private cursor(items: readonly unknown[], from: number): string | null {
    if (from >= items.length) return null;
    const token = Array.from(crypto.getRandomValues(new Uint8Array(8)))
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    this.lists.set(token, items);
    while (this.lists.size > KEPT) this.lists.delete(this.lists.keys().next().value!);
    return `${token}.${from}`;
  }
}

/** The JSON length of `value`. */
export function size(value: unknown): number {
  return JSON.stringify(value).length;
}

/**
 * `value` if its JSON is at most `limit` characters; else a copy with its
 * longest strings and lists cut, more and more, until it fits, and a
 * top-level `truncated` naming what was cut (`path: kept of total`).
 */
export function fit(
  value: Record<string, unknown>,
  limit: number = MAX_ANSWER_CHARS,
  keep: "first" | "last" = "first",
): Record<string, unknown> {
  if (size(value) <= limit) return value;
  for (
    const [chars, items] of [
      [2000, 200],
      [1000, 50],
      [300, 20],
      [120, 8],
      [60, 3],
      [30, 1],
    ] as const
  ) {
    const notes: string[] = [];
    const cut = shrink(value, "", chars, items, notes, keep) as Record<string, unknown>;
    const out = { ...cut, truncated: notes.slice(0, 20) };
    if (size(out) <= limit) return out;
  }
  return {
    truncated: [`the answer (${size(value)} characters) is too large to show`],
  };
}

function shrink(
  value: unknown,
  where: string,
  chars: number,
  items: number,
  notes: string[],
  keep: "first" | "last",
): unknown {
  if (typeof value === "string") {
    if (value.length <= chars) return value;
    notes.push(`${where || "value"}: ${chars} of ${value.length} characters`);
    return `${value.slice(0, chars)}…`;
  }
  if (Array.isArray(value)) {
    const from = keep === "last" ? Math.max(0, value.length - items) : 0;
    const kept = value.slice(from, from + items).map((v, i) =>
      shrink(v, `${where}[${from + i}]`, chars, items, notes, keep)
    );
    if (value.length > items) {
      notes.push(`${where}: ${items} of ${value.length} items (the ${keep})`);
    }
    return kept;
  }
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] = shrink(inner, where === "" ? key : `${where}.${key}`, chars, items, notes, keep);
    }
    return out;
  }
  return value;
}
