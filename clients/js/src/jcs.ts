/**
 * RFC 8785 JSON Canonicalization Scheme.
 *
 * §3.2.2.2 strings and §3.2.2.3 numbers are ECMAScript's own JSON.stringify; §3.2.3 sorts keys
 * by UTF-16 code units, which is Array.prototype.sort's default order. Refused, as the Python
 * verifier refuses them (I-JSON, RFC 7493): lone surrogates, non-finite numbers and integers
 * beyond ±(2^53 − 1).
 */
import { MalformedInput } from "./errors.js";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The canonical UTF-8 bytes of a JSON value. */
export function canonicalize(value: unknown): Buffer {
  return Buffer.from(serialize(value, 0), "utf8");
}

function serialize(value: unknown, depth: number): string {
  if (depth > 1000) throw new MalformedInput("JSON nests too deep to canonicalize");
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") return number(value);
  if (typeof value === "string") return string(value);
  if (Array.isArray(value)) return `[${value.map((item) => serialize(item, depth + 1)).join(",")}]`;
  if (typeof value === "object") {
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object).sort();
    const members = keys.map((key) => `${string(key)}:${serialize(object[key], depth + 1)}`);
    return `{${members.join(",")}}`;
  }
  throw new MalformedInput(`not a JSON value: ${typeof value}`);
}

function number(value: number): string {
  if (!Number.isFinite(value)) throw new MalformedInput("NaN and Infinity are not JSON");
  if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw new MalformedInput(`the integer ${value} is outside I-JSON's range (2^53 - 1)`);
  }
  return JSON.stringify(value);
}

function string(value: string): string {
  if (LONE_SURROGATE.test(value)) throw new MalformedInput("a string holds a lone surrogate");
  return JSON.stringify(value);
}
