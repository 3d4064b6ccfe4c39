"""Simulated launch-plan searches kept in `.aqven/plans/`, one small JSON file per set of inputs, so
`pytest --collect-only` can show a search that `aqven plan` ran earlier without running it again."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any


class SearchCache:
    """A mapping from stats.plan.search_inputs(...) to (recommended cases, power); missing and damaged
    files read as absent (the search is then simply not shown, or run again)."""

    def __init__(self, root: Path) -> None:
        self.folder = root / ".aqven" / "plans"

    def _path(self, key: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()}.json"

    def get(self, key: str, default: Any = None) -> Any:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            if data["inputs"] == key:
                return int(data["cases"]), float(data["power"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return default

    def __setitem__(self, key: str, value: tuple[int, float]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"cases": int(value[0]), "power": float(value[1]), "inputs": key}), encoding="utf-8")
        os.replace(tmp, path)       # atomic: parallel searches of the same inputs write the same content
