"""The canonical YAML of a finding, written directly: the same bytes as PyYAML's pure-Python dumper with
files.py's representers (block style, indent 2, sequences in mappings not indented, every string
double-quoted, lists of numbers on one line, unlimited width, unicode kept), at a fraction of its time.

It knows only the shapes a finding has: dicts with plain keys, lists and tuples, str, int, float, bool
and None, no object twice. Anything else raises `Unsupported`, and files.dump falls back to PyYAML itself
(tests/findings/test_emit.py compares both on random documents).
"""
from __future__ import annotations

import re
from itertools import chain
from typing import Any

from yaml import ScalarNode
from yaml.resolver import Resolver

_STR = "tag:yaml.org,2002:str"
_ESCAPES = {"\0": "0", "\x07": "a", "\x08": "b", "\x09": "t", "\x0A": "n", "\x0B": "v", "\x0C": "f",
            "\x0D": "r", "\x1B": "e", '"': '"', "\\": "\\", "\x85": "N", "\u2028": "L", "\u2029": "P"}
# what PyYAML's emitter escapes in a double-quoted scalar with allow_unicode
_ESCAPED = re.compile('["\\\\\x85\u2028\u2029\uFEFF]|[^\x20-\x7E\xA0-\uD7FF\uE000-\uFFFD]')
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,99}")
_RESOLVER = Resolver()


class Unsupported(Exception):
    """A value this emitter does not write the way PyYAML would: the caller uses PyYAML."""


def _escape(match: re.Match) -> str:
    ch = match.group()
    if ch in _ESCAPES:
        return "\\" + _ESCAPES[ch]
    code = ord(ch)
    return f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


def _quoted(text: str) -> str:
    return '"' + _ESCAPED.sub(_escape, text) + '"'


def _float(x: float) -> str:
    """SafeRepresenter.represent_float."""
    text = repr(x)
    if "e" not in text and "n" not in text:      # the common case: repr as it is
        return text
    if x != x:
        return ".nan"
    if x == float("inf"):
        return ".inf"
    if x == float("-inf"):
        return "-.inf"
    text = text.lower()
    return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text


_KEYS: dict[str, str] = {}


def _key(k: object) -> str:
    """A mapping key as files._mapping makes it: str(k), plain unless YAML would read it as another type."""
    text = str(k)
    out = _KEYS.get(text)
    if out is None:
        if not _PLAIN_KEY.fullmatch(text):
            raise Unsupported(f"key {text!r}")
        plain = _RESOLVER.resolve(ScalarNode, text, (True, False)) == _STR
        out = text if plain else f"'{text}'"
        if len(_KEYS) < 100_000:
            _KEYS[text] = out
    return out


def _scalar(x: Any) -> str:
    t = type(x)
    if t is str:
        return _quoted(x)
    if t is float:
        return _float(x)
    if t is bool:
        return "true" if x else "false"
    if t is int:
        return str(x)
    if x is None:
        return "null"
    raise Unsupported(type(x).__name__)


_NUMBER = frozenset({int, float, bool})
_NUMBER_OR_LIST = _NUMBER | {list}
# what repr writes for a list of ints and finite floats without an exponent: YAML's flow style, to the byte
_REPR_IS_YAML = re.compile(r"[-0-9., \[\]]*")


def _nested(items: list, depth: int = 0) -> list | None:
    """The lists inside `items`, at any depth, when it holds only numbers and such lists (files._numbers,
    with exact types: a subclass would be represented otherwise); else None. Level by level, at C speed."""
    types = set(map(type, items))
    if types <= _NUMBER:
        return []
    if not types <= _NUMBER_OR_LIST:
        return None
    if depth > 64:
        raise Unsupported("lists nested deeper than 64 (or a list inside itself)")
    inner = [x for x in items if type(x) is list]
    deeper = _nested(list(chain.from_iterable(inner)), depth + 1)
    return None if deeper is None else inner + deeper


def _flow(items: list, nested: list, seen: set) -> str:
    """A list of numbers (or of such lists) on one line."""
    lists = {id(items), *map(id, nested)}
    if len(lists) != 1 + len(nested) or not seen.isdisjoint(lists):
        raise Unsupported("a list twice")
    seen |= lists
    text = repr(items)
    return text if _REPR_IS_YAML.fullmatch(text) else _flow_slowly(items)


def _flow_slowly(items: list) -> str:
    """Exponents, nan, infinities and booleans as YAML writes them."""
    parts = []
    for x in items:
        t = type(x)
        parts.append(str(x) if t is int else _float(x) if t is float else _flow_slowly(x) if t is list else _scalar(x))
    return "[" + ", ".join(parts) + "]"


def _inline(value: Any, seen: set) -> str | None:
    """The value's text when it fits on the line of its key or dash, else None (a block collection)."""
    t = type(value)
    if t is dict:
        return "{}" if not value else None
    if t is list:
        if not value:
            return "[]"
        nested = _nested(value)
        return None if nested is None else _flow(value, nested, seen)
    if t is tuple:          # SafeRepresenter.represent_list: block style, even for numbers
        if not value:
            return "[]"
        seen.add(tuple)     # marks the document as one YAML reads back with lists instead
        return None
    return _scalar(value)


def _number_rows(mapping: dict, lead: str, pad: str, out: list, seen: set) -> bool:
    """A mapping whose every value is a non-empty list of numbers (a finding's per-case data) at once: one
    repr per value, one check of all their text. False, and nothing written, for any other mapping."""
    values = list(mapping.values())
    if set(map(type, values)) != {list} or not all(values):
        return False
    nested = _nested(values)       # the values and every list inside them
    if nested is None:
        return False
    lists = set(map(id, nested))
    if len(lists) != len(nested) or not seen.isdisjoint(lists):
        raise Unsupported("a list twice")
    texts = list(map(repr, values))
    if not _REPR_IS_YAML.fullmatch("".join(texts)):
        return False
    seen |= lists
    keys = list(map(_key, mapping))
    out.append(f"{lead}{keys[0]}: {texts[0]}\n")
    out += [f"{pad}{k}: {text}\n" for k, text in zip(keys[1:], texts[1:])]
    return True


def _block(value: Any, indent: int, out: list, seen: set) -> None:
    """A non-empty block mapping or sequence; its first line continues the text already in out[-1]
    when that ends with '- ' (an item of a sequence), else starts a new line at `indent`."""
    if id(value) in seen:
        raise Unsupported("an object twice")
    seen.add(id(value))
    pad = " " * indent
    first = bool(out) and out[-1].endswith("- ")
    if type(value) is dict:
        if _number_rows(value, "" if first else pad, pad, out, seen):
            return
        for k, v in value.items():
            lead = "" if first else pad
            first = False
            text = _inline(v, seen)
            if text is not None:
                out.append(f"{lead}{_key(k)}: {text}\n")
            elif type(v) is dict:
                out.append(f"{lead}{_key(k)}:\n")
                _block(v, indent + 2, out, seen)
            else:                      # a sequence in a mapping: its dashes at the key's indent
                out.append(f"{lead}{_key(k)}:\n")
                _block(v, indent, out, seen)
        return
    for item in value:
        lead = "" if first else pad
        first = False
        text = _inline(item, seen)
        if text is not None:
            out.append(f"{lead}- {text}\n")
        else:
            out.append(f"{lead}- ")
            _block(item, indent + 2, out, seen)


def dump(document: dict) -> str:
    """The canonical YAML of `document` (a non-empty dict); raises Unsupported for other shapes."""
    return dump_plain(document)[0]


def dump_plain(document: dict) -> tuple[str, bool]:
    """(the canonical YAML, whether YAML reads it back equal to `document`: no tuple in it)."""
    if type(document) is not dict or not document:
        raise Unsupported("not a non-empty mapping")
    out: list[str] = []
    seen: set = set()
    _block(document, 0, out, seen)
    return "".join(out), tuple not in seen
