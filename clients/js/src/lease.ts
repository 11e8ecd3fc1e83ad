/**
 * A lease held by a program: acquired, renewed in the background by the Keeper's rules, and
 * released. On loss (LOST / NOT_ACTIVE, or its local expiry without a confirmed renewal)
 * `lost` becomes true, `signal` aborts with the LeaseLost as its reason, `onLost` is called,
 * and renewing stops: stop writing, the fencing token is stale.
 */
import type { LeaseAnswer } from "./answers.js";
import type { AcquireOptions, Client } from "./client.js";
import { LeaseLost, TenureError } from "./errors.js";
import { Keeper } from "./keeper.js";

export interface LeaseOptions extends AcquireOptions {
  onLost?: (error: LeaseLost) => void;
}

type Receipt = LeaseAnswer["receipt"];

export class Lease {
  /** Every answer of the lease (grant, renewals, release), without the owner token. */
  readonly receipts: Receipt[] = [];
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> = Promise.resolve();
  private stopped = false;

  private constructor(
    private readonly client: Client,
    readonly grant: LeaseAnswer,
    private keeper: Keeper,
    private readonly onLost?: (error: LeaseLost) => void,
  ) {
    this.receipts.push(grant.receipt);
  }

  /** Acquire, renew once first if the grant came so late its renewal is due, then keep it. */
  static async hold(client: Client, resource: string, holder: string, options: LeaseOptions): Promise<Lease> {
    const { onLost, ...acquire } = options;
    const ttlMs = 1000 * (acquire.ttl ?? 30);
    let sent = Date.now();
    const grant = await client.acquire(resource, holder, acquire);
    const lease = new Lease(client, grant, Keeper.granted(ttlMs, sent), onLost);
    if (lease.keeper.delay(Date.now()) <= 0) {
      sent = Date.now();
      lease.receipts.push((await lease.renew()).receipt);
      lease.keeper = Keeper.granted(ttlMs, sent);
    }
    lease.schedule();
    return lease;
  }

  get resource(): string {
    return this.grant.resource;
  }

  /** The token to pass to the store you write to. */
  get fencingToken(): number {
    return this.grant.fencingToken!;
  }

  /** Keep it secret. */
  get ownerToken(): string {
    return this.grant.ownerToken!;
  }

  /** Aborted, with the LeaseLost as its reason, once the lease is lost. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** True once the lease is gone, or past its local expiry unconfirmed. */
  get lost(): boolean {
    return this.keeper.expired(Date.now());
  }

  /** Stop renewing and give the lease back; throws LeaseLost if it was lost meanwhile. */
  async release(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.renewing;
    if (this.keeper.lost !== null) throw this.keeper.lost;
    try {
      const answer = await this.client.release(this.resource, this.ownerToken, { fencingToken: this.fencingToken });
      this.receipts.push(answer.receipt);
    } catch (error) {
      if (error instanceof LeaseLost) this.report(error);
      throw error;
    }
  }

  private renew(deadline?: number): Promise<LeaseAnswer> {
    const ttl = this.keeper.ttlMs / 1000;
    return this.client.renew(this.resource, this.ownerToken, { ttl, fencingToken: this.fencingToken, deadline });
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.renewing = this.renewOnce();
    }, this.keeper.delay(Date.now()));
  }

  private async renewOnce(): Promise<void> {
    const sent = Date.now();
    let lost: LeaseLost | null;
    try {
      const answer = await this.renew(this.keeper.validUntil);
      this.receipts.push(answer.receipt);
      lost = this.keeper.renewed(sent, Date.now());
    } catch (error) {
      const failure = error instanceof TenureError ? error : new TenureError(String(error));
      lost = this.keeper.failed(failure, Date.now());
    }
    if (lost !== null) this.report(lost);
    else this.schedule();
  }

  private report(lost: LeaseLost): void {
    this.keeper.lost ??= lost;
    if (this.controller.signal.aborted) return;
    this.controller.abort(lost);
    try {
      this.onLost?.(lost);
    } catch {
      // the holder's own callback failing must not stop the report
    }
  }
}
