/**
 * Regenerates the directory-tree vectors (docs/FORMAT.md §2.2) in this
 * directory: `deno run -A tests/vectors/tree/generate.ts` from the repo root.
 *
 * - `valid/*.json`: a flat manifest, the directory objects a writer MUST
 *   produce for it (canonical JSON text, children first, the root last) and
 *   the root id; a reader MUST expand the objects back to the manifest.
 * - `invalid/*.json`: objects (trees and blobs, as text) and a root id a
 *   reader MUST refuse, with a fragment of the refusal's message.
 *
 * The valid objects are written out by hand here (not by `splitManifest`),
 * so the test checks the writer against the spec, not against itself.
 *
 * @module
 */
import { canonicalize } from "../../../lib/encoding/canonical_json.ts";
import { sha256Hex } from "../../../lib/crypto/hash.ts";

const here = new URL(".", import.meta.url);
const enc = new TextEncoder();
const B1 = "1".repeat(64);
const B2 = "2".repeat(64);

type Json = Parameters<typeof canonicalize>[0];
/** A tree object's canonical text and id. */
function obj(value: Json): { id: string; json: string } {
  const json = canonicalize(value);
  return { id: sha256Hex(enc.encode(json)), json };
}
const dir = (entries: Json[], skipped: Json[] = []) => obj({ version: 2, entries, skipped });
const file = (name: string, blob = B1, size = 1, mode = 0o644) => ({
  name,
  type: "file",
  blob,
  size,
  mode,
});
const sub = (name: string, o: { id: string }) => ({ name, type: "tree", tree: o.id });

function writeVector(kind: "valid" | "invalid", name: string, value: Json): void {
  Deno.mkdirSync(new URL(`${kind}/`, here), { recursive: true });
  Deno.writeTextFileSync(new URL(`${kind}/${name}.json`, here), JSON.stringify(value, null, 2) + "\n");
}

function valid(
  name: string,
  description: string,
  manifest: Json,
  objects: { id: string; json: string }[],
): void {
  writeVector("valid", name, { description, manifest, root: objects.at(-1)!.id, objects });
}

// --- valid -----------------------------------------------------------------
{
  const root = dir([]);
  valid("empty", "an empty workspace is one empty root tree", {
    version: 1,
    entries: [],
    skipped: [],
  }, [root]);
}
{
  // git order: "a" (a directory, compared as "a/") sorts after "a-b" and "a.txt".
  const lib = dir([file("util.ts", B2, 2)]);
  const a = dir([sub("lib", lib), file("x", B1, 1, 0o755)], [{ name: ".env", reason: "secret" }]);
  const root = dir([
    file("a-b"),
    file("a.txt"),
    sub("a", a),
    { name: "link", type: "symlink", target: "a.txt" },
  ], [{ name: "node_modules", reason: "excluded_dir" }]);
  valid("nested", "files, a symlink and skipped records in nested directories, in git order", {
    version: 1,
    entries: [
      { path: "a-b", type: "file", blob: B1, size: 1, mode: 0o644 },
      { path: "a.txt", type: "file", blob: B1, size: 1, mode: 0o644 },
      { path: "a/lib/util.ts", type: "file", blob: B2, size: 2, mode: 0o644 },
      { path: "a/x", type: "file", blob: B1, size: 1, mode: 0o755 },
      { path: "link", type: "symlink", target: "a.txt" },
    ],
    skipped: [
      { path: "a/.env", reason: "secret" },
      { path: "node_modules", reason: "excluded_dir" },
    ],
  }, [lib, a, root]);
}
{
  const same = dir([file("index.ts")]);
  const root = dir([sub("x", same), sub("y", same)]);
  valid("shared-subtree", "two identical directories are one object", {
    version: 1,
    entries: [
      { path: "x/index.ts", type: "file", blob: B1, size: 1, mode: 0o644 },
      { path: "y/index.ts", type: "file", blob: B1, size: 1, mode: 0o644 },
    ],
    skipped: [],
  }, [same, root]);
}
{
  const d = dir([], [{ name: "id_rsa", reason: "secret" }, { name: "id_rsa", reason: "unreadable" }]);
  const root = dir([sub("keys", d)]);
  valid("skipped-only-directory", "a directory holding only skipped records is recorded", {
    version: 1,
    entries: [],
    skipped: [{ path: "keys/id_rsa", reason: "secret" }, { path: "keys/id_rsa", reason: "unreadable" }],
  }, [d, root]);
}
{
  const root = dir([], [{ name: "bad\\dir/x", reason: "unsafe_name" }]);
  valid(
    "skipped-unnameable-parent",
    "a skipped record below a segment that cannot be an entry name goes to the root under its whole path",
    { version: 1, entries: [], skipped: [{ path: "bad\\dir/x", reason: "unsafe_name" }] },
    [root],
  );
}
{
  // UTF-16 code unit order: "z" < "é" (U+00E9) < "😀" (U+D83D…) < "ｚ" (U+FF5A).
  const inner = dir([file("😀")]);
  const root = dir([file("z"), file("é"), sub("😀", inner), file("ｚ")]);
  valid("unicode-order", "names compare by UTF-16 code units", {
    version: 1,
    entries: [
      { path: "z", type: "file", blob: B1, size: 1, mode: 0o644 },
      { path: "é", type: "file", blob: B1, size: 1, mode: 0o644 },
      { path: "😀/😀", type: "file", blob: B1, size: 1, mode: 0o644 },
      { path: "ｚ", type: "file", blob: B1, size: 1, mode: 0o644 },
    ],
    skipped: [],
  }, [inner, root]);
}

// --- invalid ---------------------------------------------------------------
function invalid(
  name: string,
  description: string,
  error: string,
  objects: { kind: "tree" | "blob"; data: string }[],
  root: string,
): void {
  writeVector("invalid", name, { description, error, root, objects });
}
const tree = (o: { json: string }) => ({ kind: "tree" as const, data: o.json });
{
  let node = dir([file("leaf")]);
  const all = [tree(node)];
  for (let i = 0; i < 257; i++) {
    node = dir([sub("d", node)]);
    all.push(tree(node));
  }
  invalid("depth-bomb", "257 nested directories", "deeper than 256", all, node.id);
}
{
  let node = dir([file("leaf")]);
  const all = [tree(node)];
  for (let i = 0; i < 22; i++) {
    node = dir([sub("a", node), sub("b", node)]);
    all.push(tree(node));
  }
  invalid(
    "expansion-bomb",
    "22 levels of two names for one subtree: 4 million entries from 23 small objects",
    "more than 2000000 entries",
    all,
    node.id,
  );
}
{
  const d = dir([file("x")]);
  const root = dir([file("a"), sub("a", d)]);
  invalid("duplicate-name", "a file and a directory with one name", "appears more than once", [
    tree(d),
    tree(root),
  ], root.id);
}
for (
  const [name, reserved] of [
    ["reserved-dotgit-case", ".GIT"],
    ["reserved-dotgit-dot", ".git."],
    ["reserved-short-name", "GIT~1"],
    ["reserved-ctxsnap-long-s", ".ctxſnap"],
  ]
) {
  const d = dir([file("config")]);
  const root = dir([sub(reserved!, d)]);
  invalid(name!, `a directory named ${reserved}, which folds to a reserved name`, "reserved", [
    tree(d),
    tree(root),
  ], root.id);
}
{
  const blob = "not a tree\n";
  const root = dir([{ name: "d", type: "tree", tree: sha256Hex(enc.encode(blob)) }]);
  invalid("subtree-is-blob", "a subtree id that names a blob", "Invalid literal", [
    { kind: "blob", data: blob },
    tree(root),
  ], root.id);
}
{
  const flat = obj({ version: 1, entries: [{ path: "x", type: "file", blob: B1, size: 1, mode: 420 }], skipped: [] });
  const root = dir([sub("d", flat)]);
  invalid("subtree-is-flat-manifest", "a subtree id that names a version 1 manifest", "not a version 2 tree", [
    tree(flat),
    tree(root),
  ], root.id);
}
{
  const empty = dir([]);
  const root = dir([sub("d", empty)]);
  invalid("empty-subtree", "a subtree holding nothing", "is empty", [tree(empty), tree(root)], root.id);
}
{
  const d = dir([file("x")]);
  const root = dir([sub("a", d), file("a-b")]);
  invalid("git-order", 'directory "a" (compared as "a/") before file "a-b"', "not in order", [
    tree(d),
    tree(root),
  ], root.id);
}
{
  const root = dir([file("a/b")]);
  invalid("name-with-slash", "an entry name holding a slash", "contains a slash", [tree(root)], root.id);
}
{
  const d = dir([file("x")]);
  const root = dir([sub("..", d)]);
  invalid("name-dotdot", "a directory named ..", "dot segment", [tree(d), tree(root)], root.id);
}
{
  const root = dir([file("a\\b")]);
  invalid("name-backslash", "an entry name holding a backslash", "backslash", [tree(root)], root.id);
}
{
  const root = dir([{ name: "x", type: "tree", tree: "3".repeat(64) }]);
  invalid("missing-subtree", "a subtree the store does not hold", "has no tree", [tree(root)], root.id);
}
{
  const root = dir([{ name: "x", type: "tree", tree: "ABC" }]);
  invalid("subtree-id-not-hex", "a subtree id that is not a SHA-256 hex id", "not a SHA-256 hex id", [
    tree(root),
  ], root.id);
}
{
  const root = dir([{ name: "x", type: "device", tree: B1 }]);
  invalid("unknown-entry-type", "an entry of an unknown type", "unknown", [tree(root)], root.id);
}
{
  const root = obj({ version: 2, entries: [{ ...file("x"), path: "x" }], skipped: [] });
  invalid("unknown-entry-field", "a file entry with an extra field", "unknown field", [tree(root)], root.id);
}
{
  const root = dir([file("x")], [{ name: "b", reason: "secret" }, { name: "a", reason: "secret" }]);
  invalid("skipped-unsorted", "skipped records out of order", "not sorted and unique", [tree(root)], root.id);
}
{
  const root = obj({ version: 3, entries: [], skipped: [] });
  invalid("version-3", "a tree version this reader does not know", "Unsupported tree manifest version", [
    tree(root),
  ], root.id);
}
{
  // 40 directories of 120 characters: a 4,840-byte path, over the 4,096-byte limit.
  let node = dir([file("f")]);
  const all = [tree(node)];
  for (let i = 0; i < 40; i++) {
    node = dir([sub("n".repeat(120), node)]);
    all.push(tree(node));
  }
  invalid("path-too-long", "nested names that add up to a path over 4096 bytes", "longer than 4096 bytes", all, node.id);
}
{
  // The same flat record twice: once in its directory, once at the root.
  const d2 = dir([file("y")], [{ name: "x", reason: "secret" }]);
  const root2 = dir([sub("d", d2)], [{ name: "d/x", reason: "secret" }]);
  invalid("skipped-twice", "one skipped record placed in its directory and at the root", "not sorted and unique", [
    tree(d2),
    tree(root2),
  ], root2.id);
}
{
  const bytes = '{"version":2, "entries":[],"skipped":[]}';
  invalid("not-canonical", "a tree whose bytes are not canonical JSON", "canonical", [
    { kind: "tree", data: bytes },
  ], sha256Hex(enc.encode(bytes)));
}
