"""A finding's own hash (its self_sha256): files.py writes it, verify.py checks it."""
from __future__ import annotations

from ..experiments.plan import canonical_hash


def self_hash(document: dict) -> str:
    return canonical_hash({k: v for k, v in document.items() if k != "self_sha256"})
