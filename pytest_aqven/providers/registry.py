"""Provider id -> provider object, from aqven.yaml."""
from __future__ import annotations

from pathlib import Path

from ..project import coderefs
from ..project.specs import ProviderSpec
from .base import Provider, ProviderError
from .function import FunctionProvider


def build(spec: ProviderSpec, *, package: str, root: Path) -> Provider:
    if spec.kind == "code":
        try:
            fn = coderefs.resolve(spec.run, package=package, root=root, here=root / "aqven.py")
        except coderefs.CodeRefError as exc:
            raise ProviderError("code_invalid", f"provider {spec.id}: {exc}") from None
        return FunctionProvider(fn)
    raise ProviderError("MODEL_FEATURE_UNSUPPORTED",
                        f"provider {spec.id}: kind {spec.kind} is not supported by this version of pytest-aqven")
