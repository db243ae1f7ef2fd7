/**
 * Strict reading of one agent hook payload (untrusted JSON): bounded size,
 * fields of the documented type and form or a refusal naming the field.
 *
 * @module
 */
import { parseJson } from "../../encoding/canonical_json.ts";
import { quote, UsageError } from "../../errors.ts";
import { MAX_EVENT_BYTES } from "../../history/agent.ts";

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const EVENT_RE = /^[A-Za-z][A-Za-z0-9._]{0,63}$/;
// deno-lint-ignore no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/;
/** Longest prompt text kept (characters). */
const MAX_PROMPT_CHARS = 256 * 1024;

/** A parsed payload object with typed field readers that refuse bad forms. */
export class Payload {
  /** The agent, named in refusals. */
  readonly agent: string;
  /** The object. */
  readonly o: Record<string, unknown>;

  constructor(agent: string, o: Record<string, unknown>) {
    this.agent = agent;
    this.o = o;
  }

  /** Parses `bytes` (at most {@linkcode MAX_EVENT_BYTES}) as one JSON object. */
  static parse(agent: string, bytes: Uint8Array): Payload {
    const refuse = (what: string): never => {
      throw new UsageError(`The ${agent} hook event ${what}`);
    };
    if (bytes.byteLength > MAX_EVENT_BYTES) refuse(`is larger than ${MAX_EVENT_BYTES} bytes`);
    let value: unknown;
    try {
      value = parseJson(bytes, { maxBytes: MAX_EVENT_BYTES, maxDepth: 1024, integersOnly: false });
    } catch (error) {
      refuse(`is not valid JSON: ${(error as Error).message}`);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      refuse("is not an object");
    }
    return new Payload(agent, value as Record<string, unknown>);
  }

  /** Throws the refusal `The <agent> hook event <what>`. */
  bad(what: string): never {
    throw new UsageError(`The ${this.agent} hook event ${what}`);
  }

  /** A nested object field as a payload, or null when absent. */
  object(key: string): Payload | null {
    const value = this.o[key];
    if (value === undefined || value === null) return null;
    if (typeof value !== "object" || Array.isArray(value)) {
      this.bad(`field ${quote(key)} is not an object`);
    }
    return new Payload(this.agent, value as Record<string, unknown>);
  }

  /** A string field, or null when absent or null. */
  string(key: string): string | null {
    const value = this.o[key];
    if (value === undefined || value === null) return null;
    if (typeof value !== "string") this.bad(`field ${quote(key)} is not a string`);
    return value;
  }

  /** The event name (required). */
  eventName(key: string): string {
    const value = this.string(key);
    if (value === null) this.bad(`has no ${key}`);
    if (!EVENT_RE.test(value)) this.bad(`name ${quote(value)} is not an event name`);
    return value;
  }

  /** An id field (`[A-Za-z0-9][A-Za-z0-9._-]{0,127}`), or null. */
  id(key: string): string | null {
    const value = this.string(key);
    if (value !== null && !ID_RE.test(value)) this.bad(`field ${quote(key)} is not a valid id`);
    return value;
  }

  /** An absolute path field, or null (`""` is null when `emptyIsNull`). */
  path(key: string, emptyIsNull = false): string | null {
    const value = this.string(key);
    if (value === null || (emptyIsNull && value === "")) return null;
    if (
      !value.startsWith("/") || value.length > 4096 || CONTROL_RE.test(value) ||
      !value.isWellFormed()
    ) {
      this.bad(`field ${quote(key)} is not an absolute path`);
    }
    return value;
  }

  /** A short printable string field, or null. */
  label(key: string, max: number): string | null {
    const value = this.string(key);
    if (value === null) return null;
    if (
      value.length === 0 || value.length > max || CONTROL_RE.test(value) || !value.isWellFormed()
    ) {
      this.bad(`field ${quote(key)} is not a short printable string`);
    }
    return value;
  }

  /** A prompt's text, or null (refused when not text or longer than 256 KiB characters). */
  prompt(key: string): string | null {
    const value = this.string(key);
    if (value === null) return null;
    if (!value.isWellFormed() || value.length > MAX_PROMPT_CHARS) {
      this.bad(`field ${quote(key)} is not a prompt's text`);
    }
    return value;
  }

  /** An array field of absolute paths (the first is returned), or null. */
  firstPath(key: string): string | null {
    const value = this.o[key];
    if (value === undefined || value === null) return null;
    if (!Array.isArray(value) || value.length > 1024) this.bad(`field ${quote(key)} is not a list`);
    if (value.length === 0) return null;
    return new Payload(this.agent, { [key]: value[0] }).path(key);
  }
}
