/**
 * Keys (layer 4 of docs/DESIGN.md §8, `lib/keys/`).
 *
 * Owns: the config directory, this machine's identity (its Ed25519 key
 * pair), the trusted keys file and the `Keyring` that decides trust by full
 * public key.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`.
 *
 * @module
 */
