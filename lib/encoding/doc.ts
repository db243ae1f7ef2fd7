/**
 * Encodings (layer 1 of docs/DESIGN.md §8, `lib/encoding/`).
 *
 * Owns: canonical JSON (JCS, RFC 8785) and the one strict JSON parser every
 * input goes through (duplicate keys, lone surrogates and floats refused,
 * sizes bounded); hex; UTF-8 checks.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`.
 *
 * @module
 */
