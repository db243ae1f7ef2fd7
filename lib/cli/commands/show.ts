/**
 * `ctxsnap show`: everything one snapshot recorded.
 * @module
 */
import { readEnvelope } from "../../history/timeline.ts";
import { summarize } from "../../history/summary.ts";
import { summaryJson } from "../json.ts";
import type { Store } from "../../repository/store.ts";
import {
  type Command,
  type CommandContext,
  flag,
  list,
  openStore,
  short,
  str,
  target,
  trustPolicy,
  userPath,
} from "../command.ts";
import { contextLines, gitLine, leanCtxContentLines, leanCtxJson } from "./_leanctx.ts";
import { esc } from "../output.ts";
import { UsageError } from "../../errors.ts";
import * as fs from "node:fs";
import { looksLikeFile } from "./verify.ts";
/** `show` of a stored lean-ctx snapshot. */
async function showLeanCtx(ctx: CommandContext, store: Store, id: string): Promise<number> {
  const { readLeanCtx } = await import("../../share/leanctx_store.ts");
  const { keyIdOf } = await import("../../crypto/ed25519.ts");
  const { fromHex } = await import("../../encoding/hex.ts");
  const { row, snapshot } = readLeanCtx(store, id);
  const trust = await trustPolicy([]);
  const sig = snapshot.signature;
  const keyId = sig === null ? null : keyIdOf(fromHex(sig.public_key, 32));
  const signer = sig === null || keyId === null ? null : {
    key_id: keyId,
    public_key: sig.public_key,
    name: trust.nameOf(keyId),
    trusted: trust.isTrusted(keyId, sig.public_key),
  };
  ctx.out.result({
    id,
    format: "lean-ctx",
    imported: true,
    imported_at: new Date(row.imported_at).toISOString(),
    session: row.session,
    branch: row.branch,
    signer,
    snapshot: leanCtxJson(snapshot),
  }, () =>
    [
      `snapshot   ${id}  (lean-ctx CONTEXT_SNAPSHOT_V1, written by ${
        esc(snapshot.lean_ctx_version)
      })`,
      `created    ${esc(snapshot.created_at)}`,
      `timeline   ${esc(row.session)}/${esc(row.branch)}  lean-ctx parent ${
        snapshot.parent_id === null ? "-" : esc(snapshot.parent_id.slice(0, 12))
      }`,
      `signer     ${
        signer === null
          ? "none (unsigned)"
          : `${signer.key_id}${signer.name ? ` (${esc(signer.name)})` : ""}${
            signer.trusted ? "" : "  untrusted"
          }`
      }`,
      ...leanCtxContentLines(snapshot),
    ].join("\n"));
  return 0;
}

/** The `show` command. */
export const show: Command = {
  name: "show",
  summary: "show what a snapshot recorded",
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
      type: "string",
      arg: "TIME",
      help: "the newest snapshot of REVISION's history at or before TIME",
    },
    session: { type: "string", arg: "S", help: "session whose HEAD and branches names mean" },
    patch: { type: "boolean", help: "FILE: each step's text diffs too" },
    trust: {
      type: "string",
      multiple: true,
      arg: "KEY",
      help: "FILE: trust this public key (hex, PEM text or PEM file); repeatable",
    },
    "trusted-keys": { type: "string", arg: "FILE", help: "FILE: also trust the keys in this file" },
    skipped: {
      type: "boolean",
      help: "list the paths the capture left out (secrets, ignored, too large, …) with the reason",
    },
  },
  positionals: 1,
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
        if (found.format === "lean-ctx") return await showLeanCtx(ctx, store, found.id);
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
        ctx.out.result({ ...summaryJson(summarize(store, id, envelope)), signer, envelope }, () => {
          const lines = [
            `snapshot   ${id}`,
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
          return lines.join("\n");
        });
        return 0;
      });
    } finally {
      store.close();
    }
  },
};
