/**
 * `ctxsnap key trust KEY`: adds a signer's public key to this user's
 * trusted keys, optionally named.
 * @module
 */
import { UsageError } from "../../../errors.ts";
import { configDir } from "../../../keys/identity.ts";
import { trustKey } from "../../../keys/keyring.ts";
import { type Command, readKeyArgument, str } from "../../command.ts";
import { esc } from "../../output.ts";

/** The `key trust` command. */
export const keyTrust: Command = {
  name: "key trust",
  usage: "key trust KEY [--name N]",
  examples: [
    "ctxsnap key trust alice.pub.pem --name alice",
    "ctxsnap key trust 5c1d…e0 --name ci",
    "ctxsnap key trust 6060205618d3…9fe6 --name lean-ci   # a lean-ctx public key (hex or PEM)",
  ],
  options: { name: { type: "string", arg: "N", help: "a name shown by verify" } },
  args: [{ name: "KEY", help: "the public key: 64 hex, PEM text, or a PEM file" }],
  run(ctx, parsed) {
    const arg = parsed.positionals[0];
    if (arg === undefined) {
      throw new UsageError("key trust needs KEY (64 hex characters or a PEM file)");
    }
    const trusted = trustKey(configDir(), readKeyArgument(arg), str(parsed, "name"));
    ctx.out.result(
      { key_id: trusted.keyId, public_key: trusted.publicKeyHex, name: trusted.name },
      () => `Trusted ${trusted.keyId}${trusted.name ? ` as ${esc(trusted.name)}` : ""}`,
    );
    return Promise.resolve(0);
  },
};
