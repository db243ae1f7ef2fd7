/**
 * The release artifacts of `deno task release` (`dist/release/`), checked
 * where they cannot run: SHA256SUMS against GNU `sha256sum -c`, release.json
 * against the files, and both macOS executables against the independent
 * Mach-O and ad-hoc signature check (`scripts/check_macho.ts`), which must
 * also refuse a copy with one byte changed in code, in the requirements blob,
 * or with bytes appended, and the wrong architecture.
 *
 * Building the artifacts takes minutes, so this runs only when asked:
 *
 *     deno task release && CTXSNAP_RELEASE_DIR=dist/release deno test -A tests/scripts/release_test.ts
 *
 * @module
 */
import { join, resolve } from "node:path";
import { checkMachO, MachOError } from "../../scripts/check_macho.ts";
import { assert, assertEquals } from "../_assert.ts";

const dirEnv = Deno.env.get("CTXSNAP_RELEASE_DIR");
const DIR = dirEnv ? resolve(dirEnv) : "";
const ignore = !dirEnv;

interface Artifact {
  file: string;
  target: string;
  runtime: string;
  bytes: number;
  sha256: string;
  signed_by?: string;
}

async function artifacts(): Promise<Artifact[]> {
  return JSON.parse(await Deno.readTextFile(join(DIR, "release.json"))).artifacts;
}

function refused(bytes: Uint8Array, arch: "arm64" | "x86_64", pattern: RegExp): void {
  try {
    checkMachO(bytes, arch);
  } catch (error) {
    assert(error instanceof MachOError, `not a MachOError: ${error}`);
    assert(pattern.test(error.message), `unexpected reason: ${error.message}`);
    return;
  }
  throw new Error(`check_macho accepted a bad file (expected ${pattern})`);
}

Deno.test({
  name: "release: five artifacts; SHA256SUMS passes sha256sum -c and agrees with release.json",
  ignore,
  async fn() {
    const list = await artifacts();
    assertEquals(list.map((a) => a.target).sort(), [
      "darwin-arm64",
      "darwin-x64",
      "linux-arm64",
      "linux-x64",
      "windows-x64",
    ]);
    const check = await new Deno.Command("sha256sum", {
      args: ["-c", "--strict", "SHA256SUMS"],
      cwd: DIR,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(check.stdout);
    assertEquals(check.code, 0, out + new TextDecoder().decode(check.stderr));
    for (const a of list) {
      assert(out.includes(`${a.file}: OK`), `${a.file} not checked: ${out}`);
      assertEquals((await Deno.stat(join(DIR, a.file))).size, a.bytes);
    }
    const sums = await Deno.readTextFile(join(DIR, "SHA256SUMS"));
    assertEquals(sums, list.map((a) => `${a.sha256}  ${a.file}\n`).join(""));
  },
});

for (const [target, arch] of [["darwin-arm64", "arm64"], ["darwin-x64", "x86_64"]] as const) {
  Deno.test({
    name: `release: ${target} is a Mach-O ${arch} executable whose ad-hoc signature checks, ` +
      "and a changed copy does not",
    ignore,
    async fn() {
      const a = (await artifacts()).find((x) => x.target === target)!;
      const bytes = await Deno.readFile(join(DIR, a.file));
      const report = checkMachO(bytes, arch);
      assertEquals(report.flags & 0x2, 0x2);
      assertEquals(report.pages, Math.ceil(report.codeLimit / report.pageSize));
      assert(report.codeLimit + report.signatureBytes <= bytes.length);

      // One byte of code (in the middle of the bundle-carrying pages).
      const code = bytes.slice();
      const at = Math.floor(report.codeLimit * 0.9);
      code[at] = code[at]! ^ 0x01;
      refused(code, arch, /^page \d+ /);
      // Bytes appended after the signature.
      const longer = new Uint8Array(bytes.length + 16);
      longer.set(bytes);
      refused(longer, arch, /__LINKEDIT ends at/);
      // The other architecture.
      refused(bytes, arch === "arm64" ? "x86_64" : "arm64", /^CPU type/);
      // A byte of a special slot's blob (the requirements), when there is one.
      if (report.specialSlots.includes(-2)) {
        const req = bytes.slice();
        const sig = report.codeLimit;
        // The requirements blob's magic, 0xfade0c01, inside the signature.
        const i = req.subarray(sig).findIndex((_, k, s) =>
          s[k] === 0xfa && s[k + 1] === 0xde && s[k + 2] === 0x0c && s[k + 3] === 0x01
        );
        assert(i >= 0, "no requirements blob found");
        req[sig + i + 11] = req[sig + i + 11]! ^ 0x01;
        refused(req, arch, /special slot -2/);
      }
    },
  });
}

Deno.test("sourceCommit() names the commit of a git checkout, marks uncommitted changes -dirty, and says when the tree is not a git checkout", async () => {
  const { sourceCommit } = await import("../../scripts/_toolchain.ts");
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-source-" });
  try {
    assertEquals(await sourceCommit(dir), "unknown (not a git checkout)");
    const git = async (...args: string[]) => {
      const r = await new Deno.Command("git", {
        args: ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", ...args],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert(r.success, new TextDecoder().decode(r.stderr));
      return new TextDecoder().decode(r.stdout).trim();
    };
    await git("init", "-q");
    await Deno.writeTextFile(join(dir, "a.txt"), "a\n");
    await git("add", "a.txt");
    await git("commit", "-q", "-m", "one");
    const head = await git("rev-parse", "HEAD");
    assertEquals(await sourceCommit(dir), head);
    await Deno.writeTextFile(join(dir, "a.txt"), "changed\n");
    assertEquals(await sourceCommit(dir), `${head}-dirty`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--version names the source: null from the source tree, the defined commit in a bundle", async () => {
  const { main } = await import("../../lib/cli/main.ts");
  let out = "";
  const status = await main(["--version", "--json"], (fd, text) => {
    if (fd === 1) out += typeof text === "string" ? text : new TextDecoder().decode(text);
  });
  assertEquals(status, 0);
  assertEquals(JSON.parse(out).source, null);
});
