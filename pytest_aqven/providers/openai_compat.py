"""Chat completions over HTTP (httpx) for the catalog prefixes and `kind: openai_compatible`.

One pool of keep-alive connections per provider, process and event loop, shared by every concurrent
attempt and sized for the calls in flight (`base.CALLS_IN_FLIGHT`): httpx over aiohttp's transport
(http_client.py). Transport retries (429, 5xx, timeouts, dropped connections) honour Retry-After and
otherwise back off exponentially with full jitter, within a bounded total wait; other 4xx are never
retried, nor an answer past its size limit. Every retry is returned on the response (`retries`) for the
trace. Limits are shared across processes.
"""
from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from .. import storage
from .base import (
    CALLS_IN_FLIGHT,
    OUTPUT_TOOL,
    Message,
    ModelRequest,
    ModelResponse,
    Part,
    ProviderError,
    ToolCall,
    max_output_tokens,
)
from .http_client import MAX_ANSWER, AnswerTooLarge, Client, HTTPTimeout, HTTPTransportError, tls_setting
from .limits import SharedLimiter
from .pricing import PriceList, genai_cost
from .secrets import scrub

if TYPE_CHECKING:
    import ssl

    from ..project.specs import ProviderSpec
    from .catalog import Entry

RETRIABLE = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
# a lower bound of a request's input tokens: one per this many bytes of its text (ordinary text takes about
# one token per 4 bytes, so the bound is about half the real count: a call it refuses surely passes the cap)
INPUT_BYTES_PER_TOKEN = 8
DEAREST_INPUT_USD = 150e-6   # per token, above any catalog model's list price: below it no price is looked up


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 5                 # transport retries after the first request
    base_s: float = 0.5              # first backoff; doubles each retry, full jitter
    cap_s: float = 30.0              # the longest single backoff
    total_s: float = 120.0           # the most one call waits between its requests, Retry-After included
    on_rate_limit: str = "auto"      # a 429: auto (as above) | fixed (rate_wait_s, rate_retries) | fail (no retry)
    rate_wait_s: float = 10.0
    rate_retries: int = 5


class OpenAICompatProvider:
    def __init__(self, *, provider_id: str, base_url: str, api_key: str | None, catalog: str | None,
                 timeout_s: float = 60.0, retry: RetryPolicy = RetryPolicy(),
                 limiter: SharedLimiter | None = None, price_list: PriceList | None = None,
                 headers: dict[str, str] | None = None, extra_body: dict[str, Any] | None = None,
                 max_answer: int = MAX_ANSWER, verify: bool | ssl.SSLContext = True, proxy: str | None = None,
                 key_names: tuple[str, ...] = ()) -> None:
        self.provider_id = provider_id
        self.base_url = base_url
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.key_names = key_names       # the variables the key is read from: a refused key names them
        self.catalog = catalog
        self.timeout_s = timeout_s
        self.retry = retry
        self.limiter = limiter if limiter is not None and limiter.active else None
        self.price_list = price_list
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.extra_body = extra_body or {}
        self.max_answer = max_answer     # bytes of an answer after decompression
        self.verify = verify             # httpx's verify: True, False or an SSLContext
        self.proxy = proxy               # None: the environment's proxy settings
        # event loop -> (its client, the async generator that closes it)
        self._clients: dict[asyncio.AbstractEventLoop, tuple[Client, AsyncGenerator[None, None]]] = {}

    def __repr__(self) -> str:          # never shows the key
        return f"OpenAICompatProvider({self.provider_id!r}, {self.url!r})"

    async def client(self) -> Client:
        """The connection pool of the running event loop (connections cannot outlive their loop). It closes
        with its loop: an async generator of the loop holds it, and a loop's shutdown (asyncio.run's, the
        scheduler's) closes its async generators while it still runs."""
        loop = asyncio.get_running_loop()
        held = self._clients.get(loop)
        if held is None:
            for closed in [lp for lp in self._clients if lp.is_closed()]:
                del self._clients[closed]       # a loop closed without its shutdown: nothing left to close
            client = Client(self.url, self._headers, timeout_s=self.timeout_s, size=max(CALLS_IN_FLIGHT.get(), 1),
                            max_answer=self.max_answer, verify=self.verify, proxy=self.proxy)
            held = self._clients[loop] = (client, self._closes_with_loop(loop, client))
            await anext(held[1])
        return held[0]

    async def _closes_with_loop(self, loop: asyncio.AbstractEventLoop,
                                client: Client) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            self._clients.pop(loop, None)
            await client.aclose()

    async def aclose(self) -> None:
        """Close the running event loop's connections now."""
        held = self._clients.get(asyncio.get_running_loop())
        if held is not None:
            await held[1].aclose()

    # --- the call -------------------------------------------------------------------------
    async def complete(self, request: ModelRequest) -> ModelResponse:
        body = json.dumps(self.body(request)).encode()
        client = await self.client()
        retries: list[tuple[str, float]] = []
        waited = 0.0
        policy = self.retry
        attempt = 0
        refused = True                   # every try so far found nothing listening at the address
        while True:      # ends: every retry is bounded by its policy
            retry_after = None
            slot = self.limiter.slot(request.model) if self.limiter else _nothing()
            async with slot:
                started = time.perf_counter()
                try:
                    response = await client.post(body)
                    cause = None
                except HTTPTimeout:
                    cause, detail = "timeout", f"no answer within {self.timeout_s:g} s"
                    brief = detail
                except HTTPTransportError as exc:
                    cause, detail = "connection", str(exc)
                    brief = detail
                    refused = refused and exc.refused
                except AnswerTooLarge as exc:       # it would be as long again: never retried
                    message = f"{self.provider_id}: {exc} (params: max_answer_mb)"
                    raise ProviderError("answer_too_large", message, tuple(retries), public=message) from None
                latency_ms = (time.perf_counter() - started) * 1000
            if cause is None:
                status = response.status_code
                if status < 400:
                    if self.price_list is None:
                        return self.parse(request, response, latency_ms, tuple(retries))
                    # the price list may be read from disk or fetched: not on the event loop
                    return await asyncio.to_thread(self.parse, request, response, latency_ms, tuple(retries))
                detail = f"HTTP {status}: {_error_text(response)}"
                brief = f"HTTP {status}"     # the body may echo the request: held-out runs show the status only
                if status not in RETRIABLE:
                    raise ProviderError("provider_error", f"{self.provider_id}: {detail}", tuple(retries),
                                        f"{self.provider_id}: {brief}", fix=self.fix(status, request.model))
                cause = "rate_limited" if status == 429 else f"http_{status}"
                retry_after = _retry_after(response.headers.get("retry-after"))
            after = f" after {len(retries)} retries" if retries else ""
            if cause == "rate_limited" and policy.on_rate_limit != "auto":
                rate_limited = sum(1 for c, _ in retries if c == "rate_limited")
                if policy.on_rate_limit == "fail" or rate_limited >= policy.rate_retries:
                    raise ProviderError("rate_limited", f"{self.provider_id}: {detail}{after} (on_rate_limit: "
                                        f"{policy.on_rate_limit})", tuple(retries), f"{self.provider_id}: {brief}{after}")
                wait = policy.rate_wait_s
            else:
                wait = retry_after if retry_after is not None else _backoff(policy, attempt)
                if attempt >= policy.retries or waited + wait > policy.total_s:
                    code = {"timeout": "timeout", "rate_limited": "rate_limited"}.get(cause, "provider_error")
                    gave_up = after + (f" (next wait {wait:.1f} s would pass the {policy.total_s:g} s retry budget)"
                                       if attempt < policy.retries else "")
                    fix = None
                    if cause == "connection" and refused:
                        fix = f"nothing accepts connections at {self.base_url}: start the server, or correct the provider's base_url"
                    raise ProviderError(code, f"{self.provider_id}: {detail}{gave_up}", tuple(retries),
                                        f"{self.provider_id}: {brief}{gave_up}", fix=fix)
            refused = refused and cause == "connection"
            retries.append((cause, round(wait, 3)))
            waited += wait
            await asyncio.sleep(wait)
            attempt += 1

    def fix(self, status: int, model: str) -> str | None:
        """What a person changes after an HTTP status that every call would get again (None: any other)."""
        if status in (401, 403):
            return (f"the server refused the key: set a valid key in "
                    f"{' or '.join(self.key_names) or 'the provider api_key (ref:env/NAME)'}")
        if status == 404:
            return (f"the server at {self.base_url} has no model {model} or no such route: correct the agent's "
                    f"model, or the provider's base_url")
        return None

    async def input_cost(self, request: ModelRequest, left_usd: float) -> float | None:
        """A lower bound of what the request's input costs at the model's known price (None: no price is
        known), for the attempt's hard limit to refuse a call before it is sent. Calls that could not pass
        `left_usd` even on the dearest model get 0.0 without a price lookup (almost every call)."""
        size = sum(len(m.content) if isinstance(m.content, str) else
                   sum(len(p.text or "") + len(p.data or b"") for p in m.content) for m in request.messages)
        tokens = size // INPUT_BYTES_PER_TOKEN
        if tokens * DEAREST_INPUT_USD <= left_usd:
            return 0.0
        if self.price_list is None:
            return self.cost(request.model, {}, tokens, 0, 0)[0]
        return (await asyncio.to_thread(self.cost, request.model, {}, tokens, 0, 0))[0]   # may read the list

    # --- request --------------------------------------------------------------------------
    def body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": request.model, "messages": [_message(m) for m in request.messages]}
        body.update(self.extra_body)
        body.update({k: v for k, v in request.settings.items() if v is not None})
        tools = list(getattr(request, "tools", ()) or ())
        strict = getattr(request, "strict", True)
        if request.output_mode == "native" and request.output_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "output", "schema": request.output_schema, "strict": strict}}
        if tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters,
                **({"strict": strict} if t.name == OUTPUT_TOOL else {})}} for t in tools]
            if request.output_mode == "tool":
                body["tool_choice"] = "required"
        return body

    # --- response -------------------------------------------------------------------------
    def parse(self, request: ModelRequest, response: httpx.Response, latency_ms: float,
              retries: tuple[tuple[str, float], ...]) -> ModelResponse:
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            return ModelResponse(finish_reason="error", latency_ms=latency_ms, retries=retries,
                                 error=scrub(f"{self.provider_id}: the answer is not a chat completion "
                                             f"({type(exc).__name__}): {response.text[:200]}"),
                                 cost_source="unknown")
        usage = data.get("usage") or {}
        tokens_in = int(usage.get("prompt_tokens") or 0)
        tokens_out = int(usage.get("completion_tokens") or 0)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        cost, source = self.cost(request.model, usage, tokens_in, tokens_out, cached)
        most = max_output_tokens(request)   # the most it could have cost: the price list's, never a reported cost
        bound = None if most is None else self.cost(request.model, {}, tokens_in, max(most, tokens_out), cached)[0]
        finish = choice.get("finish_reason") or "stop"
        refusal = message.get("refusal")
        text = message.get("content")
        if isinstance(text, list):         # some servers answer with content parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        parsed, calls = None, []
        for raw in message.get("tool_calls") or ():
            fn = raw.get("function") or {}
            arguments = fn.get("arguments") or "{}"
            try:
                args = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                args = None
            if fn.get("name") == OUTPUT_TOOL and request.output_mode == "tool":
                # the answer itself; arguments that are not JSON go on as text, for the engine to judge
                parsed, text = (args, text) if isinstance(args, dict) else (None, arguments)
            else:
                calls.append(ToolCall(raw.get("id") or "", fn.get("name") or "",
                                      args if isinstance(args, dict) else {"_raw": arguments}))
        finish_reason = {"stop": "stop", "length": "length", "content_filter": "refusal",
                         "tool_calls": "tool_calls", "function_call": "tool_calls", "error": "error"}.get(finish, "stop")
        if finish_reason == "tool_calls" and not calls:
            finish_reason = "stop"            # only the output tool was called: that is the answer
        if refusal:
            finish_reason = "refusal"
        elif finish == "content_filter":
            refusal = "the provider's content filter stopped the answer"
        return ModelResponse(text=text, parsed=parsed, finish_reason=finish_reason, tokens_in=tokens_in,
                             tokens_out=tokens_out, cost_usd=cost, cost_source=source, latency_ms=latency_ms,
                             refusal=refusal, tool_calls=tuple(calls), retries=retries, cost_bound_usd=bound,
                             error=scrub(str(data["error"])) if finish_reason == "error" and data.get("error") else None)

    def cost(self, model: str, usage: dict[str, Any], tokens_in: int, tokens_out: int,
             cached: int) -> tuple[float | None, str]:
        """The price chain: the provider's own report, its price list, genai-prices, else unknown."""
        reported = usage.get("cost")
        if isinstance(reported, (int, float)) and not isinstance(reported, bool) and reported >= 0:
            return float(reported), "provider"
        if self.price_list is not None:
            cost = self.price_list.cost(model, tokens_in, tokens_out, cached)
            if cost is not None:
                return cost, "openrouter"
        cost = genai_cost(self.catalog, model, tokens_in, tokens_out, cached)
        if cost is not None:
            return cost, "genai_prices"
        return None, "unknown"


class _nothing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> bool:
        return False


def _backoff(policy: RetryPolicy, attempt: int) -> float:
    return random.uniform(0, min(policy.cap_s, policy.base_s * 2 ** attempt))


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def _error_text(response: httpx.Response) -> str:
    try:
        data = response.json()
        text = (data.get("error") or {}).get("message") if isinstance(data.get("error"), dict) else data.get("error")
        text = text or json.dumps(data)
    except (ValueError, AttributeError):
        text = response.text
    return scrub(str(text)[:500])


def _message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role}
    content = m.content
    out["content"] = content if isinstance(content, str) else [_part(p) for p in content]
    calls = getattr(m, "tool_calls", ())
    if calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name, "arguments": json.dumps(c.arguments)}} for c in calls]
        if out["content"] == "":
            out["content"] = None
    if getattr(m, "tool_call_id", None):
        out["tool_call_id"] = m.tool_call_id
    return out


def _data_url(part: Part) -> str:
    return f"data:{part.media_type or 'application/octet-stream'};base64,{base64.b64encode(part.data or b'').decode()}"


def _part(p: Part) -> dict[str, Any]:
    if p.kind == "text":
        return {"type": "text", "text": p.text or ""}
    if p.kind == "image":
        return {"type": "image_url", "image_url": {"url": _data_url(p)}}
    if p.kind == "audio":
        fmt = (p.media_type or "audio/wav").split("/")[-1].replace("mpeg", "mp3").replace("x-wav", "wav")
        return {"type": "input_audio", "input_audio": {"data": base64.b64encode(p.data or b"").decode(), "format": fmt}}
    if p.kind == "video":
        return {"type": "video_url", "video_url": {"url": _data_url(p)}}
    return {"type": "file", "file": {"filename": p.name or "document", "file_data": _data_url(p)}}


def build(spec: ProviderSpec, entry: Entry | None, *, root: Path, api_key: str | None,
          key_names: tuple[str, ...] = ()) -> OpenAICompatProvider:
    """From a ProviderSpec (and its catalog entry, None for openai_compatible)."""
    params = dict(spec.params or {})
    knobs = {"retries": "retries", "retry_base_s": "base_s", "retry_cap_s": "cap_s", "retry_total_s": "total_s"}
    retry = RetryPolicy(**{field: type(getattr(RetryPolicy, field))(params.pop(key))
                           for key, field in knobs.items() if key in params},
                        on_rate_limit=spec.on_rate_limit,
                        rate_wait_s=spec.retry_wait_seconds if spec.retry_wait_seconds is not None else 10.0,
                        rate_retries=spec.retry_attempts if spec.retry_attempts is not None else 5)
    timeout_s = float(params.pop("timeout_s", 60.0))
    max_answer = int(float(params.pop("max_answer_mb", MAX_ANSWER / (1 << 20))) * (1 << 20))
    if max_answer <= 0:
        raise ValueError("max_answer_mb must be above 0")
    verify = tls_setting(params.pop("verify", True), root)
    proxy = params.pop("proxy", None)
    if proxy is not None and not isinstance(proxy, str):
        raise ValueError(f"proxy must be a URL, not {proxy!r}")
    headers = {str(k): str(v) for k, v in (params.pop("headers", None) or {}).items()}
    limits = spec.limits
    limiter = None
    if limits is not None and (limits.rpm or limits.concurrency):
        limiter = SharedLimiter(storage.limits(root), spec.id, rpm=limits.rpm,
                                concurrency=limits.concurrency, lease_s=timeout_s + 60)
    base_url = spec.base_url or (entry.base_url if entry is not None else None)
    if not base_url:     # never: an openai_compatible spec has one, and so has every supported catalog entry
        raise ValueError("no base_url")
    price_list = None
    if entry is not None and entry.price_list:
        price_list = PriceList(base_url.rstrip("/") + "/models", root / ".aqven" / "cache" / f"{spec.id}-models.json")
    extra = {}
    if spec.routing:                  # OpenRouter provider routing (data_collection, zdr)
        extra["provider"] = dict(spec.routing)
    return OpenAICompatProvider(provider_id=spec.id, base_url=base_url, api_key=api_key,
                                catalog=spec.id if entry is not None else None, timeout_s=timeout_s, retry=retry,
                                limiter=limiter, price_list=price_list, headers=headers, extra_body={**extra, **params},
                                max_answer=max_answer, verify=verify, proxy=proxy, key_names=key_names)
