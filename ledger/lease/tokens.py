"""The secrets tenure hands out (owner tokens, namespaces, API keys) and their stored digests.

Each is 256 random bits, base64url without padding, after a prefix naming its kind; only its
SHA-256 is ever kept (DESIGN §1, §3.1).
"""

from __future__ import annotations

import hashlib
import secrets
from base64 import urlsafe_b64encode

OWNER_TOKEN_PREFIX = "own_"
NAMESPACE_PREFIX = "ns_"
API_KEY_PREFIX = "tnr_"
SECRET_CHARS = 43  # 256 bits of base64url, unpadded


def mint(prefix: str) -> str:
    """A fresh 256-bit secret of the kind ``prefix`` names."""
    return prefix + urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


def secret_digest(secret: str) -> bytes:
    """The SHA-256 under which a secret is stored and looked up."""
    return hashlib.sha256(secret.encode()).digest()


DEFAULT_HOLDER_PREFIX = "holder_"


def default_holder(owner_token: str) -> str:
    """The label of a grant whose caller named no holder: 128 bits of a hash of its owner
    token under a label of its own, so two such grants never share a label (rule 4) and the
    label gives away neither the token nor its stored digest."""
    label = hashlib.sha256(b"tenure default holder\x00" + owner_token.encode()).digest()[:16]
    return DEFAULT_HOLDER_PREFIX + urlsafe_b64encode(label).rstrip(b"=").decode()
