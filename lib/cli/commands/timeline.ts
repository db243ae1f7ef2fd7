/**
 * `ctxsnap timeline --html FILE`: the Replay view as one self-contained HTML
 * page, for the store (a session, a branch, or every session) or for a
 * verified published snapshot or bundle.
 * @module
 */
import { IntegrityError, UntrustedError, UsageError } from "../../errors.ts";
import { writeFileAtomic } from "../../workspace/io/atomic.ts";
import type { TimelineData } from "../../view/model.ts";
import {
  type Command,
  type CommandContext,
  flag,
  list,
  openStore,
  type Parsed,
  str,
  trustPolicy,
  userPath,
} from "../command.ts";
import { esc } from "../output.ts";
import { checkOverwrite } from "../_overwrite.ts";
import { fileTrust } from "../_file_verdict.ts";
import { storeScope, VIEW_OPTIONS } from "../_view.ts";
import { MOVE_FLAGS } from "../flags.ts";

async function build(ctx: CommandContext, parsed: Parsed): Promise<TimelineData> {
  const { timelineFromFile, timelineFromStore } = await import("../../view/model.ts");
  const file = parsed.positionals[0];
  const keysFile = str(parsed, "trusted-keys");
  if (file !== undefined) {
    if (
      str(parsed, "session") !== undefined || str(parsed, "branch") !== undefined ||
      flag(parsed, "all")
    ) {
      throw new UsageError("--session, --branch and --all select from the store, not from a file");
    }
    const trust = await fileTrust(list(parsed, "trust"), keysFile, (m) => ctx.out.warn(m));
    try {
      return await timelineFromFile(userPath(file), trust);
    } catch (error) {
      // The same verdict as `verify FILE`; no page is written.
      if (error instanceof IntegrityError) {
        const { tamperError } = await import("./_tamper.ts");
        throw tamperError(file, error);
      }
      throw error;
    }
  }
  const store = openStore(ctx, { readOnly: true });
  try {
    const scope = storeScope(store, parsed);
    const trust = await trustPolicy(
      list(parsed, "trust"),
      keysFile === undefined ? {} : { keysFile },
    );
    // The conversation of each prompt, where its transcript is kept (local only).
    const { promptConversation } = await import("../../integrations/agents/conversation.ts");
    return await timelineFromStore(store, scope, trust, {
      conversation: (harness, sessionId, prompt) =>
        promptConversation(store, harness, sessionId, prompt),
    });
  } finally {
    store.close();
  }
}

/** The `timeline` command. */
export const timeline: Command = {
  name: "timeline",
  usage: "timeline --html FILE|- [--session S] [--branch B] [--all] [--trust KEY]...\n" +
    "timeline --html FILE|- BUNDLE|SNAPSHOT_FILE|- [--trust KEY]... [--trusted-keys FILE]",
  examples: [
    "ctxsnap timeline --html timeline.html            # the current session, every branch",
    "ctxsnap timeline --html all.html --all           # every session in the store",
    "ctxsnap timeline --html review.html review.ctxbundle --trust alice.pub.pem",
    "ctxsnap timeline --html - --branch experiment > experiment.html",
  ],
  options: {
    html: { type: "string", arg: "FILE|-", help: "write the page to FILE, or - for stdout" },
    force: {
      ...MOVE_FLAGS.force,
      help: "replace an existing FILE that is not a ctxsnap page (never the input file)",
    },
    ...VIEW_OPTIONS,
  },
  args: [{
    name: "BUNDLE|SNAPSHOT_FILE|-",
    help: "a published snapshot or bundle to draw instead of the store (- reads stdin)",
    optional: true,
  }],
  async run(ctx, parsed) {
    const out = str(parsed, "html");
    if (out === undefined || out === "") {
      const input = parsed.positionals[0];
      const page = input === undefined || input === "-"
        ? "timeline.html"
        : `${input.replace(/\.(ctxbundle|ctxsnapshot\.json|json)$/, "")}.html`;
      throw new UsageError("timeline needs --html FILE (or --html - for stdout)", {
        hint: `ctxsnap timeline --html ${page}${input === undefined ? "" : ` ${input}`}`,
      });
    }
    if (out === "-" && ctx.out.json) {
      throw new UsageError("--json cannot share stdout with --html -", {
        hint: "write the page to a file with --html FILE",
      });
    }
    if (out !== "-") {
      const input = parsed.positionals[0];
      checkOverwrite(userPath(out), "html", {
        inputs: input === undefined ? [] : [userPath(input)],
        force: flag(parsed, "force"),
        shown: out,
      });
    }
    const data = await build(ctx, parsed);
    const { renderPage } = await import("../../view/html.ts");
    const page = renderPage(data);
    const bytes = new TextEncoder().encode(page).byteLength;
    if (out === "-") ctx.out.raw(page);
    else writeFileAtomic(userPath(out), page);
    const v = data.verification;
    if (out !== "-") {
      ctx.out.result(
        {
          file: out,
          bytes,
          source: data.source,
          snapshots: data.snapshots.length,
          branches: data.branches.length,
          trees: Object.keys(data.trees).length,
          diffs: Object.keys(data.diffs).length,
          verification: v,
          notes: data.notes,
          generated_at: data.generated_at,
        },
        () =>
          `wrote ${
            esc(out)
          } (${bytes} bytes): ${data.snapshots.length} snapshots, ${data.branches.length} branches; ` +
          `${v.trusted} trusted, ${v.untrusted} untrusted, ${v.invalid} invalid`,
      );
    }
    if (v.invalid > 0) {
      ctx.out.warn(`${v.invalid} snapshot(s) do not verify; the page marks them NOT VERIFIED`);
    }
    if (data.source.kind !== "store" && v.untrusted > 0) {
      const keys = [
        ...new Set(data.snapshots.filter((s) => !s.signer.trusted).map((s) => s.signer.key_id)),
      ];
      return ctx.out.error(
        new UntrustedError(
          `Intact, but signed by untrusted key ${keys.join(", ")}; the page marks it untrusted`,
          {
            hint:
              "pin the signer's key: --trust KEY, --trusted-keys FILE, or `ctxsnap key trust KEY`",
          },
        ),
      );
    }
    return 0;
  },
};
