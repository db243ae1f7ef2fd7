/**
 * The float text serde_json writes for an `f64` (its zmij/ryu writer), which
 * lean-ctx's canonical body hashes: the shortest digits that read back as the
 * same double, zero as `0.0`, whole numbers with `.0`, plain notation when the
 * decimal exponent of the first digit is from −5 to 15, otherwise scientific
 * with a signed exponent and no padding (`1e-6`, `2.5e-7`, `1.25e+16`).
 *
 * The digits come from ECMAScript `Number.prototype.toString`, which is the
 * shortest round-trip form; only the layout differs from JavaScript's.
 *
 * @example
 * ```ts
 * import { formatF64 } from "./serde_f64.ts";
 * const cases: [number, string][] = [
 *   [0, "0.0"], [1, "1.0"], [0.026, "0.026"], [1e-6, "1e-6"], [0.00001, "0.00001"],
 *   [1.25e16, "1.25e+16"], [1e15, "1000000000000000.0"], [0.1 + 0.2, "0.30000000000000004"],
 * ];
 * for (const [value, text] of cases) {
 *   if (formatF64(value) !== text) throw new Error(`${value} -> ${formatF64(value)}`);
 * }
 * ```
 * @module
 */

/** The shortest round-trip decimal digits of `|x|` (no trailing zeros) and the exponent of the first. */
export function shortestDigits(x: number): { digits: string; exponent: number } {
  const text = String(Math.abs(x));
  const e = text.indexOf("e");
  if (e >= 0) {
    return { digits: text.slice(0, e).replace(".", ""), exponent: Number(text.slice(e + 1)) };
  }
  const [whole = "", fraction = ""] = text.split(".");
  if (whole !== "0") {
    return { digits: (whole + fraction).replace(/0+$/, ""), exponent: whole.length - 1 };
  }
  const zeros = fraction.length - fraction.replace(/^0+/, "").length;
  return { digits: fraction.slice(zeros).replace(/0+$/, ""), exponent: -(zeros + 1) };
}

/**
 * Formats a finite double exactly as serde_json does (`-0.0` for negative
 * zero). Throws a `RangeError` for NaN and infinities, which serde_json would
 * write as `null` and no lean-ctx reader accepts back as a number.
 */
export function formatF64(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError(`${x} has no JSON number form`);
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const { digits, exponent } = shortestDigits(x);
  const n = digits.length;
  if (exponent < -5 || exponent > 15) {
    const mantissa = n === 1 ? digits : `${digits[0]}.${digits.slice(1)}`;
    return `${sign}${mantissa}e${exponent < 0 ? "-" : "+"}${Math.abs(exponent)}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  if (n <= exponent + 1) return `${sign}${digits}${"0".repeat(exponent + 1 - n)}.0`;
  return `${sign}${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`;
}
