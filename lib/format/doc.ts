/**
 * The formats (layer 5 of docs/DESIGN.md §8, `lib/format/`).
 *
 * Owns: every encoding of docs/FORMAT.md that needs no store: the snapshot
 * body and its signed envelope, tree manifests and directory trees, FastCDC
 * chunking, the session slices, tar and bundles, remote ref records, the
 * snapshot summary shape. Pure functions over bytes and values.
 *
 * May use: `lib/errors.ts`, `lib/runtime.ts`, `lib/version.ts`,
 * `lib/encoding/`, `lib/crypto/`, `lib/workspace/io/`, `lib/keys/`.
 *
 * @module
 */
