/**
 * Capture policy defaults (docs/DESIGN.md §4): directories never descended into, file
 * names treated as secrets (never opened, never captured) and the default
 * size limit for a single file.
 *
 * @example
 * ```ts
 * import { DEFAULT_EXCLUDED_DIRS, DEFAULT_MAX_FILE_BYTES, isSecretName } from "./capture_policy.ts";
 *
 * if (!(DEFAULT_EXCLUDED_DIRS.has("node_modules"))) throw new Error("Example failed");
 * if (!(isSecretName(".env.local"))) throw new Error("Example failed");
 * if (!(isSecretName("Server.PEM"))) throw new Error("Example failed");
 * if (!(isSecretName("id_rsa") && !isSecretName("id_rsa.pub"))) throw new Error("Example failed");
 * if (!(!isSecretName("environment.ts"))) throw new Error("Example failed");
 * if (!(DEFAULT_MAX_FILE_BYTES === 256 * 1024 * 1024)) throw new Error("Example failed");
 * ```
 * @module
 */

/**
 * Directory names skipped wherever they occur in the workspace: `.git`,
 * `.ctxsnap`, `.venv`, `__pycache__` and `node_modules`.
 */
export const DEFAULT_EXCLUDED_DIRS: ReadonlySet<string> = new Set([
  ".git",
  ".ctxsnap",
  ".venv",
  "__pycache__",
  "node_modules",
]);

/** Largest regular file captured by default: 256 MiB. */
export const DEFAULT_MAX_FILE_BYTES: number = 256 * 1024 * 1024;

/** File names that hold credentials, compared case-insensitively. */
const SECRET_NAMES: ReadonlySet<string> = new Set([
  // environment files
  ".env",
  ".envrc",
  // cloud and service credentials
  "credentials",
  "credentials.json",
  "service-account.json",
  "service_account.json",
  "application_default_credentials.json",
  // SSH private keys (their `.pub` halves are not secret)
  "id_rsa",
  "id_dsa",
  "id_ecdsa",
  "id_ed25519",
  "id_ecdsa_sk",
  "id_ed25519_sk",
  // package registries, databases, git, netrc
  ".netrc",
  "_netrc",
  ".npmrc",
  ".pypirc",
  ".pgpass",
  ".git-credentials",
  // HashiCorp Vault's login token, armored PGP private keys as gpg exports them
  ".vault-token",
  "private.asc",
  "secret.asc",
  "secring.gpg",
  "secring.asc",
]);

/** Name endings that hold keys or credentials, compared case-insensitively. */
const SECRET_SUFFIXES: readonly string[] = [
  ".env",
  ".key",
  ".pem",
  ".p12",
  ".pfx",
  ".jks",
  ".keystore",
  ".ppk",
  ".tfstate",
  ".tfstate.backup",
  // SSH private keys under other names (deploy_rsa, github_ed25519, …)
  "_rsa",
  "_dsa",
  "_ecdsa",
  "_ed25519",
];

/**
 * Files that are secret only in a directory of that name (the last two path
 * segments, compared case-insensitively): kubectl's and Docker's client
 * configurations hold tokens and registry passwords; the AWS CLI's
 * `credentials` is already a secret name.
 */
const SECRET_IN_DIR: ReadonlySet<string> = new Set([
  ".kube/config",
  ".docker/config.json",
  "gcloud/credentials.db",
  "gcloud/access_tokens.db",
]);

/**
 * Whether a file name (the last path segment, not a whole path) names a
 * secret, compared case-insensitively: environment files (`.env`, `.env.*`,
 * `*.env`, `.envrc`); private keys and keystores (`*.key`, `*.pem`, `*.p12`,
 * `*.pfx`, `*.jks`, `*.keystore`, `*.ppk`, SSH keys `id_rsa`, `id_dsa`,
 * `id_ecdsa`, `id_ed25519` and their `_sk` forms, and any name ending in
 * `_rsa`, `_dsa`, `_ecdsa` or `_ed25519`); credential files (`credentials`,
 * `credentials.json`, `service-account.json`, `service_account.json`,
 * `application_default_credentials.json`, `.netrc`, `_netrc`, `.npmrc`,
 * `.pypirc`, `.pgpass`, `.git-credentials`, Vault's `.vault-token`); PGP
 * private keys (`private.asc`, `secret.asc`, `secring.gpg`, `secring.asc`);
 * Terraform state (`*.tfstate`, `*.tfstate.backup`).
 *
 * @example
 * ```ts
 * import { isSecretName } from "./capture_policy.ts";
 * if (!(isSecretName("id_ed25519.key"))) throw new Error("Example failed");
 * if (!(isSecretName("CREDENTIALS"))) throw new Error("Example failed");
 * if (!(isSecretName("deploy_rsa") && !isSecretName("deploy_rsa.pub"))) throw new Error("Example failed");
 * if (!(isSecretName("prod.env") && !isSecretName("environment.ts"))) throw new Error("Example failed");
 * if (!(!isSecretName("credentials.md"))) throw new Error("Example failed");
 * ```
 */
export function isSecretName(name: string): boolean {
  const lower = name.toLowerCase();
  if (SECRET_NAMES.has(lower) || lower.startsWith(".env.")) return true;
  for (const suffix of SECRET_SUFFIXES) {
    if (lower.endsWith(suffix) && lower !== suffix) return true;
  }
  return false;
}

/**
 * Whether a workspace-relative path names a secret: its last segment is a
 * secret name ({@linkcode isSecretName}), or its last two segments are one of
 * `.kube/config`, `.docker/config.json`, `gcloud/credentials.db`,
 * `gcloud/access_tokens.db`, or it lies below `gcloud/legacy_credentials/`
 * (all compared case-insensitively).
 *
 * @example
 * ```ts
 * import { isSecretPath } from "./capture_policy.ts";
 * if (!isSecretPath("home/.kube/config")) throw new Error(".kube/config");
 * if (isSecretPath("app/config")) throw new Error("a plain config file");
 * if (!isSecretPath(".config/gcloud/legacy_credentials/me@example.com/adc.json")) {
 *   throw new Error("gcloud legacy credentials");
 * }
 * ```
 */
export function isSecretPath(path: string): boolean {
  const slash = path.lastIndexOf("/");
  if (isSecretName(slash < 0 ? path : path.slice(slash + 1))) return true;
  if (slash < 0) return false;
  // Lower-casing keeps every "/" and adds none, so the segments are the same.
  const lower = path.toLowerCase();
  const last = lower.lastIndexOf("/");
  // The last two segments, and a gcloud/legacy_credentials/ pair anywhere above the name.
  const before = last === 0 ? -1 : lower.lastIndexOf("/", last - 1);
  if (SECRET_IN_DIR.has(lower.slice(before + 1))) return true;
  return `/${lower}`.includes("/gcloud/legacy_credentials/");
}

/** The directory names (lower-cased) that the two-segment rules of {@linkcode isSecretPath} name. */
const SECRET_DIR_NAMES: ReadonlySet<string> = new Set(
  [...SECRET_IN_DIR].map((pair) => pair.slice(0, pair.indexOf("/"))),
);

/**
 * Whether any path rule of {@linkcode isSecretPath} beyond the file's own
 * name can apply to a child of directory `dirPath` (workspace-relative, `""`
 * for the root): when it cannot, `isSecretPath(dirPath + "/" + name)` is
 * exactly `isSecretName(name)`, so a walk decides once per directory
 * instead of lower-casing and searching every child's whole path.
 *
 * @example
 * ```ts
 * import { isSecretPath, secretPathRulesReach } from "./capture_policy.ts";
 * if (secretPathRulesReach("src/lib")) throw new Error("an ordinary directory");
 * if (!secretPathRulesReach("home/.kube") || !isSecretPath("home/.kube/config")) {
 *   throw new Error(".kube");
 * }
 * ```
 */
export function secretPathRulesReach(dirPath: string): boolean {
  if (dirPath === "") return false;
  const lower = dirPath.toLowerCase();
  if (SECRET_DIR_NAMES.has(lower.slice(lower.lastIndexOf("/") + 1))) return true;
  return `/${lower}/`.includes("/gcloud/legacy_credentials/");
}

/**
 * Names that are never part of a workspace tree, whatever their type or
 * spelling: git's metadata (a directory, or a `gitdir:` file in worktrees and
 * submodules) and ctxsnap's own store, compared after the folding other
 * filesystems apply (see `reserved.ts`). Capture skips them; a manifest that
 * names one anywhere is refused, so a restore can never write there.
 */
export { isReservedName, RESERVED_NAMES } from "./reserved.ts";
