/**
 * `ctxsnap gc`: free objects no retained snapshot references.
 * @module
 */
import { collectGarbage } from "../../repository/gc.ts";
import { type Command, flag, openStore } from "../command.ts";
import { gcJson } from "../json.ts";

/** The `gc` command. */
export const gc: Command = {
  name: "gc",
  usage: "gc [--dry-run]",
  examples: ["ctxsnap gc --dry-run", "ctxsnap gc --json"],
  options: { "dry-run": { type: "boolean", help: "count what would be freed" } },
  args: [],
  run(ctx, parsed) {
    const store = openStore(ctx);
    try {
      const result = collectGarbage(store, { dryRun: flag(parsed, "dry-run") });
      ctx.out.result(
        gcJson(result),
        () =>
          `${
            result.dryRun ? "Would remove" : "Removed"
          } ${result.trees} trees and ${result.blobs} blobs, ${result.bytes} bytes; ` +
          `kept ${result.kept.trees} trees and ${result.kept.blobs} blobs.` +
          (result.transcripts.chains === 0
            ? ""
            : `\n${
              result.dryRun ? "Would remove" : "Removed"
            } ${result.transcripts.chains} kept agent transcript(s) no retained snapshot's events name: ${result.transcripts.segments} segments, ${result.transcripts.bytes} bytes.`) +
          (result.index === null
            ? ""
            : `\nIndex: ${result.index.indexBytesBefore} → ${result.index.indexBytesAfter} bytes (${result.index.freePagesBefore} free pages returned${
              result.index.mode === "full" ? ", switched to incremental vacuum" : ""
            }).`),
      );
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
