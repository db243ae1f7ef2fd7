// deno-lint-ignore-file no-console
/**
 * The long remote suite (`deno task test:remote`): `s3://` against a real
 * OpenStack Swift with its S3 API (s3api + tempauth, SigV4 checked), on
 * 127.0.0.1, started by `scripts/swift.sh` (the same script `.ci/run` uses),
 * plus the subprocess-heavy `file://` scenarios (kill -9 of push and pull,
 * two users at once), kept out of the fast suite.
 *
 * It covers the backend conformance suite over S3 (with small list pages),
 * a wrong secret (403), a missing bucket, clone byte for byte with a
 * multipart blob, objects tampered with and truncated on the server through
 * Swift's own API, kill -9 of real pushes and pulls, two users at once, and
 * retries with backoff through a proxy that fails connections.
 *
 * When Swift is not installed it tries `scripts/swift.sh install`; only if
 * the packages cannot be installed are the S3 tests skipped, with a message.
 *
 * @module
 */
import { join } from "node:path";
import { RemoteError } from "../../lib/errors.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { S3Backend } from "../../lib/remote/s3_backend.ts";
import { FileBackend } from "../../lib/remote/file_backend.ts";
import { objectKey } from "../../lib/remote/layout.ts";
import { encodeIndex, indexKey, packKey, parseIndex } from "../../lib/remote/pack.ts";
import { loadRemoteIndex } from "../../lib/remote/_remote_index.ts";
import { pull } from "../../lib/remote/pull.ts";
import { push } from "../../lib/remote/push.ts";
import { readEnvelope } from "../../lib/history/timeline.ts";
import { assert, assertEquals, assertRejects } from "../_assert.ts";
import { expectCode, REPO, tempWorkspace } from "../_cli.ts";
import { backendConformance } from "../_backend_conformance.ts";
import {
  assertVerifies,
  counts,
  killDuringPushAndPull,
  machine,
  pubKey,
  refOf,
  type RemoteTarget,
  snap,
  tree,
  trusting,
  twoUsersAtOnce,
} from "../_remote.ts";

interface Swift {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  authUrl: string;
}

async function sh(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(args[0]!, {
    args: args.slice(1),
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** Starts (or finds) the Swift server; null with a reason when it cannot be had. */
async function startSwift(): Promise<Swift | string> {
  const script = join(REPO, "scripts", "swift.sh");
  if ((await sh(["sh", "-c", "command -v swift-proxy-server"])).code !== 0) {
    const installed = await sh(["bash", script, "install"]);
    if ((await sh(["sh", "-c", "command -v swift-proxy-server"])).code !== 0) {
      return `OpenStack Swift is not installed and could not be installed (${
        installed.stderr.trim() || `exit ${installed.code}`
      }); install swift-proxy swift-object swift-container swift-account memcached`;
    }
  }
  const started = await sh(["bash", script, "start"]);
  if (started.code !== 0) return `scripts/swift.sh start failed: ${started.stderr.trim()}`;
  const env = new Map(
    started.stdout.trim().split("\n").map((line) => line.split("=", 2) as [string, string]),
  );
  return {
    endpoint: env.get("AWS_ENDPOINT_URL")!,
    accessKeyId: env.get("AWS_ACCESS_KEY_ID")!,
    secretAccessKey: env.get("AWS_SECRET_ACCESS_KEY")!,
    region: env.get("AWS_REGION")!,
    authUrl: env.get("CTXSNAP_SWIFT_AUTH_URL")!,
  };
}

const swift = await startSwift();
const skip = typeof swift === "string";
if (skip) console.log(`SKIPPING the S3 tests: ${swift}`);
const server = swift as Swift;

function bucketName(): string {
  return `ctxsnap-t-${crypto.randomUUID().slice(0, 12)}`;
}

function s3(
  bucket: string,
  prefix = "",
  secret = server.secretAccessKey,
  endpoint = server.endpoint,
) {
  return new S3Backend({
    endpoint: new URL(endpoint),
    bucket,
    prefix,
    region: server.region,
    pathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: secret },
    pageSize: 7,
  });
}

/** The CLI environment for the server. */
function cliEnv(): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: server.accessKeyId,
    AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
    AWS_REGION: server.region,
  };
}

async function s3Target(): Promise<RemoteTarget> {
  const bucket = bucketName();
  await s3(bucket).createBucket();
  return {
    url: `s3://${bucket}/team`,
    addArgs: ["--endpoint", server.endpoint],
    env: cliEnv(),
    backend: () => s3(bucket, "team"),
  };
}

/** Swift's own API (tempauth), to change objects behind the S3 layer's back. */
async function swiftNative(): Promise<{ url: string; token: string }> {
  const response = await fetch(server.authUrl, {
    headers: { "x-auth-user": server.accessKeyId, "x-auth-key": server.secretAccessKey },
  });
  await response.body?.cancel();
  assert(response.ok, `tempauth: ${response.status}`);
  return {
    url: response.headers.get("x-storage-url")!,
    token: response.headers.get("x-auth-token")!,
  };
}

async function swiftPut(bucket: string, key: string, data: Uint8Array): Promise<void> {
  const { url, token } = await swiftNative();
  const response = await fetch(`${url}/${bucket}/${key}`, {
    method: "PUT",
    headers: { "x-auth-token": token },
    body: data as BodyInit,
  });
  await response.body?.cancel();
  assert(response.status === 201, `swift PUT: ${response.status}`);
}

async function swiftGet(bucket: string, key: string): Promise<Uint8Array> {
  const { url, token } = await swiftNative();
  const response = await fetch(`${url}/${bucket}/${key}`, { headers: { "x-auth-token": token } });
  assert(response.ok, `swift GET: ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// ---------------------------------------------------------------------------

backendConformance("s3:// on OpenStack Swift", async () => {
  const bucket = bucketName();
  await s3(bucket).createBucket();
  return { backend: s3(bucket, "conformance/run"), cleanup: () => Promise.resolve() };
}, { ignore: skip });

Deno.test({
  name: "s3: a wrong secret is refused (403) and a missing bucket is not found",
  ignore: skip,
  async fn() {
    const bucket = bucketName();
    await s3(bucket).createBucket();
    await assertRejects(() => s3(bucket, "", "wrong-secret").get("x", 10), RemoteError, "403");
    await assertRejects(
      () => s3(bucket, "", "wrong-secret").put("x", new Uint8Array([1])),
      RemoteError,
    );
    assertEquals(await s3(bucket).head("x"), null, "nothing was written with the wrong secret");
    const ws = await tempWorkspace();
    try {
      expectCode(await ws.run(["init"]), 0, "init");
      expectCode(await ws.run(["create"]), 0, "create");
      const add = ["remote", "add", "origin", `s3://${bucket}/p`, "--endpoint", server.endpoint];
      expectCode(await ws.run(add), 0, "remote add");
      const refused = await ws.run(["push"], {
        env: { ...cliEnv(), AWS_SECRET_ACCESS_KEY: "wrong-secret" },
      });
      expectCode(refused, 1, "push with a wrong secret");
      assert(refused.stderr.includes("AWS_SECRET_ACCESS_KEY"), refused.stderr);
      const missing = [
        "remote",
        "add",
        "gone",
        "s3://no-such-bucket-here/p",
        "--endpoint",
        server.endpoint,
      ];
      expectCode(await ws.run(missing), 0, "remote add");
      expectCode(await ws.run(["push", "gone"], { env: cliEnv() }), 4, "push to a missing bucket");
      expectCode(await ws.run(["push"], { env: cliEnv() }), 0, "push with the right secret");
    } finally {
      await ws.cleanup();
    }
  },
});

Deno.test({
  name:
    "s3: clone restores byte for byte, a 20 MiB blob going up in parts; incremental push and pull",
  ignore: skip,
  sanitizeResources: false,
  async fn() {
    const target = await s3Target();
    const alice = await tempWorkspace();
    const bob = await tempWorkspace({});
    try {
      expectCode(await alice.run(["init"]), 0, "init");
      const big = new Uint8Array(20 * 1024 * 1024).map((_, i) => (i * 31 + (i >> 12)) & 255);
      await Deno.writeFile(join(alice.path, "big.bin"), big);
      await Deno.symlink("a.txt", join(alice.path, "link"));
      expectCode(await alice.run(["create"]), 0, "create");
      expectCode(
        await alice.run(["remote", "add", "origin", target.url, ...target.addArgs]),
        0,
        "add",
      );
      const pushed = await alice.run(["push", "--json"], { env: target.env });
      expectCode(pushed, 0, "push");
      assert(pushed.json().bytes_sent > big.length, "the big blob was sent");
      const id = sha256Hex(big);
      assertEquals((await target.backend().head(objectKey(id)))?.size, big.length + 1);
      const dest = join(bob.root, "clone");
      const cloned = await bob.run(
        ["clone", target.url, dest, ...target.addArgs, "--trust", await pubKey(alice), "--json"],
        { env: target.env, cwd: bob.root },
      );
      expectCode(cloned, 0, "clone");
      assertEquals(await tree(dest), await tree(alice.path));
      // Incremental: a one-line change sends a few KiB.
      await Deno.writeTextFile(join(alice.path, "a.txt"), "changed\n");
      expectCode(await alice.run(["create"]), 0, "create");
      const again = (await alice.run(["push", "--json"], { env: target.env })).json();
      assertEquals([again.snapshots.uploaded, again.objects.uploaded], [1, 2]);
      assert(again.bytes_sent < 16 * 1024, `sent ${again.bytes_sent}`);
    } finally {
      await alice.cleanup();
      await bob.cleanup();
    }
  },
});

Deno.test({
  name:
    "s3: packs and indexes tampered with or truncated on the server are refused with nothing landing",
  ignore: skip,
  async fn() {
    const bucket = bucketName();
    await s3(bucket).createBucket();
    const remote = s3(bucket, "team");
    const alice = await machine();
    const bob = await machine({});
    try {
      await Deno.writeTextFile(join(alice.ws, "a.txt"), "x".repeat(5000));
      const head = await snap(alice);
      await push(alice.store, remote, alice.me, "origin", { kind: "current" });
      const trust = trusting(bob, alice);
      // Packed (the default layout): the blob's pack, and the pack of the trees.
      const index = await loadRemoteIndex(remote, 4);
      const blob = index.byId.get(sha256Hex("x".repeat(5000)))!;
      const key = `team/${packKey(blob.pack)}`;
      const original = await swiftGet(bucket, key);
      const expectRefused = async (what: string, reason: RegExp) => {
        const before = counts(bob.store);
        const result = await pull(bob.store, remote, trust, "origin");
        assertEquals(refOf(result, alice.me.keyId).status, "refused", what);
        const why = refOf(result, alice.me.keyId).reason ?? "";
        assert(reason.test(why), `${what}: ${why}`);
        assertEquals(counts(bob.store), before, `${what}: something landed`);
        await assertVerifies(bob.store, trust);
      };
      const flipped = original.slice();
      flipped[blob.entry.offset + (blob.entry.length >> 1)]! ^= 0x20;
      await swiftPut(bucket, key, flipped);
      await expectRefused("a flipped byte", /does not hash to its id/);
      await swiftPut(bucket, key, original.subarray(0, original.length - 7));
      await expectRefused("a truncated pack", /truncated/);
      const tree = index.byId.get((await readEnvelope(alice.store, head)).body.workspace!.tree)!;
      const treeKey = `team/${packKey(tree.pack)}`;
      const treeOriginal = await swiftGet(bucket, treeKey);
      await swiftPut(bucket, key, original);
      await swiftPut(bucket, treeKey, treeOriginal.subarray(0, 20));
      await expectRefused("a truncated tree pack", /truncated/);
      await swiftPut(bucket, treeKey, treeOriginal);
      // An index whose ranges overlap is refused as a whole: the tree it located is lacking.
      const indexBytes = await swiftGet(bucket, `team/${indexKey(tree.pack)}`);
      const parsed = parseIndex(indexBytes, tree.pack);
      parsed.entries[0]!.length += 1;
      await swiftPut(bucket, `team/${indexKey(tree.pack)}`, encodeIndex(parsed));
      await expectRefused("a hostile index", /lacks tree .*(overlapping|past the end|unindexed)/);
      await swiftPut(bucket, `team/${indexKey(tree.pack)}`, indexBytes);
      const ok = await pull(bob.store, remote, trust, "origin");
      assertEquals(refOf(ok, alice.me.keyId).head, head);
      await assertVerifies(bob.store, trust);
      // The bytes a pull accepted are the bytes Alice captured.
      const tracked = refOf(ok, alice.me.keyId).localBranch;
      assert(tracked.startsWith("origin/"));
    } finally {
      await alice.close();
      await bob.close();
    }
  },
});

Deno.test({
  name:
    "s3: kill -9 at random points of a push (with a multipart blob) and of a pull; reruns complete",
  ignore: skip,
  sanitizeResources: false,
  async fn() {
    await killDuringPushAndPull(await s3Target(), {
      rounds: Number(Deno.env.get("CTXSNAP_REMOTE_KILLS") ?? "3"),
      largeBytes: 17 * 1024 * 1024,
    });
  },
});

Deno.test({
  name:
    "s3: two users with different keys push to one bucket at the same time, then pull each other",
  ignore: skip,
  sanitizeResources: false,
  async fn() {
    await twoUsersAtOnce(await s3Target());
  },
});

/**
 * A TCP proxy in front of Swift that answers the first `failures` connections
 * with `503 Slow Down` (or a reset) and forwards the rest byte for byte (the
 * client signed the proxy's host, which is what Swift then checks).
 */
function faultyProxy(
  failures: number,
): { endpoint: string; injected: () => number; close(): void } {
  const target = new URL(server.endpoint);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let injected = 0;
  (async () => {
    for await (const conn of listener) {
      if (injected < failures) {
        injected++;
        const reset = injected % 2 === 0;
        (async () => {
          const buffer = new Uint8Array(4096);
          await conn.read(buffer).catch(() => null);
          if (!reset) {
            const body = "<Error><Code>SlowDown</Code></Error>";
            await conn.write(new TextEncoder().encode(
              `HTTP/1.1 503 Service Unavailable\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
            )).catch(() => 0);
          }
          conn.close();
        })();
        continue;
      }
      (async () => {
        try {
          const upstream = await Deno.connect({
            hostname: target.hostname,
            port: Number(target.port),
          });
          await Promise.all([
            conn.readable.pipeTo(upstream.writable).catch(() => {}),
            upstream.readable.pipeTo(conn.writable).catch(() => {}),
          ]);
        } catch {
          conn.close();
        }
      })();
    }
  })().catch(() => {});
  const port = (listener.addr as Deno.NetAddr).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    injected: () => injected,
    close: () => listener.close(),
  };
}

Deno.test({
  name:
    "s3: transient failures (503, dropped connections) are retried with backoff; too many fail clearly",
  ignore: skip,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const bucket = bucketName();
    await s3(bucket).createBucket();
    const proxy = faultyProxy(4);
    const alice = await machine();
    const bob = await machine({});
    try {
      await snap(alice);
      const through = s3(bucket, "team", server.secretAccessKey, proxy.endpoint);
      const pushed = await push(alice.store, through, alice.me, "origin", { kind: "current" });
      assertEquals(pushed.refs[0]?.status, "updated");
      assertEquals(proxy.injected(), 4);
      const result = await pull(bob.store, s3(bucket, "team"), trusting(bob, alice), "origin");
      assertEquals(refOf(result, alice.me.keyId).status, "updated");
      // A remote that keeps failing: a clear error after the attempts, nothing landed.
      const dead = faultyProxy(1_000_000);
      try {
        const ws = await tempWorkspace();
        try {
          expectCode(await ws.run(["init"]), 0, "init");
          expectCode(await ws.run(["create"]), 0, "create");
          const add = [
            "remote",
            "add",
            "origin",
            `s3://${bucket}/dead`,
            "--endpoint",
            dead.endpoint,
          ];
          expectCode(await ws.run(add), 0, "remote add");
          const failed = await ws.run(["push"], {
            env: { ...cliEnv(), CTXSNAP_REMOTE_ATTEMPTS: "3" },
          });
          expectCode(failed, 1, "push through a dead proxy");
          assert(/failed 3 times/.test(failed.stderr), failed.stderr);
          assertEquals(await s3(bucket, "dead").list(""), []);
        } finally {
          await ws.cleanup();
        }
      } finally {
        dead.close();
      }
    } finally {
      proxy.close();
      await alice.close();
      await bob.close();
    }
  },
});

// ---------------------------------------------------------------------------
// file:// with more rounds than the fast suite

Deno.test({
  name:
    "file://: two users with different keys push to one directory at the same time, then pull each other",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-dir-" });
    try {
      await twoUsersAtOnce({
        url: `file://${dir}/shared`,
        addArgs: [],
        env: {},
        backend: () => new FileBackend(`${dir}/shared`),
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "file://: kill -9 at random points of a push (with a multipart blob) and of a pull; reruns complete",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "ctxsnap-remote-dir-" });
    try {
      await killDuringPushAndPull({
        url: `file://${dir}/shared`,
        addArgs: [],
        env: {},
        backend: () => new FileBackend(`${dir}/shared`),
      }, {
        rounds: Number(Deno.env.get("CTXSNAP_REMOTE_KILLS") ?? "3"),
        largeBytes: 17 * 1024 * 1024,
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
