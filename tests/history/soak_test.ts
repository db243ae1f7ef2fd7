// deno-lint-ignore-file no-console
/**
 * The soak (scripts/_soak.ts): agent sessions' hooks in parallel processes,
 * a `create` loop, `create` killed with SIGKILL at random instants, `gc`,
 * `forget`, `verify --all`, `list --all` and `push` to a file remote, all at
 * once on one store for a bounded time. It must hold that every snapshot id
 * any command reported is still listed and intact, every concurrent
 * `verify --all` exits 0 or 6 and the final one 0, no hook fails the agent,
 * and no operation is unresolved after `recover`.
 *
 * CTXSNAP_SOAK_SECONDS (default 30) sets how long the loops run (`deno task
 * stress` runs it longer); CTXSNAP_SOAK_SEED the seed of the kill instants.
 *
 * @module
 */
import { assert, assertEquals } from "../_assert.ts";
import { CTXSNAP_BIN } from "../_cli.ts";
import { runSoak, soakFigures } from "../../scripts/_soak.ts";

const SECONDS = Number(Deno.env.get("CTXSNAP_SOAK_SECONDS") ?? "30");
const SEED = Number(Deno.env.get("CTXSNAP_SOAK_SEED") ?? Date.now() % 1_000_000);

Deno.test("soak: hooks of three agent sessions, creates, kill -9, gc, forget, verify --all, list and push at once keep every reported snapshot, and every verify exits 0 or 6", async () => {
  const result = await runSoak({
    durationMs: SECONDS * 1000,
    agents: 3,
    seed: SEED,
    files: 300,
    ...(CTXSNAP_BIN !== undefined ? { command: [CTXSNAP_BIN] } : {}),
  });
  const figures = soakFigures(result);
  console.log(`soak (seed ${SEED}, ${SECONDS} s): ${JSON.stringify(figures)}`);
  assertEquals(result.failures, [], `seed ${SEED}`);
  // Every loop really ran alongside the others.
  for (const loop of ["hook", "create", "kill", "gc", "forget", "verify", "list", "push"]) {
    assert((figures.loops[loop]?.count ?? 0) > 0, `the ${loop} loop ran`);
  }
  assert(result.reported.size > 1, "commands reported snapshots");
  assertEquals(result.final.verify.code, 0);
});
