// deno-lint-ignore-file no-console
/**
 * The main job, end to end, on a generated demo workspace:
 * init → session → create → edit → create → list → show → diff → verify.
 * Every step runs the real CLI as a subprocess, with its own config dir.
 *
 * Run: `deno task demo` (add `--keep` to keep the demo directory).
 * @module
 */
import { fileURLToPath } from "node:url";

const cli = fileURLToPath(new URL("../cli.ts", import.meta.url));
const keep = Deno.args.includes("--keep");
const root = await Deno.makeTempDir({ prefix: "ctxsnap-demo-" });
const workspace = `${root}/workspace`;
const env = {
  CTXSNAP_CONFIG_DIR: `${root}/config`,
  NO_COLOR: "1",
  // The demo's workspaces are removed at the end: no background watch for them.
  CTXSNAP_DAEMON: "off",
};

async function step(
  title: string,
  args: string[],
  options: { stdin?: string; expect?: number; env?: Record<string, string>; mkdir?: string } = {},
) {
  if (options.mkdir) await Deno.mkdir(options.mkdir, { recursive: true });
  console.log(`\n\x1b[1m$ ctxsnap ${args.join(" ")}\x1b[0m${title ? `   # ${title}` : ""}`);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", cli, ...args],
    cwd: workspace,
    env: { ...env, ...options.env },
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(options.stdin));
    await writer.close();
  }
  const result = await child.output();
  const out = new TextDecoder().decode(result.stdout);
  const err = new TextDecoder().decode(result.stderr);
  if (out) console.log(out.trimEnd());
  if (err) console.log(err.trimEnd());
  const expected = options.expect ?? 0;
  if (result.code !== expected) {
    console.error(`demo: step failed: exit ${result.code}, expected ${expected}`);
    Deno.exit(1);
  }
  return out;
}

// A small research workspace: code, notes, data, a secret and a symlink.
await Deno.mkdir(`${workspace}/src`, { recursive: true });
await Deno.mkdir(`${workspace}/data`);
await Deno.writeTextFile(
  `${workspace}/src/parser.ts`,
  "export const parse = (s: string) => s.split(',');\n",
);
await Deno.writeTextFile(
  `${workspace}/notes.md`,
  "# Findings\n\n- CSV files use ';' in the EU export.\n",
);
await Deno.writeTextFile(`${workspace}/data/sample.csv`, "a;b;c\n1;2;3\n");
await Deno.writeTextFile(`${workspace}/.env`, "API_TOKEN=never-leaves-this-machine\n");
await Deno.symlink("data/sample.csv", `${workspace}/latest.csv`);

console.log(`demo workspace: ${workspace}`);
await step("create a store and this machine's signing key", ["init"]);
await step("record what the session is doing", [
  "session",
  "set",
  "--task",
  "fix the CSV parser",
  "--progress",
  "30",
]);
await step("record a decision", ["session", "decide", "split on ';' for EU exports"]);
const first = JSON.parse(
  await step("capture workspace + session, signed", ["create", "-m", "before the fix", "--json"]),
);
await Deno.writeTextFile(
  `${workspace}/src/parser.ts`,
  "export const parse = (s: string) => s.split(/[;,]/);\n",
);
await step("capture again after the fix, with context from stdin", [
  "create",
  "-m",
  "after the fix",
  "--context",
  "-",
], { stdin: JSON.stringify({ progress_pct: 80, findings: ["EU exports use ';'"] }) });
await step("the timeline, newest first", ["list"]);
await step("what the first snapshot recorded", ["show", first.id.slice(0, 8)]);
await step("what changed since then: files and session", ["diff", first.id.slice(0, 8)]);
await step("go back one snapshot (three-way against what the workspace last held)", [
  "restore",
  "HEAD~1",
]);
await step("the operations log", ["log"]);
await step("undo it: the last operation, whatever its kind", ["undo"]);
await step("integrity and origin of every object and snapshot", ["verify", "--all"]);
await step("another user's ctxsnap refuses a store it did not create or adopt", ["list"], {
  expect: 1,
  env: { CTXSNAP_CONFIG_DIR: `${root}/stranger` },
});
await step("after checking it, they adopt it (its signers stay untrusted)", ["init", "--adopt"], {
  env: { CTXSNAP_CONFIG_DIR: `${root}/stranger` },
});
await step("a stranger (no trusted keys) sees: valid but untrusted", ["verify"], {
  expect: 3,
  env: { CTXSNAP_CONFIG_DIR: `${root}/stranger` },
});

// Publish and verify offline, as a reviewer on another (air-gapped) machine would.
const key =
  JSON.parse(await step("this machine's public key", ["key", "show", "--json"])).public_key;
const bundle = JSON.parse(
  await step("publish the snapshot with its workspace as one portable file", [
    "publish",
    first.id.slice(0, 8),
    "--with-workspace",
    "--out",
    `${root}/review.ctxbundle`,
    "--json",
  ]),
).path;
await step("offline verify, no store and no config, pinned to the signer's key", [
  "verify",
  bundle,
  "--trust",
  key,
], { env: { CTXSNAP_CONFIG_DIR: `${root}/reviewer` } });
await step("import on the reviewer's machine (quarantine branch), then restore it there", [
  "--store",
  `${root}/reviewer-ws/.ctxsnap`,
  "init",
  "--workspace",
  `${root}/reviewer-ws`,
], { env: { CTXSNAP_CONFIG_DIR: `${root}/reviewer` }, mkdir: `${root}/reviewer-ws` });
await step("", ["--store", `${root}/reviewer-ws/.ctxsnap`, "import", bundle, "--trust", key], {
  env: { CTXSNAP_CONFIG_DIR: `${root}/reviewer` },
});
await step("", ["--store", `${root}/reviewer-ws/.ctxsnap`, "restore", first.id.slice(0, 8)], {
  env: { CTXSNAP_CONFIG_DIR: `${root}/reviewer` },
});
const restored = await Deno.readTextFile(`${root}/reviewer-ws/src/parser.ts`);
if (!restored.includes("s.split(',')")) {
  console.error("demo: the restored workspace differs from the snapshot");
  Deno.exit(1);
}
console.log("\nthe reviewer's workspace now holds the snapshot's files, byte for byte");

if (keep) console.log(`\nkept ${root}`);
else await Deno.remove(root, { recursive: true });
console.log("\ndemo: ok");
