"""The HTTP client of chat completions: httpx's API over aiohttp's connection pool (the httpx-aiohttp transport).

httpx's own pool cost 6 to 12 ms of CPU per call at 100 calls in flight, over aiohttp's about 0.5 ms
(docs/performance.md). httpx's
settings hold as they do for any httpx client: proxies from HTTP_PROXY / HTTPS_PROXY / ALL_PROXY less
NO_PROXY (or the provider's `proxy`), certificates from SSL_CERT_FILE / SSL_CERT_DIR (or the provider's
`verify`: false, or a CA bundle). One client per provider and event loop (aiohttp's connections belong to
the loop that opened them), its pool sized to the calls the provider has in flight.

An answer is read as a stream and counted after decompression: past `max_answer` bytes the reading stops
(`AnswerTooLarge`), so a small gzip body that inflates to gigabytes takes no more memory than the limit.
A POST is never sent twice here: a dropped connection is the caller's to retry.
"""
from __future__ import annotations

import asyncio
import functools
import os
import ssl
import zlib
from pathlib import Path
from typing import Any

import aiohttp  # imported with the provider (at the series start), not in its first call
import httpx
from httpx_aiohttp import HttpxAiohttpClient

MAX_ANSWER = 16 << 20        # bytes of an answer after decompression (params: max_answer_mb)
STEP = 1 << 16               # the most one inflating step writes


class HTTPTimeout(Exception):
    """No answer within the timeout."""


class HTTPTransportError(Exception):
    """The connection failed or was dropped, or the answer is not HTTP or not decodable. `refused`: nothing
    listens at the address (the connection was refused)."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


class AnswerTooLarge(Exception):
    """The answer is longer than the limit, counted after decompression."""


def tls_setting(verify: object, root: Path) -> bool | ssl.SSLContext:
    """The provider's `verify`: true (the system's or SSL_CERT_FILE's certificates, as httpx reads them),
    false (no verification), or the path of a CA bundle (a file or a folder), relative to the module root."""
    if isinstance(verify, bool):
        return verify
    if not isinstance(verify, str) or not verify:
        raise ValueError(f"verify must be true, false or the path of a CA bundle, not {verify!r}")
    path = root / verify
    if not path.exists():
        raise ValueError(f"verify: no CA bundle at {path}")
    try:
        return ssl.create_default_context(capath=str(path)) if path.is_dir() else \
            ssl.create_default_context(cafile=str(path))
    except (ssl.SSLError, OSError) as exc:
        raise ValueError(f"verify: {path} is not a CA bundle ({exc})") from None


class _Cookies(httpx.Cookies):
    """httpx's cookie jar, which reads an answer's cookies only when it sets one: the jar reads them through a
    urllib request built from the httpx one, 18 µs a call, and a chat completion rarely sets a cookie."""

    def extract_cookies(self, response: httpx.Response) -> None:
        if "set-cookie" in response.headers or "set-cookie2" in response.headers:
            super().extract_cookies(response)


class _HttpxClient(HttpxAiohttpClient):
    """httpx's AsyncClient over aiohttp's pool, with the jar above (httpx reads `cookies` at every answer)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cookies = kwargs.get("cookies")

    @property
    def cookies(self) -> httpx.Cookies:
        return self._jar

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._jar = _Cookies(cookies)


class Client:
    """POSTs of JSON bodies to one URL, for the event loop it is first used on."""

    def __init__(self, url: str, headers: dict[str, str], *, timeout_s: float, size: int,
                 max_answer: int = MAX_ANSWER, verify: bool | ssl.SSLContext = True, proxy: str | None = None) -> None:
        self.url = httpx.URL(url)          # parsed once, not on every call
        self.timeout_s = timeout_s
        self.max_answer = max_answer
        if verify is True:
            verify = _default_context(self.url.scheme, proxy)
        self.http = _HttpxClient(
            headers={"Accept": "application/json", "Accept-Encoding": "gzip, deflate", **headers},
            verify=verify, proxy=proxy, trust_env=True,
            # the whole exchange is bounded in post(); a read timeout would only re-arm a timer at every chunk
            timeout=httpx.Timeout(None, connect=min(10.0, timeout_s), pool=timeout_s),
            limits=httpx.Limits(max_connections=size, max_keepalive_connections=size))
        self._timeout = self.http.timeout.as_dict()

    async def post(self, body: bytes) -> httpx.Response:
        """The answer, its body read and decoded (an httpx.Response whose content is the decoded bytes)."""
        try:
            async with asyncio.timeout(self.timeout_s):      # the whole exchange, not each read
                response = await self.http.send(self._request(body), stream=True)
                try:
                    content = await self._read(response)
                    # decoded already: without Content-Encoding, httpx does not decode it again
                    headers = [(k, v) for k, v in response.headers.raw if k.lower() != b"content-encoding"]
                finally:
                    await response.aclose()
            return httpx.Response(response.status_code, headers=headers, content=content)
        except TimeoutError:
            raise HTTPTimeout(f"no answer within {self.timeout_s:g} s") from None
        except httpx.RequestError as exc:
            raise _failure(exc) from None
        except aiohttp.ClientError as exc:              # what the transport does not map to httpx's errors
            raise HTTPTransportError(f"{type(exc).__name__}: {exc}", refused=_refused(exc)) from None

    def _request(self, body: bytes) -> httpx.Request:
        """What `build_request` makes of the client's URL, headers and timeout: built here from the headers
        merged once (half its CPU), unless a server set cookies, which httpx's own building sends back."""
        if self.http.cookies:
            return self.http.build_request("POST", self.url, content=body)
        return httpx.Request("POST", self.url, headers=self.http.headers, content=body,
                             extensions={"timeout": self._timeout})

    async def _read(self, response: httpx.Response) -> bytes:
        """The decoded body, at most `max_answer` bytes of it. gzip and deflate (what the client asks for) are
        inflated here, STEP bytes at a time: httpx's decoders inflate a 16 KB chunk at once, and a bomb's chunk
        is 16 MB (three times that in zlib's buffers while it is made)."""
        limit = self.max_answer
        encoding = response.headers.get("content-encoding", "").strip().lower()
        length = response.headers.get("content-length", "")
        if not encoding and length.isdigit() and int(length) > limit:
            raise AnswerTooLarge(f"the answer is {int(length):,} bytes long, more than {limit:,} bytes")
        if not encoding:
            chunks, inflate = response.aiter_raw(), None        # identity: httpx's decoders would copy it
        elif encoding not in ("gzip", "x-gzip", "deflate"):
            chunks, inflate = response.aiter_bytes(), None      # an encoding httpx decodes (counted decoded)
        else:
            chunks = response.aiter_raw()
            inflate = zlib.decompressobj(zlib.MAX_WBITS | 32)      # a gzip or zlib header
        parts, total, fed = [], 0, False
        async for chunk in chunks:
            while chunk:
                if inflate is None:
                    out, chunk = chunk, b""
                else:
                    try:
                        out = inflate.decompress(chunk, min(STEP, limit - total + 1))
                    except zlib.error:
                        if fed or encoding != "deflate":
                            raise HTTPTransportError("DecodingError: the answer's body is not valid "
                                                     f"{encoding}") from None
                        inflate = zlib.decompressobj(-zlib.MAX_WBITS)   # a raw deflate body, as some servers send
                        continue
                    fed, chunk = True, inflate.unconsumed_tail
                total += len(out)
                if total > limit:
                    raise AnswerTooLarge(f"the answer is more than {limit:,} bytes long (after decompression)")
                parts.append(out)
        return b"".join(parts)

    async def aclose(self) -> None:
        await self.http.aclose()


def _default_context(scheme: str, proxy: str | None) -> ssl.SSLContext:
    """The certificates to verify with: httpx's default (below) wherever TLS may be spoken, else, for a plain
    http:// URL that no https:// proxy carries, a context that trusts nothing and so fails closed (loading
    the CA bundle costs 0.1 to 0.3 s of CPU, and plain HTTP never uses it)."""
    proxies = [proxy or ""] + [os.environ.get(name, "") for name in
                               ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")]
    if scheme == "http" and not any(p.lower().startswith("https://") for p in proxies):
        return _trusting_nothing()
    return _trusted(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _trusting_nothing() -> ssl.SSLContext:
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)      # verifies certificates and names, knows no CA


@functools.lru_cache(maxsize=4)
def _trusted(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    """httpx's default context (SSL_CERT_FILE, SSL_CERT_DIR, else certifi's bundle), built once per process and
    setting: loading a CA bundle costs about 0.1 s of CPU, and a context serves every loop and thread."""
    return httpx.create_ssl_context(verify=True, trust_env=True)


def _failure(exc: httpx.RequestError) -> Exception:
    """httpx's error, or the aiohttp error the transport raised it from (it maps a dropped connection to
    ConnectTimeout): a timeout, or a transport error with the underlying cause's name."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    if isinstance(cause, TimeoutError) or (cause is exc and isinstance(exc, httpx.TimeoutException)):
        return HTTPTimeout(f"{type(cause).__name__}: {cause}")
    return HTTPTransportError(f"{type(cause).__name__}: {cause}", refused=_refused(cause))


def _refused(cause: BaseException) -> bool:
    """Nothing listens at the address: the OS refused the connection (aiohttp keeps the OSError it wraps)."""
    return isinstance(cause, ConnectionRefusedError) or isinstance(getattr(cause, "os_error", None),
                                                                   ConnectionRefusedError)
