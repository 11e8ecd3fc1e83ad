/**
 * When a held lease is renewed and when it counts as lost — the Python client's rules
 * (api/client/keeper.py); pure, time (ms) is an argument:
 *
 * - a lease is good until `validUntil`: when its last grant or renewal was *sent*, plus the
 *   ttl, so local expiry is never optimistic, however late the answer came;
 * - it is renewed a third of the ttl after that moment; a grant that arrives with its renewal
 *   already due is renewed before it is handed out;
 * - a renewal without a known outcome is retried every ttl/12 (at least 50 ms) until it is
 *   confirmed or `validUntil` passes — then the lease is lost for good;
 * - a LOST / NOT_ACTIVE answer loses it at once.
 */
import { LeaseLost, TenureError } from "./errors.js";

const RENEW_AT = 1 / 3;
const RETRY_EVERY = 1 / 12;

export class Keeper {
  failing = false;
  lost: LeaseLost | null = null;

  private constructor(
    readonly ttlMs: number,
    public validUntil: number,
  ) {}

  /** A grant whose request was sent at `sentAt`: the server granted it no earlier. */
  static granted(ttlMs: number, sentAt: number): Keeper {
    return new Keeper(ttlMs, sentAt + ttlMs);
  }

  /** Milliseconds until the next renewal attempt (0: due now). */
  delay(now: number): number {
    if (this.failing) return Math.max(50, Math.min(this.ttlMs * RETRY_EVERY, this.validUntil - now));
    return Math.max(0, this.validUntil - this.ttlMs + this.ttlMs * RENEW_AT - now);
  }

  /** Lost, or past its local expiry without a confirmed renewal. */
  expired(now: number): boolean {
    return this.lost !== null || now >= this.validUntil;
  }

  /** A renewal sent at `sentAt` was confirmed at `now`; the loss if it came too late. */
  renewed(sentAt: number, now: number): LeaseLost | null {
    if (this.expired(now)) {
      this.lost ??= new LeaseLost("the lease expired before its renewal was confirmed");
      return this.lost;
    }
    this.validUntil = Math.max(this.validUntil, sentAt + this.ttlMs);
    this.failing = false;
    return null;
  }

  /** A renewal did not succeed; the loss if this is one. */
  failed(error: TenureError, now: number): LeaseLost | null {
    if (this.lost !== null) return this.lost;
    if (error instanceof LeaseLost) this.lost = error;
    else if (now >= this.validUntil) {
      this.lost = new LeaseLost(`the lease expired before a renewal was confirmed (${error.message})`, error.answer);
    } else this.failing = true;
    return this.lost;
  }
}
