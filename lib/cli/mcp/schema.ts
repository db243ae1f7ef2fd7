/**
 * The small subset of JSON Schema the MCP server declares for its tools'
 * inputs, and a strict validator for it: the schemas a client reads are the
 * rules its arguments are checked against (layer: cli).
 *
 * Supported: `type` (`object`, `string`, `integer`, `boolean`, `array`),
 * `properties`, `required`, `additionalProperties: false`, `minLength`,
 * `maxLength`, `pattern`, `minimum`, `maximum`, `items`, `maxItems`, `const`.
 *
 * @example
 * ```ts
 * import { checkArguments, type Schema } from "./schema.ts";
 * const schema: Schema = {
 *   type: "object", additionalProperties: false, required: ["id"],
 *   properties: { id: { type: "string", pattern: "^[0-9a-f]{4,64}$" } },
 * };
 * if (checkArguments(schema, { id: "3f2a" }) !== null) throw new Error("valid");
 * if (checkArguments(schema, { id: "3f2a", x: 1 }) === null) throw new Error("unknown key");
 * ```
 * @module
 */

/** A JSON Schema in the supported subset. */
export interface Schema {
  /** The value's type. */
  type?: "object" | "string" | "integer" | "boolean" | "array" | "number" | "null";
  /** Human description. */
  description?: string;
  /** Object properties. */
  properties?: Record<string, Schema>;
  /** Required object keys. */
  required?: string[];
  /** Whether unknown keys are allowed (only `false` is enforced). */
  additionalProperties?: boolean;
  /** String length bounds (UTF-16 code units). */
  minLength?: number;
  /** String length bounds (UTF-16 code units). */
  maxLength?: number;
  /** A regular expression the whole string must match (anchor it). */
  pattern?: string;
  /** Integer bounds. */
  minimum?: number;
  /** Integer bounds. */
  maximum?: number;
  /** Array items. */
  items?: Schema;
  /** Most array items. */
  maxItems?: number;
  /** The only value allowed. */
  const?: unknown;
  /** Alternatives (declared to clients; values are checked against the first that matches). */
  anyOf?: Schema[];
}

const patterns = new Map<string, RegExp>();

/**
 * Checks `value` against `schema`; returns null when it conforms, else a
 * sentence naming the first problem (`where` names the value).
 */
export function checkArguments(schema: Schema, value: unknown, where = "arguments"): string | null {
  if (schema.anyOf !== undefined) {
    const problems = schema.anyOf.map((option) => checkArguments(option, value, where));
    return problems.includes(null) ? null : problems[0] ?? `${where} matches no alternative`;
  }
  if (schema.const !== undefined && value !== schema.const) {
    return `${where} must be ${JSON.stringify(schema.const)}`;
  }
  switch (schema.type) {
    case undefined:
      return null;
    case "null":
      return value === null ? null : `${where} must be null`;
    case "boolean":
      return typeof value === "boolean" ? null : `${where} must be a boolean`;
    case "number":
      return typeof value === "number" && Number.isFinite(value)
        ? null
        : `${where} must be a number`;
    case "integer": {
      if (!Number.isSafeInteger(value)) return `${where} must be an integer`;
      const n = value as number;
      if (schema.minimum !== undefined && n < schema.minimum) {
        return `${where} must be at least ${schema.minimum}`;
      }
      if (schema.maximum !== undefined && n > schema.maximum) {
        return `${where} must be at most ${schema.maximum}`;
      }
      return null;
    }
    case "string": {
      if (typeof value !== "string") return `${where} must be a string`;
      if (!value.isWellFormed()) return `${where} must be valid Unicode`;
      if (schema.minLength !== undefined && value.length < schema.minLength) {
        return `${where} must have at least ${schema.minLength} characters`;
      }
      if (schema.maxLength !== undefined && value.length > schema.maxLength) {
        return `${where} must have at most ${schema.maxLength} characters`;
      }
      if (schema.pattern !== undefined) {
        let re = patterns.get(schema.pattern);
        if (re === undefined) patterns.set(schema.pattern, re = new RegExp(schema.pattern, "u"));
        if (!re.test(value)) return `${where} has the wrong form`;
      }
      return null;
    }
    case "array": {
      if (!Array.isArray(value)) return `${where} must be an array`;
      if (schema.maxItems !== undefined && value.length > schema.maxItems) {
        return `${where} must have at most ${schema.maxItems} items`;
      }
      if (schema.items !== undefined) {
        for (let i = 0; i < value.length; i++) {
          const problem = checkArguments(schema.items, value[i], `${where}[${i}]`);
          if (problem !== null) return problem;
        }
      }
      return null;
    }
    case "object": {
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        return `${where} must be an object`;
      }
      const o = value as Record<string, unknown>;
      const properties = schema.properties ?? {};
      if (schema.additionalProperties === false) {
        for (const key of Object.keys(o)) {
          if (!Object.hasOwn(properties, key)) {
            return `${where} has unknown key ${JSON.stringify(key)}`;
          }
        }
      }
      for (const key of schema.required ?? []) {
        if (!Object.hasOwn(o, key)) return `${where} lacks ${JSON.stringify(key)}`;
      }
      for (const [key, inner] of Object.entries(properties)) {
        if (!Object.hasOwn(o, key)) continue;
        const problem = checkArguments(inner, o[key], `${where}.${key}`);
        if (problem !== null) return problem;
      }
      return null;
    }
  }
}
