/**
 * Entry point of the Node.js single-executable build (see `scripts/compile.ts`).
 *
 * `cli.ts` guards on `import.meta.main`, which Node lacks, and uses top-level
 * await, which a CommonJS bundle (what a Node SEA runs) cannot hold. This file
 * calls the same `main` without either.
 *
 * @module
 */
import { main } from "../lib/cli/main.ts";
import { args, exit } from "../lib/runtime.ts";
import process from "node:process";

main(args()).then(
  (code) => exit(code),
  (error: unknown) => {
    // main() maps every expected error to a status; this is a bug guard only.
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stderr.write(`ctxsnap: internal error: ${text}\n`);
    exit(1);
  },
);
