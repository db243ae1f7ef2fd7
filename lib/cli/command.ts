/**
 * The shared plumbing of commands that use the store: store opening, the
 * signing identity and the trust policy; and, re-exported from `args.ts`,
 * the shape of a command, argument parsing and `--help`.
 *
 * @example
 * ```ts
 * import { parseCommandArgs } from "./command.ts";
 * const parsed = parseCommandArgs({ name: "x", usage: "", examples: [], options: { json: { type: "boolean" } }, args: [{ name: "X", help: "", repeat: true }], run: () => Promise.resolve(0) }, ["--json", "a"]);
 * if (!(parsed.values.json === true && parsed.positionals[0] === "a")) throw new Error("Example failed");
 * ```
 * @module
 */
import * as fs from "node:fs";
import { ConfigError, NotFoundError, quote } from "../errors.ts";
import {
  configDir,
  type Identity,
  loadIdentityAsync,
  loadOrCreateIdentity,
} from "../keys/identity.ts";
import { Keyring, readConfigTrustedKeys, readKeyFile, readTrustedKeys } from "../keys/keyring.ts";
import { parsePublicKey } from "../crypto/ed25519.ts";
import type { Store } from "../repository/store.ts";
import { openWorkspace } from "../app/workspace.ts";
import { resolveRevision } from "../history/names.ts";
import type { KeptFormat } from "../share/formats/format.ts";

export * from "./args.ts";
import { type CommandContext, userPath } from "./args.ts";

/**
 * Opens the store this invocation refers to (`--store`, `$CTXSNAP_STORE`,
 * else found by walking up). It must be this user's: created by `init` or
 * adopted with `init --adopt` on this machine (registered in the config
 * directory), with safe paths and ctxsnap's exact schema; see
 * `lib/repository/trust.ts`. The rules are the application layer's
 * (`lib/app/workspace.ts`), which the library follows too.
 */
export function openStore(ctx: CommandContext, options: { readOnly?: boolean } = {}): Store {
  return openWorkspace({
    store: ctx.store,
    cwd: ctx.cwd,
    registry: configDir(),
    ...(options.readOnly ? { readOnly: true } : {}),
  });
}

/** Loads this machine's identity, creating it on first use. */
export function identity(): Promise<Identity> {
  return loadOrCreateIdentity(configDir());
}

/**
 * Builds the trust policy: this machine's own key (if it exists), the
 * trusted-keys file, and `--trust KEY` values (hex, PEM text or a PEM file path).
 */
export async function trustPolicy(
  trust: string[],
  options: { config?: boolean; keysFile?: string } = {},
): Promise<Keyring> {
  const useConfig = options.config ?? true;
  const keys = useConfig ? readConfigTrustedKeys(configDir()) : [];
  if (options.keysFile !== undefined) {
    const file = userPath(options.keysFile);
    if (!fs.existsSync(file)) {
      throw new NotFoundError(`No trusted-keys file at ${JSON.stringify(options.keysFile)}`);
    }
    keys.push(...readTrustedKeys(file));
  }
  let own: Identity | null = null;
  if (useConfig) own = await ownIdentityIfPresent();
  const keyring = new Keyring(keys, own);
  for (const value of trust) keyring.add(readKeyArgument(value));
  return keyring;
}

/**
 * Reads `--trust`/`key trust` arguments: 64-hex, PEM text, or a path to a PEM
 * file (read as {@linkcode readKeyFile} does: a regular file, at most 64 KiB,
 * never a FIFO or a device). One exit status per kind of key problem
 * (docs/CLI.md, "Key problems"): a value that cannot be used as a public key
 * (a key id, hex of the wrong length, PEM that is not an Ed25519 public key,
 * a trusted-keys file, an unusable key file) is a configuration error (exit
 * 7); a path where no file exists is not found (exit 4). The message names
 * what was given and what is needed; PEM text is named by its label, never
 * echoed (it may be a private key).
 */
export function readKeyArgument(value: string): Uint8Array {
  const hint =
    "pass the signer's public key: 64 hex from `ctxsnap key show`, or the PEM (text or file) from `ctxsnap key export`";
  const trimmed = value.trim();
  const pem = trimmed.startsWith("-----BEGIN");
  if (/^[0-9a-fA-F]{64}$/.test(trimmed) || pem) {
    try {
      return parsePublicKey(pem ? trimmed : trimmed.toLowerCase());
    } catch (error) {
      const label = /^-----BEGIN ([A-Z0-9 ]{1,40})-----/.exec(trimmed)?.[1];
      throw new ConfigError(
        `${
          pem
            ? `Key given as PEM text${label ? ` (labelled ${quote(label)})` : ""}`
            : `Key ${quote(value)}`
        } is not a valid Ed25519 public key: ${error instanceof Error ? error.message : error}`,
        { hint, cause: error },
      );
    }
  }
  const key = readKeyFile(userPath(value));
  if (key !== null) return key;
  if (/^[0-9a-fA-F]{16}$/.test(trimmed)) {
    throw new ConfigError(
      `${quote(value)} is a key id; trusting a signer needs its full public key (64 hex or PEM)`,
      {
        hint:
          "a key id names a key but another key could share it: ask the signer for `ctxsnap key export`",
      },
    );
  }
  if (/^[0-9a-fA-F]+$/.test(trimmed)) {
    throw new ConfigError(
      `Key ${quote(value)} has ${trimmed.length} hex characters; an Ed25519 public key has 64`,
      { hint },
    );
  }
  throw new NotFoundError(
    `No key file at ${quote(value)}, and it is neither 64 hex characters nor PEM text`,
    { hint },
  );
}

async function ownIdentityIfPresent(): Promise<Identity | null> {
  try {
    return await loadIdentityAsync(configDir());
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}
/**
 * Resolves a revision the user typed (an id prefix, `HEAD`, `@`, a branch,
 * with `~N` and `@{TIME}`; see `lib/history/names.ts`), warning on stderr
 * when a name is both a branch and an id prefix. `session` is the session
 * whose HEAD and branches names mean (default current); `before` applies
 * `--before TIME`.
 */
export function revision(
  ctx: CommandContext,
  store: Store,
  text: string,
  options: { session?: string | undefined; before?: string | undefined } = {},
): string {
  return resolveRevision(store, text, {
    ...(options.session !== undefined ? { session: options.session } : {}),
    ...(options.before !== undefined ? { before: options.before } : {}),
    onWarning: (message) => ctx.out.warn(message),
  });
}

/**
 * A snapshot argument resolved: a ctxsnap snapshot (`kept` null), or a
 * stored snapshot of a format kept as itself (`kept` its format).
 */
export interface Target {
  /** The format's name. */
  format: "ctxsnap" | KeptFormat["name"];
  /** Its full id. */
  id: string;
  /** The kept format that holds it, or null for a ctxsnap snapshot. */
  kept: KeptFormat | null;
}

/**
 * Resolves a snapshot argument that may also name a stored snapshot of a
 * kept format (lean-ctx): as a revision first (see {@linkcode revision});
 * only when no ctxsnap snapshot matches is an id prefix looked up among the
 * kept formats (`lib/share/formats/registry.ts`), so a ctxsnap snapshot
 * always wins and a plain restore never loads or queries them.
 */
export async function target(
  ctx: CommandContext,
  store: Store,
  text: string,
  options: { session?: string | undefined; before?: string | undefined } = {},
): Promise<Target> {
  try {
    return { format: "ctxsnap", id: revision(ctx, store, text, options), kept: null };
  } catch (error) {
    if (!(error instanceof NotFoundError) || options.before !== undefined) throw error;
    const { findKept } = await import("../share/formats/registry.ts");
    const found = await findKept(store, text);
    if (found === null) throw error;
    return { format: found.format.name, id: found.id, kept: found.format };
  }
}
