/**
 * `ctxsnap key export`: this machine's public key as SPKI PEM, to share
 * with the people who verify its snapshots.
 * @module
 */
import { publicKeyToSpkiPem } from "../../../crypto/ed25519.ts";
import { type Command, identity } from "../../command.ts";

/** The `key export` command. */
export const keyExport: Command = {
  name: "key export",
  usage: "key export",
  examples: [
    "ctxsnap key export > me.pub.pem            # share this with people who verify your snapshots",
  ],
  options: {},
  args: [],
  async run(ctx) {
    const me = await identity();
    const pem = publicKeyToSpkiPem(me.publicKey);
    if (ctx.out.json) {
      ctx.out.result({ key_id: me.keyId, public_key: me.publicKeyHex, pem }, () => "");
    } else ctx.out.raw(pem.endsWith("\n") ? pem : pem + "\n");
    return 0;
  },
};
