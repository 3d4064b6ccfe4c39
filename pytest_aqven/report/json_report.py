"""--aqven-json PATH: every series of the session as one JSON document (its schema, report-json.schema.json,
ships beside this module: `SCHEMA`)."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from .data import SCHEMA_VERSION

SCHEMA = Path(__file__).with_name("report-json.schema.json")


def document(entries: list[dict]) -> dict:
    return {"schema_version": SCHEMA_VERSION, "series": entries}


def write(path: Path, entries: list[dict]) -> None:
    """Atomically (a reader never sees half a file), with the user's umask as any file they write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(document(entries), f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
