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
}

const t = (file: string, filter?: string): TestRun =>
  filter === undefined ? { file: `tests/${file}` } : { file: `tests/${file}`, filter };

/** The list, grouped by area. */
export const MUTATIONS: readonly Mutation[] = [
  // --- bundle and tar -----------------------------------------------------------------------
  {
    id: "tar-member-size-limit",
    file: "lib/share/tar.ts",
    find: "if (header.size > this.#maxMemberBytes) {",
    replace: "if (false && header.size > this.#maxMemberBytes) {",
    tests: [t("share_test.ts", "a bundle member declaring a size above the limit")],
  },
  {
    id: "tar-duplicate-member",
    file: "lib/share/tar.ts",
    find: "if (this.#names.has(header.name)) {",
    replace: "if (false) {",
    tests: [t("share_test.ts", "bundles crafted with ../x")],
  },

  // --- verify and trust ---------------------------------------------------------------------
  {
    id: "verify-file-every-signer-trusted",
    file: "lib/share/verify_file.ts",
    find: "trusted: valid && snapshots.every((s) => s.trusted),",
    replace: "trusted: valid && snapshots.some((s) => s.trusted),",
    tests: [t("share_test.ts", "mixing a pinned and an unpinned signer")],
  },
  {
    id: "verify-file-full-key-argument",
    file: "lib/share/verify_file.ts",
    find: "trusted: valid && trust.isTrusted(keyId, envelope.signature.public_key),",
    replace: "trusted: valid && trust.isTrusted(keyId),",
    tests: [t("share_test.ts", "verifyStream() compares the full public key")],
  },
  {
    id: "keyring-full-key-compare",
    file: "lib/keys/keyring.ts",
    find: "return publicKeyHex === undefined || publicKeyHex === pinned.publicKeyHex;",
    replace: "return true;",
    tests: [
      t("crypto_test.ts", "Keyring trusts a key id only together with the exact pinned public key"),
    ],
  },
  {
    id: "envelope-key-id-binding",
    file: "lib/snapshot/envelope.ts",
    find:
      'if (typeof sig.key_id !== "string" || sig.key_id !== keyIdOf(fromHex(sig.public_key, 32))) {',
    replace: 'if (typeof sig.key_id !== "string") {',
    tests: [t("share_test.ts", "key_id names a pinned key but whose public key is another")],
  },
  {
    id: "envelope-unknown-field",
    file: "lib/snapshot/envelope.ts",
    find: 'if (!["id", "body", "signature"].includes(key)) fail(`unknown field ${quote(key)}`);',
    replace: "",
    tests: [t("store_test.ts", "parseEnvelope refuses extra fields")],
  },
  {
    id: "envelope-alg",
    file: "lib/snapshot/envelope.ts",
    find: 'if (sig.alg !== "ed25519") fail(',
    replace: 'if (sig.alg === "none") fail(',
    tests: [t("store_test.ts", "parseEnvelope refuses extra fields")],
  },
  {
    id: "ed25519-canonical-s",
    file: "lib/crypto/ed25519.ts",
    find: "if (littleEndian(signature.subarray(32)) >= L) return false;",
    replace: "",
    tests: [t("crypto_test.ts", "both backends agree on Ed25519 verification edge cases")],
  },

  // --- canonical JSON -----------------------------------------------------------------------
  {
    id: "canonical-json-key-order",
    file: "lib/encoding/canonical_json.ts",
    find: "const keys = Object.keys(value).sort();",
    replace: "const keys = Object.keys(value);",
    tests: [t("encoding_test.ts", "canonicalize() sorts")],
  },
  {
    id: "canonical-json-duplicate-key",
    file: "lib/encoding/canonical_json.ts",
    find: "if (Object.hasOwn(result, key)) this.#fail(`Duplicate key ${quote(key)}`, keyPos);",
    replace: "",
    tests: [t("encoding_test.ts", "parseJson() rejects a duplicate key")],
  },
  {
    id: "canonical-json-integers-only",
    file: "lib/encoding/canonical_json.ts",
    find: "if (this.#integersOnly && !Number.isSafeInteger(value)) {\n      this.#fail(\n",
    replace: "if (false) {\n      this.#fail(\n",
    tests: [t("encoding_test.ts", "canonicalize() refuses a non-integer by default")],
  },

  // --- keys and the verifier's configuration -------------------------------------------------
  {
    id: "config-private-mode",
    file: "lib/keys/_config_files.ts",
    find: "if (isPrivate && (stat.mode & 0o077) !== 0) {",
    replace: "if (false) {",
    tests: [t("crypto_test.ts", "loadIdentity() refuses a key file readable by group or others")],
  },
  {
    id: "config-group-writable",
    file: "lib/keys/_config_files.ts",
    find: "if (!isPrivate && (stat.mode & 0o022) !== 0) {",
    replace: "if (false) {",
    tests: [
      t("verifier_config_test.ts", "verify FILE refuses a trusted_keys.json writable by others"),
    ],
  },
  {
    id: "config-not-regular-file",
    file: "lib/keys/_config_files.ts",
    find: "if (!before.isFile()) {",
    replace: "if (false) {",
    tests: [
      t("verifier_config_test.ts", "readKeyFile and readTrustedKeys throw ConfigError for devices"),
    ],
  },

  // --- workspace capture and secrets ---------------------------------------------------------
  {
    id: "safe-read-same-inode",
    file: "lib/fs/safe_read.ts",
    find: "if (stat.ino !== expected.ino || stat.dev !== expected.dev) {",
    replace: "if (false) {",
    tests: [
      t("fs_test.ts", "a file replaced by another regular file between lstat and open is refused"),
    ],
  },
  {
    id: "walk-secret-names",
    file: "lib/fs/walk.ts",
    find: "} else if (isSecretPath(path) && !allowSecrets.has(path)) {",
    replace: "} else if (false) {",
    tests: [t("secrets_test.ts", "create leaves secrets out by name and by content")],
  },
  {
    id: "secret-scan-pem",
    file: "lib/fs/secret_scan.ts",
    find: 'if (PEM.test(text)) return "private key";',
    replace: "",
    tests: [t("secrets_test.ts", "SecretScanner recognises private keys")],
  },
  {
    id: "allow-secrets-writable",
    file: "lib/store/allow_secrets.ts",
    find: "if (uid !== null && (stat.mode & 0o022) !== 0) {",
    replace: "if (false) {",
    tests: [t("secrets_test.ts", "an allow-secrets list that others may write")],
  },
  {
    id: "reserved-name-fold",
    file: "lib/fs/reserved.ts",
    find: "return FOLDED_RESERVED.some((long) => stem === long || isShortNameOf(stem, long));",
    replace: "return FOLDED_RESERVED.some((long) => stem === long);",
    tests: [t("hostile_repo_test.ts", "reserved names: validateTree refuses every spelling")],
  },
  {
    id: "tree-reserved-segment",
    file: "lib/store/tree.ts",
    find: 'if (entry.path.split("/").some(isReservedName)) {',
    replace: "if (isReservedName(entry.path)) {",
    tests: [t("store_test.ts", "validateTree refuses any entry inside a reserved name")],
  },

  // --- three-way planning and the conflict policy --------------------------------------------
  {
    id: "policy-changed-since-baseline",
    file: "lib/restore/policy.ts",
    find: 'if (entriesMatch(disk, base)) return { kind: "take", forced: false };',
    replace: 'return { kind: "take", forced: false };',
    tests: [t("restore_test.ts", "an edit made outside ctxsnap after the baseline is a conflict")],
  },
  {
    id: "policy-preserve-local",
    file: "lib/restore/policy.ts",
    find: '      : { kind: "preserve" };',
    replace: '      : { kind: "take", forced: false };',
    tests: [t("move_test.ts", "restore: every base/disk/target combination")],
  },
  {
    id: "policy-force-only-when-asked",
    file: "lib/restore/policy.ts",
    find: 'if (overwrite !== "none") return { kind: "take", forced: true };',
    replace: 'return { kind: "take", forced: true };',
    tests: [t("restore_test.ts", "an edit made outside ctxsnap after the baseline is a conflict")],
  },
  {
    id: "plan-keep-skipped",
    file: "lib/restore/plan.ts",
    find: "for (const record of input.disk.skipped) keep(record.path);",
    replace: "",
    tests: [t("move_test.ts", "planMove() keeps a path the capture skipped")],
  },
  {
    id: "plan-parent-stays",
    file: "lib/restore/plan.ts",
    find: 'if (reason === null && staysBelow.has(write.path)) reason = "directory_in_the_way";',
    replace: "",
    tests: [t("move_test.ts", "planMove() keeps a path the capture skipped")],
  },

  // --- restore writes and stored plans -------------------------------------------------------
  {
    id: "safe-write-dir-nofollow",
    file: "lib/fs/safe_write.ts",
    find:
      "const DIR_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0) |\n  fs.constants.O_NOFOLLOW;",
    replace: "const DIR_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0);",
    tests: [t("fs_test.ts", "SafeWriter opens every directory O_NOFOLLOW")],
  },
  {
    id: "safe-write-location-recheck",
    file: "lib/fs/safe_write.ts",
    find: "if (actual !== expected) throw replaced(forPath);",
    replace: "",
    tests: [t("fs_test.ts", "SafeWriter refuses to write through a parent directory replaced")],
  },
  {
    id: "restore-mode-bits",
    file: "lib/fs/mode.ts",
    find: "return recorded & 0o775;",
    replace: "return recorded & 0o7777;",
    tests: [t("hostile_repo_test.ts", "modes: restored and materialized files honour the umask")],
  },
  {
    id: "stored-plan-reserved-segment",
    file: "lib/restore/_stored_plan.ts",
    find: 'if (item.split("/").some(isReservedName)) {',
    replace: "if (isReservedName(item)) {",
    tests: [
      t("hostile_repo_test.ts", "validateStoredPlan() refuses a reserved name in any segment"),
    ],
  },
  {
    id: "stored-plan-against-trees",
    file: "lib/restore/_stored_plan.ts",
    find: "if (!pre.has(rel)) fail(`it deletes ${quote(rel)}, which the workspace did not hold`);",
    replace: "",
    tests: [t("hostile_repo_test.ts", "recover: a crafted plan naming .git internals")],
  },
  {
    id: "store-location-refused",
    file: "lib/restore/_paths.ts",
    find: "if (isInsideReservedPath(rel, location)) {",
    replace: "if (false) {",
    tests: [t("hostile_repo_test.ts", "custom store: restore and materialize refuse a tree")],
  },

  // --- git ----------------------------------------------------------------------------------
  {
    id: "git-fsmonitor",
    file: "lib/snapshot/git.ts",
    find: '  "core.fsmonitor=false",\n',
    replace: "",
    tests: [t("hostile_repo_test.ts", "git: create and restore --git never run")],
  },
  {
    id: "git-hooks-path",
    file: "lib/snapshot/git.ts",
    find: '  "core.hooksPath=/dev/null",\n',
    replace: "",
    tests: [t("hostile_repo_test.ts", "git: create and restore --git never run")],
  },
  {
    id: "git-filter-overrides",
    file: "lib/snapshot/git.ts",
    find: "return spawnGit(cwd, [...SAFE_ARGS, ...filters, ...args], env);",
    replace: "return spawnGit(cwd, [...SAFE_ARGS, ...args], env);",
    tests: [t("hostile_repo_test.ts", "git: create and restore --git never run")],
  },
  {
    id: "git-work-tree-pinned",
    file: "lib/snapshot/git.ts",
    find: "  env.GIT_WORK_TREE = top;\n",
    replace: "",
    tests: [t("hostile_repo_test.ts", "git: core.worktree in .git/config")],
  },
  {
    id: "git-timeout",
    file: "lib/snapshot/git.ts",
    find: "      timeout: gitTimeoutMs(),\n",
    replace: "",
    tests: [t("hostile_repo_test.ts", "git: a .git/config that makes git block")],
  },
  {
    id: "git-allow-protocol",
    file: "lib/snapshot/git.ts",
    find: '  env.GIT_ALLOW_PROTOCOL = "";\n',
    replace: "",
    tests: [t("hostile_repo_test.ts", "git: a repository's protocol.<name>.allow")],
  },
  {
    id: "git-submodule-recurse",
    file: "lib/snapshot/git.ts",
    find: '  "submodule.recurse=false",\n',
    replace: "",
    tests: [t("hostile_repo_test.ts", "git: submodule.recurse in .git/config")],
  },
  {
    id: "git-env-dropped",
    file: "lib/snapshot/git.ts",
    find: "const unset = inheritedDropped(env);",
    replace: "const unset: string[] = [];",
    tests: [
      t("hostile_repo_test.ts", "git: every git run carries exactly the documented overrides"),
    ],
  },
  {
    id: "git-optional-locks",
    file: "lib/snapshot/git.ts",
    find: '  env.GIT_OPTIONAL_LOCKS = "0";\n',
    replace: "",
    tests: [t("cli_test.ts", "create records the git anchor and leaves .git/index byte-identical")],
  },

  // --- store ----------------------------------------------------------------------------------
  {
    id: "store-path-owner",
    file: "lib/store/trust.ts",
    find: "if ((stat.mode & 0o022) !== 0) {",
    replace: "if (false) {",
    tests: [t("hostile_repo_test.ts", "store trust: every store path is checked with lstat")],
  },
  {
    id: "store-schema-exact",
    file: "lib/store/trust.ts",
    find: "if (extra.length === 0 && missing.length === 0) return;",
    replace: "return;",
    tests: [t("hostile_repo_test.ts", "store trust: a schema with an extra trigger")],
  },

  // --- import --------------------------------------------------------------------------------

  // --- remote --------------------------------------------------------------------------------
  {
    id: "remote-rollback-stale",
    file: "lib/remote/pull.ts",
    find: "(record.seq < state.seq || (record.seq === state.seq && hash !== state.record))",
    replace: "false",
    tests: [t("remote_test.ts", "a rolled-back ref is reported stale")],
  },

  // --- terminal text, the page and serve -----------------------------------------------------
  {
    id: "escape-text-bidi",
    file: "lib/errors.ts",
    find:
      "/[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]/g;",
    replace: "/[\\u0000-\\u001f\\u007f-\\u009f]/g;",
    tests: [t("honest_output_test.ts", "escapeText and quote() escape")],
  },
  {
    id: "output-escapes-lines",
    file: "lib/cli/output.ts",
    find: 'return text.split("\\n").map(escapeText).join("\\n");',
    replace: "return text;",
    tests: [t("honest_output_test.ts", "/Output escapes|fakes the OK verdict/")],
  },
  {
    id: "serve-host-check",
    file: "lib/view/serve.ts",
    find: "if (req.headers.host !== `127.0.0.1:${port}`) {",
    replace: "if (false) {",
    tests: [t("view_test.ts", "serve refuses a Host other than 127.0.0.1:port")],
  },
  {
    id: "serve-origin-check",
    file: "lib/view/serve.ts",
    find: "if (origin !== undefined && origin !== `http://127.0.0.1:${port}`) {",
    replace: "if (false) {",
    tests: [t("view_test.ts", "serve refuses a Host other than 127.0.0.1:port")],
  },
  {
    id: "serve-token",
    file: "lib/view/serve.ts",
    find: 'if (segments.length < 3 || !sameSecret(segments[1] ?? "", token)) {',
    replace: "if (segments.length < 3) {",
    tests: [
      t(
        "view_test.ts",
        "serve listens on 127.0.0.1 only and refuses every request without the token",
      ),
    ],
  },

  // --- watch, hook and MCP -------------------------------------------------------------------
  {
    id: "watch-token",
    file: "lib/watch/server.ts",
    find: "if (!sameToken(request.token, this.info.token)) {",
    replace: "if (false) {",
    tests: [t("watch_test.ts", "watch: requests without its token")],
  },
  {
    id: "watch-config-dir",
    file: "lib/watch/server.ts",
    find: "if (request.config_dir !== null && request.config_dir !== configDir()) {",
    replace: "if (false) {",
    tests: [t("watch_test.ts", "watch: create and the hook hand their checkpoints to it")],
  },
  {
    id: "watch-info-private",
    file: "lib/watch/protocol.ts",
    find: "if (uid !== null && (stat.uid !== uid || (stat.mode & 0o077) !== 0)) return null;",
    replace: "",
    tests: [t("watch_test.ts", "watch: files that are not private to the user are not trusted")],
  },
  {
    id: "hook-prompt-in-key",
    file: "lib/snapshot/agent.ts",
    find: 'key = `${prompt}.${event.prompt_id === null ? "" : `${event.prompt_id}.`}${short}`;',
    replace: 'key = `${event.prompt_id === null ? "" : `${event.prompt_id}.`}${short}`;',
    tests: [t("hook_test.ts", "a byte-identical Stop after prompt 2")],
  },
  {
    id: "hook-tool-use-id-key",
    file: "lib/snapshot/agent.ts",
    find:
      "if (TOOL_EVENTS.has(event.event) && event.tool_use_id !== null) {\n    key = event.tool_use_id;",
    replace:
      "if (TOOL_EVENTS.has(event.event) && event.tool_use_id !== null) {\n    key = `${prompt}.${short}`;",
    tests: [t("hook_test.ts", "one checkpoint per event keyed on the agent session")],
  },
];
