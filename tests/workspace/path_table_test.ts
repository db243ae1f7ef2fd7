/**
 * The interned paths of the incremental capture's model (`_path_table.ts`):
 * awkward names round-trip, visiting order is the order of whole paths, and
 * released nodes come back without disturbing the rest.
 *
 * @module
 */
import { NONE, PathTable, ROOT } from "../../lib/workspace/_path_table.ts";
import { assertEquals, assertThrows } from "../_assert.ts";

const AWKWARD = [
  "a",
  "A",
  "a-b",
  "a.b",
  "a0",
  "a/c",
  "a/c/d",
  "a-b/x",
  "\u00e9",
  "e\u0301",
  "e\u0301/f",
  "\u65e5\u672c/\u8a9e.txt",
  "\u{1f600}",
  "\uff61",
  "x y/ z ",
  "dir/.hidden",
  "dir/..dots",
  "a name longer than twelve characters.txt",
  "d/lone \ud800 surrogate in a long name",
];

function visited(table: PathTable): string[] {
  const out: string[] = [];
  table.visit(ROOT, (_node, path) => out.push(path));
  return out;
}

Deno.test("PathTable interns awkward names and gives each path back", () => {
  const table = new PathTable(2); // small: the columns grow while interning
  const nodes = AWKWARD.map((path) => table.intern(path));
  AWKWARD.forEach((path, i) => {
    assertEquals(table.pathOf(nodes[i]!), path, path);
    assertEquals(table.find(path), nodes[i], path);
    assertEquals(table.intern(path), nodes[i], `${path} interned again`);
  });
  assertEquals(new Set(nodes).size, AWKWARD.length, "one node per path");
  // Names differing only in case or in normalization are different paths.
  assertEquals(table.find("a") !== table.find("A"), true);
  assertEquals(table.find("\u00e9") !== table.find("e\u0301"), true);
  assertEquals(table.find("missing"), NONE);
  assertEquals(table.find("a/missing/deeper"), NONE);
});

Deno.test("PathTable visits paths in the order of a sorted list of whole paths", () => {
  const table = new PathTable();
  for (const path of AWKWARD) table.intern(path);
  // Every prefix directory is a node too ("dir", "\u65e5\u672c", "x y").
  const all = new Set<string>();
  for (const path of AWKWARD) {
    const parts = path.split("/");
    for (let i = 1; i <= parts.length; i++) all.add(parts.slice(0, i).join("/"));
  }
  const sorted = [...all].sort();
  assertEquals(visited(table), sorted);
  // "a-b" and "a.b" sort between "a" and "a/c", as whole paths do.
  const order = visited(table);
  assertEquals(order.indexOf("a") < order.indexOf("a-b"), true);
  assertEquals(order.indexOf("a.b") < order.indexOf("a/c"), true);
});

Deno.test("PathTable keeps blob ids as bytes and refuses one that is not hex", () => {
  const table = new PathTable();
  const a = table.intern("a");
  const b = table.intern("b");
  const hexA = "00ff".repeat(16);
  const hexB = "0123456789abcdef".repeat(4);
  table.setBlobHex(a, hexA);
  table.setBlobHex(b, hexB);
  assertEquals(table.blobHex(a), hexA);
  assertEquals(table.blobHex(b), hexB);
  assertEquals(table.blob.subarray(a * 32, a * 32 + 2), new Uint8Array([0, 255]));
  assertThrows(() => table.setBlobHex(a, "AB".repeat(32)));
  assertThrows(() => table.setBlobHex(a, "ab"));
});

Deno.test("PathTable reuses released nodes without disturbing the others", () => {
  const table = new PathTable();
  const kept = table.intern("d/keep");
  const gone = table.intern("d/gone/deep");
  table.release(gone);
  table.release(table.find("d/gone"));
  assertEquals(table.find("d/gone"), NONE);
  assertEquals(table.count, 3); // root, d, d/keep
  const again = table.intern("e/new");
  assertEquals(table.pathOf(again), "e/new");
  assertEquals(table.pathOf(kept), "d/keep");
  assertEquals(visited(table), ["d", "d/keep", "e", "e/new"]);
});

Deno.test("PathTable keeps each tree's records in a list a node joins and leaves", () => {
  const table = new PathTable();
  const dir = table.intern("d");
  const [x, y, z] = ["d/x", "d/y", "d/z"].map((p) => table.intern(p));
  for (const node of [x!, y!, z!]) table.attach(node, dir);
  const members = () => {
    const out: string[] = [];
    for (let m = table.first[dir]!; m !== NONE; m = table.next[m]!) out.push(table.pathOf(m));
    return out.sort();
  };
  assertEquals(members(), ["d/x", "d/y", "d/z"]);
  assertEquals(table.detach(y!), dir);
  assertEquals(table.detach(y!), NONE);
  assertEquals(members(), ["d/x", "d/z"]);
  table.detach(z!);
  table.detach(x!);
  assertEquals(members(), []);
});
