/**
 * The human lines `show ID` and `show FILE` print about a ctxsnap body: its
 * git anchor, its session context and its `roi`/`lineage`/`ledger` slices,
 * every string from the snapshot escaped. (What is printed about a lean-ctx
 * snapshot is its format's: `lib/share/formats/leanctx.ts`.)
 * @module
 */
import { escapeText } from "../../errors.ts";
import type { SnapshotBody } from "../../format/body.ts";
import { formatF64 } from "../../format/serde_f64.ts";
import { tally } from "../../format/slices.ts";

function listSection(lines: string[], title: string, items: readonly string[]): void {
  if (items.length === 0) return;
  lines.push(`${title}:`);
  for (const item of items) lines.push(`  - ${escapeText(item)}`);
}

function ppm(value: number): string {
  return `${formatF64(value / 1_000_000).replace(/\.0$/, "")} (${value} ppm)`;
}

/** The human line of a ctxsnap body's git anchor (`show ID`, `show FILE`). */
export function gitLine(b: SnapshotBody): string {
  return b.git
    ? `git        ${escapeText(b.git.commit ?? "(no commit)")} ${
      escapeText(b.git.branch ?? "(detached)")
    }${b.git.dirty ? " dirty" : " clean"}`
    : "git        not a git work tree";
}

/** The human lines of a ctxsnap body's context and slices (`show ID`, `show FILE`). */
export function contextLines(b: SnapshotBody): string[] {
  const c = b.context;
  const lines = [`task       ${escapeText(c.task || "-")}`, `progress   ${c.progress_pct}%`];
  listSection(lines, "decisions", c.decisions);
  listSection(lines, "files touched", c.files_touched);
  listSection(lines, "findings", c.findings);
  listSection(lines, "knowledge", c.knowledge);
  lines.push(...sliceLines(b));
  return lines;
}

/** The human lines of a ctxsnap body's slices (none when it has none). */
export function sliceLines(b: SnapshotBody): string[] {
  const lines: string[] = [];
  if (b.roi) {
    lines.push(
      `roi        input ${b.roi.input_tokens}, output ${b.roi.output_tokens}, saved ${b.roi.tokens_saved} tokens; compression rate ${
        ppm(b.roi.compression_rate_ppm)
      }`,
    );
  }
  if (b.lineage) {
    const items = b.lineage.items;
    lines.push(
      `lineage    ${b.lineage.items_recorded} recorded, ${items.length} kept${
        items.length === 0
          ? ""
          : `: ${escapeText(tally(items.map((i) => i.kind)))}; ${
            items.reduce((a, i) => a + i.input_tokens, 0)
          } tokens in, ${items.reduce((a, i) => a + i.output_tokens, 0)} out`
      }`,
    );
  }
  if (b.ledger) {
    lines.push(
      `ledger     window ${b.ledger.window_size}, sent ${b.ledger.total_tokens_sent}, saved ${b.ledger.total_tokens_saved}; ${b.ledger.items.length} items${
        b.ledger.items.length === 0
          ? ""
          : `: ${escapeText(tally(b.ledger.items.map((i) => i.state)))}`
      }`,
    );
  }
  return lines;
}
