/**
 * `ctxsnap create`: capture the workspace and session into a signed snapshot.
 * @module
 */
import { parseJson } from "../../encoding/canonical_json.ts";
import { CtxsnapError, UsageError } from "../../errors.ts";
import { type Command, flag, readInput, short, str } from "../args.ts";
import { checkpoint } from "../_checkpoint.ts";
import { createJson } from "../json.ts";
import { esc } from "../output.ts";
import { CAPTURE_FLAGS, SELECTION_FLAGS, sizeOption } from "../flags.ts";

/** The `create` command. */
export const create: Command = {
  name: "create",
  usage:
    "create [-m REASON] [--context FILE|-] [--no-workspace] [--source KIND:ID] [--session S] [--branch B] [--expect-head ID] [--allow-unchanged]",
  examples: [
    'ctxsnap create -m "before refactor"',
    'echo \'{"task":"fix parser","progress_pct":40}\' | ctxsnap create --context -',
    "ctxsnap create --source cell:42 --json        # idempotent per source",
    "ctxsnap create --expect-head 3f2a9c --json    # fails with exit 5 if the head moved",
  ],
  options: {
    message: { type: "string", short: "m", arg: "REASON", help: "why this snapshot was taken" },
    context: {
      type: "string",
      arg: "FILE|-",
      help:
        "JSON with task, progress_pct, decisions, files_touched, findings, knowledge, extensions, cursors, facets",
    },
    "no-workspace": { type: "boolean", help: "record the session only, not the workspace files" },
    source: {
      type: "string",
      arg: "KIND:ID",
      help: "idempotency key: the same source twice returns the same snapshot",
    },
    session: SELECTION_FLAGS.session,
    branch: {
      ...SELECTION_FLAGS.branch,
      help: "branch (default: the session's current; created if missing)",
    },
    ...CAPTURE_FLAGS,
    "expect-head": {
      type: "string",
      arg: "ID",
      help: "only create if the branch head is ID ('none' for an empty branch)",
    },
    "allow-unchanged": {
      type: "boolean",
      help: "record a new snapshot even if nothing changed since the branch head",
    },
  },
  args: [],
  async run(ctx, parsed) {
    let context = null;
    const contextPath = str(parsed, "context");
    if (contextPath !== undefined) {
      const bytes = readInput(contextPath); // its own errors: not there (4), unreadable (1)
      let value;
      try {
        value = parseJson(bytes);
      } catch (error) {
        if (error instanceof CtxsnapError && error.code === "failure") {
          throw new UsageError(`The context document is not valid JSON: ${error.message}`);
        }
        throw error;
      }
      const { validateContextInput } = await import("../../history/create.ts");
      context = validateContextInput(value);
    }
    let source = null;
    const sourceText = str(parsed, "source");
    if (sourceText !== undefined) {
      const match = /^([a-z][a-z0-9_-]{0,31}):(.{1,256})$/s.exec(sourceText);
      if (!match) {
        throw new UsageError(`--source ${JSON.stringify(sourceText)} is not KIND:ID`, {
          hint: "for example --source cell:42 or --source message:msg_01",
        });
      }
      source = { kind: match[1]!, id: match[2]! };
    }
    const expect = str(parsed, "expect-head");
    const maxFileBytes = sizeOption(str(parsed, "max-file-size"));
    let expectHead: string | null | undefined = expect === "none" ? null : expect;
    if (expect !== undefined && expect !== "none" && !/^[0-9a-f]{64}$/.test(expect)) {
      // A name (HEAD~1, a branch, an id prefix): resolved against the store.
      const { openStore, revision } = await import("../command.ts");
      const store = openStore(ctx, { readOnly: true });
      try {
        expectHead = revision(ctx, store, expect, { session: str(parsed, "session") });
      } finally {
        store.close();
      }
    }
    const { result, storeDir, via } = await checkpoint(ctx, {
      reason: str(parsed, "message") ?? "",
      context,
      workspace: !flag(parsed, "no-workspace"),
      source,
      ...(str(parsed, "session") !== undefined ? { session: str(parsed, "session")! } : {}),
      ...(str(parsed, "branch") !== undefined ? { branch: str(parsed, "branch")! } : {}),
      ...(expectHead !== undefined ? { expectHead } : {}),
      allowUnchanged: flag(parsed, "allow-unchanged"),
      onProgress: (seen) => ctx.out.progress("capturing", seen),
      ...(maxFileBytes !== undefined ? { maxFileBytes } : {}),
    });
    {
      const body = result.envelope.body;
      if (result.secrets.length > 0) {
        const { allowSecretsPath } = await import("../../repository/allow_secrets.ts");
        const names = result.secrets.slice(0, 10).map((s) => s.path).join(", ");
        const more = result.secrets.length > 10 ? `, and ${result.secrets.length - 10} more` : "";
        ctx.out.note(`left out ${result.secrets.length} secret file(s): ${names}${more}`);
        ctx.out.note(
          `list them: ctxsnap show ${short(result.id)} --skipped; capture one that is not a ` +
            `secret by adding its path to ${allowSecretsPath(storeDir)}`,
        );
      }
      ctx.out.result(createJson(result, via), () => {
        if (!result.created) {
          return sourceText !== undefined && body.source?.id === source?.id
            ? `${result.id}  (already recorded for source ${esc(sourceText)})`
            : `${result.id}  (unchanged since this snapshot; nothing recorded)`;
        }
        const w = body.workspace;
        const lines = [`${result.id}`];
        lines.push(
          `  ${esc(body.session)}/${esc(body.branch)}  parent ${
            short(body.parent)
          }  signed by ${result.envelope.signature.key_id}`,
        );
        if (w !== null) {
          lines.push(
            `  ${w.files} files, ${w.bytes} bytes, ${w.skipped} skipped  (tree ${short(w.tree)})`,
          );
          if (result.capture) {
            lines.push(`  read ${result.capture.hashed} files, ${result.capture.reused} unchanged`);
          }
        }
        if (body.git) {
          lines.push(
            `  git ${esc(short(body.git.commit))} ${esc(body.git.branch ?? "(detached)")}${
              body.git.dirty ? " dirty" : ""
            }`,
          );
        }
        if (via === "watch") lines.push("  (made by the watch process serving this store)");
        return lines.join("\n");
      });
      return 0;
    }
  },
};
