"""Function providers (`kind: code`): a Python callable answers model requests."""
from __future__ import annotations

import time
from typing import Any, Callable

from ..project import usercode
from .base import ModelRequest, ModelResponse, ProviderError


class FunctionProvider:
    """A sync callable runs in a worker thread, an async one is awaited; either gets the time limit."""

    def __init__(self, fn: Callable[[ModelRequest], Any], timeout: float | None = usercode.DEFAULT_TIMEOUT) -> None:
        self.fn = fn
        self.timeout = timeout

    async def complete(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        try:
            result = await usercode.call(self.fn, request, timeout=self.timeout)
        except usercode.UserCallTimeout as exc:
            raise ProviderError("timeout", f"function provider {exc}", public=f"function provider {exc}") from None
        except usercode.UserCodeError as exc:  # the user's provider is code we call: its bugs are infra errors
            if isinstance(exc.original, ProviderError):
                raised = exc.original
                if raised.public is None:      # the user's own text may quote the request
                    raised.public = f"function provider raised {raised.code}" + (
                        f" at {exc.location}" if exc.location else "")
                raise raised from None
            # its message may quote the request: held-out runs show the exception's type and where it was raised
            public = f"function provider raised {exc.exc_type}" + (f" at {exc.location}" if exc.location else "")
            raise ProviderError("provider_error", f"function provider raised {exc}", public=public) from None
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
