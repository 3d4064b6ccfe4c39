"""A finding's own hash (its self_sha256): files.py writes it, verify.py checks it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..experiments.plan import canonical_hash


def self_hash(document: Mapping[str, Any]) -> str:
    return canonical_hash({k: v for k, v in document.items() if k != "self_sha256"})
