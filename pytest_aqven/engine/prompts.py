"""Prompt rendering. Plain text: the instruction, then the inputs and the output fields are appended."""
from __future__ import annotations

import json
from typing import Any

from ..project import specs
from ..providers.base import Message


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text


def render(text: str, inference: specs.InferenceSpec, inputs: dict[str, Any]) -> tuple[Message, ...]:
    if is_template(text):
        raise ValueError("Liquid prompt templates are not supported by this version of pytest-aqven")
    lines = ["Inputs:"]
    for f in inference.in_:
        about = f" ({f.description})" if f.description else ""
        lines.append(f"- {f.name}{about}: {json.dumps(inputs.get(f.name), ensure_ascii=False)}")
    lines.append("")
    lines.append("Output fields (answer with one JSON object):")
    for f in inference.out:
        about = f": {f.description}" if f.description else ""
        lines.append(f"- {f.name} ({f.type}){about}")
    return Message("system", text.strip()), Message("user", "\n".join(lines))
