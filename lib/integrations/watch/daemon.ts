/**
 * The watch process nobody has to manage (layer: watch; docs/FORMAT.md §15):
 * the first `create`, hook event or MCP session of a store starts one in the
 * background when none runs; it logs into the store's private `run/`
 * directory and exits after an idle time. At most one serves a store: it
 * holds `run/watch.lock` (its pid), which a process killed with `kill -9`
 * leaves behind and the next one takes over once that pid is gone.
 *
 * It is off when `CTXSNAP_DAEMON=off` (or `0`, `false`, `no`) or when the
 * store's `daemon.conf` says `enabled = false`; `idle_timeout = 30m` there
 * (or `CTXSNAP_DAEMON_IDLE`) sets the idle time.
 *
 * @example
 * ```ts
 * import { parseDaemonConf } from "./daemon.ts";
 * const conf = parseDaemonConf("enabled = true\nidle_timeout = 10m\n");
 * if (conf.idleMs !== 600_000) throw new Error("idle timeout not read");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import process from "node:process";
import { ConfigError, quote } from "../../errors.ts";
import { environment, getEnv, selfCommand } from "../../runtime.ts";
import { readDaemonConf } from "../../repository/daemon_conf.ts";
import { isPrivateDir, runDir } from "./protocol.ts";

/** Idle time after which an on-demand watch process exits (30 minutes). */
export const DEFAULT_IDLE_MS: number = 30 * 60_000;
/** The lock file naming the watch process serving a store. */
export const LOCK_FILE = "watch.lock";
/** The log of on-demand watch processes. */
export const LOG_FILE = "daemon.log";
/** A log larger than this is started afresh. */
const MAX_LOG_BYTES = 1024 * 1024;

/**
 * V8 flags of a watch process that runs on Deno (through `DENO_V8_FLAGS`):
 * a young generation of at most 2 MiB a semi-space instead of 16, so the
 * heap its first walk grows to, which V8 keeps committed afterwards, stays
 * small (docs/BENCHMARKS.md, daemon: 146 -> 134 MiB RSS on 43k files).
 */
export const DAEMON_V8_FLAGS = "--max-semi-space-size=2";

/**
 * The environment a watch process starts with: this process's, plus
 * {@linkcode DAEMON_V8_FLAGS} after any V8 flags already set.
 */
export function daemonEnvironment(): Record<string, string> {
  const env = environment() as Record<string, string>;
  const flags = env.DENO_V8_FLAGS;
  return {
    ...env,
    DENO_V8_FLAGS: flags === undefined || flags === ""
      ? DAEMON_V8_FLAGS
      : `${flags},${DAEMON_V8_FLAGS}`,
  };
}

/** Whether on-demand watch processes start, and when they stop. */
export interface DaemonSettings {
  /** Start one when none runs. */
  enabled: boolean;
  /** Milliseconds without a request after which it exits. */
  idleMs: number;
}

/**
 * Parses a duration: an integer with `ms`, `s`, `m` or `h` (bare: seconds).
 * Throws {@linkcode ConfigError} otherwise.
 */
export function parseDuration(text: string): number {
  const match = /^(\d{1,9})(ms|s|m|h)?$/.exec(text.trim());
  if (match === null) {
    throw new ConfigError(`Bad duration ${quote(text)}`, { hint: "e.g. 90s, 30m or 2h" });
  }
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? "s"]!;
  return Number(match[1]) * unit;
}

/**
 * Parses `daemon.conf`: lines `key = value` (`enabled` true/false,
 * `idle_timeout` a duration), `#` comments and blank lines. Throws
 * {@linkcode ConfigError} on anything else.
 */
export function parseDaemonConf(text: string): Partial<DaemonSettings> {
  const out: Partial<DaemonSettings> = {};
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-z_]+)\s*=\s*(\S+)$/.exec(line);
    const bad = () => {
      throw new ConfigError(`daemon.conf line ${i + 1} ${quote(line)} is not understood`, {
        hint: "enabled = true|false, idle_timeout = 30m",
      });
    };
    if (match === null) bad();
    const [, key, value] = match!;
    if (key === "enabled" && (value === "true" || value === "false")) {
      out.enabled = value === "true";
    } else if (key === "idle_timeout") out.idleMs = parseDuration(value!);
    else bad();
  }
  return out;
}

/** The daemon settings of the store in `storeDir` (environment over `daemon.conf`). */
export function daemonSettings(storeDir: string): DaemonSettings {
  const text = readDaemonConf(storeDir);
  const conf = text === null ? {} : parseDaemonConf(text);
  const env = (getEnv("CTXSNAP_DAEMON") ?? "").trim().toLowerCase();
  const off = ["off", "0", "false", "no"].includes(env);
  const on = ["on", "1", "true", "yes"].includes(env);
  const idle = getEnv("CTXSNAP_DAEMON_IDLE");
  return {
    enabled: off ? false : on ? true : conf.enabled ?? true,
    idleMs: idle !== undefined && idle !== ""
      ? parseDuration(idle)
      : conf.idleMs ?? DEFAULT_IDLE_MS,
  };
}

/** Whether a process with id `pid` exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM";
  }
}

/** The pid in the store's `watch.lock` if that process is alive, else null. */
export function lockHolder(storeDir: string): number | null {
  const pid = readLockPid(path.join(runDir(storeDir), LOCK_FILE));
  return pid !== null && alive(pid) ? pid : null;
}

function readLockPid(file: string): number | null {
  try {
    const text = fs.readFileSync(file, "utf8");
    const pid = Number(text.trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * Takes the store's `watch.lock` for this process: returns a function that
 * releases it, or the pid of the live process holding it. A lock whose
 * process is gone (killed with `kill -9`) is taken over: it is renamed aside
 * (only one taker can), and put back if its process turns out alive.
 */
export function acquireLock(storeDir: string): (() => void) | number {
  const dir = runDir(storeDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!isPrivateDir(dir)) {
    throw new ConfigError(`The directory ${quote(dir)} is not private to this user`, {
      hint: `it must be a directory you own with mode 0700: chmod 700 ${dir}`,
    });
  }
  const file = path.join(dir, LOCK_FILE);
  const mine = `${process.pid}\n`;
  for (let attempt = 0; attempt < 5; attempt++) {
    const temp = path.join(dir, `.ctxsnap-tmp-lock-${process.pid}-${attempt}`);
    fs.writeFileSync(temp, mine, { mode: 0o600 });
    try {
      fs.linkSync(temp, file); // atomic: fails when a lock exists
      return () => {
        if (readLockPid(file) === process.pid) fs.rmSync(file, { force: true });
      };
    } catch (error) {
      if ((error as { code?: string }).code !== "EEXIST") throw error;
    } finally {
      fs.rmSync(temp, { force: true });
    }
    const holder = readLockPid(file);
    if (holder !== null && holder !== process.pid && alive(holder)) return holder;
    // Stale: move it aside; only one process succeeds for this file.
    const aside = path.join(dir, `.ctxsnap-tmp-stale-${process.pid}-${attempt}`);
    try {
      fs.renameSync(file, aside);
    } catch {
      continue; // someone else took it over first: look again
    }
    const moved = readLockPid(aside);
    if (moved !== null && moved !== process.pid && alive(moved)) {
      // It was a fresh lock, not the stale one read above: give it back.
      try {
        fs.linkSync(aside, file);
      } catch {
        // Another took the place meanwhile; it is theirs.
      }
      fs.rmSync(aside, { force: true });
      return moved;
    }
    fs.rmSync(aside, { force: true });
  }
  throw new ConfigError(`Cannot take the lock ${quote(file)}`, {
    hint: "another watch process keeps starting; try again",
  });
}

/**
 * Starts a watch process for the store in `storeDir` (workspace `workspace`)
 * in the background, unless it is turned off, one holds the lock already,
 * or this process cannot start itself again. Returns its pid, or null. Its
 * output goes to `run/daemon.log`; it outlives this process.
 */
export async function startDaemon(storeDir: string, workspace: string): Promise<number | null> {
  let settings: DaemonSettings;
  try {
    settings = daemonSettings(storeDir);
  } catch {
    return null; // a bad daemon.conf: the watch reports it when started by hand
  }
  if (!settings.enabled) return null;
  const self = selfCommand();
  if (self === null) return null;
  const dir = runDir(storeDir);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch {
    return null;
  }
  if (!isPrivateDir(dir) || lockHolder(storeDir) !== null) return null;
  const log = path.join(dir, LOG_FILE);
  let fd: number;
  try {
    const size = fs.existsSync(log) ? fs.lstatSync(log).size : 0;
    const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW |
      (size > MAX_LOG_BYTES ? fs.constants.O_TRUNC : fs.constants.O_APPEND);
    fd = fs.openSync(log, flags, 0o600);
  } catch {
    return null;
  }
  try {
    const { spawn } = await import("node:child_process");
    const [command, ...args] = self;
    const child = spawn(command!, [
      ...args,
      "--store",
      storeDir,
      "watch",
      "--daemon",
      "--idle-timeout",
      `${settings.idleMs}ms`,
    ], {
      cwd: workspace,
      env: daemonEnvironment(),
      detached: true,
      stdio: ["ignore", fd, fd],
    });
    child.on("error", () => {});
    child.unref();
    return child.pid ?? null;
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}
