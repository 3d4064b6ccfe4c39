"""A real HTTP server on 127.0.0.1 that speaks OpenAI chat completions, with scripted faults.

Each request to /v1/chat/completions (or /api/v1/chat/completions) takes the next fault scripted for
its model (`server.script(model, "429:1", "ok")`), else the fault `server.broken` holds for the model (every
request, until it is removed), else answers normally. Faults:

  ok               a normal answer (the responder's content), usage with cost when `server.with_cost`
  delay:<s>        answer after s seconds
  429[:<s>]        429 Too Many Requests, Retry-After: s when given
  500 / 503        a server error
  400 / 401        a client error that echoes the Authorization header back (the canary path)
  403 / 404        a refused key, an unknown model
  drop             close the connection without an answer
  timeout          say nothing for `server.hang_s` seconds (longer than the client's timeout)
  length           finish_reason length, the JSON cut in half
  refusal          an OpenAI refusal message
  content_filter   finish_reason content_filter
  malformed        HTTP 200 whose body is not JSON
  tool             a tool call: the first tool of the request, arguments from the responder
  nocost           a normal answer whose usage has no cost

A model in `server.unknown_models` is answered 404 (model not found) on every request, as a real server
answers a model it does not serve.

GET /v1/models (or /api/v1/models) serves an OpenRouter-style price list from `server.prices`.
Bounded: loopback only, bodies up to 1 MB, every wait capped, stopped by the fixture.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MAX_BODY = 1 << 20
MAX_WAIT = 10.0


def default_responder(body: dict) -> Any:
    return {"label": "positive"}


class Server:
    def __init__(self, port: int = 0):
        self.scripts: dict[str, deque[str]] = defaultdict(deque)
        self.broken: dict[str, str] = {}        # model -> the fault of every request (a configuration fault)
        self.requests: list[dict] = []          # every chat request: time, model, headers, body, fault
        self.price_requests = 0
        self.prices: dict[str, dict] = {}
        self.responder: Callable[[dict], Any] = default_responder
        self.with_cost = True
        self.cost = 0.00042
        self.prompt_tokens: Callable[[dict], int] = lambda body: 12   # the usage reported for a request's input
        self.hang_s = 3.0
        self.prices_down = False
        self.unknown_models: set[str] = set()
        self.inflight = 0
        self.max_inflight = 0                   # the most chat requests answered at once
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> "Server":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def script(self, model: str, *faults: str) -> None:
        with self._lock:
            self.scripts[model].extend(faults)

    def next_fault(self, model: str) -> str:
        with self._lock:
            queue = self.scripts.get(model)
            return queue.popleft() if queue else self.broken.get(model, "ok")

    def log(self, entry: dict) -> None:
        with self._lock:
            self.requests.append(entry)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:       # quiet
        pass

    @property
    def owner(self) -> Server:
        return self.server.owner

    def _send(self, status: int, body: bytes | dict, headers: dict | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self.owner.price_requests += 1
            if self.owner.prices_down:
                return self._send(503, {"error": {"message": "down"}})
            data = [{"id": model, "pricing": pricing} for model, pricing in self.owner.prices.items()]
            return self._send(200, {"data": data})
        self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send(404, {"error": {"message": "not found"}})
        body = json.loads(raw)
        with self.owner._lock:
            self.owner.inflight += 1
            self.owner.max_inflight = max(self.owner.max_inflight, self.owner.inflight)
        try:
            self._chat(body)
        finally:
            with self.owner._lock:
                self.owner.inflight -= 1

    def _chat(self, body: dict) -> None:
        model = body.get("model", "")
        fault = self.owner.next_fault(model)
        self.owner.log({"t": time.time(), "model": model, "fault": fault, "body": body,
                        "authorization": self.headers.get("Authorization")})
        kind, _, arg = fault.partition(":")
        if model in self.owner.unknown_models:
            return self._send(404, {"error": {"message": f"The model `{model}` does not exist", "code": "model_not_found"}})
        if kind == "delay":
            time.sleep(min(float(arg), MAX_WAIT))
            kind = "ok"
        if kind == "429":
            headers = {"Retry-After": arg} if arg else {}
            return self._send(429, {"error": {"message": "rate limited", "code": 429}}, headers)
        if kind in ("500", "503"):
            return self._send(int(kind), {"error": {"message": "upstream failed", "code": int(kind)}})
        if kind in ("400", "401"):
            echoed = self.headers.get("Authorization")
            return self._send(int(kind), {"error": {"message": f"invalid request; you sent Authorization: {echoed}"}})
        if kind in ("403", "404"):
            return self._send(int(kind), {"error": {"message": f"{kind}: no model {model} for this key"}})
        if kind == "drop":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if kind == "timeout":
            time.sleep(min(self.owner.hang_s, MAX_WAIT))
            self.close_connection = True
            return
        if kind == "malformed":
            return self._send(200, b'{"id": "x", "choices": [ this is not json')
        self._send(200, _completion(self.owner, body, kind))


def _completion(owner: Server, body: dict, kind: str) -> dict:
    content = json.dumps(owner.responder(body))
    message: dict = {"role": "assistant", "content": content}
    finish = "stop"
    if kind == "length":
        message["content"], finish = content[: len(content) // 2], "length"
    elif kind == "refusal":
        message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    elif kind == "content_filter":
        message["content"], finish = "", "content_filter"
    elif kind == "tool":
        tool = (body.get("tools") or [{"function": {"name": "missing"}}])[0]["function"]["name"]
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": tool, "arguments": content}}]}
        finish = "tool_calls"
    tokens_in = owner.prompt_tokens(body)
    usage: dict = {"prompt_tokens": tokens_in, "completion_tokens": 5, "total_tokens": tokens_in + 5}
    if owner.with_cost and kind != "nocost":
        usage["cost"] = owner.cost
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model"), "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
