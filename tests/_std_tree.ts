/**
 * A deterministic workspace shaped like the denoland/std repository (about
 * 2,800 files: one directory per module with `deno.json`, `mod.ts`, sources,
 * `_test.ts` files, `testdata/` and a few binary fixtures), for tests of
 * answer sizes that must hold on a real repository. There is no network in
 * the test environment, so the tree is generated rather than cloned.
 *
 * @module
 */
import { join } from "node:path";

const MODULES = [
  "assert",
  "async",
  "bytes",
  "cache",
  "cbor",
  "cli",
  "collections",
  "crypto",
  "csv",
  "data_structures",
  "datetime",
  "dotenv",
  "encoding",
  "expect",
  "fmt",
  "front_matter",
  "fs",
  "html",
  "http",
  "ini",
  "internal",
  "io",
  "json",
  "jsonc",
  "log",
  "media_types",
  "msgpack",
  "net",
  "path",
  "random",
  "regexp",
  "semver",
  "streams",
  "tar",
  "testing",
  "text",
  "toml",
  "ulid",
  "uuid",
  "webgpu",
  "yaml",
];

const WORDS = [
  "parse",
  "stringify",
  "format",
  "compare",
  "equals",
  "deep_merge",
  "chunk",
  "distinct_by",
  "to_readable_stream",
  "text_line_stream",
  "delimiter_stream",
  "common",
  "constants",
  "types",
  "unstable_retry",
  "walk",
  "expand_glob",
  "copy",
  "ensure_dir",
  "move",
  "join_globs",
  "normalize",
  "relative",
  "resolve",
  "basename",
  "extname",
  "from_file_url",
  "to_file_url",
  "is_glob",
  "glob_to_regexp",
  "assert_equals",
  "assert_throws",
  "mock",
  "snapshot",
  "bdd",
  "time",
  "file_server",
  "cookie",
  "negotiation",
  "status",
];

/** One pseudo-random generator, so the tree is the same on every run. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** The relative paths and contents of a std-like tree of about `files` files. */
export function stdTree(files = 2800): Map<string, string | Uint8Array> {
  const random = lcg(2800);
  const out = new Map<string, string | Uint8Array>();
  const body = (name: string, lines: number) =>
    `// Copyright 2018-2026 the Deno authors. MIT license.\n` +
    `// This module is browser compatible.\n\n` +
    Array.from(
      { length: lines },
      (_, i) =>
        `export function ${name.replaceAll("-", "_")}_${i}(value: string): string {\n` +
        `  return value.slice(${i}) + ${JSON.stringify(name)};\n}\n`,
    ).join("\n");
  let m = 0;
  while (out.size < files) {
    const module = MODULES[m % MODULES.length]!;
    const round = Math.floor(m / MODULES.length);
    m++;
    if (round === 0) {
      out.set(`${module}/deno.json`, JSON.stringify({ name: `@std/${module}`, version: "1.0.0" }));
      out.set(`${module}/mod.ts`, body(`${module}_mod`, 3));
      out.set(`${module}/README.md`, `# @std/${module}\n\nUtilities for ${module}.\n`);
    }
    for (let i = 0; i < 6 && out.size < files; i++) {
      const word = WORDS[Math.floor(random() * WORDS.length)]!;
      const name = `${word}_${round}${i}`;
      const dir = random() < 0.2 ? `${module}/_${word}` : module;
      out.set(`${dir}/${name}.ts`, body(name, 2 + Math.floor(random() * 12)));
      out.set(`${dir}/${name}_test.ts`, body(`test_${name}`, 1 + Math.floor(random() * 6)));
      if (random() < 0.15) {
        out.set(
          `${module}/testdata/${word}/${name}_fixture_with_a_long_descriptive_name.txt`,
          `fixture ${name}\n`.repeat(1 + Math.floor(random() * 40)),
        );
      }
      if (random() < 0.03) {
        const bytes = new Uint8Array(512 + Math.floor(random() * 4096));
        for (let b = 0; b < bytes.length; b++) bytes[b] = Math.floor(random() * 256);
        out.set(`${module}/testdata/${name}.bin`, bytes);
      }
    }
  }
  out.set("deno.json", JSON.stringify({ workspace: MODULES.map((m) => `./${m}`) }, null, 2));
  out.set(".gitignore", "/node_modules\n**/cov/\n");
  return out;
}

/** Writes `tree` under `root`. */
export async function writeTree(
  root: string,
  tree: Map<string, string | Uint8Array>,
): Promise<void> {
  const dirs = new Set<string>();
  for (const rel of tree.keys()) {
    const dir = join(root, rel, "..");
    if (!dirs.has(dir)) {
      await Deno.mkdir(dir, { recursive: true });
      dirs.add(dir);
    }
  }
  for (const [rel, content] of tree) {
    if (typeof content === "string") await Deno.writeTextFile(join(root, rel), content);
    else await Deno.writeFile(join(root, rel), content);
  }
}
