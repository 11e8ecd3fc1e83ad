/** Typed answers: the server's `data` (as sent) and its signed credential. */
import type { SignedAnswer } from "./errors.js";
import { withoutSecrets } from "./receipt.js";

type Json = Record<string, unknown>;

export class Answer implements SignedAnswer {
  constructor(
    readonly data: Json,
    readonly provenance: Json | null,
    readonly statusCode: number,
  ) {}

  /** `pass`, `fail` or `unknown`. */
  get status(): string {
    return String(this.data["status"] ?? "unknown");
  }

  /** The answer to save or hand to `verifyFence`: without the owner token and namespace,
   * which the credential never covers. */
  get receipt(): { data: Json; _provenance: Json | null } {
    return { data: withoutSecrets(this.data), _provenance: this.provenance };
  }

  get ledger(): Json {
    const ledger = this.data["ledger"];
    return typeof ledger === "object" && ledger !== null ? (ledger as Json) : {};
  }
}

/** A lease operation's answer (docs/api.md, "Lease operations"). */
export class LeaseAnswer extends Answer {
  get outcome(): string {
    return String(this.data["outcome"] ?? "");
  }
  get granted(): boolean {
    return this.data["granted"] === true;
  }
  get resource(): string {
    return String(this.data["resource"] ?? "");
  }
  get fencingToken(): number | null {
    const token = this.data["fencingToken"];
    return typeof token === "number" ? token : null;
  }
  /** Shown once on a fresh grant (and its replay); keep it secret. */
  get ownerToken(): string | null {
    const token = this.data["ownerToken"];
    return typeof token === "string" ? token : null;
  }
  get expiresAt(): string | null {
    const value = this.data["expiresAt"];
    return typeof value === "string" ? value : null;
  }
  get replayed(): boolean {
    return this.data["replayed"] === true;
  }
}
