/**
 * The verifier's own configuration: problems with the
 * config directory, `identity.pem`, `trusted_keys.json`, a `--trusted-keys`
 * file or a `--trust` key are exit 7 ("configuration problem"), never 1
 * ("tampered"); a trust file or config directory that others may write, or
 * that another user owns, is refused rather than used; key files are read
 * with a small bound and FIFOs and devices are never opened.
 *
 * Most runs are in-process (`main(argv, write)`); the `--trust /dev/zero`
 * and FIFO runs are subprocesses with a time limit, because without the
 * defence they never return.
 *
 * @module
 */
import { join } from "node:path";
import { MAX_KEY_FILE_BYTES, readKeyFile, readTrustedKeys } from "../../lib/keys/keyring.ts";
import { ConfigError, EXIT_CODES } from "../../lib/errors.ts";
import { EXIT_TABLE } from "../../lib/cli/output.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";
import { runMain, tempWorkspace } from "../_cli.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(config: string, ...args: string[]): Promise<Run> {
  return await runMain(args, { config });
}

interface Published {
  root: string;
  /** The publisher's config directory. */
  signer: string;
  /** A fresh verifier config directory (created 0700 by `key show`). */
  verifier: string;
  /** The published snapshot file. */
  file: string;
  /** The signer's public key, hex. */
  publicKey: string;
}

/** A snapshot published by one config, and a second config that verifies it. */
async function withPublished(fn: (p: Published) => Promise<void>): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-vcfg-" }));
  const ws = join(root, "ws");
  const store = join(root, "store");
  const signer = join(root, "signer");
  const verifier = join(root, "verifier");
  await Deno.mkdir(ws);
  await Deno.writeTextFile(join(ws, "a.txt"), "alpha\n");
  try {
    const s = ["--store", store];
    assertEquals((await cli(signer, ...s, "init", "--workspace", ws)).code, 0);
    const created = await cli(signer, ...s, "create", "-m", "m", "--json");
    const id = JSON.parse(created.stdout).id as string;
    const file = join(root, "pub.ctxsnapshot.json");
    assertEquals((await cli(signer, ...s, "publish", id, "--out", file)).code, 0);
    const publicKey = JSON.parse((await cli(signer, "key", "show", "--json")).stdout).public_key;
    assertEquals((await cli(verifier, "key", "show")).code, 0);
    await fn({ root, signer, verifier, file, publicKey });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

function expectConfig(run: Run, needle: string, what: string): void {
  assertEquals(run.code, 7, `${what}: ${run.stderr}`);
  assert(run.stderr.includes(needle), `${what}: stderr lacks ${needle}: ${run.stderr}`);
  assert(!/^OK/m.test(run.stdout), `${what}: printed a verdict: ${run.stdout}`);
}

const isRoot = Deno.uid() === 0;

Deno.test("exit 7 is the configuration status in EXIT_CODES and the exit table", () => {
  assertEquals(EXIT_CODES.config, 7);
  assertEquals(new ConfigError("x").code, "config");
  assert(/^ {2}7 {3}configuration problem/m.test(EXIT_TABLE), EXIT_TABLE);
});

Deno.test("verify FILE exits 7, not 1, when the verifier's identity.pem is readable by others", async () => {
  await withPublished(async (p) => {
    await Deno.chmod(join(p.verifier, "identity.pem"), 0o644);
    const run = await cli(p.verifier, "verify", p.file, "--trust", p.publicKey);
    expectConfig(run, "identity.pem", "0644 identity.pem");
    assert(run.stderr.includes("chmod 600"), run.stderr);
    const json = await cli(p.verifier, "verify", p.file, "--json");
    assertEquals(JSON.parse(json.stdout).error.code, "config");
    assertEquals(JSON.parse(json.stdout).error.exit, 7);
  });
});

Deno.test("verify FILE exits 7, not 1, on a truncated or invalid trusted_keys.json", async () => {
  await withPublished(async (p) => {
    assertEquals((await cli(p.verifier, "key", "trust", p.publicKey, "--name", "alice")).code, 0);
    const path = join(p.verifier, "trusted_keys.json");
    assertEquals((await cli(p.verifier, "verify", p.file)).code, 0);
    const text = await Deno.readTextFile(path);
    await Deno.writeTextFile(path, text.slice(0, text.length >> 1));
    expectConfig(await cli(p.verifier, "verify", p.file), "trusted_keys.json", "truncated");
    await Deno.writeTextFile(path, "[]");
    expectConfig(await cli(p.verifier, "verify", p.file), "trusted_keys.json", "not an object");
  });
});

Deno.test("verify FILE refuses a trusted_keys.json writable by others instead of trusting its keys", async () => {
  await withPublished(async (p) => {
    assertEquals((await cli(p.verifier, "key", "trust", p.publicKey)).code, 0);
    const path = join(p.verifier, "trusted_keys.json");
    for (const mode of [0o666, 0o664, 0o646]) {
      await Deno.chmod(path, mode);
      expectConfig(await cli(p.verifier, "verify", p.file), "writable by group or others", "mode");
      expectConfig(await cli(p.verifier, "key", "list"), "writable by group or others", "list");
    }
    await Deno.chmod(path, 0o644); // world-readable is fine: public keys
    assertEquals((await cli(p.verifier, "verify", p.file)).code, 0);
    // Not through a symbolic link either.
    await Deno.rename(path, join(p.root, "elsewhere.json"));
    await Deno.symlink(join(p.root, "elsewhere.json"), path);
    expectConfig(await cli(p.verifier, "verify", p.file), "symbolic link", "symlink");
  });
});

Deno.test("verify FILE refuses a config directory writable by others", async () => {
  await withPublished(async (p) => {
    assertEquals((await cli(p.verifier, "key", "trust", p.publicKey)).code, 0);
    for (const mode of [0o777, 0o770, 0o1777]) {
      await Deno.chmod(p.verifier, mode);
      expectConfig(await cli(p.verifier, "verify", p.file), "Config directory", "dir mode");
      expectConfig(await cli(p.verifier, "key", "trust", p.publicKey), "Config directory", "trust");
    }
    await Deno.chmod(p.verifier, 0o755);
    assertEquals((await cli(p.verifier, "verify", p.file)).code, 0);
  });
});

Deno.test({
  name: "verify FILE refuses a config directory or trust file owned by another user",
  ignore: !isRoot,
  async fn() {
    await withPublished(async (p) => {
      assertEquals((await cli(p.verifier, "key", "trust", p.publicKey)).code, 0);
      const path = join(p.verifier, "trusted_keys.json");
      await Deno.chown(path, 65534, 65534);
      expectConfig(await cli(p.verifier, "verify", p.file), "owned by another user", "file owner");
      await Deno.chown(path, 0, 0);
      assertEquals((await cli(p.verifier, "verify", p.file)).code, 0);
      await Deno.chown(p.verifier, 65534, 65534);
      expectConfig(await cli(p.verifier, "verify", p.file), "owned by another user", "dir owner");
      // A --trusted-keys file owned by another user is refused the same way.
      await Deno.chown(p.verifier, 0, 0);
      const other = join(p.root, "team_keys.json");
      await Deno.copyFile(path, other);
      await Deno.chown(other, 65534, 65534);
      await Deno.remove(path);
      const run = await cli(p.verifier, "verify", p.file, "--trusted-keys", other);
      expectConfig(run, "owned by another user", "--trusted-keys owner");
    });
  },
});

Deno.test("verify --trusted-keys FILE refuses a world-writable file (exit 7) and uses a private one", async () => {
  await withPublished(async (p) => {
    const other = join(p.root, "team_keys.json");
    const doc = {
      version: 1,
      keys: [{
        key_id: JSON.parse((await cli(p.signer, "key", "show", "--json")).stdout).key_id,
        public_key: p.publicKey,
        name: "team",
        added_at: "2026-11-30T10:00:00.000Z",
      }],
    };
    await Deno.writeTextFile(other, JSON.stringify(doc), { mode: 0o666 });
    await Deno.chmod(other, 0o666);
    const run = await cli(p.verifier, "verify", p.file, "--trusted-keys", other);
    expectConfig(run, "writable by group or others", "--trusted-keys 0666");
    await Deno.chmod(other, 0o600);
    assertEquals((await cli(p.verifier, "verify", p.file, "--trusted-keys", other)).code, 0);
  });
});

Deno.test("--trust with a key that is not a valid public key exits 7, a missing file exits 4", async () => {
  await withPublished(async (p) => {
    const smallOrder = "0".repeat(64); // y = 0: a point of order 4, refused as a public key
    const run = await cli(p.verifier, "verify", p.file, "--trust", smallOrder);
    expectConfig(run, "not a valid Ed25519 public key", "small-order hex");
    const pem = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
    expectConfig(await cli(p.verifier, "verify", p.file, `--trust=${pem}`), "Key", "bad PEM text");
    const garbage = join(p.root, "garbage.pem");
    await Deno.writeTextFile(garbage, "not a key\n");
    expectConfig(
      await cli(p.verifier, "verify", p.file, "--trust", garbage),
      "does not hold an Ed25519 public key",
      "garbage file",
    );
    const missing = await cli(p.verifier, "verify", p.file, "--trust", join(p.root, "nope.pem"));
    assertEquals(missing.code, 4, missing.stderr);
    // A genuine key file works, also through a symbolic link.
    const exported = join(p.root, "signer.pub.pem");
    await Deno.writeTextFile(exported, (await cli(p.signer, "key", "export")).stdout);
    await Deno.symlink(exported, join(p.root, "link.pem"));
    for (const key of [exported, join(p.root, "link.pem")]) {
      assertEquals((await cli(p.verifier, "verify", p.file, "--trust", key)).code, 0, key);
    }
  });
});

Deno.test("--trust /dev/zero, a FIFO without a writer and an oversized file are refused at once (exit 7)", async () => {
  const ws = await tempWorkspace();
  try {
    const fifo = join(ws.root, "key.fifo");
    await new Deno.Command("mkfifo", { args: [fifo] }).output();
    const big = join(ws.root, "big.pem");
    await Deno.writeFile(big, new Uint8Array(MAX_KEY_FILE_BYTES + 1).fill(0x41));
    const file = join(ws.root, "absent.ctxsnapshot.json");
    await Deno.writeTextFile(file, "{}");
    for (
      const [key, needle] of [
        ["/dev/zero", "not a regular file"],
        [fifo, "not a regular file"],
        [big, "too large"],
      ]
    ) {
      // Without the bound, /dev/zero is read until memory runs out and the FIFO blocks forever.
      const run = await ws.run(["verify", file, "--trust", key!], { timeoutMs: 30_000 });
      assertEquals(run.code, 7, `${key}: ${run.stderr}`);
      assert(run.stderr.includes(needle!), `${key}: ${run.stderr}`);
      const trusted = await ws.run(["key", "trust", key!], { timeoutMs: 30_000 });
      assertEquals(trusted.code, 7, `key trust ${key}: ${trusted.stderr}`);
    }
  } finally {
    await ws.cleanup();
  }
});

Deno.test("readKeyFile and readTrustedKeys throw ConfigError for devices, FIFOs and oversized files", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fifo = join(dir, "fifo");
    await new Deno.Command("mkfifo", { args: [fifo] }).output();
    // Refused on the lstat, before open() (opening a device may have effects of its own).
    const notOpened = "not a regular file; it was not opened";
    assertThrows(() => readKeyFile("/dev/zero"), ConfigError, `character device, ${notOpened}`);
    assertThrows(() => readKeyFile(fifo), ConfigError, `a FIFO, ${notOpened}`);
    assertThrows(() => readTrustedKeys("/dev/zero"), ConfigError, notOpened);
    assertThrows(() => readTrustedKeys(fifo), ConfigError, notOpened);
    assertThrows(() => readKeyFile(dir), ConfigError, `a directory, ${notOpened}`);
    const big = join(dir, "trusted_keys.json");
    await Deno.writeFile(big, new Uint8Array(1024 * 1024 + 1).fill(0x20));
    assertThrows(() => readTrustedKeys(big), ConfigError, "too large");
    assertEquals(readKeyFile(join(dir, "missing.pem")), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
