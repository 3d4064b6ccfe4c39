"""The cost of a call and where it came from: the provider's own report, then OpenRouter's public price
list, then the genai-prices table, else unknown (`None`, never $0.00).

OpenRouter's list (`GET <base_url>/models`, no key needed) is cached on disk under `.aqven/cache/`,
refreshed when older than six hours and reachable; when it is not, the cached copy (or nothing) is
used and the run goes on. A failed refresh is tried again after a minute.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

MAX_AGE_S = 6 * 3600
RETRY_S = 60.0
FETCH_TIMEOUT_S = 10.0
# our catalog prefix -> genai-prices provider id, where they differ
GENAI_PROVIDER = {"openai-chat": "openai"}


class PriceList:
    """OpenRouter's model list as {model id: (prompt, completion, request, cache read) USD per token}."""

    def __init__(self, url: str, cache_file: Path) -> None:
        self.url = url
        self.cache_file = cache_file
        self._prices: dict[str, tuple[float, float, float, float]] | None = None
        self._loaded_at = 0.0            # when the prices in memory were fetched (file time)
        self._failed_at = 0.0
        self._lock = threading.Lock()

    def _read_cache(self) -> None:
        try:
            stored = json.loads(self.cache_file.read_text(encoding="utf-8"))
            self._prices = _parse(stored["data"])
            self._loaded_at = float(stored["fetched_at"])
        except (OSError, ValueError, KeyError, TypeError):
            pass

    def _fetch(self) -> None:
        import httpx
        try:
            response = httpx.get(self.url, timeout=FETCH_TIMEOUT_S)
            response.raise_for_status()
            data = response.json()["data"]
            prices = _parse(data)
        except Exception:          # unreachable, refused, or not a price list: never fails a run
            self._failed_at = time.time()
            return
        self._prices, self._loaded_at = prices, time.time()
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.cache_file.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"fetched_at": self._loaded_at, "url": self.url, "data": data}), encoding="utf-8")
            os.replace(tmp, self.cache_file)
        except OSError:
            pass

    def prices(self) -> dict[str, tuple[float, float, float, float]]:
        """Blocking (file and network): call it from a worker thread."""
        with self._lock:
            if self._prices is None:
                self._read_cache()
            now = time.time()
            if now - self._loaded_at > MAX_AGE_S and now - self._failed_at > RETRY_S:
                self._fetch()
            return self._prices or {}

    def cost(self, model: str, tokens_in: int, tokens_out: int, cached_in: int = 0) -> float | None:
        price = self.prices().get(model)
        if price is None:
            return None
        prompt, completion, request, cache_read = price
        if prompt < 0 or completion < 0:       # dynamic routers (openrouter/auto) list -1: no price
            return None
        cache_read = cache_read if cache_read >= 0 else prompt
        return (tokens_in - cached_in) * prompt + cached_in * cache_read + tokens_out * completion + request


def _parse(data: list[Any]) -> dict[str, tuple[float, float, float, float]]:
    out = {}
    for model in data:
        pricing = model.get("pricing") or {}
        try:
            prompt, completion = float(pricing["prompt"]), float(pricing["completion"])
        except (KeyError, TypeError, ValueError):
            continue
        request = float(pricing.get("request") or 0)
        cache_read = float(pricing.get("input_cache_read") or -1)
        out[str(model["id"])] = (prompt, completion, request, cache_read)
    return out


def genai_cost(catalog: str | None, model: str, tokens_in: int, tokens_out: int, cached_in: int = 0) -> float | None:
    """The genai-prices table (bundled, offline); None when it does not know the model."""
    try:
        from genai_prices import Usage, calc_price
    except ImportError:
        return None
    usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out, cache_read_tokens=cached_in or None)
    if not catalog:       # an endpoint we do not know: a vendor's list price would be a guess
        return None
    try:
        return float(calc_price(usage, model_ref=model, provider_id=GENAI_PROVIDER.get(catalog, catalog)).total_price)
    except Exception:        # unknown provider or model
        return None
