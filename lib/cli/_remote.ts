/**
 * What the remote commands share (`remote add`, `push`, `pull`, `clone`):
 * the remote layer's loader, the S3 addressing flags, which remote a
 * command means, and the JSON and human shapes of a pull.
 *
 * @example
 * ```ts ignore
 * import { remoteAndRest } from "./_remote.ts";
 * const { remote, rest } = await remoteAndRest(store, ["origin", "exp"]);
 * ```
 * @module
 */
import { UsageError } from "../errors.ts";
import type { Store } from "../repository/store.ts";
import { type CommandContext, flag, type Parsed, short } from "./command.ts";
import type { PullResult } from "../remote/pull.ts";
import type { RemoteConfig } from "../remote/remote_config.ts";

/** The remote layer, loaded only when a remote command runs. */
export const config = (): Promise<typeof import("../remote/remote_config.ts")> =>
  import("../remote/remote_config.ts");

/** `--path-style` / `--virtual-hosted`: true, false, or null for the default. */
export function pathStyle(parsed: Parsed): boolean | null {
  if (flag(parsed, "path-style") && flag(parsed, "virtual-hosted")) {
    throw new UsageError("use --path-style or --virtual-hosted, not both");
  }
  return flag(parsed, "path-style") ? true : flag(parsed, "virtual-hosted") ? false : null;
}

/** Splits `[NAME] [REST]`: the first positional is the remote when one of that name exists. */
export async function remoteAndRest(
  store: Store,
  positionals: string[],
): Promise<{ remote: RemoteConfig; rest: string | undefined }> {
  const { getRemote, listRemotes } = await config();
  const remotes = listRemotes(store);
  const [first, second] = positionals;
  if (first !== undefined && remotes.some((r) => r.name === first)) {
    return { remote: getRemote(store, first), rest: second };
  }
  if (second !== undefined) {
    // Two arguments: the first must be a remote.
    getRemote(store, first!);
  }
  const fallback = remotes.find((r) => r.name === "origin") ??
    (remotes.length === 1 ? remotes[0] : undefined);
  if (fallback === undefined) {
    throw new UsageError(
      remotes.length === 0 ? "No remote is configured" : "Name the remote (there is no origin)",
      { hint: "add one with `ctxsnap remote add origin URL`, or pass its NAME" },
    );
  }
  return { remote: fallback, rest: first };
}

/** A byte count for people. */
export function mib(bytes: number): string {
  return bytes < 1024 * 1024
    ? `${(bytes / 1024).toFixed(1)} KiB`
    : `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** The human lines of a pull's refs. */
export function pullLines(result: PullResult): string[] {
  const lines: string[] = [];
  if (!result.initialized) lines.push("  the remote is empty (nothing pushed yet)");
  for (const ref of result.refs) {
    const where = `${ref.session}/${ref.localBranch}`;
    switch (ref.status) {
      case "updated":
        lines.push(`  ${where} → ${short(ref.head)}`);
        break;
      case "unchanged":
        lines.push(`  ${where} up to date`);
        break;
      default:
        lines.push(
          `  ${ref.status.toUpperCase()} ${ref.keyId}'s ${ref.session}/${ref.branch}: ${ref.reason}`,
        );
    }
  }
  return lines;
}

/** Exit status of a pull: 1 when a ref was refused, 3 when one was left out as untrusted. */
export function pullStatus(ctx: CommandContext, result: PullResult): number {
  const refused = result.refs.filter((r) => r.status === "refused");
  const untrusted = result.refs.filter((r) => r.status === "untrusted");
  const stale = result.refs.filter((r) => r.status === "stale");
  for (const ref of stale) {
    ctx.out.warn(
      `the remote rolled back ${ref.keyId}'s ${ref.session}/${ref.branch}: ${ref.reason}; kept the newer head`,
    );
  }
  if (refused.length > 0) {
    ctx.out.warn(`refused ${refused.length} ref(s) that did not verify; nothing of them landed`);
    return 1;
  }
  if (untrusted.length > 0) {
    ctx.out.warn(
      `left out ${untrusted.length} ref(s) of unpinned signers (${
        [...new Set(untrusted.map((r) => r.keyId))].join(", ")
      }); pin them with \`ctxsnap key trust\`, or pass --allow-untrusted to quarantine them`,
    );
    return 3;
  }
  return 0;
}
