/**
 * The strict reader of signed documents (I-JSON, RFC 7493; docs/decisions/0023): a repeated
 * key, a lone surrogate, an integer beyond ±(2^53 − 1), a number beyond a double are refused,
 * naming which — so no planted first `"fencingToken"` is ever believed. JSON.parse keeps the
 * last of two keys and reads `1.0` as `1`; here a number written with a fraction or an exponent
 * is remembered (`writtenAsFraction`), so a field tenure writes as an integer can refuse it.
 */
import { MalformedInput } from "./errors.js";

const TOKEN = /\s*(?:("(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")|(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)|(true|false|null)|([{}[\],:]))/y;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_DEPTH = 64;
const fractions = new WeakMap<object, Set<string>>();

/** Whether `section[name]` was written with a fraction or an exponent (`1.0`, `1e0`). */
export function writtenAsFraction(section: object, name: string): boolean {
  return fractions.get(section)?.has(name) ?? false;
}

/** Parse `text` as I-JSON; MalformedInput naming what is wrong. */
export function parseStrict(text: string, what = "the document"): unknown {
  const reader = { text, at: 0, what };
  const value = parseValue(reader, 0);
  if (!/^\s*$/.test(text.slice(reader.at))) fail(reader, "has text after its JSON value");
  return value;
}

interface Reader {
  text: string;
  at: number;
  what: string;
}

type Token = { string?: string; number?: string; literal?: string; punct?: string };

function next(reader: Reader): Token {
  TOKEN.lastIndex = reader.at;
  const match = TOKEN.exec(reader.text);
  if (match === null) fail(reader, `is not JSON at offset ${reader.at}`);
  reader.at = TOKEN.lastIndex;
  const [, string, number, literal, punct] = match;
  return { string, number, literal, punct };
}

function parseValue(reader: Reader, depth: number, token = next(reader)): unknown {
  if (depth > MAX_DEPTH) fail(reader, "nests too deep for a tenure document");
  if (token.string !== undefined) return stringOf(reader, token.string);
  if (token.number !== undefined) return numberOf(reader, token.number);
  if (token.literal !== undefined) return JSON.parse(token.literal);
  if (token.punct === "[") return parseArray(reader, depth);
  if (token.punct === "{") return parseObject(reader, depth);
  return fail(reader, `is not JSON at offset ${reader.at}`);
}

function parseArray(reader: Reader, depth: number): unknown[] {
  const items: unknown[] = [];
  let token = next(reader);
  if (token.punct === "]") return items;
  for (;;) {
    items.push(parseValue(reader, depth + 1, token));
    const after = next(reader);
    if (after.punct === "]") return items;
    if (after.punct !== ",") fail(reader, `expects , or ] at offset ${reader.at}`);
    token = next(reader);
  }
}

function parseObject(reader: Reader, depth: number): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  const written = new Set<string>();
  let token = next(reader);
  if (token.punct === "}") return object;
  for (;;) {
    if (token.string === undefined) fail(reader, `expects a key at offset ${reader.at}`);
    const key = stringOf(reader, token.string);
    if (Object.prototype.hasOwnProperty.call(object, key)) fail(reader, `repeats the key ${JSON.stringify(key)}`);
    if (next(reader).punct !== ":") fail(reader, `expects : at offset ${reader.at}`);
    const valueToken = next(reader);
    Object.defineProperty(object, key, { value: parseValue(reader, depth + 1, valueToken), enumerable: true, writable: true, configurable: true });
    if (valueToken.number !== undefined && /[.eE]/.test(valueToken.number)) written.add(key);
    const after = next(reader);
    if (after.punct === "}") break;
    if (after.punct !== ",") fail(reader, `expects , or } at offset ${reader.at}`);
    token = next(reader);
  }
  if (written.size > 0) fractions.set(object, written);
  return object;
}

function stringOf(reader: Reader, literal: string): string {
  const value = JSON.parse(literal) as string;
  if (LONE_SURROGATE.test(value)) fail(reader, "holds a lone surrogate (RFC 7493 §2.1)");
  return value;
}

function numberOf(reader: Reader, literal: string): number {
  const value = Number(literal);
  if (!Number.isFinite(value)) fail(reader, `holds ${literal.slice(0, 32)}, beyond a double (RFC 7493 §2.2)`);
  if (!/[.eE]/.test(literal) && !Number.isSafeInteger(value)) {
    fail(reader, `holds the integer ${literal.slice(0, 32)}, beyond ±(2**53 - 1) (RFC 7493 §2.2)`);
  }
  return value;
}

function fail(reader: Reader, message: string): never {
  throw new MalformedInput(`${reader.what} ${message}`);
}
