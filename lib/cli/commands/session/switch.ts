/**
 * `ctxsnap session switch NAME`: later snapshots go to session NAME.
 * @module
 */
import { switchSession } from "../../../history/session_state.ts";
import { checkName } from "../../../history/timeline.ts";
import { type Command, openStore } from "../../command.ts";
import { esc } from "../../output.ts";

/** The `session switch` command. */
export const sessionSwitch: Command = {
  name: "session switch",
  usage: "session switch NAME",
  examples: ["ctxsnap session switch experiment   # later snapshots go to session 'experiment'"],
  options: {},
  args: [{ name: "NAME", help: "the session later snapshots go to" }],
  run(ctx, parsed) {
    const store = openStore(ctx);
    try {
      const name = checkName(parsed.positionals[0] ?? "", "session");
      switchSession(store, name);
      ctx.out.result({ current: name }, () => `Switched to session ${esc(name)}`);
      return Promise.resolve(0);
    } finally {
      store.close();
    }
  },
};
