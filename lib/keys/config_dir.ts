/**
 * Where this machine's key files live (crypto layer; no crypto code, so the
 * command line can name the directory without loading any).
 *
 * @example
 * ```ts ignore
 * import { configDir } from "./config_dir.ts";
 * if (configDir().length === 0) throw new Error("no config dir");
 * ```
 * @module
 */
import { join, resolve } from "node:path";
import { UsageError } from "../errors.ts";
import { getEnv } from "../runtime.ts";

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/**
 * The directory holding the identity and trusted keys: `CTXSNAP_CONFIG_DIR`,
 * else `$XDG_CONFIG_HOME/ctxsnap` (when absolute), else `$HOME/.config/ctxsnap`.
 *
 * @example
 * ```ts ignore
 * import { configDir } from "./identity.ts";
 * if (!(configDir().length > 0)) throw new Error("Example failed");
 * ```
 */
export function configDir(): string {
  const explicit = nonEmpty(getEnv("CTXSNAP_CONFIG_DIR"));
  if (explicit !== undefined) return resolve(explicit);
  const xdg = nonEmpty(getEnv("XDG_CONFIG_HOME"));
  // The XDG spec says relative paths are invalid and must be ignored.
  if (xdg !== undefined && xdg.startsWith("/")) return join(xdg, "ctxsnap");
  const home = nonEmpty(getEnv("HOME"));
  if (home !== undefined) return join(home, ".config", "ctxsnap");
  throw new UsageError("Cannot locate the config directory: HOME is not set", {
    hint: "set CTXSNAP_CONFIG_DIR to a directory for the ctxsnap key files",
  });
}
