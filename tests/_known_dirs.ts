/**
 * Shared by the capture tests (tests/workspace/capture_test.ts and the
 * tree-cache tests, known_dirs*_test.ts): a workspace with its store, a tree
 * to capture, and a capture checked against one that uses no cache at all.
 */
import * as fs from "node:fs";
import { join } from "node:path";
import { assertEquals } from "./_assert.ts";
import { Store } from "../lib/repository/store.ts";
import { type CaptureResult, captureWorkspace } from "../lib/workspace/capture.ts";

// Built here, so this file itself holds no key.
const BASE64 = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7Vj1bbnGs3Zt9";
const LABEL = ["OPENSSH", "PRIVATE", "KEY"].join(" ");
/** A private key, built here so no file holds one. */
export const KEY = `-----BEGIN ${LABEL}-----\n${BASE64}\n${BASE64}\n-----END ${LABEL}-----\n`;

/** Runs `fn` with a new store and its workspace, both removed after. */
export async function withWorkspace(
  fn: (store: Store, root: string) => void | Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "ctxsnap-capture-" });
  const root = join(dir, "ws");
  fs.mkdirSync(root);
  const store = Store.init(join(dir, "store"), root);
  try {
    await fn(store, root);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes `content` at `path` below `root`, making its directories. */
export function put(root: string, path: string, content = `${path}\n`): void {
  fs.mkdirSync(join(root, path, ".."), { recursive: true });
  fs.writeFileSync(join(root, path), content);
}

/** Past the racy window of every file written so far. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1100));
}

/** A persisted capture, in its own transaction. */
export function capture(store: Store): CaptureResult {
  return store.transaction("capture", () => captureWorkspace(store));
}

/** The tree a capture with no cache at all computes (nothing stored). */
export function reference(store: Store): CaptureResult {
  return captureWorkspace(store, { persist: false, useStatCache: false });
}

/** Captures, and checks the result against {@linkcode reference}. */
export function checked(store: Store): CaptureResult {
  const made = capture(store);
  const full = reference(store);
  assertEquals(made.treeId, full.treeId, "the cached capture stored another tree");
  assertEquals(made.skipped, full.skipped);
  const { hashed: _h, reused: _r, ...counts } = made.stats;
  const { hashed: _fh, reused: _fr, ...fullCounts } = full.stats;
  assertEquals(counts, fullCounts);
  return made;
}

/** Four directories of five files with a subdirectory each, a top file and a secret by name. */
export function writeTree(root: string): void {
  for (let d = 0; d < 4; d++) {
    for (let f = 0; f < 5; f++) put(root, `d${d}/f${f}.txt`, `file ${d}/${f}\n`);
    put(root, `d${d}/sub/s.txt`, `sub ${d}\n`);
  }
  put(root, "top.md", "# top\n");
  put(root, ".env", "TOKEN=x\n");
}
