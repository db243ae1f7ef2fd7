/**
 * `ctxsnap key list`: the trusted keys of this user.
 * @module
 */
import { configDir } from "../../../keys/identity.ts";
import { readConfigTrustedKeys } from "../../../keys/keyring.ts";
import type { Command } from "../../command.ts";
import { esc } from "../../output.ts";

/** The `key list` command. */
export const keyList: Command = {
  name: "key list",
  usage: "key list",
  examples: ["ctxsnap key list --json"],
  options: {},
  args: [],
  run(ctx) {
    const keys = readConfigTrustedKeys(configDir());
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
    return Promise.resolve(0);
  },
};
