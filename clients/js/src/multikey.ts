/**
 * Multibase base58btc, Ed25519 Multikey and did:key (W3C CCG did:key v0.9).
 *
 * `publicKeyMultibase` is `z` + base58btc(0xed 0x01 ‖ 32-byte key) (Controlled Identifiers
 * v1.0 §2.2.2); the one verification method of `did:key:X` is `did:key:X#X`.
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import { MalformedInput } from "./errors.js";

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const ED25519_PUB = [0xed, 0x01];
const DID_KEY = "did:key:";

/** base58btc without a multibase prefix; one leading `1` per leading zero byte. */
export function b58decode(text: string): Buffer {
  let number = 0n;
  for (const char of text) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) throw new MalformedInput(`not a base58btc character: ${JSON.stringify(char)}`);
    number = number * 58n + BigInt(digit);
  }
  const zeros = text.length - text.replace(/^1+/, "").length;
  const hex = number === 0n ? "" : number.toString(16);
  return Buffer.concat([Buffer.alloc(zeros), Buffer.from(hex.length % 2 ? `0${hex}` : hex, "hex")]);
}

/** Multibase base58btc: refuses any prefix but `z`. */
export function multibaseDecode(text: unknown): Buffer {
  if (typeof text !== "string" || !text.startsWith("z")) {
    throw new MalformedInput("expected a multibase base58btc value starting with 'z'");
  }
  return b58decode(text.slice(1));
}

/** The raw 32-byte Ed25519 key of a Multikey `publicKeyMultibase`. */
export function rawKeyFromMultibase(value: string): Buffer {
  const decoded = multibaseDecode(value);
  if (decoded[0] !== ED25519_PUB[0] || decoded[1] !== ED25519_PUB[1]) {
    throw new MalformedInput("multikey is not an Ed25519 public key (multicodec 0xed01)");
  }
  const raw = decoded.subarray(2);
  if (raw.length !== 32) {
    throw new MalformedInput(`Ed25519 public key must be 32 bytes, got ${raw.length}`);
  }
  return raw;
}

/** A node:crypto key from 32 raw Ed25519 bytes. */
export function ed25519Key(raw: Buffer): KeyObject {
  const jwk = { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") };
  try {
    return createPublicKey({ key: jwk, format: "jwk" });
  } catch (error) {
    throw new MalformedInput(`not an Ed25519 public key: ${String(error)}`);
  }
}

/** The multikey of a did:key DID (no path, query, fragment or parameters). */
export function multikeyOf(did: unknown): string {
  if (typeof did !== "string" || !did.startsWith(`${DID_KEY}z`)) {
    throw new MalformedInput(`not a did:key DID: ${JSON.stringify(did)}`);
  }
  const multikey = did.slice(DID_KEY.length);
  if (!/^[A-Za-z0-9]+$/.test(multikey)) {
    throw new MalformedInput(`not a did:key DID: ${JSON.stringify(did)}`);
  }
  return multikey;
}

/** The raw Ed25519 key a did:key DID encodes. */
export function rawKeyFromDid(did: string): Buffer {
  return rawKeyFromMultibase(multikeyOf(did));
}

/** Resolve `did:key:X#X` to its key; any other fragment names no key (did:key v0.9 §3.1.2). */
export function resolveDidKey(method: unknown): KeyObject {
  if (typeof method !== "string") throw new MalformedInput("verificationMethod must be a string");
  const hash = method.indexOf("#");
  const did = hash < 0 ? method : method.slice(0, hash);
  const multikey = multikeyOf(did);
  if (hash < 0 || method.slice(hash + 1) !== multikey) {
    throw new MalformedInput(`verificationMethod ${JSON.stringify(method)} is not did:key:X#X`);
  }
  return ed25519Key(rawKeyFromMultibase(multikey));
}
