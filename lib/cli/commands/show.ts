/**
 * `ctxsnap show`: everything one snapshot recorded.
 * @module
 */
import { readEnvelope } from "../../history/timeline.ts";
import { summarize } from "../../history/summary.ts";
import { promptOfRevision } from "../../history/names.ts";
import { summaryJson } from "../json.ts";
import {
  type Command,
  flag,
  list,
  openStore,
  short,
  str,
  target,
  trustPolicy,
  userPath,
} from "../command.ts";
import { contextLines, gitLine } from "./_body_lines.ts";
import { esc } from "../output.ts";
import { UsageError } from "../../errors.ts";
import * as fs from "node:fs";
import { looksLikeFile } from "../_file_verdict.ts";
import { SELECTION_FLAGS, TRUST_FLAGS } from "../flags.ts";
/** The `show` command. */
export const show: Command = {
  name: "show",
  usage:
    "show [REVISION] [--before TIME] [--skipped]\nshow FILE|- [--skipped] [--patch] [--trust KEY]... [--trusted-keys FILE]",
  examples: [
    "ctxsnap show                   # the head of the current branch",
    "ctxsnap show 3f2a9c",
    "ctxsnap show HEAD~2",
    "ctxsnap show prompt:3          # the state before prompt 3 of the latest agent session",
    "ctxsnap show main@{2026-11-30T10:00}",
    "ctxsnap show 3f2a9c --json | jq .envelope.body.context",
    "ctxsnap show 3f2a9c --skipped   # what the capture left out, and why",
    "ctxsnap show 3707b221 --json | jq .snapshot.ledger   # an imported lean-ctx snapshot",
    "ctxsnap show review.ctxbundle --trust alice.pub.pem   # a received file: verified, no store",
    "ctxsnap show review.ctxbundle --patch --trust alice.pub.pem   # with each step's diffs",
  ],
  options: {
    before: {
      ...SELECTION_FLAGS.before,
      help: "the newest snapshot of REVISION's history at or before TIME",
    },
    session: { ...SELECTION_FLAGS.session, help: "session whose HEAD and branches names mean" },
    patch: { type: "boolean", help: "FILE: each step's text diffs too" },
    trust: {
      ...TRUST_FLAGS.trust,
      help: "FILE: trust this public key (hex, PEM text or PEM file); repeatable",
    },
    "trusted-keys": {
      ...TRUST_FLAGS["trusted-keys"],
      help: "FILE: also trust the keys in this file",
    },
    skipped: {
      type: "boolean",
      help: "list the paths the capture left out (secrets, ignored, too large, …) with the reason",
    },
  },
  args: [{
    name: "REVISION|FILE|-",
    help:
      "the snapshot (default HEAD), or a published file or bundle to verify and show (- reads stdin)",
    optional: true,
  }],
  async run(ctx, parsed) {
    const given = parsed.positionals[0];
    // A file: `-`, a published file's name, or an existing path written as a path (`./x`, `d/x`).
    // A bare name (`HEAD`, `main`) is always a revision, even where the repository holds a file
    // of that name: a committed file must not stand in for the user's snapshot.
    if (
      given !== undefined &&
      (given === "-" || /\.ctx(bundle|snapshot\.json)$/.test(given) ||
        (/^\.|[/\\]/.test(given) && looksLikeFile(given) && fs.existsSync(userPath(given))))
    ) {
      const { showFile } = await import("./_show_file.ts");
      return await showFile(ctx, parsed, given);
    }
    if (flag(parsed, "patch") || list(parsed, "trust").length > 0 || str(parsed, "trusted-keys")) {
      throw new UsageError("--patch, --trust and --trusted-keys apply to a FILE", {
        hint: "ctxsnap show review.ctxbundle --patch --trust alice.pub.pem",
      });
    }
    const store = openStore(ctx, { readOnly: true });
    try {
      // One committed state for every query this command makes (DESIGN.md §3.4).
      return await store.readAsync(async () => {
        const found = await target(ctx, store, parsed.positionals[0] ?? "HEAD", {
          session: str(parsed, "session"),
          before: str(parsed, "before"),
        });
        if (found.kept !== null) {
          // A snapshot kept as itself (lean-ctx): its format shows it.
          if (flag(parsed, "skipped")) {
            throw new UsageError(
              `${
                short(found.id)
              } is a ${found.format} snapshot, which records no workspace: --skipped does not apply`,
            );
          }
          const shown = await found.kept.show(store, found.id, await trustPolicy([]));
          ctx.out.result(shown.document, shown.text);
          return 0;
        }
        const id = found.id;
        const envelope = await readEnvelope(store, id); // id and signature checked
        if (flag(parsed, "skipped")) {
          const workspace = envelope.body.workspace;
          const skipped = workspace === null ? [] : store.getTree(workspace.tree).skipped;
          ctx.out.result(
            { id, captured: workspace !== null, skipped },
            () =>
              workspace === null
                ? `snapshot ${id} recorded no workspace`
                : skipped.length === 0
                ? "nothing was left out"
                : skipped.map((s) => `${esc(s.reason).padEnd(21)} ${esc(s.path)}`).join("\n"),
          );
          return 0;
        }
        const trust = await trustPolicy([]);
        const keyId = envelope.signature.key_id;
        const signer = {
          key_id: keyId,
          name: trust.nameOf(keyId),
          trusted: trust.isTrusted(keyId),
        };
        const b = envelope.body;
        // `prompt:N` names a prompt of an agent session: say which session it resolved to.
        const named = str(parsed, "before") === undefined ? promptOfRevision(given ?? "") : null;
        let prompt: { number: number; agent_session: string; harness: string } | null = null;
        if (named !== null) {
          const { findAgentSession } = await import("../../history/agent.ts");
          const session = findAgentSession(store, named.session);
          prompt = {
            number: named.prompt,
            agent_session: session.session_id,
            harness: session.harness,
          };
        }
        const conversation = await showConversation(store, id);
        const shown = {
          ...summaryJson(summarize(store, id, envelope)),
          signer,
          envelope,
          conversation: conversation.json,
        };
        ctx.out.result(prompt === null ? shown : { ...shown, prompt }, () => {
          const lines = [
            `snapshot   ${id}`,
            ...(prompt === null ? [] : [
              `prompt     the state before prompt ${prompt.number} of agent session ${
                esc(prompt.agent_session)
              } (${esc(prompt.harness)})`,
            ]),
            `created    ${esc(b.created_at)}`,
            `timeline   ${esc(b.session)}/${esc(b.branch)}  parent ${esc(short(b.parent))}`,
            `reason     ${esc(b.reason || "-")}`,
            `signer     ${esc(keyId)}${signer.name ? ` (${esc(signer.name)})` : ""}${
              signer.trusted ? "" : "  untrusted"
            }`,
          ];
          if (b.source) lines.push(`source     ${esc(b.source.kind)}:${esc(b.source.id)}`);
          lines.push(gitLine(b));
          lines.push(
            b.workspace
              ? `workspace  ${b.workspace.files} files, ${b.workspace.bytes} bytes, ${b.workspace.skipped} skipped  (tree ${
                esc(short(b.workspace.tree))
              })`
              : "workspace  not captured",
          );
          lines.push(...contextLines(b));
          const ext = Object.keys(b.context.extensions);
          if (ext.length > 0) lines.push(`extensions ${esc(ext.join(", "))}`);
          const meta = Object.keys(b.facets.metadata);
          if (meta.length > 0) lines.push(`metadata   ${esc(JSON.stringify(b.facets.metadata))}`);
          lines.push(...conversation.lines);
          return lines.join("\n");
        });
        return 0;
      });
    } finally {
      store.close();
    }
  },
};

/**
 * The conversation slices of snapshot `id` (lib/integrations/agents/conversation.ts):
 * as `--json` prints them, and as lines, every text escaped.
 */
async function showConversation(
  store: Parameters<typeof readEnvelope>[0],
  id: string,
): Promise<{ json: unknown; lines: string[] }> {
  const { conversationSlices } = await import("../../integrations/agents/conversation.ts");
  let slices;
  try {
    slices = conversationSlices(store, id);
  } catch (error) {
    const message = (error as Error).message;
    return { json: { error: message }, lines: [`conversation  ${esc(message)}`] };
  }
  const lines: string[] = [];
  for (const slice of slices) {
    lines.push(
      `conversation  ${esc(slice.agent)} session ${
        esc(slice.agent_session)
      }, transcript bytes ${slice.from}..${slice.to}${
        slice.truncated ? " (cut to its last part)" : ""
      }`,
    );
    if (slice.items.length === 0) lines.push("  (nothing new in the transcript)");
    for (const item of slice.items) {
      const who = item.role === "tool" ? `tool ${item.tool ?? "?"}` : item.role;
      lines.push(`  ${esc(who)}: ${esc(item.text)}`);
    }
  }
  return { json: slices, lines };
}
