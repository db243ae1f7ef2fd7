/**
 * Reading a store's `daemon.conf` (whether `create` and the hooks start a
 * watch process in the background, and when it exits; parsed by
 * `lib/integrations/watch/daemon.ts`): the user's own file or refused, never
 * followed through a link, never read past 4 KiB.
 *
 * @example
 * ```ts
 * import { readDaemonConf } from "./daemon_conf.ts";
 * const dir = await Deno.makeTempDir();
 * if (readDaemonConf(dir) !== null) throw new Error("no file, no text");
 * ```
 * @module
 */
import * as path from "node:path";
import { readPolicyFile } from "./_policy_file.ts";

/** The name of the file in the store. */
export const DAEMON_CONF_FILE = "daemon.conf";

/** The text of the store's `daemon.conf`, or null when there is none (throws `ConfigError`). */
export function readDaemonConf(storeDir: string): string | null {
  return readPolicyFile(path.join(storeDir, DAEMON_CONF_FILE), "the daemon settings", 4096);
}
