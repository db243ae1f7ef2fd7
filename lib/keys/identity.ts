/**
 * This machine's signing identity: an Ed25519 key kept as a PKCS#8 PEM file
 * (`<config dir>/identity.pem`, mode 0600, directory 0700) that `openssl`
 * can read, created on first use without ever clobbering a key written by a
 * concurrent process.
 *
 * @example
 * ```ts
 * import { identityPath } from "./identity.ts";
 *
 * if (!(identityPath("/home/me/.config/ctxsnap") === "/home/me/.config/ctxsnap/identity.pem")) throw new Error("Example failed");
 * ```
 *
 * Loading, or creating on first use (needs read, write and env permissions):
 * ```ts ignore
 * import { configDir, loadOrCreateIdentity } from "./identity.ts";
 *
 * const identity = await loadOrCreateIdentity(configDir());
 * if (!(identity.keyId.length === 16)) throw new Error("Example failed");
 * ```
 * @module
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  renameSync,
  unlinkSync,
} from "node:fs";
import { join } from "node:path";
import { ed25519 } from "npm:@noble/curves@2.4.0/ed25519.js";
import {
  ConfigError,
  ConflictError,
  errnoOf,
  IntegrityError,
  NotFoundError,
  quote,
} from "../errors.ts";
import { toHex } from "../encoding/hex.ts";
import {
  generateSeed,
  keyIdOf,
  pkcs8PemToSeed,
  publicKeyFromSeed,
  seedToPkcs8Pem,
} from "../crypto/ed25519.ts";
import { checkConfigDir, readConfigFile } from "./_config_files.ts";
import { writeAllSync } from "../workspace/io/fd.ts";
import { fsyncDir } from "../workspace/io/atomic.ts";

/** A loaded signing identity. `seed` is the private key: never print or export it. */
export interface Identity {
  /** First 16 hex chars of SHA-256 over the raw public key. */
  keyId: string;
  /** The raw 32-byte Ed25519 public key. */
  publicKey: Uint8Array;
  /** `publicKey` as 64 lowercase hex chars. */
  publicKeyHex: string;
  /** The 32-byte private key seed. */
  seed: Uint8Array;
  /** The key file it was loaded from. */
  path: string;
}

const IDENTITY_FILE = "identity.pem";
const MAX_KEY_FILE_BYTES = 4096;

export { configDir } from "./config_dir.ts";

/**
 * The identity key file inside config directory `dir`.
 *
 * @example
 * ```ts
 * import { identityPath } from "./identity.ts";
 * if (!(identityPath("/cfg") === "/cfg/identity.pem")) throw new Error("Example failed");
 * ```
 */
export function identityPath(dir: string): string {
  return join(dir, IDENTITY_FILE);
}

function identityFrom(seed: Uint8Array, publicKey: Uint8Array, path: string): Identity {
  return { keyId: keyIdOf(publicKey), publicKey, publicKeyHex: toHex(publicKey), seed, path };
}

/** Reads and strictly checks the key file; returns the seed. */
function readSeed(dir: string): { seed: Uint8Array; path: string } {
  const path = identityPath(dir);
  checkConfigDir(dir);
  const bytes = readConfigFile(path, {
    what: "Identity key",
    maxBytes: MAX_KEY_FILE_BYTES,
    private: true,
    modeHint: `chmod 600 ${path}`,
  });
  if (bytes === null) {
    throw new NotFoundError(`No identity key at ${quote(path)}`, {
      hint: "run any command that signs (e.g. `ctxsnap create`), or `ctxsnap key show`, " +
        "to create one",
    });
  }
  let seed: Uint8Array;
  try {
    seed = pkcs8PemToSeed(new TextDecoder().decode(bytes));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(`Identity key ${quote(path)} is malformed: ${reason}`, {
      hint: `move ${path} aside to create a new key, or restore it from a backup`,
      cause: error,
    });
  }
  return { seed, path };
}

/**
 * Loads the identity in config directory `dir`.
 *
 * @throws {NotFoundError} If there is no key file.
 * @throws {ConfigError} If the config directory is writable by others or
 * owned by another user, or the key file is a symbolic link, not a regular
 * file, owned by another user, readable or writable by group or others
 * (hint: `chmod 600 <path>`), larger than 4 KiB, or not a strict RFC 8410
 * PKCS#8 PEM Ed25519 private key.
 *
 * @example
 * ```ts ignore
 * import { mkdtempSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { NotFoundError } from "../errors.ts";
 * import { loadIdentity } from "./identity.ts";
 *
 * let missing = false;
 * try {
 *   loadIdentity(mkdtempSync(`${tmpdir()}/ctxsnap-doc-`));
 * } catch (error) {
 *   missing = error instanceof NotFoundError;
 * }
 * if (!(missing)) throw new Error("Example failed");
 * ```
 */
export function loadIdentity(dir: string): Identity {
  const { seed, path } = readSeed(dir);
  return identityFrom(seed, ed25519.getPublicKey(new Uint8Array(seed)), path);
}

/**
 * Like {@linkcode loadIdentity}, deriving the public key with the default
 * Ed25519 backend (WebCrypto where available: no table precomputation, so
 * much faster on a cold start).
 */
export async function loadIdentityAsync(dir: string): Promise<Identity> {
  const { seed, path } = readSeed(dir);
  return identityFrom(seed, await publicKeyFromSeed(seed), path);
}

/** Creates `dir` with mode 0700 if missing. */
function ensurePrivateDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new ConfigError(
      `Cannot create config directory ${quote(dir)}: ${errnoOf(error) ?? error}`,
      { cause: error },
    );
  }
  checkConfigDir(dir);
}

function randomSuffix(): string {
  return toHex(crypto.getRandomValues(new Uint8Array(8)));
}

/**
 * Loads the identity in config directory `dir`, creating it first if there is
 * none: the directory with mode 0700, the key as a PKCS#8 PEM file with mode
 * 0600. The key is written to a fresh temporary file (`O_EXCL`, mode 0600),
 * fsynced, then hard-linked into place, which fails if another process created
 * the key meanwhile; in that case that key is loaded instead, never replaced.
 *
 * @example
 * ```ts ignore
 * import { mkdtempSync, statSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { loadOrCreateIdentity } from "./identity.ts";
 *
 * const dir = `${mkdtempSync(`${tmpdir()}/ctxsnap-doc-`)}/config`;
 * const identity = await loadOrCreateIdentity(dir);
 * if (!((statSync(identity.path).mode & 0o777) === 0o600)) throw new Error("Example failed");
 * if (!((await loadOrCreateIdentity(dir)).keyId === identity.keyId)) throw new Error("Example failed");
 * ```
 */
export async function loadOrCreateIdentity(dir: string): Promise<Identity> {
  try {
    return await loadIdentityAsync(dir);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
  }
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  ensurePrivateDir(dir);
  const path = identityPath(dir);
  const temp = `${path}.tmp-${randomSuffix()}`;
  const failed = (error: unknown): ConfigError =>
    new ConfigError(`Cannot write identity key ${quote(path)}: ${errnoOf(error) ?? error}`, {
      cause: error,
    });
  let fd: number;
  try {
    fd = openSync(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
  } catch (error) {
    throw failed(error);
  }
  try {
    try {
      fchmodSync(fd, 0o600); // in case the umask removed owner bits
      const bytes = new TextEncoder().encode(seedToPkcs8Pem(seed));
      writeAllSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    linkSync(temp, path);
  } catch (error) {
    // Another process created the key meanwhile: use theirs, never replace it.
    if (errnoOf(error) === "EEXIST") return loadIdentity(dir);
    throw failed(error);
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // Nothing left to clean up.
    }
  }
  fsyncDir(dir);
  return identityFrom(seed, publicKey, path);
}

/** What {@linkcode importIdentity} did. */
export interface IdentityImport {
  /** The identity now in place. */
  identity: Identity;
  /** Whether it was already this machine's identity (nothing written). */
  unchanged: boolean;
  /** The identity it replaced, or null. */
  replaced: Identity | null;
  /** Where the replaced key file was kept (`identity-<key id>.pem.replaced`), or null. */
  backup: string | null;
}

/**
 * Makes the Ed25519 key with private seed `seed` this machine's identity in
 * config directory `dir` (an existing directory's mode is not changed; a new
 * one gets 0700). The key file is written with mode 0600 to a fresh
 * temporary file, fsynced and renamed into place. An existing, different
 * identity is refused with a {@linkcode ConflictError} (exit 5) unless
 * `replace`; then the old key file is first kept, hard-linked, as
 * `identity-<old key id>.pem.replaced` so no key is ever lost.
 */
export async function importIdentity(
  dir: string,
  seed: Uint8Array,
  options: { replace?: boolean } = {},
): Promise<IdentityImport> {
  const publicKey = await publicKeyFromSeed(seed);
  const identity = identityFrom(new Uint8Array(seed), publicKey, identityPath(dir));
  let existing: Identity | null = null;
  let unreadable = false;
  try {
    existing = await loadIdentityAsync(dir);
  } catch (error) {
    if (!(error instanceof NotFoundError)) {
      if (!options.replace) throw error;
      unreadable = true; // replaced, but kept like any other
    }
  }
  if (existing !== null && existing.keyId === identity.keyId) {
    return { identity: existing, unchanged: true, replaced: null, backup: null };
  }
  if (existing !== null && !options.replace) {
    throw new ConflictError(
      `This machine already has the identity ${existing.keyId}; not replacing it with ${identity.keyId}`,
      { hint: "pass --force to replace it (the old key file is kept next to it)" },
    );
  }
  ensurePrivateDir(dir);
  const path = identityPath(dir);
  let backup: string | null = null;
  if (existing !== null || unreadable) {
    backup = join(
      dir,
      `identity-${existing?.keyId ?? `unreadable-${randomSuffix()}`}.pem.replaced`,
    );
    try {
      linkSync(path, backup);
    } catch (error) {
      if (errnoOf(error) !== "EEXIST") {
        throw new IntegrityError(
          `Cannot keep the old identity key as ${quote(backup)}: ${errnoOf(error) ?? error}`,
          { cause: error },
        );
      }
    }
  }
  const temp = `${path}.tmp-${randomSuffix()}`;
  let fd: number | null = null;
  try {
    fd = openSync(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    fchmodSync(fd, 0o600);
    const bytes = new TextEncoder().encode(seedToPkcs8Pem(seed));
    writeAllSync(fd, bytes);
    fsyncSync(fd);
    closeSync(fd);
    fd = null;
    renameSync(temp, path);
  } catch (error) {
    if (fd !== null) closeSync(fd);
    try {
      unlinkSync(temp);
    } catch {
      // Nothing left to clean up.
    }
    throw new IntegrityError(
      `Cannot write identity key ${quote(path)}: ${errnoOf(error) ?? error}`,
      {
        cause: error,
      },
    );
  }
  fsyncDir(dir);
  return { identity, unchanged: false, replaced: existing, backup };
}
