"""The lean HTTP/1.1 client of the chat-completions provider, against raw servers on 127.0.0.1 that answer
the ways real ones do: chunked and gzip bodies, `Connection: close`, keep-alive connections the server
closes while they are idle, and the proxy environment that sends a call through httpx instead."""
from __future__ import annotations

import asyncio
import gzip
import json

import pytest

from pytest_aqven.providers.http11 import HTTPTransportError, Origin, needs_proxy
from pytest_aqven.providers.openai_compat import OpenAICompatProvider, RetryPolicy, _HttpxClient

from .test_openai_compat import request

ANSWER = {"choices": [{"message": {"role": "assistant", "content": '{"label": "positive"}'}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 3, "completion_tokens": 2, "cost": 0.001}}


class RawServer:
    """Reads one request per turn of a connection and writes `reply(n)` (the n-th request) verbatim."""

    def __init__(self, reply, close_idle: bool = False):
        self.reply = reply
        self.close_idle = close_idle        # close each connection after its answer, without saying so
        self.requests: list[bytes] = []
        self.connections = 0

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1/chat/completions"
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
                writer.write(out)
                await writer.drain()
                if b"Connection: close" in out or self.close_idle:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
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


def run(coro):
    return asyncio.run(coro)


def test_content_length_chunked_and_gzip_bodies_on_one_kept_alive_connection():
    body = json.dumps(ANSWER).encode()
    replies = {1: answer(body), 2: answer(chunked(body), "Transfer-Encoding: chunked"),
               3: answer(gzip.compress(body), "Content-Encoding: gzip")}

    async def go():
        async with RawServer(replies.get) as srv:
            origin = Origin(srv.url, {"Authorization": "Bearer k"}, size=4)
            got = [await origin.post(None, b'{"a": 1}', timeout=5, connect_timeout=5) for _ in range(3)]
            await origin.aclose()
            return srv, got
    srv, got = run(go())
    assert [r.json() for r in got] == [ANSWER] * 3 and all(r.status_code == 200 for r in got)
    assert srv.connections == 1                 # keep-alive: one connection for the three calls
    first = srv.requests[0]
    assert first.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and b"Authorization: Bearer k\r\n" in first
    assert first.endswith(b'\r\n\r\n{"a": 1}') and b"Content-Length: 8\r\n" in first


def test_a_connection_the_server_closes_is_not_reused():
    body = json.dumps(ANSWER).encode()

    async def go():
        async with RawServer(lambda n: answer(body, "Connection: close")) as srv:
            origin = Origin(srv.url, {}, size=4)
            for _ in range(2):
                assert (await origin.post(None, b"{}", timeout=5, connect_timeout=5)).json() == ANSWER
            return srv
    assert run(go()).connections == 2


def test_an_idle_connection_closed_by_the_server_is_replaced_without_an_error():
    body = json.dumps(ANSWER).encode()

    async def go():
        async with RawServer(lambda n: answer(body), close_idle=True) as srv:
            origin = Origin(srv.url, {}, size=4)
            await origin.post(None, b"{}", timeout=5, connect_timeout=5)
            assert len(origin.idle) == 1
            await asyncio.sleep(0.05)                       # the server's close arrives while it is idle
            reply = await origin.post(None, b"{}", timeout=5, connect_timeout=5)
            return srv, reply
    srv, reply = run(go())
    assert reply.json() == ANSWER and srv.connections == 2


def test_a_dropped_answer_is_an_error_never_a_silent_resend():
    async def go():
        async with RawServer(lambda n: None) as srv:
            origin = Origin(srv.url, {}, size=4)
            with pytest.raises(HTTPTransportError, match="without an answer"):
                await origin.post(None, b"{}", timeout=5, connect_timeout=5)
            return srv
    assert len(run(go()).requests) == 1


def test_garbage_instead_of_http_is_a_transport_error():
    async def go():
        async with RawServer(lambda n: b"SSH-2.0-OpenSSH\r\n\r\n") as srv:
            with pytest.raises(HTTPTransportError, match="not an HTTP answer"):
                await Origin(srv.url, {}, size=1).post(None, b"{}", timeout=5, connect_timeout=5)
    run(go())


def test_the_pool_holds_at_most_its_size_of_calls_at_once():
    body = json.dumps(ANSWER).encode()
    inflight = [0, 0]

    async def go():
        async def slow_server(reader, writer):
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    break
                await reader.readexactly(int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0]))
                inflight[0] += 1
                inflight[1] = max(inflight)
                await asyncio.sleep(0.02)
                inflight[0] -= 1
                writer.write(answer(body))
            writer.close()
        server = await asyncio.start_server(slow_server, "127.0.0.1", 0)
        origin = Origin(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/x", {}, size=3)
        await asyncio.gather(*(origin.post(None, b"{}", timeout=5, connect_timeout=5) for _ in range(12)))
        server.close()
        return origin
    origin = run(go())
    assert inflight[1] == 3 and len(origin.idle) == 3


def test_a_proxy_in_the_environment_sends_the_call_through_httpx(server, monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert not needs_proxy(server.url)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert needs_proxy(server.url.replace("127.0.0.1", "example.com"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert not needs_proxy(server.url)
    monkeypatch.delenv("NO_PROXY")
    p = OpenAICompatProvider(provider_id="local", base_url=server.url.replace("127.0.0.1", "example.com"),
                             api_key=None, catalog=None, timeout_s=2.0, retry=RetryPolicy(retries=0))

    async def client():
        return p.client()
    assert isinstance(run(client()), _HttpxClient)
