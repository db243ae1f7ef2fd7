/**
 * The optional context slices of a `ctxsnap.snapshot/v2` body — token ROI,
 * the lineage of what entered the context, and the context ledger — in
 * ctxsnap's integer-only canonical JSON: ratios and scores are integers in
 * parts per million (`_ppm`), counts are safe integers ≥ 0. They carry the
 * slices of lean-ctx's CONTEXT_SNAPSHOT_V1 (docs/FORMAT.md §3.1).
 *
 * @example
 * ```ts
 * import { validateRoi, ratioToPpm } from "./slices.ts";
 * const roi = validateRoi({ input_tokens: 900, output_tokens: 300, tokens_saved: 600, compression_rate_ppm: 400000 });
 * if (roi.compression_rate_ppm !== ratioToPpm(0.4)) throw new Error("ppm");
 * let refused = false;
 * try {
 *   validateRoi({ input_tokens: 1, output_tokens: 1, tokens_saved: 1, compression_rate: 0 });
 * } catch {
 *   refused = true;
 * }
 * if (!refused) throw new Error("an unknown field must be refused");
 * ```
 * @module
 */
import { IntegrityError, quote } from "../errors.ts";

/** Most items in a lineage or ledger slice. */
export const MAX_SLICE_ITEMS = 10_000;
/** Longest `kind`, `tool`, `state` or `content_hash`, in UTF-16 code units. */
export const MAX_SLICE_LABEL = 256;
/** Longest `path`, in UTF-16 code units. */
export const MAX_SLICE_PATH = 4096;

/** Token return on investment at capture time. */
export interface RoiSlice {
  /** Tokens read in. */
  input_tokens: number;
  /** Tokens sent on. */
  output_tokens: number;
  /** Tokens saved by compression. */
  tokens_saved: number;
  /** Compression rate in parts per million (400000 = 0.4). */
  compression_rate_ppm: number;
}

/** One lineage entry: a tool call that contributed to the context. */
export interface LineageItem {
  /** Sequence number. */
  seq: number;
  /** Source kind (`read`, `shell`, `search`, `provider`, `other`, …). */
  kind: string;
  /** The tool. */
  tool: string;
  /** The path read, or null. */
  path: string | null;
  /** Tokens in. */
  input_tokens: number;
  /** Tokens out. */
  output_tokens: number;
  /** Compression ratio in parts per million. */
  compression_ratio_ppm: number;
  /** Hash of the recorded content, or null. */
  content_hash: string | null;
}

/** What entered the context window. */
export interface LineageSlice {
  /** Items ever recorded (may exceed `items.length`). */
  items_recorded: number;
  /** The most recent items. */
  items: LineageItem[];
}

/** One ledger entry: an item the context layer decided about. */
export interface LedgerItem {
  /** The item's path. */
  path: string;
  /** Its state (`candidate`, `included`, `excluded`, `pinned`, `stale`, `shadowed`, …). */
  state: string;
  /** Its score Φ in parts per million, or null. */
  phi_ppm: number | null;
  /** Tokens sent. */
  sent_tokens: number;
  /** Tokens before compression. */
  original_tokens: number;
}

/** Why each item was in the window. */
export interface LedgerSlice {
  /** The context window size in tokens. */
  window_size: number;
  /** Tokens sent in total. */
  total_tokens_sent: number;
  /** Tokens saved in total. */
  total_tokens_saved: number;
  /** The items. */
  items: LedgerItem[];
}

/** The slices a body may carry; each absent when not recorded. */
export interface Slices {
  /** Token ROI. */
  roi?: RoiSlice;
  /** Lineage. */
  lineage?: LineageSlice;
  /** Ledger. */
  ledger?: LedgerSlice;
}

/** The slice field names, in the order docs/FORMAT.md lists them. */
export const SLICE_FIELDS = ["roi", "lineage", "ledger"] as const;

/**
 * A ratio as parts per million, rounded to the nearest integer. Throws a
 * `RangeError` for a negative, non-finite or too large ratio.
 */
export function ratioToPpm(ratio: number): number {
  const ppm = Math.round(ratio * 1_000_000);
  if (!Number.isSafeInteger(ppm) || ppm < 0) {
    throw new RangeError(`Ratio ${ratio} has no parts-per-million form`);
  }
  return ppm;
}

/** The double nearest to `ppm / 10^6` (exact division, so the shortest decimal form is short). */
export function ppmToRatio(ppm: number): number {
  return ppm / 1_000_000;
}

class Check {
  constructor(private readonly where: string) {}

  fail(message: string): never {
    throw new IntegrityError(`Invalid ${this.where}: ${message}`);
  }

  object(value: unknown, what: string, keys: readonly string[]): Record<string, unknown> {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      this.fail(`${what} is not an object`);
    }
    const o = value as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      if (!keys.includes(key)) this.fail(`${what} has unknown field ${quote(key)}`);
    }
    for (const key of keys) if (!(key in o)) this.fail(`${what} lacks field ${quote(key)}`);
    return o;
  }

  count(value: unknown, what: string): number {
    if (!Number.isSafeInteger(value) || (value as number) < 0) {
      this.fail(`${what} ${quote(value)} is not a safe integer ≥ 0`);
    }
    return value as number;
  }

  text(value: unknown, what: string, max: number): string {
    if (typeof value !== "string") this.fail(`${what} is not a string`);
    if (value.length > max) this.fail(`${what} is longer than ${max} characters`);
    return value;
  }

  nullableText(value: unknown, what: string, max: number): string | null {
    return value === null ? null : this.text(value, what, max);
  }

  items<T>(value: unknown, what: string, item: (v: unknown, w: string) => T): T[] {
    if (!Array.isArray(value)) this.fail(`${what} is not an array`);
    if (value.length > MAX_SLICE_ITEMS) {
      this.fail(`${what} has more than ${MAX_SLICE_ITEMS} items`);
    }
    return value.map((v, i) => item(v, `${what}[${i}]`));
  }
}

/** Validates an untrusted ROI slice. */
export function validateRoi(value: unknown, where = "snapshot body"): RoiSlice {
  const c = new Check(where);
  const o = c.object(value, "roi", [
    "input_tokens",
    "output_tokens",
    "tokens_saved",
    "compression_rate_ppm",
  ]);
  return {
    input_tokens: c.count(o.input_tokens, "roi.input_tokens"),
    output_tokens: c.count(o.output_tokens, "roi.output_tokens"),
    tokens_saved: c.count(o.tokens_saved, "roi.tokens_saved"),
    compression_rate_ppm: c.count(o.compression_rate_ppm, "roi.compression_rate_ppm"),
  };
}

/** Validates an untrusted lineage slice. */
export function validateLineage(value: unknown, where = "snapshot body"): LineageSlice {
  const c = new Check(where);
  const o = c.object(value, "lineage", ["items_recorded", "items"]);
  return {
    items_recorded: c.count(o.items_recorded, "lineage.items_recorded"),
    items: c.items(o.items, "lineage.items", (v, w) => {
      const i = c.object(v, w, [
        "seq",
        "kind",
        "tool",
        "path",
        "input_tokens",
        "output_tokens",
        "compression_ratio_ppm",
        "content_hash",
      ]);
      return {
        seq: c.count(i.seq, `${w}.seq`),
        kind: c.text(i.kind, `${w}.kind`, MAX_SLICE_LABEL),
        tool: c.text(i.tool, `${w}.tool`, MAX_SLICE_LABEL),
        path: c.nullableText(i.path, `${w}.path`, MAX_SLICE_PATH),
        input_tokens: c.count(i.input_tokens, `${w}.input_tokens`),
        output_tokens: c.count(i.output_tokens, `${w}.output_tokens`),
        compression_ratio_ppm: c.count(i.compression_ratio_ppm, `${w}.compression_ratio_ppm`),
        content_hash: c.nullableText(i.content_hash, `${w}.content_hash`, MAX_SLICE_LABEL),
      };
    }),
  };
}

/** Validates an untrusted ledger slice. */
export function validateLedger(value: unknown, where = "snapshot body"): LedgerSlice {
  const c = new Check(where);
  const o = c.object(value, "ledger", [
    "window_size",
    "total_tokens_sent",
    "total_tokens_saved",
    "items",
  ]);
  return {
    window_size: c.count(o.window_size, "ledger.window_size"),
    total_tokens_sent: c.count(o.total_tokens_sent, "ledger.total_tokens_sent"),
    total_tokens_saved: c.count(o.total_tokens_saved, "ledger.total_tokens_saved"),
    items: c.items(o.items, "ledger.items", (v, w) => {
      const i = c.object(v, w, ["path", "state", "phi_ppm", "sent_tokens", "original_tokens"]);
      return {
        path: c.text(i.path, `${w}.path`, MAX_SLICE_PATH),
        state: c.text(i.state, `${w}.state`, MAX_SLICE_LABEL),
        phi_ppm: i.phi_ppm === null ? null : c.count(i.phi_ppm, `${w}.phi_ppm`),
        sent_tokens: c.count(i.sent_tokens, `${w}.sent_tokens`),
        original_tokens: c.count(i.original_tokens, `${w}.original_tokens`),
      };
    }),
  };
}

/** Validates whichever slices `o` holds (absent keys stay absent; `null` is refused). */
export function validateSlices(o: Record<string, unknown>, where = "snapshot body"): Slices {
  const out: Slices = {};
  if ("roi" in o) out.roi = validateRoi(o.roi, where);
  if ("lineage" in o) out.lineage = validateLineage(o.lineage, where);
  if ("ledger" in o) out.ledger = validateLedger(o.ledger, where);
  return out;
}

/** Counts of each distinct label, most frequent first, as `a 3, b 1`. */
export function tally(labels: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const label of labels) counts.set(label, (counts.get(label) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([label, n]) => `${label} ${n}`).join(", ");
}
