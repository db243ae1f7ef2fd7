/**
 * `ctxsnap import`: verify then add a published snapshot or bundle to the store.
 * @module
 */
import { IntegrityError, UntrustedError, UsageError } from "../../errors.ts";
import { currentSelection } from "../../history/timeline.ts";
import {
  type Command,
  flag,
  identity,
  list,
  openStore,
  short,
  trustPolicy,
  userPath,
} from "../command.ts";
import { esc } from "../output.ts";
import { keysFile, TRUST_FLAGS, UNTRUSTED_FLAGS } from "../flags.ts";

/** The `import` command. */
export const importCommand: Command = {
  name: "import",
  usage: "import FILE|- [--trust KEY]... [--trusted-keys FILE] [--allow-untrusted]",
  examples: [
    "ctxsnap import 3f2a9c81bd04.ctxbundle --trust alice.pub.pem",
    "ctxsnap import - < review.ctxsnapshot.json",
    "ctxsnap import 3707b221cfe2.ctxsnapshot.json --trust lean.pub.pem   # a lean-ctx snapshot, kept as itself",
    "ctxsnap restore 3f2a --files         # then materialize what you imported",
  ],
  options: {
    ...TRUST_FLAGS,
    "allow-untrusted": {
      ...UNTRUSTED_FLAGS["allow-untrusted"],
      help: "import even if the signer is not trusted or it is unsigned (still verified)",
    },
  },
  args: [{
    name: "FILE|-",
    help: "the published snapshot, bundle or lean-ctx file to import (- reads stdin)",
  }],
  async run(ctx, parsed) {
    const source = parsed.positionals[0];
    if (source === undefined) throw new UsageError("import needs FILE or -");
    await identity(); // imports are recorded by a store that has an owner key
    const store = openStore(ctx);
    try {
      const { importAnyFile } = await import("../../share/import.ts");
      const trust = await trustPolicy(list(parsed, "trust"), keysFile(parsed));
      const runTrust = list(parsed, "trust").length > 0;
      let any;
      try {
        any = await importAnyFile(store, userPath(source), trust, {
          allowUntrusted: flag(parsed, "allow-untrusted"),
          onProgress: (done, total) => ctx.out.progress("importing", done, total),
        });
      } catch (error) {
        // The same verdict as `verify FILE`: nothing was imported.
        if (error instanceof IntegrityError) {
          const { tamperError } = await import("./_tamper.ts");
          throw tamperError(source, error);
        }
        // A --trust key that did not sign it: say so, not only "untrusted".
        if (error instanceof UntrustedError && trust.runKeyIds().length > 0) {
          throw new UntrustedError(
            `${error.message}; the key you pinned (--trust ${
              trust.runKeyIds().join(", ")
            }) is not the signer`,
            {
              hint:
                "check with the sender which key signed it (`ctxsnap key show` on their machine); pin that key, or pass --allow-untrusted",
            },
          );
        }
        throw error;
      }
      if (any.format !== "ctxsnap") {
        // A file of a format kept as itself (lean-ctx): its format presents what was done.
        const { keptFormatNamed } = await import("../../share/formats/registry.ts");
        const done = (await keptFormatNamed(any.format)).presentImport(any, trust);
        ctx.out.result(done.document, done.text);
        return 0;
      }
      const result = any.result;
      const p = result.report.primary;
      ctx.out.result({
        format: "ctxsnap",
        primary: p.id,
        kind: result.report.kind,
        already_present: result.alreadyPresent,
        imported: result.imported,
        present: result.present,
        session: result.session,
        branch: result.branch,
        head: result.head,
        head_moved: result.headMoved,
        with_workspace: result.report.withWorkspace,
        blobs: result.blobs,
        trusted: result.report.trusted,
        trust_this_run_only: runTrust,
        operation: result.operation,
      }, () => {
        if (result.alreadyPresent) {
          return `Already present: ${esc(short(p.id))} (${esc(result.session)}/${
            esc(result.branch)
          })`;
        }
        return [
          `Imported ${result.imported.length} snapshot(s) onto ${esc(result.session)}/${
            esc(result.branch)
          }; primary ${esc(short(p.id))}`,
          result.report.withWorkspace
            ? `  with workspace content (${result.blobs} new file contents)`
            : "  envelope only: no workspace content (publish --with-workspace to send files)",
          result.report.trusted ? "" : "  signer NOT trusted (--allow-untrusted)",
          result.headMoved || result.head === p.id
            ? ""
            : `  ${result.branch} stays at ${
              short(result.head)
            }: the primary is older (in its history)`,
          `  list them: ctxsnap list --branch ${esc(result.branch)}${
            result.session === currentSelection(store).session
              ? ""
              : ` --session ${esc(result.session)}`
          }`,
          runTrust
            ? "  --trust applied to this import only; to trust this signer from now on: ctxsnap key trust KEY --name NAME"
            : "",
        ].filter((l) => l !== "").join("\n");
      });
      return 0;
    } finally {
      store.close();
    }
  },
};
