/**
 * The exact shape of the credential tenure issues (docs/decisions/0002), checked before any
 * canonicalization or signature work, as the Python verifier's `verify/receipt_shape.py` does:
 * no field tenure never writes, exactly one `{label, hash}` per expected manifest label, nothing
 * nested or sized beyond what tenure writes, integers within I-JSON's range.
 */
import { MalformedInput } from "./errors.js";
import { isObject } from "./dataintegrity.js";

type Json = Record<string, unknown>;

const CREDENTIAL_FIELDS = ["@context", "type", "issuer", "validFrom", "credentialSubject", "proof"];
const PROOF_FIELDS = [
  "@context", "type", "cryptosuite", "created", "verificationMethod", "proofPurpose", "proofValue",
];
const MANIFEST_FIELDS = ["claimGenerator", "alg", "assertions"];
const OBJECT_FIELDS = ["ledger", "error", "pseudonyms"];
const MAX_STRING = 4096;
const MAX_OBJECT_FIELDS = 32;
const HASH = /^[A-Za-z0-9+/]{43}=$/;

/** Throws MalformedInput unless `credential` has the shape tenure issues. */
export function checkCredentialShape(
  credential: Json,
  scalarFields: readonly string[],
  labels: ReadonlySet<string>,
): void {
  checkBounds(credential, "the credential", 8, 400);
  only(credential, CREDENTIAL_FIELDS, "credential");
  const proof = credential["proof"];
  if (isObject(proof)) only(proof, PROOF_FIELDS, "proof");
  const subject = credential["credentialSubject"];
  if (!isObject(subject)) throw new MalformedInput("credentialSubject must be an object");
  only(subject, ["type", "manifest", ...scalarFields, ...OBJECT_FIELDS], "credentialSubject");
  for (const name of scalarFields) scalar(subject[name], `credentialSubject.${name}`);
  for (const name of OBJECT_FIELDS) smallObject(subject[name], `credentialSubject.${name}`);
  manifest(subject["manifest"], labels);
}

/** Throws unless `value` nests at most `maxDepth` levels and holds at most `maxNodes` values. */
export function checkBounds(value: unknown, what: string, maxDepth: number, maxNodes: number): void {
  const stack: [unknown, number][] = [[value, 1]];
  let nodes = 0;
  while (stack.length > 0) {
    const [node, level] = stack.pop()!;
    if (++nodes > maxNodes) throw new MalformedInput(`${what} holds more than ${maxNodes} JSON values`);
    if (typeof node !== "object" || node === null) continue;
    if (level > maxDepth) throw new MalformedInput(`${what} nests deeper than ${maxDepth} levels`);
    for (const child of Object.values(node)) stack.push([child, level + 1]);
  }
}

/** Throws unless a number is an integer within ±(2^53 − 1) where tenure writes one. */
export function checkInt(value: unknown, what: string): void {
  if (typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw new MalformedInput(`${what} ${value} is outside I-JSON's exact integer range (2**53 - 1)`);
  }
}

function only(section: Json, allowed: readonly string[], where: string): void {
  const extra = Object.keys(section).filter((name) => !allowed.includes(name)).sort();
  if (extra.length > 0) {
    throw new MalformedInput(`${where} has fields tenure never issues: ${extra.slice(0, 5).join(", ")}`);
  }
}

function scalar(value: unknown, what: string): void {
  if (typeof value === "object" && value !== null) {
    throw new MalformedInput(`${what} must be a string, number, boolean or null`);
  }
  if (typeof value === "string" && value.length > MAX_STRING) {
    throw new MalformedInput(`${what} is longer than ${MAX_STRING} characters`);
  }
  checkInt(value, what);
}

function smallObject(value: unknown, what: string): void {
  if (value === undefined || value === null) return;
  if (!isObject(value) || Object.keys(value).length > MAX_OBJECT_FIELDS) {
    throw new MalformedInput(`${what} must be an object of at most ${MAX_OBJECT_FIELDS} fields`);
  }
  for (const [name, item] of Object.entries(value)) {
    for (const part of Array.isArray(item) ? item : [item]) scalar(part, `${what}.${name}`);
  }
}

function manifest(value: unknown, labels: ReadonlySet<string>): void {
  if (!isObject(value)) throw new MalformedInput("credentialSubject.manifest must be an object");
  only(value, MANIFEST_FIELDS, "credentialSubject.manifest");
  const assertions = value["assertions"];
  if (!Array.isArray(assertions) || assertions.length !== 3) {
    throw new MalformedInput("manifest.assertions must list exactly 3 {label, hash} objects");
  }
  const seen = new Set<unknown>();
  for (const item of assertions) {
    const keys = isObject(item) ? Object.keys(item).sort().join(",") : "";
    if (!isObject(item) || keys !== "hash,label") {
      throw new MalformedInput("each manifest assertion must be exactly {label, hash}");
    }
    const label = item["label"];
    if (typeof label !== "string" || !labels.has(label) || seen.has(label)) {
      throw new MalformedInput(`manifest label ${JSON.stringify(String(label).slice(0, 64))} is unknown or repeated`);
    }
    if (typeof item["hash"] !== "string" || !HASH.test(item["hash"])) {
      throw new MalformedInput(`manifest hash of ${label} is not a base64 SHA-256`);
    }
    seen.add(label);
  }
}
