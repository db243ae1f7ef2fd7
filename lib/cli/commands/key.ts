/**
 * `ctxsnap key`: this machine's signing identity and the trusted keys.
 * @module
 */
import { UsageError } from "../../errors.ts";
import { publicKeyToSpkiPem } from "../../crypto/ed25519.ts";
import { configDir, importIdentity } from "../../keys/identity.ts";
import { readConfigTrustedKeys, trustKey, untrustKey } from "../../keys/keyring.ts";
import { type Command, flag, identity, readKeyArgument, str, userPath } from "../command.ts";
import { esc } from "../output.ts";

const SUBCOMMANDS = ["show", "export", "import", "trust", "untrust", "list"];

/** The `key` command. */
export const key: Command = {
  name: "key",
  summary: "show, export or import (from lean-ctx) this machine's key; manage trusted keys",
  usage: [
    "key [show]",
    "key export",
    "key import --lean-ctx FILE [--force]",
    "key trust KEY [--name N]",
    "key untrust KEY_ID|NAME",
    "key list",
  ].join("\n"),
  examples: [
    "ctxsnap key show",
    "ctxsnap key export > me.pub.pem            # share this with people who verify your snapshots",
    "ctxsnap key trust alice.pub.pem --name alice",
    "ctxsnap key trust 5c1d…e0 --name ci",
    "ctxsnap key import --lean-ctx ~/.local/share/lean-ctx/keys/ctxpkg-ed25519.key   # sign as your lean-ctx identity",
    "ctxsnap key trust 6060205618d3…9fe6 --name lean-ci   # a lean-ctx public key (hex or PEM)",
    "ctxsnap key untrust alice",
  ],
  options: {
    name: { type: "string", arg: "N", help: "with trust: a name shown by verify" },
    "lean-ctx": {
      type: "string",
      arg: "FILE",
      help: "with import: a lean-ctx signing key file (64 hex characters of seed)",
    },
    force: {
      type: "boolean",
      help: "with import: replace an existing identity (kept as a backup)",
    },
  },
  positionals: 2,
  async run(ctx, parsed) {
    const [sub = "show", arg] = parsed.positionals;
    const dir = configDir();
    switch (sub) {
      case "show": {
        const me = await identity();
        ctx.out.result(
          { key_id: me.keyId, public_key: me.publicKeyHex, path: me.path },
          () =>
            `key id      ${me.keyId}\npublic key  ${me.publicKeyHex}\nprivate key ${esc(me.path)}`,
        );
        return 0;
      }
      case "export": {
        const me = await identity();
        const pem = publicKeyToSpkiPem(me.publicKey);
        if (ctx.out.json) {
          ctx.out.result({ key_id: me.keyId, public_key: me.publicKeyHex, pem }, () => "");
        } else ctx.out.raw(pem.endsWith("\n") ? pem : pem + "\n");
        return 0;
      }
      case "import": {
        const file = str(parsed, "lean-ctx");
        if (file === undefined || arg !== undefined) {
          throw new UsageError("key import takes the key file with --lean-ctx FILE", {
            hint: "ctxsnap key import --lean-ctx ~/.local/share/lean-ctx/keys/ctxpkg-ed25519.key",
          });
        }
        const { keptFormatNamed } = await import("../../share/formats/registry.ts");
        const { seed, looseMode } = (await keptFormatNamed("lean-ctx")).readSigningKeyFile(
          userPath(file),
        );
        if (looseMode) {
          ctx.out.warn(
            `${
              JSON.stringify(file)
            } is readable by group or others; the imported copy has mode 0600`,
          );
        }
        const result = await importIdentity(dir, seed, { replace: flag(parsed, "force") });
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
      }
      case "trust": {
        if (arg === undefined) {
          throw new UsageError("key trust needs KEY (64 hex characters or a PEM file)");
        }
        const name = str(parsed, "name");
        const trusted = trustKey(dir, readKeyArgument(arg), name);
        ctx.out.result(
          { key_id: trusted.keyId, public_key: trusted.publicKeyHex, name: trusted.name },
          () => `Trusted ${trusted.keyId}${trusted.name ? ` as ${esc(trusted.name)}` : ""}`,
        );
        return 0;
      }
      case "untrust": {
        if (arg === undefined) throw new UsageError("key untrust needs a key id or name");
        const removed = untrustKey(dir, arg);
        ctx.out.result(
          { key_id: removed.keyId, name: removed.name },
          () =>
            `No longer trusting ${removed.keyId}${removed.name ? ` (${esc(removed.name)})` : ""}`,
        );
        return 0;
      }
      case "list": {
        const keys = readConfigTrustedKeys(dir);
        ctx.out.result(
          {
            keys: keys.map((k) => ({
              key_id: k.keyId,
              public_key: k.publicKeyHex,
              name: k.name,
              added_at: k.addedAt,
            })),
          },
          () =>
            keys.length === 0
              ? "No trusted keys. Add one with `ctxsnap key trust KEY --name N`."
              : keys.map((k) => `${k.keyId}  ${esc(k.name ?? "-")}  ${k.publicKeyHex}`).join("\n"),
        );
        return 0;
      }
      default:
        throw new UsageError(`Unknown key subcommand ${JSON.stringify(sub)}`, {
          hint: `one of: ${SUBCOMMANDS.join(", ")}`,
        });
    }
  },
};
