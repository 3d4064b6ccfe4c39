"""The working/held-out split (exact, as AQVEN computes it) and case selection."""
from __future__ import annotations

import hashlib
from collections.abc import Collection

from ..project.specs import CaseSpec, DatasetSpec

HOLDOUT_SHARE = 0.5


def unit(package: str, dataset_id: str, case_name: str) -> float:
    salt = hashlib.sha256(f"aqven-split-v1:{package}".encode()).hexdigest()
    digest = hashlib.sha256(b"\x00".join([salt.encode(), dataset_id.encode(), case_name.encode()])).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(package: str, dataset_id: str, case_name: str) -> str:
    return "holdout" if unit(package, dataset_id, case_name) < HOLDOUT_SHARE else "dev"


def selected(dataset: DatasetSpec, tags: dict[str, str]) -> list[CaseSpec]:
    """Cases carrying every listed tag with that value, in file order."""
    return [c for c in dataset.cases if all(c.tags.get(k) == v for k, v in tags.items())]


def choose(package: str, dataset_id: str, dataset: DatasetSpec, tags: dict[str, str], split: str,
           wanted: int | None, skip: Collection[str] = ()) -> tuple[list[CaseSpec], int]:
    """The first `wanted` selected cases of one half, in file order, leaving out the names in `skip` (held-out
    cases that already gave a finding); and how many that half has besides those."""
    half = [c for c in selected(dataset, tags) if split_of(package, dataset_id, c.name) == split and c.name not in skip]
    return (half if wanted is None else half[:wanted]), len(half)
