/**
 * Pinned trust: the did:keys a caller accepts and, from a keyring (`GET /api/v1/keys`), the
 * period each key may sign in, `[validFrom, validUntil)`. A credential issued outside its key's
 * period is refused, so a retired key cannot vouch for anything dated after its retirement.
 */
import { MalformedInput } from "./errors.js";
import { isObject } from "./dataintegrity.js";

/** A did:key, several, or the keyring `GET /api/v1/keys` serves. */
export type Trust = string | readonly string[] | { keys: readonly Record<string, unknown>[] };

export interface Period {
  validFrom: number | null;
  validUntil: number | null;
}

/** did → its period (null: no period known, any time). */
export type Trusted = ReadonlyMap<string, Period | null>;

const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/;

/** An ISO 8601 instant with a zone, as epoch milliseconds; MalformedInput naming `what`. */
export function parseTime(value: unknown, what: string): number {
  const when = typeof value === "string" && INSTANT.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(when)) {
    const shown = JSON.stringify(String(value).slice(0, 40));
    throw new MalformedInput(`${what} ${shown} is not an ISO 8601 time with a zone`);
  }
  return when;
}

/** The did:keys to accept, from any spelling of `trust`. */
export function trustedKeys(trust: Trust): Trusted {
  const trusted = new Map<string, Period | null>();
  if (typeof trust === "string") trusted.set(trust, null);
  else if (Array.isArray(trust)) for (const did of trust) trusted.set(String(did), null);
  else if (isObject(trust) && Array.isArray(trust.keys)) {
    for (const key of trust.keys) {
      if (!isObject(key) || typeof key["did"] !== "string") {
        throw new MalformedInput("every key in the keyring needs a did");
      }
      trusted.set(key["did"], period(key, key["did"]));
    }
  } else {
    throw new MalformedInput('trust is a did:key, a list of them, or {"keys": [...]} from GET /api/v1/keys');
  }
  if (trusted.size === 0 || ![...trusted.keys()].every((did) => did.startsWith("did:key:"))) {
    throw new MalformedInput("trust must name at least one did:key");
  }
  return trusted;
}

function period(key: Record<string, unknown>, did: string): Period {
  const start = key["validFrom"];
  const end = key["validUntil"];
  return {
    validFrom: start === null || start === undefined ? null : parseTime(start, `${did} validFrom`),
    validUntil: end === null || end === undefined ? null : parseTime(end, `${did} validUntil`),
  };
}

/** Why a credential dated `issued` by `did` falls outside the key's period, or null. */
export function issuedOutside(trusted: Trusted, did: string, issued: unknown): string | null {
  const range = trusted.get(did);
  if (!range) return null;
  let when: number;
  try {
    when = parseTime(issued, "validFrom");
  } catch (error) {
    return (error as Error).message;
  }
  if (range.validFrom !== null && when < range.validFrom) {
    return `issued at ${String(issued)}, before ${did} became valid`;
  }
  if (range.validUntil !== null && when >= range.validUntil) {
    const until = new Date(range.validUntil).toISOString();
    return `issued at ${String(issued)}, after ${did} was retired (validUntil ${until})`;
  }
  return null;
}
