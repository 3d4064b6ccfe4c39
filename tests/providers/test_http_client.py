"""The chat-completions HTTP client (httpx over aiohttp's transport) against raw servers on 127.0.0.1 that answer
the ways real ones do: chunked and gzip bodies, `Connection: close`, keep-alive connections the server closes
while they are idle, dropped answers, answers that never end, a gzip bomb, TLS with a self-signed CA, and a
proxy named by the environment or the provider."""
from __future__ import annotations

import asyncio
import gzip
import json
import ssl
import struct
import tracemalloc
import zlib

import httpx
import pytest
import trustme

from pytest_aqven.providers.base import ProviderError
from pytest_aqven.providers.http_client import MAX_ANSWER, AnswerTooLarge, Client, HTTPTimeout, HTTPTransportError
from pytest_aqven.providers.openai_compat import OpenAICompatProvider, RetryPolicy, build

from .test_openai_compat import request, spec

ANSWER = {"choices": [{"message": {"role": "assistant", "content": '{"label": "positive"}'}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 3, "completion_tokens": 2, "cost": 0.001}}
BODY = json.dumps(ANSWER).encode()


class RawServer:
    """Reads one request per turn of a connection and writes `reply(n)` (the n-th request) verbatim: bytes, or
    a list of bytes written with a pause between them; None drops the connection without an answer."""

    def __init__(self, reply, close_idle: bool = False, tls: ssl.SSLContext | None = None, pause: float = 0.1):
        self.reply = reply
        self.close_idle = close_idle        # close each connection after its answer, without saying so
        self.tls = tls
        self.pause = pause
        self.requests: list[bytes] = []
        self.connections = 0

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/chat/completions"
        return self

    async def __aexit__(self, *exc):
        self.server.close()

    async def _serve(self, reader, writer):
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                self.requests.append(head + await reader.readexactly(length))
                out = self.reply(len(self.requests))
                if out is None:                  # drop the connection without an answer
                    break
                for i, part in enumerate(out if isinstance(out, list) else [out]):
                    if i:
                        await asyncio.sleep(self.pause)
                    writer.write(part)
                    await writer.drain()
                if b"Connection: close" in out or self.close_idle:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, asyncio.CancelledError):
            pass            # the client went, or the test's loop ends
        finally:
            writer.close()


def answer(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    if not any(h.lower().startswith("transfer-encoding") for h in headers):
        head += f"Content-Length: {len(body)}\r\n"
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{head}\r\n".encode() + body


def chunked(body: bytes) -> bytes:
    parts = [body[:7], body[7:]]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def gzip_bomb(mib: int) -> bytes:
    """A valid gzip body of `mib` MiB of zeros, about 1 KB per MiB: after a full flush the compressor starts
    afresh, so every MiB compresses to the same bytes and is written once, then repeated."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    end = c.flush()[:-8]                     # the final empty block, without the trailer of 2 MiB
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    return first + block * (mib - 1) + end + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)


def client(url: str, **kw) -> Client:
    return Client(url, {"Authorization": "Bearer k", "Content-Type": "application/json"},
                  timeout_s=kw.pop("timeout_s", 5.0), size=kw.pop("size", 4), **kw)


def run(coro):
    return asyncio.run(coro)


def test_content_length_chunked_gzip_and_deflate_bodies_on_one_kept_alive_connection():
    raw_deflate = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    replies = {1: answer(BODY), 2: answer(chunked(BODY), "Transfer-Encoding: chunked"),
               3: answer(gzip.compress(BODY), "Content-Encoding: gzip"),
               4: answer(chunked(gzip.compress(BODY)), "Content-Encoding: gzip", "Transfer-Encoding: chunked"),
               5: answer(zlib.compress(BODY), "Content-Encoding: deflate"),
               6: answer(raw_deflate.compress(BODY) + raw_deflate.flush(), "Content-Encoding: deflate")}

    async def go():
        async with RawServer(replies.get) as srv:
            c = client(srv.url)
            got = [await c.post(b'{"a": 1}') for _ in replies]
            await c.aclose()
            return srv, got
    srv, got = run(go())
    assert [r.json() for r in got] == [ANSWER] * len(replies) and all(r.status_code == 200 for r in got)
    assert srv.connections == 1                 # keep-alive: one connection for the three calls
    first = srv.requests[0]
    assert first.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and first.endswith(b'\r\n\r\n{"a": 1}')
    assert {b"authorization: bearer k", b"content-length: 8", b"accept: application/json"} <= set(first.lower().split(b"\r\n"))


def test_a_request_is_what_httpx_builds_and_a_cookie_the_server_sets_goes_back():
    """Client._request builds the request from the headers merged once: the same bytes as httpx's own
    build_request; once a server set a cookie, httpx's building sends it back, as an httpx client does."""
    replies = {1: answer(BODY), 2: answer(BODY, "Set-Cookie: lb=node7; Path=/"), 3: answer(BODY)}

    async def go():
        async with RawServer(replies.get) as srv:
            c = client(srv.url)
            built = c.http.build_request("POST", c.url, content=b'{"a": 1}')
            ours = c._request(b'{"a": 1}')
            assert list(ours.headers.raw) == list(built.headers.raw) and ours.url == built.url
            assert ours.extensions == built.extensions and ours.content == built.content
            got = [await c.post(b'{"a": 1}') for _ in replies]
            await c.aclose()
            return srv, got
    srv, got = run(go())
    assert [r.json() for r in got] == [ANSWER] * 3 and srv.connections == 1
    cookies = [[line for line in r.split(b"\r\n") if line.lower().startswith(b"cookie:")] for r in srv.requests]
    assert cookies == [[], [], [b"cookie: lb=node7"]]


def test_the_jar_reads_an_answers_cookies_only_when_it_sets_one(monkeypatch):
    """httpx reads every answer's cookies through a urllib request built from the httpx one (18 µs a call):
    the client's jar builds it only for an answer with a Set-Cookie header, and keeps what that sets."""
    read = []
    real = httpx.Cookies.extract_cookies
    monkeypatch.setattr(httpx.Cookies, "extract_cookies", lambda self, response: (read.append(response),
                                                                                  real(self, response))[1])
    replies = {1: answer(BODY), 2: answer(BODY, "set-cookie: lb=node7; Path=/"), 3: answer(BODY)}

    async def go():
        async with RawServer(replies.get) as srv:
            c = client(srv.url)
            got = [await c.post(b"{}") for _ in replies]
            jar = dict(c.http.cookies)
            await c.aclose()
            return got, jar
    got, jar = run(go())
    assert [r.json() for r in got] == [ANSWER] * 3
    assert [r.status_code for r in read] == [200] and jar == {"lb": "node7"}


def test_a_connection_the_server_closes_is_not_reused():
    async def go():
        async with RawServer(lambda n: answer(BODY, "Connection: close")) as srv:
            c = client(srv.url)
            for _ in range(2):
                assert (await c.post(b"{}")).json() == ANSWER
            await c.aclose()
            return srv
    assert run(go()).connections == 2


def test_an_idle_connection_closed_by_the_server_is_replaced_without_an_error():
    async def go():
        async with RawServer(lambda n: answer(BODY), close_idle=True) as srv:
            c = client(srv.url)
            await c.post(b"{}")
            await asyncio.sleep(0.05)                       # the server's close arrives while it is idle
            reply = await c.post(b"{}")
            await c.aclose()
            return srv, reply
    srv, reply = run(go())
    assert reply.json() == ANSWER and srv.connections == 2 and len(srv.requests) == 2


def test_a_dropped_answer_is_an_error_never_a_silent_resend():
    async def go():
        async with RawServer(lambda n: None) as srv:
            c = client(srv.url)
            with pytest.raises(HTTPTransportError, match="ServerDisconnected"):
                await c.post(b"{}")
            await c.aclose()
            return srv
    assert len(run(go()).requests) == 1


def test_garbage_instead_of_http_or_of_its_gzip_body_is_a_transport_error():
    async def go(reply: bytes, match: str):
        async with RawServer(lambda n: reply) as srv:
            c = client(srv.url)
            with pytest.raises(HTTPTransportError, match=match):
                await c.post(b"{}")
            await c.aclose()
    run(go(b"SSH-2.0-OpenSSH\r\n\r\n", "Bad status line"))
    run(go(answer(b"not gzip at all", "Content-Encoding: gzip"), "not valid gzip"))


def test_an_answer_that_never_ends_times_out_on_the_whole_exchange():
    """The timeout bounds the whole exchange, not each read: a server trickling its body never holds a call."""
    trickle = [answer(BODY)[:-len(BODY)]] + [b" "] * 30 + [BODY]

    async def go():
        async with RawServer(lambda n: trickle, pause=0.05) as srv:
            c = client(srv.url, timeout_s=0.4)
            with pytest.raises(HTTPTimeout):
                await c.post(b"{}")
            await c.aclose()
    run(go())


def test_the_pool_holds_at_most_its_size_of_calls_at_once():
    inflight = [0, 0]

    async def go():
        async def slow_server(reader, writer):
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                await reader.readexactly(int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0]))
                inflight[0] += 1
                inflight[1] = max(inflight)
                await asyncio.sleep(0.02)
                inflight[0] -= 1
                writer.write(answer(BODY))
            writer.close()
        server = await asyncio.start_server(slow_server, "127.0.0.1", 0)
        c = client(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/x", size=3)
        await asyncio.gather(*(c.post(b"{}") for _ in range(12)))
        await c.aclose()
        server.close()
    run(go())
    assert inflight[1] == 3


def test_a_gzip_bomb_stops_at_the_limit_after_decompression_without_taking_memory():
    """A 1 MB gzip body of 1 GiB: reading stops past 16 MiB of decoded bytes, and the call's memory stays near
    the limit, never near the GiB."""
    assert gzip.decompress(gzip_bomb(3)) == bytes(3 << 20)          # the bomb is valid gzip
    bomb = gzip_bomb(1024)
    assert len(bomb) < 2 << 20

    async def go():
        async with RawServer(lambda n: answer(bomb, "Content-Encoding: gzip")) as srv:
            c = client(srv.url)
            tracemalloc.start()
            try:
                with pytest.raises(AnswerTooLarge, match="more than 16,777,216 bytes"):
                    await c.post(b"{}")
                return tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
                await c.aclose()
    peak = run(go())
    assert MAX_ANSWER == 16 << 20 and peak < MAX_ANSWER + (4 << 20), peak


def test_an_answer_past_the_limit_is_answer_too_large_and_never_retried(tmp_path):
    big = json.dumps({**ANSWER, "pad": "x" * (2 << 20)}).encode()

    async def go(body: bytes, *headers: str):
        async with RawServer(lambda n: answer(body, *headers)) as srv:
            provider = build(spec(id="local", kind="openai_compatible", base_url=srv.url.rsplit("/", 2)[0],
                                  params={"max_answer_mb": 1, "retries": 3}), None, root=tmp_path, api_key=None)
            try:
                with pytest.raises(ProviderError) as info:
                    await provider.complete(request())
            finally:
                await provider.aclose()
            return info.value, len(srv.requests)
    for body, headers in ((big, ()), (gzip.compress(big), ("Content-Encoding: gzip",))):
        error, requests = run(go(body, *headers))
        assert error.code == "answer_too_large" and error.retries == () and requests == 1
        assert "more than 1,048,576 bytes" in str(error) and "max_answer_mb" in str(error)


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A self-signed CA, its PEM file, and a server context for 127.0.0.1 signed by it."""
    ca = trustme.CA()
    folder = tmp_path_factory.mktemp("tls")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server)
    return folder, server


def test_tls_with_a_self_signed_ca_from_ssl_cert_file_or_the_providers_verify(tls, tmp_path, monkeypatch):
    folder, server_context = tls
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)

    async def call(**params):
        async with RawServer(lambda n: answer(BODY), tls=server_context) as srv:
            provider = build(spec(id="local", kind="openai_compatible", base_url=srv.url.rsplit("/", 2)[0],
                                  params={"retries": 0, **params}), None, root=folder, api_key=None)
            try:
                return await provider.complete(request())
            finally:
                await provider.aclose()

    monkeypatch.setenv("SSL_CERT_FILE", str(folder / "ca.pem"))
    assert run(call()).outcome == "ok"                        # the environment's CA bundle, as httpx reads it
    monkeypatch.delenv("SSL_CERT_FILE")
    with pytest.raises(ProviderError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed") as info:
        run(call())                                          # the default bundle does not know this CA
    assert info.value.code == "provider_error"
    assert run(call(verify="ca.pem")).outcome == "ok"         # the provider's own CA bundle, from the module root
    assert run(call(verify=False)).outcome == "ok"
    with pytest.raises(ValueError, match="no CA bundle"):
        build(spec(id="local", kind="openai_compatible", base_url="https://x/v1", params={"verify": "missing.pem"}),
              None, root=tmp_path, api_key=None)


def test_plain_http_loads_no_ca_bundle_and_its_context_trusts_nothing(tls, monkeypatch):
    """Loading the CA bundle costs 0.1 to 0.3 s of CPU: a plain http:// URL skips it, unless an https:// proxy may
    carry it. The context it gets instead verifies and knows no CA: TLS through it fails, never goes unchecked."""
    from pytest_aqven.providers.http_client import _default_context
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    folder, server_context = tls
    monkeypatch.setenv("SSL_CERT_FILE", str(folder / "ca.pem"))
    plain = _default_context("http", None)
    assert plain.cert_store_stats()["x509_ca"] == 0 and plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
    assert _default_context("https", None).cert_store_stats()["x509_ca"] >= 1
    assert _default_context("http", "https://proxy.example:3128").cert_store_stats()["x509_ca"] >= 1
    monkeypatch.setenv("HTTP_PROXY", "https://proxy.example:3128")
    assert _default_context("http", None).cert_store_stats()["x509_ca"] >= 1

    async def handshake():
        async with RawServer(lambda n: answer(BODY), tls=server_context) as srv:
            port = int(srv.url.split(":")[2].split("/")[0])
            with pytest.raises(ssl.SSLCertVerificationError):
                await asyncio.open_connection("127.0.0.1", port, ssl=plain)
    run(handshake())


def test_a_proxy_from_the_environment_or_the_provider_carries_the_call(monkeypatch, tmp_path):
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)

    async def call(base_url: str | None, env: bool = False):
        """(the response, what the proxy saw, what the server itself saw): the proxy answers as the server would."""
        async with RawServer(lambda n: answer(BODY)) as proxy, RawServer(lambda n: answer(BODY)) as direct:
            proxy_url = proxy.url.split("/v1/")[0]                  # http://127.0.0.1:port
            params = {"retries": 0}
            if env:
                monkeypatch.setenv("HTTP_PROXY", proxy_url)
            else:
                params["proxy"] = proxy_url
            provider = build(spec(id="local", kind="openai_compatible", base_url=base_url or direct.url.split("/chat")[0],
                                  params=params), None, root=tmp_path, api_key=None)
            try:
                response = await provider.complete(request())
            finally:
                await provider.aclose()
            return response, proxy.requests, direct.requests

    for env in (True, False):
        response, seen, _ = run(call("http://models.invalid/v1", env=env))
        assert response.outcome == "ok" and len(seen) == 1
        assert seen[0].startswith(b"POST http://models.invalid/v1/chat/completions HTTP/1.1\r\n")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    response, seen, direct = run(call(None, env=True))
    assert response.outcome == "ok" and seen == [] and len(direct) == 1


def test_one_client_per_event_loop_closed_with_its_loop(monkeypatch):
    """Each loop gets its own client (aiohttp's connections belong to their loop); the loop's shutdown
    (asyncio.run's) closes it: nothing is left open, and no 'Unclosed client session' is reported."""
    closed = []
    monkeypatch.setattr(Client, "aclose", lambda self: _record(closed, self))

    async def go(srv_url):
        p = OpenAICompatProvider(provider_id="local", base_url=srv_url.rsplit("/", 2)[0], api_key=None,
                                 catalog=None, timeout_s=5, retry=RetryPolicy(retries=0))
        await asyncio.gather(*(p.complete(request()) for _ in range(3)))
        return p, (await p.client())

    async def serve():
        async with RawServer(lambda n: answer(BODY)) as srv:
            return await asyncio.to_thread(lambda: [asyncio.run(go(srv.url)) for _ in range(2)])
    (p1, c1), (p2, c2) = run(serve())
    assert c1 is not c2 and closed == [c1, c2] and not p1._clients and not p2._clients


async def _record(closed: list, client: Client) -> None:
    closed.append(client)
    await client.http.aclose()


def test_the_schedulers_event_loops_close_their_http_clients_when_it_closes(tmp_path):
    """pytest's thread's loop (concurrency 1) and the attempts' loop thread each have their client; closing the
    scheduler shuts both loops down, which closes both clients (no connection left open, nothing unclosed)."""
    from pytest_aqven.series.scheduler import Scheduler

    async def go():
        async with RawServer(lambda n: answer(BODY)) as srv:
            provider = OpenAICompatProvider(provider_id="local", base_url=srv.url.split("/chat")[0], api_key=None,
                                            catalog=None, timeout_s=5, retry=RetryPolicy(retries=0))
            sched = Scheduler(concurrency=4)

            def both():
                sched.here_loop().run_until_complete(provider.complete(request()))
                asyncio.run_coroutine_threadsafe(provider.complete(request()), sched.loop).result(timeout=30)
                clients = [held[0].http for held in provider._clients.values()]
                sched.close()
                return clients, dict(provider._clients)
            return await asyncio.to_thread(both)
    clients, left = run(go())
    assert len(clients) == 2 and all(c.is_closed for c in clients) and left == {}
