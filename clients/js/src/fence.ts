/**
 * The store-side fencing check: is a write's token backed by a valid lease receipt? The same
 * rules as the Python verifier's `verify.fence.verify_fence`: a receipt a trusted key signed,
 * for this resource, granting the lease (`acquire`, `wait` or `renew` — a `get` states a
 * holder's token too, and anyone may ask for it), with a token not below `minToken`.
 */
import { isObject } from "./dataintegrity.js";
import { parseStrict } from "./ijson.js";
import { ReceiptError, checkReceipt } from "./receipt.js";
import { trustedKeys, type Trust } from "./trust.js";

export const GRANTING_OPS: readonly string[] = ["acquire", "wait", "renew"];

/** A write to refuse; `reason` is the failed receipt check or `grant`, `resource`, `token`. */
export class FenceRefused extends Error {
  override name = "FenceRefused";
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(`${reason}: ${message}`);
  }
}

/** What a verified receipt vouches for. */
export interface Fence {
  resource: string;
  fencingToken: number;
  holder: string | null;
  expiresAt: string | null;
  issuer: string;
}

export interface FenceOptions {
  /** A did:key, several, or the keyring `GET /api/v1/keys` serves (its periods then apply). */
  trust: Trust;
  resource: string;
  /** The highest token the store has accepted for `resource` (equal is allowed). */
  minToken: number;
}

/** The fence `receipt` (an object, or its JSON text, read strictly) proves for `resource`;
 * throws FenceRefused saying why it proves none. */
export function verifyFence(given: unknown, { trust, resource, minToken }: FenceOptions): Fence {
  const trusted = trustedKeys(trust);
  const receipt = typeof given === "string" ? parsed(given) : given;
  try {
    checkReceipt(receipt, trusted);
  } catch (error) {
    if (error instanceof ReceiptError) throw new FenceRefused(error.check, error.message);
    throw error;
  }
  const document = receipt as Record<string, unknown>;
  const credential = (isObject(document["_provenance"]) ? document["_provenance"] : document) as Record<string, unknown>;
  const subject = credential["credentialSubject"] as Record<string, unknown>;
  const op = subject["op"];
  const token = subject["fencingToken"];
  if (typeof op !== "string" || !GRANTING_OPS.includes(op) || subject["granted"] !== true) {
    throw new FenceRefused("grant", `the receipt of a ${JSON.stringify(op)} does not grant a lease`);
  }
  if (subject["resource"] !== resource) {
    const said = String(subject["resource"]).slice(0, 200);
    throw new FenceRefused("resource", `the receipt is for ${JSON.stringify(said)}, not ${JSON.stringify(resource)}`);
  }
  if (typeof token !== "number" || !Number.isSafeInteger(token) || token < minToken) {
    throw new FenceRefused("token", `fencing token ${String(token)} is below ${minToken}`);
  }
  const text = (value: unknown) => (typeof value === "string" ? value : null);
  const issuer = String(credential["issuer"]);
  return { resource, fencingToken: token, holder: text(subject["holder"]), expiresAt: text(subject["expiresAt"]), issuer };
}

function parsed(text: string): unknown {
  try {
    return parseStrict(text, "the receipt");
  } catch (error) {
    throw new FenceRefused("format", (error as Error).message);
  }
}
