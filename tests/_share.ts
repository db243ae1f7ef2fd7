/**
 * Helpers shared by the tests of publish, verify FILE and import
 * (`share_test.ts`) and the long byte-sweep suite (`bundle_sweep_test.ts`):
 * machines with their own config directories, CLI runs with binary stdio,
 * store snapshots for "nothing written" checks, and bundle layout tools.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { dirname, join, relative } from "node:path";
import { generateSeed, keyIdOf, publicKeyFromSeed } from "../lib/crypto/ed25519.ts";
import { sha256Hex } from "../lib/crypto/hash.ts";
import { CtxsnapError, exitCodeOf } from "../lib/errors.ts";
import { toHex } from "../lib/encoding/hex.ts";
import { writeBundle } from "../lib/format/bundle.ts";
import { verifyStream } from "../lib/share/verify_file.ts";
import type { Envelope } from "../lib/format/envelope.ts";
import type { TrustPolicy } from "../lib/history/verify.ts";
import { assert, assertEquals } from "./_assert.ts";
import { cliCommand, expectCode, realDenoDir, type TempWorkspace, tempWorkspace } from "./_cli.ts";
import { concatBytes } from "./_util.ts";

export const encoder = new TextEncoder();
export const decoder = new TextDecoder();

// ---------------------------------------------------------------------------
// helpers: machines, CLI, stores

/** A temp workspace (own config dir and HOME: a separate machine) on which `init` succeeded. */
export async function machine(files: Record<string, string> = {}): Promise<TempWorkspace> {
  const ws = await tempWorkspace(files);
  try {
    expectCode(await ws.run(["init", "--json"]), 0, "init");
  } catch (error) {
    await ws.cleanup();
    throw error;
  }
  return ws;
}

/** Runs `fn` with fresh machines, cleaning all of them up afterwards. */
export async function withMachines(
  specs: (Record<string, string> | "no-store")[],
  fn: (...machines: TempWorkspace[]) => Promise<void>,
): Promise<void> {
  const made: TempWorkspace[] = [];
  try {
    for (const spec of specs) {
      made.push(spec === "no-store" ? await tempWorkspace({}) : await machine(spec));
    }
    await fn(...made);
  } finally {
    for (const ws of made) await ws.cleanup();
  }
}

/** `create --json -m reason`; returns the snapshot id. */
export async function createSnap(ws: TempWorkspace, reason: string): Promise<string> {
  const result = await ws.run(["create", "--json", "-m", reason]);
  expectCode(result, 0, `create ${reason}`);
  const id = result.json().id as string;
  assert(/^[0-9a-f]{64}$/.test(id), `create printed no id: ${result.stdout}`);
  return id;
}

/** This machine's public key, hex (`key show --json`). */
export async function publicKeyHex(ws: TempWorkspace): Promise<string> {
  const result = await ws.run(["key", "show", "--json"]);
  expectCode(result, 0, "key show");
  const hex = result.json().public_key as string;
  assert(/^[0-9a-f]{64}$/.test(hex), `key show printed no public key: ${result.stdout}`);
  return hex;
}

/** `publish ID ...args --out <root>/<name>`; returns the written path. */
export async function publish(
  ws: TempWorkspace,
  id: string,
  name: string,
  ...args: string[]
): Promise<string> {
  const out = join(ws.root, name);
  const result = await ws.run(["publish", id, "--out", out, "--json", ...args]);
  expectCode(result, 0, `publish ${args.join(" ")}`);
  assertEquals(result.json().path, out);
  return out;
}

/** The environment `runCli` gives a machine's CLI runs. */
export function machineEnv(ws: TempWorkspace): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    DENO_DIR: realDenoDir(),
    NO_COLOR: "1",
    CTXSNAP_DAEMON: "off",
    DENO_NO_UPDATE_CHECK: "1",
    HOME: ws.home,
    CTXSNAP_CONFIG_DIR: ws.configDir,
  };
}

/** Runs the CLI of `ws` with binary stdin/stdout (stdout is a pipe). */
export async function runRaw(
  ws: TempWorkspace,
  args: string[],
  stdin?: Uint8Array,
): Promise<{ code: number; stdout: Uint8Array; stderr: string }> {
  const [command, ...argv] = cliCommand(args);
  const child = new Deno.Command(command, {
    args: argv,
    cwd: ws.path,
    env: machineEnv(ws),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  try {
    if (stdin !== undefined) await writer.write(stdin);
    await writer.close();
  } catch {
    // The child may exit without reading its input.
  }
  const output = await child.output();
  return { code: output.code, stdout: output.stdout, stderr: decoder.decode(output.stderr) };
}

/** Runs a program (not the CLI), failing unless it exits 0. */
export async function sh(cmd: string, args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (out.code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${decoder.decode(out.stderr)}`);
  }
  return decoder.decode(out.stdout);
}

/**
 * Everything observable about a store: every path below `.ctxsnap` (type,
 * size and content hash of files other than the SQLite database and its
 * WAL/shared-memory companions) and, for `index.db`, each table's row count and
 * the hash of all its rows.
 */
export async function storeState(
  ws: TempWorkspace,
): Promise<{ files: string[]; tables: string[] }> {
  const dir = join(ws.path, ".ctxsnap");
  const files: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for await (const entry of Deno.readDir(at)) {
      const full = join(at, entry.name);
      const rel = relative(dir, full);
      if (/^index\.db(-wal|-shm|-journal)?$/.test(rel)) continue;
      const info = await Deno.lstat(full);
      if (info.isDirectory) {
        files.push(`${rel}/`);
        await walk(full);
      } else if (info.isFile) {
        files.push(`${rel} ${info.size} ${sha256Hex(await Deno.readFile(full))}`);
      } else files.push(`${rel} (special)`);
    }
  };
  await walk(dir);
  files.sort();
  const db = new DatabaseSync(join(dir, "index.db"), { readOnly: true });
  try {
    const names = (db.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    ).all() as { name: string }[]).map((r) => r.name);
    const tables = names.map((name) => {
      const rows = db.prepare(`SELECT * FROM "${name}"`).all();
      const text = rows.map((row) =>
        JSON.stringify(row, (_k, v) => v instanceof Uint8Array ? toHex(v) : v)
      ).sort().join("\n");
      return `${name}: ${rows.length} rows, ${sha256Hex(text).slice(0, 16)}`;
    });
    return { files, tables };
  } finally {
    db.close();
  }
}

/** The bundle manifest, read with GNU tar. */
// deno-lint-ignore no-explicit-any
export async function manifestOf(bundle: string): Promise<any> {
  return JSON.parse(await sh("tar", ["-xOf", bundle, "ctxsnap-bundle.json"], dirname(bundle)));
}

// ---------------------------------------------------------------------------
// helpers: in-process verification and tar layout

/** A `readChunk` over bytes in memory, delivering at most `chunk` bytes per call. */
export function memoryReader(bytes: Uint8Array, chunk = 1 << 20): (buffer: Uint8Array) => number {
  let at = 0;
  return (buffer) => {
    const n = Math.min(buffer.length, bytes.length - at, chunk);
    buffer.set(bytes.subarray(at, at + n));
    at += n;
    return n;
  };
}

export function trusting(keyId: string): TrustPolicy {
  return { isTrusted: (k) => k === keyId, nameOf: () => null };
}

/**
 * What `verify FILE` would conclude about `bytes` when `keyId` is trusted:
 * `ok` (exit 0), `untrusted` (exit 3), `invalid-signature` (exit 1),
 * `refused` (a ctxsnap error mapping to exit 1), or a description of anything else.
 */
export async function verdict(bytes: Uint8Array, keyId: string): Promise<string> {
  try {
    const report = await verifyStream(memoryReader(bytes), trusting(keyId));
    if (!report.valid) return "invalid-signature";
    return report.trusted ? "ok" : "untrusted";
  } catch (error) {
    if (error instanceof CtxsnapError && exitCodeOf(error) === 1) return "refused";
    const e = error as Error;
    return `threw ${e?.name}: ${e?.message} (exit ${exitCodeOf(error)})`;
  }
}

export const REFUSED = new Set(["refused", "invalid-signature"]);

/** One member of a tar archive, as laid out in the file. */
export interface TarLayout {
  name: string;
  header: number;
  data: number;
  size: number;
  /** Offset just after the member's padding. */
  end: number;
}

/** The members of a well-formed ustar archive and where its end marker starts. */
export function tarLayout(bytes: Uint8Array): { members: TarLayout[]; marker: number } {
  const members: TarLayout[] = [];
  let at = 0;
  while (bytes.subarray(at, at + 512).some((b) => b !== 0)) {
    const field = bytes.subarray(at, at + 100);
    const nul = field.indexOf(0);
    const name = decoder.decode(field.subarray(0, nul < 0 ? 100 : nul));
    const size = parseInt(decoder.decode(bytes.subarray(at + 124, at + 135)), 8);
    const end = at + 512 + Math.ceil(size / 512) * 512;
    members.push({ name, header: at, data: at + 512, size, end });
    at = end;
  }
  return { members, marker: at };
}

/** Which part of a bundle byte `pos` lies in. */
export function regionOf(layout: { members: TarLayout[]; marker: number }, pos: number): string {
  for (const m of layout.members) {
    const kind = m.name === "ctxsnap-bundle.json" ? "manifest" : m.name.split("/")[0];
    if (pos < m.header || pos >= m.end) continue;
    if (pos < m.data) return `${kind} header`;
    if (pos < m.data + m.size) return `${kind} data`;
    return `${kind} padding`;
  }
  return pos < layout.marker + 1024 ? "end marker" : "record padding";
}

export function flipped(bytes: Uint8Array, pos: number, mask = 0x01): Uint8Array {
  const copy = bytes.slice();
  copy[pos] = copy[pos]! ^ mask;
  return copy;
}

/** JSON value with object keys sorted, for a semantic comparison. */
export function sortedJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v) =>
      v !== null && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]))
        : v,
  );
}

/** Whether `bytes` is a JSON document whose value equals `original`'s. */
export function sameJsonValue(bytes: Uint8Array, original: unknown): boolean {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return sortedJson(JSON.parse(text)) === sortedJson(original);
  } catch {
    return false;
  }
}

/** A fresh Ed25519 signer (the attacker's, or another machine's, key). */
export async function newSigner(): Promise<
  { seed: Uint8Array; publicKey: Uint8Array; publicKeyHex: string; keyId: string }
> {
  const seed = generateSeed();
  const publicKey = await publicKeyFromSeed(seed);
  return { seed, publicKey, publicKeyHex: toHex(publicKey), keyId: keyIdOf(publicKey) };
}

/** An envelope as `publish` writes it: pretty-printed JSON. */
export function prettyEnvelope(envelope: Envelope): Uint8Array {
  return encoder.encode(JSON.stringify(envelope, null, 2) + "\n");
}

/** Rebuilds a bundle with `envelopes` but the trees and blobs of the genuine bundle `bytes`. */
export function rebundle(bytes: Uint8Array, envelopes: Envelope[]): Uint8Array {
  const { members } = tarLayout(bytes);
  const trees = new Map<string, Uint8Array>();
  const blobs = new Map<string, Uint8Array>();
  for (const m of members) {
    const data = bytes.slice(m.data, m.data + m.size);
    if (m.name.startsWith("trees/")) trees.set(m.name.slice(6, 70), data);
    if (m.name.startsWith("blobs/")) blobs.set(m.name.slice(6), data);
  }
  const chunks: Uint8Array[] = [];
  writeBundle({
    envelopes,
    trees,
    blobs: new Map([...blobs].map(([id, data]) => [id, data.length])),
    streamBlob: (id, onChunk) => onChunk(blobs.get(id)!),
  }, (chunk) => chunks.push(chunk.slice()));
  return concatBytes(chunks);
}

// ---------------------------------------------------------------------------
// a workspace with every kind of entry
