/**
 * Paths a restore or materialize may never write in one directory: the
 * store's own location when the store lives inside it, compared after the
 * folding other filesystems apply (see `lib/workspace/io/reserved.ts`).
 *
 * @example
 * ```ts
 * import { refuseStorePaths, storeLocationIn } from "./restore_paths.ts";
 * if (storeLocationIn("/w", "/w/data/store") !== "data/store") throw new Error("inside");
 * if (storeLocationIn("/w", "/elsewhere/store") !== null) throw new Error("outside");
 * let refused = false;
 * try {
 *   refuseStorePaths("/w", "/w/data/store", ["data/Store./index.db"]);
 * } catch {
 *   refused = true;
 * }
 * if (!refused) throw new Error("a folded spelling of the store is refused");
 * ```
 * @module
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { IntegrityError, quote } from "../errors.ts";
import { isInsideReservedPath } from "./io/reserved.ts";

function real(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir); // not there (yet): nothing can be inside it through a link
  }
}

/** The store directory relative to `root` (POSIX separators), or null when outside it. */
export function storeLocationIn(root: string, storeDir: string): string | null {
  const relative = path.relative(real(root), real(storeDir));
  if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) return null;
  return relative.split(path.sep).join("/");
}

/**
 * Throws {@linkcode IntegrityError} naming the first of `paths` that is, or
 * lies below, the store's location inside `root` in any folded spelling.
 */
export function refuseStorePaths(root: string, storeDir: string, paths: Iterable<string>): void {
  const location = storeLocationIn(root, storeDir);
  if (location === null) return;
  for (const rel of paths) {
    if (isInsideReservedPath(rel, location)) {
      throw new IntegrityError(
        `The snapshot names ${quote(rel)}, inside this workspace's store ${quote(location)}`,
        { hint: "a restore never writes into the store; materialize the snapshot elsewhere" },
      );
    }
  }
}
