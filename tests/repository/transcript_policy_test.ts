/**
 * The store's `transcripts` policy file: what it accepts and what it refuses.
 *
 * @module
 */
import { assertEquals, assertThrows } from "../_assert.ts";
import { ConfigError } from "../../lib/errors.ts";
import { parseTranscriptPolicy } from "../../lib/repository/transcript_policy.ts";

Deno.test("parseTranscriptPolicy() reads capture and max-bytes, defaults the rest", () => {
  assertEquals(parseTranscriptPolicy(""), { capture: true, maxBytes: 64 * 1024 * 1024 });
  assertEquals(parseTranscriptPolicy("# mine\ncapture off\nmax-bytes 1024\n"), {
    capture: false,
    maxBytes: 1024,
  });
});

Deno.test("parseTranscriptPolicy() refuses an unknown setting, a bad value and a setting given twice", () => {
  assertThrows(() => parseTranscriptPolicy("keep all\n"), ConfigError, "unknown setting");
  assertThrows(() => parseTranscriptPolicy("capture maybe\n"), ConfigError, "on or off");
  assertThrows(() => parseTranscriptPolicy("max-bytes 999999999999\n"), ConfigError, "max-bytes");
  assertThrows(() => parseTranscriptPolicy("capture on\ncapture off\n"), ConfigError, "twice");
});
