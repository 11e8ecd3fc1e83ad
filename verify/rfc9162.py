"""RFC 9162 Merkle tree hashing and proof verification.

Hashing is §2.1.1, inclusion proofs §2.1.3.2, consistency proofs §2.1.4.2 (rfc-editor.org/rfc/
rfc9162). As in transparency-dev/merkle ``proof/verify.go``, a proof's expected length is derived
from the index and sizes before any hashing, so a missing, extra or reordered hash is refused as
malformed. Two deviations from ``verify.go``, both required by the probe vectors in
``tests/vectors/merkle`` and grounded in the RFC: a consistency "proof" from size 0 is refused
(§2.1.4 defines ``PROOF(m, D[n])`` only for ``0 < m < n``: an empty state proves nothing); and
two equal size-0 roots are accepted only if they are ``MTH({}) = SHA-256()`` (§2.1.1).

Pure functions over bytes and ints: no I/O, no clock. The offline verifier depends on this module.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from verify.errors import MalformedInput, ProofError, RootMismatch

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "LEAF_PREFIX",
    "NODE_PREFIX",
    "leaf_hash",
    "node_hash",
    "root_from_inclusion_proof",
    "verify_consistency",
    "verify_inclusion",
]

# Domain separation (§2.1.1): a leaf can never be reinterpreted as an interior node.
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
HASH_SIZE = 32

# MTH({}) = SHA-256() — the root of the empty tree (§2.1.1).
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(entry: bytes) -> bytes:
    """MTH({d}) = SHA-256(0x00 || d) (§2.1.1)."""
    return hashlib.sha256(LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right) (§2.1.1)."""
    return hashlib.sha256(b"".join((NODE_PREFIX, left, right))).digest()  # one copy, not two


def root_from_inclusion_proof(
    index: int, size: int, leaf_hash: bytes, proof: Sequence[bytes]
) -> bytes:
    """Recompute the root of a tree of ``size`` from the audit path of leaf ``index`` (§2.1.3.2).

    Raises ProofError if ``index >= size`` or the proof has the wrong length for them, and
    MalformedInput if a hash is not 32 bytes.
    """
    _require_non_negative(index=index, size=size)
    if index >= size:
        raise ProofError(f"index {index} is beyond tree size {size}")
    _require_hash("leaf hash", leaf_hash)
    _require_hashes(proof)
    inner, border = _decompose(index, size)
    if len(proof) != inner + border:
        raise ProofError(f"wrong inclusion proof size {len(proof)}, want {inner + border}")
    seed = _chain_inner(leaf_hash, proof[:inner], index)
    return _chain_border_right(seed, proof[inner:])


def verify_inclusion(
    index: int, size: int, leaf_hash: bytes, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that ``leaf_hash`` is leaf ``index`` of the tree of ``size`` with ``root``.

    Raises ProofError (RootMismatch if the proof is well-formed but leads elsewhere).
    """
    computed = root_from_inclusion_proof(index, size, leaf_hash, proof)
    _match(expected=root, computed=computed)


def verify_consistency(
    size1: int, size2: int, root1: bytes, root2: bytes, proof: Sequence[bytes]
) -> None:
    """Check that the tree of ``size2``/``root2`` extends the tree of ``size1``/``root1``.

    RFC 9162 §2.1.4.2, in the shape of transparency-dev/merkle ``VerifyConsistency``.
    """
    _require_non_negative(size1=size1, size2=size2)
    if size2 < size1:
        raise ProofError(f"size2 ({size2}) < size1 ({size1})")
    if size1 == size2:
        _verify_same_size(size1, root1, root2, proof)
        return
    if size1 == 0:
        raise ProofError("consistency from the empty tree is meaningless (§2.1.4: 0 < first)")
    if not proof:
        raise ProofError("empty consistency proof")
    _require_hash("root1", root1)  # it may become the chaining seed
    _require_hashes(proof)
    seed, path, inner, mask = _consistency_layout(size1, size2, root1, proof)
    # The older root only takes the hashes to the left of the path into account.
    hash1 = _chain_border_right(_chain_inner_right(seed, path[:inner], mask), path[inner:])
    _match(expected=root1, computed=hash1)
    hash2 = _chain_border_right(_chain_inner(seed, path[:inner], mask), path[inner:])
    _match(expected=root2, computed=hash2)


def _verify_same_size(size: int, root1: bytes, root2: bytes, proof: Sequence[bytes]) -> None:
    """Equal sizes need no proof: the roots must simply agree (and be MTH({}) for size 0)."""
    if proof:
        raise ProofError("size1 == size2, but the consistency proof is not empty")
    if size == 0:
        _match(expected=EMPTY_ROOT, computed=root1)
    _match(expected=root2, computed=root1)


def _consistency_layout(
    size1: int, size2: int, root1: bytes, proof: Sequence[bytes]
) -> tuple[bytes, Sequence[bytes], int, int]:
    """Return (seed, path, inner, mask) for chaining a consistency proof, checking its length.

    The seed is the hash of the subtree of height trailing_zeros(size1) that ends at size1; the
    proof carries it first unless size1 is a power of two, when that subtree is the whole old
    tree and the seed is root1 itself (§2.1.4.1, SUBPROOF's flag b). The rest of the proof is
    the audit path of that subtree in the tree of size2, chained from the seed's level.
    """
    inner, border = _decompose(size1 - 1, size2)
    shift = _trailing_zeros(size1)
    inner -= shift  # shift < inner whenever size1 < size2
    seed, start = (root1, 0) if size1 == 1 << shift else (proof[0], 1)
    if len(proof) != start + inner + border:
        raise ProofError(
            f"wrong consistency proof size {len(proof)}, want {start + inner + border}"
        )
    return seed, proof[start:], inner, (size1 - 1) >> shift


def _decompose(index: int, size: int) -> tuple[int, int]:
    """Split the audit path of ``index`` in a tree of ``size`` into (inner, border) lengths.

    Inner hashes lie below the point where the paths to ``index`` and ``size - 1`` diverge;
    border hashes are the left siblings above it, one per set bit of the remaining index.
    """
    inner = (index ^ (size - 1)).bit_length()
    border = (index >> inner).bit_count()
    return inner, border


def _chain_inner(seed: bytes, proof: Sequence[bytes], index: int) -> bytes:
    for i, h in enumerate(proof):
        seed = node_hash(seed, h) if (index >> i) & 1 == 0 else node_hash(h, seed)
    return seed


def _chain_inner_right(seed: bytes, proof: Sequence[bytes], index: int) -> bytes:
    for i, h in enumerate(proof):
        if (index >> i) & 1 == 1:
            seed = node_hash(h, seed)
    return seed


def _chain_border_right(seed: bytes, proof: Sequence[bytes]) -> bytes:
    for h in proof:
        seed = node_hash(h, seed)
    return seed


def _trailing_zeros(n: int) -> int:
    return (n & -n).bit_length() - 1


def _match(expected: bytes, computed: bytes) -> None:
    if computed != expected:
        raise RootMismatch(expected, computed)


def _require_non_negative(**values: int) -> None:
    for name, value in values.items():
        if value < 0:
            raise MalformedInput(f"{name} must be non-negative, got {value}")


def _require_hash(what: str, value: bytes) -> None:
    if len(value) != HASH_SIZE:
        raise MalformedInput(f"{what} has {len(value)} bytes, want {HASH_SIZE}")


def _require_hashes(proof: Sequence[bytes]) -> None:
    # verify.go does not check these; we do, so that no misaligned concatenation of
    # proof bytes can ever be hashed as if it were a pair of nodes.
    for i, h in enumerate(proof):
        _require_hash(f"proof[{i}]", h)
