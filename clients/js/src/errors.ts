/** One error hierarchy: every failure the client raises is a TenureError. */

/** The answer a refusal came with: the server's data and its signed credential. */
export interface SignedAnswer {
  readonly data: Record<string, unknown>;
  readonly provenance: Record<string, unknown> | null;
  readonly statusCode: number;
}

/** Root of every client error; `answer` is the server's signed answer, when there was one. */
export class TenureError extends Error {
  override name = "TenureError";
  constructor(
    message: string,
    readonly answer: SignedAnswer | null = null,
  ) {
    super(message);
  }
}

/** The server refused the input (4xx): `code` and `field` say what and where. */
export class InvalidRequest extends TenureError {
  override name = "InvalidRequest";
  readonly code: string;
  readonly field: string | null;
  constructor(
    message: string,
    answer: SignedAnswer | null,
    readonly status: number,
  ) {
    super(message, answer);
    const error = (answer?.data["error"] ?? {}) as Record<string, unknown>;
    this.code = String(error["code"] ?? "invalid_request");
    this.field = typeof error["field"] === "string" ? error["field"] : null;
  }
}

/** 429: retry after `retryAfter` seconds (not retried automatically). */
export class RateLimited extends TenureError {
  override name = "RateLimited";
  constructor(
    message: string,
    answer: SignedAnswer | null,
    readonly retryAfter: number,
  ) {
    super(message, answer);
  }
}

/** The outcome is unknown (503/500, or no answer after every retry): never permission. */
export class Unavailable extends TenureError {
  override name = "Unavailable";
}

/** An answer for another resource or operation than asked: never believed. */
export class MismatchedAnswer extends Unavailable {
  override name = "MismatchedAnswer";
}

/** 409 HELD: someone else holds it. */
export class LeaseHeld extends TenureError {
  override name = "LeaseHeld";
  readonly heldBy: string[];
  readonly retryAfter: number;
  constructor(message: string, answer: SignedAnswer) {
    super(message, answer);
    const heldBy = answer.data["heldBy"];
    this.heldBy = Array.isArray(heldBy) ? heldBy.map(String) : [];
    this.retryAfter = Number(answer.data["retryAfterSeconds"] ?? 1);
  }
}

/** The lease is no longer yours (409 LOST / NOT_ACTIVE, or expired unconfirmed). */
export class LeaseLost extends TenureError {
  override name = "LeaseLost";
}

/** 409 CONFLICT (capacity, fingerprint) or IDEMPOTENCY_CONFLICT. */
export class Conflict extends TenureError {
  override name = "Conflict";
}

/** An answer whose credential does not verify; `check` names the failed check. */
export class ReceiptInvalid extends TenureError {
  override name = "ReceiptInvalid";
  constructor(
    message: string,
    readonly check: string,
  ) {
    super(message);
  }
}

/** A malformed value handed to a verifier (the Python verifier's MalformedInput). */
export class MalformedInput extends Error {
  override name = "MalformedInput";
}
