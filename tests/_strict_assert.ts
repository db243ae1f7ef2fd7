// deno-lint-ignore-file no-console
/**
 * Preloaded by `deno task test`: makes `console.assert` throw, so the
 * `console.assert` lines in JSDoc examples (run by `deno test --doc`) fail
 * the test when they are false instead of only printing a message.
 * @module
 */
const original = console.assert.bind(console);
console.assert = (condition?: unknown, ...data: unknown[]): void => {
  if (!condition) {
    original(false, ...data);
    throw new Error(`Assertion failed${data.length > 0 ? `: ${data.map(String).join(" ")}` : ""}`);
  }
};
