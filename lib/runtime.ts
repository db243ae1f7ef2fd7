/**
 * The thin runtime seam: the only module that may touch `Deno.*`.
 *
 * Everything else uses web standards and `node:` built-ins so the same sources
 * run under Deno and inside a Node.js single executable.
 *
 * @example
 * ```ts
 * import { getEnv } from "./runtime.ts";
 * const home = getEnv("HOME");
 * ```
 * @module
 */
import type * as NodeFs from "node:fs";

// No static `node:` import: under Deno the first one starts Node.js
// compatibility (tens of milliseconds), which `--version`, `--help` and a
// checkpoint handed to a watch process do without. Under Deno the functions
// below use `Deno.*`; elsewhere the global `process` (Node.js, Bun).
// deno-lint-ignore no-explicit-any
const DENO: any = (globalThis as any).Deno;
// deno-lint-ignore no-explicit-any
const nodeProcess = (): any => (globalThis as any).process;
let fsModule: typeof NodeFs | undefined;
const fs = (): typeof NodeFs => fsModule ??= builtin<typeof NodeFs>("node:fs");

/**
 * What an in-process run of the command line sees in place of the process's
 * own environment, working directory, standard input and terminals (tests,
 * and harnesses that embed the CLI). See {@linkcode withProcessView}.
 */
export interface ProcessView {
  /** The whole environment: variables not listed here are unset. */
  env: Readonly<Record<string, string>>;
  /** The working directory (absolute). */
  cwd: string;
  /** Bytes standard input holds; omitted: standard input is empty. */
  stdin?: Uint8Array;
}

let view: ProcessView | null = null;
let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs `fn` with `v` in place of the process's environment, working
 * directory and standard input; no descriptor counts as a terminal meanwhile.
 * Runs queue: module state is per isolate, so two views at once would see
 * each other's environment; a second call waits for the first to finish.
 */
export function withProcessView<T>(v: ProcessView, fn: () => Promise<T>): Promise<T> {
  const run = queue.then(async () => {
    view = v;
    try {
      return await fn();
    } finally {
      view = null;
    }
  });
  queue = run.catch(() => {});
  return run;
}

/** The bytes of standard input in a {@linkcode ProcessView}, or null to read descriptor 0. */
export function viewStdin(): Uint8Array | null {
  return view === null ? null : view.stdin ?? new Uint8Array();
}

/** Returns an environment variable, or `undefined` when unset or not permitted. */
export function getEnv(name: string): string | undefined {
  if (view !== null) return Object.hasOwn(view.env, name) ? view.env[name] : undefined;
  try {
    return DENO ? DENO.env.get(name) : nodeProcess().env[name];
  } catch {
    return undefined;
  }
}

/**
 * Whether this process may read its environment: false under Deno without
 * `--allow-env`, where every {@linkcode getEnv} answers undefined (so the
 * config directory cannot be located).
 */
export function environmentReadable(): boolean {
  if (view !== null) return true;
  try {
    if (DENO) DENO.env.get("HOME");
    else void nodeProcess().env.HOME;
    return true;
  } catch {
    return false;
  }
}

/** The environment to hand a child process (the view's, in an in-process run). */
export function environment(): Record<string, string | undefined> {
  if (view !== null) return { ...view.env };
  try {
    return DENO ? DENO.env.toObject() : { ...nodeProcess().env };
  } catch {
    return {};
  }
}

/** Returns the command-line arguments after the script name. */
export function args(): string[] {
  if (DENO?.args) return [...DENO.args];
  return nodeProcess().argv.slice(2);
}

/**
 * Asks for a full garbage collection where the runtime offers one to scripts
 * (Bun's `Bun.gc`; Deno's and Node's `gc` only when started with
 * `--expose-gc`), after a burst of short-lived allocations (a watch
 * process's first walk) so the heap stops growing from there.
 */
export function collectGarbage(): void {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  try {
    if (typeof g.Bun?.gc === "function") g.Bun.gc(true);
    else if (typeof g.gc === "function") g.gc();
  } catch {
    // A hint only.
  }
}

/** Names the runtime executing this code, e.g. `deno 2.9.6`, `bun 1.4.4` or `node v26.10.0`. */
export function runtimeName(): string {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  if (deno?.version?.deno) return `deno ${deno.version.deno}`;
  // Bun also answers process.version (with the Node version it imitates).
  const bun = (nodeProcess().versions as Record<string, string | undefined>).bun;
  if (bun !== undefined) return `bun ${bun}`;
  return `node ${nodeProcess().version}`;
}

/** Whether file descriptor 0, 1 or 2 is a terminal. */
export function isTerminal(fd: 0 | 1 | 2): boolean {
  if (view !== null) return false;
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  try {
    if (deno) {
      const stream = fd === 0 ? deno.stdin : fd === 1 ? deno.stdout : deno.stderr;
      return stream.isTerminal();
    }
    const p = nodeProcess();
    const stream = fd === 0 ? p.stdin : fd === 1 ? p.stdout : p.stderr;
    return Boolean((stream as { isTTY?: boolean }).isTTY);
  } catch {
    return false;
  }
}

/** Exits the process with `code` after flushing nothing further. */
export function exit(code: number): never {
  if (DENO) DENO.exit(code);
  nodeProcess().exit(code);
  throw new Error("unreachable");
}

/**
 * Whether this process may read `path`: false only where the runtime has a
 * permission system (Deno) and read access to `path` is not granted.
 */
export function mayRead(path: string): boolean {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  if (typeof deno?.permissions?.querySync !== "function") return true;
  try {
    return deno.permissions.querySync({ name: "read", path }).state === "granted";
  } catch {
    return false;
  }
}

/**
 * Whether this process may write `path`: false where the runtime has a
 * permission system (Deno) and write access to `path` is not granted.
 */
export function mayWrite(path: string): boolean {
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  if (typeof deno?.permissions?.querySync !== "function") return true;
  try {
    return deno.permissions.querySync({ name: "write", path }).state === "granted";
  } catch {
    return false;
  }
}

/**
 * The process umask, read without changing it where the kernel says it
 * (`Umask:` in `/proc/self/status`: reading it through `umask(2)` sets it to
 * 0 for an instant, which other threads creating files would see); else
 * through the runtime; `0o022` where neither is allowed.
 */
export function umask(): number {
  try {
    const status = fs().readFileSync("/proc/self/status", "utf8");
    const match = /^Umask:\s*([0-7]+)$/m.exec(status);
    if (match !== null) return parseInt(match[1]!, 8);
  } catch {
    // No /proc: ask the runtime below.
  }
  // deno-lint-ignore no-explicit-any
  const deno = (globalThis as any).Deno;
  try {
    if (typeof deno?.umask === "function") return deno.umask();
    return nodeProcess().umask();
  } catch {
    return 0o022;
  }
}

/**
 * The effective user id of this process, or null where the platform has
 * none (Windows). Throws where the runtime forbids reading it (Deno without
 * `--allow-sys`), so a caller checking ownership fails closed.
 */
export function currentUid(): number | null {
  const p = nodeProcess();
  if (typeof p.geteuid === "function") return p.geteuid();
  if (typeof p.getuid === "function") return p.getuid();
  return null;
}

/** Current working directory. */
export function cwd(): string {
  if (view !== null) return view.cwd;
  try {
    return DENO ? DENO.cwd() : nodeProcess().cwd();
  } catch {
    return "."; // no permission to read the working directory's path
  }
}

/** The subset of `node:fs` `Stats` that ctxsnap uses (a node `Stats` satisfies it). */
export interface FileStat {
  /** Regular file. */
  isFile(): boolean;
  /** Directory. */
  isDirectory(): boolean;
  /** Symbolic link (lstat only). */
  isSymbolicLink(): boolean;
  /** FIFO. */
  isFIFO(): boolean;
  /** Socket. */
  isSocket(): boolean;
  /** Character device. */
  isCharacterDevice(): boolean;
  /** Block device. */
  isBlockDevice(): boolean;
  /** Size in bytes. */
  size: number;
  /** Modification time in ms. */
  mtimeMs: number;
  /** Status-change time in ms. */
  ctimeMs: number;
  /** Inode. */
  ino: number;
  /** Device. */
  dev: number;
  /** Mode bits including the file type. */
  mode: number;
  /** Number of hard links. */
  nlink: number;
  /** Owner's user id (0 where the platform has none). */
  uid: number;
  /** Owner's group id (where the runtime reports it). */
  gid?: number;
}

interface DenoFileInfo {
  isFile: boolean;
  isDirectory: boolean;
  isSymlink: boolean;
  isFifo: boolean | null;
  isSocket: boolean | null;
  isCharDevice: boolean | null;
  isBlockDevice: boolean | null;
  size: number;
  mtime: Date | null;
  ctime: Date | null;
  ino: number | null;
  dev: number;
  mode: number | null;
  nlink: number | null;
  uid: number | null;
  gid: number | null;
}

class DenoStat implements FileStat {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  dev: number;
  mode: number;
  nlink: number;
  uid: number;
  gid: number;
  constructor(private readonly info: DenoFileInfo) {
    this.size = info.size;
    this.mtimeMs = info.mtime?.getTime() ?? 0;
    this.ctimeMs = info.ctime?.getTime() ?? 0;
    this.ino = info.ino ?? 0;
    this.dev = info.dev;
    this.mode = info.mode ?? 0;
    this.nlink = info.nlink ?? 1;
    this.uid = info.uid ?? 0;
    this.gid = info.gid ?? -1;
  }
  isFile(): boolean {
    return this.info.isFile;
  }
  isDirectory(): boolean {
    return this.info.isDirectory;
  }
  isSymbolicLink(): boolean {
    return this.info.isSymlink;
  }
  isFIFO(): boolean {
    return this.info.isFifo === true;
  }
  isSocket(): boolean {
    return this.info.isSocket === true;
  }
  isCharacterDevice(): boolean {
    return this.info.isCharDevice === true;
  }
  isBlockDevice(): boolean {
    return this.info.isBlockDevice === true;
  }
}

// deno-lint-ignore no-explicit-any
const denoLstat: ((path: string) => DenoFileInfo) | undefined = (globalThis as any).Deno?.lstatSync;

/**
 * `lstat` without following a final symlink. Under Deno this uses
 * `Deno.lstatSync`, about three times faster than `node:fs` (which builds a
 * full `Stats`); errors carry the same `code` (`ENOENT`, `ENOTDIR`, …).
 */
export function lstat(path: string): FileStat {
  if (denoLstat !== undefined) return new DenoStat(denoLstat(path));
  return fs().lstatSync(path);
}

/**
 * Loads a `node:` built-in synchronously on first use (`process.getBuiltinModule`,
 * available in Deno 2 and Node 22.3+), so costly modules stay off the start-up path.
 */
export function builtin<T>(name: string): T {
  const load = (nodeProcess() as { getBuiltinModule?: (id: string) => unknown } | undefined)
    ?.getBuiltinModule;
  if (typeof load !== "function") {
    throw new Error(`This runtime cannot load ${name} on demand (no process.getBuiltinModule)`);
  }
  return load(name) as T;
}

type DeflateRaw = (data: Uint8Array, level: number) => Uint8Array;
let deflateRawImpl: DeflateRaw | undefined;

/**
 * Raw DEFLATE (RFC 1951) of `data` at zlib `level`, in one call. Under Bun
 * this is `Bun.deflateSync` with its zlib library: the zlib behind Bun's
 * `node:zlib`, with the same defaults, so the bytes are the same as
 * `deflateRawSync`'s, without the stream object and output buffers
 * `node:zlib` builds for every call (about a third of the cost of a 1 KiB
 * blob). Elsewhere it is `node:zlib`'s `deflateRawSync`.
 */
export function deflateRawSync(data: Uint8Array, level: number): Uint8Array {
  if (deflateRawImpl === undefined) {
    // deno-lint-ignore no-explicit-any
    const bun = (globalThis as any).Bun;
    if (typeof bun?.deflateSync === "function") {
      deflateRawImpl = (bytes, lvl) => bun.deflateSync(bytes, { level: lvl, library: "zlib" });
    } else {
      const zlib = builtin<typeof import("node:zlib")>("node:zlib");
      deflateRawImpl = (bytes, lvl) => {
        const out = zlib.deflateRawSync(bytes, { level: lvl });
        return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
      };
    }
  }
  return deflateRawImpl(data, level);
}

/**
 * Flushes the filesystem holding `dir` to stable storage (`syncfs`, through
 * `sync -f`), or runs `fallback` where that is not available.
 */
export function syncFilesystem(dir: string, fallback: () => void): void {
  try {
    const childProcess = builtin<typeof import("node:child_process")>("node:child_process");
    const result = childProcess.spawnSync("sync", ["-f", dir], { stdio: "ignore" });
    if (result.status === 0) return;
  } catch {
    // No way to spawn: fall back below.
  }
  fallback();
}

/**
 * A Linux inotify instance opened through libc (see {@linkcode openInotify}).
 * Events queue in the kernel until read, so nothing is lost while the process
 * is busy; when the queue overflows the kernel says so (`IN_Q_OVERFLOW`).
 */
export interface Inotify {
  /** Adds (or updates) a watch; returns its descriptor, or `-errno` on failure. */
  addWatch(path: string, mask: number): number;
  /** Removes a watch (ignoring one already gone). */
  removeWatch(wd: number): void;
  /**
   * Reads queued events into `buffer` without waiting: the bytes read, 0 when
   * none are queued, or `-errno` on failure.
   */
  read(buffer: Uint8Array): number;
  /** Closes the instance. */
  close(): void;
}

// deno-lint-ignore no-explicit-any
type Ffi = any;

/**
 * Opens a non-blocking inotify instance by calling libc through the
 * runtime's FFI (Deno's `Deno.dlopen`, or Bun's `bun:ffi`: the release
 * executables run on Bun), or returns null where that is not possible
 * (Node.js, a system other than Linux, no FFI permission, no glibc): callers
 * then fall back to full walks.
 */
export function openInotify(): Inotify | null {
  const deno: Ffi = (globalThis as Ffi).Deno;
  if (deno !== undefined) return openInotifyDeno(deno);
  if ((globalThis as Ffi).Bun !== undefined) return openInotifyBun();
  return null;
}

const IN_NONBLOCK = 0o4000;
const IN_CLOEXEC = 0o2000000;
const EAGAIN = 11;

function openInotifyDeno(deno: Ffi): Inotify | null {
  if (deno?.build?.os !== "linux" || typeof deno.dlopen !== "function") return null;
  let lib: Ffi;
  try {
    lib = deno.dlopen("libc.so.6", {
      inotify_init1: { parameters: ["i32"], result: "i32" },
      inotify_add_watch: { parameters: ["i32", "buffer", "u32"], result: "i32" },
      inotify_rm_watch: { parameters: ["i32", "i32"], result: "i32" },
      read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
      close: { parameters: ["i32"], result: "i32" },
      __errno_location: { parameters: [], result: "pointer" },
    });
  } catch {
    return null;
  }
  const errno = (): number => {
    const pointer = lib.symbols.__errno_location();
    return pointer === null ? 0 : new deno.UnsafePointerView(pointer).getInt32();
  };
  return inotifyOver({
    init: (flags) => lib.symbols.inotify_init1(flags),
    add: (fd, path, mask) => lib.symbols.inotify_add_watch(fd, path, mask),
    rm: (fd, wd) => lib.symbols.inotify_rm_watch(fd, wd),
    read: (fd, buffer) => Number(lib.symbols.read(fd, buffer, BigInt(buffer.byteLength))),
    close: (fd) => lib.symbols.close(fd),
    errno,
    unload: () => lib.close(),
  });
}

function openInotifyBun(): Inotify | null {
  if (nodeProcess()?.platform !== "linux") return null;
  let ffi: Ffi;
  let lib: Ffi;
  try {
    ffi = builtin<Ffi>("bun:ffi");
    lib = ffi.dlopen("libc.so.6", {
      inotify_init1: { args: ["i32"], returns: "i32" },
      inotify_add_watch: { args: ["i32", "ptr", "u32"], returns: "i32" },
      inotify_rm_watch: { args: ["i32", "i32"], returns: "i32" },
      read: { args: ["i32", "ptr", "u64"], returns: "i64" },
      close: { args: ["i32"], returns: "i32" },
      __errno_location: { args: [], returns: "ptr" },
    });
  } catch {
    return null;
  }
  const errno = (): number => {
    const pointer = lib.symbols.__errno_location();
    return pointer === null || pointer === 0 ? 0 : ffi.read.i32(pointer, 0);
  };
  return inotifyOver({
    init: (flags) => lib.symbols.inotify_init1(flags),
    add: (fd, path, mask) => lib.symbols.inotify_add_watch(fd, path, mask),
    rm: (fd, wd) => lib.symbols.inotify_rm_watch(fd, wd),
    read: (fd, buffer) => Number(lib.symbols.read(fd, buffer, buffer.byteLength)),
    close: (fd) => lib.symbols.close(fd),
    errno,
    unload: () => lib.close(),
  });
}

/** The libc calls an {@linkcode Inotify} needs, however the runtime reaches them. */
interface InotifyCalls {
  init(flags: number): number;
  add(fd: number, path: Uint8Array, mask: number): number;
  rm(fd: number, wd: number): number;
  read(fd: number, buffer: Uint8Array): number;
  close(fd: number): number;
  errno(): number;
  unload(): void;
}

function inotifyOver(calls: InotifyCalls): Inotify | null {
  const fd = calls.init(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    calls.unload();
    return null;
  }
  const encoder = new TextEncoder();
  let open = true;
  return {
    addWatch(path, mask) {
      const result = calls.add(fd, encoder.encode(`${path}\0`), mask);
      return result < 0 ? -calls.errno() : result;
    },
    removeWatch(wd) {
      calls.rm(fd, wd);
    },
    read(buffer) {
      const n = calls.read(fd, buffer);
      if (n >= 0) return n;
      const code = calls.errno();
      return code === EAGAIN ? 0 : -code;
    },
    close() {
      if (!open) return;
      open = false;
      calls.close(fd);
      calls.unload();
    },
  };
}

/**
 * The command line that starts this same ctxsnap again (`[executable,
 * ...arguments]`, to which a caller appends its own), or null when this
 * process is not the ctxsnap command line (an embedding, an in-process run
 * through {@linkcode withProcessView}, a test): then nothing is started.
 * Under Deno running `cli.ts`: `deno run -A --quiet cli.ts`; a compiled
 * executable (Deno, Bun or Node.js): the executable itself.
 */
export function selfCommand(): string[] | null {
  if (view !== null) return null;
  if (DENO) {
    if (DENO.build?.standalone === true) return [DENO.execPath()];
    const main: string = DENO.mainModule ?? "";
    if (!main.startsWith("file:") || !main.endsWith("/cli.ts")) return null;
    return [DENO.execPath(), "run", "-A", "--quiet", decodeURIComponent(new URL(main).pathname)];
  }
  const p = nodeProcess();
  // A single executable: its argv[1] is not a script this process was told to run.
  if ((p.versions as Record<string, string | undefined>).bun !== undefined) {
    const script: string = p.argv[1] ?? "";
    return script.startsWith("/$bunfs/") || script === p.execPath ? [p.execPath] : null;
  }
  try {
    const sea = builtin<{ isSea?: () => boolean }>("node:sea");
    return sea.isSea?.() === true ? [p.execPath] : null;
  } catch {
    return null;
  }
}

/**
 * Writes all of `bytes` to standard output (1) or error (2), synchronously;
 * a closed pipe ends the writing quietly.
 */
export function writeStdio(fd: 1 | 2, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.byteLength) {
    try {
      if (DENO) {
        offset += (fd === 1 ? DENO.stdout : DENO.stderr).writeSync(bytes.subarray(offset));
      } else {
        offset += fs().writeSync(fd, bytes, offset, bytes.byteLength - offset);
      }
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "EAGAIN" || (error as Error).name === "WouldBlock") continue;
      if (code === "EPIPE" || (error as Error).name === "BrokenPipe") return;
      throw error;
    }
  }
}
