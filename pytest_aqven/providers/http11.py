"""A lean HTTP/1.1 client for JSON POSTs on asyncio streams: keep-alive connections pooled per origin.

httpx's connection pool costs 2-5 ms of CPU per call at 32-100 calls in flight (it checks every pooled
connection with a poll on each request, which grows with the pool), more than everything else an
attempt does. This one costs a fraction of that: a pooled connection that the server closed is seen
from its stream's EOF flag (the event loop reads it as it arrives), without a system call. It speaks only what chat completions need
(Content-Length or chunked bodies, gzip/deflate, TLS with httpx's trust settings), and reads at most
`max_answer` bytes of an answer, counted after decompression; a request that must
go through a proxy (the *_PROXY variables) takes httpx instead (`needs_proxy`).
"""
from __future__ import annotations

import asyncio
import ssl
import urllib.request
import zlib
from urllib.parse import urlsplit

MAX_HEADER_LINE = 1 << 16
MAX_ANSWER = 16 << 20       # bytes of an answer's body, after decompression (a provider's max_answer_mb)


class HTTPTimeout(Exception):
    """No answer within the timeout."""


class HTTPTransportError(Exception):
    """The connection failed, was dropped, or the answer is not HTTP."""


class AnswerTooLarge(Exception):
    """The answer's body passes the limit, before or after decompression: never retried (it would again)."""


def inflate(content: bytes, encoding: str, limit: int) -> bytes:
    """The body decoded (gzip, deflate), at most `limit` bytes of it: a 2 MB gzip bomb stops at the limit
    instead of taking gigabytes of memory."""
    encoding = encoding.lower()
    if encoding in ("gzip", "x-gzip"):
        decoders = [zlib.decompressobj(16 + zlib.MAX_WBITS)]
    elif encoding == "deflate":
        decoders = [zlib.decompressobj(), zlib.decompressobj(-zlib.MAX_WBITS)]    # zlib-wrapped, or raw
    else:
        decoders = []
    for i, decoder in enumerate(decoders):
        try:
            out = decoder.decompress(content, limit + 1)
        except zlib.error:
            if i + 1 < len(decoders):
                continue
            raise
        if len(out) > limit or decoder.unconsumed_tail:
            raise AnswerTooLarge(f"the answer inflates past {limit:,} bytes ({len(content):,} bytes {encoding})")
        return out
    if len(content) > limit:
        raise AnswerTooLarge(f"the answer is {len(content):,} bytes, more than {limit:,}")
    return content


class Reply:
    """What the provider reads of an answer (the part of httpx.Response it uses)."""

    __slots__ = ("status_code", "headers", "content")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes):
        self.status_code = status_code
        self.headers = headers          # lower-case names
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self):
        import json
        return json.loads(self.content)


def needs_proxy(url: str) -> bool:
    """True when the environment routes this URL through a proxy (httpx's trust_env does the same)."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


class Origin:
    """The keep-alive connections to one scheme://host:port, for one event loop."""

    def __init__(self, url: str, headers: dict[str, str], *, size: int, max_answer: int = MAX_ANSWER):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {url}")
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = parts.scheme == "https"
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        host = self.host if parts.port is None else f"{self.host}:{parts.port}"
        self.head = "".join(f"{k}: {v}\r\n" for k, v in {
            "Host": host, "Accept": "application/json", "Accept-Encoding": "gzip, deflate",
            "Connection": "keep-alive", **headers}.items())
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.slots = asyncio.Semaphore(size)
        self.max_answer = max_answer
        self._ssl: ssl.SSLContext | None = None

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            import httpx            # the same certificates and SSL_CERT_FILE handling as the httpx path
            self._ssl = httpx.create_ssl_context()
        return self._ssl

    async def _connect(self, timeout: float):
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.open_connection(self.host, self.port, limit=MAX_HEADER_LINE,
                                                     ssl=self._context() if self.tls else None,
                                                     server_hostname=self.host if self.tls else None)
        except TimeoutError:
            raise HTTPTimeout(f"no connection within {timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise HTTPTransportError(f"ConnectError: {exc}") from None

    def _reusable(self):
        while self.idle:
            reader, writer = self.idle.pop()
            if not reader.at_eof() and reader.exception() is None and not writer.is_closing():
                return reader, writer
            writer.close()
        return None

    async def post(self, path: str | None, body: bytes, *, timeout: float, connect_timeout: float) -> Reply:
        request = (f"POST {path or self.path} HTTP/1.1\r\n{self.head}Content-Length: {len(body)}\r\n\r\n"
                   ).encode("latin-1") + body
        async with self.slots:
            try:
                async with asyncio.timeout(timeout):
                    conn = self._reusable() or await self._connect(connect_timeout)
                    return await self._exchange(conn, request)
            except TimeoutError:
                raise HTTPTimeout(f"no answer within {timeout:g} s") from None

    async def _exchange(self, conn, request: bytes) -> Reply:
        """Never sent twice: a POST the server may have received is the caller's to retry, or not."""
        reader, writer = conn
        keep = False
        try:
            writer.write(request)
            await writer.drain()
            status_line = await reader.readline()
            if not status_line:
                raise HTTPTransportError("RemoteProtocolError: the server closed the connection without an answer")
            reply, keep = await _read_reply(status_line, reader, self.max_answer)
            return reply
        except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
                zlib.error) as exc:
            raise HTTPTransportError(f"ReadError: {type(exc).__name__}: {exc}") from None
        finally:
            if keep:
                self.idle.append(conn)
            else:
                writer.close()

    async def aclose(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


async def _read_reply(status_line: bytes, reader: asyncio.StreamReader, limit: int = MAX_ANSWER) -> tuple[Reply, bool]:
    try:
        version, code, *_ = status_line.decode("latin-1").split(" ", 2)
        status = int(code)
    except ValueError:
        raise HTTPTransportError(f"RemoteProtocolError: not an HTTP answer: {status_line[:80]!r}") from None
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n"):
            break
        if not line:
            raise HTTPTransportError("RemoteProtocolError: the connection closed inside the headers")
        name, _, value = line.decode("latin-1").partition(":")
        name = name.strip().lower()
        headers[name] = f"{headers[name]}, {value.strip()}" if name in headers else value.strip()
    keep = version.upper() == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        content = await _chunked(reader, limit)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length > limit:
            raise AnswerTooLarge(f"the answer is {length:,} bytes, more than {limit:,}")
        content = await reader.readexactly(length)
    elif status in (204, 304) or 100 <= status < 200:
        content = b""
    else:
        content = await reader.read(limit + 1)     # the body ends with the connection
        keep = False
    return Reply(status, headers, inflate(content, headers.get("content-encoding", ""), limit)), keep


async def _chunked(reader: asyncio.StreamReader, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size = int((await reader.readline()).split(b";", 1)[0].strip() or b"x", 16)
        if size == 0:
            break
        total += size
        if total > limit:
            raise AnswerTooLarge(f"the answer is more than {limit:,} bytes")
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
    while (await reader.readline()) not in (b"\r\n", b"\n", b""):    # trailers
        pass
    return b"".join(parts)
