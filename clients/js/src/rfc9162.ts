/**
 * RFC 9162 §2.1 Merkle tree hashing and inclusion-proof verification (§2.1.3.2), in the shape
 * of transparency-dev/merkle `VerifyInclusion`. Pure: bytes and integers in, a throw or nothing.
 */
import { createHash } from "node:crypto";

export const LEAF_PREFIX = Buffer.from([0x00]);
export const NODE_PREFIX = Buffer.from([0x01]);

/** An inclusion proof that does not lead to the expected root, or is malformed. */
export class ProofError extends Error {
  override name = "ProofError";
}

export function leafHash(entry: Buffer): Buffer {
  return createHash("sha256").update(LEAF_PREFIX).update(entry).digest();
}

export function nodeHash(left: Buffer, right: Buffer): Buffer {
  return createHash("sha256").update(NODE_PREFIX).update(left).update(right).digest();
}

/** The root of a tree of `size` recomputed from the audit path of leaf `index`. */
export function rootFromInclusionProof(index: number, size: number, leaf: Buffer, proof: Buffer[]): Buffer {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0) {
    throw new ProofError("index and size must be non-negative integers");
  }
  if (index >= size) throw new ProofError(`index ${index} is beyond tree size ${size}`);
  for (const hash of [leaf, ...proof]) {
    if (hash.length !== 32) throw new ProofError(`a hash has ${hash.length} bytes, want 32`);
  }
  const inner = bitLength(BigInt(index) ^ BigInt(size - 1));
  const border = popCount(BigInt(index) >> BigInt(inner));
  if (proof.length !== inner + border) {
    throw new ProofError(`wrong inclusion proof size ${proof.length}, want ${inner + border}`);
  }
  let seed = leaf;
  proof.slice(0, inner).forEach((hash, i) => {
    seed = (BigInt(index) >> BigInt(i)) & 1n ? nodeHash(hash, seed) : nodeHash(seed, hash);
  });
  for (const hash of proof.slice(inner)) seed = nodeHash(hash, seed);
  return seed;
}

/** Throws ProofError unless `leaf` is leaf `index` of the tree of `size` whose root is `root`. */
export function verifyInclusion(index: number, size: number, leaf: Buffer, proof: Buffer[], root: Buffer): void {
  const computed = rootFromInclusionProof(index, size, leaf, proof);
  if (!computed.equals(root)) {
    throw new ProofError(`root mismatch: expected ${root.toString("base64")}, computed ${computed.toString("base64")}`);
  }
}

function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

function popCount(n: bigint): number {
  return [...n.toString(2)].filter((bit) => bit === "1").length;
}
