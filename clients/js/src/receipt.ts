/**
 * Verifying a receipt — a saved answer `{data, _provenance}` or a bare credential — against
 * pinned keys, with the checks and their order of the Python verifier (`verify/receipt.py`):
 *
 * - `format`: the receipt format of docs/decisions/0002, checked before anything is hashed;
 * - `proof`: the eddsa-jcs-2022 Data Integrity proof verifies;
 * - `issuer`: the proof's key is the issuer's did:key, trusted, and was valid when it signed;
 * - `manifest`: exactly the declared assertions, and every hash recomputable from what was
 *   given (data, the ledger state, the request) matches;
 * - `subject`: what the credential states agrees with `data`.
 */
import { isDeepStrictEqual } from "node:util";
import { writtenAsFraction } from "./ijson.js";
import { canonicalize } from "./jcs.js";
import { MalformedInput } from "./errors.js";
import { isObject, sha256, verifyProof } from "./dataintegrity.js";
import { checkCredentialShape, checkInt } from "./shape.js";
import { issuedOutside, type Trusted } from "./trust.js";

type Json = Record<string, unknown>;

export const CONTEXTS = ["https://www.w3.org/ns/credentials/v2", "https://w3id.org/tenure/v1"];
const REQUEST = "tenure.request";
const DATA = "tenure.data";
const ENTRY = "tenure.ledger.entry";
const STATE = "tenure.ledger.state";
const LABELS: ReadonlySet<string> = new Set([REQUEST, DATA, ENTRY, STATE]);
export const SUBJECT_FIELDS = [
  "op", "outcome", "status", "granted", "resource", "holder", "fencingToken", "expiresAt",
  "absoluteExpiresAt", "leaseId", "capacity", "scope", "replayed", "entropyBits",
];
const INTEGER_FIELDS = ["fencingToken", "leaseId", "capacity", "entropyBits", "retryAfterSeconds"];
const LEDGER_INTEGERS = ["logIndex", "treeSize"];
const SECRET_DATA_FIELDS = ["ownerToken", "namespace"];

export interface Check {
  check: string;
  ok: boolean;
  detail: string;
}

/** Every check of a receipt; `ok` when there are some and all passed. */
export interface Report {
  ok: boolean;
  checks: Check[];
}

/** A receipt check failed; `check` names it. */
export class ReceiptError extends Error {
  override name = "ReceiptError";
  constructor(
    readonly check: string,
    detail: string,
  ) {
    super(`${check}: ${detail}`);
  }
}

/** `data` as the manifest hashes it: without the secrets it hands the caller. */
export function withoutSecrets(data: Json): Json {
  return Object.fromEntries(Object.entries(data).filter(([k]) => !SECRET_DATA_FIELDS.includes(k)));
}

/** Every check of `document`. `request`: the canonical request, to bind the answer to it. */
export function verifyReceipt(document: unknown, trusted: Trusted | null, request?: Buffer): Report {
  const checks: Check[] = [];
  const add = (check: string, ok: boolean, detail: string) => checks.push({ check, ok, detail });
  const report = () => ({ ok: checks.length > 0 && checks.every((c) => c.ok), checks });
  let data: Json | null;
  let credential: Json;
  try {
    [data, credential] = split(document);
    checkCredentialShape(credential, SUBJECT_FIELDS, LABELS);
    integers(data, "data");
    integers(credential["credentialSubject"], "credentialSubject");
  } catch (error) {
    add("format", false, (error as Error).message);
    return report();
  }
  add("format", true, data ? "response with _provenance" : "bare credential");
  proofAndIssuer(add, credential, trusted);
  const subject = credential["credentialSubject"] as Json;
  const hashes = assertions(add, subject["manifest"]);
  if (hashes !== null) {
    if (data !== null) {
      compare(add, DATA, hashes, () => canonicalize(withoutSecrets(data!)));
      if (hashes.has(STATE)) compare(add, STATE, hashes, () => stateBytes(data!));
    }
    if (request !== undefined) compare(add, REQUEST, hashes, () => request);
  }
  if (data !== null) subjectAgrees(add, subject, data);
  return report();
}

/** The raising variant: a ReceiptError naming the first failed check. */
export function checkReceipt(document: unknown, trusted: Trusted | null, request?: Buffer): void {
  for (const { check, ok, detail } of verifyReceipt(document, trusted, request).checks) {
    if (!ok) throw new ReceiptError(check, detail);
  }
}

type Add = (check: string, ok: boolean, detail: string) => void;

function split(document: unknown): [Json | null, Json] {
  if (!isObject(document)) throw new MalformedInput("a receipt is a JSON object");
  if ("_provenance" in document) {
    const data = document["data"];
    const credential = document["_provenance"];
    if (!isObject(data) || !isObject(credential)) {
      throw new MalformedInput("data and _provenance must be objects");
    }
    return [data, credential];
  }
  if ("proof" in document && "credentialSubject" in document) return [null, document];
  throw new MalformedInput("neither a response with _provenance nor a credential");
}

function integers(section: unknown, where: string): void {
  if (!isObject(section)) return;
  const ledger = isObject(section["ledger"]) ? section["ledger"] : {};
  for (const [part, names, at] of [
    [section, INTEGER_FIELDS, where],
    [ledger, LEDGER_INTEGERS, `${where}.ledger`],
  ] as const) {
    for (const name of names) {
      const value = part[name];
      if (typeof value === "number" && (!Number.isInteger(value) || writtenAsFraction(part, name))) {
        throw new MalformedInput(`${at}.${name} is the number ${value}; tenure writes an integer`);
      }
      checkInt(value, `${at}.${name}`);
    }
  }
}

function proofAndIssuer(add: Add, credential: Json, trusted: Trusted | null): void {
  if (!isDeepStrictEqual(credential["@context"], CONTEXTS)) {
    add("format", false, `@context must be ${JSON.stringify(CONTEXTS)}`);
  }
  const result = verifyProof(credential);
  add("proof", result.verified, result.error ?? `${result.cryptosuite} signature verifies`);
  const issuer = credential["issuer"];
  const method = result.verificationMethod ?? "";
  if (method.split("#")[0] !== issuer || typeof issuer !== "string") {
    add("issuer", false, "the proof's key is not the issuer's did:key");
  } else if (trusted === null) {
    add("issuer", false, `${issuer} is not trusted: no trusted key was given`);
  } else if (!trusted.has(issuer)) {
    add("issuer", false, `${issuer} is not trusted`);
  } else {
    const outside = issuedOutside(trusted, issuer, credential["validFrom"]);
    if (outside !== null) add("issuer", false, `${issuer} is trusted, but the receipt was ${outside}`);
    else add("issuer", true, `${issuer} is trusted`);
  }
}

function assertions(add: Add, manifest: unknown): Map<string, string> | null {
  if (!isObject(manifest) || manifest["alg"] !== "sha256") {
    add("manifest", false, "manifest missing or its alg is not sha256");
    return null;
  }
  const items = manifest["assertions"] as Json[];
  const hashes = new Map(items.map((item) => [String(item["label"]), String(item["hash"])]));
  const labels = [...hashes.keys()];
  const ledger = labels.filter((label) => label === ENTRY || label === STATE);
  const missing = [REQUEST, DATA].filter((label) => !hashes.has(label));
  if (missing.length > 0 || ledger.length !== 1) {
    add("manifest", false, `missing ${JSON.stringify(missing)}, ledger assertions ${JSON.stringify(ledger)}`);
    return null;
  }
  add("manifest", true, `declares ${labels.sort().join(", ")}`);
  return hashes;
}

function compare(add: Add, label: string, hashes: Map<string, string>, content: () => Buffer): void {
  let computed: string;
  try {
    computed = sha256(content()).toString("base64");
  } catch (error) {
    add(`manifest:${label}`, false, `cannot be canonicalized: ${(error as Error).message}`);
    return;
  }
  const ok = computed === hashes.get(label);
  add(`manifest:${label}`, ok, ok ? "hash matches" : `declared ${hashes.get(label)}, computed ${computed}`);
}

function stateBytes(data: Json): Buffer {
  const ledger = isObject(data["ledger"]) ? data["ledger"] : {};
  return canonicalize({ treeSize: ledger["treeSize"] ?? null, rootHash: ledger["rootHash"] ?? null });
}

function subjectAgrees(add: Add, subject: Json, data: Json): void {
  const names = [...SUBJECT_FIELDS, "ledger"];
  const stated = [...names, "error"].filter((name) => name in subject);
  const differ = stated.filter((name) => !isDeepStrictEqual(subject[name], data[name] ?? null));
  const absent = names.filter((name) => name in data && !(name in subject));
  const ok = differ.length === 0 && absent.length === 0;
  add("subject", ok, ok ? "states what data says" : `differs on ${differ}, omits ${absent}`);
}
