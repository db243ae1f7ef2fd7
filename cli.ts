#!/usr/bin/env -S deno run -A
/**
 * The `ctxsnap` command line. Run `ctxsnap --help`.
 *
 * @module
 */
import { main } from "./lib/cli/main.ts";
import { args, exit } from "./lib/runtime.ts";

if (import.meta.main) exit(await main(args()));
