"""Prompt rendering, AQVEN's two file levels:

1. plain text (no `{{ }}` or `{% %}`): one user message, the instruction, then the inputs and the output
   fields appended;
2. Liquid (python-liquid): input fields are variables, `{{ output_format }}` places the output fields,
   `{{ variants.<slot> }}` the chosen variant text, `{% include "fragments/<name>" %}` pulls
   `fragments/<name>.md` of the project, and `{% message system|user|assistant [cache] %}...{% endmessage %}`
   splits the text into chat messages (without message blocks the whole text is one user message).

Around the rendered messages: the agent's instructions first (a system message), then the inference's
examples as user/assistant pairs; media inputs are parts of the last user message."""
from __future__ import annotations

import json
import mimetypes
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..project import specs
from ..project.paths import outside
from ..providers.base import Message, Part
from . import refs
from .sources import LIVE, Sources

MEDIA_TYPES = {"Image": "image", "Audio": "audio", "Video": "video", "Document": "document"}
_START, _SEP = "\x1e", "\x1f"      # marks around a message block in the rendered text
ROLES = ("system", "user", "assistant")


class PromptError(ValueError):
    pass


class MediaUnavailable(ValueError):
    pass


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text


def media_kind(type_ref: str) -> str | None:
    base = type_ref.rstrip("?").removesuffix("[]").rstrip("?")
    return MEDIA_TYPES.get(base)


def output_format(inference: specs.InferenceSpec, allowed: dict[str, list] | None = None) -> str:
    lines = ["Output fields (answer with one JSON object):"]
    for f in inference.out:
        about = f": {f.description}" if f.description else ""
        lines.append(f"- {f.name} ({f.type}){about}")
    for field, values in (allowed or {}).items():
        lines.append(f"Allowed values of {field}: {', '.join(map(str, values))}")
    return "\n".join(lines)


def _inputs(inference: specs.InferenceSpec, inputs: dict[str, Any]) -> str:
    lines = ["Inputs:"]
    for f in inference.in_:
        if media_kind(f.type):
            continue
        about = f" ({f.description})" if f.description else ""
        lines.append(f"- {f.name}{about}: {json.dumps(inputs.get(f.name), ensure_ascii=False)}")
    return "\n".join(lines)


def render(text: str, inference: specs.InferenceSpec, inputs: dict[str, Any], *, root: Path | None = None,
           variants: dict[str, str] | None = None, allowed: dict[str, list] | None = None,
           instructions: str | None = None, media: tuple[Part, ...] = (),
           sources: Sources = LIVE) -> tuple[Message, ...]:
    """The messages of one model call. Raises PromptError for a template that does not render.
    `text` is the prompt file, or the messages a Python prompt returned (level 3); fragments are read
    from `sources` (the series' snapshot)."""
    fmt = output_format(inference, allowed)
    if not isinstance(text, str):
        messages = rendered_messages(text)
    elif is_template(text):
        values = {k: v for k, v in inputs.items()}
        values.update(output_format=fmt, variants=variants or {})
        rendered = _liquid(text, root, values, sources)
        messages = _split(rendered)
    else:
        messages = [Message("user", f"{text.strip()}\n\n{_inputs(inference, inputs)}\n\n{fmt}")]
    if not messages or messages[-1].role != "user":
        raise PromptError("the prompt must end with a user message")
    examples = []
    for example in inference.examples:
        examples += [Message("user", json.dumps(example.in_, ensure_ascii=False)),
                     Message("assistant", json.dumps(example.out, ensure_ascii=False))]
    system = [m for m in messages if m.role == "system"]
    dialog = [m for m in messages if m.role != "system"]
    head = "\n\n".join(p for p in (instructions, *(m.text for m in system)) if p)
    out = ([Message("system", head)] if head else []) + examples + dialog
    if media:
        last = out[-1]
        out[-1] = Message("user", (Part("text", text=last.text), *media))
    return tuple(out)


def rendered_messages(rendered: Any) -> list[Message]:
    """A Python prompt's RenderedPrompt (anything with .messages of role and text or content)."""
    out = []
    for m in getattr(rendered, "messages", None) or ():
        role = getattr(m, "role", None)
        body = getattr(m, "text", None) if getattr(m, "text", None) is not None else getattr(m, "content", None)
        if role not in ROLES or not isinstance(body, str):
            raise PromptError(f"the prompt function returned a message that is not (role, text): {m!r}")
        out.append(Message(role, body))
    if not out:
        raise PromptError("the prompt function returned no messages (it returns RenderedPrompt(messages=...))")
    return out


def _liquid(text: str, root: Path | None, values: dict[str, Any], sources: Sources = LIVE) -> str:
    from liquid.exceptions import LiquidError

    try:
        return _template(text, str(root) if root else "", sources).render(**values)
    except LiquidError as exc:
        raise PromptError(f"the prompt template does not render: {exc}") from None


def render_text(text: str, root: Path | None, values: dict[str, Any], sources: Sources = LIVE) -> str:
    """A variant text: Liquid when it is a template, else as written."""
    return _liquid(text, root, values, sources) if is_template(text) else text


def _split(rendered: str) -> list[Message]:
    if _START not in rendered:
        return [Message("user", rendered.strip())] if rendered.strip() else []
    out, loose = [], []
    for i, chunk in enumerate(rendered.split(_START)):
        if i % 2 == 0:
            loose.append(chunk)
            continue
        role, _, body = chunk.partition(_SEP)
        if body.strip():
            out.append(Message(role, body.strip()))
    if "".join(loose).strip():
        raise PromptError("the prompt template has text outside its {% message %} blocks")
    return out


@lru_cache(maxsize=256)
def _template(text: str, root: str, sources: Sources):
    """Parsed once per text, project and snapshot: parsing is the slow part of Liquid."""
    return _environment(root, sources).from_string(text)


def environment(root: Path, sources: Sources = LIVE):
    """The Liquid environment prompts render in (its tags and its fragment loader); `aqven check` parses
    with it too, so a template that passes the check is one the engine reads."""
    return _environment(str(root), sources)


@lru_cache(maxsize=16)
def _environment(root: str, sources: Sources):
    from pathlib import PurePosixPath

    from liquid import Environment
    from liquid.ast import Node
    from liquid.exceptions import LiquidSyntaxError, TemplateNotFoundError
    from liquid.loader import BaseLoader, TemplateSource
    from liquid.parser import get_parser
    from liquid.tag import Tag
    from liquid.token import TOKEN_EOF, TOKEN_TAG

    class MessageNode(Node):
        __slots__ = ("role", "block")

        def __init__(self, token, role, block):
            super().__init__(token)
            self.role, self.block = role, block

        def render_to_output(self, context, buffer) -> int:
            buffer.write(f"{_START}{self.role}{_SEP}")
            self.block.render(context, buffer)
            buffer.write(_START)
            return False

        async def render_to_output_async(self, context, buffer) -> int:
            return self.render_to_output(context, buffer)

        def children(self, static_context, *, include_partials=True):
            yield self.block

    class MessageTag(Tag):
        name, end, node_class = "message", "endmessage", MessageNode

        def parse(self, stream):
            token = stream.eat(TOKEN_TAG)
            words = [t.value for t in stream.into_inner(tag=token).tokens if t.kind == "word"]
            if not words or words[0] not in ROLES or words[1:] not in ([], ["cache"]):
                raise LiquidSyntaxError(f"message takes a role ({', '.join(ROLES)}) and an optional cache, "
                                        f"not {' '.join(words) or 'nothing'}", token=token)
            block = get_parser(self.env).parse_block(stream, frozenset(("endmessage", TOKEN_EOF)))
            stream.expect(TOKEN_TAG, value="endmessage")
            return MessageNode(token, words[0], block)

    def _outside(exc: TemplateNotFoundError) -> TemplateNotFoundError:
        exc.outside = True          # type: ignore[attr-defined]  # aqven check reports it as E_PATH_OUTSIDE
        return exc

    class SnapshotLoader(BaseLoader):
        """`{% include "fragments/<name>" %}`: `<root>/fragments/<name>.md`, read from the snapshot."""

        def get_source(self, env, template_name, *, context=None, **kwargs):
            rel = PurePosixPath(template_name)
            if not rel.name or rel.is_absolute() or ".." in rel.parts:
                raise _outside(TemplateNotFoundError(f"{template_name} (it goes outside the project: refused)"))
            if not rel.suffix:
                rel = rel.with_suffix(".md")
            path = Path(root or ".", rel)
            if root and sources.outside(Path(root), path) is not None:    # a symlink out of the project
                raise _outside(TemplateNotFoundError(f"{template_name} (it resolves outside the project: refused)"))
            try:
                text = sources.read_text(path)
            except (OSError, UnicodeDecodeError):
                raise TemplateNotFoundError(template_name) from None
            return TemplateSource(text, rel.as_posix(), None)

    env = Environment(loader=SnapshotLoader())
    env.add_tag(MessageTag)
    return env


def variant_texts(inference: specs.InferenceSpec, inputs: dict[str, Any], folder: Path, stem: str,
                  root: Path | None, sources: Sources = LIVE) -> dict[str, str]:
    """`variants: {slot: {on, cases, default}}` -> slot -> the text chosen by the input, rendered."""
    out = {}
    for slot, spec in inference.variants.items():
        try:
            selector = refs.resolve(refs.parse(spec.selector), {"in": inputs})
        except refs.RefError as exc:
            raise PromptError(f"variant slot {slot}: on: {exc}") from None
        name = spec.cases.get(selector) if isinstance(selector, str) else None
        if name is None:
            name = spec.default
        if name is None:
            raise PromptError(f"variant slot {slot}: no variant for {selector!r} and no default")
        path = folder / f"{stem}.variants" / slot / f"{name}.md"
        problem = sources.outside(root, path) if root is not None else None
        if problem is not None:
            raise PromptError(f"variant slot {slot}: {path.name} {problem}: refused")
        try:
            text = sources.read_text(path)
        except OSError as exc:
            raise PromptError(f"variant slot {slot}: cannot read {path.name}: {exc.strerror}") from None
        out[slot] = render_text(text, root, inputs, sources)
    return out


def media_parts(inference: specs.InferenceSpec, inputs: dict[str, Any], root: Path) -> tuple[Part, ...]:
    """Media inputs ({"$media": mime, "file": "@root/<path>"}) read from the project as content parts."""
    parts = []
    for f in inference.in_:
        kind = media_kind(f.type)
        value = inputs.get(f.name)
        if kind is None or value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict) or "file" not in item:
                raise MediaUnavailable(f"input {f.name}: a media value reads {{\"$media\": <type>, \"file\": \"@root/...\"}}")
            rel = str(item["file"]).removeprefix("@root/")
            path = root / rel
            problem = outside(root, path)
            if problem is not None:
                raise MediaUnavailable(f"input {f.name}: {item['file']} {problem}: refused")
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise MediaUnavailable(f"input {f.name}: cannot read {item['file']}: {exc.strerror}") from None
            media_type = item.get("$media") or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            parts.append(Part(kind, media_type=media_type, data=data, name=path.name))
    return tuple(parts)
