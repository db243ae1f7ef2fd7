/**
 * `ctxsnap key untrust KEY_ID|NAME`: removes a trusted key by id, unique
 * id prefix or name.
 * @module
 */
import { UsageError } from "../../../errors.ts";
import { configDir } from "../../../keys/identity.ts";
import { untrustKey } from "../../../keys/keyring.ts";
import type { Command } from "../../command.ts";
import { esc } from "../../output.ts";

/** The `key untrust` command. */
export const keyUntrust: Command = {
  name: "key untrust",
  usage: "key untrust KEY_ID|NAME",
  examples: ["ctxsnap key untrust alice"],
  options: {},
  args: [{ name: "KEY_ID|NAME", help: "the key's id, a unique id prefix, or its name" }],
  run(ctx, parsed) {
    const arg = parsed.positionals[0];
    if (arg === undefined) throw new UsageError("key untrust needs a key id or name");
    const removed = untrustKey(configDir(), arg);
    ctx.out.result(
      { key_id: removed.keyId, name: removed.name },
      () => `No longer trusting ${removed.keyId}${removed.name ? ` (${esc(removed.name)})` : ""}`,
    );
    return Promise.resolve(0);
  },
};
