/**
 * lean-ctx interop: `verify`, `import`, `show`, `list`,
 * `verify --all`, `restore` and `publish --format lean-ctx` on lean-ctx
 * CONTEXT_SNAPSHOT_V1 files, lean-ctx keys, and the roi/lineage/ledger slices
 * of ctxsnap's own body.
 *
 * The corpus in tests/fixtures/leanctx/ was written by lean-ctx 3.9.18's own
 * types and serializer; every file gives the outcome cases.json records. Files
 * ctxsnap writes are checked by an independent re-implementation of the rules
 * in this file (JSON.parse, its own float and pretty writers, node:crypto) and
 * by `b3sum` and `openssl pkeyutl -verify -rawin`.
 *
 * Commands run in-process through `main()`; each "machine" has its own store
 * and CTXSNAP_CONFIG_DIR (set around each call).
 *
 * @module
 */
import { createHash, createPublicKey, verify as nodeVerify } from "node:crypto";
import { blake3 } from "@noble/hashes/blake3.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { DatabaseSync } from "node:sqlite";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { main } from "../../lib/cli/main.ts";
import { keyIdOf, publicKeyFromSeed, sign } from "../../lib/crypto/ed25519.ts";
import { fromHex, toHex } from "../../lib/encoding/hex.ts";
import {
  checkLeanCtxBytes,
  formatF64,
  leanCtxCanonicalBody,
  leanCtxFileText,
  leanCtxSigningMessage,
  type LeanCtxSnapshot,
  newLeanCtxSnapshot,
  signLeanCtx,
} from "../../lib/share/leanctx.ts";
import { parseRawJson } from "../../lib/share/_leanctx_json.ts";
import { mergeLeanCtxSession } from "../../lib/share/leanctx_restore.ts";
import {
  emptyContext,
  emptyCursors,
  emptyFacets,
  SNAPSHOT_SCHEMA,
  SNAPSHOT_SCHEMA_V2,
  type SnapshotBody,
  validateBody,
} from "../../lib/format/body.ts";
import { signingMessage, snapshotId } from "../../lib/format/envelope.ts";
import type { Signer } from "../../lib/format/envelope.ts";
import { assert, assertEquals } from "../_assert.ts";
import { editBehindCtxsnap, exists } from "../_util.ts";
import { expectCode, tempWorkspace } from "../_cli.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "leanctx");

interface Case {
  file: string;
  outcome: "valid" | "unsigned" | "tampered";
  id?: string;
  signer?: string;
  signer_key?: string;
  kind?: string;
  fails?: string[];
  original_id?: string;
  original_signer?: string;
  lean_ctx_import: string;
  features?: string[];
}
const CORPUS = JSON.parse(Deno.readTextFileSync(join(FIXTURES, "cases.json")));
const CASES: Case[] = CORPUS.cases;
const KEYS: { name: string; public_key: string; pem: string; seed?: string }[] = CORPUS.keys;

function fixture(name: string): string {
  return join(FIXTURES, name);
}
function fixtureText(name: string): string {
  return Deno.readTextFileSync(fixture(name));
}
function pemOf(publicKeyHex: string): string {
  return fixture(KEYS.find((k) => k.public_key === publicKeyHex)!.pem);
}

// ---------------------------------------------------------------------------
// In-process CLI and machines

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  // deno-lint-ignore no-explicit-any
  json(): any;
}

/** Runs `main(args)` in-process with CTXSNAP_CONFIG_DIR set to `config` for the run. */
async function ctxsnap(args: string[], config: string): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    write: (fd, text) =>
      void (fd === 1 ? out : err).push(
        typeof text === "string" ? text : new TextDecoder().decode(text),
      ),
    env: { ...Deno.env.toObject(), CTXSNAP_CONFIG_DIR: config },
    cwd: Deno.cwd(),
  });
  const stdout = out.join("");
  const stderr = err.join("");
  return {
    code,
    stdout,
    stderr,
    json() {
      try {
        return JSON.parse(stdout);
      } catch {
        throw new Error(`ctxsnap ${args.join(" ")} printed no JSON:\n${stdout}\n${stderr}`);
      }
    },
  };
}

function expect(run: Run, code: number, what: string): Run {
  if (run.code !== code) {
    throw new Error(
      `${what}: expected exit ${code}, got ${run.code}\nstdout: ${
        run.stdout.slice(0, 3000)
      }\nstderr: ${run.stderr.slice(0, 3000)}`,
    );
  }
  return run;
}

interface Machine {
  root: string;
  ws: string;
  store: string;
  config: string;
  run(args: string[]): Promise<Run>;
}

async function withMachines(n: number, fn: (...machines: Machine[]) => Promise<void>) {
  const made: Machine[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "ctxsnap-leanctx-" }));
      const ws = join(root, "ws");
      await Deno.mkdir(ws);
      await Deno.writeTextFile(join(ws, "a.txt"), "alpha\n");
      const store = join(ws, ".ctxsnap");
      const config = join(root, "config");
      const m: Machine = {
        root,
        ws,
        store,
        config,
        run: (args) => ctxsnap(["--store", store, ...args], config),
      };
      expect(await m.run(["init", "--workspace", ws, "--json"]), 0, "init");
      made.push(m);
    }
    await fn(...made);
  } finally {
    for (const m of made) {
      await new Deno.Command("chmod", { args: ["-R", "u+rwX", m.root] }).output();
      await Deno.remove(m.root, { recursive: true });
    }
  }
}

/** Counts of lean-ctx rows and operations in a store (read-only). */
function storeCounts(m: Machine): { lean: number; ops: number; snapshots: number } {
  const db = new DatabaseSync(join(m.store, "index.db"), { readOnly: true });
  try {
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return {
      lean: count("SELECT count(*) AS n FROM leanctx_snapshots"),
      ops: count("SELECT count(*) AS n FROM operations"),
      snapshots: count("SELECT count(*) AS n FROM snapshots"),
    };
  } finally {
    db.close();
  }
}

async function signerOf(seedHex: string): Promise<Signer> {
  const seed = fromHex(seedHex, 32);
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}
const TEST_SIGNER = await signerOf("1b".repeat(32));

async function writeTemp(dir: string, name: string, data: string | Uint8Array): Promise<string> {
  const path = join(dir, name);
  if (typeof data === "string") await Deno.writeTextFile(path, data);
  else await Deno.writeFile(path, data);
  return path;
}

// ---------------------------------------------------------------------------
// The independent re-implementation of lean-ctx's rules (not ctxsnap's code)

const ORDER: Record<string, string[]> = {
  "": [
    "schema_version",
    "snapshot_id",
    "parent_id",
    "created_at",
    "lean_ctx_version",
    "git",
    "project",
    "roi",
    "lineage",
    "ledger",
    "session",
    "signature",
  ],
  git: ["commit", "branch", "dirty"],
  project: ["root_hash", "identity_hash"],
  roi: ["input_tokens", "output_tokens", "tokens_saved", "compression_rate"],
  lineage: ["items_recorded", "items"],
  "lineage.items": [
    "seq",
    "kind",
    "tool",
    "path",
    "input_tokens",
    "output_tokens",
    "compression_ratio",
    "content_hash",
  ],
  ledger: ["window_size", "total_tokens_sent", "total_tokens_saved", "items"],
  "ledger.items": ["path", "state", "phi", "sent_tokens", "original_tokens"],
  session: ["session_id", "task", "decisions", "files_touched", "progress_pct"],
  signature: ["algorithm", "public_key", "value"],
};
const FLOAT_KEYS = new Set(["compression_rate", "compression_ratio", "phi"]);

/** serde_json's f64 text, from `toExponential` (ctxsnap's writer starts from `String`). */
function refFloat(x: number): string {
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exponent] = x.toExponential().split("e") as [string, string];
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  const e = parseInt(exponent, 10);
  let text: string;
  if (e < -5 || e > 15) {
    text = `${digits[0]}${digits.length > 1 ? "." + digits.slice(1) : ""}e${e < 0 ? "-" : "+"}${
      Math.abs(e)
    }`;
  } else if (e < 0) text = `0.${"0".repeat(-e - 1)}${digits}`;
  else {
    const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
    text = `${whole}.${digits.slice(e + 1) || "0"}`;
  }
  return (negative ? "-" : "") + text;
}

/** Serializes a JSON.parse value like serde_json (compact or pretty), floats by key name. */
function refSerialize(value: unknown, pretty: boolean, key = "", indent = ""): string {
  if (value === null || typeof value === "boolean") return String(value);
  if (typeof value === "number") {
    return FLOAT_KEYS.has(key) ? refFloat(value) : String(value);
  }
  if (typeof value === "string") return JSON.stringify(value); // same escapes as serde_json
  const inner = indent + "  ";
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    const items = value.map((v) => refSerialize(v, pretty, key, inner));
    return pretty ? `[\n${items.map((i) => inner + i).join(",\n")}\n${indent}]` : `[${items}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return "{}";
  const parts = entries.map(([k, v]) =>
    `${JSON.stringify(k)}:${pretty ? " " : ""}${refSerialize(v, pretty, k, inner)}`
  );
  return pretty ? `{\n${parts.map((p) => inner + p).join(",\n")}\n${indent}}` : `{${parts}}`;
}

/** Checks every object's key order against the declared field order. */
function refCheckOrder(value: unknown, path: string): void {
  if (Array.isArray(value)) {
    for (const item of value) refCheckOrder(item, path);
    return;
  }
  if (value === null || typeof value !== "object") return;
  const expected = ORDER[path];
  assert(expected !== undefined, `unexpected object at ${path}`);
  assertEquals(Object.keys(value), expected, `field order of ${path || "the snapshot"}`);
  for (const [k, v] of Object.entries(value)) refCheckOrder(v, path === "" ? k : `${path}.${k}`);
}

function hasTool(tool: string): boolean {
  try {
    return new Deno.Command("which", { args: [tool], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}
/** b3sum and openssl: where missing, the checks fall back to @noble/hashes and node:crypto. */
const HAS_TOOLS = hasTool("b3sum") && hasTool("openssl");

async function run(cmd: string, args: string[], stdin?: Uint8Array): Promise<string> {
  const child = new Deno.Command(cmd, { args, stdin: "piped", stdout: "piped", stderr: "piped" })
    .spawn();
  const writer = child.stdin.getWriter();
  if (stdin !== undefined) await writer.write(stdin);
  await writer.close();
  const out = await child.output();
  const text = decoder.decode(out.stdout) + decoder.decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed: ${text}`);
  return text;
}

function spkiPem(publicKeyHex: string): string {
  const der = new Uint8Array([...fromHex("302a300506032b6570032100"), ...fromHex(publicKeyHex)]);
  const b64 = btoa(String.fromCharCode(...der));
  return `-----BEGIN PUBLIC KEY-----\n${b64}\n-----END PUBLIC KEY-----\n`;
}

/**
 * Verifies a lean-ctx file by the published rules alone: field order, the
 * file is the pretty form of its content, `b3sum` of the canonical body is
 * the id, and the signature over hex SHA-256("ctxsnapshot-sign-v1:" + id)
 * verifies with node:crypto and with `openssl pkeyutl -verify -rawin`.
 * Returns the parsed file.
 */
// deno-lint-ignore no-explicit-any
async function independentVerify(text: string, tmp: string): Promise<any> {
  const parsed = JSON.parse(text);
  refCheckOrder(parsed, "");
  assertEquals(refSerialize(parsed, true), text, "the file is the pretty form of its content");
  const body = refSerialize({ ...parsed, snapshot_id: "", signature: null }, false);
  const b3 = HAS_TOOLS
    ? (await run("b3sum", ["--no-names"], encoder.encode(body))).trim()
    : bytesToHex(blake3(encoder.encode(body)));
  assertEquals(b3, parsed.snapshot_id, "b3sum of the canonical body is the id");
  const message = createHash("sha256").update(`ctxsnapshot-sign-v1:${parsed.snapshot_id}`).digest(
    "hex",
  );
  assert(parsed.signature !== null, "the file is signed");
  assertEquals(parsed.signature.algorithm, "ed25519");
  const pem = spkiPem(parsed.signature.public_key);
  const signature = fromHex(parsed.signature.value, 64);
  assert(
    nodeVerify(null, encoder.encode(message), createPublicKey(pem), signature),
    "node:crypto verifies the signature",
  );
  if (!HAS_TOOLS) return parsed; // CI installs b3sum and openssl (.ci/run)
  const msgFile = await writeTemp(tmp, "msg", message);
  const sigFile = await writeTemp(tmp, "sig", signature);
  const pemFile = await writeTemp(tmp, "pub.pem", pem);
  const out = await run("openssl", [
    "pkeyutl",
    "-verify",
    "-pubin",
    "-inkey",
    pemFile,
    "-rawin",
    "-in",
    msgFile,
    "-sigfile",
    sigFile,
  ]);
  assert(out.includes("Signature Verified Successfully"), `openssl: ${out}`);
  return parsed;
}

// ===========================================================================
// 1. The float writer and the reader

Deno.test("lean-ctx floats are written exactly as serde_json writes them", () => {
  const vectors: [number, string][] = [
    [0, "0.0"],
    [-0, "-0.0"],
    [1, "1.0"],
    [100, "100.0"],
    [0.1, "0.1"],
    [0.026, "0.026"],
    [0.00001, "0.00001"],
    [0.000012, "0.000012"],
    [1e-6, "1e-6"],
    [2.5e-7, "2.5e-7"],
    [0.30000000000000004, "0.30000000000000004"],
    [1e15, "1000000000000000.0"],
    [123456789012345.6, "123456789012345.6"],
    [1e16, "1e+16"],
    [1.25e16, "1.25e+16"],
    [9007199254740992, "9007199254740992.0"],
    [1e21, "1e+21"],
    [1.2345678901234568e-300, "1.2345678901234568e-300"],
    [5e-324, "5e-324"],
    [1.7976931348623157e308, "1.7976931348623157e+308"],
    [-38.46153846153846, "-38.46153846153846"],
  ];
  for (const [value, text] of vectors) {
    assertEquals(formatF64(value), text, `formatF64(${value})`);
    assertEquals(refFloat(value), text, `the test's own writer for ${value}`);
  }
  // Every float literal lean-ctx itself wrote in the corpus comes back byte for byte.
  let seen = 0;
  for (const c of CASES.filter((c) => c.outcome !== "tampered")) {
    for (
      const m of fixtureText(c.file).matchAll(
        /"(?:compression_rate|compression_ratio|phi)": ([^,\n]+)/g,
      )
    ) {
      if (m[1] === "null") continue;
      assertEquals(formatF64(Number(m[1])), m[1], `${c.file}: ${m[1]}`);
      seen++;
    }
  }
  assert(seen > 100, `only ${seen} float literals in the corpus`);
  // Random doubles: the shortest form reads back exactly, and both writers agree.
  const view = new DataView(new ArrayBuffer(8));
  for (let i = 0; i < 20_000; i++) {
    view.setUint32(0, (Math.random() * 2 ** 32) >>> 0);
    view.setUint32(4, (Math.random() * 2 ** 32) >>> 0);
    const x = view.getFloat64(0);
    if (!Number.isFinite(x)) continue;
    const text = formatF64(x);
    assert(Object.is(Number(text), x), `${text} does not read back as ${x}`);
    assertEquals(text, refFloat(x), `writers disagree on ${x}`);
  }
});

Deno.test("the lean-ctx reader keeps number literals and refuses what serde_json refuses", () => {
  const ok = parseRawJson(
    encoder.encode('{"a":[0.0,0,-1e-6,18446744073709551616],"b":"\\u00e9\\/"}'),
  );
  assert(ok !== null && typeof ok === "object" && !Array.isArray(ok));
  for (
    const bad of [
      '{"a":1,"a":2}',
      '{"a":"\\ud800"}',
      '{"a":01}',
      '{"a":1.}',
      '{"a":-}',
      '{"a":NaN}',
      '{"a":[1,]}',
      '{"a":1}x',
      '{"a":"\u0001"}',
      '{"a":"\\x"}',
      "[".repeat(65) + "]".repeat(65),
      `{"a":${"1".repeat(1025)}}`,
    ]
  ) {
    let refused = false;
    try {
      parseRawJson(encoder.encode(bad));
    } catch {
      refused = true;
    }
    assert(refused, `accepted ${bad.slice(0, 60)}`);
  }
  for (
    const bytes of [
      new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
      new Uint8Array([0x22, 0xff, 0x22]),
    ]
  ) {
    let refused = false;
    try {
      parseRawJson(bytes);
    } catch {
      refused = true;
    }
    assert(refused, "a BOM or invalid UTF-8 was accepted");
  }
});

// ===========================================================================
// 2. The corpus, both directions

Deno.test("lean-ctx's own vectors: canonical body, id, signing message and signatures (seeds 05 and 07)", async () => {
  const v1 = newLeanCtxSnapshot("2026-01-01T00:00:00Z", "9.9.9");
  assertEquals(leanCtxCanonicalBody(v1), fixtureText("v1-canonical-body.json"));
  const v1id = fixtureText("v1-id.txt").trim();
  assertEquals(v1id, CORPUS.vectors.v1.id);
  const v2 = JSON.parse(fixtureText("v2-signature.json"));
  assertEquals(decoder.decode(leanCtxSigningMessage(v1id)), v2.signing_message);
  const signed = await signLeanCtx(v1, await signerOf(v2.seed));
  assertEquals(signed.snapshot_id, v1id);
  assertEquals(signed.signature, v2.signature);
  // v3: the published file of lean-ctx's publish test, re-made byte for byte.
  const v3 = { ...newLeanCtxSnapshot("2026-06-28T00:00:00Z", "9.9.9") };
  v3.git = { commit: "abc1234", branch: null, dirty: false };
  const seed05 = KEYS.find((k) => k.name === "vector-seed05")!.seed!;
  assertEquals(
    leanCtxFileText(await signLeanCtx(v3, await signerOf(seed05))),
    fixtureText("c3656ed7f930.ctxsnapshot.json"),
  );
});

Deno.test("every corpus file gives its expected outcome through verify FILE (exit, verdict, id, signer, key id, failed checks)", async () => {
  const noConfig = await Deno.makeTempDir();
  try {
    for (const c of CASES) {
      const file = fixture(c.file);
      const signer = c.signer ?? c.original_signer ?? null;
      const bare = await ctxsnap(["verify", file, "--json"], noConfig);
      const report = bare.json();
      assertEquals(report.format, "lean-ctx", c.file);
      assertEquals(report.id, c.id ?? report.id, `${c.file}: id`);
      assertEquals(report.file, file);
      if (signer !== null) {
        assertEquals(report.signer.public_key, signer, `${c.file}: signer`);
        assertEquals(report.signer.key_id, keyIdOf(fromHex(signer, 32)), `${c.file}: key id`);
      } else assertEquals(report.signer, null);
      if (c.outcome === "valid") {
        assertEquals(
          [bare.code, report.verdict, report.layout],
          [3, "untrusted", "canonical"],
          c.file,
        );
        const pinned = await ctxsnap(
          ["verify", file, "--json", "--trust", pemOf(signer!)],
          noConfig,
        );
        assertEquals([pinned.code, pinned.json().verdict], [0, "trusted"], c.file);
        const text = await ctxsnap(["verify", file, "--trust", pemOf(signer!)], noConfig);
        assert(text.stdout.startsWith("OK: intact, signed by a trusted key"), text.stdout);
        for (const needle of ["lean-ctx", c.id!, signer!, keyIdOf(fromHex(signer!, 32))]) {
          assert(text.stdout.includes(needle), `${c.file}: human report lacks ${needle}`);
        }
      } else if (c.outcome === "unsigned") {
        assertEquals([bare.code, report.verdict, report.valid, report.trusted], [
          3,
          "unsigned",
          true,
          false,
        ]);
        assert(bare.stderr.includes("unsigned"), bare.stderr);
      } else if (c.fails!.length > 0) {
        // Tampered: exit 1 with exactly the failing checks, pinned or not.
        assertEquals([bare.code, report.verdict], [1, "tampered"], c.file);
        assertEquals(report.failed_checks, c.fails, `${c.file}: failed checks`);
        const pinned = await ctxsnap(
          ["verify", file, "--json", "--trust", pemOf(signer!)],
          noConfig,
        );
        assertEquals(pinned.code, 1, `${c.file} verified with its signer pinned`);
      } else {
        // Same values as a signed snapshot, written differently (as lean-ctx
        // itself accepts them): intact, and the report says the layout differs.
        assertEquals(report.failed_checks, [], c.file);
        assertEquals(report.layout, "non_canonical", c.file);
        const pinned = await ctxsnap(
          ["verify", file, "--json", "--trust", pemOf(signer!)],
          noConfig,
        );
        assertEquals([pinned.code, pinned.json().verdict], [0, "trusted"], c.file);
        const text = await ctxsnap(["verify", file, "--trust", pemOf(signer!)], noConfig);
        assert(text.stdout.includes("not lean-ctx's canonical pretty form"), text.stdout);
      }
    }
  } finally {
    await Deno.remove(noConfig, { recursive: true });
  }
});

Deno.test("every intact corpus file re-serializes to its own bytes, and the independent checker, b3sum and openssl accept the signed ones", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    for (const c of CASES.filter((c) => c.outcome !== "tampered")) {
      const text = fixtureText(c.file);
      const check = await checkLeanCtxBytes(encoder.encode(text));
      assertEquals(leanCtxFileText(check.snapshot), text, `${c.file}: written back`);
      assertEquals(check.computedId, c.id, c.file);
      if (c.outcome === "valid") await independentVerify(text, tmp);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

// ===========================================================================
// 3. Import, list, show, verify --all, publish: the corpus round trip

Deno.test("import keeps each lean-ctx file as itself on imported/<key id>, idempotently; publish writes it back byte for byte", async () => {
  await withMachines(1, async (m) => {
    const out = join(m.root, "out");
    await Deno.mkdir(out);
    for (const c of CASES.filter((c) => c.outcome === "valid")) {
      const file = fixture(c.file);
      const untrusted = await m.run(["import", file, "--json"]);
      expect(untrusted, 3, `import ${c.file} without trust`);
      const first = expect(
        await m.run(["import", file, "--trust", pemOf(c.signer!), "--json"]),
        0,
        c.file,
      )
        .json();
      assertEquals(first.format, "lean-ctx");
      assertEquals(first.primary, c.id);
      assertEquals(first.already_present, false);
      assertEquals(first.branch, `imported/${keyIdOf(fromHex(c.signer!, 32))}`);
      assertEquals(first.session, "main");
      const before = storeCounts(m);
      const again = expect(
        await m.run(["import", file, "--trust", pemOf(c.signer!), "--json"]),
        0,
        c.file,
      )
        .json();
      assertEquals(again.already_present, true);
      assertEquals(storeCounts(m), before, "a second import wrote something");
      // Published back: the same bytes, and still verifiable as itself.
      const target = join(out, c.file);
      expect(await m.run(["publish", c.id!.slice(0, 10), "--out", target]), 0, `publish ${c.file}`);
      assertEquals(await Deno.readFile(target), await Deno.readFile(file), `${c.file} round trip`);
      expect(
        await ctxsnap(["verify", target, "--trust", pemOf(c.signer!)], m.config),
        0,
        `verify ${c.file} after the round trip`,
      );
    }
    // The stored bytes are the file's own.
    const db = new DatabaseSync(join(m.store, "index.db"), { readOnly: true });
    try {
      for (const row of db.prepare("SELECT id, file FROM leanctx_snapshots").all()) {
        const c = CASES.find((c) => c.id === row.id)!;
        assertEquals(row.file as Uint8Array, await Deno.readFile(fixture(c.file)));
      }
    } finally {
      db.close();
    }
    // list --all and list --branch show them; verify --all re-checks them.
    const listed = expect(await m.run(["list", "--all", "--json"]), 0, "list").json().snapshots;
    assertEquals(listed.filter((s: { format: string }) => s.format === "lean-ctx").length, 9);
    const branch = `imported/${
      keyIdOf(fromHex(KEYS.find((k) => k.name === "signer-1")!.public_key, 32))
    }`;
    const onBranch = expect(await m.run(["list", "--branch", branch, "--json"]), 0, "list").json();
    assertEquals(onBranch.snapshots.length, 4);
    const all = await m.run(["verify", "--all", "--json"]);
    assertEquals(all.code, 3, "imported lean-ctx signers are not pinned in the config");
    const report = all.json();
    assertEquals(report.ok, true);
    assertEquals(report.lean_ctx.length, 9);
    assert(report.lean_ctx.every((l: { verdict: string }) => l.verdict === "untrusted"));
  });
});

Deno.test("show of an imported lean-ctx snapshot: task, decisions, files, git anchor, ROI, lineage and ledger, with control characters escaped", async () => {
  await withMachines(1, async (m) => {
    const c = CASES.find((c) => c.file === "db0a19ac599c.ctxsnapshot.json")!;
    expect(await m.run(["import", fixture(c.file), "--trust", pemOf(c.signer!)]), 0, "import");
    const json = expect(await m.run(["show", "db0a19", "--json"]), 0, "show").json();
    assertEquals(json.format, "lean-ctx");
    assertEquals(json.id, c.id);
    assert(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(json.imported_at), json.imported_at);
    const lean = JSON.parse(fixtureText(c.file));
    assertEquals(json.snapshot, lean, "show --json holds the file's content");
    const text = expect(await m.run(["show", "db0a19"]), 0, "show").stdout;
    for (
      const needle of [
        "task       Ship 🚀 snapshot publish before the café closes",
        "progress   27%",
        "  - Multi\\nline\\ndecision",
        "  - C:\\Users\\dev\\project\\lib.rs",
        "git        3c2fa5de23 hotfix/ümlaut dirty",
        "roi        input 8656560106799, output 2294143023010, saved 4155636288457 tokens; compression rate 0.3243500302567729",
        "lineage    68 recorded, 12 kept: shell 4, provider 3, read 3, other 2;",
        "ledger     window 32000, sent 66978, saved 45311; 3 items: excluded 1, included 1, stale 1",
      ]
    ) assert(text.includes(needle), `show lacks ${JSON.stringify(needle)}:\n${text}`);
    // No line carries a raw control character from the file.
    // deno-lint-ignore no-control-regex
    for (const line of text.split("\n")) assert(!/[\u0000-\u001f\u007f]/.test(line), line);
  });
});

Deno.test("import refuses tampered (exit 1), unsigned and untrusted (exit 3) lean-ctx files writing nothing; --allow-untrusted imports unsigned onto imported/unsigned", async () => {
  await withMachines(1, async (m) => {
    const before = storeCounts(m);
    for (const c of CASES.filter((c) => c.outcome === "tampered" && c.fails!.length > 0)) {
      const signer = c.original_signer!;
      const run = await m.run([
        "import",
        fixture(c.file),
        "--trust",
        pemOf(signer),
        "--allow-untrusted",
      ]);
      expect(run, 1, `import ${c.file}`);
      assert(run.stderr.includes("nothing was imported"), run.stderr);
    }
    for (const c of CASES.filter((c) => c.outcome === "unsigned")) {
      expect(await m.run(["import", fixture(c.file)]), 3, `import ${c.file}`);
    }
    assertEquals(storeCounts(m), before, "a refused import wrote something");
    const unsigned = CASES.find((c) => c.outcome === "unsigned")!;
    const ok = expect(
      await m.run(["import", fixture(unsigned.file), "--allow-untrusted", "--json"]),
      0,
      "import",
    )
      .json();
    assertEquals([ok.branch, ok.verdict, ok.signer], ["imported/unsigned", "unsigned", null]);
    // An unsigned lean-ctx snapshot is intact but never exit 0, stored or not.
    expect(await m.run(["verify", unsigned.id!.slice(0, 8)]), 3, "verify stored unsigned");
    expect(await m.run(["verify", "--all"]), 3, "verify --all with an unsigned lean-ctx snapshot");
    // A reordered-key file with the same content is the same snapshot.
    const reordered = CASES.find((c) => c.kind === "key-reorder")!;
    const r = expect(
      await m.run([
        "import",
        fixture(reordered.file),
        "--trust",
        pemOf(reordered.original_signer!),
        "--json",
      ]),
      0,
      "import reordered",
    ).json();
    assertEquals([r.primary, r.layout], [reordered.original_id, "non_canonical"]);
  });
});

Deno.test("verify --all and verify ID catch a stored lean-ctx file changed behind ctxsnap's back (exit 1)", async () => {
  await withMachines(1, async (m) => {
    const c = CASES.find((c) => c.file === "3707b221cfe2.ctxsnapshot.json")!;
    expect(await m.run(["import", fixture(c.file), "--trust", pemOf(c.signer!)]), 0, "import");
    expect(await m.run(["verify", c.id!, "--trust", pemOf(c.signer!)]), 0, "verify stored");
    const db = new DatabaseSync(join(m.store, "index.db"));
    try {
      const text = fixtureText(c.file).replace('"dirty": true', '"dirty": false');
      editBehindCtxsnap(db, "leanctx_snapshots", () => {
        db.prepare("UPDATE leanctx_snapshots SET file = ? WHERE id = ?").run(
          encoder.encode(text),
          c.id!,
        );
      });
    } finally {
      db.close();
    }
    const all = await m.run(["verify", "--all", "--json", "--trust", pemOf(c.signer!)]);
    expect(all, 1, "verify --all");
    const lean = all.json().lean_ctx[0];
    assertEquals([lean.verdict, lean.problems], ["tampered", ["id check failed"]]);
    expect(
      await m.run(["verify", c.id!.slice(0, 12), "--trust", pemOf(c.signer!)]),
      1,
      "verify ID",
    );
  });
});

// ===========================================================================
// 4. Hostile lean-ctx files

function signedSample(): string {
  return fixtureText("5bee6d811a8c.ctxsnapshot.json");
}

const HOSTILE: [string, () => Uint8Array | string][] = [
  [
    "an integer above 2^64 - 1",
    () => signedSample().replace(/"input_tokens": \d+/, '"input_tokens": 18446744073709551616'),
  ],
  [
    "a 400-digit integer",
    () => signedSample().replace(/"input_tokens": \d+/, `"input_tokens": 1${"0".repeat(400)}`),
  ],
  [
    "a float out of range",
    () => signedSample().replace(/"compression_rate": [^,\n]+/, '"compression_rate": 1e400'),
  ],
  [
    "a 2000-character number",
    () =>
      signedSample().replace(
        /"compression_rate": [^,\n]+/,
        `"compression_rate": 0.${"1".repeat(2000)}`,
      ),
  ],
  [
    "NaN written as null",
    () => signedSample().replace(/"compression_rate": [^,\n]+/, '"compression_rate": null'),
  ],
  [
    "NaN in a lineage item written as null",
    () => signedSample().replace(/"compression_ratio": [^,\n]+/, '"compression_ratio": null'),
  ],
  [
    "a bare NaN",
    () => signedSample().replace(/"compression_rate": [^,\n]+/, '"compression_rate": NaN'),
  ],
  ["a negative integer", () => signedSample().replace(/"seq": \d+/, '"seq": -1')],
  [
    "a fraction in an integer field",
    () => signedSample().replace(/"input_tokens": \d+/, '"input_tokens": 1.5'),
  ],
  [
    "an exponent in an integer field",
    () => signedSample().replace(/"input_tokens": \d+/, '"input_tokens": 1e3'),
  ],
  [
    "a string for a boolean",
    () => signedSample().replace(/"dirty": (true|false)/, '"dirty": "true"'),
  ],
  ["a string for an integer", () => signedSample().replace(/"seq": \d+/, '"seq": "1"')],
  [
    "progress_pct above 255",
    () => signedSample().replace(/"progress_pct": \d+/, '"progress_pct": 256'),
  ],
  [
    "a number in decisions",
    () => signedSample().replace(/"decisions": \[\n/, '"decisions": [\n      1,\n'),
  ],
  ["an array for git", () => signedSample().replace(/"git": \{[^}]*\}/, '"git": []')],
  [
    "a duplicate top-level key",
    () =>
      signedSample().replace(
        /("lean_ctx_version": [^\n]+\n)/,
        '$1  "lean_ctx_version": "9.9.9",\n',
      ),
  ],
  [
    "a duplicate nested key",
    () => signedSample().replace(/("dirty": (true|false))/, '"dirty": false,\n    $1'),
  ],
  [
    "an unknown field",
    () => signedSample().replace('"schema_version": 1,', '"schema_version": 1,\n  "extra": 1,'),
  ],
  ["a missing field", () => signedSample().replace(/\n {2}"parent_id": [^\n]+/, "")],
  [
    "deep nesting",
    () =>
      signedSample().replace(
        /"parent_id": [^\n]+,/,
        `"parent_id": ${"[".repeat(20000)}${"]".repeat(20000)},`,
      ),
  ],
  [
    "nesting one level too deep for the format",
    () => signedSample().replace(/"decisions": \[/, '"decisions": [["x"],'),
  ],
  ["a lone surrogate escape", () => signedSample().replace(/"task": "/, '"task": "\\ud800')],
  ["invalid UTF-8", () => {
    const bytes = encoder.encode(signedSample());
    const at = decoder.decode(bytes).indexOf('"task": "') + 9;
    return new Uint8Array([...bytes.subarray(0, at), 0xff, ...bytes.subarray(at)]);
  }],
  [
    "a byte order mark",
    () => new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode(signedSample())]),
  ],
  ["trailing content", () => signedSample() + "{}"],
  ["oversize (over 4 MiB)", () => signedSample().replace("{", "{" + " ".repeat(4 * 1024 * 1024))],
  ["schema_version 2", () => signedSample().replace('"schema_version": 1', '"schema_version": 2')],
  [
    "an unsupported signature algorithm",
    () => signedSample().replace('"algorithm": "ed25519"', '"algorithm": "rsa"'),
  ],
  [
    "an uppercase public key",
    () =>
      signedSample().replace(
        /"public_key": "([0-9a-f]+)"/,
        (_, k: string) => `"public_key": "${k.toUpperCase()}"`,
      ),
  ],
  [
    "a created_at that is not RFC 3339",
    () => signedSample().replace(/"created_at": "[^"]+"/, '"created_at": "yesterday"'),
  ],
];

Deno.test("hostile lean-ctx files (huge numbers, deep nesting, duplicate keys, NaN as null, wrong types, oversize, …) are refused with exit 1 and nothing written", async () => {
  await withMachines(1, async (m) => {
    const dir = join(m.root, "hostile");
    await Deno.mkdir(dir);
    const before = storeCounts(m);
    for (const [what, make] of HOSTILE) {
      const data = make();
      const original = signedSample();
      assert(typeof data !== "string" || data !== original, `${what}: the edit did not apply`);
      const file = await writeTemp(dir, "h.ctxsnapshot.json", data);
      const verify = await m.run(["verify", file, "--json"]);
      expect(verify, 1, `verify of ${what}`);
      assertEquals(verify.json().error?.exit, 1, `${what}: one JSON error document`);
      expect(await m.run(["import", file, "--allow-untrusted"]), 1, `import of ${what}`);
    }
    assertEquals(storeCounts(m), before, "a hostile import wrote something");
  });
});

Deno.test("a float changed by one ulp is tampered, even where lean-ctx's reader would not notice; value-equivalent rewrites verify", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const lean: LeanCtxSnapshot = newLeanCtxSnapshot("2026-05-05T05:05:05.505Z", "3.9.18");
    lean.lineage = {
      items_recorded: 1n,
      items: [{
        seq: 1n,
        kind: "read",
        tool: "ctx_read",
        path: "a é.rs",
        input_tokens: 193223n,
        output_tokens: 26799n,
        compression_ratio: 0.9999999999999999,
        content_hash: null,
      }],
    };
    lean.roi = { input_tokens: 10n, output_tokens: 4n, tokens_saved: 6n, compression_rate: 0.6 };
    const text = leanCtxFileText(await signLeanCtx(lean, TEST_SIGNER));
    await independentVerify(text, tmp);
    const trust = ["--trust", TEST_SIGNER.publicKeyHex];
    const verify = async (body: string) => {
      const file = await writeTemp(tmp, "f.json", body);
      return await ctxsnap(["verify", file, "--json", ...trust], tmp);
    };
    assertEquals((await verify(text)).code, 0);
    // One ulp down: 0.9999999999999998 (lean-ctx 3.9 reads both literals as the same double).
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, 0.9999999999999999);
    view.setBigUint64(0, view.getBigUint64(0) - 1n);
    const neighbour = formatF64(view.getFloat64(0));
    assertEquals(neighbour, "0.9999999999999998");
    const ulp = await verify(text.replace("0.9999999999999999", neighbour));
    assertEquals([ulp.code, ulp.json().failed_checks], [1, ["id"]]);
    // Re-serializations with the same values: reordered keys, 0.6 as 6e-1, an
    // escaped é, another indent, no newlines. Intact; the layout differs.
    const parsed = JSON.parse(text);
    const { roi, ...rest } = parsed;
    for (
      const variant of [
        JSON.stringify({ roi, ...rest }, null, 2).replace(
          '"compression_ratio": 0.9999999999999999',
          '"compression_ratio": 0.99999999999999990',
        ),
        text.replace('"compression_rate": 0.6', '"compression_rate": 6e-1'),
        text.replace('"compression_rate": 0.6', '"compression_rate": 0.60000000000000000001'),
        text.replace("a é.rs", "a \\u00e9.rs"),
        text.replaceAll("\n  ", "\n    "),
        JSON.stringify(parsed).replace('"input_tokens":10', '"input_tokens":10 '),
      ]
    ) {
      const run = await verify(variant);
      assertEquals([run.code, run.json().layout, run.json().id], [
        0,
        "non_canonical",
        parsed.snapshot_id,
      ]);
    }
    // Zero: the integer literal -0 is the value 0.0 to serde_json (intact), the
    // float -0.0 is another double (tampered).
    const zero = newLeanCtxSnapshot("2026-05-05T05:05:05Z", "3.9.18");
    const zeroText = leanCtxFileText(await signLeanCtx(zero, TEST_SIGNER));
    assertEquals(
      (await verify(zeroText.replace('"compression_rate": 0.0', '"compression_rate": -0'))).code,
      0,
    );
    const negative = await verify(
      zeroText.replace('"compression_rate": 0.0', '"compression_rate": -0.0'),
    );
    assertEquals([negative.code, negative.json().failed_checks], [1, ["id"]]);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("u64 values above 2^53 - 1 verify exactly, and show --json gives them as decimal strings", async () => {
  await withMachines(1, async (m) => {
    const lean = newLeanCtxSnapshot("2026-02-02T02:02:02.2Z", "3.9.18");
    lean.roi = {
      input_tokens: 18446744073709551615n,
      output_tokens: 9007199254740993n,
      tokens_saved: 9007199254740991n,
      compression_rate: 1e-300,
    };
    const signed = await signLeanCtx(lean, TEST_SIGNER);
    const text = leanCtxFileText(signed);
    assert(text.includes('"input_tokens": 18446744073709551615,'), text);
    const file = await writeTemp(m.root, "big.ctxsnapshot.json", text);
    expect(await m.run(["import", file, "--trust", TEST_SIGNER.publicKeyHex]), 0, "import");
    const roi =
      expect(await m.run(["show", signed.snapshot_id, "--json"]), 0, "show").json().snapshot
        .roi;
    assertEquals(roi, {
      input_tokens: "18446744073709551615",
      output_tokens: "9007199254740993",
      tokens_saved: 9007199254740991,
      compression_rate: 1e-300,
    });
    // One more than u64::MAX is refused; one less than the stored value is tampered.
    const over = await writeTemp(
      m.root,
      "over.json",
      text.replace("18446744073709551615", "18446744073709551616"),
    );
    expect(await m.run(["verify", over]), 1, "u64 overflow");
    const less = await writeTemp(
      m.root,
      "less.json",
      text.replace("9007199254740993", "9007199254740992"),
    );
    const run = expect(await m.run(["verify", less, "--json"]), 1, "one less");
    assertEquals(run.json().failed_checks, ["id"]);
  });
});

Deno.test("byte edits of a signed lean-ctx file are refused, reported tampered, or leave its content unchanged", async () => {
  const original = encoder.encode(fixtureText("972c29b9b085.ctxsnapshot.json"));
  const originalBody = leanCtxCanonicalBody((await checkLeanCtxBytes(original)).snapshot);
  let seed = 15;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let i = 0; i < 400; i++) {
    const bytes = new Uint8Array(original);
    const at = next() % bytes.length;
    if (next() % 3 === 0) bytes[at] = next() % 256;
    else bytes[at] = bytes[at]! ^ (1 << (next() % 8));
    let check;
    try {
      check = await checkLeanCtxBytes(bytes);
    } catch {
      continue; // refused
    }
    if (check.intact) {
      assertEquals(leanCtxCanonicalBody(check.snapshot), originalBody, `edit at ${at} verified`);
    }
  }
});

// ===========================================================================
// 5. Export: ctxsnap snapshots as lean-ctx files

const CONTEXT_WITH_SLICES = {
  task: "port the parser",
  progress_pct: 40,
  decisions: ["keep the old API", "tabs\tand \u001b escapes"],
  files_touched: ["src/parser.ts"],
  roi: {
    input_tokens: 9000,
    output_tokens: 2500,
    tokens_saved: 6500,
    compression_rate_ppm: 419355,
  },
  lineage: {
    items_recorded: 12,
    items: [
      {
        seq: 3,
        kind: "read",
        tool: "ctx_read",
        path: "src/parser.ts",
        input_tokens: 4000,
        output_tokens: 1000,
        compression_ratio_ppm: 250000,
        content_hash: "ab".repeat(32),
      },
      {
        seq: 4,
        kind: "shell",
        tool: "ctx_shell",
        path: null,
        input_tokens: 5000,
        output_tokens: 1500,
        compression_ratio_ppm: 300000,
        content_hash: null,
      },
    ],
  },
  ledger: {
    window_size: 32000,
    total_tokens_sent: 2500,
    total_tokens_saved: 6500,
    items: [
      {
        path: "src/parser.ts",
        state: "included",
        phi_ppm: 974000,
        sent_tokens: 1000,
        original_tokens: 4000,
      },
      { path: "README.md", state: "stale", phi_ppm: null, sent_tokens: 0, original_tokens: 120 },
    ],
  },
};

Deno.test("publish --format lean-ctx writes a file the independent checker, b3sum and openssl accept: session, git and the slices, signed with the user's key", async () => {
  await withMachines(2, async (alice, bob) => {
    const ctxFile = await writeTemp(
      alice.root,
      "context.json",
      JSON.stringify(CONTEXT_WITH_SLICES),
    );
    const created = expect(
      await alice.run(["create", "-m", "with slices", "--context", ctxFile, "--json"]),
      0,
      "create",
    )
      .json();
    const out = join(alice.root, "export.ctxsnapshot.json");
    const pub = expect(
      await alice.run([
        "publish",
        created.id.slice(0, 8),
        "--format",
        "lean-ctx",
        "--out",
        out,
        "--json",
      ]),
      0,
      "publish",
    ).json();
    const me = expect(await alice.run(["key", "show", "--json"]), 0, "key show").json();
    assertEquals(pub.signer, { public_key: me.public_key, key_id: me.key_id });
    const text = await Deno.readTextFile(out);
    const lean = await independentVerify(text, alice.root);
    assertEquals(lean.snapshot_id, pub.id);
    assertEquals(lean.signature.public_key, me.public_key);
    assertEquals(lean.lean_ctx_version, "ctxsnap/0.1.0");
    assertEquals(lean.parent_id, null);
    assertEquals(lean.session, {
      session_id: "main",
      task: "port the parser",
      decisions: CONTEXT_WITH_SLICES.decisions,
      files_touched: ["src/parser.ts"],
      progress_pct: 40,
    });
    assertEquals(lean.roi, {
      input_tokens: 9000,
      output_tokens: 2500,
      tokens_saved: 6500,
      compression_rate: 0.419355,
    });
    assert(text.includes('"compression_ratio": 0.25,') && text.includes('"phi": 0.974,'), text);
    assertEquals(lean.ledger.items[1].phi, null);
    assertEquals(lean.lineage.items_recorded, 12);
    // One key, two domain-separated signatures: the lean-ctx signature is not a
    // ctxsnap signature of that id, and the ctxsnap envelope's not a lean-ctx one.
    const leanMessage = leanCtxSigningMessage(lean.snapshot_id);
    const ctxMessage = signingMessage(lean.snapshot_id);
    const pem = createPublicKey(spkiPem(me.public_key));
    assert(nodeVerify(null, leanMessage, pem, fromHex(lean.signature.value, 64)));
    assert(!nodeVerify(null, ctxMessage, pem, fromHex(lean.signature.value, 64)));
    const shown = expect(await alice.run(["show", created.id, "--json"]), 0, "show").json();
    const envelopeSig = fromHex(shown.envelope.signature.value, 64);
    assert(nodeVerify(null, signingMessage(created.id), pem, envelopeSig));
    assert(!nodeVerify(null, leanCtxSigningMessage(created.id), pem, envelopeSig));
    // Bob imports Alice's lean-ctx file as a lean-ctx snapshot, pinned by her key.
    const imported = expect(
      await bob.run(["import", out, "--trust", me.public_key, "--json"]),
      0,
      "import",
    )
      .json();
    assertEquals([imported.format, imported.primary, imported.branch], [
      "lean-ctx",
      pub.id,
      `imported/${me.key_id}`,
    ]);
    // Without slices: zero ROI, empty lineage and ledger, git null fields outside a repository.
    const plain = expect(await alice.run(["create", "-m", "plain", "--json"]), 0, "create").json();
    const out2 = join(alice.root, "plain.ctxsnapshot.json");
    expect(
      await alice.run(["publish", plain.id, "--format", "lean-ctx", "--out", out2]),
      0,
      "publish",
    );
    const lean2 = await independentVerify(await Deno.readTextFile(out2), alice.root);
    assertEquals(lean2.roi, {
      input_tokens: 0,
      output_tokens: 0,
      tokens_saved: 0,
      compression_rate: 0,
    });
    assert((await Deno.readTextFile(out2)).includes('"compression_rate": 0.0'));
    assertEquals([lean2.lineage.items, lean2.ledger.items], [[], []]);
    assertEquals(lean2.git, { commit: null, branch: null, dirty: false });
    // Options that do not fit a lean-ctx file are usage errors.
    expect(
      await alice.run(["publish", plain.id, "--format", "lean-ctx", "--with-workspace"]),
      2,
      "with-workspace",
    );
    expect(await alice.run(["publish", plain.id, "--format", "zip"]), 2, "format zip");
    const leanId = imported.primary as string;
    expect(
      await bob.run(["publish", leanId, "--format", "ctxsnap"]),
      2,
      "a lean-ctx snapshot as ctxsnap",
    );
  });
});

Deno.test("lean-ctx file -> import -> publish as lean-ctx -> verify, with a lean-ctx key imported as the identity: lean-ctx's own files come back byte for byte", async () => {
  await withMachines(1, async (m) => {
    // The published file of lean-ctx's publish test (seed 05), made unsigned.
    const v3 = JSON.parse(fixtureText("c3656ed7f930.ctxsnapshot.json"));
    const unsigned = refSerialize({ ...v3, signature: null }, true);
    const unsignedFile = await writeTemp(m.root, "unsigned.ctxsnapshot.json", unsigned);
    const seed05 = KEYS.find((k) => k.name === "vector-seed05")!.seed!;
    const keyFile = await writeTemp(m.root, "ctxpkg-ed25519.key", seed05.toUpperCase() + "\n");
    await Deno.chmod(keyFile, 0o600);
    // The machine already has an identity (init made one): replacing it needs --force.
    const before = expect(await m.run(["key", "show", "--json"]), 0, "key show").json();
    expect(await m.run(["key", "import", "--lean-ctx", keyFile]), 5, "key import over an identity");
    assertEquals(
      expect(await m.run(["key", "show", "--json"]), 0, "key show").json().key_id,
      before.key_id,
    );
    const imported = expect(
      await m.run(["key", "import", "--lean-ctx", keyFile, "--force", "--json"]),
      0,
      "key import",
    )
      .json();
    assertEquals(imported.public_key, KEYS.find((k) => k.name === "vector-seed05")!.public_key);
    assertEquals(imported.replaced_key_id, before.key_id);
    assert(await exists(imported.backup), "the replaced key was not kept");
    assertEquals((await Deno.stat(imported.path)).mode! & 0o777, 0o600);
    assertEquals((await Deno.stat(imported.backup)).mode! & 0o777, 0o600);
    if (HAS_TOOLS) {
      // openssl reads the new identity and derives the same public key.
      const pub = await run("openssl", ["pkey", "-in", imported.path, "-pubout"]);
      assertEquals(pub.trim(), fixtureText("vector-seed05.pub.pem").trim());
    }
    expect(
      await m.run(["key", "import", "--lean-ctx", keyFile]),
      0,
      "importing the same key again",
    );
    // Round trip: unsigned file in, signed by the lean-ctx key on the way out.
    expect(await m.run(["import", unsignedFile, "--allow-untrusted"]), 0, "import unsigned");
    const out = join(m.root, "out.ctxsnapshot.json");
    expect(await m.run(["publish", v3.snapshot_id.slice(0, 12), "--out", out]), 0, "publish");
    assertEquals(await Deno.readTextFile(out), fixtureText("c3656ed7f930.ctxsnapshot.json"));
    expect(await m.run(["verify", out]), 0, "own key is trusted");
    // And the v1 vector with seed 07: the signature lean-ctx's tests record.
    const v2 = JSON.parse(fixtureText("v2-signature.json"));
    const v1 = JSON.parse(fixtureText("v1-canonical-body.json"));
    const v1File = await writeTemp(
      m.root,
      "v1.json",
      refSerialize({ ...v1, snapshot_id: v2.snapshot_id }, true),
    );
    const seed07File = await writeTemp(m.root, "seed07.key", v2.seed);
    expect(await m.run(["key", "import", "--lean-ctx", seed07File, "--force"]), 0, "key import 07");
    expect(await m.run(["import", v1File, "--allow-untrusted"]), 0, "import v1");
    const v1out = join(m.root, "v1out.json");
    expect(await m.run(["publish", v2.snapshot_id, "--out", v1out]), 0, "publish v1");
    assertEquals(JSON.parse(await Deno.readTextFile(v1out)).signature, v2.signature);
    await independentVerify(await Deno.readTextFile(v1out), m.root);
  });
});

Deno.test("bad lean-ctx key files are refused (exit 1) and leave the identity alone", async () => {
  await withMachines(1, async (m) => {
    const before = expect(await m.run(["key", "show", "--json"]), 0, "key show").json();
    for (
      const [name, data] of [
        ["short", "ab".repeat(31) + "a"],
        ["not hex", "zz".repeat(32)],
        ["a PEM", fixtureText("signer-1.pub.pem")],
        ["oversize", "0".repeat(64) + " ".repeat(5000)],
        ["binary", new Uint8Array([0xff, 0xfe, 0x00])],
      ] as const
    ) {
      const file = await writeTemp(m.root, `bad-${name.replace(" ", "-")}.key`, data);
      expect(
        await m.run(["key", "import", "--lean-ctx", file, "--force"]),
        1,
        `key import ${name}`,
      );
    }
    expect(await m.run(["key", "import", "--lean-ctx", m.root, "--force"]), 1, "a directory");
    expect(
      await m.run(["key", "import", "--lean-ctx", join(m.root, "missing")]),
      4,
      "a missing file",
    );
    expect(await m.run(["key", "import"]), 2, "no --lean-ctx");
    assertEquals(expect(await m.run(["key", "show", "--json"]), 0, "key show").json(), before);
  });
});

Deno.test("lean-ctx public keys (SPKI PEM file, hex, a file of hex in either case) are pinned with key trust and then trusted by verify", async () => {
  await withMachines(1, async (m) => {
    const [s1, s2, s05] = ["signer-1", "signer-2", "vector-seed05"].map((n) =>
      KEYS.find((k) => k.name === n)!
    );
    expect(await m.run(["key", "trust", fixture(s1!.pem), "--name", "lean-one"]), 0, "trust pem");
    const hexFile = await writeTemp(m.root, "s2.pub", s2!.public_key.toUpperCase() + "\n");
    expect(await m.run(["key", "trust", hexFile, "--name", "lean-two"]), 0, "trust hex file");
    expect(await m.run(["key", "trust", s05!.public_key]), 0, "trust hex");
    const keys = expect(await m.run(["key", "list", "--json"]), 0, "key list").json().keys;
    assertEquals(
      keys.map((k: { public_key: string }) => k.public_key).sort(),
      [s1!.public_key, s2!.public_key, s05!.public_key].sort(),
    );
    for (const c of CASES.filter((c) => c.outcome === "valid")) {
      const run = expect(await m.run(["verify", fixture(c.file), "--json"]), 0, c.file).json();
      assertEquals(run.signer.trusted, true);
      if (c.signer === s1!.public_key) assertEquals(run.signer.name, "lean-one");
    }
  });
});

// ===========================================================================
// 6. Restore

const GIT_ENV = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
};

function git(m: Machine, ...args: string[]): string {
  const out = new Deno.Command("git", {
    args,
    cwd: m.ws,
    env: { ...GIT_ENV, HOME: m.root },
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!out.success) throw new Error(`git ${args.join(" ")}: ${decoder.decode(out.stderr)}`);
  return decoder.decode(out.stdout).trim();
}

Deno.test("mergeLeanCtxSession follows lean-ctx's merge: task and progress replaced, lists appended trimmed, without blanks or repeats", () => {
  const live = {
    ...emptyContext(),
    task: "old",
    progress_pct: 5,
    decisions: ["a"],
    files_touched: ["x"],
  };
  const none = mergeLeanCtxSession(live, {
    session_id: null,
    task: "  ",
    decisions: [" a ", "b", "b", ""],
    files_touched: ["x", " y"],
    progress_pct: 90,
  });
  assertEquals(
    [none.context.task, none.context.progress_pct],
    ["old", 5],
    "a blank task changes neither",
  );
  assertEquals(none.context.decisions, ["a", "b"]);
  assertEquals(none.context.files_touched, ["x", "y"]);
  assertEquals([none.decisionsAdded, none.filesAdded], [["b"], ["y"]]);
  const task = mergeLeanCtxSession(live, {
    session_id: null,
    task: "new",
    decisions: [],
    files_touched: [],
    progress_pct: null,
  });
  assertEquals([task.context.task, task.context.progress_pct], ["new", 5]);
});

Deno.test("restore of a lean-ctx snapshot merges its session and, with --git, checks out its anchor; a dirty tree is refused (exit 5) changing nothing", async () => {
  await withMachines(1, async (m) => {
    git(m, "init", "-q", "-b", "main");
    await Deno.writeTextFile(join(m.ws, ".git/info/exclude"), ".ctxsnap/\n");
    git(m, "add", "-A");
    git(m, "commit", "-q", "-m", "one");
    const c1 = git(m, "rev-parse", "HEAD");
    await Deno.writeTextFile(join(m.ws, "a.txt"), "alpha two\n");
    git(m, "commit", "-q", "-am", "two");
    expect(
      await m.run(["session", "set", "--task", "live task", "--progress", "10"]),
      0,
      "session set",
    );
    expect(await m.run(["session", "decide", "keep tests real"]), 0, "decide");
    const base = expect(await m.run(["create", "-m", "before", "--json"]), 0, "create").json().id;

    const lean = newLeanCtxSnapshot("2026-07-07T07:07:07Z", "3.9.18");
    lean.git = { commit: c1.slice(0, 7), branch: "main", dirty: false };
    lean.session = {
      session_id: "s-1",
      task: "resume the port",
      decisions: ["keep tests real", "ship on Friday", "ship on Friday"],
      files_touched: ["src/parser.ts"],
      progress_pct: 60,
    };
    const signed = await signLeanCtx(lean, TEST_SIGNER);
    const file = await writeTemp(m.root, "lean.ctxsnapshot.json", leanCtxFileText(signed));
    expect(await m.run(["import", file, "--trust", TEST_SIGNER.publicKeyHex]), 0, "import");
    const id = signed.snapshot_id;

    // Dirty tree: refused before anything changes.
    await Deno.writeTextFile(join(m.ws, "untracked.txt"), "u\n");
    const counts = storeCounts(m);
    expect(await m.run(["restore", id.slice(0, 10), "--git"]), 5, "restore --git on a dirty tree");
    assertEquals(storeCounts(m), counts);
    assertEquals(git(m, "rev-parse", "HEAD") !== c1, true);
    await Deno.remove(join(m.ws, "untracked.txt"));

    const dry = expect(await m.run(["restore", id, "--git", "--dry-run", "--json"]), 0, "dry run")
      .json();
    assertEquals(dry.decisions_added, ["ship on Friday"]);
    assertEquals(storeCounts(m), counts, "a dry run changed the store");
    expect(await m.run(["restore", id, "--files"]), 2, "--files does not apply");

    const done = expect(await m.run(["restore", id, "--git", "--json"]), 0, "restore").json();
    assertEquals([done.format, done.git_commit, done.session_merged], [
      "lean-ctx",
      c1.slice(0, 7),
      true,
    ]);
    assertEquals(git(m, "rev-parse", "HEAD"), c1);
    assertEquals(await Deno.readTextFile(join(m.ws, "a.txt")), "alpha\n");
    const state = expect(await m.run(["session", "show", "--json"]), 0, "session show").json();
    const context = state.state;
    assertEquals(context.task, "resume the port");
    assertEquals(context.progress_pct, 60);
    assertEquals(context.decisions, ["keep tests real", "ship on Friday"]);
    assertEquals(context.files_touched, ["src/parser.ts"]);
    // Recorded like every restore: a snapshot naming the target, and undo goes back.
    const rec = expect(await m.run(["show", done.snapshot, "--json"]), 0, "show").json();
    assertEquals(rec.envelope.body.facets.metadata.reverted_to, id);
    assertEquals(rec.envelope.body.parent, base);
    const undo = expect(await m.run(["undo", "--dry-run", "--json"]), 0, "undo").json();
    assertEquals([undo.reverts.kind, undo.reverts.id], ["restore", done.operation]);
    expect(await m.run(["undo"]), 0, "undo the lean-ctx restore");
    const back = expect(await m.run(["session", "show", "--json"]), 0, "session show").json();
    assertEquals(back.state.decisions, ["keep tests real"]);
    assertEquals(expect(await m.run(["show", "--json"]), 0, "show HEAD").json().id, base);

    // A git anchor that is not a commit id is never handed to git.
    const odd = newLeanCtxSnapshot("2026-07-07T07:07:08Z", "3.9.18");
    odd.git = { commit: "--upload-pack=touch x", branch: null, dirty: false };
    const oddSigned = await signLeanCtx(odd, TEST_SIGNER);
    const oddFile = await writeTemp(m.root, "odd.json", leanCtxFileText(oddSigned));
    expect(await m.run(["import", oddFile, "--trust", TEST_SIGNER.publicKeyHex]), 0, "import odd");
    expect(await m.run(["restore", oddSigned.snapshot_id, "--git"]), 1, "restore of a bad anchor");
    expect(await m.run(["restore", oddSigned.snapshot_id]), 2, "no session slice and no --git");
  });
});

// ===========================================================================
// 7. The slices in ctxsnap's own body

function exampleBody(): SnapshotBody {
  return {
    schema: SNAPSHOT_SCHEMA,
    created_at: "2026-01-01T00:00:00.000Z",
    parent: null,
    session: "main",
    branch: "main",
    reason: "example",
    source: null,
    git: null,
    workspace: {
      tree: "9c4a7904285caea81d38f924895c33e2fc5ae4414c088c031a93cbd386d4856b",
      files: 1,
      bytes: 6,
      skipped: 1,
    },
    context: { ...emptyContext(), task: "demo", progress_pct: 50 },
    cursors: emptyCursors(),
    facets: emptyFacets(),
    tool: { name: "ctxsnap", version: "0.1.0" },
  };
}

Deno.test("bodies without slices keep schema v1 and their ids (the FORMAT.md worked example); slices need v2, and both readers stay strict", async () => {
  assertEquals(
    snapshotId(validateBody(exampleBody())),
    "ff8defd69a6c88227abae2e7359e3e2edc540fdefb6bda024824a78025f313f5",
  );
  const roi = { input_tokens: 1, output_tokens: 1, tokens_saved: 0, compression_rate_ppm: 0 };
  const v2 = validateBody({ ...exampleBody(), schema: SNAPSHOT_SCHEMA_V2, roi });
  assertEquals(v2.roi, roi);
  const refused = (value: unknown, what: string) => {
    let threw = false;
    try {
      validateBody(value);
    } catch {
      threw = true;
    }
    assert(threw, `accepted ${what}`);
  };
  refused({ ...exampleBody(), roi }, "a v1 body with a slice");
  refused({ ...exampleBody(), schema: SNAPSHOT_SCHEMA_V2 }, "a v2 body without slices");
  refused({ ...exampleBody(), schema: SNAPSHOT_SCHEMA_V2, roi: null }, "a null slice");
  refused(
    { ...exampleBody(), schema: SNAPSHOT_SCHEMA_V2, roi: { ...roi, extra: 1 } },
    "an unknown field",
  );
  refused({
    ...exampleBody(),
    schema: SNAPSHOT_SCHEMA_V2,
    roi: { ...roi, compression_rate_ppm: 0.5 },
  }, "a float");
  refused(
    { ...exampleBody(), schema: SNAPSHOT_SCHEMA_V2, roi: { ...roi, input_tokens: -1 } },
    "a negative count",
  );
  refused(
    {
      ...exampleBody(),
      schema: SNAPSHOT_SCHEMA_V2,
      ledger: {
        window_size: 1,
        total_tokens_sent: 0,
        total_tokens_saved: 0,
        items: [{ path: "a", state: "x", phi_ppm: 1, sent_tokens: 0 }],
      },
    },
    "a ledger item without original_tokens",
  );
  refused({ ...exampleBody(), schema: "ctxsnap.snapshot/v3" }, "schema v3");
  // A signature over a v2 body verifies like any other.
  const me = TEST_SIGNER;
  const id = snapshotId(v2);
  assert(await nodeVerifyOk(me, signingMessage(id)));
});

async function nodeVerifyOk(signer: Signer, message: Uint8Array): Promise<boolean> {
  const signature = await sign(signer.seed, message);
  return nodeVerify(null, message, createPublicKey(spkiPem(signer.publicKeyHex)), signature);
}

Deno.test("create --context sets roi, lineage and ledger; show prints them; publish and import on another machine keep them; invalid slices are usage errors", async () => {
  await withMachines(2, async (alice, bob) => {
    const ctxFile = await writeTemp(
      alice.root,
      "context.json",
      JSON.stringify(CONTEXT_WITH_SLICES),
    );
    const id = expect(
      await alice.run(["create", "-m", "slices", "--context", ctxFile, "--json"]),
      0,
      "create",
    )
      .json().id;
    const shown = expect(await alice.run(["show", id, "--json"]), 0, "show").json();
    const body = shown.envelope.body;
    assertEquals(body.schema, SNAPSHOT_SCHEMA_V2);
    assertEquals([body.roi, body.lineage, body.ledger], [
      CONTEXT_WITH_SLICES.roi,
      CONTEXT_WITH_SLICES.lineage,
      CONTEXT_WITH_SLICES.ledger,
    ]);
    const text = expect(await alice.run(["show", id]), 0, "show").stdout;
    for (
      const needle of [
        "roi        input 9000, output 2500, saved 6500 tokens; compression rate 0.419355 (419355 ppm)",
        "lineage    12 recorded, 2 kept: read 1, shell 1; 9000 tokens in, 2500 out",
        "ledger     window 32000, sent 2500, saved 6500; 2 items: included 1, stale 1",
      ]
    ) assert(text.includes(needle), `show lacks ${needle}:\n${text}`);
    expect(await alice.run(["verify", id]), 0, "verify");
    const plain =
      expect(await alice.run(["create", "-m", "plain", "--json"]), 0, "create").json().id;
    assertEquals(
      expect(await alice.run(["show", plain, "--json"]), 0, "show").json().envelope.body.schema,
      SNAPSHOT_SCHEMA,
    );
    // Across machines, through a bundle with history.
    const bundle = join(alice.root, "b.ctxbundle");
    expect(await alice.run(["publish", plain, "--history", "all", "--out", bundle]), 0, "publish");
    const me = expect(await alice.run(["key", "show", "--json"]), 0, "key").json();
    expect(await bob.run(["import", bundle, "--trust", me.public_key]), 0, "import");
    const there = expect(await bob.run(["show", id, "--json"]), 0, "show on bob").json();
    assertEquals(there.envelope.body, body);
    expect(await bob.run(["verify", "--all", "--trust", me.public_key]), 0, "verify --all on bob");
    // Invalid slices in the context document: exit 2, nothing created.
    const before = storeCounts(alice);
    for (
      const bad of [
        { roi: { ...CONTEXT_WITH_SLICES.roi, compression_rate_ppm: 0.4 } },
        { roi: { ...CONTEXT_WITH_SLICES.roi, compression_rate: 1 } },
        { roi: null },
        { lineage: { items_recorded: 1, items: [{ seq: 1 }] } },
        { ledger: { ...CONTEXT_WITH_SLICES.ledger, items: "none" } },
      ]
    ) {
      const file = await writeTemp(alice.root, "bad.json", JSON.stringify(bad));
      expect(
        await alice.run(["create", "--context", file]),
        2,
        `create with ${JSON.stringify(bad)}`,
      );
    }
    assertEquals(storeCounts(alice), before);
  });
});

// ===========================================================================
// 8. Process boundary: offline verify, default file name

Deno.test("verify of a lean-ctx file needs only --allow-read of it; publish --format lean-ctx names the file <id12>.ctxsnapshot.json (in the store's published/ directory when run inside the workspace); import - reads one from standard input", async () => {
  const ws = await tempWorkspace({});
  try {
    const c = CASES.find((c) => c.file === "a4916171986e.ctxsnapshot.json")!;
    const file = fixture(c.file);
    const sandboxed = await ws.run(["verify", file, "--trust", c.signer!, "--json"], {
      permissions: ["--no-prompt", `--allow-read=${file}`],
    });
    expectCode(sandboxed, 0, "verify with --allow-read of the file only");
    assertEquals(sandboxed.json().verdict, "trusted");
    const tampered = fixture(CASES.find((c) => c.kind === "sig-flip")!.file);
    const bad = await ws.run(["verify", tampered], {
      permissions: ["--no-prompt", `--allow-read=${tampered}`],
    });
    expectCode(bad, 1, "verify of a tampered file, sandboxed");
    assert(!await exists(ws.configDir), "verify created the config dir");

    expectCode(await ws.run(["init"]), 0, "init");
    expectCode(await ws.run(["import", file, "--trust", c.signer!]), 0, "import");
    const pub = await ws.run(["publish", c.id!.slice(0, 6), "--json"]);
    expectCode(pub, 0, "publish");
    // Run inside the workspace: the file goes where no capture sees it.
    const expected = join(
      ws.path,
      ".ctxsnap",
      "published",
      `${c.id!.slice(0, 12)}.ctxsnapshot.json`,
    );
    assertEquals(pub.json().path, expected);
    assertEquals(await Deno.readFile(expected), await Deno.readFile(file));
    // From standard input (spooled into the store, then read like a file).
    const other = CASES.find((c) => c.file === "b878a33bd3e3.ctxsnapshot.json")!;
    const piped = await ws.run(["import", "-", "--trust", other.signer!, "--json"], {
      stdin: await Deno.readFile(fixture(other.file)),
    });
    expectCode(piped, 0, "import -");
    assertEquals([piped.json().format, piped.json().primary], ["lean-ctx", other.id]);
  } finally {
    await ws.cleanup();
  }
});
