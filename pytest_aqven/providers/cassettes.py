"""Record and replay model calls: one cassette file per attempt, one entry per call.

A cassette lives at `<module root>/cassettes/<experiment>/<variant>/<case>/<repeat>.json`, so every
repeat keeps its own sample. Inside, a call is keyed by a hash of the request and its index among the
attempt's calls with that same request (parallel branches may interleave; identical requests keep
their order). A replay miss is the infrastructure error cassette_miss, never a live call. Nothing
secret is recorded: no headers, and every text is scrubbed.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .base import AttemptIdentity, Message, ModelRequest, ModelResponse, Part, Provider, ProviderError, ToolCall
from .secrets import scrub_data

MODES = ("record", "replay", "record_missing")
FOLDER = "cassettes"
_SAFE = re.compile(r"^[A-Za-z0-9_.-]{1,80}$")


def _segment(name: str) -> str:
    return name if _SAFE.match(name) and name not in (".", "..") else \
        hashlib.sha256(name.encode()).hexdigest()[:16]


def request_key(provider: str, request: ModelRequest) -> str:
    def part(p: str | Part) -> str | dict[str, Any]:
        if isinstance(p, str):
            return p
        return {"kind": p.kind, "text": p.text, "media_type": p.media_type, "name": p.name,
                "sha256": hashlib.sha256(p.data).hexdigest() if p.data else None}

    def message(m: Message) -> list[Any]:
        content = m.content if isinstance(m.content, str) else [part(p) for p in m.content]
        return [m.role, content, [asdict(c) for c in getattr(m, "tool_calls", ())], getattr(m, "tool_call_id", None)]
    canonical = {"provider": provider, "model": request.model, "node": request.node,
                 "messages": [message(m) for m in request.messages], "settings": request.settings,
                 "schema": request.output_schema, "mode": request.output_mode,
                 "tools": [asdict(t) for t in getattr(request, "tools", ())], "strict": getattr(request, "strict", True)}
    return hashlib.sha256(json.dumps(canonical, sort_keys=True, default=str).encode()).hexdigest()[:32]


class Cassettes:
    """The cassette files of one module root, shared by the providers of a process."""

    def __init__(self, root: Path, mode: str) -> None:
        assert mode in MODES
        self.folder = root / FOLDER
        self.mode = mode
        self._files: dict[Path, dict[str, Any]] = {}
        self._fresh: set[Path] = set()            # record mode: files this process started anew
        self._seen: dict[tuple[AttemptIdentity, str], int] = defaultdict(int)
        self._lock = threading.Lock()

    def path(self, request: ModelRequest) -> Path:
        a = request.attempt
        return (self.folder / _segment(a.experiment or "_") / _segment(a.variant or "_") / _segment(a.case or "_")
                / f"{int(a.repeat)}.json")

    def _load(self, path: Path) -> dict[str, Any]:
        if path not in self._files:
            try:
                self._files[path] = json.loads(path.read_text(encoding="utf-8"))["calls"]
            except (OSError, ValueError, KeyError, TypeError):
                self._files[path] = {}
        return self._files[path]

    def slot(self, provider: str, request: ModelRequest) -> tuple[Path, str]:
        """The cassette file and the entry key of this call (counting this attempt's identical calls)."""
        key = request_key(provider, request)
        with self._lock:
            index = self._seen[(request.attempt, key)]
            self._seen[(request.attempt, key)] += 1
        return self.path(request), f"{key}#{index}"

    def get(self, path: Path, entry: str) -> dict[str, Any] | None:
        if self.mode == "record":
            return None
        with self._lock:
            return self._load(path).get(entry)

    def put(self, path: Path, entry: str, value: dict[str, Any]) -> None:
        with self._lock:
            if self.mode == "record" and path not in self._fresh:
                self._files[path] = {}
                self._fresh.add(path)
            calls = self._load(path)
            calls[entry] = scrub_data(value)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"version": 1, "calls": calls}, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)


def _response_dict(response: ModelResponse) -> dict[str, Any]:
    out = asdict(response)
    out.pop("retries", None)             # transport facts of the recording, not of the answer
    return out


def _response(data: Mapping[str, Any]) -> ModelResponse:
    data = dict(data)
    data["tool_calls"] = tuple(ToolCall(**c) for c in data.get("tool_calls") or ())
    known = ModelResponse.__dataclass_fields__
    return ModelResponse(**{k: v for k, v in data.items() if k in known})


class CassetteProvider:
    """Answers from the cassettes; calls the live provider only when recording (or recording what is missing)."""

    def __init__(self, provider_id: str, live: Provider | ProviderError, cassettes: Cassettes) -> None:
        self.provider_id = provider_id
        self.live = live                   # a provider, or the ProviderError that building it raised
        self.cassettes = cassettes

    async def complete(self, request: ModelRequest) -> ModelResponse:
        path, entry = self.cassettes.slot(self.provider_id, request)
        found = self.cassettes.get(path, entry)
        if found is not None:
            if "error" in found and "response" not in found:
                raise ProviderError(found["error"]["code"], found["error"]["message"])
            return _response(found["response"])
        if self.cassettes.mode == "replay":
            rel = path.relative_to(self.cassettes.folder.parent).as_posix()
            raise ProviderError("cassette_miss", f"{self.provider_id}: no recording of this {request.model} call "
                                                 f"(call {entry.split('#')[1]} with this request) in {rel}; "
                                                 "record it with --aqven-record or --aqven-record-missing")
        if isinstance(self.live, ProviderError):
            raise self.live
        record = {"provider": self.provider_id, "model": request.model, "node": request.node}
        try:
            response = await self.live.complete(request)
        except ProviderError as exc:
            self.cassettes.put(path, entry, {**record, "error": {"code": exc.code, "message": str(exc)}})
            raise
        self.cassettes.put(path, entry, {**record, "response": _response_dict(response)})
        return response
