/**
 * `ctxsnap key import --lean-ctx FILE`: makes a lean-ctx signing key this
 * machine's identity (an existing, different one only with `--force`,
 * kept as a backup).
 * @module
 */
import { UsageError } from "../../../errors.ts";
import { configDir, importIdentity } from "../../../keys/identity.ts";
import { type Command, flag, str, userPath } from "../../command.ts";
import { MOVE_FLAGS } from "../../flags.ts";

/** The `key import` command. */
export const keyImport: Command = {
  name: "key import",
  usage: "key import --lean-ctx FILE [--force]",
  examples: [
    "ctxsnap key import --lean-ctx ~/.local/share/lean-ctx/keys/ctxpkg-ed25519.key   # sign as your lean-ctx identity",
  ],
  options: {
    "lean-ctx": {
      type: "string",
      arg: "FILE",
      help: "a lean-ctx signing key file (64 hex characters of seed)",
    },
    force: { ...MOVE_FLAGS.force, help: "replace an existing identity (kept as a backup)" },
  },
  args: [],
  async run(ctx, parsed) {
    const file = str(parsed, "lean-ctx");
    if (file === undefined) {
      throw new UsageError("key import takes the key file with --lean-ctx FILE", {
        hint: "ctxsnap key import --lean-ctx ~/.local/share/lean-ctx/keys/ctxpkg-ed25519.key",
      });
    }
    const { keptFormatNamed } = await import("../../../share/formats/registry.ts");
    const { seed, looseMode } = (await keptFormatNamed("lean-ctx")).readSigningKeyFile(
      userPath(file),
    );
    if (looseMode) {
      ctx.out.warn(
        `${JSON.stringify(file)} is readable by group or others; the imported copy has mode 0600`,
      );
    }
    const result = await importIdentity(configDir(), seed, { replace: flag(parsed, "force") });
    const me = result.identity;
    ctx.out.result({
      key_id: me.keyId,
      public_key: me.publicKeyHex,
      path: me.path,
      unchanged: result.unchanged,
      replaced_key_id: result.replaced?.keyId ?? null,
      backup: result.backup,
    }, () =>
      [
        result.unchanged
          ? `Already this machine's identity: ${me.keyId}`
          : `Imported the lean-ctx key as this machine's identity: ${me.keyId}`,
        `public key  ${me.publicKeyHex}`,
        ...(result.backup === null ? [] : [`the previous key is kept as ${result.backup}`]),
      ].join("\n"));
    return 0;
  },
};
