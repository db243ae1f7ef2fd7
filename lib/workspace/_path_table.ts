/**
 * Interned workspace paths for the incremental capture's model
 * (`incremental.ts`): each path is a node numbered from 0 (the root, `""`),
 * stored as its parent's number and its last segment, never as a whole path
 * string. Per-node fields (flags, file size and mode, the blob id as 32 bytes
 * of one `Uint8Array`, device and inode, the directory a node's record
 * belongs to) live in typed arrays indexed by node, so a file costs a few
 * dozen bytes plus its name, whatever the depth of its directory.
 *
 * Nodes are visited in the order of their whole paths' UTF-16 code units (the
 * order of a flat manifest), though children are kept by name: a child's own
 * path sorts as its name, the paths below it as its name followed by `/`, so
 * `a-b` and `a.b` come between `a` and `a/c`, as they do in a sorted list of
 * whole paths.
 *
 * @example
 * ```ts
 * import { PathTable, ROOT } from "./_path_table.ts";
 * const table = new PathTable();
 * const file = table.intern("a/c");
 * table.intern("a-b");
 * const order: string[] = [];
 * table.visit(ROOT, (_node, path) => order.push(path));
 * if (table.pathOf(file) !== "a/c" || order.join(" ") !== "a a-b a/c") throw new Error("no");
 * ```
 * @module
 */

/** The root's node (the path `""`). */
export const ROOT = 0;

/** No node (an unset link). */
export const NONE = -1;

const BLOB_BYTES = 32;

/**
 * The table of interned paths: a node per path, with typed columns for what
 * the model records of it.
 */
export class PathTable {
  /** Each node's parent (`NONE` for the root and for a free node). */
  parent: Int32Array;
  /** Each node's last path segment (`""` for the root). */
  readonly names: string[] = [""];
  /** Each node's interned children by name (undefined while it has none). */
  readonly kids: (Map<string, number> | undefined)[] = [undefined];
  /** Flags the model sets (see `incremental.ts`); 0 for a free node. */
  flags: Uint8Array;
  /** A file entry's size. */
  size: Float64Array;
  /** A file entry's mode. */
  mode: Uint32Array;
  /** A file entry's blob id: 32 bytes at `node * 32`. */
  blob: Uint8Array;
  /** A regular file's device and inode (hard links are found by these). */
  dev: Float64Array;
  /** See {@linkcode dev}. */
  ino: Float64Array;
  /** The node whose directory tree records this node (`NONE`: not recorded). */
  home: Int32Array;
  /** The first node this node's tree records, and the next and previous one in that list. */
  first: Int32Array;
  /** See {@linkcode first}. */
  next: Int32Array;
  /** See {@linkcode first}. */
  prev: Int32Array;
  private readonly free: number[] = [];
  private used = 1;
  private live = 1;
  /** The last parent path looked up, and its node (paths come grouped by directory). */
  private lastDir = "";
  private lastDirNode = ROOT;

  /** An empty table holding only the root. */
  constructor(capacity = 1024) {
    this.parent = new Int32Array(capacity).fill(NONE);
    this.flags = new Uint8Array(capacity);
    this.size = new Float64Array(capacity);
    this.mode = new Uint32Array(capacity);
    this.blob = new Uint8Array(capacity * BLOB_BYTES);
    this.dev = new Float64Array(capacity);
    this.ino = new Float64Array(capacity);
    this.home = new Int32Array(capacity).fill(NONE);
    this.first = new Int32Array(capacity).fill(NONE);
    this.next = new Int32Array(capacity).fill(NONE);
    this.prev = new Int32Array(capacity).fill(NONE);
  }

  /** Nodes in use, the root included. */
  get count(): number {
    return this.live;
  }

  /** One past the highest node number handed out (free nodes included). */
  get end(): number {
    return this.used;
  }

  /** The node of `path`, or `NONE` when it was never interned (or was released). */
  find(path: string): number {
    if (path === "") return ROOT;
    const slash = path.lastIndexOf("/");
    const dir = slash < 0 ? ROOT : this.dirNode(path.slice(0, slash), false);
    if (dir === NONE) return NONE;
    return this.kids[dir]?.get(path.slice(slash + 1)) ?? NONE;
  }

  /** The node of `path`, interning it and every directory above it as needed. */
  intern(path: string): number {
    if (path === "") return ROOT;
    const slash = path.lastIndexOf("/");
    const dir = slash < 0 ? ROOT : this.dirNode(path.slice(0, slash), true);
    return this.child(dir, path.slice(slash + 1), true);
  }

  private dirNode(dir: string, create: boolean): number {
    if (dir === this.lastDir) return this.lastDirNode;
    let node = ROOT;
    for (const segment of dir.split("/")) {
      node = this.child(node, segment, create);
      if (node === NONE) return NONE;
    }
    this.lastDir = dir;
    this.lastDirNode = node;
    return node;
  }

  private child(dir: number, name: string, create: boolean): number {
    let kids = this.kids[dir];
    const found = kids?.get(name);
    if (found !== undefined || !create) return found ?? NONE;
    if (kids === undefined) this.kids[dir] = kids = new Map();
    const node = this.allocate();
    // A name sliced from a whole path keeps that path alive in V8 and
    // JavaScriptCore (from 13 characters on in V8): keep a copy of its own.
    // (A name with a lone surrogate does not survive UTF-8: it keeps the slice.)
    const copy = name.length > 12 ? UTF8_DECODER.decode(UTF8_ENCODER.encode(name)) : name;
    const own = copy === name ? copy : name;
    this.parent[node] = dir;
    this.names[node] = own;
    kids.set(own, node);
    return node;
  }

  private allocate(): number {
    this.live += 1;
    const reused = this.free.pop();
    if (reused !== undefined) return reused;
    if (this.used === this.parent.length) this.grow();
    this.kids.push(undefined);
    this.names.push("");
    return this.used++;
  }

  private grow(): void {
    const capacity = this.parent.length * 2;
    const more = <T extends Int32Array | Uint8Array | Float64Array | Uint32Array>(
      old: T,
      make: (n: number) => T,
      fill?: number,
    ): T => {
      const grown = make(capacity * (old.length / this.parent.length));
      if (fill !== undefined) grown.fill(fill, old.length);
      grown.set(old);
      return grown;
    };
    this.flags = more(this.flags, (n) => new Uint8Array(n));
    this.size = more(this.size, (n) => new Float64Array(n));
    this.mode = more(this.mode, (n) => new Uint32Array(n));
    this.blob = more(this.blob, (n) => new Uint8Array(n));
    this.dev = more(this.dev, (n) => new Float64Array(n));
    this.ino = more(this.ino, (n) => new Float64Array(n));
    this.home = more(this.home, (n) => new Int32Array(n), NONE);
    this.first = more(this.first, (n) => new Int32Array(n), NONE);
    this.next = more(this.next, (n) => new Int32Array(n), NONE);
    this.prev = more(this.prev, (n) => new Int32Array(n), NONE);
    this.parent = more(this.parent, (n) => new Int32Array(n), NONE);
  }

  /** The whole path of `node` (`""` for the root). */
  pathOf(node: number): string {
    if (node === ROOT) return "";
    let path = this.names[node]!;
    for (let up = this.parent[node]!; up !== ROOT; up = this.parent[up]!) {
      path = `${this.names[up]}/${path}`;
    }
    return path;
  }

  /** How many segments `node`'s path has (0 for the root). */
  depth(node: number): number {
    let depth = 0;
    for (let at = node; at !== ROOT; at = this.parent[at]!) depth += 1;
    return depth;
  }

  /** `node` and every node below it, parents before their children. */
  subtree(node: number): number[] {
    const out = [node];
    for (let i = 0; i < out.length; i++) {
      const kids = this.kids[out[i]!];
      if (kids !== undefined) { for (const kid of kids.values()) out.push(kid); }
    }
    return out;
  }

  /**
   * Frees `node`, which must have no children and be out of every record
   * list: its number may be handed out again.
   */
  release(node: number): void {
    if (node === ROOT || this.parent[node] === NONE) return;
    if (node === this.lastDirNode) {
      this.lastDir = "";
      this.lastDirNode = ROOT;
    }
    const dir = this.parent[node]!;
    const kids = this.kids[dir]!;
    kids.delete(this.names[node]!);
    if (kids.size === 0) this.kids[dir] = undefined;
    this.parent[node] = NONE;
    this.names[node] = "";
    this.kids[node] = undefined;
    this.flags[node] = 0;
    this.home[node] = NONE;
    this.first[node] = NONE;
    this.next[node] = NONE;
    this.prev[node] = NONE;
    this.free.push(node);
    this.live -= 1;
  }

  /** Forgets every node but the root. */
  clear(): void {
    this.kids.length = 1;
    this.names.length = 1;
    this.kids[ROOT] = undefined;
    this.free.length = 0;
    this.used = 1;
    this.live = 1;
    this.lastDir = "";
    this.lastDirNode = ROOT;
    this.flags.fill(0);
    this.parent.fill(NONE);
    this.home.fill(NONE);
    this.first.fill(NONE);
    this.next.fill(NONE);
    this.prev.fill(NONE);
  }

  /** Calls `fn` with every node below `from` and its path, in the order of whole paths. */
  visit(from: number, fn: (node: number, path: string) => void, prefix = ""): void {
    const kids = this.kids[from];
    if (kids === undefined) return;
    const items: { key: string; node: number; below: boolean }[] = [];
    for (const [name, node] of kids) {
      items.push({ key: name, node, below: false });
      if (this.kids[node] !== undefined) items.push({ key: `${name}/`, node, below: true });
    }
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    for (const { node, below } of items) {
      const path = prefix === "" ? this.names[node]! : `${prefix}/${this.names[node]}`;
      if (below) this.visit(node, fn, path);
      else fn(node, path);
    }
  }

  /** Adds `node` to the records of `home`'s tree (it must be in none). */
  attach(node: number, home: number): void {
    const head = this.first[home]!;
    this.home[node] = home;
    this.prev[node] = NONE;
    this.next[node] = head;
    if (head !== NONE) this.prev[head] = node;
    this.first[home] = node;
  }

  /** Removes `node` from the records of its home's tree; returns that home, or `NONE`. */
  detach(node: number): number {
    const home = this.home[node]!;
    if (home === NONE) return NONE;
    const before = this.prev[node]!;
    const after = this.next[node]!;
    if (before === NONE) this.first[home] = after;
    else this.next[before] = after;
    if (after !== NONE) this.prev[after] = before;
    this.home[node] = NONE;
    this.next[node] = NONE;
    this.prev[node] = NONE;
    return home;
  }

  /** The 64-hex-digit blob id of `node`. */
  blobHex(node: number): string {
    let hex = "";
    const base = node * BLOB_BYTES;
    for (let i = 0; i < BLOB_BYTES; i++) hex += BYTE_HEX[this.blob[base + i]!];
    return hex;
  }

  /** Stores the blob id `hex` (64 lowercase hex digits) for `node`. */
  setBlobHex(node: number, hex: string): void {
    if (hex.length !== BLOB_BYTES * 2) {
      throw new Error(`Blob id ${JSON.stringify(hex)} is not 32 bytes`);
    }
    const base = node * BLOB_BYTES;
    for (let i = 0; i < BLOB_BYTES; i++) {
      const byte = (nibble(hex.charCodeAt(2 * i)) << 4) | nibble(hex.charCodeAt(2 * i + 1));
      this.blob[base + i] = byte;
    }
  }
}

const UTF8_ENCODER = new TextEncoder();
const UTF8_DECODER = new TextDecoder();

const BYTE_HEX: readonly string[] = Array.from(
  { length: 256 },
  (_, byte) => byte.toString(16).padStart(2, "0"),
);

function nibble(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x61 && code <= 0x66) return code - 0x57;
  throw new Error(`Blob id has a character that is not lowercase hex (${code})`);
}
