/**
 * Named remotes of a store (`ctxsnap remote add/list/remove`) and how a
 * remote URL becomes a {@linkcode Backend}.
 *
 * A remote is `s3://BUCKET[/PREFIX]` or `file:///DIR`. Its settings are kept
 * in the store's `meta` table under `remote:<name>` as canonical JSON
 * (`url`, `endpoint`, `region`, `path_style`; FORMAT.md §13.7). Credentials
 * are never stored: they come from `AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, else from the shared
 * credentials file (`AWS_SHARED_CREDENTIALS_FILE`, default
 * `~/.aws/credentials`, profile `AWS_PROFILE` or `default`). The endpoint is
 * the remote's `--endpoint`, else `AWS_ENDPOINT_URL_S3`, else
 * `AWS_ENDPOINT_URL`, else AWS (`https://s3.<region>.amazonaws.com`); the
 * region is `--region`, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, else
 * `us-east-1`. A custom endpoint is addressed path-style unless the remote
 * says otherwise; AWS virtual-hosted.
 *
 * Part of the remote layer (above share, below cli).
 *
 * @example
 * ```ts
 * import { parseRemoteUrl } from "./remote_config.ts";
 * const s3 = parseRemoteUrl("s3://team-bucket/ctx/project");
 * if (s3.kind !== "s3" || s3.bucket !== "team-bucket" || s3.prefix !== "ctx/project") {
 *   throw new Error("s3 URL");
 * }
 * const file = parseRemoteUrl("file:///srv/share/ctx");
 * if (file.kind !== "file" || file.dir !== "/srv/share/ctx") throw new Error("file URL");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { canonicalize, parseJson } from "../encoding/canonical_json.ts";
import { ConflictError, IntegrityError, NotFoundError, quote, UsageError } from "../errors.ts";
import { getEnv } from "../runtime.ts";
import type { Store } from "../repository/store.ts";
import type { Backend } from "./backend.ts";
import { FileBackend } from "./file_backend.ts";
import { S3Backend } from "./s3_backend.ts";
import type { Credentials } from "./sigv4.ts";

/** A parsed remote URL. */
export type RemoteUrl =
  | { kind: "s3"; url: string; bucket: string; prefix: string }
  | { kind: "file"; url: string; dir: string };

/** A remote's stored settings. */
export interface RemoteConfig {
  /** Its name (`origin`, …). */
  name: string;
  /** `s3://…` or `file:///…`. */
  url: string;
  /** S3 endpoint URL, or null for the environment's or AWS's. */
  endpoint: string | null;
  /** S3 region, or null for the environment's. */
  region: string | null;
  /** Path-style addressing; null to decide from the endpoint. */
  pathStyle: boolean | null;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const BUCKET_RE = /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/;
const SEGMENT_RE = /^[A-Za-z0-9._-]+$/;
const META_PREFIX = "remote:";

/** Checks a remote name: letters, digits, `_`, `-`, 1–32 characters, starting with a letter or digit. */
export function checkRemoteName(name: string): string {
  if (!NAME_RE.test(name)) {
    throw new UsageError(`Invalid remote name ${quote(name)}`, {
      hint: "use 1 to 32 letters, digits, '_' or '-' (like origin or team)",
    });
  }
  return name;
}

/** Parses `s3://BUCKET[/PREFIX]` or `file:///DIR`; anything else is a usage error. */
export function parseRemoteUrl(url: string): RemoteUrl {
  const bad = (why: string): never => {
    throw new UsageError(`Invalid remote URL ${quote(url)}: ${why}`, {
      hint: "use s3://BUCKET/PREFIX or file:///ABSOLUTE/DIR",
    });
  };
  if (url.startsWith("s3://")) {
    const rest = url.slice(5).replace(/\/+$/, "");
    const [bucket = "", ...parts] = rest.split("/");
    if (!BUCKET_RE.test(bucket) || bucket.includes("..")) {
      bad(`${quote(bucket)} is not a bucket name`);
    }
    if (parts.some((p) => !SEGMENT_RE.test(p) || p === "." || p === "..") || rest.length > 512) {
      bad("the prefix must be /-separated names of letters, digits, '.', '_' and '-'");
    }
    const prefix = parts.join("/");
    return {
      kind: "s3",
      url: `s3://${bucket}${prefix === "" ? "" : `/${prefix}`}`,
      bucket,
      prefix,
    };
  }
  if (url.startsWith("file://")) {
    const rest = url.slice(7);
    if (!rest.startsWith("/")) bad("a file URL names an absolute directory: file:///DIR");
    let dir: string;
    try {
      dir = decodeURIComponent(rest);
    } catch {
      return bad("bad percent-encoding");
    }
    if (dir.includes("\0")) bad("the path contains NUL");
    dir = path.resolve(dir);
    return { kind: "file", url: `file://${dir}`, dir };
  }
  return bad("unknown scheme");
}

function metaKey(name: string): string {
  return META_PREFIX + name;
}

function decodeConfig(name: string, text: string): RemoteConfig {
  let value: Record<string, unknown>;
  try {
    value = parseJson(text, { maxBytes: 64 * 1024 }) as Record<string, unknown>;
  } catch (error) {
    throw new IntegrityError(`The settings of remote ${quote(name)} are unreadable`, {
      cause: error,
    });
  }
  const str = (v: unknown) => (typeof v === "string" ? v : null);
  const url = str(value?.url);
  if (url === null) throw new IntegrityError(`The settings of remote ${quote(name)} name no URL`);
  return {
    name,
    url: parseRemoteUrl(url).url,
    endpoint: str(value.endpoint),
    region: str(value.region),
    pathStyle: typeof value.path_style === "boolean" ? value.path_style : null,
  };
}

/** Every remote of the store, sorted by name. */
export function listRemotes(store: Store): RemoteConfig[] {
  return store.metaWithPrefix(META_PREFIX).map((row) =>
    decodeConfig(row.key.slice(META_PREFIX.length), row.value)
  );
}

/** One remote, or {@linkcode NotFoundError}. */
export function getRemote(store: Store, name: string): RemoteConfig {
  const text = store.getMeta(metaKey(checkRemoteName(name)));
  if (text === null) {
    throw new NotFoundError(`No remote named ${quote(name)}`, {
      hint: "list remotes with `ctxsnap remote list`; add one with `ctxsnap remote add NAME URL`",
    });
  }
  return decodeConfig(name, text);
}

/** Checks an endpoint URL (`http(s)://host[:port]`, no path). */
export function checkEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new UsageError(`Invalid endpoint ${quote(endpoint)}`, {
      hint: "use http(s)://HOST[:PORT]",
    });
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") || url.username !== "" ||
    url.password !== "" || (url.pathname !== "/" && url.pathname !== "") || url.search !== ""
  ) {
    throw new UsageError(`Invalid endpoint ${quote(endpoint)}`, {
      hint: "use http(s)://HOST[:PORT] without a path, user or query",
    });
  }
  return url.origin;
}

/** Checks a region name. */
export function checkRegion(region: string): string {
  if (!/^[a-z0-9-]{1,64}$/.test(region)) throw new UsageError(`Invalid region ${quote(region)}`);
  return region;
}

/** Adds a remote (inside a write transaction); an existing name is a conflict. */
export function addRemote(store: Store, config: RemoteConfig): RemoteConfig {
  checkRemoteName(config.name);
  const url = parseRemoteUrl(config.url);
  const clean: RemoteConfig = {
    name: config.name,
    url: url.url,
    endpoint: config.endpoint === null ? null : checkEndpoint(config.endpoint),
    region: config.region === null ? null : checkRegion(config.region),
    pathStyle: config.pathStyle,
  };
  if (url.kind === "file" && (clean.endpoint !== null || clean.region !== null)) {
    throw new UsageError("--endpoint and --region apply to s3:// remotes only");
  }
  return store.transaction("remote add", () => {
    if (store.getMeta(metaKey(clean.name)) !== null) {
      throw new ConflictError(`A remote named ${quote(clean.name)} exists already`, {
        hint: "remove it first with `ctxsnap remote remove NAME`",
      });
    }
    // Stored with the keys of FORMAT.md §13.7.
    const stored = {
      url: clean.url,
      endpoint: clean.endpoint,
      region: clean.region,
      path_style: clean.pathStyle,
    };
    store.setMeta(metaKey(clean.name), canonicalize(stored));
    return clean;
  });
}

/** Removes a remote and what this store remembers of its refs. */
export function removeRemote(store: Store, name: string): RemoteConfig {
  const config = getRemote(store, name);
  store.transaction("remote remove", () => {
    store.deleteMeta(metaKey(name));
    store.deleteMetaWithPrefix(`remote-ref:${name}:`);
  });
  return config;
}

/** Reads AWS-style settings: the environment first, then the shared credentials file. */
export function credentialsFromEnvironment(): Credentials | null {
  const id = getEnv("AWS_ACCESS_KEY_ID") ?? "";
  const secret = getEnv("AWS_SECRET_ACCESS_KEY") ?? "";
  const token = getEnv("AWS_SESSION_TOKEN") ?? "";
  if (id !== "" && secret !== "") {
    return {
      accessKeyId: id,
      secretAccessKey: secret,
      ...(token !== "" ? { sessionToken: token } : {}),
    };
  }
  const home = getEnv("HOME") ?? "";
  const file = getEnv("AWS_SHARED_CREDENTIALS_FILE") ??
    (home === "" ? "" : path.join(home, ".aws", "credentials"));
  if (file === "") return null;
  let text: string;
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile() || stat.size > 1024 * 1024) return null;
    text = fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
  const profile = getEnv("AWS_PROFILE") || "default";
  const values = iniSection(text, profile);
  const fileId = values.get("aws_access_key_id") ?? "";
  const fileSecret = values.get("aws_secret_access_key") ?? "";
  const fileToken = values.get("aws_session_token") ?? "";
  if (fileId === "" || fileSecret === "") return null;
  return {
    accessKeyId: fileId,
    secretAccessKey: fileSecret,
    ...(fileToken !== "" ? { sessionToken: fileToken } : {}),
  };
}

/** The `key = value` pairs of `[section]` in an INI text (the AWS credentials file). */
export function iniSection(text: string, section: string): Map<string, string> {
  const values = new Map<string, string>();
  let current: string | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[\s*(.+?)\s*\]$/.exec(line);
    if (header !== null) {
      current = header[1]!;
      continue;
    }
    if (current !== section) continue;
    const eq = line.indexOf("=");
    if (eq > 0) values.set(line.slice(0, eq).trim().toLowerCase(), line.slice(eq + 1).trim());
  }
  return values;
}

/** Opens the backend of a remote URL with its settings and the environment. */
export function openBackend(
  config: Pick<RemoteConfig, "url" | "endpoint" | "region" | "pathStyle">,
  options: { pageSize?: number } = {},
): Backend {
  const url = parseRemoteUrl(config.url);
  if (url.kind === "file") return new FileBackend(url.dir);
  const region = config.region ??
    (getEnv("AWS_REGION") || getEnv("AWS_DEFAULT_REGION") || "us-east-1");
  const fromEnv = getEnv("AWS_ENDPOINT_URL_S3") || getEnv("AWS_ENDPOINT_URL") || "";
  const custom = config.endpoint ?? (fromEnv === "" ? null : checkEndpoint(fromEnv));
  const endpoint = new URL(custom ?? `https://s3.${checkRegion(region)}.amazonaws.com`);
  return new S3Backend({
    endpoint,
    bucket: url.bucket,
    prefix: url.prefix,
    region: checkRegion(region),
    pathStyle: config.pathStyle ?? custom !== null,
    credentials: credentialsFromEnvironment(),
    ...(options.pageSize !== undefined ? { pageSize: options.pageSize } : {}),
  });
}
