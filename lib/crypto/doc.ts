/**
 * Cryptography (layer 2 of docs/DESIGN.md §8, `lib/crypto/`).
 *
 * Owns: SHA-256 and BLAKE3, Ed25519 signing and verification (WebCrypto
 * first, noble otherwise, with one set of strict checks so both give the
 * same verdict) and its PEM and SPKI encodings; key ids.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`.
 *
 * @module
 */
