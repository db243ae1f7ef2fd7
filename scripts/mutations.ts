/**
 * The curated mutations `deno task mutate` applies (see scripts/mutate.ts):
 * each removes or weakens one defence the way a refactor might (a check
 * skipped, a condition inverted, a flag dropped) and names the test runs
 * that must fail. docs/SECURITY.md's threat table names, per threat, the ids
 * here that prove its tests; tests/docs_test.ts checks that every id it
 * names exists.
 *
 * Editing: `find` must occur exactly once in `file` (quote enough context);
 * an entry that no longer applies stops the check with its file and text.
 * Keep `filter`s narrow (a test name, or a `/regex/`): each run is a fresh
 * `deno test --no-check` of one file.
 *
 * @example
 * ```ts
 * import { MUTATIONS } from "./mutations.ts";
 * if (MUTATIONS.length < 40) throw new Error("at least 40 mutations");
 * if (new Set(MUTATIONS.map((m) => m.id)).size !== MUTATIONS.length) throw new Error("unique ids");
 * ```
 * @module
 */

/** One test run expected to fail under a mutation. */
export interface TestRun {
  /** Test file, relative to the repository root. */
  file: string;
  /** `deno test --filter` value: a substring of test names, or `/regex/`. */
  filter?: string;
}

/** One mutation: replace `find` (exactly once in `file`) by `replace`; some `tests` must fail. */
export interface Mutation {
  /** Stable kebab-case id, named in docs/SECURITY.md. */
  id: string;
  /** File to mutate, relative to the repository root. */
  file: string;
  /** Exact text, occurring exactly once in `file`. */
  find: string;
  /** Its replacement. */
  replace: string;
  /** Runs expected to fail (tried in order; the first failure catches it). */
  tests: TestRun[];
  /**
   * For a mutation whose failure is a hang (a timeout removed): each run is
   * killed after this many milliseconds, which counts as caught.
   */
  timeoutMs?: number;
}

const t = (file: string, filter?: string): TestRun =>
  filter === undefined ? { file: `tests/${file}` } : { file: `tests/${file}`, filter };

/** The list, grouped by area. */
export const MUTATIONS: readonly Mutation[] = [
  // --- bundle and tar -----------------------------------------------------------------------
  {
    id: "tar-member-size-limit",
    file: "lib/format/tar.ts",
    find: "if (header.size > this.#maxMemberBytes) {",
    replace: "if (false && header.size > this.#maxMemberBytes) {",
    tests: [t("share/share_test.ts", "a bundle member declaring a size above the limit")],
  },
  {
    id: "tar-duplicate-member",
    file: "lib/format/tar.ts",
    find: "if (this.#names.has(header.name)) {",
    replace: "if (false) {",
    tests: [t("share/share_test.ts", "bundles crafted with ../x")],
  },

  // --- verify and trust ---------------------------------------------------------------------
  {
    id: "verify-file-every-signer-trusted",
    file: "lib/share/verify_file.ts",
    find: "trusted: valid && snapshots.every((s) => s.trusted),",
    replace: "trusted: valid && snapshots.some((s) => s.trusted),",
    tests: [t("share/share_test.ts", "mixing a pinned and an unpinned signer")],
  },
  {
    id: "verify-file-full-key-argument",
    file: "lib/share/verify_file.ts",
    find: "trusted: valid && trust.isTrusted(keyId, envelope.signature.public_key),",
    replace: "trusted: valid && trust.isTrusted(keyId),",
    tests: [t("share/share_test.ts", "verifyStream() compares the full public key")],
  },
  {
    id: "keyring-full-key-compare",
    file: "lib/keys/keyring.ts",
    find: "return publicKeyHex === undefined || publicKeyHex === pinned.publicKeyHex;",
    replace: "return true;",
    tests: [
      t(
        "crypto/crypto_test.ts",
        "Keyring trusts a key id only together with the exact pinned public key",
      ),
    ],
  },
  {
    id: "envelope-key-id-binding",
    file: "lib/format/envelope.ts",
    find:
      'if (typeof sig.key_id !== "string" || sig.key_id !== keyIdOf(fromHex(sig.public_key, 32))) {',
    replace: 'if (typeof sig.key_id !== "string") {',
    tests: [t("share/share_test.ts", "key_id names a pinned key but whose public key is another")],
  },
  {
    id: "envelope-unknown-field",
    file: "lib/format/envelope.ts",
    find: 'if (!["id", "body", "signature"].includes(key)) fail(`unknown field ${quote(key)}`);',
    replace: "",
    tests: [t("repository/store_test.ts", "parseEnvelope refuses extra fields")],
  },
  {
    id: "envelope-alg",
    file: "lib/format/envelope.ts",
    find: 'if (sig.alg !== "ed25519") fail(',
    replace: 'if (sig.alg === "none") fail(',
    tests: [t("repository/store_test.ts", "parseEnvelope refuses extra fields")],
  },
  {
    id: "ed25519-canonical-s",
    file: "lib/crypto/ed25519.ts",
    find: "if (littleEndian(signature.subarray(32)) >= L) return false;",
    replace: "",
    tests: [t("crypto/crypto_test.ts", "both backends agree on Ed25519 verification edge cases")],
  },

  // --- canonical JSON -----------------------------------------------------------------------
  {
    id: "canonical-json-key-order",
    file: "lib/encoding/canonical_json.ts",
    find: "const keys = Object.keys(value).sort();",
    replace: "const keys = Object.keys(value);",
    tests: [t("encoding/encoding_test.ts", "canonicalize() sorts")],
  },
  {
    id: "canonical-json-duplicate-key",
    file: "lib/encoding/canonical_json.ts",
    find: "if (Object.hasOwn(result, key)) this.#fail(`Duplicate key ${quote(key)}`, keyPos);",
    replace: "",
    tests: [t("encoding/encoding_test.ts", "parseJson() rejects a duplicate key")],
  },
  {
    id: "canonical-json-integers-only",
    file: "lib/encoding/canonical_json.ts",
    find: "if (this.#integersOnly && !Number.isSafeInteger(value)) {\n      this.#fail(\n",
    replace: "if (false) {\n      this.#fail(\n",
    tests: [t("encoding/encoding_test.ts", "canonicalize() refuses a non-integer by default")],
  },

  // --- keys and the verifier's configuration -------------------------------------------------
  {
    id: "config-private-mode",
    file: "lib/keys/_config_files.ts",
    find: "if (isPrivate && (stat.mode & 0o077) !== 0) {",
    replace: "if (false) {",
    tests: [
      t("crypto/crypto_test.ts", "loadIdentity() refuses a key file readable by group or others"),
    ],
  },
  {
    id: "config-group-writable",
    file: "lib/keys/_config_files.ts",
    find: "if (!isPrivate && (stat.mode & 0o022) !== 0) {",
    replace: "if (false) {",
    tests: [
      t(
        "keys/verifier_config_test.ts",
        "verify FILE refuses a trusted_keys.json writable by others",
      ),
    ],
  },
  {
    id: "config-not-regular-file",
    file: "lib/keys/_config_files.ts",
    find: "if (!before.isFile()) {",
    replace: "if (false) {",
    tests: [
      t(
        "keys/verifier_config_test.ts",
        "readKeyFile and readTrustedKeys throw ConfigError for devices",
      ),
    ],
  },

  // --- workspace capture and secrets ---------------------------------------------------------
  {
    id: "safe-read-same-inode",
    file: "lib/workspace/io/safe_read.ts",
    find: "if (stat.ino !== expected.ino || stat.dev !== expected.dev) {",
    replace: "if (false) {",
    tests: [
      t(
        "workspace/io_test.ts",
        "a file replaced by another regular file between lstat and open is refused",
      ),
    ],
  },
  {
    id: "walk-secret-names",
    file: "lib/workspace/io/walk.ts",
    find:
      '      !allowSecrets.has(path)\n    ) {\n      yield { kind: "skip", path, reason: "secret" };',
    replace:
      '      !allowSecrets.has(path) && false\n    ) {\n      yield { kind: "skip", path, reason: "secret" };',
    tests: [t("workspace/secrets_test.ts", "create leaves secrets out by name and by content")],
  },
  {
    id: "secret-scan-pem",
    file: "lib/workspace/io/secret_scan.ts",
    find: 'if (PEM.test(text)) return "private key";',
    replace: "",
    tests: [t("workspace/secrets_test.ts", "SecretScanner recognises private keys")],
  },
  {
    id: "secret-scan-candidates",
    file: "lib/workspace/io/secret_scan.ts",
    find: "|AKIA|ASIA|gh[pousr]_|",
    replace: "|AKIA|gh[pousr]_|",
    tests: [
      t(
        "workspace/secrets_test.ts",
        "SecretScanner recognises private keys and tokens and leaves ordinary text alone",
      ),
    ],
  },
  {
    id: "allow-secrets-writable",
    file: "lib/repository/_policy_file.ts",
    find: "if (uid !== null && (stat.mode & 0o022) !== 0) {",
    replace: "if (false) {",
    tests: [
      t("workspace/secrets_test.ts", "readAllowSecrets refuses a list writable by group or others"),
    ],
  },
  {
    id: "reserved-name-fold",
    file: "lib/workspace/io/reserved.ts",
    find: "return FOLDED_RESERVED.some((long) => stem === long || isShortNameOf(stem, long));",
    replace: "return FOLDED_RESERVED.some((long) => stem === long);",
    tests: [
      t("security/hostile_repo_test.ts", "reserved names: validateTree refuses every spelling"),
    ],
  },
  {
    id: "tree-reserved-segment",
    file: "lib/format/tree.ts",
    find: 'if (entry.path.split("/").some(isReservedName)) {',
    replace: "if (isReservedName(entry.path)) {",
    tests: [t("repository/store_test.ts", "validateTree refuses any entry inside a reserved name")],
  },

  // --- three-way planning and the conflict policy --------------------------------------------
  {
    id: "policy-changed-since-baseline",
    file: "lib/workspace/overwrite.ts",
    find: 'if (entriesMatch(disk, base)) return { kind: "take", forced: false };',
    replace: 'return { kind: "take", forced: false };',
    tests: [
      t(
        "workspace/restore_test.ts",
        "an edit made outside ctxsnap after the baseline is a conflict",
      ),
    ],
  },
  {
    id: "policy-preserve-local",
    file: "lib/workspace/overwrite.ts",
    find: '      : { kind: "preserve" };',
    replace: '      : { kind: "take", forced: false };',
    tests: [t("workspace/move_test.ts", "restore: every base/disk/target combination")],
  },
  {
    id: "policy-force-only-when-asked",
    file: "lib/workspace/overwrite.ts",
    find: 'if (overwrite !== "none") return { kind: "take", forced: true };',
    replace: 'return { kind: "take", forced: true };',
    tests: [
      t(
        "workspace/restore_test.ts",
        "an edit made outside ctxsnap after the baseline is a conflict",
      ),
    ],
  },
  {
    id: "plan-keep-skipped",
    file: "lib/workspace/plan.ts",
    find: "for (const record of input.disk.skipped) keep(record.path);",
    replace: "",
    tests: [t("workspace/move_test.ts", "planMove() keeps a path the capture skipped")],
  },
  {
    id: "plan-parent-stays",
    file: "lib/workspace/plan.ts",
    find: 'if (reason === null && staysBelow.has(write.path)) reason = "directory_in_the_way";',
    replace: "",
    tests: [t("workspace/move_test.ts", "planMove() keeps a path the capture skipped")],
  },

  // --- restore writes and stored plans -------------------------------------------------------
  {
    id: "safe-write-dir-nofollow",
    file: "lib/workspace/io/safe_write.ts",
    find:
      "const DIR_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0) |\n  fs.constants.O_NOFOLLOW;",
    replace: "const DIR_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0);",
    tests: [t("workspace/io_test.ts", "SafeWriter opens every directory O_NOFOLLOW")],
  },
  {
    id: "safe-write-location-recheck",
    file: "lib/workspace/io/safe_write.ts",
    find: "if (actual !== expected) throw replaced(forPath);",
    replace: "",
    tests: [
      t("workspace/io_test.ts", "SafeWriter refuses to write through a parent directory replaced"),
    ],
  },
  {
    id: "restore-mode-bits",
    file: "lib/workspace/io/mode.ts",
    find: "return recorded & 0o775;",
    replace: "return recorded & 0o7777;",
    tests: [
      t("security/hostile_repo_test.ts", "modes: restored and materialized files honour the umask"),
    ],
  },
  {
    id: "stored-plan-reserved-segment",
    file: "lib/workspace/move/_stored_plan.ts",
    find: 'if (item.split("/").some(isReservedName)) {',
    replace: "if (isReservedName(item)) {",
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "validateStoredPlan() refuses a reserved name in any segment",
      ),
    ],
  },
  {
    id: "stored-plan-against-trees",
    file: "lib/workspace/move/_stored_plan.ts",
    find: "if (!pre.has(rel)) fail(`it deletes ${quote(rel)}, which the workspace did not hold`);",
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "recover: a crafted plan naming .git internals")],
  },
  {
    id: "store-location-refused",
    file: "lib/workspace/restore_paths.ts",
    find: "if (isInsideReservedPath(rel, location)) {",
    replace: "if (false) {",
    tests: [
      t("security/hostile_repo_test.ts", "custom store: restore and materialize refuse a tree"),
    ],
  },

  // --- git ----------------------------------------------------------------------------------
  {
    id: "git-fsmonitor",
    file: "lib/integrations/git/git.ts",
    find: '  "core.fsmonitor=false",\n',
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "git: create and restore --git never run")],
  },
  {
    id: "git-hooks-path",
    file: "lib/integrations/git/git.ts",
    find: '  "core.hooksPath=/dev/null",\n',
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "git: create and restore --git never run")],
  },
  {
    id: "git-filter-overrides",
    file: "lib/integrations/git/git.ts",
    find: "return spawnGit(cwd, [...SAFE_ARGS, ...filters, ...args], env);",
    replace: "return spawnGit(cwd, [...SAFE_ARGS, ...args], env);",
    tests: [t("security/hostile_repo_test.ts", "git: create and restore --git never run")],
  },
  {
    id: "git-work-tree-pinned",
    file: "lib/integrations/git/git.ts",
    find: "  env.GIT_WORK_TREE = top;\n",
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "git: core.worktree in .git/config")],
  },
  {
    id: "git-timeout",
    file: "lib/integrations/git/git.ts",
    find: "      timeout: gitTimeoutMs(),\n",
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "git: a .git/config that makes git block")],
    timeoutMs: 90_000,
  },
  {
    id: "git-allow-protocol",
    file: "lib/integrations/git/git.ts",
    find: '  env.GIT_ALLOW_PROTOCOL = "";\n',
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "git: a repository's protocol.<name>.allow")],
  },
  {
    id: "git-submodule-recurse",
    file: "lib/integrations/git/git.ts",
    find: '  "submodule.recurse=false",\n',
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "git: submodule.recurse in .git/config")],
  },
  {
    id: "git-env-dropped",
    file: "lib/integrations/git/git.ts",
    find: "const unset = inheritedDropped(env);",
    replace: "const unset: string[] = [];",
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "git: every git run carries exactly the documented overrides",
      ),
    ],
  },
  {
    id: "git-optional-locks",
    file: "lib/integrations/git/git.ts",
    find: '  env.GIT_OPTIONAL_LOCKS = "0";\n',
    replace: "",
    tests: [
      t("cli/cli_test.ts", "create records the git anchor and leaves .git/index byte-identical"),
    ],
  },

  // --- store ----------------------------------------------------------------------------------
  {
    id: "store-path-writable",
    file: "lib/repository/trust.ts",
    find: "if ((stat.mode & 0o022) !== 0) {",
    replace: "if (false) {",
    tests: [
      t("security/hostile_repo_test.ts", "store trust: every store path is checked with lstat"),
    ],
  },
  {
    id: "store-schema-digest",
    file: "lib/repository/trust.ts",
    find: 'sha256Hex(actual.join("\\n")) === CURRENT_SCHEMA_DIGEST',
    replace: 'sha256Hex(actual.join("\\n")) !== ""',
    tests: [t("security/hostile_repo_test.ts", "store trust: a schema with an extra trigger")],
  },
  {
    id: "store-schema-exact",
    file: "lib/repository/trust.ts",
    find: "if (extra.length === 0 && missing.length === 0) return;",
    replace: "return;",
    tests: [t("security/hostile_repo_test.ts", "store trust: a schema with an extra trigger")],
  },

  // --- import --------------------------------------------------------------------------------

  // --- remote --------------------------------------------------------------------------------
  {
    id: "remote-rollback-stale",
    file: "lib/remote/pull.ts",
    find: "(record.seq < state.seq || (record.seq === state.seq && hash !== state.record))",
    replace: "false",
    tests: [t("remote/remote_test.ts", "a rolled-back ref is reported stale")],
  },

  // --- terminal text, the page and serve -----------------------------------------------------
  {
    id: "escape-text-bidi",
    file: "lib/errors.ts",
    find:
      "/[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]/g;",
    replace: "/[\\u0000-\\u001f\\u007f-\\u009f]/g;",
    tests: [t("cli/honest_output_test.ts", "escapeText and quote() escape")],
  },
  {
    id: "output-escapes-lines",
    file: "lib/cli/output.ts",
    find: 'return text.split("\\n").map(escapeText).join("\\n");',
    replace: "return text;",
    tests: [t("cli/honest_output_test.ts", "/Output escapes|fakes the OK verdict/")],
  },
  {
    id: "serve-host-check",
    file: "lib/view/serve.ts",
    find: "if (req.headers.host !== `127.0.0.1:${port}`) {",
    replace: "if (false) {",
    tests: [t("view/view_test.ts", "serve refuses a Host other than 127.0.0.1:port")],
  },
  {
    id: "serve-origin-check",
    file: "lib/view/serve.ts",
    find: "if (origin !== undefined && origin !== `http://127.0.0.1:${port}`) {",
    replace: "if (false) {",
    tests: [t("view/view_test.ts", "serve refuses a Host other than 127.0.0.1:port")],
  },
  {
    id: "serve-token",
    file: "lib/view/serve.ts",
    find: 'if (segments.length < 3 || !sameSecret(segments[1] ?? "", token)) {',
    replace: "if (segments.length < 3) {",
    tests: [
      t(
        "view/view_test.ts",
        "serve listens on 127.0.0.1 only and refuses every request without the token",
      ),
    ],
  },

  // --- watch, hook and MCP -------------------------------------------------------------------
  {
    id: "watch-token",
    file: "lib/integrations/watch/server.ts",
    find: "if (!sameToken(request.token, this.info.token)) {",
    replace: "if (false) {",
    tests: [t("integrations/watch_test.ts", "watch: requests without its token")],
  },
  {
    id: "watch-config-dir",
    file: "lib/integrations/watch/server.ts",
    find: "if (request.config_dir !== null && request.config_dir !== configDir()) {",
    replace: "if (false) {",
    tests: [
      t("integrations/watch_test.ts", "watch: create and the hook hand their checkpoints to it"),
    ],
  },
  {
    id: "watch-info-private",
    file: "lib/integrations/watch/protocol.ts",
    find: "if (uid !== null && (stat.uid !== uid || (stat.mode & 0o077) !== 0)) return null;",
    replace: "",
    tests: [
      t(
        "integrations/watch_test.ts",
        "watch: files that are not private to the user are not trusted",
      ),
    ],
  },
  {
    id: "http-hook-token",
    file: "lib/integrations/watch/http_hooks.ts",
    find: '  if (!sameToken(given, conf.token)) return "token";',
    replace: "",
    tests: [
      t("integrations/http_hooks_test.ts", "http hooks: a request without the token is refused"),
      t("integrations/http_hooks_test.ts", "http hooks: a request with a wrong token is refused"),
    ],
  },
  {
    id: "http-hook-token-length",
    file: "lib/integrations/watch/http_hooks.ts",
    find:
      "function sameToken(given: string, expected: string): boolean {\n  if (given.length !== expected.length) return false;",
    replace:
      "function sameToken(given: string, expected: string): boolean {\n  if (given.length === 0) return false;",
    tests: [
      t("integrations/http_hooks_test.ts", "http hooks: a request with a wrong token is refused"),
    ],
  },
  {
    id: "http-hook-host",
    file: "lib/integrations/watch/http_hooks.ts",
    find: '  if (headers.host !== `127.0.0.1:${conf.port}`) return "host";',
    replace: "",
    tests: [t("integrations/http_hooks_test.ts", "http hooks: a request naming another Host")],
  },
  {
    id: "http-hook-origin",
    file: "lib/integrations/watch/http_hooks.ts",
    find: '  if (headers.origin !== undefined) return "origin";',
    replace: "",
    tests: [t("integrations/http_hooks_test.ts", "http hooks: a request carrying an Origin")],
  },
  {
    id: "http-hook-content-type",
    file: "lib/integrations/watch/http_hooks.ts",
    find:
      '  if (type !== "application/json" && type !== "application/json;charset=utf-8") return "type";',
    replace: "",
    tests: [t("integrations/http_hooks_test.ts", "http hooks: a body of another content type")],
  },
  {
    id: "http-hook-body-size",
    file: "lib/integrations/watch/http_hooks.ts",
    find: "      if (!keep || size > MAX_EVENT_BYTES) return resolve(null);",
    replace: "      if (!keep) return resolve(null);",
    tests: [t("integrations/http_hooks_test.ts", "http hooks: an oversized body is refused")],
  },
  {
    id: "http-hook-method",
    file: "lib/integrations/watch/http_hooks.ts",
    find: '  if (req.method !== "POST") return "method";',
    replace: "",
    tests: [t("integrations/http_hooks_test.ts", "http hooks: GET (or a path other")],
  },
  {
    id: "http-conf-private",
    file: "lib/integrations/watch/http_hooks.ts",
    find:
      "    if (uid !== null && (stat.uid !== uid || (stat.mode & 0o077) !== 0)) return null;\n    const buffer = new Uint8Array(stat.size);\n    const n =",
    replace: "    const buffer = new Uint8Array(stat.size);\n    const n =",
    tests: [t("integrations/http_hooks_test.ts", "http hooks: run/http.json is private")],
  },
  {
    id: "http-install-tracked",
    file: "lib/integrations/watch/claude_code_http.ts",
    find:
      'if (top !== null && runGit(top, ["ls-files", "--error-unmatch", "--", relTop!]).status === 0) {',
    replace: "if (false) {",
    tests: [
      t(
        "integrations/claude_code_http_test.ts",
        "hook install claude-code --http writes the token only into an untracked",
      ),
    ],
  },
  {
    id: "hook-token-secret-rule",
    file: "lib/workspace/io/secret_scan.ts",
    find: '      if (!inWord(text, m.index)) return "ctxsnap hook token";',
    replace: "",
    tests: [t("workspace/secrets_test.ts", "SecretScanner recognises a ctxsnap hook token")],
  },
  {
    id: "hook-prompt-in-key",
    file: "lib/history/agent.ts",
    find: "    return `prompt:${event.prompt_id}`;\n  }\n  return null;\n}",
    replace:
      '    return `prompt:${event.prompt_id}`;\n  }\n  return `${event.event}:${event.prompt_id ?? ""}`;\n}',
    tests: [t("integrations/hook_test.ts", "a byte-identical Stop after prompt 2")],
  },
  {
    id: "hook-tool-use-id-key",
    file: "lib/history/agent.ts",
    find: "    return `${event.event}:${event.tool_use_id}`;",
    replace: '    return `${event.event}:${event.prompt_id ?? ""}`;',
    tests: [
      t(
        "integrations/hook_test.ts",
        "hook: each event is recorded against the snapshot holding the workspace",
      ),
    ],
  },
  {
    id: "bundle-manifest-streamed",
    file: "lib/format/bundle.ts",
    find:
      "  if (size > DIAGNOSE_BYTES) {\n    reader.stream((chunk) => scanner.push(chunk));\n    return scanner.finish();\n  }\n",
    replace:
      "  if (size > DIAGNOSE_BYTES) {\n    return validateManifest(parseCanonical(reader.readAll(MAX_MANIFEST_BYTES), { maxBytes: MAX_MANIFEST_BYTES })) as never;\n  }\n",
    tests: [t("format/bundle_manifest_test.ts", "32 MiB manifest")],
  },
  {
    id: "manifest-scanner-sorted",
    file: "lib/format/_manifest.ts",
    find:
      "    if (this.count > 0 && compare(id, 0, this.#bytes, (this.count - 1) * 32) <= 0) return false;\n",
    replace: "",
    tests: [t("format/bundle_manifest_test.ts", "ManifestScanner refuses every departure")],
  },
  {
    id: "bundle-blob-hash",
    file: "lib/format/bundle.ts",
    find: "    if (hasher.digestHex() !== id) {",
    replace: "    if (false) {",
    tests: [t("share/bundle_sweep_test.ts", "every single-byte change anywhere in a bundle")],
  },
  {
    id: "git-safe-directory-left",
    file: "lib/integrations/git/git.ts",
    find: '  "submodule.recurse=false",\n];',
    replace: '  "submodule.recurse=false",\n  "safe.directory=*",\n];',
    tests: [t("security/hostile_repo_test.ts", "git: a repository owned by another user")],
  },
  {
    id: "hook-id-form",
    file: "lib/history/agent.ts",
    find: "const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;",
    replace: "const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;",
    tests: [t("integrations/hook_test.ts", "hook: problems go to stderr and exit 0")],
  },
  {
    id: "hook-lenient-exit",
    file: "lib/cli/main.ts",
    find: "      out.errorLine(await typed(error), `ctxsnap ${name}`);\n      return 0;",
    replace: "      out.errorLine(await typed(error), `ctxsnap ${name}`);\n      return 1;",
    tests: [t("integrations/hook_test.ts", "hook: problems go to stderr and exit 0")],
  },
  {
    id: "hook-no-store-found",
    file: "lib/repository/locate.ts",
    find:
      "  throw new NoStoreError(`No ctxsnap store in ${JSON.stringify(options.cwd)} or any parent`, {",
    replace:
      "  return path.join(path.resolve(options.cwd), DEFAULT_STORE_NAME);\n  throw new NoStoreError(`No ctxsnap store in ${JSON.stringify(options.cwd)} or any parent`, {",
    tests: [t("integrations/hook_test.ts", "hook: a missing store is reported and never created")],
  },
  {
    id: "store-registered",
    file: "lib/repository/trust.ts",
    find: "  if (!registered) {",
    replace: "  if (false) {",
    tests: [
      t("integrations/hook_test.ts", "hook: a store it did not create or adopt"),
      t("security/hostile_repo_test.ts", "store trust: a store committed into a repository"),
    ],
  },
  {
    id: "mcp-schema-pattern",
    file: "lib/cli/mcp/schema.ts",
    find: "        if (!re.test(value)) return `${where} has the wrong form`;\n",
    replace: "",
    tests: [t("cli/mcp_test.ts", "mcp: arguments are checked against the declared schemas")],
  },
  {
    id: "mcp-restore-never-forced",
    file: "lib/cli/mcp/tools.ts",
    find: '["restore", ...moveFlags(args), "--", ids.id!],',
    replace: '["restore", "--force", ...moveFlags(args), "--", ids.id!],',
    tests: [t("cli/mcp_test.ts", "mcp: restore never overwrites an edit")],
  },
  {
    id: "mcp-strict-json",
    file: "lib/cli/mcp/server.ts",
    find: "      value = parseJson(line, { maxBytes: MAX_MESSAGE_BYTES, integersOnly: false });",
    replace: "      value = JSON.parse(line);",
    tests: [t("cli/mcp_test.ts", "mcp: protocol version negotiation and malformed messages")],
  },
  {
    id: "import-untrusted-refused",
    file: "lib/share/import.ts",
    find: "  if (!report.trusted && !options.allowUntrusted) {",
    replace: "  if (false) {",
    tests: [t("share/share_test.ts", "import of an untrusted signer exits 3")],
  },
  {
    id: "identity-never-replaced",
    file: "lib/keys/identity.ts",
    find: '    if (errnoOf(error) === "EEXIST") return loadIdentity(dir);\n',
    replace: "",
    tests: [t("crypto/crypto_test.ts", "/one shared key/")],
  },
  {
    id: "key-export-public-only",
    file: "lib/cli/commands/key/export.ts",
    find: '} else ctx.out.raw(pem.endsWith("\\n") ? pem : pem + "\\n");',
    replace: "} else ctx.out.raw(await Deno.readTextFile(me.path));",
    tests: [
      t(
        "cli/cli_test.ts",
        "openssl reads the private identity key and derives the exported public key",
      ),
    ],
  },
  {
    id: "leanctx-float-exact",
    file: "lib/format/serde_f64.ts",
    find: "  const text = String(Math.abs(x));",
    replace: "  const text = String(Number(Math.abs(x).toPrecision(15)));",
    tests: [t("share/leanctx_test.ts", "a float changed by one ulp is tampered")],
  },
  {
    id: "leanctx-trust",
    file: "lib/share/leanctx.ts",
    find: '  return trust.isTrusted(check.keyId, sig.public_key) ? "trusted" : "untrusted";',
    replace: '  return "trusted";',
    tests: [
      t(
        "share/leanctx_test.ts",
        "every corpus file gives its expected outcome through verify FILE",
      ),
    ],
  },
  {
    id: "leanctx-domain",
    file: "lib/share/leanctx.ts",
    find: 'export const LEANCTX_SIGNING_PREFIX = "ctxsnapshot-sign-v1:";',
    replace: 'export const LEANCTX_SIGNING_PREFIX = "ctxsnap-snapshot-v1:";',
    tests: [
      t("share/leanctx_test.ts", "publish --format lean-ctx writes a file the independent checker"),
    ],
  },
  {
    id: "remote-blob-hash",
    file: "lib/remote/pull.ts",
    find:
      "      if (sha256Hex(bytes) !== id) {\n        throw new RefRefused(`blob ${id.slice(0, 12)} does not hash to its id`);",
    replace:
      "      if (false) {\n        throw new RefRefused(`blob ${id.slice(0, 12)} does not hash to its id`);",
    tests: [
      t("remote/remote_test.ts", "pull refuses tampered, truncated and withheld objects"),
      t("remote/pack_test.ts", "pull refuses an object whose packed bytes do not hash"),
    ],
  },
  {
    id: "remote-marker-version",
    file: "lib/remote/layout.ts",
    find: "  if (format !== REMOTE_FORMAT && format !== REMOTE_FORMAT_V1) {",
    replace: "  if (false) {",
    tests: [t("remote/pack_test.ts", "a remote whose marker names another layout is refused")],
  },
  {
    id: "pack-index-overlap",
    file: "lib/remote/pack.ts",
    find: "    if (entry.offset !== end) {",
    replace: "    if (entry.offset > end) {",
    tests: [
      t("remote/pack_test.ts", "pack index: overlapping ranges are refused"),
      t("remote/pack_test.ts", "pull refuses a pack index with overlapping ranges"),
    ],
  },
  {
    id: "pack-index-past-end",
    file: "lib/remote/pack.ts",
    find: "    if (offset + length > packLength) {",
    replace: "    if (false) {",
    tests: [
      t("remote/pack_test.ts", "pack index: a range past the end of the pack"),
      t("remote/pack_test.ts", "pull refuses a pack index with wrong offsets"),
    ],
  },
  {
    id: "pack-index-size-bound",
    file: "lib/remote/pack.ts",
    find: "    if (size > bound || length < 1 || length > maxEncodedBytes(size)) {",
    replace: "    if (false) {",
    tests: [
      t("remote/pack_test.ts", "pack index: oversize sizes, lengths, packs and entry counts"),
    ],
  },
  {
    id: "pack-index-length",
    file: "lib/remote/pack.ts",
    find: "  if (bytes.byteLength !== INDEX_HEADER_BYTES + INDEX_ENTRY_BYTES * count) {",
    replace: "  if (false) {",
    tests: [
      t("remote/pack_test.ts", "pack index: a truncated or padded index is refused"),
      t("remote/pack_test.ts", "pull refuses a truncated pack or index"),
    ],
  },
  {
    id: "pack-index-order",
    file: "lib/remote/pack.ts",
    find: "    if (id <= previous) refuse(pack,",
    replace: "    if (id < previous) refuse(pack,",
    tests: [t("remote/pack_test.ts", "pack index: entries out of order or repeated are refused")],
  },
  {
    id: "pull-pack-hash",
    file: "lib/remote/pull.ts",
    find:
      "          if (bytes.byteLength !== where.packLength || sha256Hex(bytes) !== where.pack) {",
    replace: "          if (false) {",
    tests: [
      t("remote/pack_test.ts", "pull refuses a pack whose bytes were changed under its id"),
      t("remote/pack_test.ts", "pull refuses a truncated pack or index"),
    ],
  },
  {
    id: "pull-pack-get-bound",
    file: "lib/remote/pull.ts",
    find: "await backend.get(packKey(where.pack), where.packLength)",
    replace: "await backend.get(packKey(where.pack), 64 * 1024 * 1024)",
    tests: [
      t(
        "remote/pack_test.ts",
        "pull refuses an oversize pack index, and a pack larger than its index says",
      ),
    ],
  },
  {
    id: "pull-pack-kind",
    file: "lib/remote/pull.ts",
    find: "      if (entry.kind !== kind) {",
    replace: "      if (false) {",
    tests: [t("remote/pack_test.ts", "pull refuses a pack index that files a tree as a blob")],
  },
  {
    id: "remote-ref-filed-under-signer",
    file: "lib/remote/pull.ts",
    find: "      record.key_id !== key.keyId || record.session !== key.session ||",
    replace: "      record.session !== key.session ||",
    tests: [
      t(
        "remote/remote_test.ts",
        "pull refuses a ref record that is forged, edited or filed under another signer",
      ),
    ],
  },
  {
    id: "remote-untrusted-refused",
    file: "lib/remote/pull.ts",
    find: "        if (!allowUntrusted && !trust.isTrusted(key_id, public_key)) {",
    replace: "        if (false) {",
    tests: [t("remote/remote_test.ts", "history holds an unpinned signer")],
  },
  {
    id: "remote-key-untrusted-refused",
    file: "lib/remote/pull.ts",
    find: "    if (!allowUntrusted && !trust.isTrusted(key.keyId)) {",
    replace: "    if (false) {",
    tests: [
      t(
        "remote/remote_test.ts",
        "snapshots of an unpinned signer are refused unless --allow-untrusted",
      ),
    ],
  },
  {
    id: "tree-reserved-names",
    file: "lib/format/tree.ts",
    find: 'if (entry.path.split("/").some(isReservedName)) {',
    replace: "if (false) {",
    tests: [t("remote/remote_test.ts", "a trusted signer's tree that writes into .git")],
  },
  {
    id: "remote-file-regular-only",
    file: "lib/remote/file_backend.ts",
    find: "    if (!stat.isFile()) {\n      fs.closeSync(fd);",
    replace: "    if (false) {\n      fs.closeSync(fd);",
    tests: [t("remote/remote_test.ts", "file:// remote: symlinks, FIFOs and non-files")],
  },
  {
    id: "restore-changed-while-planned",
    file: "lib/workspace/move/move.ts",
    find: "    if (moved.length > 0) {",
    replace: "    if (false) {",
    tests: [t("workspace/restore_test.ts", "a file saved between planning and applying a restore")],
  },
  {
    id: "move-record-walk-needs-stored-files",
    file: "lib/workspace/move/move.ts",
    find: 'planned.entries.every((e) => e.type !== "file" || store.hasObject(e.blob))',
    replace: "planned.entries.every(() => true)",
    tests: [
      t(
        "workspace/move_engine_test.ts",
        "a restore with nothing to write stores every file it records",
      ),
    ],
  },
  {
    id: "restore-git-dirty",
    file: "lib/workspace/move/restore.ts",
    find: "    if (state.blocking > 0) {\n      refuseOrNote(",
    replace: "    if (false) {\n      refuseOrNote(",
    tests: [
      t(
        "workspace/restore_test.ts",
        "/restore --git with a modified tracked file|restore --git with only an untracked file/",
      ),
    ],
  },
  {
    id: "recover-foreign-changes",
    file: "lib/workspace/move/recover.ts",
    find: "  if (foreign.length > 0 && !options.force) {",
    replace: "  if (false) {",
    tests: [
      t("security/hostile_repo_test.ts", "recover: a secret a crafted pre-restore tree lists"),
    ],
  },
  {
    id: "recover-git-back-as-ref",
    file: "lib/integrations/git/git.ts",
    find: '    return runGit(cwd, ["switch", "--quiet", "--no-guess", "--end-of-options", ref]);',
    replace: '    return runGit(cwd, ["checkout", "--quiet", ref]);',
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "recover --abort: a stored git_back naming a tracked file",
      ),
    ],
  },
  {
    id: "recover-stray-temps",
    file: "lib/workspace/move/recover.ts",
    find: "    writer.removeStrayTemps([...plan.writes, ...plan.deletes]);\n",
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "recover: every state a killed restore leaves")],
  },
  {
    id: "undo-record-tree-id",
    file: "lib/repository/undo_log.ts",
    find: '  if (typeof value === "string" && isHex(value, 64)) return value;',
    replace: '  if (typeof value === "string") return value;',
    tests: [t("history/oplog_test.ts", "undo refuses a tampered undo record")],
  },
  {
    id: "undo-changed-since",
    file: "lib/workspace/move/undo.ts",
    find: "  if (moved.length > 0) {\n    throw new ConflictError(\n      `Cannot ${direction}",
    replace: "  if (false) {\n    throw new ConflictError(\n      `Cannot ${direction}",
    tests: [
      t("history/oplog_test.ts", "undo refuses (exit 5) when what it would put back was changed"),
    ],
  },
  {
    id: "secret-scan-carry",
    file: "lib/workspace/io/secret_scan.ts",
    find: "    this.#carry = text.length > CARRY ? text.slice(text.length - CARRY) : text;",
    replace: '    this.#carry = "";',
    tests: [t("workspace/secrets_test.ts", "SecretScanner finds a secret split across two chunks")],
  },
  {
    id: "stat-cache-rules",
    file: "lib/workspace/capture.ts",
    find: "  return store.getMeta(SECRET_RULES_META) === plan.rules;",
    replace: "  return true;",
    tests: [
      t(
        "workspace/secrets_test.ts",
        "stat-cache rows from a capture under other secret rules are not trusted",
      ),
    ],
  },
  {
    id: "secret-scan-in-word",
    file: "lib/workspace/io/secret_scan.ts",
    find: "    if (inWord(text, m.index)) continue;\n",
    replace: "",
    tests: [
      t(
        "workspace/secrets_test.ts",
        "/leaves ordinary text alone|own sources and docs are not taken/",
      ),
    ],
  },
  {
    id: "store-path-symlink",
    file: "lib/repository/trust.ts",
    find: "  if (stat.isSymbolicLink()) {\n    throw new StoreTrustError(`The store path",
    replace: "  if (false) {\n    throw new StoreTrustError(`The store path",
    tests: [
      t("security/hostile_repo_test.ts", "store trust: every store path is checked with lstat"),
    ],
  },
  {
    id: "store-init-checked",
    file: "lib/repository/store.ts",
    find: "    checkStorePaths(storeDir, { requireIndex: false });\n",
    replace: "",
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "store trust: init never creates a store through a planted .ctxsnap symlink",
      ),
    ],
  },
  {
    id: "adopt-verifies",
    file: "lib/history/adopt.ts",
    find: "    if (problems.length > 0) {\n      throw new IntegrityError(",
    replace: "    if (false) {\n      throw new IntegrityError(",
    tests: [
      t("security/hostile_repo_test.ts", "store trust: adopt refuses a store that does not verify"),
    ],
  },
  {
    id: "cli-flag-not-declared-refused",
    file: "lib/cli/args.ts",
    find: "parsed = parseArgs({ args, options, allowPositionals: true, strict: true });",
    replace: "parsed = parseArgs({ args, options, allowPositionals: true, strict: false });",
    tests: [
      t("cli/tree_test.ts", "key show --force is a usage error (exit 2)"),
      t("cli/tree_test.ts", "property: every command refuses every flag it does not declare"),
    ],
  },
  {
    id: "app-nested-store-refused",
    file: "lib/app/workspace.ts",
    find: "  if (outer !== null && options.nested !== true) {",
    replace: "  if (false) {",
    tests: [
      t(
        "app/workspace_test.ts",
        "initStore() refuses a store nested in another store's workspace, as ctxsnap init does, unless nested: true",
      ),
      t(
        "cli/defaults_test.ts",
        "init refuses a store nested in another store's workspace (exit 5) unless --nested",
      ),
    ],
  },
  {
    id: "store-foreign-workspace",
    file: "lib/repository/store.ts",
    find: "    if (root === path.resolve(owner)) return;",
    replace: "    return;",
    tests: [
      t("cli/cli_test.ts", "a store found by walking up that names another workspace is refused"),
    ],
  },
  {
    id: "stored-envelope-verified",
    file: "lib/history/timeline.ts",
    find: "  if (!check.idMatches) {\n    throw new IntegrityError(\n      `Stored snapshot",
    replace: "  if (false) {\n    throw new IntegrityError(\n      `Stored snapshot",
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "envelopes: restore, switch, materialize, diff, show and publish refuse an envelope edited",
      ),
    ],
  },
  {
    id: "escape-text-c0",
    file: "lib/errors.ts",
    find: "/[\\u0000-\\u001f\\u007f-\\u009f\\u061c",
    replace: "/[\\u007f-\\u009f\\u061c",
    tests: [
      t("cli/cli_test.ts", "diff --stat and --patch show line counts"),
      t("cli/honest_output_test.ts", "list, log, branch list and session list escape names"),
    ],
  },
  {
    id: "page-embed-json",
    file: "lib/view/html.ts",
    find: "    /[<>&\\u2028\\u2029]/g,",
    replace: "    /[&]/g,",
    tests: [t("view/view_test.ts", "embedJson writes no <")],
  },
  {
    id: "page-client-text-only",
    file: "lib/view/client/main.ts",
    find: '  $("shown").textContent = visible.length === D.snapshots.length',
    replace: '  $("shown").innerHTML = visible.length === D.snapshots.length',
    tests: [t("view/view_test.ts", "the client script never turns data into markup or code")],
  },
  {
    id: "page-csp-default-none",
    file: "lib/view/html.ts",
    find: "    \"default-src 'none'\",",
    replace: '    "default-src *",',
    tests: [
      t("view/view_test.ts", "the page's policy allows exactly its one script and stylesheet"),
    ],
  },
  {
    id: "page-verified-needs-id",
    file: "lib/view/model.ts",
    find: "  const valid = check.idMatches && check.signatureValid && agrees;",
    replace: "  const valid = check.signatureValid;",
    tests: [t("view/view_test.ts", "an envelope altered in the index is shown as not verified")],
  },
  {
    id: "page-diff-size-limit",
    file: "lib/view/model.ts",
    find:
      "    (oldBlob?.size ?? 0) > limits.max_diff_input_bytes ||\n    (newBlob?.size ?? 0) > limits.max_diff_input_bytes\n",
    replace: "    false\n",
    tests: [t("view/view_test.ts", "size limits: too large, truncated and over-budget diffs")],
  },
  {
    id: "config-error-exit-7",
    file: "lib/errors.ts",
    find: '    super(message, "config", options);',
    replace: '    super(message, "failure", options);',
    tests: [
      t(
        "keys/verifier_config_test.ts",
        "verify FILE exits 7, not 1, when the verifier's identity.pem is readable by others",
      ),
    ],
  },
  {
    id: "verify-file-writes-nothing",
    file: "lib/cli/command.ts",
    find: "    return await loadIdentityAsync(configDir());",
    replace: "    return loadOrCreateIdentity(configDir());",
    tests: [t("share/share_test.ts", "verify FILE creates no identity or config directory")],
  },
  {
    id: "watch-no-answer-fallback",
    file: "lib/integrations/watch/client.ts",
    find: "  if (line === null) return null;\n  let response: unknown;",
    replace:
      '  if (line === null) throw new Error("the watch process did not answer");\n  let response: unknown;',
    tests: [
      t(
        "integrations/watch_test.ts",
        "watch client: a watch process that closes the connection without answering",
      ),
    ],
  },
  {
    id: "watch-request-size",
    file: "lib/integrations/watch/server.ts",
    find: "      if (size > MAX_REQUEST_BYTES) {",
    replace: "      if (false) {",
    tests: [t("integrations/watch_test.ts", "watch: requests without its token")],
    timeoutMs: 90_000,
  },
  {
    id: "incremental-events-marked",
    file: "lib/workspace/io/fs_events.ts",
    find: '      this.mark(dir === "" ? name : `${dir}/${name}`);\n',
    replace: "",
    tests: [
      t("workspace/incremental_test.ts", "property: the incremental tree equals a full capture"),
    ],
  },
  {
    id: "walk-special-files",
    file: "lib/workspace/io/walk.ts",
    find: "} else if (stats.isFile()) {",
    replace: "} else if (!stats.isDirectory()) {",
    tests: [t("workspace/io_test.ts", "a FIFO is reported as special_file")],
  },
  {
    id: "safe-read-torn",
    file: "lib/workspace/io/safe_read.ts",
    find:
      "    total !== size || after.size !== size || after.mtimeMs !== before.mtimeMs ||\n    after.ctimeMs !== before.ctimeMs || after.ino !== before.ino",
    replace: "    false",
    tests: [t("workspace/io_test.ts", "a file that grows while being read")],
  },
  {
    id: "safe-read-whole-changed",
    file: "lib/workspace/io/safe_read.ts",
    find:
      "    total !== size || after.size !== size || after.mtimeMs !== expected.mtimeMs ||\n    after.ctimeMs !== expected.ctimeMs\n",
    replace: "    false\n",
    tests: [
      t(
        "workspace/io_test.ts",
        "readRegularNoFollow's one-read path for a confirmed small file returns exactly its bytes, and a grown one whole",
      ),
    ],
  },
  {
    id: "walk-ignore-fail-closed",
    file: "lib/workspace/io/walk.ts",
    find:
      '            // Its ignore rules cannot be applied: leave the whole directory out.\n            yield { kind: "skip", path, reason: "unreadable", detail: reasonOf(error) };\n            continue;\n',
    replace: "            void error; // taken as absent\n",
    tests: [
      t("workspace/io_test.ts", "walk leaves out a directory whose ignore file cannot be applied"),
    ],
  },
  {
    id: "walk-store-excluded",
    file: "lib/workspace/io/walk.ts",
    find:
      "        (skipDirectory !== null && stats.ino === skipDirectory.ino &&\n          stats.dev === skipDirectory.dev)",
    replace: "        false",
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "custom store: a store at data/store excludes exactly that directory",
      ),
    ],
  },
  {
    id: "tar-member-name-allowed",
    file: "lib/format/tar.ts",
    find: "if (!this.#allowName(header.name)) {",
    replace: "if (false) {",
    tests: [t("format/tar_test.ts", "TarReader refuses a name the caller does not allow")],
  },
  {
    id: "bundle-manifest-cap",
    file: "lib/format/bundle.ts",
    find: "if (size > MAX_MANIFEST_BYTES) reader.readAll(MAX_MANIFEST_BYTES);",
    replace: "",
    tests: [t("share/share_test.ts", "a bundle member declaring a size above the limit")],
  },
  {
    id: "bundle-blob-size-vs-manifest",
    file: "lib/format/bundle.ts",
    find: "if (member.size !== size) {",
    replace: "if (false) {",
    tests: [t("share/share_test.ts", "a bundle member declaring a size above the limit")],
  },
  {
    id: "ed25519-small-order-key",
    file: "lib/crypto/ed25519.ts",
    find:
      "  if (SMALL_ORDER_ENCODINGS.has(toHex(publicKey))) return false;\n  if (SMALL_ORDER_ENCODINGS.has(toHex(r))) return false;",
    replace: "  if (SMALL_ORDER_ENCODINGS.has(toHex(r))) return false;",
    tests: [t("crypto/crypto_test.ts", "verify() refuses a small-order public key")],
  },
  {
    id: "safe-read-nofollow",
    file: "lib/workspace/io/safe_read.ts",
    find:
      "fd = openSync(absPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);",
    replace: "fd = openSync(absPath, constants.O_RDONLY | constants.O_NONBLOCK);",
    tests: [t("workspace/io_test.ts", "readRegularNoFollow() opens O_NOFOLLOW")],
  },
  {
    id: "plan-untracked-in-the-way",
    file: "lib/workspace/plan.ts",
    find: 'if (kind === "other" || (kind === "directory" && stays.has(write.path))) {',
    replace: "if (false) {",
    tests: [t("workspace/move_test.ts", "planMove() with a disk probe")],
  },
  {
    id: "import-same-file-rewritten",
    file: "lib/share/import.ts",
    find: "if (rewritten(before, fileIdentity(fd))) {",
    replace: "if (false) {",
    tests: [
      t(
        "share/share_test.ts",
        "import refuses a file rewritten in place between the passes even with the same bytes",
      ),
    ],
  },
  {
    id: "hook-prompt-text-opt-in",
    file: "lib/history/agent.ts",
    find:
      "prompt: options.recordPrompts && prompt !== null && prompt.isWellFormed() ? prompt : null,",
    replace: "prompt: prompt !== null && prompt.isWellFormed() ? prompt : null,",
    tests: [t("integrations/hook_test.ts", "hook: prompt text only with --record-prompts")],
  },
  {
    id: "store-inflate-bound",
    file: "lib/repository/store.ts",
    find: "const out = zlib().inflateRawSync(data, { maxOutputLength: Math.max(1, row.size) });",
    replace: "const out = zlib().inflateRawSync(data);",
    tests: [
      t("repository/store_test.ts", "Store.readBlob refuses compressed bytes that inflate past"),
    ],
  },
  {
    id: "remote-inflate-bound",
    file: "lib/remote/layout.ts",
    find: "maxOutputLength: Math.max(1, Math.min(maxSize, DEFLATE_MAX_BYTES)),",
    replace: "",
    tests: [t("remote/remote_test.ts", "remote objects: both encodings round-trip")],
  },
  {
    id: "secret-names-despite-negation",
    file: "lib/workspace/io/walk.ts",
    find:
      '      !allowSecrets.has(path)\n    ) {\n      yield { kind: "skip", path, reason: "secret" };',
    replace: '      false\n    ) {\n      yield { kind: "skip", path, reason: "secret" };',
    tests: [
      t(
        "workspace/secrets_test.ts",
        "a hostile .ctxsnapignore or .gitignore cannot re-include a secret",
      ),
    ],
  },
  // --- threat rows of the store folder, MCP, watch hand-off, remote bounds, received files ----
  {
    id: "create-validates-before-shortcut",
    file: "lib/history/create.ts",
    find: "if (invalid !== null) throw new UsageError(invalid);",
    replace: "if (false && invalid !== null) throw new UsageError(invalid);",
    tests: [t("workspace/secrets_test.ts", "create refuses a reason over 1,024 characters")],
  },
  {
    id: "mcp-answer-fit",
    file: "lib/cli/mcp/_bound.ts",
    find: "  if (size(value) <= limit) return value;",
    replace: "  if (true || size(value) <= limit) return value;",
    tests: [t("cli/mcp_bound_test.ts", "mcp: on a std-sized repository")],
  },
  {
    id: "mcp-read-file-dotdot",
    file: "lib/cli/mcp/_read_file.ts",
    find: 'parts.some((p) => p === "..")',
    replace: "false",
    tests: [t("cli/mcp_test.ts", "mcp: read_file reads a file as a snapshot recorded it")],
  },
  {
    id: "mcp-read-file-binary-head",
    file: "lib/cli/mcp/_read_file.ts",
    find: "  if (head.includes(0)) {",
    replace: "  if (false) {",
    tests: [t("cli/mcp_test.ts", "mcp: read_file reads a file as a snapshot recorded it")],
  },
  {
    id: "mcp-verify-resolves-id",
    file: "lib/cli/mcp/tools.ts",
    find:
      '        ["id"],\n        async (ids) =>\n          bounded(\n            await command(ctx, ["verify", ...(ids.id !== undefined ? ["--", ids.id] : [])]',
    replace:
      '        [],\n        async () =>\n          bounded(\n            await command(ctx, ["verify", ...(args.id !== undefined ? ["--", args.id as string] : [])]',
    tests: [t("cli/mcp_test.ts", "mcp: a model chooses data, never paths")],
  },
  {
    id: "publish-below-reserved",
    file: "lib/share/publish.ts",
    find: "if (root !== store.dir && parts.some(isReservedName)) {",
    replace: "if (false) {",
    tests: [t("cli/mcp_test.ts", "mcp: a model chooses data, never paths")],
  },
  {
    id: "publish-below-exclusive",
    file: "lib/share/publish.ts",
    find: "}, { exclusive: below.replace !== true });",
    replace: "}, { exclusive: false });",
    tests: [t("cli/mcp_test.ts", "mcp: a model chooses data, never paths")],
  },
  {
    id: "s3-list-key-bound",
    file: "lib/remote/s3_backend.ts",
    find: "if (out.length >= bounds.keys) beyond(`${bounds.keys} keys`);",
    replace: "",
    tests: [t("remote/remote_test.ts", "s3 backend: hostile listings")],
  },
  {
    id: "s3-list-byte-bound",
    file: "lib/remote/s3_backend.ts",
    find: "const limit = Math.min(MAX_LIST_BODY, bounds.bytes - bytes);",
    replace: "const limit = MAX_LIST_BODY;",
    tests: [t("remote/remote_test.ts", "s3 backend: hostile listings")],
  },
  {
    id: "s3-list-repeated-token",
    file: "lib/remote/s3_backend.ts",
    find: "      if (tokens.has(token)) {",
    replace: "      if (false) {",
    tests: [t("remote/remote_test.ts", "s3 backend: hostile listings")],
  },
  {
    id: "file-backend-depth-bound",
    file: "lib/remote/file_backend.ts",
    find: 'if (depth > 64) beyond("64 directory levels");',
    replace: "",
    tests: [
      t("remote/remote_test.ts", "file backend: a shared directory nested deeper than 64 levels"),
    ],
  },
  {
    id: "pull-bytes-received-bound",
    file: "lib/remote/pull.ts",
    find: "new CountingBackend(inner, options.maxBytes ?? PULL_MAX_BYTES)",
    replace: "new CountingBackend(inner)",
    tests: [t("remote/remote_test.ts", "pull: more bytes received in all than its bound")],
  },
  {
    id: "clone-trusted-ref-only",
    file: "lib/remote/clone.ts",
    find: "r.head !== null && r.trusted &&",
    replace: "r.head !== null &&",
    tests: [
      t(
        "remote/remote_test.ts",
        "CLI: clone --allow-untrusted lands an unpinned signer's newer ref",
      ),
    ],
  },
  {
    id: "secret-names-pgp",
    file: "lib/workspace/io/capture_policy.ts",
    find: '  "private.asc",\n',
    replace: "",
    tests: [
      t("workspace/secrets_test.ts", "create leaves out private.asc and .vault-token by name"),
    ],
  },
  {
    id: "secret-scan-pgp-headers",
    file: "lib/workspace/io/secret_scan.ts",
    find: "String.raw`(?:[^\\r\\n\\\\]{1,200}${NL}){0,16}?",
    replace: "String.raw`(?:[^\\r\\n\\\\]{1,200}${NL}){0,4}?",
    tests: [
      t("workspace/secrets_test.ts", "SecretScanner recognises an armored PGP private-key block"),
    ],
  },
  {
    id: "secret-scan-pgp-short-lines",
    file: "lib/workspace/io/secret_scan.ts",
    find: "(?:[A-Za-z0-9+/=][ \\t]*${NL}?){40}`,",
    replace: "[A-Za-z0-9+/=]{40}`,",
    tests: [
      t("workspace/secrets_test.ts", "SecretScanner recognises an armored PGP private-key block"),
    ],
  },
  {
    id: "store-init-foreign-folder",
    file: "lib/repository/store.ts",
    find: "  if (foreign.length === 0) return;",
    replace: "  return;",
    tests: [t("security/hostile_repo_test.ts", "store folder: init refuses a committed .ctxsnap/")],
  },
  {
    id: "store-entries-expected",
    file: "lib/repository/trust.ts",
    find: "    const kind = STORE_ENTRIES[name];\n    if (kind === undefined) {",
    replace: "    const kind = STORE_ENTRIES[name];\n    if (false) {",
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "store folder: every entry of a store is expected and checked",
      ),
    ],
  },
  {
    id: "store-entries-checked",
    file: "lib/repository/trust.ts",
    find: 'if (kind === "directory" && name !== "objects") checkEntries(abs, name, uid);',
    replace: "",
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "store folder: every entry of a store is expected and checked",
      ),
    ],
  },
  {
    id: "capture-stamp-new-file",
    file: "lib/workspace/capture.ts",
    find:
      "  const stamp = store.tempPath();\n  const fd = fs.openSync(\n    stamp,\n    fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW,",
    replace:
      '  const stamp = path.join(store.dir, "tmp", "stamp");\n  const fd = fs.openSync(\n    stamp,\n    fs.constants.O_CREAT | fs.constants.O_WRONLY | fs.constants.O_TRUNC,',
    tests: [t("security/hostile_repo_test.ts", "store folder: capture's time stamp is a new file")],
  },
  {
    id: "publish-below-rooted-at-root",
    file: "lib/share/publish.ts",
    find:
      "  const writer = new SafeWriter(root);\n  let bytes = 0;\n  let manifest: BundleManifest | null = null;\n  try {\n    writer.writeFile(rel, 0o644,",
    replace:
      "  const writer = new SafeWriter(path.join(root, ...parts.slice(0, -1)));\n  let bytes = 0;\n  let manifest: BundleManifest | null = null;\n  try {\n    writer.writeFile(parts.at(-1)!, 0o644,",
    tests: [
      t("security/hostile_repo_test.ts", "store folder: publish's default published/ is written"),
    ],
  },
  {
    id: "gc-transcripts-freed",
    file: "lib/repository/transcript_rows.ts",
    find: "       JOIN snapshots s ON s.id = e.snapshot\n",
    replace: "       LEFT JOIN snapshots s ON s.id = e.snapshot\n",
    tests: [t("repository/gc_transcripts_test.ts", "gc removes a kept transcript")],
  },
  {
    id: "gc-transcripts-kept-while-named",
    file: "lib/repository/transcript_rows.ts",
    find: "       WHERE e.transcript_chain IS NOT NULL)",
    replace: "       WHERE e.transcript_chain IS NOT NULL AND e.created = 2)",
    tests: [t("repository/gc_transcripts_test.ts", "gc removes a kept transcript")],
  },
  {
    id: "undo-git-head-moved-left-alone",
    file: "lib/integrations/git/git.ts",
    find: 'if (headNow(cwd) !== from) return { moved: false, reason: "head_moved", detail: null };',
    replace: 'if (false) return { moved: false, reason: "head_moved", detail: null };',
    tests: [t("workspace/restore_test.ts", "undo of restore --git that git refuses")],
  },
  {
    id: "watch-close-ends-idle-connections",
    file: "lib/integrations/watch/server.ts",
    find: "for (const connection of this.idle) connection.destroy();",
    replace: "",
    tests: [t("integrations/watch_test.ts", "watch: SIGTERM while clients hold connections open")],
    timeoutMs: 90_000,
  },
  {
    id: "adopt-allow-list-refused",
    file: "lib/history/adopt.ts",
    find: 'out.push({ path: name, action: keep.has(name) ? "kept" : "refused" });',
    replace: 'out.push({ path: name, action: "kept" });',
    tests: [
      t("security/hostile_repo_test.ts", "store folder: init --adopt lists every non-core file"),
    ],
  },
  {
    id: "adopt-clears-tmp",
    file: "lib/history/adopt.ts",
    find: 'for (const entry of list("tmp")) out.push({ path: `tmp/${entry}`, action: "cleared" });',
    replace: 'for (const entry of list("tmp")) out.push({ path: `tmp/${entry}`, action: "kept" });',
    tests: [
      t("security/hostile_repo_test.ts", "store folder: init --adopt lists every non-core file"),
    ],
  },
  {
    id: "idempotency-imported-out-of-index",
    file: "lib/history/timeline.ts",
    find:
      "source_kind: imported ? null : b.source?.kind ?? null,\n    source_id: imported ? null : b.source?.id ?? null,",
    replace: "source_kind: b.source?.kind ?? null,\n    source_id: b.source?.id ?? null,",
    tests: [
      t("share/share_test.ts", "an imported snapshot never answers the user's own create --source"),
      t("remote/remote_test.ts", "a pulled snapshot never answers the user's own create --source"),
    ],
  },
  {
    id: "show-file-task-escaped",
    file: "lib/cli/commands/_body_lines.ts",
    find:
      'const lines = [`task       ${escapeText(c.task || "-")}`, `progress   ${c.progress_pct}%`];',
    replace: 'const lines = [`task       ${c.task || "-"}`, `progress   ${c.progress_pct}%`];',
    tests: [
      t("share/received_file_test.ts", "show FILE prints a received file's hostile text escaped"),
    ],
  },
  {
    id: "page-unnamed-signer-pinned",
    file: "lib/view/client/main.ts",
    find: '(s.signer.status === "trusted" ? "(pinned, no name)" : "(not pinned)")',
    replace: '"(not pinned)"',
    tests: [{
      file: "tests/view/timeline_browser.ts",
      filter: "a received file's page does not contradict itself",
    }],
  },
  {
    id: "verify-file-config-unreadable-warns",
    file: "lib/cli/_file_verdict.ts",
    find: "    if (!environmentReadable()) {\n      warn(",
    replace: "    if (!environmentReadable()) {\n      void (",
    tests: [
      t("share/received_file_test.ts", "verify FILE under Deno with --allow-read only warns"),
    ],
  },
  {
    id: "trust-key-id-refused",
    file: "lib/cli/command.ts",
    find: "  if (/^[0-9a-fA-F]{16}$/.test(trimmed)) {\n    throw new ConfigError(",
    replace: "  if (false) {\n    throw new ConfigError(",
    tests: [
      t("share/received_file_test.ts", "key mistakes name what was given and what is needed"),
    ],
  },
  {
    id: "trusted-keys-file-holds-key",
    file: "lib/keys/keyring.ts",
    find: 'if (head.startsWith("-----BEGIN") || /^[0-9a-fA-F]{64}\\s*$/.test(head)) {',
    replace: "if (false) {",
    tests: [
      t("share/received_file_test.ts", "key mistakes name what was given and what is needed"),
    ],
  },
  {
    id: "tamper-headline-where",
    file: "lib/cli/commands/_tamper.ts",
    find: "  return error.at ?? file;",
    replace: "  return file;",
    tests: [
      t("share/received_file_test.ts", "every kind of tampering prints the same TAMPERED headline"),
    ],
  },
  {
    id: "show-file-verifies-first",
    file: "lib/cli/commands/_show_file.ts",
    find:
      "  const tampered = signatureTamper(report);\n  if (tampered !== null) return reportTampered(ctx, source, tampered);\n",
    replace: "",
    tests: [t("share/received_file_test.ts", "show FILE verifies a bundle and prints its context")],
  },
  {
    id: "show-file-untrusted-headline",
    file: "lib/cli/commands/_show_file.ts",
    find: "  const headline = report.trusted\n",
    replace: "  const headline = true\n",
    tests: [t("share/received_file_test.ts", "show FILE verifies a bundle and prints its context")],
  },
  {
    id: "tar-end-marker-whole",
    file: "lib/format/tar.ts",
    find: 'if (!this.#fill(BLOCK)) throw this.#truncated("inside the end-of-archive marker");',
    replace: 'if (!this.#fill(BLOCK)) { this.#state = "done"; this.#current = null; return; }',
    tests: [t("share/received_file_test.ts", "content is authenticated, bytes are not")],
  },
  {
    id: "watch-socket-private-dir",
    file: "lib/integrations/watch/protocol.ts",
    find: "  if (!isPrivateDir(path.dirname(socket))) return false;\n",
    replace: "",
    tests: [
      t(
        "integrations/watch_test.ts",
        "watch client: a watch.json naming a socket outside a private directory",
      ),
    ],
  },
  {
    id: "watch-answer-read-back",
    file: "lib/cli/_checkpoint.ts",
    find: '      return refuse("this store does not hold with a valid signature");',
    replace: "      return;",
    tests: [
      t(
        "integrations/watch_test.ts",
        "watch client: an answer naming a snapshot this store does not hold",
      ),
    ],
  },
  {
    id: "watch-socket-dir-mkdtemp",
    file: "lib/integrations/watch/server.ts",
    find: '  const dir = fs.mkdtempSync(path.join(base, "ctxsnap-"));',
    replace:
      '  const dir = path.join(base, "ctxsnap-sockets");\n  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });',
    tests: [
      t(
        "integrations/watch_test.ts",
        "watch: a socket path too long for run/ goes to a fresh private mkdtemp",
      ),
    ],
  },
  {
    id: "overwrite-input-even-forced",
    file: "lib/cli/_overwrite.ts",
    find: "  for (const input of options.inputs ?? []) {",
    replace: "  for (const input of options.force === true ? [] : options.inputs ?? []) {",
    tests: [t("share/received_file_test.ts", "timeline --html refuses to replace its own input")],
  },
  {
    id: "overwrite-kind-checked",
    file: "lib/cli/_overwrite.ts",
    find: "  if (found === kind) return;",
    replace: "  return;",
    tests: [
      t(
        "share/received_file_test.ts",
        "/timeline --html over a published file|publish --out refuses to replace a file of another kind/",
      ),
    ],
  },
  // --- agent sessions, directory trees, chunks, retention, show/MCP names ---------------------
  {
    id: "agent-body-source-null",
    file: "lib/history/agent.ts",
    find: "      source: null,\n      reason: reasonOf(event),",
    replace:
      '      source: { kind: event.harness, id: `${sessionId}.${event.event}.${event.tool_use_id ?? event.prompt_id ?? "-"}` },\n      reason: reasonOf(event),',
    tests: [
      t(
        "integrations/hook_test.ts",
        "hook: each event is recorded against the snapshot holding the workspace",
      ),
    ],
  },
  {
    id: "agent-body-meta-ids-only",
    file: "lib/history/agent.ts",
    find: "      metadata: { ...(options.metadata ?? {}), agent: agentMeta },",
    replace:
      "      metadata: {\n        ...(options.metadata ?? {}),\n        agent: { ...agentMeta, tool_use_id: event.tool_use_id, prompt_id: event.prompt_id },\n      },",
    tests: [
      t(
        "integrations/hook_test.ts",
        "hook: each event is recorded against the snapshot holding the workspace",
      ),
    ],
  },
  {
    id: "agent-equal-bytes-retry",
    file: "lib/history/agent.ts",
    find: "    return `prompt:${event.prompt_id}`;\n  }\n  return null;\n}",
    replace:
      '    return `prompt:${event.prompt_id}`;\n  }\n  return `${event.event}:${event.tool ?? ""}:${event.detail ?? ""}:${event.prompt_id ?? ""}`;\n}',
    tests: [t("history/agent_test.ts", "property: agent events from interleaved sessions")],
  },
  {
    id: "agent-duplicate-in-transaction",
    file: "lib/history/agent.ts",
    find: "        if (lookup() !== null) throw new DuplicateDelivery();\n",
    replace: "",
    tests: [
      t(
        "history/agent_test.ts",
        "recordAgentEvent() re-checks the event key inside the write transaction",
      ),
      t("history/agent_test.ts", "property: three agent sessions hooked from concurrent"),
    ],
  },
  {
    id: "hook-error-one-line",
    file: "lib/cli/main.ts",
    find:
      "      out.errorLine(await typed(error), `ctxsnap ${name}`);\n      return 0;\n    }\n    return out.error(await typed(error));",
    replace:
      "      out.error(await typed(error));\n      return 0;\n    }\n    return out.error(await typed(error));",
    tests: [
      t(
        "integrations/hook_resilience_test.ts",
        "hook: a full disk (writes refused) exits 0 with one line",
      ),
    ],
  },
  {
    id: "restore-not-captured-listed",
    file: "lib/workspace/move/restore.ts",
    find: '    result.notCaptured = targetTree.skipped.filter((s) => s.reason !== "reserved");',
    replace: "    result.notCaptured = [];",
    tests: [
      t(
        "integrations/hook_test.ts",
        "restore names every path that existed at the target but was never captured",
      ),
    ],
  },
  {
    id: "restore-not-captured-printed",
    file: "lib/cli/commands/restore.ts",
    find: "    lines.push(...notCapturedLines(result.notCaptured));\n",
    replace: "",
    tests: [
      t(
        "integrations/hook_test.ts",
        "restore names every path that existed at the target but was never captured",
      ),
    ],
  },
  {
    id: "bundle-subtree-included",
    file: "lib/format/bundle.ts",
    find:
      "        if (index < 0) {\n          fail(`tree ${quote(id)} needs subtree ${quote(entry.tree)}, which is not included`);\n        }\n        neededTrees[index] = 1;",
    replace: "        if (index >= 0) neededTrees[index] = 1;",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "readBundle() refuses a directory tree whose subtree the bundle does not include",
      ),
    ],
  },
  {
    id: "bundle-subtree-version-2",
    file: "lib/format/bundle.ts",
    find: "      if (versions[sub] !== 2) {",
    replace: "      if (false) {",
    tests: [
      t("format/dir_tree_test.ts", "readBundle() refuses a directory tree whose subtree is a flat"),
    ],
  },
  {
    id: "bundle-subtree-not-empty",
    file: "lib/format/bundle.ts",
    find: "      if (empty[sub] === 1) fail(",
    replace: "      if (false) fail(",
    tests: [
      t("format/dir_tree_test.ts", "readBundle() refuses a directory tree naming an empty subtree"),
    ],
  },
  {
    id: "bundle-tree-depth",
    file: "lib/format/bundle.ts",
    find:
      "    if (depth > MAX_TREE_DEPTH) {\n      throw new IntegrityError(\n        `Tree ${quote(idOf(t))} nests directories deeper than ${MAX_TREE_DEPTH}`,\n      );\n    }\n    if (height[t]! >= 0) {\n      if (depth + height[t]! > MAX_TREE_DEPTH) {\n        throw new IntegrityError(\n          `Tree ${quote(idOf(t))} nests directories deeper than ${MAX_TREE_DEPTH}`,\n        );\n      }\n      return height[t]!;\n    }\n",
    replace: "    if (height[t]! >= 0) return height[t]!;\n",
    tests: [
      t("format/dir_tree_test.ts", "readBundle() refuses directory trees nested deeper than 256"),
    ],
  },
  {
    id: "bundle-tree-expansion",
    file: "lib/format/bundle.ts",
    find: "      total += expanded[sub]!;",
    replace: "      total += 1;",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "readBundle() refuses a few directory trees that expand to more than",
      ),
    ],
  },
  {
    id: "dir-tree-bytes-lone-surrogate",
    file: "lib/format/dir_tree.ts",
    find: 'if (typeof value !== "string" || !value.isWellFormed()) return null;',
    replace: 'if (typeof value !== "string") return null;',
    tests: [
      t(
        "format/dir_tree_test.ts",
        "dirTreeBytes() refuses what canonicalBytes() refuses and serializes any other shape as it does",
      ),
    ],
  },
  {
    id: "dir-tree-bytes-shape",
    file: "lib/format/dir_tree.ts",
    find: 'if (entry.type === "file" && hasKeys(entry, FILE_KEYS)) {',
    replace: 'if (entry.type === "file") {',
    tests: [
      t(
        "format/dir_tree_test.ts",
        "dirTreeBytes() refuses what canonicalBytes() refuses and serializes any other shape as it does",
      ),
    ],
  },
  {
    id: "walk-secret-path-rules",
    file: "lib/workspace/io/walk.ts",
    find: "(frame.secretPaths ? isSecretPath(path) : isSecretName(entry.name))",
    replace: "isSecretName(entry.name)",
    tests: [
      t(
        "workspace/secrets_test.ts",
        "walkWorkspace() leaves out secrets named by their directory at any depth",
      ),
    ],
  },
  {
    id: "secret-path-rules-legacy",
    file: "lib/workspace/io/capture_policy.ts",
    find: 'return `/${lower}/`.includes("/gcloud/legacy_credentials/");',
    replace: "return false;",
    tests: [
      t(
        "workspace/secrets_test.ts",
        "walkWorkspace() leaves out secrets named by their directory at any depth",
      ),
      t("workspace/secrets_test.ts", "secretPathRulesReach() is false only for directories"),
    ],
  },
  {
    id: "tree-depth-bound",
    file: "lib/format/dir_tree.ts",
    find: "export const MAX_TREE_DEPTH = 256;",
    replace: "export const MAX_TREE_DEPTH = 4096;",
    tests: [
      t("format/dir_tree_test.ts", "Store.getTree() refuses a hostile directory tree (depth-bomb)"),
    ],
  },
  {
    id: "tree-expansion-counted-first",
    file: "lib/format/tree_object.ts",
    find: "      entries += sub.entries;",
    replace: "      entries += 1;",
    tests: [
      t("format/dir_tree_test.ts", "Store.getTree() refuses an expansion bomb while counting"),
    ],
  },
  {
    id: "tree-entry-unique",
    file: "lib/format/dir_tree.ts",
    find: "    if (names.has(name)) fail(",
    replace: "    if (false) fail(",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "Store.getTree() refuses a hostile directory tree (duplicate-name)",
      ),
    ],
  },
  {
    id: "tree-entry-dot-segment",
    file: "lib/format/dir_tree.ts",
    find: '  if (name === "." || name === "..") return "is a dot segment";',
    replace: "",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "Store.getTree() refuses a hostile directory tree (name-dotdot)",
      ),
    ],
  },
  {
    id: "tree-entry-slash",
    file: "lib/format/dir_tree.ts",
    find: '  if (name.includes("/")) return "contains a slash";',
    replace: "",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "Store.getTree() refuses a hostile directory tree (name-with-slash)",
      ),
    ],
  },
  {
    id: "tree-entry-reserved-folded",
    file: "lib/format/dir_tree.ts",
    find: '  if (isReservedName(name)) return "is a reserved name (.git or .ctxsnap)";',
    replace: "",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "validateDirTree() refuses an entry name that folds to .git or .ctxsnap",
      ),
    ],
  },
  {
    id: "tree-writer-reopened-dir",
    file: "lib/format/dir_tree.ts",
    find: "      if (!(key > this.#maxClosed)) {",
    replace: "      if (false) {",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "DirTreeWriter refuses a directory entered again after it was left",
      ),
    ],
  },
  {
    id: "tree-writer-reserved",
    file: "lib/format/dir_tree.ts",
    find: "    checkNotReserved(entry);\n    this.#countEntries(1);",
    replace: "    this.#countEntries(1);",
    tests: [t("format/dir_tree_test.ts", "DirTreeWriter refuses an entry inside .git")],
  },
  {
    id: "tree-writer-path-rules",
    file: "lib/format/dir_tree.ts",
    find: "    this.#paths.check(entry.path);",
    replace: "",
    tests: [t("format/dir_tree_test.ts", "DirTreeWriter refuses a dot-dot segment")],
  },
  {
    id: "tree-writer-skipped-once",
    file: "lib/format/dir_tree.ts",
    find: "      if (compareDirSkipped(skipped[i - 1]!, skipped[i]!) === 0) skipped.splice(i, 1);",
    replace: "",
    tests: [
      t("format/dir_tree_test.ts", "DirTreeWriter records two identical skipped records once"),
    ],
  },
  {
    id: "capture-cache-keeps-recorded",
    file: "lib/workspace/capture.ts",
    find: "    if (row >= 0 && !this.lookup && !this.pruneByCaller) this.kept[row] = 1;",
    replace: "",
    tests: [
      t(
        "workspace/capture_test.ts",
        "captureWorkspace() keeps the stat-cache rows of the files it records",
      ),
    ],
  },
  {
    id: "tree-subtree-version-2",
    file: "lib/format/tree_object.ts",
    find: "  if (object.version !== 2) {",
    replace: "  if (false) {",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "Store.getTree() refuses a hostile directory tree (subtree-is-flat-manifest)",
      ),
    ],
  },
  {
    id: "tree-subtree-not-empty",
    file: "lib/format/tree_object.ts",
    find: "  if (object.entries.length === 0 && object.skipped.length === 0) {",
    replace: "  if (false) {",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "Store.getTree() refuses a hostile directory tree (empty-subtree)",
      ),
      t(
        "format/dir_tree_test.ts",
        "Store.checkTree() refuses a hostile directory tree (empty-subtree)",
      ),
    ],
  },
  {
    id: "checktree-empty-root-as-subtree",
    file: "lib/format/tree_object.ts",
    find: "      if (sub !== undefined && sub.entries === 0 && sub.skipped === 0) {",
    replace: "      if (false) {",
    tests: [
      t(
        "repository/tree_reads_test.ts",
        "Store.checkTree() with a shared memo refuses an empty root",
      ),
    ],
  },
  {
    id: "checktree-entries-after-last-subtree",
    file: "lib/format/tree_object.ts",
    find: "    if (facts.entries > MAX_TREE_ENTRIES) tooManyEntries();\n    return facts;",
    replace: "    return facts;",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "checkDirTree() refuses a root whose own files take it past 2,000,000 entries after its last subtree, as expandDirTree() does",
      ),
    ],
  },
  {
    id: "checktree-memo-drops-refused-subtrees",
    file: "lib/format/tree_object.ts",
    find: "    for (const id of added) memo.delete(id);",
    replace: "",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "checkDirTree() with a shared memo refuses a root that an earlier, refused root named as a subtree",
      ),
    ],
  },
  {
    id: "dir-writer-file-beside-subtree",
    file: "lib/format/dir_tree.ts",
    find: "  refuseFileBesideSubtree(entries);\n",
    replace: "",
    tests: [
      t(
        "format/dir_tree_test.ts",
        "Store.putTree() refuses a flat manifest whose skipped record lies below a file entry, storing nothing",
      ),
    ],
  },
  {
    id: "same-entry-size",
    file: "lib/repository/diff.ts",
    find: "    return a.blob === b.blob && a.mode === b.mode && a.size === b.size;",
    replace: "    return a.blob === b.blob && a.mode === b.mode;",
    tests: [
      t(
        "repository/tree_reads_test.ts",
        "expandFrom() gives Store.getTree()'s entry for a file whose recorded size alone differs from the baseline's",
      ),
    ],
  },
  {
    id: "verify-trees-once",
    file: "lib/history/verify.ts",
    find: "      memo: seenTrees,",
    replace: "      memo: new Map(),",
    tests: [t("repository/tree_reads_test.ts", "verifyAll() reads each tree object once")],
  },
  {
    id: "verify-names-bad-blob-path",
    file: "lib/history/verify.ts",
    find:
      '        } else if (entry.type === "tree" && seenTrees.get(entry.tree)?.flagged === true) {',
    replace: '        } else if (entry.type === "tree" && false) {',
    tests: [
      t("repository/tree_reads_test.ts", "verifyAll() still names the path of a damaged blob"),
    ],
  },
  {
    id: "difftree-subtree-not-empty",
    file: "lib/repository/diff.ts",
    find:
      "          sx.entries.length + sx.skipped.length === 0 || sy.entries.length + sy.skipped.length === 0",
    replace: "          false",
    tests: [
      t(
        "repository/tree_reads_test.ts",
        "expandFrom() refuses a target whose changed subtree is empty",
      ),
    ],
  },
  {
    id: "expandfrom-skipped-whole",
    file: "lib/repository/diff.ts",
    find: "  if (step.skippedChanged !== false) return store.getTree(id);",
    replace: "  if (false) return store.getTree(id);",
    tests: [t("repository/tree_reads_test.ts", "whose skipped records changed whole")],
  },
  {
    id: "page-delta-skipped-whole",
    file: "lib/view/model.ts",
    find: "    if (step === null || step.skippedChanged !== false) return null;",
    replace: "    if (step === null) return null;",
    tests: [t("repository/tree_reads_test.ts", "whose skipped records changed whole")],
  },
  {
    id: "difftree-skipped-compared",
    file: "lib/repository/diff.ts",
    find: "      skippedChanged = true;\n    }\n    const theirs",
    replace: "      skippedChanged = false;\n    }\n    const theirs",
    tests: [t("repository/tree_reads_test.ts", "whose skipped records changed whole")],
  },
  {
    id: "restore-disk-stands-in-only-when-equal",
    file: "lib/workspace/move/restore.ts",
    find: "    if (diskId === baselineId) {",
    replace: "    if (diskId !== null) {",
    tests: [
      t(
        "repository/tree_reads_test.ts",
        "a restore over a workspace edited since its baseline reads the baseline and still sees the edit",
      ),
    ],
  },
  {
    id: "move-walk-stands-in-only-when-equal",
    file: "lib/workspace/move/move.ts",
    find: "  if (id !== null && walked.treeId === id && store.hasObject(id)) {",
    replace: "  if (id !== null && store.hasObject(id)) {",
    tests: [
      t(
        "repository/tree_reads_test.ts",
        "switch over a workspace edited since its baseline reads the baseline and refuses",
      ),
    ],
  },
  {
    id: "pull-subtree-hash",
    file: "lib/remote/pull.ts",
    find:
      "      if (sha256Hex(bytes) !== id) {\n        throw new RefRefused(`tree ${id.slice(0, 12)} does not hash to its id`);",
    replace:
      "      if (false) {\n        throw new RefRefused(`tree ${id.slice(0, 12)} does not hash to its id`);",
    tests: [
      t(
        "remote/remote_test.ts",
        "pull refuses a remote directory tree whose subtree is withheld or swapped",
      ),
    ],
  },
  {
    id: "pull-subtrees-fetched",
    file: "lib/remote/pull.ts",
    find: "          for (const sub of treeInfo.get(id)!.subtrees) {",
    replace: "          for (const sub of [] as string[]) {",
    tests: [
      t(
        "remote/remote_test.ts",
        "pull refuses a remote directory tree whose subtree is withheld or swapped",
      ),
    ],
  },
  {
    id: "chunk-not-chunked",
    file: "lib/repository/store.ts",
    find:
      "      if (asChunk) {\n        throw new IntegrityError(`Blob ${quote(id)} is corrupt: a chunk is itself chunked`);",
    replace:
      "      if (false) {\n        throw new IntegrityError(`Blob ${quote(id)} is corrupt: a chunk is itself chunked`);",
    tests: [
      t(
        "repository/chunked_blob_test.ts",
        "a chunk list that names a chunked blob is refused as corrupt",
      ),
    ],
  },
  {
    id: "chunk-list-whole-ids",
    file: "lib/repository/store.ts",
    find: "    if (data === null || data.byteLength === 0 || data.byteLength % 32 !== 0) {",
    replace: "    if (data === null || data.byteLength === 0) {",
    tests: [
      t(
        "repository/chunked_blob_test.ts",
        "a malformed chunk list is refused by every blob reader",
      ),
    ],
  },
  {
    id: "retention-mode-checked",
    file: "lib/repository/_policy_file.ts",
    find: "  if (uid !== null && (stat.mode & 0o022) !== 0) {",
    replace: "  if (uid !== null && (stat.mode & 0o002) !== 0) {",
    tests: [
      t(
        "history/retention_test.ts",
        "readRetention refuses a policy file writable by group or others",
      ),
    ],
  },
  {
    id: "retention-no-follow",
    file: "lib/repository/_policy_file.ts",
    find: "  if (!stat.isFile()) refuse(",
    replace: "  if (!stat.isFile() && !stat.isSymbolicLink()) refuse(",
    tests: [
      t("history/retention_test.ts", "readRetention refuses a policy file that is a symbolic link"),
    ],
  },
  {
    id: "retention-keeps-prompt-states",
    file: "lib/history/retention.ts",
    find: '  for (const id of recentPromptSnapshots(store, policy.keepLast)) mark(id, "prompt");\n',
    replace: "",
    tests: [t("history/retention_test.ts", "so prompt:N still restores them")],
  },
  {
    id: "hook-tells-stopped-checkpoints",
    file: "lib/cli/commands/hook.ts",
    find: "      const told = ctx.out.json ? null : stoppedCheckpointMessage(error);",
    replace: "      const told = null as string | null;",
    tests: [t("history/retention_test.ts", "tells the user (systemMessage)")],
  },
  {
    id: "publish-other-snapshot-refused",
    file: "lib/cli/_overwrite.ts",
    find: "    if (other === null) return;",
    replace: "    return;",
    tests: [t("cli/defaults_test.ts", "refuses another snapshot's (exit 5)")],
  },
  {
    id: "list-agent-event-time",
    file: "lib/cli/commands/list.ts",
    find: "esc(String(eventTime(item) ?? item.createdAt)",
    replace: "esc(String(item.createdAt)",
    tests: [t("integrations/hook_test.ts", "shows each event at its own time")],
  },
  {
    id: "retention-read-before-checkpoint",
    file: "lib/history/checkpoint.ts",
    find:
      "  const policy = readRetention(store.dir);\n  // The capture's own skipped records answer the agent event's omissions, so\n  // recording it never reads the whole tree back from the store.\n  let last: { treeId: string; skipped: SkippedEntry[] } | null = null;\n  const own = (o: CaptureOptions) => {\n    const result = capture === undefined ? captureWorkspace(store, o) : capture(o);\n    last = result;\n    return result;\n  };\n  const make = (o: CreateOptions) => createSnapshot(store, signer, { ...o, capture: own });\n  const skippedOf = (treeId: string) => {\n    const kept = last as { treeId: string; skipped: SkippedEntry[] } | null;\n    return kept !== null && kept.treeId === treeId ? kept.skipped : null;\n  };\n  const result = agent === undefined\n    ? await make(rest)\n    : await recordAgentEvent(store, rest, agent, make, skippedOf);\n  if (result.created) retainAfterCheckpoint(store, policy);\n",
    replace:
      "  // The capture's own skipped records answer the agent event's omissions, so\n  // recording it never reads the whole tree back from the store.\n  let last: { treeId: string; skipped: SkippedEntry[] } | null = null;\n  const own = (o: CaptureOptions) => {\n    const result = capture === undefined ? captureWorkspace(store, o) : capture(o);\n    last = result;\n    return result;\n  };\n  const make = (o: CreateOptions) => createSnapshot(store, signer, { ...o, capture: own });\n  const skippedOf = (treeId: string) => {\n    const kept = last as { treeId: string; skipped: SkippedEntry[] } | null;\n    return kept !== null && kept.treeId === treeId ? kept.skipped : null;\n  };\n  const result = agent === undefined\n    ? await make(rest)\n    : await recordAgentEvent(store, rest, agent, make, skippedOf);\n  const policy = readRetention(store.dir);\n  if (result.created) retainAfterCheckpoint(store, policy);\n",
    tests: [
      t(
        "history/retention_test.ts",
        "a policy file that cannot be used stops a checkpoint with exit 7",
      ),
    ],
  },
  {
    id: "adopt-retention-refused",
    file: "lib/history/adopt.ts",
    find: '.filter(([name, kind]) => kind === "file" && !name.startsWith("index.db"))',
    replace: '.filter(([name]) => name === "allow-secrets")',
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "store folder: init --adopt refuses another store's retention policy",
      ),
    ],
  },
  {
    id: "adopt-config-files-refused",
    file: "lib/history/adopt.ts",
    find: '.filter(([name, kind]) => kind === "file" && !name.startsWith("index.db"))',
    replace: '.filter(([name]) => name === "allow-secrets" || name === "retention")',
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "store folder: init --adopt refuses another store's transcript policy and daemon.conf",
      ),
    ],
  },
  {
    id: "show-bare-name-revision",
    file: "lib/cli/commands/show.ts",
    find:
      "        (/^\\.|[/\\\\]/.test(given) && looksLikeFile(given) && fs.existsSync(userPath(given))))",
    replace: "        (looksLikeFile(given) && fs.existsSync(userPath(given))))",
    tests: [
      t("share/received_file_test.ts", "show HEAD and show BRANCH name snapshots even where"),
    ],
  },
  {
    id: "mcp-resolve-in-store",
    file: "lib/cli/mcp/tools.ts",
    find: "    if (!found.ok) return found;\n    ids[name] = found.id;",
    replace: "    ids[name] = found.ok ? found.id : args[name] as string;",
    tests: [t("cli/mcp_test.ts", "mcp: a model chooses data, never paths")],
  },
  {
    id: "agent-tool-key-kind",
    file: "lib/history/agent.ts",
    find: "    return `${event.event}:${event.tool_use_id}`;",
    replace: "    return `tool:${event.tool_use_id}`;",
    tests: [
      t(
        "integrations/hook_test.ts",
        "hook: PreToolUse and PostToolUse of one tool call are two events",
      ),
    ],
  },
  {
    id: "agent-numbering-in-transaction",
    file: "lib/history/agent.ts",
    find:
      "  const seen = lookup();\n  if (seen !== null) return await duplicateResult(store, seen);\n  const sel = selection(store, options.session, options.branch);\n  // The transcript is read before the write transaction (a file read holds no lock).\n  const policy = event.transcript_path === null ? null : readTranscriptPolicy(store.dir);\n  const read = event.transcript_path === null\n    ? null\n    : readTranscript(event.harness, event.transcript_path, policy!);\n  const agentMeta: Record<string, JsonValue> = {\n    harness: event.harness,\n    session_id: event.session_id,\n    event: event.event,\n    prompt: null,\n  };\n  let headBefore: string | null = null;\n  let position = 0;\n  let prompt: number | null = null;\n  let prompts = 0;\n  let outcome: AgentOutcome | null = null;\n  try {\n    const result = await create({\n      ...options,\n      source: null,\n      reason: reasonOf(event),\n      metadata: { ...(options.metadata ?? {}), agent: agentMeta },\n      prepare: () => {\n        options.prepare?.();\n        if (lookup() !== null) throw new DuplicateDelivery();\n        const row = agentSessionRow(store, event.harness, sessionId);\n        headBefore = getBranch(store, sel.session, sel.branch)?.head ?? null;\n        position = (row?.events ?? 0) + 1;\n        prompts = row?.prompts ?? 0;\n",
    replace:
      "  const seen = lookup();\n  const early = agentSessionRow(store, event.harness, sessionId);\n  if (seen !== null) return await duplicateResult(store, seen);\n  const sel = selection(store, options.session, options.branch);\n  // The transcript is read before the write transaction (a file read holds no lock).\n  const policy = event.transcript_path === null ? null : readTranscriptPolicy(store.dir);\n  const read = event.transcript_path === null\n    ? null\n    : readTranscript(event.harness, event.transcript_path, policy!);\n  const agentMeta: Record<string, JsonValue> = {\n    harness: event.harness,\n    session_id: event.session_id,\n    event: event.event,\n    prompt: null,\n  };\n  let headBefore: string | null = null;\n  let position = 0;\n  let prompt: number | null = null;\n  let prompts = 0;\n  let outcome: AgentOutcome | null = null;\n  try {\n    const result = await create({\n      ...options,\n      source: null,\n      reason: reasonOf(event),\n      metadata: { ...(options.metadata ?? {}), agent: agentMeta },\n      prepare: () => {\n        options.prepare?.();\n        if (lookup() !== null) throw new DuplicateDelivery();\n        const row = agentSessionRow(store, event.harness, sessionId);\n        headBefore = getBranch(store, sel.session, sel.branch)?.head ?? null;\n        position = (early?.events ?? 0) + 1;\n        prompts = early?.prompts ?? 0;\n",
    tests: [
      t("history/agent_test.ts", "recordAgentEvent() numbers events inside the write transaction"),
    ],
  },
  // --- agents: transcripts, adapters, installers, resume ---------------------------------------
  {
    id: "transcript-inside-roots",
    file: "lib/history/transcript.ts",
    find: "  if (!insideRoots(file, transcriptRoots(harness, env))) {",
    replace: "  if (false) {",
    tests: [
      t("integrations/agents/resume_test.ts", "a transcript_path outside the agent's transcript"),
      t("history/transcript_test.ts", "readTranscript() reads nothing outside"),
    ],
  },
  {
    id: "transcript-real-path",
    file: "lib/history/transcript.ts",
    find:
      "    if (file.startsWith(root + path.sep) && real.startsWith(realRoot + path.sep)) return true;",
    replace: "    if (file.startsWith(root + path.sep)) return true;",
    tests: [t("integrations/agents/resume_test.ts", "reached through a symbolic link")],
  },
  {
    id: "transcript-prefix-hash",
    file: "lib/history/transcript.ts",
    find: "    sha256Hex(bytes.subarray(0, end)) === last.prefix_sha256;",
    replace: "    true;",
    tests: [t("integrations/agents/resume_test.ts", "no longer starts with the kept bytes")],
  },
  {
    id: "kept-transcript-hash",
    file: "lib/history/transcript.ts",
    find: "  if (at !== len || sha256Hex(out) !== sha256) {",
    replace: "  if (at !== len) {",
    tests: [t("history/transcript_test.ts", "keptTranscript() refuses segments altered")],
  },
  {
    id: "fork-ends-before-prompt",
    file: "lib/integrations/agents/fork.ts",
    find: "  for (let i = 0; i < cut; i++) {",
    replace: "  for (let i = 0; i <= cut; i++) {",
    tests: [
      t("integrations/agents/fork_test.ts", "before prompt 2 is the prefix"),
      t("integrations/agents/resume_test.ts", "resumes from prompt 3"),
    ],
  },
  {
    id: "fork-rewrites-only-identity",
    file: "lib/integrations/agents/fork.ts",
    find: "      if (JSON.stringify(JSON.parse(candidate)) === wanted) return candidate;",
    replace: "      return candidate.replaceAll(oldId, newId);",
    tests: [t("integrations/agents/resume_test.ts", "resumes from prompt 3")],
  },
  {
    id: "adapter-path-absolute",
    file: "lib/integrations/agents/_payload.ts",
    find: '      !value.startsWith("/") || value.length > 4096 || CONTROL_RE.test(value) ||',
    replace: "      value.length > 4096 || CONTROL_RE.test(value) ||",
    tests: [t("integrations/agents/adapters_test.ts", "hook codex refuses a relative cwd")],
  },
  {
    id: "adapter-label-controls",
    file: "lib/integrations/agents/_payload.ts",
    find:
      "      value.length === 0 || value.length > max || CONTROL_RE.test(value) || !value.isWellFormed()",
    replace: "      value.length === 0 || value.length > max || !value.isWellFormed()",
    tests: [t("integrations/agents/adapters_test.ts", "refuses a tool name holding control")],
  },
  {
    id: "install-no-follow",
    file: "lib/integrations/agents/install.ts",
    find: "    stat = fs.lstatSync(file);",
    replace: "    stat = fs.statSync(file);",
    tests: [t("integrations/agents/install_test.ts", "never follows a symbolic link")],
  },
  {
    id: "install-keeps-present",
    file: "lib/integrations/agents/install.ts",
    find: "    if (present) {\n      result.present.push(entry.event);",
    replace: "    if (false) {\n      result.present.push(entry.event);",
    tests: [t("integrations/agents/install_test.ts", "merges into an existing settings.json")],
  },
  {
    id: "conversation-escaped",
    file: "lib/cli/commands/show.ts",
    find: "      lines.push(`  ${esc(who)}: ${esc(item.text)}`);",
    replace: "      lines.push(`  ${esc(who)}: ${item.text}`);",
    tests: [t("integrations/agents/resume_test.ts", "show renders hostile conversation text")],
  },
  {
    id: "conversation-redacted",
    file: "lib/integrations/agents/conversation.ts",
    find: "  if (scanText(text) === null) return { text, redacted: [] };",
    replace: "  return { text, redacted: [] };",
    tests: [t("integrations/agents/conversation_test.ts", "publish --with-conversation")],
  },
  {
    id: "resume-grown-file-prefix",
    file: "lib/integrations/agents/resume.ts",
    find: "  return sha256Hex(prefix) === sha256Hex(kept.bytes) ? live : null;",
    replace: "  return live;",
    tests: [t("integrations/agents/resume_test.ts", "never forks a grown agent file")],
  },
  {
    id: "kept-format-read-verified",
    file: "lib/share/formats/leanctx.ts",
    find: "    const check = await checkStoredLeanCtx(store, id);\n    if (!check.intact) {",
    replace: "    const check = await checkStoredLeanCtx(store, id);\n    if (false) {",
    tests: [
      t(
        "share/formats_test.ts",
        "diff of a lean-ctx snapshot changed behind ctxsnap's back is refused (exit 1)",
      ),
    ],
  },
  {
    id: "ctxsnap-id-resolved-first",
    file: "lib/cli/command.ts",
    find:
      '  try {\n    return { format: "ctxsnap", id: revision(ctx, store, text, options), kept: null };',
    replace:
      '  try {\n    await (await import("../share/formats/registry.ts")).findKept(store, text);\n    return { format: "ctxsnap", id: revision(ctx, store, text, options), kept: null };',
    tests: [
      t(
        "share/formats_test.ts",
        "a plain restore, create and show run no query against the lean-ctx table",
      ),
    ],
  },
  {
    id: "page-text-escapes-controls",
    file: "lib/view/client/_dom.ts",
    find: "  const re = oneLine ? HIDDEN_LINE : HIDDEN;",
    replace: "  const re = /(?!)/g;",
    tests: [{
      file: "tests/view/timeline_browser.ts",
      filter: "Replay by prompt",
    }],
  },
  {
    id: "page-agent-metadata-shape",
    file: "lib/view/_agent.ts",
    find: '  if (typeof session_id !== "string" || !ID_RE.test(session_id)) return null;',
    replace: '  if (typeof session_id !== "string") return null;',
    tests: [t("view/agent_test.ts", "agentOfBody() takes a snapshot's agent metadata only")],
  },
  {
    id: "page-step-diff-bound",
    file: "lib/view/model.ts",
    find: "    if (!(stepSize <= limits.max_diffs_per_step)) return;",
    replace: "    if (false) return;",
    tests: [t("view/agent_test.ts", "a step changing more files than max_diffs_per_step")],
  },
  {
    id: "hook-bash-command-opt-in",
    file: "lib/history/agent.ts",
    find: "    command: options.recordPrompts ? bashCommand(o) : null,",
    replace: "    command: bashCommand(o),",
    tests: [
      t("history/prompt_log_test.ts", "the hook keeps a Bash command only with --record-prompts"),
    ],
  },
  {
    id: "log-prompts-text-escaped",
    file: "lib/cli/commands/log.ts",
    find: "    : esc(p.text.length > TEXT_SHOWN ? `${p.text.slice(0, TEXT_SHOWN)}…` : p.text);",
    replace: "    : (p.text.length > TEXT_SHOWN ? `${p.text.slice(0, TEXT_SHOWN)}…` : p.text);",
    tests: [
      t("history/prompt_log_test.ts", "log --prompts escapes hostile prompt text: a newline"),
    ],
  },
  {
    id: "layers-import-cycle",
    file: "scripts/check_layers.ts",
    find: '      if (seen === "open") {',
    replace: "      if (false) {",
    tests: [t("scripts/check_layers_test.ts", "checkCycles() names an import cycle")],
  },
  {
    id: "timeline-conversation-wired",
    file: "lib/cli/commands/timeline.ts",
    find: "      conversation: (harness, sessionId, prompt) =>\n",
    replace: "      _conversation: (harness: string, sessionId: string, prompt: number) =>\n",
    tests: [
      t("integrations/agents/replay_conversation_test.ts", "timeline --html puts each prompt"),
    ],
  },
  {
    id: "adopt-own-store-keeps-files",
    file: "lib/history/adopt.ts",
    find: '  if (mine) { for (const file of out) file.action = "kept"; }\n',
    replace: "",
    tests: [t("security/hostile_repo_test.ts", "store trust: a store committed into a repository")],
  },
  {
    id: "http-hook-tells-stopped-checkpoints",
    file: "lib/integrations/watch/http_hooks.ts",
    find: "      if (told !== null) answer = JSON.stringify({ systemMessage: told });\n",
    replace: "",
    tests: [
      t("integrations/http_hooks_test.ts", "a policy file that stops every checkpoint is told"),
    ],
  },
  {
    id: "folder-doc-may-use-complete",
    file: "scripts/check_layers.ts",
    find: "      if (missing.length > 0) {",
    replace: "      if (missing.length < 0) {",
    tests: [t("scripts/check_layers_test.ts", "checkFolderDocs() wants a doc.ts per layer folder")],
  },
  {
    id: "api-export-list-pinned",
    file: "api/agent.ts",
    find: "  validateAgentEvent,\n",
    replace: "",
    tests: [
      t("api_test.ts", "each export path of deno.json exports exactly its pinned list of names"),
    ],
  },
  {
    id: "incremental-gc-invalidates",
    file: "lib/workspace/incremental.ts",
    find: "      gcMark !== this.gcMark\n",
    replace: "      false\n",
    tests: [
      t(
        "workspace/incremental_test.ts",
        "incremental capture after a gc that removed its directory",
      ),
    ],
  },
  {
    id: "gc-records-last-gc",
    file: "lib/repository/gc.ts",
    find: "    store.setMeta(LAST_GC_META, op.id);\n",
    replace: "",
    tests: [
      t(
        "workspace/incremental_test.ts",
        "incremental capture after a gc that removed its directory",
      ),
    ],
  },
  {
    id: "tree-cache-ignore-chain",
    file: "lib/workspace/_known_dirs.ts",
    find:
      "    if (!this.#reading || row === undefined || (parent !== undefined && !parent.rulesSame)) {",
    replace: "    if (!this.#reading || row === undefined) {",
    tests: [
      t(
        "workspace/known_dirs_test.ts",
        "captureWorkspace() applies a changed .gitignore to directories whose own entries did not change",
      ),
    ],
  },
  {
    id: "tree-cache-ignore-file-stat",
    file: "lib/workspace/_known_dirs.ts",
    find: "        if (IGNORE_FILES.has(name)) return { all, rules: false };",
    replace: "",
    tests: [
      t(
        "workspace/known_dirs_test.ts",
        "captureWorkspace() applies a changed .gitignore to directories whose own entries did not change",
      ),
    ],
  },
  {
    id: "tree-cache-racy",
    file: "lib/workspace/_known_dirs.ts",
    find: "    return s.mtimeMs + 1 + this.#margin <= row.stampMs &&",
    replace: "    return true ||",
    tests: [
      t(
        "workspace/known_dirs_test.ts",
        "captureWorkspace() does not keep a directory whose row vouches for a file changed after the row's stamp (racy)",
      ),
    ],
  },
  {
    id: "tree-cache-file-stat",
    file: "lib/workspace/_known_dirs.ts",
    find: "    if (type !== S_IFREG && type !== S_IFLNK) return true;",
    replace: "    return true;",
    tests: [
      t(
        "workspace/known_dirs_test.ts",
        "captureWorkspace() reads again only the directory whose file changed, and stores the new tree",
      ),
    ],
  },
  {
    id: "tree-cache-partial",
    file: "lib/workspace/_known_dirs.ts",
    find: "    if (row.partial) return false;",
    replace: "",
    tests: [
      t(
        "workspace/known_dirs_test.ts",
        "captureWorkspace() reads a directory holding a file left out for its content every time, and keeps the others",
      ),
    ],
  },
  {
    id: "tree-cache-stored",
    file: "lib/workspace/_known_dirs.ts",
    find: "    if (!row.stored) return false;",
    replace: "",
    tests: [
      t(
        "workspace/known_dirs_test.ts",
        "captureWorkspace() does not keep a cached tree that is no longer stored, and stores it again",
      ),
    ],
  },
  {
    id: "tree-cache-prune-children",
    file: "lib/workspace/_known_dirs.ts",
    find: "        ? !state.kept.has(rest)",
    replace: "        ? false",
    tests: [
      t(
        "workspace/known_dirs_rows_test.ts",
        "captureWorkspace() drops the rows of a directory that is gone, with its files' stat-cache rows",
      ),
    ],
  },
  {
    id: "tree-writer-kept-subtrees",
    file: "lib/format/dir_tree.ts",
    find: "      if (dir.skipped.length === 0 && sameSubtrees(dir.entries, known.subtrees)) {",
    replace: "      if (dir.skipped.length === 0) {",
    tests: [
      t(
        "workspace/known_dirs_test.ts",
        "captureWorkspace() reads again only the directory whose file changed, and stores the new tree",
      ),
    ],
  },
  {
    id: "gc-prunes-tree-cache",
    file: "lib/repository/gc.ts",
    find: "    pruneTreeCache(store);",
    replace: "",
    tests: [
      t("workspace/known_dirs_test.ts", "gc drops the tree-cache rows whose tree it deleted"),
    ],
  },
  {
    id: "adopt-clears-tree-cache",
    file: "lib/history/adopt.ts",
    find: "      clearTreeCache(writable);",
    replace: "",
    tests: [
      t(
        "security/hostile_repo_test.ts",
        "store trust: adopt refuses a store that does not verify or names another workspace, and clears the stat cache and tree cache of one it adopts",
      ),
    ],
  },
  {
    id: "capture-dirs-table-switch",
    file: "lib/workspace/capture.ts",
    find: "      this.cache = readStatCacheTable(this.store);\n      this.lookup = false;",
    replace: "      this.cache = StatCacheTable.empty();\n      this.lookup = false;",
    tests: [
      t(
        "workspace/known_dirs_rows_test.ts",
        "captureWorkspace() with many directories changed reads the stat cache at once and reads only the changed files",
      ),
    ],
  },
  {
    id: "tree-writer-known-counts",
    file: "lib/format/dir_tree.ts",
    find: "    this.#countEntries(known.counts.entries);",
    replace: "",
    tests: [
      t(
        "workspace/known_dirs_rows_test.ts",
        "captureWorkspace() counts a kept directory's files against the tree's entry limit",
      ),
    ],
  },
  {
    id: "tree-cache-prune-empty",
    file: "lib/workspace/_known_dirs.ts",
    find: "      if (this.#closed.has(dir)) continue;",
    replace: "      if (this.#visited.has(dir)) continue;",
    tests: [
      t(
        "workspace/known_dirs_rows_test.ts",
        "captureWorkspace() drops the row of a directory left empty",
      ),
    ],
  },
  {
    id: "tree-cache-prune-unlisted",
    file: "lib/workspace/_known_dirs.ts",
    find: "        : !this.#visited.has(prefix + rest.slice(0, slash));",
    replace: "        : false;",
    tests: [
      t(
        "workspace/known_dirs_rows_test.ts",
        "captureWorkspace() drops the stat-cache rows a watch process wrote below a directory that is gone",
      ),
    ],
  },
  {
    id: "watch-marks-tree-cache",
    file: "lib/workspace/incremental.ts",
    find: "      markTreeCacheRowsPartial(this.store, dirs);",
    replace: "",
    tests: [
      t(
        "workspace/known_dirs_rows_test.ts",
        "captureWorkspace() drops the stat-cache rows a watch process wrote below a directory that is gone",
      ),
    ],
  },
  {
    id: "watch-rebuild-marks-tree-cache",
    file: "lib/workspace/incremental.ts",
    find: '      if (rel !== "" && !rows.has(rel)) parents.add(parentOf(rel));',
    replace: "",
    tests: [
      t(
        "workspace/known_dirs_rows_test.ts",
        "captureWorkspace() drops the stat-cache rows a watch process wrote below a directory that is gone",
      ),
    ],
  },
  {
    id: "watch-mark-skips-bad-facts",
    file: "lib/repository/tree_cache.ts",
    find: "      WHERE dir = ? AND json_valid(facts) AND json_type(facts) = 'object'`,",
    replace: "      WHERE dir = ?`,",
    tests: [
      t(
        "workspace/known_dirs_rows_test.ts",
        "a watch process's capture leaves a tree-cache row whose facts are not JSON as it is",
      ),
    ],
  },
  {
    id: "object-kind-either-inline",
    file: "lib/repository/store.ts",
    find: '    if (row.kind !== kind && row.encoding !== "raw" && row.encoding !== "deflate") {',
    replace: "    if (row.kind !== kind) {",
    tests: [
      t(
        "repository/store_test.ts",
        "Store reads the same inline bytes as a blob and as a tree, whichever was stored first",
      ),
      t(
        "workspace/capture_test.ts",
        "captureWorkspace() stores a file holding a stored tree's bytes, and both read back",
      ),
    ],
  },
  {
    id: "object-kind-file-refused",
    file: "lib/repository/store.ts",
    find: '    if (row.kind !== kind && row.encoding !== "raw" && row.encoding !== "deflate") {',
    replace: '    if (row.kind !== kind && row.encoding === "none") {',
    tests: [
      t(
        "repository/store_test.ts",
        "Store refuses to read as a tree a blob whose bytes are not one or are not stored inline",
      ),
    ],
  },
];
