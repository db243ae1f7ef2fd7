/**
 * Secrets stay out of captures: the widened name rules,
 * content detection on the bytes capture reads (across chunk boundaries),
 * the `secret` and `secret_content` skip reasons, the stderr note and
 * `--json` list of `create`, `show --skipped`, the store's allow list, and
 * the stat cache never standing in for the content check. Real files, real
 * stores, the CLI in-process (`main(argv, write)`).
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { dirname, join } from "node:path";
import { runMain } from "../_cli.ts";
import {
  isSecretName,
  isSecretPath,
  secretPathRulesReach,
} from "../../lib/workspace/io/capture_policy.ts";
import { walkWorkspace } from "../../lib/workspace/io/walk.ts";
import { scanText, SecretScanner } from "../../lib/workspace/io/secret_scan.ts";
import { sha256Hex } from "../../lib/crypto/hash.ts";
import { captureWorkspace } from "../../lib/workspace/capture.ts";
import { Store } from "../../lib/repository/store.ts";
import { parseAllowSecrets, readAllowSecrets } from "../../lib/repository/allow_secrets.ts";
import { assert, assertEquals, assertThrows } from "../_assert.ts";

const encoder = new TextEncoder();

// ---------------------------------------------------------------------------
// Samples. Keys and tokens are built here so this file itself holds none.

const BASE64 = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7Vj1bbnGs3Zt9";
const pem = (label: string, headers = "") =>
  `-----BEGIN ${label}-----\n${headers}${BASE64}\n${BASE64}\n-----END ${label}-----\n`;
const token = (prefix: string, n: number) => {
  const alphabet = "aZ3kQ9mX1pL7rT5vB2nC8wD4yF6hJ0sG";
  let text = prefix;
  for (let i = 0; i < n; i++) text += alphabet[(i * 7 + 3) % alphabet.length];
  return text;
};

/** Content that must be recognised, by the kind reported. */
const SECRETS: [string, string][] = [
  ["PKCS#8 key", `key:\n${pem("PRIVATE KEY")}`],
  ["RSA key", pem("RSA PRIVATE KEY")],
  ["EC key", pem("EC PRIVATE KEY")],
  ["OpenSSH key", pem("OPENSSH PRIVATE KEY")],
  ["encrypted PKCS#8 key", pem("ENCRYPTED PRIVATE KEY")],
  [
    "legacy encrypted RSA key",
    pem("RSA PRIVATE KEY", "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"),
  ],
  ["PGP private key block", pem("PGP PRIVATE KEY BLOCK", "Version: GnuPG v2\n\n")],
  ["CRLF key", pem("RSA PRIVATE KEY").replaceAll("\n", "\r\n")],
  [
    "Google service-account JSON",
    JSON.stringify(
      {
        type: "service_account",
        private_key_id: "0123456789abcdef0123456789abcdef01234567",
        private_key: pem("PRIVATE KEY"),
      },
      null,
      2,
    ),
  ],
  ["PuTTY key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n"],
  ["AWS access key id", `aws_access_key_id = ${token("AKIA", 16).toUpperCase()}\n`],
  ["AWS temporary key id", `"AccessKeyId": "${token("ASIA", 16).toUpperCase()}"`],
  ["GitHub classic token", `GITHUB_TOKEN=${token("ghp_", 36)}`],
  ["GitHub OAuth token", `token ${token("gho_", 36)}`],
  ["GitHub user token", token("ghu_", 36)],
  ["GitHub server token", token("ghs_", 36)],
  ["GitHub refresh token", token("ghr_", 36)],
  ["GitHub fine-grained token", `${token("github_pat_", 22)}_${token("", 59)}`],
  ["npm token", `//registry.npmjs.org/:_authToken=${token("npm_", 36)}\n`],
  ["Slack bot token", `SLACK=xoxb-123456789012-1234567890123-${token("", 24)}`],
  ["Slack user token", `xoxp-1234567890-1234567890-1234567890-${token("", 32)}`],
];

/** Content that must not be recognised. */
const ORDINARY: [string, string][] = [
  ["a PEM header in code", 'const header = "-----BEGIN PRIVATE KEY-----";\n'],
  [
    "a PEM template with an escaped newline",
    "`-----BEGIN PRIVATE KEY-----\\n${base64}\\n-----END PRIVATE KEY-----`",
  ],
  ["a public key", pem("PUBLIC KEY")],
  ["a certificate", pem("CERTIFICATE")],
  [
    "a key header without a body",
    "-----BEGIN RSA PRIVATE KEY-----\n-----END RSA PRIVATE KEY-----\n",
  ],
  ["AWS's documented example id", "AKIAIOSFODNN7EXAMPLE"],
  ["a placeholder AWS id", "AKIAXXXXXXXXXXXXXXXX"],
  ["a placeholder GitHub token", `ghp_${"x".repeat(36)}`],
  ["a token inside a longer word", `myghp_${token("", 36)}`],
  ["a token too short", token("ghp_", 30)],
  ["a token too long", token("npm_", 40)],
  ["prose", "Keep your PRIVATE KEY private; AKIA is a prefix; npm_config_cache is a variable.\n"],
];

Deno.test("isSecretName and isSecretPath match the widened secret rules case-insensitively", () => {
  const secrets = [
    ".env",
    ".env.local",
    "prod.env",
    ".envrc",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "ID_ED25519_SK",
    "deploy_rsa",
    "github_ed25519",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "terraform.tfstate",
    "terraform.tfstate.backup",
    "release.jks",
    "debug.keystore",
    "cert.p12",
    "cert.pfx",
    "putty.ppk",
    "server.key",
    "server.PEM",
    "credentials",
    "application_default_credentials.json",
  ];
  for (const name of secrets) {
    assert(isSecretName(name), name);
    assert(isSecretPath(`home/me/${name}`), `home/me/${name}`);
  }
  const paths = [
    ".kube/config",
    "home/me/.KUBE/config",
    ".docker/config.json",
    ".aws/credentials",
    ".config/gcloud/credentials.db",
    ".config/gcloud/access_tokens.db",
    ".config/gcloud/legacy_credentials/me@example.com/adc.json",
  ];
  for (const path of paths) assert(isSecretPath(path), path);
  const ordinary = [
    "id_rsa.pub",
    "deploy_rsa.pub",
    "environment.ts",
    "config",
    "kube/config",
    "app/config",
    "docker/config.json",
    ".docker/daemon.json",
    "tfstate.md",
    "keystore.md",
    "npmrc.md",
    "gcloud/README.md",
  ];
  for (const path of ordinary) assert(!isSecretPath(path), path);
});

Deno.test("SecretScanner recognises private keys and tokens and leaves ordinary text alone", () => {
  for (const [what, text] of SECRETS) assert(scanText(text) !== null, `missed ${what}`);
  for (const [what, text] of ORDINARY) {
    assertEquals(scanText(text), null, `${what} taken for a secret: ${text}`);
  }
  assertEquals(scanText(pem("OPENSSH PRIVATE KEY")), "private key");
  assertEquals(scanText(token("ghp_", 36)), "GitHub token");
  assertEquals(scanText(token("npm_", 36)), "npm token");
});

Deno.test("SecretScanner finds a secret split across two chunks at every position", () => {
  for (const [what, text] of SECRETS) {
    const bytes = encoder.encode(`${"filler line\n".repeat(50)}${text}\nmore filler\n`);
    for (let cut = 0; cut <= bytes.length; cut += 1) {
      const scanner = new SecretScanner();
      scanner.update(bytes.subarray(0, cut));
      scanner.update(bytes.subarray(cut));
      assert(scanner.found !== null, `${what} missed when cut at byte ${cut}`);
    }
  }
});

Deno.test("ctxsnap's own sources and docs are not taken for secrets", async () => {
  const root = new URL("../../", import.meta.url);
  for (const path of ["lib/crypto/ed25519.ts", "lib/keys/identity.ts", "docs/FORMAT.md"]) {
    assertEquals(scanText(await Deno.readTextFile(new URL(path, root))), null, path);
  }
});

// ---------------------------------------------------------------------------
// Capture, in-process

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

interface Ws {
  root: string;
  ws: string;
  store: string;
  config: string;
  cli(...args: string[]): Promise<Run>;
  write(path: string, text: string): Promise<void>;
}

async function withWorkspace(fn: (w: Ws) => Promise<void>): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-secrets-" }));
  const w: Ws = {
    root,
    ws: join(root, "ws"),
    store: join(root, "store"),
    config: join(root, "config"),
    async cli(...args) {
      return await runMain(["--store", w.store, ...args], { config: w.config });
    },
    async write(path, text) {
      await Deno.mkdir(dirname(join(w.ws, path)), { recursive: true });
      await Deno.writeTextFile(join(w.ws, path), text);
    },
  };
  await Deno.mkdir(w.ws);
  await w.write("README.md", "# a project\n");
  try {
    assertEquals((await w.cli("init", "--workspace", w.ws)).code, 0);
    await fn(w);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

async function create(w: Ws, ...args: string[]) {
  const run = await w.cli("create", "--json", ...args);
  assertEquals(run.code, 0, run.stderr);
  return { ...JSON.parse(run.stdout), stderr: run.stderr };
}

function storedBlob(w: Ws, text: string): boolean {
  const db = new DatabaseSync(join(w.store, "index.db"), { readOnly: true });
  try {
    return db.prepare("SELECT 1 FROM objects WHERE id = ?").get(sha256Hex(encoder.encode(text))) !==
      undefined;
  } finally {
    db.close();
  }
}

const KEY = pem("OPENSSH PRIVATE KEY");

/**
 * Lets the files just written age past the stat cache's racy window (ctime
 * has whole-second granularity on some filesystems), so that the rows the
 * next capture records are trusted by the capture after it.
 */
function ageFiles(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1100));
}
const GH = `export GH_TOKEN=${token("ghp_", 36)}\n`;

Deno.test("create leaves secrets out by name and by content, names them on stderr and in --json, and stores none of their bytes", async () => {
  await withWorkspace(async (w) => {
    const byName = [".env", "deploy/id_rsa", ".kube/config", "infra/terraform.tfstate", ".npmrc"];
    for (const path of byName) await w.write(path, `secret of ${path}\n`);
    await w.write("notes/harmless.txt", KEY);
    await w.write("scripts/env.sh", GH);
    await w.write("src/main.ts", "export const x = 1;\n");
    const result = await create(w, "-m", "first");
    const expected = [
      { path: ".env", reason: "secret" },
      { path: ".kube/config", reason: "secret" },
      { path: ".npmrc", reason: "secret" },
      { path: "deploy/id_rsa", reason: "secret" },
      { path: "infra/terraform.tfstate", reason: "secret" },
      { path: "notes/harmless.txt", reason: "secret_content" },
      { path: "scripts/env.sh", reason: "secret_content" },
    ];
    assertEquals(result.secrets, expected);
    assertEquals(result.workspace.files, 2);
    assert(
      result.stderr.includes(
        "ctxsnap: left out 7 secret file(s): .env, .kube/config, .npmrc, deploy/id_rsa, " +
          "infra/terraform.tfstate, notes/harmless.txt, scripts/env.sh",
      ),
      result.stderr,
    );
    for (const text of [KEY, GH]) assert(!storedBlob(w, text), "a secret's bytes were stored");
    // show --skipped, as text and JSON.
    const shown = await w.cli("show", result.id, "--skipped");
    assertEquals(shown.code, 0, shown.stderr);
    assert(/^secret_content +notes\/harmless\.txt$/m.test(shown.stdout), shown.stdout);
    assert(/^secret +\.env$/m.test(shown.stdout), shown.stdout);
    const json = JSON.parse((await w.cli("show", result.id, "--skipped", "--json")).stdout);
    assertEquals(json.id, result.id);
    for (const entry of expected) {
      assert(
        json.skipped.some((s: { path: string; reason: string }) =>
          s.path === entry.path && s.reason === entry.reason
        ),
        JSON.stringify(entry),
      );
    }
    // The workspace as it is now matches the snapshot: diff scans content the same way.
    const diff = await w.cli("diff", result.id);
    assert(diff.stdout.includes("no differences"), diff.stdout);
    // No credential reaches a published bundle.
    const bundle = join(w.root, "out.ctxbundle");
    assertEquals((await w.cli("publish", result.id, "--with-workspace", "--out", bundle)).code, 0);
    const published = new TextDecoder("latin1").decode(await Deno.readFile(bundle));
    for (const needle of ["BEGIN OPENSSH PRIVATE KEY", "ghp_", "secret of"]) {
      assert(!published.includes(needle), `the bundle holds ${needle}`);
    }
  });
});

Deno.test("a key split across the 1 MiB read chunks of a large file is found (streamed capture)", async () => {
  await withWorkspace(async (w) => {
    const mib = 1024 * 1024;
    // 5 MiB: above the 4 MiB inline limit, so the file streams in 1 MiB chunks to a temp file.
    const before = "x".repeat(mib - 40) + "\n";
    const after = "y".repeat(4 * mib) + "\n";
    await w.write("data/dump.sql", before + KEY + after);
    const result = await create(w);
    assertEquals(result.secrets, [{ path: "data/dump.sql", reason: "secret_content" }]);
    assert(!storedBlob(w, before + KEY + after));
    const tmp = [...Deno.readDirSync(join(w.store, "tmp"))].filter((e) => e.name !== "stamp");
    assertEquals(tmp, [], "the streamed temp file was left behind");
  });
});

Deno.test("a file left out as secret_content stays out on recapture while the stat cache is in use", async () => {
  await withWorkspace(async (w) => {
    await w.write("notes/keys.txt", KEY);
    await w.write("a.txt", "alpha\n");
    await ageFiles();
    const first = await create(w);
    assertEquals(first.secrets, [{ path: "notes/keys.txt", reason: "secret_content" }]);
    const second = await create(w);
    assert(second.capture.reused >= 2, `the stat cache was not in use: ${second.capture.reused}`);
    assertEquals(second.secrets, [{ path: "notes/keys.txt", reason: "secret_content" }]);
    // Changed to harmless content, it is captured.
    await w.write("notes/keys.txt", "no longer a key\n");
    const third = await create(w);
    assertEquals(third.secrets, []);
  });
});

Deno.test("stat-cache rows from a capture under other secret rules are not trusted", async () => {
  await withWorkspace(async (w) => {
    await w.write("notes/keys.txt", KEY);
    await ageFiles();
    // A capture made without the content rules (as an older ctxsnap did) records the file…
    const store = Store.open(w.store);
    try {
      const old = store.transaction(
        "capture",
        () => captureWorkspace(store, { scanContent: false }),
      );
      assert(old.tree.entries.some((e) => e.path === "notes/keys.txt"));
    } finally {
      store.close();
    }
    // …and the next capture under the current rules still reads and leaves it out.
    const result = await create(w);
    assertEquals(result.secrets, [{ path: "notes/keys.txt", reason: "secret_content" }]);
  });
});

Deno.test("the store's allow-secrets list re-includes exact paths, and a file taken off it is scanned again", async () => {
  await withWorkspace(async (w) => {
    await create(w); // a first capture, so the next ones run under the current rules
    await w.write("tests/fixtures/id_rsa", "fixture key\n");
    await w.write("tests/fixtures/key.txt", KEY);
    await w.write(".env", "TOKEN=1\n");
    const list = join(w.store, "allow-secrets");
    await Deno.writeTextFile(
      list,
      "# test fixtures\ntests/fixtures/id_rsa\ntests/fixtures/key.txt\n",
    );
    assertEquals(parseAllowSecrets(await Deno.readTextFile(list)).size, 2);
    await ageFiles();
    const allowed = await create(w);
    assertEquals(allowed.secrets, [{ path: ".env", reason: "secret" }]);
    assertEquals(allowed.workspace.files, 3);
    await Deno.writeTextFile(list, "tests/fixtures/id_rsa\n");
    const again = await create(w);
    assertEquals(again.capture.reused, 1, "README.md was not taken from the stat cache");
    assertEquals(again.secrets, [
      { path: ".env", reason: "secret" },
      { path: "tests/fixtures/key.txt", reason: "secret_content" },
    ]);
  });
});

Deno.test("an allow-secrets list that others may write, or a symlink, is refused with the store (exit 1)", async () => {
  await withWorkspace(async (w) => {
    await w.write(".env", "TOKEN=1\n");
    const list = join(w.store, "allow-secrets");
    await Deno.writeTextFile(list, ".env\n");
    await Deno.chmod(list, 0o666);
    const open = await w.cli("create");
    assertEquals(open.code, 1, open.stderr);
    assert(open.stderr.includes("writable by everyone"), open.stderr);
    await Deno.remove(list);
    await Deno.writeTextFile(join(w.root, "elsewhere"), ".env\n");
    await Deno.symlink(join(w.root, "elsewhere"), list);
    const linked = await w.cli("create");
    assertEquals(linked.code, 1, linked.stderr);
    assert(linked.stderr.includes("symbolic link"), linked.stderr);
    await Deno.remove(list);
    assertEquals(JSON.parse((await w.cli("list", "--json")).stdout).snapshots.length, 0);
  });
});

Deno.test("readAllowSecrets refuses a list writable by group or others on its own, without the store's path check", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-allow-" });
  try {
    const list = join(dir, "allow-secrets");
    await Deno.writeTextFile(list, ".env\n");
    for (const mode of [0o620, 0o602]) {
      await Deno.chmod(list, mode);
      assertThrows(() => readAllowSecrets(dir), Error, "is writable by group or others");
    }
    await Deno.chmod(list, 0o600);
    assertEquals([...readAllowSecrets(dir)], [".env"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a hostile .ctxsnapignore or .gitignore cannot re-include a secret", async () => {
  await withWorkspace(async (w) => {
    await w.write(".ctxsnapignore", "!.env\n!id_ed25519\n!notes.txt\n");
    await w.write(".gitignore", "!.env\n");
    await w.write(".env", "TOKEN=1\n");
    await w.write("id_ed25519", "key\n");
    await w.write("notes.txt", KEY);
    const result = await create(w);
    assertEquals(result.secrets, [
      { path: ".env", reason: "secret" },
      { path: "id_ed25519", reason: "secret" },
      { path: "notes.txt", reason: "secret_content" },
    ]);
  });
});

/** An armored PGP private key as `gpg --export-secret-keys --armor` writes it: many headers, 64-column lines. */
const PGP_ARMORED = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n" +
  "Comment: User-ID:\tAlice Example <alice@example.org>\n" +
  "Comment: Created:\t2026-01-01 12:00\n" +
  "Comment: Type:\t255-bit EdDSA (secret key available)\n" +
  "Comment: Usage:\tSigning & Certification\n" +
  "Comment: Fingerprint:\t0123 4567 89AB CDEF 0123  4567 89AB CDEF 0123 4567\n" +
  "\n" +
  "lFgE\nZ3kQ9mX1pL7rT5vB2nC8wD4yF6hJ0sGaZ3kQ9mX1pL7rT5vB2nC8wD4yF6hJ0sG\n" +
  "=AbCd\n-----END PGP PRIVATE KEY BLOCK-----\n";

Deno.test("SecretScanner recognises an armored PGP private-key block with many headers and short lines", () => {
  assertEquals(scanText(PGP_ARMORED), "private key");
  assertEquals(scanText(PGP_ARMORED.replaceAll("\n", "\r\n")), "private key");
  assertEquals(scanText(PGP_ARMORED.replace("PRIVATE KEY", "SECRET KEY")), "private key");
  assertEquals(scanText(PGP_ARMORED.replaceAll("PRIVATE KEY", "PUBLIC KEY")), null);
  assertEquals(scanText('const h = "-----BEGIN PGP PRIVATE KEY BLOCK-----";\n'), null);
});

Deno.test("create leaves out private.asc and .vault-token by name and a PGP key block by content", async () => {
  await withWorkspace(async (w) => {
    await w.write("keys/private.asc", "anything\n");
    await w.write(".vault-token", "hvs.CAESIJ-not-a-real-token\n");
    await w.write("backup/alice.txt", PGP_ARMORED);
    const result = await create(w, "-m", "keys");
    assertEquals(result.secrets, [
      { path: ".vault-token", reason: "secret" },
      { path: "backup/alice.txt", reason: "secret_content" },
      { path: "keys/private.asc", reason: "secret" },
    ]);
    assert(!storedBlob(w, PGP_ARMORED), "the PGP key's bytes were stored");
  });
});

Deno.test("create refuses a reason over 1,024 characters even when the workspace is unchanged", async () => {
  await withWorkspace(async (w) => {
    await create(w, "-m", "first");
    const long = await w.cli("create", "--json", "-m", "x".repeat(1025));
    assertEquals(long.code, 2, long.stdout + long.stderr);
    assert(long.stderr.includes("reason"), long.stderr);
    const withSource = await w.cli("create", "--source", "ci:1", "-m", "ok");
    assertEquals(withSource.code, 0, withSource.stderr);
    const again = await w.cli("create", "--source", "ci:1", "-m", "y".repeat(2000));
    assertEquals(again.code, 2, again.stdout + again.stderr);
  });
});

Deno.test("SecretScanner recognises a ctxsnap hook token (as in .claude/settings.local.json) and not its prefix alone", () => {
  const token = `ctxsnap_hook_${"0123456789abcdef".repeat(4)}`;
  const settings = JSON.stringify({ headers: { Authorization: `Bearer ${token}` } }, null, 2);
  assertEquals(scanText(settings), "ctxsnap hook token");
  assertEquals(scanText('const prefix = "ctxsnap_hook_";'), null);
  assertEquals(scanText(`x${token}`), null, "inside a longer word it is not one");
});

Deno.test("secretPathRulesReach() is false only for directories whose every child isSecretPath() judges by its name alone", () => {
  const dirs = [
    "",
    "src",
    "home/me",
    ".kube",
    "home/.KUBE",
    ".docker",
    "x/.Docker",
    "gcloud",
    ".config/gcloud",
    ".config/gcloud/legacy_credentials",
    ".config/GCLOUD/Legacy_Credentials/me@example.com",
    "gcloud/legacy_credentials/a/b",
    "kube",
    "docker",
    "gcloudx",
    "legacy_credentials",
    "x/gcloud/legacy_credentialsx",
  ];
  const names = [
    "config",
    "CONFIG.json",
    "config.json",
    "credentials.db",
    "access_tokens.db",
    "adc.json",
    "legacy_credentials",
    "README.md",
    ".env",
    "id_rsa",
  ];
  let reached = 0;
  for (const dir of dirs) {
    const reach = secretPathRulesReach(dir);
    if (reach) reached += 1;
    for (const name of names) {
      const path = dir === "" ? name : `${dir}/${name}`;
      if (!reach) assertEquals(isSecretPath(path), isSecretName(name), path);
    }
  }
  // Every directory a two-segment or legacy-credentials rule names is reached.
  for (
    const dir of [
      ".kube",
      "home/.KUBE",
      ".docker",
      "gcloud",
      ".config/gcloud/legacy_credentials/me",
    ]
  ) {
    assert(secretPathRulesReach(dir), dir);
  }
  assert(reached < dirs.length, "ordinary directories are not reached");
});

Deno.test("walkWorkspace() leaves out secrets named by their directory at any depth, as isSecretPath() says", async () => {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-secret-dirs-" });
  try {
    const files = [
      "home/.kube/config",
      ".docker/config.json",
      "a/gcloud/credentials.db",
      "a/GCloud/legacy_credentials/me/x/adc.json",
      "ok/config",
      "ok/legacy_credentials/adc.json",
    ];
    for (const file of files) {
      await Deno.mkdir(join(dir, file, ".."), { recursive: true });
      await Deno.writeTextFile(join(dir, file), "plain text\n");
    }
    const items = [...walkWorkspace(dir)];
    for (const file of files) {
      const item = items.find((i) => i.path === file)!;
      const secret = isSecretPath(file);
      assertEquals(item.kind === "skip" && item.reason === "secret", secret, file);
    }
    assertEquals(items.filter((i) => i.kind === "skip").length, 4);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
