/**
 * Tests of remotes that need no server: the SigV4 signer against
 * AWS's published examples, the backend conformance suite against
 * `file://`, the hostile shared directory, the layout and ref records, and
 * push / pull / clone between machines with their own keys through a
 * `file://` remote: byte-for-byte restores, incremental transfers, tampered,
 * truncated and withheld objects, forged and rolled-back refs, unpinned
 * signers. kill -9 of real pushes and pulls and two users pushing at once
 * (many subprocesses) run in the long suite, `tests/remote/swift_suite.ts`
 * (`deno task test:remote`), against `file://` and a real S3 server.
 *
 * @module
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { loadOrCreateIdentity } from "../../lib/keys/identity.ts";
import { Keyring } from "../../lib/keys/keyring.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { canonicalBytes } from "../../lib/encoding/canonical_json.ts";
import {
  CtxsnapError,
  exitCodeOf,
  IntegrityError,
  NotFoundError,
  UsageError,
} from "../../lib/errors.ts";
import { treeBytes } from "../../lib/format/tree.ts";
import { emptyContext, emptyCursors, emptyFacets, SNAPSHOT_SCHEMA } from "../../lib/format/body.ts";
import { envelopeBytes, signBody } from "../../lib/format/envelope.ts";
import { getBranch, listBranches, readEnvelope } from "../../lib/history/timeline.ts";
import { verifySnapshot } from "../../lib/history/verify.ts";
import { materialize } from "../../lib/workspace/move/materialize.ts";
import { EMPTY_SHA256, signRequest } from "../../lib/remote/sigv4.ts";
import { FileBackend } from "../../lib/remote/file_backend.ts";
import { S3Backend } from "../../lib/remote/s3_backend.ts";
import {
  decodeObject,
  encodeObject,
  objectKey,
  parseRefKey,
  refKey,
  snapshotKey,
  withTag,
} from "../../lib/remote/layout.ts";
import {
  checkRefRecord,
  parseRefRecord,
  signRefRecord,
  validateRefRecord,
} from "../../lib/format/ref_record.ts";
import {
  credentialsFromEnvironment,
  iniSection,
  openBackend,
  parseRemoteUrl,
} from "../../lib/remote/remote_config.ts";
import { push } from "../../lib/remote/push.ts";
import { pull, trackingBranch } from "../../lib/remote/pull.ts";
import { clone } from "../../lib/remote/clone.ts";
import { assert, assertEquals, assertRejects, assertThrows } from "../_assert.ts";
import { expectCode, tempWorkspace } from "../_cli.ts";
import { prng } from "../_util.ts";
import { backendConformance } from "../_backend_conformance.ts";
import {
  assertVerifies,
  counts,
  FILES,
  type Machine,
  machine,
  pubKey,
  refOf,
  snap,
  tree,
  trusting,
} from "../_remote.ts";

const encoder = new TextEncoder();

// ---------------------------------------------------------------------------
// SigV4

Deno.test("sigv4 reproduces AWS's four published S3 example signatures", () => {
  const credentials = {
    accessKeyId: "AKIAIOSFODNN7EXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  };
  const date = new Date("2013-05-24T00:00:00Z");
  const signature = (
    method: string,
    url: string,
    headers: Record<string, string>,
    payloadHash: string,
  ) =>
    signRequest({
      method,
      url: new URL(url),
      headers,
      payloadHash,
      credentials,
      region: "us-east-1",
      date,
    }).authorization.split("Signature=")[1];
  const base = "https://examplebucket.s3.amazonaws.com";
  assertEquals(
    signature("GET", `${base}/test.txt`, { range: "bytes=0-9" }, EMPTY_SHA256),
    "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
  );
  assertEquals(
    signature(
      "PUT",
      `${base}/test%24file.text`,
      { date: "Fri, 24 May 2013 00:00:00 GMT", "x-amz-storage-class": "REDUCED_REDUNDANCY" },
      sha256Hex("Welcome to Amazon S3."),
    ),
    "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
  );
  assertEquals(
    signature("GET", `${base}/?lifecycle`, {}, EMPTY_SHA256),
    "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
  );
  assertEquals(
    signature("GET", `${base}/?max-keys=2&prefix=J`, {}, EMPTY_SHA256),
    "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
  );
  // A temporary credential signs its session token too.
  const signed = signRequest({
    method: "GET",
    url: new URL(`${base}/test.txt`),
    payloadHash: EMPTY_SHA256,
    credentials: { ...credentials, sessionToken: "token" },
    region: "us-east-1",
    date,
  });
  assert(signed.authorization.includes("x-amz-security-token"));
  assertEquals(signed.headers["x-amz-security-token"], "token");
});

// ---------------------------------------------------------------------------
// The file:// backend

backendConformance("file://", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-" });
  return {
    backend: new FileBackend(join(dir, "remote")),
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
});

Deno.test("file:// remote: symlinks, FIFOs and non-files in the shared directory are refused, never followed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-" });
  try {
    const outside = join(dir, "outside");
    const root = join(dir, "remote");
    await Deno.mkdir(outside);
    await Deno.mkdir(join(root, "objects"), { recursive: true });
    await Deno.writeTextFile(join(outside, "secret"), "not yours");
    const backend = new FileBackend(root);
    // A directory swapped for a symlink: no read through it, no write through it.
    await Deno.symlink(outside, join(root, "objects", "ab"));
    await assertRejects(() => backend.get("objects/ab/secret", 100), IntegrityError, "symlink");
    await assertRejects(() => backend.put("objects/ab/x", encoder.encode("x")), IntegrityError);
    assert(!fs.existsSync(join(outside, "x")), "a write went through the symlink");
    // A symlink where an object should be: refused on read, not listed, replaced by a put.
    await Deno.mkdir(join(root, "objects", "cd"));
    await Deno.symlink(join(outside, "secret"), join(root, "objects", "cd", "link"));
    await assertRejects(() => backend.get("objects/cd/link", 100), IntegrityError, "symlink");
    assertEquals(await backend.head("objects/cd/link"), null);
    assertEquals((await backend.list("objects/")).map((o) => o.key), []);
    await backend.put("objects/cd/link", encoder.encode("mine"));
    assertEquals(await Deno.readTextFile(join(outside, "secret")), "not yours");
    // A FIFO is refused without blocking; a directory where an object should be too.
    await Deno.mkdir(join(root, "objects", "ef"));
    const mkfifo = await new Deno.Command("mkfifo", { args: [join(root, "objects", "ef", "fifo")] })
      .output();
    assert(mkfifo.success);
    await assertRejects(() => backend.get("objects/ef/fifo", 100), IntegrityError, "regular file");
    await Deno.mkdir(join(root, "objects", "ef", "dir"));
    await assertRejects(() => backend.get("objects/ef/dir", 100), IntegrityError);
    // Temporary files of a killed writer are not objects.
    await Deno.writeTextFile(join(root, "objects", "ef", ".ctxsnap-tmp-0011"), "partial");
    assertEquals(await backend.list("objects/ef/"), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("s3 backend: a hostile server's lying listings and oversized bodies are refused", async () => {
  let body = "";
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(body),
  );
  try {
    const backend = new S3Backend({
      endpoint: new URL(`http://127.0.0.1:${server.addr.port}`),
      bucket: "b-x",
      prefix: "team",
      region: "us-east-1",
      pathStyle: true,
      credentials: null,
    });
    body = "<ListBucketResult><IsTruncated>false</IsTruncated>" +
      "<Contents><Key>elsewhere/x</Key><Size>1</Size></Contents></ListBucketResult>";
    await assertRejects(() => backend.list("objects/"), IntegrityError, "malformed listing");
    body = "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>";
    await assertRejects(() => backend.list("objects/"), IntegrityError, "continuation");
    body =
      "<ListBucketResult><Contents><Key>team/a</Key><Size>-1</Size></Contents></ListBucketResult>";
    await assertRejects(() => backend.list(""), IntegrityError);
    body = "x".repeat(5000);
    await assertRejects(() => backend.get("objects/ab/c", 4096), IntegrityError, "larger than");
    await assertRejects(() => backend.getStream("objects/ab/c", 4096, () => {}), IntegrityError);
    assertEquals((await backend.get("objects/ab/c", 5000))?.length, 5000);
  } finally {
    await server.shutdown();
  }
});

Deno.test("file backend: a shared directory nested deeper than 64 levels is refused, not walked without end", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-" });
  try {
    const backend = new FileBackend(dir);
    let deep = join(dir, "refs");
    for (let i = 0; i < 70; i++) deep = join(deep, "d");
    await Deno.mkdir(deep, { recursive: true });
    await Deno.writeTextFile(join(deep, "x"), "x");
    await assertRejects(() => backend.list("refs/"), IntegrityError, "64 directory levels");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("s3 backend: hostile listings from a fake server on 127.0.0.1 are read in linear time and bounded in keys, bytes and pages", async () => {
  let page = 0;
  let serve: (page: number) => string = () => "";
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(serve(++page)),
  );
  const backend = (listBounds?: Record<string, number>) =>
    new S3Backend({
      endpoint: new URL(`http://127.0.0.1:${server.addr.port}`),
      bucket: "b-x",
      prefix: "",
      region: "us-east-1",
      pathStyle: true,
      credentials: null,
      ...(listBounds ? { listBounds } : {}),
    });
  const keys = (n: number, from: number) =>
    Array.from(
      { length: n },
      (_, i) => `<Contents><Key>refs/k${from + i}</Key><Size>1</Size></Contents>`,
    ).join("");
  const truncated = (p: number, body: string, token = `t${p}`) =>
    `<ListBucketResult>${body}<IsTruncated>true</IsTruncated>` +
    `<NextContinuationToken>${token}</NextContinuationToken></ListBucketResult>`;
  try {
    // 1.6 MB of unclosed opening tags with attributes: quadratic in a backtracking reader.
    for (const hostile of ["<Contents ", "<Contents a='", "<Contents>"]) {
      serve = () => `<ListBucketResult>${hostile.repeat(1_600_000 / hostile.length)}`;
      assertEquals(await backend().list("refs/"), []);
    }
    // Endless truncated pages, each with a fresh token: the page bound ends it.
    serve = (p) => truncated(p, "");
    await assertRejects(() => backend({ pages: 40 }).list("refs/"), IntegrityError, "40 pages");
    // Pages of keys without end: the key bound.
    serve = (p) => truncated(p, keys(10, p * 10));
    await assertRejects(() => backend({ keys: 95 }).list("refs/"), IntegrityError, "95 keys");
    // Large pages: the byte bound over all pages together.
    serve = (p) => truncated(p, `<Pad>${"x".repeat(4000)}</Pad>${keys(1, p)}`);
    await assertRejects(
      () => backend({ bytes: 20_000 }).list("refs/"),
      IntegrityError,
      "20000 bytes",
    );
    // A server that sends the same continuation token again would loop for ever.
    serve = (p) => truncated(p, keys(1, p), "again");
    await assertRejects(() => backend().list("refs/"), IntegrityError, "repeats");
    // An honest paged listing within the bounds is read whole.
    page = 0;
    serve = (p) =>
      p < 3
        ? truncated(p, keys(10, p * 10))
        : `<ListBucketResult>${
          keys(10, p * 10)
        }<IsTruncated>false</IsTruncated></ListBucketResult>`;
    assertEquals((await backend({ keys: 30, pages: 3 }).list("refs/")).length, 30);
  } finally {
    await server.shutdown();
  }
});

// ---------------------------------------------------------------------------
// Layout and ref records

Deno.test("remote objects: both encodings round-trip; wrong tags, sizes and inflation bombs are refused", () => {
  const text = encoder.encode("line of text\n".repeat(500));
  const packed = encodeObject(text, 1);
  assertEquals(packed[0], 1);
  assert(packed.length < text.length / 4);
  assertEquals(decodeObject(packed, "blob", text.length), text);
  const random = crypto.getRandomValues(new Uint8Array(4096));
  assertEquals(encodeObject(random, 1)[0], 0, "incompressible bytes are stored raw");
  assertEquals(decodeObject(encodeObject(random, 1), "blob", 4096), random);
  assertThrows(() => decodeObject(withTag(2, text), "blob", text.length), IntegrityError);
  assertThrows(() => decodeObject(packed, "blob", text.length - 1), IntegrityError);
  assertThrows(() => decodeObject(packed, "blob", text.length + 1), IntegrityError);
  assertThrows(
    () => decodeObject(withTag(0, text.subarray(1)), "blob", text.length),
    IntegrityError,
  );
  const bomb = encodeObject(new Uint8Array(4 * 1024 * 1024), 1);
  // Refused by the inflate bound itself (not by a later size check of 4 MiB).
  assertThrows(() => decodeObject(bomb, "blob", 1024), IntegrityError, "inflates past 1024 bytes");
  assertThrows(() => decodeObject(withTag(1, random), "blob", 4096), IntegrityError);
  assertThrows(() => decodeObject(new Uint8Array(), "blob", 0), IntegrityError);
});

Deno.test("remote keys: ref keys parse only in their exact form", () => {
  const key = refKey("0123456789abcdef", "main", "exp/one", 12, "ab".repeat(32));
  assertEquals(
    key,
    "refs/0123456789abcdef/main@exp/one/0000000000000012-abababababababab.json",
  );
  assertEquals(parseRefKey(key)?.seq, 12);
  for (
    const junk of [
      "refs/0123456789abcdef/main/0000000000000001-abababababababab.json", // no @
      "refs/0123456789ABCDEF/main@main/0000000000000001-abababababababab.json",
      "refs/0123456789abcdef/main@main/0000000000000000-abababababababab.json", // seq 0
      "refs/0123456789abcdef/main@ma..in/0000000000000001-abababababababab.json".replace(
        "ma..in",
        "..",
      ),
      "refs/0123456789abcdef/main@main/1-abababababababab.json",
      "refs/0123456789abcdef/a@b@c/0000000000000001-abababababababab.json",
    ]
  ) {
    assertEquals(parseRefKey(junk), null, junk);
  }
  assertEquals(objectKey("ab".repeat(32)), `objects/ab/${"ab".repeat(32)}`);
});

Deno.test("ref records: signed, canonical, bound to their signer; any edit is caught", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const me = await loadOrCreateIdentity(dir);
    const signed = await signRefRecord(me, {
      session: "main",
      branch: "exp/one",
      seq: 3,
      previous: "cd".repeat(32),
      head: "ab".repeat(32),
      created_at: "2026-11-30T10:00:00.000Z",
    });
    assertEquals(sha256Hex(signed.bytes), signed.hash);
    const record = parseRefRecord(signed.bytes);
    assert(await checkRefRecord(record));
    for (
      const edit of [
        { head: "ef".repeat(32) },
        { seq: 4 },
        { branch: "main" },
        { session: "other" },
        { created_at: "2026-11-30T10:00:01.000Z" },
        { previous: "ce".repeat(32) },
      ]
    ) {
      assert(!(await checkRefRecord({ ...record, ...edit })), JSON.stringify(edit));
    }
    const text = new TextDecoder().decode(signed.bytes);
    assertThrows(() => parseRefRecord(encoder.encode(text.replace("{", "{ "))), IntegrityError);
    assertThrows(
      () => validateRefRecord({ ...record, key_id: "0123456789abcdef" }),
      IntegrityError,
    );
    assertThrows(() => validateRefRecord({ ...record, seq: 1 }), IntegrityError, "previous");
    assertThrows(() => validateRefRecord({ ...record, extra: 1 }), IntegrityError);
    assertThrows(() => validateRefRecord({ ...record, created_at: "2026-11-30" }), IntegrityError);
    assertThrows(() => validateRefRecord({ ...record, branch: "../x" }), IntegrityError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("remote URLs: s3 and file forms parse; anything else is a usage error", () => {
  assertEquals(parseRemoteUrl("s3://bucket-1/a/b/"), {
    kind: "s3",
    url: "s3://bucket-1/a/b",
    bucket: "bucket-1",
    prefix: "a/b",
  });
  assertEquals(parseRemoteUrl("s3://bucket-1"), {
    kind: "s3",
    url: "s3://bucket-1",
    bucket: "bucket-1",
    prefix: "",
  });
  assertEquals(parseRemoteUrl("file:///srv/a%20b"), {
    kind: "file",
    url: "file:///srv/a b",
    dir: "/srv/a b",
  });
  for (
    const bad of [
      "s3://",
      "s3://UPPER/x",
      "s3://b/../x",
      "s3://bu/ok",
      "s3://bucket/a//b",
      "s3://bucket/a b",
      "file://host/x",
      "file:relative",
      "http://example.com/x",
      "/plain/path",
    ]
  ) {
    assertThrows(() => parseRemoteUrl(bad), UsageError);
  }
  const ini = "[default]\naws_access_key_id = AK\n[other]\naws_access_key_id=B\n# c\n";
  assertEquals(iniSection(ini, "default").get("aws_access_key_id"), "AK");
  assertEquals(iniSection(ini, "other").get("aws_access_key_id"), "B");
});

/** Runs `fn` with an empty `file://` remote. */
async function withRemote(
  fn: (remote: FileBackend, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-dir-" });
  try {
    await fn(new FileBackend(join(dir, "remote")), join(dir, "remote"));
  } finally {
    await new Deno.Command("chmod", { args: ["-R", "u+rwX", dir] }).output();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("remote settings: endpoint, region, addressing and credentials come from the remote, then the AWS variables, then the credentials file", async () => {
  const names = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
  ];
  const saved = new Map(names.map((n) => [n, Deno.env.get(n)]));
  const dir = await Deno.makeTempDir();
  try {
    for (const name of names) Deno.env.delete(name);
    const base = { url: "s3://team-bucket/ctx", endpoint: null, region: null, pathStyle: null };
    const aws = openBackend(base) as S3Backend;
    assertEquals(
      aws.objectUrl("refs/a").href,
      "https://team-bucket.s3.us-east-1.amazonaws.com/ctx/refs/a",
      "AWS: virtual-hosted",
    );
    Deno.env.set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
    Deno.env.set("AWS_REGION", "eu-central-1");
    assertEquals(
      (openBackend(base) as S3Backend).objectUrl("refs/a").href,
      "http://127.0.0.1:9000/team-bucket/ctx/refs/a",
      "a custom endpoint: path-style",
    );
    const own = { ...base, endpoint: "https://s3.example.net", pathStyle: false };
    assertEquals(
      (openBackend(own) as S3Backend).objectUrl("refs/a").href,
      "https://team-bucket.s3.example.net/ctx/refs/a",
    );
    assertEquals(credentialsFromEnvironment(), null);
    await Deno.writeTextFile(
      join(dir, "credentials"),
      "[default]\naws_access_key_id = DEF\naws_secret_access_key = defsecret\n" +
        "[team]\naws_access_key_id=TEAM\naws_secret_access_key=teamsecret\naws_session_token=tok\n",
    );
    Deno.env.set("AWS_SHARED_CREDENTIALS_FILE", join(dir, "credentials"));
    assertEquals(credentialsFromEnvironment(), {
      accessKeyId: "DEF",
      secretAccessKey: "defsecret",
    });
    Deno.env.set("AWS_PROFILE", "team");
    assertEquals(credentialsFromEnvironment(), {
      accessKeyId: "TEAM",
      secretAccessKey: "teamsecret",
      sessionToken: "tok",
    });
    Deno.env.set("AWS_ACCESS_KEY_ID", "ENV");
    Deno.env.set("AWS_SECRET_ACCESS_KEY", "envsecret");
    assertEquals(credentialsFromEnvironment(), {
      accessKeyId: "ENV",
      secretAccessKey: "envsecret",
    });
    assertThrows(() => openBackend({ ...base, endpoint: null, region: "Bad Region" }), UsageError);
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) Deno.env.delete(name);
      else Deno.env.set(name, value);
    }
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------
// push / pull / clone between machines

Deno.test("a teammate pulls and clones a pushed workspace byte for byte, then both sides go incremental", async () => {
  const random = prng(17);
  const big = new Uint8Array(3 * 1024 * 1024).map(() => Math.floor(random() * 256)); // file-backed
  const alice = await machine({ ...FILES, "data/big.bin": big });
  const bob = await machine({});
  try {
    await Deno.symlink("a.txt", join(alice.ws, "link"));
    await Deno.chmod(join(alice.ws, "src/main.ts"), 0o755);
    const first = await snap(alice, "first");
    await Deno.writeTextFile(join(alice.ws, "a.txt"), "alpha, edited\n");
    const second = await snap(alice, "second");
    await withRemote(async (remote, dir) => {
      const pushed = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assertEquals(pushed.snapshots, { uploaded: 2, present: 0 });
      assertEquals(pushed.refs.map((r) => [r.branch, r.head, r.seq, r.status]), [
        ["main", second, 1, "updated"],
      ]);
      // 5 directory trees (the root twice, src, notes, data), 5 blobs (a.txt twice,
      // b.md, main.ts, big.bin); big.bin went up raw.
      assertEquals(pushed.objects.uploaded, 10);
      assert(pushed.bytesSent > big.length && pushed.bytesSent < big.length + 64 * 1024);

      // Bob pulls: everything verified, on a tracking branch of Alice's session.
      const pulled = await pull(bob.store, remote, trusting(bob, alice), "origin");
      const ref = refOf(pulled, alice.me.keyId);
      assertEquals([ref.status, ref.head, ref.seq], ["updated", second, 1]);
      assertEquals(ref.localBranch, trackingBranch("origin", alice.me.keyId, "main"));
      assertEquals(getBranch(bob.store, "main", ref.localBranch)?.head, second);
      assertEquals(pulled.snapshots.fetched, 2);
      await assertVerifies(bob.store, trusting(bob, alice));
      const out = join(bob.root, "out");
      materialize(bob.store, (await readEnvelope(bob.store, first)).body.workspace!.tree, out);
      assertEquals((await tree(out))["a.txt"], `644:${sha256Hex("alpha\n")}`);

      // A clone restores the newest head byte for byte: contents, modes and symlinks.
      const carol = await Deno.makeTempDir({ prefix: "ctxsnap-remote-carol-" });
      try {
        const carolMe = await loadOrCreateIdentity(join(carol, "config"));
        const keyring = new Keyring([], carolMe);
        keyring.add(alice.me.publicKey);
        const cloned = await clone(`file://${dir}`, join(carol, "ws"), carolMe, keyring);
        assertEquals(cloned.restored?.head, second);
        assertEquals(await tree(join(carol, "ws")), await tree(alice.ws));
      } finally {
        await Deno.remove(carol, { recursive: true });
      }

      // Incremental: one edited file sends one snapshot, the trees on its path
      // (notes/ and the root) and one blob.
      await Deno.writeTextFile(join(alice.ws, "notes/b.md"), "# bravo, edited\n");
      const third = await snap(alice, "third");
      const again = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assertEquals(again.snapshots, { uploaded: 1, present: 1 });
      assertEquals(again.objects.uploaded, 3);
      assertEquals(again.refs[0]?.seq, 2);
      assert(again.bytesSent < 8 * 1024, `sent ${again.bytesSent} bytes`);
      const nothing = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assertEquals([nothing.snapshots.uploaded, nothing.objects.uploaded], [0, 0]);
      assertEquals(nothing.refs[0]?.status, "unchanged");
      const before = counts(bob.store);
      const pulledAgain = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(pulledAgain, alice.me.keyId).head, third);
      assertEquals(pulledAgain.snapshots.fetched, 1);
      assertEquals(pulledAgain.objects.fetched, 3);
      assert(pulledAgain.bytesReceived < 8 * 1024);
      assertEquals(counts(bob.store).snapshots, before.snapshots! + 1);
      const idle = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(idle, alice.me.keyId).status, "unchanged");
      assertEquals(idle.operation, null);

      // Content a teammate already pushed is never sent again: Bob pushes the same files.
      await Deno.writeFile(join(bob.ws, "big.bin"), big);
      await snap(bob, "bob's");
      const bobPush = await push(bob.store, remote, bob.me, "origin", { kind: "current" });
      assertEquals(bobPush.objects.uploaded, 1, "only Bob's tree: the big blob is there already");
      assert(bobPush.bytesSent < 8 * 1024);
      const back = await pull(alice.store, remote, trusting(alice, bob), "origin");
      assertEquals(refOf(back, bob.me.keyId).status, "updated");
      assertEquals(refOf(back, alice.me.keyId).status, "updated"); // its own, now tracked
      await assertVerifies(alice.store, trusting(alice, bob));
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

/**
 * Alice pushes two snapshots one object per key (`loose`: the layout every
 * release before packs wrote, so these tests also prove such remotes still
 * pull); returns the head.
 */
async function aliceOnRemote(alice: Machine, remote: FileBackend): Promise<{ head: string }> {
  await snap(alice, "one");
  await Deno.writeTextFile(join(alice.ws, "a.txt"), "alpha two\n" + "x".repeat(3000));
  const head = await snap(alice, "two");
  await push(alice.store, remote, alice.me, "origin", { kind: "current" }, { loose: true });
  return { head };
}

async function refusedLeavesNothing(
  bob: Machine,
  alice: Machine,
  remote: FileBackend,
  reason: RegExp,
): Promise<void> {
  const before = counts(bob.store);
  const result = await pull(bob.store, remote, trusting(bob, alice), "origin");
  const ref = refOf(result, alice.me.keyId);
  assertEquals(ref.status, "refused");
  assert(reason.test(ref.reason ?? ""), `reason ${ref.reason} does not match ${reason}`);
  assertEquals(counts(bob.store), before, "something landed");
  assertEquals(result.operation, null);
  assertEquals(listBranches(bob.store).filter((b) => b.name.startsWith("origin/")), []);
  await assertVerifies(bob.store, trusting(bob, alice));
}

Deno.test("pull refuses tampered, truncated and withheld objects with nothing landing; a repaired remote then pulls", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote, dir) => {
      const { head } = await aliceOnRemote(alice, remote);
      const blob = sha256Hex("alpha two\n" + "x".repeat(3000));
      const file = join(dir, objectKey(blob));
      const original = await Deno.readFile(file);
      const flipped = original.slice();
      flipped[flipped.length >> 1]! ^= 0x40;
      await Deno.writeFile(file, flipped);
      await refusedLeavesNothing(bob, alice, remote, /blob|inflate/);
      await Deno.writeFile(file, original.subarray(0, original.length - 10));
      await refusedLeavesNothing(bob, alice, remote, /blob|inflate/);
      await Deno.remove(file);
      await refusedLeavesNothing(bob, alice, remote, /lacks blob/);
      // Other bytes of the same size, stored raw: they decode and have the size the tree
      // records, so only the blob's hash check refuses them.
      const other = new TextEncoder().encode("alpha tw0\n" + "x".repeat(3000));
      await Deno.writeFile(file, encodeObject(other, 0));
      await refusedLeavesNothing(bob, alice, remote, /blob \w+ does not hash to its id/);
      // A tree edited on the remote (decodes, hashes wrong).
      await Deno.writeFile(file, original);
      const treeId = (await readEnvelope(alice.store, head)).body.workspace!.tree;
      const treeFile = join(dir, objectKey(treeId));
      const treeOriginal = await Deno.readFile(treeFile);
      const forged = alice.store.getTree(treeId);
      forged.entries.push({ path: "zz.txt", type: "file", blob, size: 3010, mode: 0o644 });
      await Deno.writeFile(treeFile, encodeObject(treeBytes(forged), 0));
      await refusedLeavesNothing(bob, alice, remote, /tree .* hash/);
      await Deno.remove(treeFile);
      await refusedLeavesNothing(bob, alice, remote, /lacks tree/);
      await Deno.writeFile(treeFile, treeOriginal);
      // An envelope edited on the remote.
      const envFile = join(dir, snapshotKey(head));
      const envOriginal = await Deno.readTextFile(envFile);
      await Deno.writeTextFile(envFile, envOriginal.replace('"reason":"two"', '"reason":"tw0"'));
      await refusedLeavesNothing(bob, alice, remote, /does not hash|signature/);
      await Deno.writeTextFile(envFile, envOriginal + " ".repeat(5 * 1024 * 1024));
      await refusedLeavesNothing(bob, alice, remote, /larger than/);
      await Deno.writeTextFile(envFile, envOriginal);
      // Repaired: the rerun lands everything.
      const result = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(result, alice.me.keyId).status, "updated");
      assertEquals(refOf(result, alice.me.keyId).head, head);
      await assertVerifies(bob.store, trusting(bob, alice));
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("pull refuses a remote directory tree whose subtree is withheld or swapped for other bytes, with nothing landing", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote, dir) => {
      const { head } = await aliceOnRemote(alice, remote);
      const rootId = (await readEnvelope(alice.store, head)).body.workspace!.tree;
      const root = alice.store.getTreeObject(rootId).tree;
      assert(root.version === 2);
      const src = root.entries.find((e) => e.name === "src");
      assert(src?.type === "tree");
      const file = join(dir, objectKey(src.tree));
      const original = await Deno.readFile(file);
      await Deno.remove(file);
      await refusedLeavesNothing(bob, alice, remote, /lacks tree/);
      // The subtree's flat manifest under its id: decodes, hashes wrong.
      const flat = treeBytes(alice.store.getTree(src.tree));
      await Deno.writeFile(file, encodeObject(flat, 0));
      await refusedLeavesNothing(bob, alice, remote, /tree .* hash/);
      await Deno.writeFile(file, original);
      const result = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(refOf(result, alice.me.keyId).status, "updated");
      await assertVerifies(bob.store, trusting(bob, alice));
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("pull refuses a ref record that is forged, edited or filed under another signer; others still land", async () => {
  const alice = await machine();
  const bob = await machine({});
  const carol = await machine({ "c.txt": "carol\n" });
  try {
    await withRemote(async (remote, dir) => {
      await aliceOnRemote(alice, remote);
      await snap(carol);
      await push(carol.store, remote, carol.me, "origin", { kind: "current" });
      const refsDir = join(dir, "refs", alice.me.keyId, "main@main");
      const [name] = [...Deno.readDirSync(refsDir)].map((e) => e.name);
      const recordFile = join(refsDir, name!);
      const original = await Deno.readFile(recordFile);
      const record = parseRefRecord(original);

      // Another signer's ref: Carol's valid record copied under Alice's key.
      const carolDir = join(dir, "refs", carol.me.keyId, "main@main");
      const carolRecord = [...Deno.readDirSync(carolDir)].map((e) => e.name)[0]!;
      await Deno.remove(recordFile);
      await Deno.copyFile(join(carolDir, carolRecord), join(refsDir, carolRecord));
      const trust = trusting(bob, alice, carol);
      let result = await pull(bob.store, remote, trust, "origin");
      assertEquals(refOf(result, alice.me.keyId).status, "refused");
      assert(/does not match its key/.test(refOf(result, alice.me.keyId).reason!));
      assertEquals(refOf(result, carol.me.keyId).status, "updated", "Carol's own ref lands");
      await Deno.remove(join(refsDir, carolRecord));

      // An edited head (re-canonicalized, so only the signature can tell).
      const edited = canonicalBytes({ ...record, head: "ab".repeat(32) });
      const editedName = refKey(alice.me.keyId, "main", "main", record.seq, sha256Hex(edited));
      await Deno.writeFile(join(dir, editedName), edited);
      result = await pull(bob.store, remote, trust, "origin");
      assertEquals(refOf(result, alice.me.keyId).status, "refused");
      assert(/signature/.test(refOf(result, alice.me.keyId).reason!));
      await Deno.remove(join(dir, editedName));

      // A record whose name does not match its bytes.
      await Deno.writeFile(
        join(refsDir, name!.replace(/-[0-9a-f]{16}/, "-0000000000000000")),
        original,
      );
      result = await pull(bob.store, remote, trust, "origin");
      assertEquals(refOf(result, alice.me.keyId).status, "refused");
      await Deno.remove(join(refsDir, name!.replace(/-[0-9a-f]{16}/, "-0000000000000000")));

      // A record signed by Alice naming Carol's snapshot as Alice's head.
      const forged = await signRefRecord(alice.me, {
        session: "main",
        branch: "main",
        seq: record.seq + 1,
        previous: sha256Hex(original),
        head: getBranch(carol.store, "main", "main")!.head!,
        created_at: new Date().toISOString(),
      });
      await Deno.writeFile(
        join(dir, refKey(alice.me.keyId, "main", "main", forged.record.seq, forged.hash)),
        forged.bytes,
      );
      await Deno.writeFile(recordFile, original);
      result = await pull(bob.store, remote, trust, "origin");
      assertEquals(refOf(result, alice.me.keyId).status, "refused");
      assert(/signed by another key/.test(refOf(result, alice.me.keyId).reason!));
      assertEquals(
        getBranch(bob.store, "main", trackingBranch("origin", alice.me.keyId, "main")),
        null,
      );
      await assertVerifies(bob.store, trust);
    });
  } finally {
    await alice.close();
    await bob.close();
    await carol.close();
  }
});

Deno.test("a rolled-back ref is reported stale and never moves the tracking branch back", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote, dir) => {
      const { head } = await aliceOnRemote(alice, remote);
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "three\n");
      const newer = await snap(alice, "three");
      await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      const trust = trusting(bob, alice);
      assertEquals(
        refOf(await pull(bob.store, remote, trust, "origin"), alice.me.keyId).head,
        newer,
      );
      // The remote drops the newest record: what it shows now is record #1 (head `head`).
      const refsDir = join(dir, "refs", alice.me.keyId, "main@main");
      const names = [...Deno.readDirSync(refsDir)].map((e) => e.name).sort();
      assertEquals(names.length, 2);
      const second = await Deno.readFile(join(refsDir, names[1]!));
      await Deno.remove(join(refsDir, names[1]!));
      const result = await pull(bob.store, remote, trust, "origin");
      const ref = refOf(result, alice.me.keyId);
      assertEquals([ref.status, ref.seq, ref.head], ["stale", 1, head]);
      const tracking = trackingBranch("origin", alice.me.keyId, "main");
      assertEquals(getBranch(bob.store, "main", tracking)?.head, newer);
      // Alice's next push continues after the record she wrote, not the remote's.
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "four\n");
      const fourth = await snap(alice, "four");
      const pushed = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assertEquals(pushed.refs[0]?.seq, 3);
      const third = [...Deno.readDirSync(refsDir)].map((e) => e.name).find((n) =>
        n.startsWith("0000000000000003-")
      );
      const record = parseRefRecord(await Deno.readFile(join(refsDir, third!)));
      assertEquals(record.previous, sha256Hex(second), "#3 follows the dropped #2");
      assertEquals(
        refOf(await pull(bob.store, remote, trust, "origin"), alice.me.keyId).head,
        fourth,
      );
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("snapshots of an unpinned signer are refused unless --allow-untrusted, which quarantines them still verified", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote) => {
      const { head } = await aliceOnRemote(alice, remote);
      const before = counts(bob.store);
      const refused = await pull(bob.store, remote, trusting(bob), "origin");
      const ref = refOf(refused, alice.me.keyId);
      assertEquals(ref.status, "untrusted");
      assertEquals(ref.head, null, "an unpinned signer's records are not even read");
      assertEquals(counts(bob.store), before);
      const allowed = await pull(bob.store, remote, trusting(bob), "origin", {
        allowUntrusted: true,
      });
      assertEquals(refOf(allowed, alice.me.keyId).status, "updated");
      const tracking = trackingBranch("origin", alice.me.keyId, "main");
      assertEquals(getBranch(bob.store, "main", tracking)?.head, head);
      assertEquals(getBranch(bob.store, "main", "main")?.head ?? null, null, "main never moves");
      const report = await verifySnapshot(bob.store, head, trusting(bob));
      assertEquals([report.valid, report.trusted], [true, false]);
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("a trusted signer's tree that writes into .git is refused by pull like by import", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote) => {
      await aliceOnRemote(alice, remote);
      const hook = encoder.encode("#!/bin/sh\necho owned\n");
      const blob = sha256Hex(hook);
      const treeJson = canonicalBytes({
        entries: [{
          blob,
          mode: 0o755,
          path: ".git/hooks/post-checkout",
          size: hook.length,
          type: "file",
        }],
        skipped: [],
        version: 1,
      });
      const treeId = sha256Hex(treeJson);
      await remote.put(objectKey(blob), encodeObject(hook, 0));
      await remote.put(objectKey(treeId), encodeObject(treeJson, 0));
      const envelope = await signBody({
        schema: SNAPSHOT_SCHEMA,
        created_at: "2026-11-30T10:00:00.000Z",
        parent: null,
        session: "main",
        branch: "main",
        reason: "innocent",
        source: null,
        git: null,
        workspace: { tree: treeId, files: 1, bytes: hook.length, skipped: 0 },
        context: emptyContext(),
        cursors: emptyCursors(),
        facets: emptyFacets(),
        tool: { name: "ctxsnap", version: "0.1.0" },
      }, alice.me);
      await remote.put(snapshotKey(envelope.id), envelopeBytes(envelope));
      const record = await signRefRecord(alice.me, {
        session: "main",
        branch: "main",
        seq: 2,
        previous: "00".repeat(32),
        head: envelope.id,
        created_at: new Date().toISOString(),
      });
      await remote.put(refKey(alice.me.keyId, "main", "main", 2, record.hash), record.bytes);
      await refusedLeavesNothing(bob, alice, remote, /reserved/);
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("a pulled snapshot never answers the user's own create --source (idempotency is scoped to this signer's own snapshots)", async () => {
  const alice = await machine();
  const bob = await machine({ "b.txt": "bob\n" });
  try {
    await withRemote(async (remote) => {
      const { createSnapshot } = await import("../../lib/history/create.ts");
      const a42 = await createSnapshot(alice.store, alice.me, {
        source: { kind: "cell", id: "42" },
      });
      const a43 = await createSnapshot(alice.store, alice.me, {
        source: { kind: "cell", id: "43" },
        allowUnchanged: true,
      });
      await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      const b42 = await createSnapshot(bob.store, bob.me, { source: { kind: "cell", id: "42" } });
      await pull(bob.store, remote, trusting(bob, alice), "origin", { allowUntrusted: true });
      assert(bob.store.stmt("SELECT 1 FROM snapshots WHERE id = ?").get(a42.id) !== undefined);
      assert(bob.store.stmt("SELECT 1 FROM snapshots WHERE id = ?").get(a43.id) !== undefined);
      // Bob's own cell:42 is still his, and alice's cell:43 does not swallow his change.
      const again = await createSnapshot(bob.store, bob.me, { source: { kind: "cell", id: "42" } });
      assertEquals([again.id, again.created], [b42.id, false]);
      await Deno.writeTextFile(join(bob.ws, "b.txt"), "bob's change\n");
      const b43 = await createSnapshot(bob.store, bob.me, { source: { kind: "cell", id: "43" } });
      assert(b43.created, "the user's change was not recorded");
      assertEquals(b43.envelope.signature.key_id, bob.me.keyId);
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("pull: more bytes received in all than its bound stops the whole pull with a clear error, and nothing lands", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote) => {
      await snap(alice, "one");
      await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      const before = counts(bob.store);
      const error = await assertRejects(
        () => pull(bob.store, remote, trusting(bob, alice), "origin", { maxBytes: 200 }),
        CtxsnapError,
        "more than 200 bytes",
      );
      assertEquals(exitCodeOf(error), 1);
      assertEquals(counts(bob.store), before);
      const pulled = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals(pulled.refs.map((r) => r.status), ["updated"]);
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("push ID uploads a snapshot and its history without a ref; pull NAME ID lands it on imported/<key id>", async () => {
  const alice = await machine();
  const bob = await machine({});
  try {
    await withRemote(async (remote) => {
      await snap(alice, "one");
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "two\n");
      const id = await snap(alice, "two");
      const pushed = await push(alice.store, remote, alice.me, "origin", { kind: "snapshot", id });
      assertEquals([pushed.refs.length, pushed.snapshots.uploaded], [0, 2]);
      assertEquals(await remote.list("refs/"), []);
      const refs = await pull(bob.store, remote, trusting(bob, alice), "origin");
      assertEquals([refs.refs.length, refs.operation], [0, null]);
      const pulled = await pull(bob.store, remote, trusting(bob, alice), "origin", {
        snapshot: id,
      });
      assertEquals(pulled.snapshot, {
        id,
        session: "main",
        branch: `imported/${alice.me.keyId}`,
      });
      assertEquals(pulled.snapshots.fetched, 2);
      await assertVerifies(bob.store, trusting(bob, alice));
      // A snapshot this store has only as an envelope is never pushed half.
      const { publishToFile } = await import("../../lib/share/publish.ts");
      const { importFile } = await import("../../lib/share/import.ts");
      const carol = await machine({});
      try {
        const published = await publishToFile(alice.store, id, { dir: carol.root });
        await importFile(carol.store, published.path, trusting(carol, alice));
        await assertRejects(
          () =>
            push(carol.store, new FileBackend(join(carol.root, "empty")), carol.me, "origin", {
              kind: "snapshot",
              id,
            }),
          NotFoundError,
          "no workspace content",
        );
      } finally {
        await carol.close();
      }
      const missing = await pull(bob.store, remote, trusting(bob, alice), "origin", {
        snapshot: "ab".repeat(32),
      });
      assertEquals(missing.refs[0]?.status, "refused");
      assertEquals(missing.operation, null);
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

Deno.test("push sends only your own branches: quarantine branches and others' heads are refused or skipped", async () => {
  const alice = await machine();
  const bob = await machine({ "b.txt": "bob\n" });
  try {
    await withRemote(async (remote) => {
      const { head } = await aliceOnRemote(alice, remote);
      await snap(bob);
      await pull(bob.store, remote, trusting(bob, alice), "origin");
      const tracking = trackingBranch("origin", alice.me.keyId, "main");
      await assertRejects(
        () =>
          push(bob.store, remote, bob.me, "origin", {
            kind: "branch",
            session: "main",
            branch: tracking,
          }),
        UsageError,
        "quarantine",
      );
      const { forkBranch } = await import("../../lib/history/branch.ts");
      forkBranch(bob.store, head, "alices");
      await assertRejects(
        () =>
          push(bob.store, remote, bob.me, "origin", {
            kind: "branch",
            session: "main",
            branch: "alices",
          }),
        UsageError,
        "not signed by this machine",
      );
      const all = await push(bob.store, remote, bob.me, "origin", { kind: "all" });
      assertEquals(all.refs.map((r) => r.branch), ["main"]);
      assertEquals(all.skipped, [{
        session: "main",
        branch: "alices",
        reason: "signed_by_another_key",
      }]);
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});

// ---------------------------------------------------------------------------
// The command line (real subprocesses)

Deno.test("CLI: remote add/list/remove, push and pull --json, exit statuses", async () => {
  const alice = await tempWorkspace();
  const bob = await tempWorkspace({});
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-dir-" });
  try {
    expectCode(await alice.run(["init"]), 0, "init");
    expectCode(await bob.run(["init"]), 0, "init");
    const url = `file://${dir}/shared`;
    const added = await alice.run(["remote", "add", "origin", url, "--json"]);
    expectCode(added, 0, "remote add");
    assertEquals(added.json(), {
      name: "origin",
      url,
      endpoint: null,
      region: null,
      path_style: null,
    });
    expectCode(await alice.run(["remote", "add", "origin", url]), 5, "duplicate remote");
    expectCode(await alice.run(["remote", "add", "x", "ftp://nope"]), 2, "bad URL");
    expectCode(
      await alice.run(["remote", "add", "x", url, "--endpoint", "http://h"]),
      2,
      "file + endpoint",
    );
    expectCode(await alice.run(["remote", "add", "bad name", url]), 2, "bad name");
    expectCode(await alice.run(["remote", "remove", "nope"]), 4, "remove unknown");
    expectCode(
      await alice.run([
        "remote",
        "add",
        "s3",
        "s3://bucket-x/p",
        "--endpoint",
        "http://127.0.0.1:1",
        "--region",
        "eu-west-1",
        "--path-style",
      ]),
      0,
      "s3 remote",
    );
    const listed = (await alice.run(["remote", "list", "--json"])).json();
    assertEquals(listed.remotes.map((r: { name: string }) => r.name), ["origin", "s3"]);
    assertEquals(listed.remotes[1].path_style, true);
    expectCode(await alice.run(["remote", "remove", "s3"]), 0, "remove");

    expectCode(await alice.run(["create", "-m", "one"]), 0, "create");
    const pushed = await alice.run(["push", "--json"]);
    expectCode(pushed, 0, "push");
    const doc = pushed.json();
    assertEquals(Object.keys(doc).sort(), [
      "bytes_sent",
      "finished_at",
      "location",
      "objects",
      "packs",
      "refs",
      "remote",
      "requests",
      "skipped",
      "snapshot",
      "snapshots",
      "started_at",
    ]);
    assert(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(doc.started_at));
    assertEquals(doc.refs[0].status, "updated");
    assertEquals(doc.refs[0].head.length, 64);

    expectCode(await bob.run(["remote", "add", "origin", url]), 0, "bob remote add");
    const untrusted = await bob.run(["pull", "--json"]);
    expectCode(untrusted, 3, "pull of an unpinned signer");
    assertEquals(untrusted.json().refs[0].status, "untrusted");
    assert(untrusted.stderr.includes("--allow-untrusted"));
    const pulled = await bob.run(["pull", "--trust", await pubKey(alice), "--json"]);
    expectCode(pulled, 0, "pull");
    const ref = pulled.json().refs[0];
    assertEquals(ref.status, "updated");
    assertEquals(ref.head, doc.refs[0].head);
    assert(ref.local_branch.startsWith("origin/"));
    const listing = await bob.run(["list", "--branch", ref.local_branch, "--json"]);
    expectCode(listing, 0, "list the tracking branch");
    assertEquals(listing.json().snapshots[0].id, ref.head);
    expectCode(
      await bob.run(["verify", "--all", "--trust", await pubKey(alice)]),
      0,
      "verify --all",
    );
    expectCode(await bob.run(["pull", "origin", "abcd"]), 2, "pull needs a full id");
    expectCode(await bob.run(["push", "nowhere", "main"]), 4, "unknown remote");
  } finally {
    await alice.cleanup();
    await bob.cleanup();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("CLI: clone --allow-untrusted lands an unpinned signer's newer ref but checks out only the trusted one", async () => {
  const alice = await tempWorkspace({ "who.txt": "alice\n" });
  const mallory = await tempWorkspace({ "who.txt": "mallory\n" });
  const bob = await tempWorkspace({});
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-dir-" });
  try {
    const url = `file://${dir}/shared`;
    for (const [who, name] of [[alice, "alice"], [mallory, "mallory"]] as const) {
      expectCode(await who.run(["init"]), 0, `${name} init`);
      expectCode(await who.run(["create", "-m", name]), 0, `${name} create`);
      expectCode(await who.run(["remote", "add", "origin", url]), 0, `${name} remote add`);
      expectCode(await who.run(["push"]), 0, `${name} push`); // mallory's ref is the newer
    }
    const target = join(bob.root, "clone");
    const cloned = await bob.run(
      ["clone", url, target, "--trust", await pubKey(alice), "--allow-untrusted", "--json"],
      { cwd: bob.root },
    );
    expectCode(cloned, 0, "clone");
    const result = cloned.json();
    assertEquals(result.restored.key_id.length, 16);
    assertEquals(await Deno.readTextFile(join(target, "who.txt")), "alice\n");
    const refs = result.pull.refs as { trusted: boolean; status: string }[];
    assertEquals(refs.map((r) => [r.status, r.trusted]).sort(), [["updated", false], [
      "updated",
      true,
    ]]);
    // Only the unpinned signer's ref: it lands, the workspace stays empty, exit 3.
    const onlyMallory = await bob.run(
      [
        "clone",
        url,
        join(bob.root, "c2"),
        "--signer",
        result.pull.refs.find((r: {
          trusted: boolean;
        }) => !r.trusted).key_id,
        "--allow-untrusted",
        "--json",
      ],
      { cwd: bob.root },
    );
    expectCode(onlyMallory, 3, "clone of only an unpinned signer");
    assertEquals(onlyMallory.json().restored, null);
    assert(onlyMallory.stderr.includes("did not check out"), onlyMallory.stderr);
    assertEquals(
      [...Deno.readDirSync(join(bob.root, "c2"))].map((e) => e.name),
      [".ctxsnap"],
    );
  } finally {
    await alice.cleanup();
    await mallory.cleanup();
    await bob.cleanup();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("CLI: clone makes a workspace byte for byte and refuses a non-empty directory", async () => {
  const alice = await tempWorkspace();
  const bob = await tempWorkspace({});
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-dir-" });
  try {
    expectCode(await alice.run(["init"]), 0, "init");
    await Deno.writeFile(
      join(alice.path, "bin.dat"),
      new Uint8Array(2_000_000).map((_, i) => (i * 7) & 255),
    );
    expectCode(await alice.run(["create"]), 0, "create");
    const url = `file://${dir}/shared`;
    expectCode(await alice.run(["remote", "add", "origin", url]), 0, "remote add");
    expectCode(await alice.run(["push"]), 0, "push");
    const target = join(bob.root, "clone");
    const cloned = await bob.run(["clone", url, target, "--trust", await pubKey(alice), "--json"], {
      cwd: bob.root,
    });
    expectCode(cloned, 0, "clone");
    assertEquals(cloned.json().restored.key_id.length, 16);
    assertEquals(await tree(target), await tree(alice.path));
    // The clone's store is bob's: his next commands in it are accepted.
    expectCode(await bob.run(["list", "--json"], { cwd: target }), 0, "list in the clone");
    // A relative DIR is taken in the command's working directory.
    expectCode(
      await bob.run(["clone", url, "rel", "--trust", await pubKey(alice)], {
        cwd: bob.root,
      }),
      0,
      "clone into a relative directory",
    );
    assertEquals(await tree(join(bob.root, "rel")), await tree(alice.path));
    const again = await bob.run(["clone", url, target], { cwd: bob.root });
    expectCode(again, 5, "clone into a non-empty directory");
    const untrusted = await bob.run(["clone", url, join(bob.root, "c2"), "--json"], {
      cwd: bob.root,
    });
    expectCode(untrusted, 3, "clone of an unpinned signer");
    assertEquals(untrusted.json().restored, null);
  } finally {
    await alice.cleanup();
    await bob.cleanup();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a trusted signer's ref whose history holds an unpinned signer's snapshot is refused, nothing landing", async () => {
  const alice = await machine();
  const bob = await machine({});
  const mallory = await machine({});
  try {
    await withRemote(async (remote) => {
      const { createSnapshot } = await import("../../lib/history/create.ts");
      // Mallory's snapshot sits in the middle of the chain of Alice's branch.
      await snap(alice, "one");
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "by mallory\n");
      await createSnapshot(alice.store, mallory.me, { reason: "mallory's" });
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "by alice again\n");
      await snap(alice, "three");
      await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      const before = counts(bob.store);
      const result = await pull(bob.store, remote, trusting(bob, alice), "origin");
      const ref = refOf(result, alice.me.keyId);
      assert(ref.status !== "updated", `a history with an unpinned signer landed: ${ref.status}`);
      assert(/unpinned key/.test(ref.reason ?? ""), `reason: ${ref.reason}`);
      assertEquals(counts(bob.store), before, "something landed");
    });
  } finally {
    await alice.close();
    await bob.close();
    await mallory.close();
  }
});

Deno.test("a chunked blob over the multipart threshold is pushed in parts and pulled back byte for byte", async () => {
  const random = prng(29);
  const big = new Uint8Array(17 * 1024 * 1024).map(() => Math.floor(random() * 256));
  const alice = await machine({ ...FILES, "data/huge.bin": big });
  const bob = await machine({});
  try {
    const head = await snap(alice, "huge");
    const row = alice.store.db.prepare("SELECT encoding FROM objects WHERE id = ?").get(
      sha256Hex(big),
    ) as { encoding: string };
    assertEquals(row.encoding, "chunks", "the large file is stored as chunks");
    await withRemote(async (remote) => {
      const pushed = await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      assert(pushed.bytesSent > big.length, `sent ${pushed.bytesSent} bytes`);
      await pull(bob.store, remote, trusting(bob, alice), "origin");
      await assertVerifies(bob.store, trusting(bob, alice));
      const out = join(bob.root, "out");
      materialize(bob.store, (await readEnvelope(bob.store, head)).body.workspace!.tree, out);
      assertEquals(await Deno.readFile(join(out, "data/huge.bin")), big);
    });
  } finally {
    await alice.close();
    await bob.close();
  }
});
