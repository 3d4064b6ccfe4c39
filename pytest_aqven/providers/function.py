"""Function providers (`kind: code`): a Python callable answers model requests."""
from __future__ import annotations

import time
from typing import Any, Callable

from .base import ModelRequest, ModelResponse, ProviderError


class FunctionProvider:
    def __init__(self, fn: Callable[[ModelRequest], Any]):
        self.fn = fn

    def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        try:
            result = self.fn(request)
        except ProviderError:
            raise
        except Exception as exc:  # the user's provider is code we call: its bugs are infra errors
            raise ProviderError("provider_error", f"function provider raised {type(exc).__name__}: {exc}") from None
        if isinstance(result, dict):
            try:
                result = ModelResponse(**result)
            except TypeError as exc:
                raise ProviderError("provider_error", f"function provider returned an invalid response: {exc}") from None
        if not isinstance(result, ModelResponse):
            raise ProviderError("provider_error",
                                f"function provider returned {type(result).__name__}, not a ModelResponse")
        if result.latency_ms is None:
            result = ModelResponse(**{**result.__dict__, "latency_ms": (time.perf_counter() - started) * 1000})
        return result
