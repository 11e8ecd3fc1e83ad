/**
 * W3C vc-di-eddsa v1.0 §3.3, eddsa-jcs-2022 — verification only.
 *
 * The proof configuration is the proof without `proofValue` (§3.3.5), carrying the document's
 * `@context`, which must start with the proof's (§3.3.2 step 4). The signed bytes are
 * SHA-256(JCS(proof config)) ‖ SHA-256(JCS(document)) (§3.3.4); `proofValue` is multibase
 * base58btc of the 64-byte Ed25519 signature (§3.3.6). eddsa-rdfc-2022 (RDF canonicalization,
 * opt-in on the server) is not checked here: such a proof fails with a message saying so.
 */
import { createHash, verify as edVerify } from "node:crypto";
import { canonicalize } from "./jcs.js";
import { MalformedInput } from "./errors.js";
import { multibaseDecode, resolveDidKey } from "./multikey.js";

export const JCS_SUITE = "eddsa-jcs-2022";
const PROOF_TYPE = "DataIntegrityProof";
const PROOF_PURPOSE = "assertionMethod";
const MAX_PROOF_VALUE = 100;
const DATETIME_STAMP =
  /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-](\d\d):(\d\d))$/;

type Json = Record<string, unknown>;

/** Whether a secured document's proof verifies; `error` says why not. Never throws. */
export interface ProofResult {
  verified: boolean;
  cryptosuite: string | null;
  verificationMethod: string | null;
  error: string | null;
}

export function verifyProof(secured: Json): ProofResult {
  const proof = isObject(secured["proof"]) ? secured["proof"] : {};
  const suite = typeof proof["cryptosuite"] === "string" ? proof["cryptosuite"] : null;
  const method = typeof proof["verificationMethod"] === "string" ? proof["verificationMethod"] : null;
  try {
    checkProof(secured);
    return { verified: true, cryptosuite: suite, verificationMethod: method, error: null };
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { verified: false, cryptosuite: suite, verificationMethod: method, error: message };
  }
}

/** Throws unless the eddsa-jcs-2022 proof of `secured` verifies under its did:key. */
export function checkProof(secured: Json): void {
  const proof = secured["proof"];
  if (Array.isArray(proof)) {
    throw new MalformedInput("proof sets and chains are not supported: expected one proof");
  }
  if (!isObject(proof)) throw new MalformedInput("the document has no proof object");
  const signature = validate(proof);
  const unsecured: Json = { ...secured };
  delete unsecured["proof"];
  const options: Json = { ...proof };
  delete options["proofValue"];
  if ("@context" in options) {
    const own = asList(options["@context"]);
    const documents = asList(unsecured["@context"]);
    if (JSON.stringify(documents.slice(0, own.length)) !== JSON.stringify(own)) {
      throw new SignatureError("document @context does not start with the proof's @context");
    }
    unsecured["@context"] = options["@context"];
  }
  const data = Buffer.concat([sha256(canonicalize(options)), sha256(canonicalize(unsecured))]);
  const key = resolveDidKey(options["verificationMethod"]);
  if (!edVerify(null, data, key, signature)) {
    throw new SignatureError(`${JCS_SUITE} proof signature does not verify`);
  }
}

/** A signature that does not verify (the Python verifier's SignatureError). */
export class SignatureError extends Error {
  override name = "SignatureError";
}

function validate(proof: Json): Buffer {
  if (proof["type"] !== PROOF_TYPE) throw new MalformedInput(`proof type must be '${PROOF_TYPE}'`);
  if (proof["cryptosuite"] !== JCS_SUITE) {
    throw new MalformedInput(`proof cryptosuite must be '${JCS_SUITE}' (this client checks no other)`);
  }
  if ("created" in proof) checkDateTimeStamp(proof["created"]);
  if (proof["proofPurpose"] !== PROOF_PURPOSE) {
    throw new MalformedInput(`proofPurpose must be '${PROOF_PURPOSE}'`);
  }
  if (typeof proof["verificationMethod"] !== "string") {
    throw new MalformedInput("proof verificationMethod must be a string");
  }
  const value = proof["proofValue"];
  if (typeof value !== "string" || value.length > MAX_PROOF_VALUE) {
    throw new MalformedInput("proofValue must be a multibase base58btc string");
  }
  const signature = multibaseDecode(value);
  if (signature.length !== 64) {
    throw new MalformedInput(`proofValue must hold 64 signature bytes, got ${signature.length}`);
  }
  return signature;
}

/** Throws unless `value` is an XML Schema dateTimeStamp (a date, a time and a zone). */
export function checkDateTimeStamp(value: unknown): void {
  const match = typeof value === "string" ? DATETIME_STAMP.exec(value) : null;
  const bad = () => new MalformedInput(`proof created ${JSON.stringify(value)} is not a dateTimeStamp`);
  if (match === null) throw bad();
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as number[];
  const date = new Date(Date.UTC(year!, month! - 1, day!, hour, minute, second));
  if (date.getUTCMonth() !== month! - 1 || date.getUTCDate() !== day! || hour! > 23) throw bad();
  if (minute! > 59 || second! > 59) throw bad();
  if (match[9] !== undefined && (Number(match[9]) > 14 || Number(match[10]) > 59)) throw bad();
}

export function sha256(data: Buffer | string): Buffer {
  return createHash("sha256").update(data).digest();
}

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}
