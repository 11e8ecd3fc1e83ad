/**
 * One call to the server: send it, retry it safely, and interpret the answer — its receipt
 * checked against the pinned keys and bound to this request before anything is believed.
 *
 * A mutating lease call carries a fresh `requestId` of 192 random bits that every retry
 * repeats, so the server answers a retry with what it did the first time. Retried: no answer
 * (network error, timeout), an unknown outcome (500/503, `status: unknown`) and an answer for
 * another request; backoff is exponential with full jitter.
 */
import { randomBytes } from "node:crypto";
import { Answer } from "./answers.js";
import {
  Conflict, InvalidRequest, LeaseHeld, LeaseLost, MismatchedAnswer, RateLimited, ReceiptInvalid,
  TenureError, Unavailable,
} from "./errors.js";
import { parseStrict } from "./ijson.js";
import { canonicalize } from "./jcs.js";
import { ReceiptError, checkReceipt } from "./receipt.js";
import type { Trusted } from "./trust.js";

type Json = Record<string, unknown>;

const SECRET_REQUEST_FIELDS = ["ownerToken", "owner_token", "namespace", "fingerprint"];

export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  capMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseMs: 100, capMs: 3000 };

/** What to send, and what a 200/201/409 answer's data must repeat. */
export interface Call {
  method: "GET" | "POST";
  path: string;
  body: Json | null;
  timeoutMs: number;
  signed: boolean;
  expect: [string, string][];
}

/** A server reply, before it is believed. */
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
}

/** 192 random bits: a retry repeats it; nobody else can guess it. */
export function newRequestId(): string {
  return `req_${randomBytes(24).toString("base64url")}`;
}

/** What the receipt's `tenure.request` assertion hashes (docs/decisions/0002), or undefined
 * when the client cannot know it (a `result` the server redacts, an unsafe integer). */
export function canonicalRequest(call: Call): Buffer | undefined {
  const body = call.body === null ? null : Object.fromEntries(
    Object.entries(call.body).filter(([k]) => !SECRET_REQUEST_FIELDS.includes(k)),
  );
  if (body !== null && "result" in body) return undefined;
  try {
    return canonicalize({ method: call.method, path: call.path, body });
  } catch {
    return undefined;
  }
}

/** The delay before retry `n` (0-based): uniform in [0, min(cap, base·2ⁿ)). */
export function backoff(policy: RetryPolicy, retry: number, unit: number): number {
  return unit * Math.min(policy.capMs, policy.baseMs * 2 ** retry);
}

/** The answer a reply means, or the error it means; the receipt is checked first. */
export function interpret(call: Call, reply: Reply, trusted: Trusted | null): Answer {
  let document: unknown = null;
  try {
    document = parseStrict(reply.text, "the answer");
  } catch {
    document = null;
  }
  const data = isJson(document) ? document["data"] : undefined;
  if (!call.signed) return raw(call, reply, document);
  if (!isJson(document) || !isJson(data)) {
    if (reply.status >= 500) throw new Unavailable(`HTTP ${reply.status} without an answer`);
    throw new InvalidRequest(`HTTP ${reply.status}: not a tenure answer`, null, reply.status);
  }
  const bound = [200, 201, 409].includes(reply.status);
  if (trusted !== null) {
    try {
      checkReceipt(document, trusted, bound ? canonicalRequest(call) : undefined);
    } catch (error) {
      if (!(error instanceof ReceiptError)) throw error;
      throw new ReceiptInvalid(`the answer's receipt does not verify: ${error.message}`, error.check);
    }
  }
  const provenance = isJson(document["_provenance"]) ? document["_provenance"] : null;
  const answer = new Answer(data, provenance, reply.status);
  if (bound) sameRequest(call, answer);
  raiseFor(answer, reply);
  return answer;
}

function raw(call: Call, reply: Reply, document: unknown): Answer {
  if (reply.status >= 500) throw new Unavailable(`HTTP ${reply.status}`);
  if (reply.status >= 400 || !isJson(document)) {
    throw new InvalidRequest(`HTTP ${reply.status} on ${call.path}`, null, reply.status);
  }
  return new Answer(document, null, reply.status);
}

function sameRequest(call: Call, answer: Answer): void {
  for (const [name, asked] of call.expect) {
    const said = answer.data[name];
    if (said !== asked) {
      throw new MismatchedAnswer(`an answer for ${name} ${JSON.stringify(said)} to a request for ${JSON.stringify(asked)}: not believed`, answer);
    }
  }
}

/** Throw the error an answer means (docs/api.md, "Errors" and the refusals). */
function raiseFor(answer: Answer, reply: Reply): void {
  const data = answer.data;
  const status = reply.status;
  if (status >= 500 || data["status"] === "unknown") {
    throw new Unavailable(message(data, `HTTP ${status}: outcome unknown`), answer);
  }
  if (status === 429) {
    const after = Number(reply.headers.get("retry-after") ?? 1);
    throw new RateLimited(message(data, "rate limited"), answer, after);
  }
  if (status === 409) {
    const outcome = String(data["outcome"]);
    const reason = `${outcome} on ${JSON.stringify(data["resource"])}`;
    if (outcome === "HELD") throw new LeaseHeld(`${reason}: held by ${JSON.stringify(data["heldBy"])}`, answer);
    if (outcome === "LOST" || outcome === "NOT_ACTIVE") {
      throw new LeaseLost(`${reason}: the lease is no longer yours`, answer);
    }
    throw new Conflict(`${reason}: ${JSON.stringify(data["witnesses"])}`, answer);
  }
  if (status >= 400) throw new InvalidRequest(message(data, `HTTP ${status}`), answer, status);
}

function message(data: Json, fallback: string): string {
  const error = data["error"];
  if (isJson(error) && "message" in error) return `${String(error["code"])}: ${String(error["message"])}`;
  return fallback;
}

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Errors worth another attempt with the same request: the outcome is not known. */
export function retryable(error: unknown): error is TenureError {
  return error instanceof Unavailable;
}
