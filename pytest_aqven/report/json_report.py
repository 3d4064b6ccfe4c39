"""--aqven-json PATH: every series of the session as one JSON document (docs/report-json.schema.json)."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .data import SCHEMA_VERSION


def document(entries: list[dict]) -> dict:
    return {"schema_version": SCHEMA_VERSION, "series": entries}


def write(path: Path, entries: list[dict]) -> None:
    """Atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(document(entries), f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)
