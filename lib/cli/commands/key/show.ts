/**
 * `ctxsnap key show`: this machine's key id, public key and key file
 * (created on first use).
 * @module
 */
import { type Command, identity } from "../../command.ts";
import { esc } from "../../output.ts";

/** The `key show` command. */
export const keyShow: Command = {
  name: "key show",
  usage: "key [show]",
  examples: ["ctxsnap key show", "ctxsnap key show --json"],
  options: {},
  args: [],
  async run(ctx) {
    const me = await identity();
    ctx.out.result(
      { key_id: me.keyId, public_key: me.publicKeyHex, path: me.path },
      () => `key id      ${me.keyId}\npublic key  ${me.publicKeyHex}\nprivate key ${esc(me.path)}`,
    );
    return 0;
  },
};
