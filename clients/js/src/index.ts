/** tenure's TypeScript client and offline receipt checks (docs/client.md §4). */
export { Answer, LeaseAnswer } from "./answers.js";
export { Client, type AcquireOptions, type ClientOptions, type Keyring, type RenewOptions } from "./client.js";
export { type RetryPolicy, canonicalRequest, newRequestId } from "./core.js";
export * from "./errors.js";
export { type Fence, type FenceOptions, FenceRefused, GRANTING_OPS, verifyFence } from "./fence.js";
export { parseStrict } from "./ijson.js";
export { canonicalize } from "./jcs.js";
export { Keeper } from "./keeper.js";
export { Lease, type LeaseOptions } from "./lease.js";
export { type Check, type Report, ReceiptError, checkReceipt, verifyReceipt } from "./receipt.js";
export { ProofError, leafHash, nodeHash, rootFromInclusionProof, verifyInclusion } from "./rfc9162.js";
export { type Trust, type Trusted, trustedKeys } from "./trust.js";
