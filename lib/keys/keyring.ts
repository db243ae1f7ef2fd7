/**
 * Trusted keys: the public keys whose signatures verify as trusted, kept in
 * `<config dir>/trusted_keys.json` as
 * `{"version":1,"keys":[{"key_id","public_key","name","added_at"}]}`
 * (sorted by `key_id`), plus the in-memory {@linkcode Keyring} that answers
 * "is this signer trusted?".
 *
 * @example
 * ```ts
 * import { keyIdOf, publicKeyFromSeed } from "../crypto/ed25519.ts";
 * import { Keyring } from "./keyring.ts";
 *
 * const alice = await publicKeyFromSeed(new Uint8Array(32).fill(1));
 * const keyring = new Keyring([]);
 * if (!(!keyring.isTrusted(keyIdOf(alice)))) throw new Error("Example failed");
 * keyring.add(alice, "alice"); // for this run only, like `--trust KEY`
 * if (!(keyring.isTrusted(keyIdOf(alice)) && keyring.nameOf(keyIdOf(alice)) === "alice")) throw new Error("Example failed");
 * ```
 *
 * Persistent trust (needs read and write permissions):
 * ```ts ignore
 * import { publicKeyFromSeed } from "../crypto/ed25519.ts";
 * import { configDir } from "./identity.ts";
 * import { Keyring, readTrustedKeys, trustedKeysPath, trustKey } from "./keyring.ts";
 *
 * const alice = await publicKeyFromSeed(new Uint8Array(32).fill(1));
 * const added = trustKey(configDir(), alice, "alice");
 * const keyring = new Keyring(readTrustedKeys(trustedKeysPath(configDir())));
 * if (!(keyring.isTrusted(added.keyId) && keyring.nameOf(added.keyId) === "alice")) throw new Error("Example failed");
 * ```
 * @module
 */
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseJson } from "../encoding/canonical_json.ts";
import { ConfigError, NotFoundError, quote, reasonOf, UsageError } from "../errors.ts";
import { fromHex, isHex, toHex } from "../encoding/hex.ts";
import { keyIdOf, parsePublicKey } from "../crypto/ed25519.ts";
import type { Identity } from "./identity.ts";
import { checkConfigDir, readConfigFile } from "./_config_files.ts";
import { writeFileAtomic } from "../workspace/io/atomic.ts";

/** One trusted public key. */
export interface TrustedKey {
  /** First 16 hex chars of SHA-256 over the raw public key. */
  keyId: string;
  /** The raw public key as 64 lowercase hex chars. */
  publicKeyHex: string;
  /** A human name for the key, or `null`. */
  name: string | null;
  /** When the key was first trusted, as an ISO 8601 UTC timestamp. */
  addedAt: string;
}

const TRUSTED_KEYS_FILE = "trusted_keys.json";
const FORMAT_VERSION = 1;
const MAX_FILE_BYTES = 1024 * 1024;
/** Largest key file `--trust FILE` reads: a PEM public key is about 113 bytes. */
export const MAX_KEY_FILE_BYTES: number = 64 * 1024;
const MAX_NAME_LENGTH = 100;
const MIN_PREFIX = 4;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const FILE_FIELDS = ["keys", "version"];
const KEY_FIELDS = ["added_at", "key_id", "name", "public_key"];

/**
 * The trusted keys file inside config directory `dir`.
 *
 * @example
 * ```ts
 * import { trustedKeysPath } from "./keyring.ts";
 * if (!(trustedKeysPath("/cfg") === "/cfg/trusted_keys.json")) throw new Error("Example failed");
 * ```
 */
export function trustedKeysPath(dir: string): string {
  return join(dir, TRUSTED_KEYS_FILE);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function checkFields(
  value: Record<string, unknown>,
  allowed: string[],
  fail: (m: string) => never,
) {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) fail(`unknown field ${quote(key)}`);
  }
  for (const key of allowed) {
    if (!Object.hasOwn(value, key)) fail(`missing field ${quote(key)}`);
  }
}

/** Why `name` is not acceptable as a key name, or `undefined` when it is. */
function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "is empty";
  if (name.length > MAX_NAME_LENGTH) return `is longer than ${MAX_NAME_LENGTH} characters`;
  if (name.trim() !== name) return "has leading or trailing whitespace";
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return "contains a control character";
  return undefined;
}

function validEntry(entry: unknown, index: number, fail: (m: string) => never): TrustedKey {
  const where = `key ${index}`;
  if (!isPlainObject(entry)) fail(`${where} is not an object`);
  checkFields(entry, KEY_FIELDS, (m) => fail(`${where} has ${m}`));
  const { key_id: keyId, public_key: publicKeyHex, name, added_at: addedAt } = entry;
  if (typeof publicKeyHex !== "string" || !isHex(publicKeyHex, 64)) {
    fail(`${where} has public_key ${quote(publicKeyHex)}, not 64 lowercase hex characters`);
  }
  try {
    parsePublicKey(publicKeyHex);
  } catch {
    fail(`${where} has public_key ${quote(publicKeyHex)}, not a valid Ed25519 public key`);
  }
  const expected = keyIdOf(fromHex(publicKeyHex, 32));
  if (keyId !== expected) {
    fail(`${where} has key_id ${quote(keyId)}, but its public key has key id ${quote(expected)}`);
  }
  if (name !== null) {
    if (typeof name !== "string") fail(`${where} has name ${quote(name)}, not a string or null`);
    const problem = nameProblem(name);
    if (problem) fail(`${where} has name ${quote(name)}, which ${problem}`);
  }
  if (typeof addedAt !== "string" || !ISO_UTC.test(addedAt) || Number.isNaN(Date.parse(addedAt))) {
    fail(`${where} has added_at ${quote(addedAt)}, not an ISO 8601 UTC timestamp`);
  }
  return { keyId: expected, publicKeyHex, name: name as string | null, addedAt };
}

/**
 * Reads and strictly validates a trusted keys file; `[]` if it does not exist.
 * Keys come back sorted by key id. The file is read as configuration: never
 * through a symbolic link, only a regular file of at most 1 MiB, owned by
 * this user (or root) and not writable by group or others.
 *
 * @throws {ConfigError} Naming the file, if it is exposed as above, not JSON,
 * has a version other than 1, an unknown or missing field, a key whose
 * `key_id` is not the key id of its `public_key`, or the same key twice.
 *
 * @example
 * ```ts ignore
 * import { readTrustedKeys } from "./keyring.ts";
 * if (!(readTrustedKeys("/nonexistent/trusted_keys.json").length === 0)) throw new Error("Example failed");
 * ```
 */
export function readTrustedKeys(path: string): TrustedKey[] {
  const fail = (message: string, cause?: unknown): never => {
    throw new ConfigError(`Trusted keys file ${quote(path)} is invalid: ${message}`, {
      hint: `fix or remove ${path}, then trust keys again with \`ctxsnap key trust\``,
      cause,
    });
  };
  const bytes = readConfigFile(path, {
    what: "Trusted keys file",
    maxBytes: MAX_FILE_BYTES,
    modeHint: `chmod go-w ${path}`,
  });
  if (bytes === null) return [];
  const head = new TextDecoder().decode(bytes.subarray(0, 128)).trim();
  if (head.startsWith("-----BEGIN") || /^[0-9a-fA-F]{64}\s*$/.test(head)) {
    throw new ConfigError(
      `${
        quote(path)
      } holds a public key, but a trusted-keys file (JSON, FORMAT.md §7.4) is needed here`,
      {
        hint:
          "pass one public key with --trust FILE, or pin it with `ctxsnap key trust FILE --name N`",
      },
    );
  }
  let document: unknown;
  try {
    document = parseJson(bytes, { maxBytes: MAX_FILE_BYTES });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error), error);
  }
  if (!isPlainObject(document)) return fail("the top level is not an object");
  checkFields(document, FILE_FIELDS, (m) => fail(`it has ${m}`));
  if (document.version !== FORMAT_VERSION) {
    fail(`version ${quote(document.version)} is not supported (expected ${FORMAT_VERSION})`);
  }
  if (!Array.isArray(document.keys)) return fail('"keys" is not an array');
  const keys = document.keys.map((entry, index) => validEntry(entry, index, fail));
  const seen = new Set<string>();
  for (const key of keys) {
    if (seen.has(key.keyId)) fail(`key ${quote(key.keyId)} appears twice`);
    seen.add(key.keyId);
  }
  return keys.sort(byKeyId);
}

/**
 * The trusted keys of config directory `dir`, after checking that the
 * directory is this user's and not writable by others; `[]` when there are none.
 *
 * @throws {ConfigError} If the directory or the file may not be trusted or
 * the file is invalid (see {@linkcode readTrustedKeys}).
 */
export function readConfigTrustedKeys(dir: string): TrustedKey[] {
  checkConfigDir(dir);
  return readTrustedKeys(trustedKeysPath(dir));
}

/**
 * Reads a public key file named on the command line (`--trust FILE`,
 * `key trust FILE`): a symbolic link is followed once, anything but a regular
 * file (a FIFO, a device such as `/dev/zero`) is refused before it is opened,
 * the file is opened non-blocking and at most {@linkcode MAX_KEY_FILE_BYTES}
 * are read. Returns null when no file exists at `path`.
 *
 * @throws {ConfigError} If it is not a regular file, is larger than the
 * bound, cannot be read, or does not hold an Ed25519 public key.
 */
export function readKeyFile(path: string): Uint8Array | null {
  const bytes = readConfigFile(path, {
    what: "Key file",
    maxBytes: MAX_KEY_FILE_BYTES,
    followSymlink: true,
    checkOwner: false,
  });
  if (bytes === null) return null;
  const text = new TextDecoder().decode(bytes).trim();
  if (text.startsWith("{")) {
    throw new ConfigError(
      `Key file ${quote(path)} holds JSON (a trusted-keys file?), not a public key`,
      {
        hint:
          "a trusted-keys file goes to --trusted-keys FILE; --trust and `key trust` take one public key (hex or PEM)",
      },
    );
  }
  try {
    // A lean-ctx public key file may hold the hex key in either case.
    return parsePublicKey(/^[0-9a-fA-F]{64}$/.test(text) ? text.toLowerCase() : text);
  } catch (error) {
    throw new ConfigError(
      `Key file ${quote(path)} does not hold an Ed25519 public key: ${
        error instanceof Error ? error.message : error
      }`,
      { hint: "pass the file `ctxsnap key export` wrote, or the 64-hex public key", cause: error },
    );
  }
}

function byKeyId(a: TrustedKey, b: TrustedKey): number {
  return a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : 0;
}

function serialize(keys: TrustedKey[]): string {
  const document = {
    version: FORMAT_VERSION,
    keys: [...keys].sort(byKeyId).map((key) => ({
      key_id: key.keyId,
      public_key: key.publicKeyHex,
      name: key.name,
      added_at: key.addedAt,
    })),
  };
  return JSON.stringify(document, null, 2) + "\n";
}

/** Replaces the trusted keys file atomically (temp file, fsync, rename, fsync directory). */
function writeTrustedKeys(path: string, keys: TrustedKey[]): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileAtomic(path, serialize(keys), { mode: 0o644 });
  } catch (error) {
    throw new ConfigError(
      `Cannot write trusted keys file ${quote(path)}: ${
        reasonOf((error as { cause?: unknown }).cause ?? error)
      }`,
      { cause: error },
    );
  }
}

function checkName(name: string): void {
  const problem = nameProblem(name);
  if (problem) throw new UsageError(`Key name ${quote(name)} ${problem}`);
}

function checkedPublicKeyHex(publicKey: Uint8Array): string {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) {
    throw new UsageError(`Public key must be 32 bytes, got ${quote(publicKey?.length)}`);
  }
  const hex = toHex(publicKey);
  parsePublicKey(hex); // refuses invalid and small-order points
  return hex;
}

/**
 * Trusts `publicKey` (optionally naming it) in config directory `dir`.
 * Idempotent: trusting a trusted key keeps its `addedAt` and, when `name` is
 * given, updates its name. A name already used by another key is refused.
 * The file is rewritten atomically.
 *
 * @example
 * ```ts ignore
 * import { mkdtempSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { publicKeyFromSeed } from "../crypto/ed25519.ts";
 * import { trustKey } from "./keyring.ts";
 *
 * const dir = mkdtempSync(`${tmpdir()}/ctxsnap-doc-`);
 * const publicKey = await publicKeyFromSeed(new Uint8Array(32).fill(3));
 * const first = trustKey(dir, publicKey);
 * const again = trustKey(dir, publicKey, "bob");
 * if (!(first.addedAt === again.addedAt && again.name === "bob")) throw new Error("Example failed");
 * ```
 */
export function trustKey(dir: string, publicKey: Uint8Array, name?: string): TrustedKey {
  const publicKeyHex = checkedPublicKeyHex(publicKey);
  if (name !== undefined) checkName(name);
  const path = trustedKeysPath(dir);
  const keys = readConfigTrustedKeys(dir);
  const keyId = keyIdOf(publicKey);
  if (name !== undefined) {
    const holder = keys.find((key) => key.name === name && key.keyId !== keyId);
    if (holder) {
      throw new UsageError(`Key name ${quote(name)} is already used by key ${holder.keyId}`, {
        hint: "choose another name, or untrust that key first",
      });
    }
  }
  const existing = keys.find((key) => key.keyId === keyId);
  let result: TrustedKey;
  if (existing) {
    if (name === undefined || existing.name === name) return existing;
    result = { ...existing, name };
    keys[keys.indexOf(existing)] = result;
  } else {
    result = { keyId, publicKeyHex, name: name ?? null, addedAt: new Date().toISOString() };
    keys.push(result);
  }
  writeTrustedKeys(path, keys);
  return result;
}

/** Finds the key `keyIdOrName` names: an exact key id, an exact name, or a unique key id prefix. */
function findKey(keys: TrustedKey[], keyIdOrName: string): TrustedKey {
  const exact = keys.find((key) => key.keyId === keyIdOrName);
  if (exact) return exact;
  const named = keys.filter((key) => key.name === keyIdOrName);
  if (named.length === 1) return named[0]!;
  if (named.length > 1) {
    throw new UsageError(`Key name ${quote(keyIdOrName)} matches several trusted keys`, {
      hint: "give the key id instead",
    });
  }
  if (keyIdOrName.length >= MIN_PREFIX && isHex(keyIdOrName, keyIdOrName.length)) {
    const matches = keys.filter((key) => key.keyId.startsWith(keyIdOrName));
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1) {
      throw new UsageError(
        `Key id prefix ${quote(keyIdOrName)} is ambiguous: it matches ${
          matches.map((key) => key.keyId).join(", ")
        }`,
        { hint: "give more characters of the key id" },
      );
    }
  }
  throw new NotFoundError(`No trusted key matches ${quote(keyIdOrName)}`, {
    hint: "list trusted keys with `ctxsnap key list`",
  });
}

/**
 * Stops trusting the key named by `keyIdOrName` (its key id, a unique key id
 * prefix of at least 4 characters, or its name) and returns it.
 *
 * @throws {NotFoundError} If no trusted key matches.
 * @throws {UsageError} If a prefix or name matches several keys.
 *
 * @example
 * ```ts ignore
 * import { mkdtempSync } from "node:fs";
 * import { tmpdir } from "node:os";
 * import { publicKeyFromSeed } from "../crypto/ed25519.ts";
 * import { readTrustedKeys, trustedKeysPath, trustKey, untrustKey } from "./keyring.ts";
 *
 * const dir = mkdtempSync(`${tmpdir()}/ctxsnap-doc-`);
 * trustKey(dir, await publicKeyFromSeed(new Uint8Array(32).fill(4)), "carol");
 * untrustKey(dir, "carol");
 * if (!(readTrustedKeys(trustedKeysPath(dir)).length === 0)) throw new Error("Example failed");
 * ```
 */
export function untrustKey(dir: string, keyIdOrName: string): TrustedKey {
  const path = trustedKeysPath(dir);
  const keys = readConfigTrustedKeys(dir);
  const found = findKey(keys, keyIdOrName);
  writeTrustedKeys(path, keys.filter((key) => key !== found));
  return found;
}

/** The name {@linkcode Keyring.nameOf} gives this machine's own key when no trusted entry names it. */
const OWN_KEY_NAME = "this machine";

/**
 * The set of signers whose signatures count as trusted: the given trusted
 * keys, this machine's own identity, and keys added for one run (`--trust`).
 *
 * @example
 * ```ts
 * import { publicKeyFromSeed, keyIdOf } from "../crypto/ed25519.ts";
 * import { Keyring } from "./keyring.ts";
 *
 * const keyring = new Keyring([]);
 * const publicKey = await publicKeyFromSeed(new Uint8Array(32).fill(5));
 * if (!(!keyring.isTrusted(keyIdOf(publicKey)))) throw new Error("Example failed");
 * keyring.add(publicKey, "ci");
 * if (!(keyring.isTrusted(keyIdOf(publicKey)) && keyring.nameOf(keyIdOf(publicKey)) === "ci")) throw new Error("Example failed");
 * ```
 */
export class Keyring {
  #keys = new Map<string, TrustedKey>();
  #ownKeyId: string | null;
  #ownPublicKeyHex: string | null;
  #runKeyIds: string[] = [];

  /** Builds a keyring from `keys` and, when given, this machine's identity `own`. */
  constructor(keys: TrustedKey[], own?: Identity | null) {
    for (const key of keys) this.#keys.set(key.keyId, key);
    this.#ownKeyId = own ? own.keyId : null;
    this.#ownPublicKeyHex = own ? own.publicKeyHex : null;
  }

  /**
   * Whether a signature by key `keyId` is trusted. Pass the signer's public
   * key (hex) to also require that it is exactly the pinned key, not merely
   * one whose 64-bit id collides with it.
   */
  isTrusted(keyId: string, publicKeyHex?: string): boolean {
    if (keyId === this.#ownKeyId) {
      return publicKeyHex === undefined || publicKeyHex === this.#ownPublicKeyHex;
    }
    const pinned = this.#keys.get(keyId);
    if (pinned === undefined) return false;
    return publicKeyHex === undefined || publicKeyHex === pinned.publicKeyHex;
  }

  /**
   * The name of key `keyId`: its trusted name, else `"this machine"` for the
   * own identity, else `null`.
   */
  nameOf(keyId: string): string | null {
    const name = this.#keys.get(keyId)?.name ?? null;
    if (name === null && keyId === this.#ownKeyId) return OWN_KEY_NAME;
    return name;
  }

  /** The key ids trusted for this run only ({@linkcode Keyring.add}: `--trust`), in order. */
  runKeyIds(): readonly string[] {
    return this.#runKeyIds;
  }

  /** Trusts `publicKey` for the life of this keyring only (nothing is written). */
  add(publicKey: Uint8Array, name?: string): void {
    const publicKeyHex = checkedPublicKeyHex(publicKey);
    if (name !== undefined) checkName(name);
    const keyId = keyIdOf(publicKey);
    if (!this.#runKeyIds.includes(keyId)) this.#runKeyIds.push(keyId);
    const existing = this.#keys.get(keyId);
    this.#keys.set(keyId, {
      keyId,
      publicKeyHex,
      name: name ?? existing?.name ?? null,
      addedAt: existing?.addedAt ?? new Date().toISOString(),
    });
  }
}
