/**
 * Tests of lib/format/tar.ts: round trips, determinism, interoperability with
 * GNU tar in both directions (real `tar` subprocesses on real files), and
 * every refusal of the hardened reader.
 *
 * @module
 */
import {
  closeSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import {
  BundleFormatError,
  fdReader,
  MAX_MEMBER_BYTES,
  TAR_BLOCK,
  type TarLimits,
  type TarMember,
  TarReader,
  TarWriter,
} from "../../lib/format/tar.ts";
import { decodeHeader, encodeHeader } from "../../lib/format/_tar_header.ts";
import { IntegrityError } from "../../lib/errors.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { concatBytes as concat, prng } from "../_util.ts";

const encoder = new TextEncoder();
const HEX64 = "0123456789abcdef".repeat(4);

// ---------------------------------------------------------------- helpers

function randomBytes(n: number, seed: number): Uint8Array {
  const next = prng(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(next() * 256);
  return out;
}

/** Runs `fn` with a writer collecting its output, and returns the archive bytes. */
function writeArchive(fn: (writer: TarWriter) => void): Uint8Array {
  const chunks: Uint8Array[] = [];
  const writer = new TarWriter((chunk) => chunks.push(chunk.slice()));
  fn(writer);
  return concat(chunks);
}

function archiveOf(files: [string, Uint8Array][]): Uint8Array {
  return writeArchive((writer) => {
    for (const [name, data] of files) writer.addFile(name, data);
    writer.finish();
  });
}

/** A `readChunk` over bytes in memory, serving at most `step` bytes per call. */
function memReader(bytes: Uint8Array, step = Infinity): {
  read: (buffer: Uint8Array) => number;
  served: () => number;
} {
  let position = 0;
  return {
    read(buffer: Uint8Array): number {
      const n = Math.min(buffer.length, bytes.length - position, step);
      buffer.set(bytes.subarray(position, position + n));
      position += n;
      return n;
    },
    served: () => position,
  };
}

interface ReadMember extends TarMember {
  data: Uint8Array;
}

/** Reads a whole archive in memory with `TarReader`. */
function readArchive(bytes: Uint8Array, limits?: TarLimits, step?: number): ReadMember[] {
  const reader = new TarReader(memReader(bytes, step).read, limits);
  const out: ReadMember[] = [];
  for (let member = reader.next(); member !== null; member = reader.next()) {
    const chunks: Uint8Array[] = [];
    reader.stream((chunk) => chunks.push(chunk.slice()));
    out.push({ ...member, data: concat(chunks) });
  }
  return out;
}

function namesAndSizes(members: TarMember[]): [string, number][] {
  return members.map((m) => [m.name, m.size]);
}

interface RawFields {
  name?: string | Uint8Array;
  prefix?: string;
  size?: number;
  type?: string;
  magic?: Uint8Array;
  linkname?: string;
  mode?: string;
  mtime?: string;
}

/** A hand-made header with a correct checksum, validating nothing. */
function rawHeader(fields: RawFields): Uint8Array {
  const block = new Uint8Array(TAR_BLOCK);
  const put = (at: number, value: string | Uint8Array) =>
    block.set(typeof value === "string" ? encoder.encode(value) : value, at);
  put(0, fields.name ?? "a");
  put(100, fields.mode ?? "0000644\0");
  put(108, "0000000\0");
  put(116, "0000000\0");
  put(124, (fields.size ?? 0).toString(8).padStart(11, "0") + "\0");
  put(136, fields.mtime ?? "00000000000\0");
  put(156, fields.type ?? "0");
  put(157, fields.linkname ?? "");
  put(257, fields.magic ?? encoder.encode("ustar\x0000"));
  put(345, fields.prefix ?? "");
  return fixChecksum(block);
}

/** Recomputes the checksum of the header block at `at` of `bytes` (in place). */
function fixChecksum(bytes: Uint8Array, at = 0): Uint8Array {
  const block = bytes.subarray(at, at + TAR_BLOCK);
  block.fill(0x20, 148, 156);
  const sum = block.reduce((n, b) => n + b, 0);
  block.set(encoder.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  return bytes;
}

function padded(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(data.length / TAR_BLOCK) * TAR_BLOCK);
  out.set(data);
  return out;
}

/** An archive made of hand-made members, ended by two zero blocks. */
function rawArchive(members: [RawFields, Uint8Array?][]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [fields, data = new Uint8Array(0)] of members) {
    parts.push(rawHeader({ size: data.length, ...fields }), padded(data));
  }
  parts.push(new Uint8Array(2 * TAR_BLOCK));
  return concat(parts);
}

function refuses(bytes: Uint8Array, msgIncludes: string, limits?: TarLimits): BundleFormatError {
  return assertThrows(() => readArchive(bytes, limits), BundleFormatError, msgIncludes);
}

async function withTempDir(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-tar-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function tar(cwd: string, ...args: string[]): Promise<string> {
  const result = await new Deno.Command("tar", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  const stderr = new TextDecoder().decode(result.stderr);
  if (!result.success) throw new Error(`tar ${args.join(" ")} failed: ${stderr}`);
  return new TextDecoder().decode(result.stdout);
}

function sample(): [string, Uint8Array][] {
  return [
    ["ctxsnap-bundle.json", encoder.encode('{"version":1}')],
    [`snapshots/${HEX64}.json`, new Uint8Array(0)],
    [`trees/${HEX64}.json`, randomBytes(1, 1)],
    [`blobs/${"1".repeat(64)}`, randomBytes(511, 2)],
    [`blobs/${"2".repeat(64)}`, randomBytes(512, 3)],
    [`blobs/${"3".repeat(64)}`, randomBytes(513, 4)],
    [`blobs/${"4".repeat(64)}`, randomBytes(1024 * 1024 + 3, 5)],
  ];
}

/** Writes the sample, the last two members streamed in uneven chunks with `beginFile`. */
function writeSample(writer: TarWriter): void {
  const files = sample();
  for (const [i, [name, data]] of files.entries()) {
    if (i < files.length - 2) {
      writer.addFile(name, data);
      continue;
    }
    const sink = writer.beginFile(name, data.length);
    for (let at = 0; at < data.length; at += 100_003) sink.write(data.subarray(at, at + 100_003));
    sink.end();
  }
  writer.finish();
}

// ------------------------------------------------------------- round trip

Deno.test("TarWriter and TarReader round-trip names and bytes of every member", () => {
  const archive = writeArchive(writeSample);
  assertEquals(archive.length % 10240, 0);
  for (const step of [Infinity, 7, 512, 4096 + 1]) {
    const members = readArchive(archive, {}, step);
    assertEquals(members.map((m) => [m.name, m.data]), sample());
    assertEquals(members.map((m) => m.index), [0, 1, 2, 3, 4, 5, 6]);
    for (const member of members) {
      assertEquals(member.mode, 0o644);
      assertEquals(member.mtime, 0);
      assertEquals(member.size, member.data.length);
    }
  }
});

Deno.test("TarWriter output is deterministic", () => {
  assertEquals(writeArchive(writeSample), writeArchive(writeSample));
});

Deno.test("TarWriter of no members writes an archive of one empty record", () => {
  const archive = writeArchive((writer) => writer.finish());
  assertEquals(archive, new Uint8Array(10240));
  assertEquals(readArchive(archive), []);
});

Deno.test("TarReader readAll returns the member bytes and skip moves past them", () => {
  const files = sample();
  const reader = new TarReader(memReader(archiveOf(files)).read);
  assertEquals(reader.next()?.name, "ctxsnap-bundle.json");
  assertEquals(reader.readAll(100), files[0]![1]);
  assertEquals(reader.next()?.size, 0);
  assertEquals(reader.readAll(0), new Uint8Array(0));
  reader.next();
  reader.skip();
  reader.next();
  reader.skip();
  assertEquals(reader.next()?.name, `blobs/${"2".repeat(64)}`);
  assertThrows(() => reader.readAll(511), BundleFormatError, "more than the 511 allowed");
});

Deno.test("TarReader streams a large member in chunks of at most 1 MiB", () => {
  const data = randomBytes(3 * 1024 * 1024 + 17, 9);
  const reader = new TarReader(memReader(archiveOf([["blobs/big", data]])).read);
  reader.next();
  const sizes: number[] = [];
  const chunks: Uint8Array[] = [];
  reader.stream((chunk) => {
    sizes.push(chunk.length);
    chunks.push(chunk.slice());
  });
  assert(sizes.length >= 4 && sizes.every((n) => n > 0 && n <= 1024 * 1024), String(sizes));
  assertEquals(concat(chunks), data);
  assertEquals(reader.next(), null);
  assertEquals(reader.next(), null);
});

Deno.test("TarReader refuses next() before the current member is read or skipped", () => {
  const reader = new TarReader(memReader(archiveOf(sample())).read);
  reader.next();
  assertThrows(() => reader.next(), BundleFormatError, "neither read nor skipped");
  // The reader stays failed.
  assertThrows(() => reader.skip(), BundleFormatError, "neither read nor skipped");
});

Deno.test("TarReader refuses to stream when there is no current member", () => {
  const reader = new TarReader(memReader(archiveOf(sample())).read);
  assertThrows(() => reader.stream(() => {}), BundleFormatError, "no current tar member");
});

Deno.test("TarReader passes an error thrown by the stream callback through", () => {
  const reader = new TarReader(memReader(archiveOf(sample())).read);
  reader.next();
  assertThrows(
    () =>
      reader.stream(() => {
        throw new RangeError("stop");
      }),
    RangeError,
    "stop",
  );
  assertThrows(() => reader.next(), RangeError, "stop");
});

Deno.test("BundleFormatError is an IntegrityError", () => {
  const error = new BundleFormatError("x");
  assert(error instanceof IntegrityError);
  assertEquals(error.name, "BundleFormatError");
  assertEquals(error.code, "failure");
});

// ------------------------------------------------------------------ writer

Deno.test("TarWriter refuses unsafe, long and duplicate names", () => {
  const writer = new TarWriter(() => {});
  for (const name of ["", "../x", "/etc/passwd", "a/../../x", "a//b", "a/", "./a", "a\\b", "é"]) {
    assertThrows(() => writer.addFile(name, new Uint8Array(1)), BundleFormatError, "Cannot add");
  }
  writer.addFile("x".repeat(100), new Uint8Array(1));
  assertThrows(
    () => writer.addFile("y".repeat(101), new Uint8Array(1)),
    BundleFormatError,
    "longer than 100 bytes",
  );
  assertThrows(
    () => writer.addFile("x".repeat(100), new Uint8Array(0)),
    BundleFormatError,
    "twice",
  );
});

Deno.test("TarWriter refuses a streamed member of the wrong length", () => {
  const writer = new TarWriter(() => {});
  const sink = writer.beginFile("a", 3);
  assertThrows(() => writer.addFile("b", new Uint8Array(0)), BundleFormatError, "still open");
  sink.write(new Uint8Array(2));
  assertThrows(() => sink.end(), BundleFormatError, "only 2 were written");
  assertThrows(() => sink.write(new Uint8Array(2)), BundleFormatError, "more were written");
  sink.write(new Uint8Array(1));
  sink.end();
  assertThrows(() => sink.end(), BundleFormatError, "already ended");
  assertThrows(() => writer.beginFile("c", -1), BundleFormatError, "invalid size");
  assertThrows(() => writer.beginFile("c", 1.5), BundleFormatError, "invalid size");
  assertThrows(
    () => writer.beginFile("c", MAX_MEMBER_BYTES + 1),
    BundleFormatError,
    "invalid size",
  );
  writer.finish();
  assertThrows(() => writer.addFile("d", new Uint8Array(0)), BundleFormatError, "finished");
  assertThrows(() => writer.finish(), BundleFormatError, "finished");
});

Deno.test("a header for a 9 GiB member uses GNU base-256 and decodes back", () => {
  const size = 9 * 1024 ** 3;
  const block = encodeHeader("blobs/big", size);
  assertEquals(block[124], 0x80);
  assertEquals(decodeHeader(block, 0).size, size);
  const largest = encodeHeader("a", 0o77777777777);
  assertEquals(new TextDecoder().decode(largest.subarray(124, 136)), "77777777777\0");
  assertEquals(decodeHeader(largest, 0).size, 0o77777777777);
  assertEquals(decodeHeader(encodeHeader("a", 0o77777777777 + 1), 0).size, 8 * 1024 ** 3);
  assertEquals(decodeHeader(encodeHeader("a", MAX_MEMBER_BYTES), 0).size, MAX_MEMBER_BYTES);
});

Deno.test("GNU tar lists a member whose size needs base-256, and TarReader reads its header", async () => {
  await withTempDir(async (dir) => {
    const size = 9 * 1024 ** 3;
    const path = join(dir, "big.tar");
    const fd = openSync(path, "w");
    try {
      writeSync(fd, encodeHeader("blobs/big", size));
      ftruncateSync(fd, TAR_BLOCK + size + 2 * TAR_BLOCK); // sparse: data and end marker are zeros
    } finally {
      closeSync(fd);
    }
    const listing = await tar(dir, "-tvf", "big.tar");
    assert(/ 9663676416 .* blobs\/big\n$/.test(listing), listing);
    const readFd = openSync(path, "r");
    try {
      const reader = new TarReader(fdReader(readFd));
      assertEquals(reader.next()?.size, size);
    } finally {
      closeSync(readFd);
    }
  });
});

// ------------------------------------------------------------- interop

Deno.test("GNU tar lists and extracts what TarWriter writes", async () => {
  await withTempDir(async (dir) => {
    const files = sample();
    writeFileSync(join(dir, "out.tar"), writeArchive(writeSample));
    const listing = (await tar(dir, "-tvf", "out.tar")).trimEnd().split("\n");
    assertEquals(listing.length, files.length);
    for (const [i, [name, data]] of files.entries()) {
      const fields = listing[i]!.split(/\s+/);
      assertEquals(fields[0], "-rw-r--r--");
      assertEquals(fields[1], "0/0");
      assertEquals(Number(fields[2]), data.length);
      assertEquals(fields.at(-1), name);
    }
    mkdirSync(join(dir, "x"));
    await tar(dir, "-xf", "out.tar", "-C", "x");
    for (const [name, data] of files) {
      assertEquals(new Uint8Array(readFileSync(join(dir, "x", name))), data);
    }
  });
});

Deno.test("TarWriter output is byte-identical to GNU tar's normalized ustar output", async () => {
  await withTempDir(async (dir) => {
    const data = randomBytes(700, 11);
    mkdirSync(join(dir, "blobs"));
    writeFileSync(join(dir, "blobs", "x"), data);
    await tar(
      dir,
      "--format=ustar",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      "--mtime=@0",
      "--mode=0644",
      "-cf",
      "gnu.tar",
      "blobs/x",
    );
    assertEquals(
      new Uint8Array(readFileSync(join(dir, "gnu.tar"))),
      archiveOf([["blobs/x", data]]),
    );
  });
});

Deno.test("TarReader reads an archive made by GNU tar --format=ustar", async () => {
  await withTempDir(async (dir) => {
    const files = sample();
    for (const [name, data] of files) {
      mkdirSync(join(dir, "src", name, ".."), { recursive: true });
      writeFileSync(join(dir, "src", name), data);
    }
    await tar(dir, "--format=ustar", "-cf", "gnu.tar", "-C", "src", ...files.map(([n]) => n));
    const members = readArchive(new Uint8Array(readFileSync(join(dir, "gnu.tar"))));
    assertEquals(members.map((m) => [m.name, m.data]), files);
    const stat = statSync(join(dir, "src", files[0]![0]));
    assertEquals(members[0]!.mtime, Math.floor(stat.mtimeMs / 1000));
    assertEquals(members[0]!.mode, stat.mode & 0o7777);
  });
});

Deno.test("TarReader reads an archive made by GNU tar in its own format (GNU magic)", async () => {
  await withTempDir(async (dir) => {
    mkdirSync(join(dir, "blobs"));
    writeFileSync(join(dir, "blobs", "a"), "alpha");
    await tar(dir, "--format=gnu", "-cf", "gnu.tar", "blobs/a");
    const bytes = new Uint8Array(readFileSync(join(dir, "gnu.tar")));
    assertEquals(new TextDecoder().decode(bytes.subarray(257, 265)), "ustar  \0");
    const members = readArchive(bytes);
    assertEquals(members.map((m) => [m.name, m.data]), [["blobs/a", encoder.encode("alpha")]]);
  });
});

Deno.test("TarReader joins the ustar prefix and name fields", () => {
  const archive = rawArchive([[{ prefix: "blobs/deep", name: "x" }, encoder.encode("hi")]]);
  assertEquals(readArchive(archive).map((m) => m.name), ["blobs/deep/x"]);
  refuses(
    rawArchive([[{ prefix: "/etc", name: "passwd" }]]),
    '"/etc/passwd" at byte offset 0 is absolute',
  );
});

Deno.test("fdReader reads a real file for TarReader", async () => {
  await withTempDir((dir) => {
    const path = join(dir, "bundle.ctxbundle");
    const fd = openSync(path, "w");
    try {
      const writer = new TarWriter((chunk) => {
        for (let at = 0; at < chunk.length;) at += writeSync(fd, chunk, at);
      });
      writeSample(writer);
    } finally {
      closeSync(fd);
    }
    const readFd = openSync(path, "r");
    try {
      const reader = new TarReader(fdReader(readFd));
      const got: [string, Uint8Array][] = [];
      for (let member = reader.next(); member; member = reader.next()) {
        got.push([member.name, reader.readAll(2 * 1024 * 1024)]);
      }
      assertEquals(got, sample());
    } finally {
      closeSync(readFd);
    }
  });
});

// -------------------------------------------------------------- refusals

Deno.test('TarReader refuses a member named "../x"', () => {
  refuses(rawArchive([[{ name: "../x" }]]), 'name "../x" at byte offset 0 has a ".." path segment');
});

Deno.test('TarReader refuses a member named "/etc/passwd"', () => {
  refuses(rawArchive([[{ name: "/etc/passwd" }]]), '"/etc/passwd" at byte offset 0 is absolute');
});

Deno.test('TarReader refuses a member named "a/../../x"', () => {
  refuses(rawArchive([[{ name: "a/../../x" }]]), 'has a ".." path segment');
});

Deno.test("TarReader refuses empty, dot, backslash and non-printable names", () => {
  const cases: [string | Uint8Array, string][] = [
    ["a//b", "has an empty path segment"],
    ["a/", "has an empty path segment"],
    ["./a", 'has a "." path segment'],
    ["a/.", 'has a "." path segment'],
    ["a\\b", "contains a backslash"],
    ["a\x01b", "not printable ASCII"],
    ["a\x7fb", "not printable ASCII"],
    [new Uint8Array([0x61, 0xc3, 0xa9]), "not printable ASCII"],
    [new Uint8Array([0x61, 0x00, 0x62]), "contains a NUL byte"],
  ];
  for (const [name, message] of cases) refuses(rawArchive([[{ name }]]), message);
  // An empty name field.
  refuses(rawArchive([[{ name: new Uint8Array(1) }]]), "is empty");
});

Deno.test("TarReader refuses a name the caller does not allow", () => {
  const archive = archiveOf(sample());
  const limits = { allowName: (name: string) => !name.startsWith("trees/") };
  refuses(archive, `"trees/${HEX64}.json" at byte offset 1536 is not allowed in a bundle`, limits);
});

Deno.test("TarReader refuses duplicate names", () => {
  const archive = rawArchive([[{ name: "blobs/a" }], [{ name: "blobs/b" }], [{ name: "blobs/a" }]]);
  refuses(archive, '"blobs/a" at byte offset 1024 is a duplicate');
});

Deno.test("TarReader refuses a symbolic link made by GNU tar", async () => {
  await withTempDir(async (dir) => {
    symlinkSync("/etc/passwd", join(dir, "link"));
    await tar(dir, "--format=ustar", "-cf", "t.tar", "link");
    refuses(
      new Uint8Array(readFileSync(join(dir, "t.tar"))),
      '"link" at byte offset 0 is a symbolic link (type "2")',
    );
  });
});

Deno.test("TarReader refuses a hard link made by GNU tar", async () => {
  await withTempDir(async (dir) => {
    writeFileSync(join(dir, "a"), "data");
    await Deno.link(join(dir, "a"), join(dir, "b"));
    await tar(dir, "--format=ustar", "-cf", "t.tar", "a", "b");
    const error = refuses(
      new Uint8Array(readFileSync(join(dir, "t.tar"))),
      '"b" at byte offset 1024 is a hard link (type "1")',
    );
    assert(error.message.includes("only regular files are allowed"));
  });
});

Deno.test("TarReader refuses a directory made by GNU tar", async () => {
  await withTempDir(async (dir) => {
    mkdirSync(join(dir, "blobs"));
    writeFileSync(join(dir, "blobs", "a"), "data");
    await tar(dir, "--format=ustar", "-cf", "t.tar", "blobs");
    refuses(
      new Uint8Array(readFileSync(join(dir, "t.tar"))),
      '"blobs/" at byte offset 0 is a directory (type "5")',
    );
  });
});

Deno.test("TarReader refuses a FIFO made by GNU tar", async () => {
  await withTempDir(async (dir) => {
    const made = await new Deno.Command("mkfifo", { args: [join(dir, "fifo")] }).output();
    assert(made.success, "mkfifo failed");
    await tar(dir, "--format=ustar", "-cf", "t.tar", "fifo");
    refuses(
      new Uint8Array(readFileSync(join(dir, "t.tar"))),
      '"fifo" at byte offset 0 is a FIFO (type "6")',
    );
  });
});

Deno.test("TarReader refuses a GNU long-name member made by GNU tar", async () => {
  await withTempDir(async (dir) => {
    const name = "n".repeat(150);
    writeFileSync(join(dir, name), "data");
    await tar(dir, "--format=gnu", "-cf", "t.tar", name);
    refuses(new Uint8Array(readFileSync(join(dir, "t.tar"))), 'is a GNU long name (type "L")');
  });
});

Deno.test("TarReader refuses devices, pax headers and unknown member types", () => {
  const cases: [string, string][] = [
    ["3", "character device"],
    ["4", "block device"],
    ["7", "contiguous file"],
    ["x", "pax extended header"],
    ["g", "pax global header"],
    ["K", "GNU long link name"],
    ["S", "GNU sparse file"],
    ["Z", "member of an unknown type"],
  ];
  for (const [type, kind] of cases) {
    refuses(rawArchive([[{ type }, encoder.encode("path=x\n")]]), `is a ${kind} (type "${type}")`);
  }
});

Deno.test("TarReader accepts a regular file with the old NUL typeflag", () => {
  assertEquals(readArchive(rawArchive([[{ type: "\0", name: "a" }]])).map((m) => m.name), ["a"]);
});

Deno.test("TarReader refuses a regular file carrying a link name", () => {
  refuses(rawArchive([[{ linkname: "target" }]]), "is a regular file with a link name");
});

Deno.test("TarReader refuses a header whose checksum does not match", () => {
  const archive = archiveOf(sample());
  archive[5]! ^= 0x01; // a byte of the first name
  refuses(archive, "Tar header at byte offset 0 has a bad checksum");
  const second = archiveOf(sample());
  second[1024 + 100 + 3]! ^= 0x02; // the mode of the second header
  refuses(second, "Tar header at byte offset 1024 has a bad checksum");
});

Deno.test("TarReader refuses a flipped size field", () => {
  const plain = archiveOf(sample());
  // Without fixing the checksum: caught by the checksum.
  const flipped = plain.slice();
  flipped[124 + 10]! ^= 0x01;
  refuses(flipped, "bad checksum");
  // A non-octal digit with a valid checksum.
  const nonOctal = plain.slice();
  nonOctal[124 + 10] = 0x39; // "9"
  refuses(fixChecksum(nonOctal), 'has a non-octal size field "00000000019\\u0000"');
  // A valid but wrong size (0o15 becomes 0o7015): the data runs into other members.
  const wrong = plain.slice();
  wrong[124 + 7] = 0x37;
  refuses(fixChecksum(wrong), 'Tar member "ctxsnap-bundle.json" has non-zero padding');
});

Deno.test("TarReader refuses non-octal mode and mtime fields", () => {
  refuses(rawArchive([[{ mode: "00006x4\0" }]]), "non-octal mode field");
  refuses(rawArchive([[{ mtime: "0000000000-\0" }]]), "non-octal mtime field");
  refuses(rawArchive([[{ mtime: "\0".repeat(12) }]]), "empty mtime field");
});

Deno.test("TarReader refuses a bad magic", () => {
  refuses(
    rawArchive([[{ magic: encoder.encode("ustaR\x0000") }]]),
    'has the magic "ustaR\\u000000"',
  );
  refuses(rawArchive([[{ magic: new Uint8Array(8) }]]), "expected a POSIX ustar header"); // v7 tar
  refuses(
    rawArchive([[{ magic: encoder.encode("ustar\x0001") }]]),
    "expected a POSIX ustar header",
  );
  const gnu = rawArchive([[{ magic: encoder.encode("ustar  \0") }, encoder.encode("x")]]);
  assertEquals(readArchive(gnu).map((m) => m.name), ["a"]);
});

Deno.test("TarReader refuses a non-tar file", () => {
  refuses(encoder.encode("{}\n".repeat(400)), "non-octal checksum field");
  refuses(new Uint8Array(1024).fill(0x30), "bad checksum");
});

Deno.test("TarReader refuses a declared size above the limit before reading any data", () => {
  refuses(
    rawArchive([[{ name: "a", size: 1001 }]]),
    "declares 1001 bytes, more than the limit of 1000",
    {
      maxMemberBytes: 1000,
    },
  );
  // A 65 GiB declared size (base-256) followed by endless zeros: refused at once.
  const header = encodeHeader("blobs/huge", 0);
  header[124] = 0x80;
  const size = 65 * 1024 ** 3;
  for (let i = 135, rest = size; i > 124; i--, rest = Math.floor(rest / 256)) {
    header[i] = rest % 256;
  }
  fixChecksum(header);
  let served = 0;
  const reader = new TarReader((buffer) => {
    const n = served === 0 ? TAR_BLOCK : buffer.length;
    buffer.fill(0, 0, n);
    if (served === 0) buffer.set(header);
    served += n;
    return n;
  });
  assertThrows(
    () => reader.next(),
    BundleFormatError,
    `declares ${size} bytes, more than the limit of ${MAX_MEMBER_BYTES}`,
  );
  assert(served <= 2 * 1024 * 1024, `read ${served} bytes`);
  // A caller's larger limit is still capped at MAX_MEMBER_BYTES.
  const capped = new TarReader(memReader(header).read, { maxMemberBytes: 2 * MAX_MEMBER_BYTES });
  assertThrows(() => capped.next(), BundleFormatError, "more than the limit");
});

Deno.test("TarReader refuses more members than maxMembers", () => {
  const archive = archiveOf(sample());
  assertEquals(readArchive(archive, { maxMembers: 7 }).length, 7);
  refuses(archive, "more than 6 members", { maxMembers: 6 });
  refuses(archive, "more than 0 members", { maxMembers: 0 });
});

Deno.test("TarReader refuses an archive truncated anywhere", () => {
  const archive = archiveOf([["a", encoder.encode("hello")], ["b", randomBytes(1000, 7)]]);
  // a: header 0..512, data 512..517, padding ..1024; b: header 1024..1536, data ..2536,
  // padding ..2560; end marker 2560..3584.
  const cases: [number, string][] = [
    [0, "truncated before the end-of-archive marker"],
    [100, "truncated inside a header"],
    [514, 'truncated inside the data of member "a"'],
    [600, 'truncated inside the padding of member "a"'],
    [1024, "truncated before the end-of-archive marker"],
    [1500, "truncated inside a header"],
    [2000, 'truncated inside the data of member "b"'],
    [2540, 'truncated inside the padding of member "b"'],
    [2560, "truncated before the end-of-archive marker"],
    [2700, "truncated inside a header"],
    [3072, "truncated inside the end-of-archive marker"],
    [3500, "truncated inside the end-of-archive marker"],
  ];
  for (const [length, message] of cases) {
    refuses(archive.subarray(0, length), message);
  }
  assertEquals(readArchive(archive.subarray(0, 3584)).length, 2);
});

Deno.test("TarReader refuses trailing data after the end of the archive", () => {
  const archive = archiveOf(sample());
  refuses(concat([archive, encoder.encode("x")]), "trailing data after the end of the archive");
  const inPadding = archive.slice();
  inPadding[archive.length - 1] = 1;
  refuses(
    inPadding,
    `trailing data after the end of the archive (at byte offset ${archive.length - 1})`,
  );
  const afterMarker = archiveOf([["a", new Uint8Array(1)]]);
  afterMarker[2048] = 0xff;
  refuses(afterMarker, "trailing data after the end of the archive (at byte offset 2048)");
});

Deno.test("TarReader accepts up to 1 MiB of zeros after the end marker, and no more", () => {
  const archive = archiveOf(sample());
  // The archive already ends with up to one record of zeros after its marker.
  const tail = concat([archive, new Uint8Array(1024 * 1024 - 10240)]);
  assertEquals(readArchive(tail).length, 7);
  refuses(
    concat([archive, new Uint8Array(2 * 1024 * 1024)]),
    "bytes of padding after the end of the archive",
  );
});

Deno.test("TarReader refuses a lone zero block followed by a non-zero block", () => {
  const archive = concat([
    rawHeader({ name: "a" }),
    new Uint8Array(TAR_BLOCK),
    rawHeader({ name: "b" }),
    new Uint8Array(2 * TAR_BLOCK),
  ]);
  refuses(archive, "lone zero block at byte offset 512 followed by a non-zero block");
});

Deno.test("TarReader refuses non-zero padding after member data", () => {
  const archive = archiveOf([["a", encoder.encode("hello")]]);
  archive[600] = 1;
  refuses(archive, '"a" has non-zero padding');
});

Deno.test("TarReader rejects invalid limits and readChunk results", () => {
  assertThrows(() => new TarReader(() => 0, { maxMembers: -1 }), RangeError);
  assertThrows(() => new TarReader(() => 0, { maxMemberBytes: 1.5 }), RangeError);
  assertThrows(() => new TarReader((b) => b.length + 1).next(), RangeError, "invalid byte count");
});

Deno.test("TarReader throws only BundleFormatError for single-byte corruptions", () => {
  const files: [string, Uint8Array][] = [
    ["ctxsnap-bundle.json", encoder.encode('{"version":1}')],
    [`trees/${HEX64}.json`, randomBytes(600, 21)],
    [`blobs/${HEX64}`, new Uint8Array(0)],
  ];
  const archive = archiveOf(files);
  const expected = files.map(([name, data]) => [name, data.length]);
  const interesting = 512 * 7; // headers, data, padding and the end marker
  const next = prng(42);
  let parsed = 0;
  let refused = 0;
  for (let trial = 0; trial < 400; trial++) {
    const corrupt = archive.slice();
    const at = trial % 8 === 7
      ? interesting + Math.floor(next() * (archive.length - interesting))
      : Math.floor(next() * interesting);
    const value = 1 + Math.floor(next() * 255);
    corrupt[at]! ^= value;
    try {
      const members = readArchive(corrupt, {}, trial % 3 === 0 ? 97 : Infinity);
      assertEquals(namesAndSizes(members), expected, `flip at ${at}`);
      parsed++;
    } catch (error) {
      if (!(error instanceof BundleFormatError)) {
        throw new Error(`flip of byte ${at} by ${value} threw ${String(error)}`);
      }
      refused++;
    }
  }
  assert(parsed > 0 && refused > 0, `parsed ${parsed}, refused ${refused}`);
});
