/**
 * Private file helpers of the crypto layer (which sits above lib/fs).
 * @module
 */
import { closeSync, constants, fsyncSync, openSync } from "node:fs";

/** Fsyncs a directory so a rename in it is durable; best effort where unsupported. */
export function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, constants.O_RDONLY);
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic.
  }
}
