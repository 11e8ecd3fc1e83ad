/**
 * The tenure client for Node ≥ 18: the Python client's calls and rules (docs/client.md), with
 * every answer's receipt verified here — eddsa-jcs-2022 under pinned keys, bound to its
 * request — before it is returned. `lease()` holds a lease, renewing it in the background,
 * and aborts its `signal` when the lease is lost.
 */
import { Answer, LeaseAnswer } from "./answers.js";
import {
  type Call, DEFAULT_RETRY, type Reply, type RetryPolicy, backoff, interpret, newRequestId, retryable,
} from "./core.js";
import { ReceiptInvalid, TenureError, Unavailable } from "./errors.js";
import { Lease, type LeaseOptions } from "./lease.js";
import { verifyCheckpoint } from "./note.js";
import { canonicalBase64 } from "./note.js";
import { rawKeyFromDid } from "./multikey.js";
import { verifyInclusion } from "./rfc9162.js";
import { trustedKeys, type Trust, type Trusted } from "./trust.js";

type Json = Record<string, unknown>;

export interface ClientOptions {
  apiKey?: string;
  namespace?: string;
  /** Pinned keys; without them the keyring this server serves is fetched once and pinned. */
  trust?: Trust;
  /** false: check no receipt at all (only that the answer is for the request). */
  verify?: boolean;
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
}

/** Optional fields of acquire and wait, in the API's camelCase. */
export interface AcquireOptions {
  ttl?: number;
  wait?: number;
  capacity?: number;
  fingerprint?: string;
  scope?: string;
  requestId?: string;
}

/** The keyring `GET /api/v1/keys` serves: pass it as `trust`. */
export type Keyring = { keys: Record<string, unknown>[] };

/** `deadline` (epoch ms): stop retrying then (a held lease's local expiry). */
export interface RenewOptions {
  ttl?: number;
  fencingToken?: number;
  requestId?: string;
  deadline?: number;
}

export class Client {
  private trusted: Trusted | null;
  private readonly served: boolean;
  private readonly retry: RetryPolicy;
  private readonly timeoutMs: number;
  private readonly headers: Record<string, string>;

  constructor(
    readonly url: string,
    options: ClientOptions = {},
  ) {
    this.trusted = options.trust === undefined ? null : trustedKeys(options.trust);
    this.served = options.trust === undefined && options.verify !== false;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.headers = { "content-type": "application/json", accept: "application/json" };
    if (options.apiKey) this.headers["authorization"] = `Bearer ${options.apiKey}`;
    if (options.namespace) this.headers["tenure-namespace"] = options.namespace;
  }

  /** Take a lease (waiting up to `wait` s if held). Throws LeaseHeld, Conflict, … */
  acquire(resource: string, holder: string, options: AcquireOptions = {}): Promise<LeaseAnswer> {
    const { ttl = 30, wait, ...more } = options;
    return this.lease_("acquire", { resource, holder, ttlSeconds: ttl, waitSeconds: wait, ...more });
  }

  /** Queue for a lease, first come first served; LeaseHeld when `wait` s are up. */
  wait(resource: string, holder: string, options: AcquireOptions = {}): Promise<LeaseAnswer> {
    const { ttl = 30, wait = 30, ...more } = options;
    return this.lease_("wait", { resource, holder, ttlSeconds: ttl, waitSeconds: wait, ...more });
  }

  /** Extend a lease you hold by `ttl` s from now. Throws LeaseLost. */
  renew(resource: string, ownerToken: string, options: RenewOptions = {}): Promise<LeaseAnswer> {
    const { ttl, deadline, ...more } = options;
    return this.lease_("renew", { resource, ownerToken, ttlSeconds: ttl, ...more }, deadline);
  }

  /** Give a lease back. Throws LeaseLost (not live any more, or a fencing mismatch). */
  release(resource: string, ownerToken: string, options: { fencingToken?: number; requestId?: string } = {}): Promise<LeaseAnswer> {
    return this.lease_("release", { resource, ownerToken, ...options });
  }

  /** Who holds `resource` (FREE or HOLDING). */
  get(resource: string): Promise<LeaseAnswer> {
    return this.lease_("get", { resource });
  }

  /** Hold a lease: acquired now, renewed in the background, `signal` aborted on loss. */
  lease(resource: string, holder: string, options: LeaseOptions = {}): Promise<Lease> {
    return Lease.hold(this, resource, holder, options);
  }

  /** Run `body` holding a lease, released afterwards (LeaseLost if it was lost meanwhile). */
  async withLease<T>(resource: string, holder: string, body: (lease: Lease) => Promise<T>, options: LeaseOptions = {}): Promise<T> {
    const lease = await this.lease(resource, holder, options);
    let result: T;
    try {
      result = await body(lease);
    } catch (error) {
      await lease.release().catch(() => undefined);
      throw error;
    }
    await lease.release();
    return result;
  }

  /** `GET /api/v1/keys`: every signing key, to pin as `trust`. */
  async keys(): Promise<Keyring> {
    return (await this.run(this.call("GET", "/api/v1/keys", null, false))).data as unknown as Keyring;
  }

  /** The latest checkpoint, its C2SP note verified under a pinned key. */
  async checkpoint(): Promise<{ origin: string; treeSize: number; rootHash: string }> {
    const data = (await this.run(this.call("GET", "/api/v1/log/checkpoint", null, false))).data;
    await this.pinned();
    for (const did of this.trusted?.keys() ?? []) {
      try {
        const checkpoint = verifyCheckpoint(String(data["note"]), String(data["origin"]), rawKeyFromDid(did));
        const root = checkpoint.rootHash.toString("base64");
        if (checkpoint.size !== data["treeSize"] || root !== data["rootHash"]) {
          throw new ReceiptInvalid("the checkpoint JSON differs from its signed note", "checkpoint");
        }
        return { origin: checkpoint.origin, treeSize: checkpoint.size, rootHash: root };
      } catch (error) {
        if (error instanceof ReceiptInvalid) throw error;
      }
    }
    throw new ReceiptInvalid("no trusted key signs the checkpoint note", "checkpoint");
  }

  /** Prove that an answer's ledger entry is in the log: its RFC 9162 inclusion proof, fetched
   * for the latest signed checkpoint and verified against that checkpoint's root. */
  async proveInclusion(answer: Answer): Promise<{ logIndex: number; treeSize: number }> {
    const { logIndex, leafHash } = answer.ledger;
    if (typeof logIndex !== "number" || typeof leafHash !== "string") {
      throw new ReceiptInvalid("the answer appended no ledger entry", "inclusion");
    }
    const checkpoint = await this.checkpoint();
    const path = `/api/v1/log/proof/inclusion?index=${logIndex}&treeSize=${checkpoint.treeSize}`;
    const proof = (await this.run(this.call("GET", path, null, false))).data;
    const hashes = Array.isArray(proof["hashes"]) ? proof["hashes"].map((h) => canonicalBase64(String(h), "proof hash")) : [];
    try {
      const leaf = canonicalBase64(leafHash, "leafHash");
      verifyInclusion(logIndex, checkpoint.treeSize, leaf, hashes, canonicalBase64(checkpoint.rootHash, "root"));
    } catch (error) {
      throw new ReceiptInvalid(`inclusion proof does not verify: ${(error as Error).message}`, "inclusion");
    }
    return { logIndex, treeSize: checkpoint.treeSize };
  }

  private async lease_(op: string, fields: Json, deadline?: number): Promise<LeaseAnswer> {
    const body = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    if (op !== "get" && body["requestId"] === undefined) body["requestId"] = newRequestId();
    const call = this.call("POST", `/api/v1/lease/${op}`, body, true);
    call.timeoutMs += 1000 * Number(body["waitSeconds"] ?? (op === "wait" ? 30 : 0));
    call.expect = [["op", op], ["resource", String(body["resource"])]];
    const answer = await this.run(call, deadline);
    return new LeaseAnswer(answer.data, answer.provenance, answer.statusCode);
  }

  private call(method: "GET" | "POST", path: string, body: Json | null, signed: boolean): Call {
    return { method, path, body, timeoutMs: this.timeoutMs, signed, expect: [] };
  }

  /** Send `call`, retrying the same request until its outcome is known or `deadline` (epoch
   * ms) would pass. */
  async run(call: Call, deadline?: number): Promise<Answer> {
    if (call.signed) await this.pinned();
    let last: TenureError = new Unavailable("no attempt was made");
    for (let attempt = 0; attempt < this.retry.attempts; attempt++) {
      if (attempt > 0) {
        const pause = backoff(this.retry, attempt - 1, Math.random());
        if (deadline !== undefined && Date.now() + pause >= deadline) break;
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
      try {
        return await this.checked(call, await this.send(call, deadline));
      } catch (error) {
        if (!retryable(error)) throw error;
        last = error;
      }
    }
    throw new Unavailable(`outcome unknown: ${last.message}`, last.answer);
  }

  private async send(call: Call, deadline?: number): Promise<Reply> {
    const left = deadline === undefined ? call.timeoutMs : Math.max(50, Math.min(call.timeoutMs, deadline - Date.now()));
    try {
      const response = await fetch(new URL(call.path, this.url), {
        method: call.method,
        headers: this.headers,
        body: call.body === null ? undefined : JSON.stringify(call.body),
        signal: AbortSignal.timeout(left),
      });
      return { status: response.status, headers: response.headers, text: await response.text() };
    } catch (error) {
      throw new Unavailable(`no answer: ${(error as Error).message}`);
    }
  }

  /** `interpret`, re-pinning the served keyring once if the issuer is not in it (a rotation). */
  private async checked(call: Call, reply: Reply): Promise<Answer> {
    try {
      return interpret(call, reply, this.trusted);
    } catch (error) {
      if (!(this.served && error instanceof ReceiptInvalid && error.check === "issuer")) throw error;
    }
    this.trusted = null;
    await this.pinned();
    return interpret(call, reply, this.trusted);
  }

  private async pinned(): Promise<void> {
    if (this.trusted !== null || !this.served) return;
    const keyring = await this.run(this.call("GET", "/api/v1/keys", null, false));
    try {
      this.trusted = trustedKeys(keyring.data as Trust);
    } catch (error) {
      throw new ReceiptInvalid(`the server's keyring is unusable: ${(error as Error).message}`, "issuer");
    }
  }
}
