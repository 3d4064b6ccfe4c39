"""`aqven.spec.schema`: JSON schemas of each file kind, for editors (`.aqven/schema/<kind>.schema.json`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .models import SPEC_MODEL_BY_KIND
from .names import SpecKind

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_DIRECTORY = Path(".aqven") / "schema"


def editor_schema(kind: SpecKind) -> dict[str, Any]:
    return {"$schema": SCHEMA_DIALECT, **SPEC_MODEL_BY_KIND[kind].json_schema(by_alias=True)}


def schema_path(root: Path, kind: SpecKind) -> Path:
    return root / SCHEMA_DIRECTORY / f"{SpecKind(kind).value.lower()}.schema.json"


def write_editor_schemas(root: Path) -> tuple[Path, ...]:
    (root / SCHEMA_DIRECTORY).mkdir(parents=True, exist_ok=True)
    written = []
    for kind in SpecKind:
        path = schema_path(root, kind)
        path.write_text(json.dumps(editor_schema(kind), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        written.append(path)
    return tuple(written)


__all__ = ["SCHEMA_DIALECT", "editor_schema", "schema_path", "write_editor_schemas"]
