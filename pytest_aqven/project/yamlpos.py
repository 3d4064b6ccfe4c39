"""Strict YAML: plain data plus a (line, column) for every key path, and diagnostics instead of
tracebacks. Anchors, aliases, explicit tags, several documents and duplicate keys are errors (as in
AQVEN); so are collections nested deeper than MAX_DEPTH and files larger than MAX_BYTES. Every YAML
pytest-aqven reads goes through here: project files, finding files, .aqven/local.yaml.

The data is built straight from the parser's events in one pass (libyaml's parser when PyYAML has it),
without composing nodes: a dataset of 100,000 cases is read in a few seconds. Positions are kept
compactly, two integers per key or list item in document order (`_Index`), and looked up through the
data only when a diagnostic asks for one."""
from __future__ import annotations

import hashlib
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode
from yaml.reader import Reader
from yaml.resolver import Resolver

from ..diagnostics import Diagnostic, DiagnosticError

Path_ = tuple[str | int, ...]


class _Index:
    """Where each key and list item starts, in document order (pre-order): `marks[o]` packs the line and
    column of entry o, `after[o]` is the first entry after o's value, i.e. o's next sibling. The first
    child of entry o's value is entry o + 1, and the root's first child is entry 0."""
    __slots__ = ("marks", "after", "_children")

    def __init__(self) -> None:
        self.marks = array("Q")
        self.after = array("Q")
        self._children: dict[int, Any] = {}     # entry -> its children's entries, for long collections

    def walk(self, entry: int, k: int) -> int:
        """The entry of the k-th child of `entry` (-1: the root)."""
        child, after = entry + 1, self.after
        for _ in range(k):
            child = after[child]
        return child

    def child(self, entry: int, k: int, count: int) -> int:
        """The same, for a finished collection of `count` children: a long one's entries are kept once
        walked, since walking it again for every diagnostic would be quadratic."""
        if count <= 16:
            return self.walk(entry, k)
        entries = self._children.get(entry)
        if entries is None:
            entries = self._children[entry] = array("Q", [self.walk(entry, 0)])
            for _ in range(count - 1):
                entries.append(self.after[entries[-1]])
        return entries[k]

    def at(self, entry: int) -> tuple[int, int]:
        packed = self.marks[entry]
        return packed >> 32, packed & 0xFFFFFFFF


@dataclass(eq=False)
class YamlDoc:
    file: str                                  # relative posix path, as diagnostics print it
    data: Any
    index: _Index | None = None                # None: a document without positions (flow.py)
    root_pos: tuple[int | None, int | None] = (None, None)
    sha256: str | None = None                  # of the bytes parsed (load_yaml): a later read is compared by content

    def pos(self, path: Path_) -> tuple[int | None, int | None]:
        """Position of the key at `path`, or of its nearest ancestor that exists."""
        found, entry, node = self.root_pos, -1, self.data
        if self.index is None:
            return found
        for seg in path:
            if isinstance(node, dict):
                if seg not in node:
                    break
                k = _key_index(node, seg)
            elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
                k = seg
            else:
                break
            entry = self.index.child(entry, k, len(node))
            found, node = self.index.at(entry), node[seg]
        return found

    def diag(self, code: str, path: Path_, message: str, hint: str | None = None) -> Diagnostic:
        line, col = self.pos(path)
        return Diagnostic(code, self.file, tuple(path), message, line, col, hint)


def _key_index(mapping: dict, key: str | int) -> int:
    for k, name in enumerate(mapping):
        if name == key:
            return k
    raise KeyError(key)


def _mark(node_or_event) -> tuple[int, int]:
    mark = node_or_event.start_mark
    return mark.line + 1, mark.column + 1


def _error(file: str, code: str, message: str, where=None, hint: str | None = None) -> DiagnosticError:
    line, col = _mark(where) if where is not None else (None, None)
    return DiagnosticError([Diagnostic(code, file, (), message, line, col, hint)])


_FAST_LOADER = getattr(yaml, "CSafeLoader", None)     # libyaml, when PyYAML was built with it


MAX_BYTES = 128 << 20      # a project file larger than this is refused unread (a 100,000-case dataset is ~30 MB)


def _too_large(file: str, size: int) -> DiagnosticError:
    return DiagnosticError([Diagnostic("E_YAML_TOO_LARGE", file, (), f"the file holds {size:,} bytes, more than the "
                                       f"{MAX_BYTES:,} a project file may hold", None, None,
                                       "split the file, or keep data this large outside the project's YAML")])


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse with libyaml when available (several times faster); a syntax error is read again by the pure
    Python parser, so that its message does not depend on how PyYAML was built. In a file larger than
    REREAD_LIMIT only the lines up to the error are read again, and when they are too many too (the
    pure-Python parser reads about 1 MB a second) libyaml's own words are reported, at its position. A
    value that SafeLoader's constructor rejects (an impossible date) is reported as libyaml's pass found
    it: the constructor, not the parser, words it."""
    if len(text) > MAX_BYTES:
        raise _too_large(file, len(text.encode("utf-8", "surrogatepass")))
    if _FAST_LOADER is not None:
        try:
            return _parse(text, file, _FAST_LOADER)
        except _ValueProblem:
            raise
        except DiagnosticError as exc:
            if exc.diagnostics[0].code != "E_YAML_SYNTAX":
                raise
            if len(text) > REREAD_LIMIT:
                raise (_early_error(text, file, exc.diagnostics[0].line) or exc) from None
    return _parse(text, file, yaml.SafeLoader)


REREAD_LIMIT = 1_000_000       # characters


def _early_error(text: str, file: str, line: int | None) -> DiagnosticError | None:
    """The pure-Python parser's first error when it lies at or before `line` (where libyaml stopped), read
    from the text up to two lines past it: a large file with a syntax error is not read twice whole.
    Its parser streams, so what it raises there it raises on the whole text too."""
    if Reader.NON_PRINTABLE.search(text):    # the pure-Python reader rejects it before parsing anything
        try:
            yaml.SafeLoader(text).dispose()
        except yaml.YAMLError as exc:
            return _syntax_error(exc, file)
    if line is None:
        return None
    cut = -1
    for _ in range(line + 2):
        cut = text.find("\n", cut + 1)
        if cut < 0 or cut >= REREAD_LIMIT:
            return None
    loader, depth = yaml.SafeLoader(text[: cut + 1]), 0
    try:
        while True:
            ev = loader.get_event()
            if isinstance(ev, (MappingStartEvent, SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    error = _depth_error(file, ev)
                    break
            elif isinstance(ev, (MappingEndEvent, SequenceEndEvent)):
                depth -= 1
            elif isinstance(ev, StreamEndEvent):
                return None
    except yaml.YAMLError as exc:
        error = _syntax_error(exc, file)
    finally:
        loader.dispose()
    found = error.diagnostics[0].line
    return error if found is not None and found <= line else None


MAX_DEPTH = 64       # far beyond any project file

_STR = Resolver.DEFAULT_SCALAR_TAG
_TYPED_FIRST = frozenset(Resolver.yaml_implicit_resolvers)   # first characters a plain scalar may be typed by
_WILDCARD = None in _TYPED_FIRST
_IMMUTABLE = (int, float, bool, type(None))


class _Builder:
    """Plain data from the parser's events. The first problem decides the diagnostic, in this order (the
    order of the earlier parse, compose and build passes): a syntax error or a nesting deeper than
    MAX_DEPTH anywhere in the file, then the first event that is not allowed (a second document, an
    anchor, an alias, an explicit tag), then the first problem of building (a key that is not a scalar,
    a duplicate key, a value that cannot be constructed)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.index = _Index()
        self.event_error: DiagnosticError | None = None
        self.build_error: DiagnosticError | None = None
        self.resolver = Resolver()
        self.constructor = SafeConstructor()
        self.typed: dict[tuple[str, str], Any] = {}     # (tag, text) -> value, for numbers, booleans and null

    def run(self, loader) -> Any:
        index, marks, after = self.index, self.index.marks, self.index.after
        get_event, typed = loader.get_event, self._typed
        data = None
        stack: list[list] = []      # frames [container, is mapping, entry holding it, pending key, its entry]
        top: list[Any] | None = None    # stack[-1]
        depth = documents = 0
        building = True
        while True:                 # the hot loop of reading a large dataset: kept flat on purpose
            ev = get_event()
            cls = ev.__class__
            if cls is ScalarEvent:
                if ev.anchor or (ev.tag is not None and ev.tag != "!" and not any(ev.implicit)):
                    self._event_problem(ev)
                    building = False
                if not building:
                    continue
                value = ev.value
                if top is not None and top[1] and top[3] is None:          # a mapping key
                    if value in top[0]:
                        first = index.at(index.walk(top[2], _key_index(top[0], value)))[0]
                        self.build_error = _error(self.file, "E_YAML_DUPLICATE_KEY",
                                                  f"key {value} appears twice in this mapping (first on line {first})",
                                                  ev, "keep one of the two entries")
                        building = False
                        continue
                    mark = ev.start_mark
                    top[3], top[4] = value, len(marks)
                    marks.append((mark.line + 1) << 32 | (mark.column + 1))
                    after.append(0)
                    continue
                if ev.implicit[0] and (_WILDCARD or value[:1] in _TYPED_FIRST):
                    value = typed(ev)
                    if value is _FAILED:
                        building = False
                        continue
                if top is None:
                    data = value
                elif top[1]:
                    top[0][top[3]] = value
                    top[3] = None
                    after[top[4]] = len(marks)
                else:
                    mark = ev.start_mark
                    after.append(len(marks) + 1)
                    marks.append((mark.line + 1) << 32 | (mark.column + 1))
                    top[0].append(value)
            elif cls is MappingStartEvent or cls is SequenceStartEvent:
                depth += 1
                if depth > MAX_DEPTH:
                    raise _depth_error(self.file, ev)
                if ev.anchor or (ev.tag is not None and ev.tag != "!" and not ev.implicit):
                    self._event_problem(ev)
                    building = False
                if not building:
                    continue
                value = {} if cls is MappingStartEvent else []
                if top is None:
                    data, entry = value, -1
                elif top[1]:
                    if top[3] is None:
                        self.build_error = _error(self.file, "E_YAML_KEY", "a mapping key must be a plain string", ev)
                        building = False
                        continue
                    entry = top[4]
                    top[0][top[3]] = value
                    top[3] = None
                else:
                    mark = ev.start_mark
                    entry = len(marks)
                    marks.append((mark.line + 1) << 32 | (mark.column + 1))
                    after.append(0)
                    top[0].append(value)
                top = [value, cls is MappingStartEvent, entry, None, 0]
                stack.append(top)
            elif cls is MappingEndEvent or cls is SequenceEndEvent:
                depth -= 1
                if building:
                    ended = stack.pop()
                    if ended[2] >= 0:
                        after[ended[2]] = len(marks)
                    top = stack[-1] if stack else None
            elif cls is StreamEndEvent:
                break
            elif cls is DocumentStartEvent:
                documents += 1
                if documents > 1:
                    self._event_problem(ev)
                    building = False
            elif cls is AliasEvent:
                self._event_problem(ev)
                building = False
        if self.event_error is not None:
            raise self.event_error
        if self.build_error is not None:
            raise self.build_error
        return data

    def _event_problem(self, ev) -> None:
        if self.event_error is not None:
            return
        if ev.__class__ is DocumentStartEvent:
            self.event_error = _error(self.file, "E_YAML_MULTI_DOC", "the file holds more than one YAML document", ev,
                                      "keep one document per file")
        elif ev.__class__ is AliasEvent:
            self.event_error = _error(self.file, "E_YAML_ANCHOR", f"alias *{ev.anchor} is not allowed", ev,
                                      "write the value out in full: project files use no anchors or aliases")
        elif ev.anchor:
            self.event_error = _error(self.file, "E_YAML_ANCHOR", f"anchor &{ev.anchor} is not allowed", ev,
                                      "write the value out in full: project files use no anchors or aliases")
        else:
            self.event_error = _error(self.file, "E_YAML_TAG", f"tag {ev.tag} is not allowed", ev,
                                      "remove the tag: project files use plain YAML values")

    def _typed(self, ev) -> Any:
        """The value SafeLoader gives a plain scalar that may not be a string (its tag resolved as
        yaml.compose does), or _FAILED."""
        value = ev.value
        tag = self.resolver.resolve(ScalarNode, value, ev.implicit)
        if tag == _STR:
            return value
        typed = self.typed.get((tag, value), _FAILED)
        if typed is not _FAILED:
            return typed
        constructor = self.constructor
        try:
            typed = constructor.construct_object(ScalarNode(tag, value, ev.start_mark, ev.end_mark), deep=True)
        except (ConstructorError, ValueError) as exc:
            if self.build_error is None:
                self.build_error = _ValueProblem(_error(self.file, "E_YAML_SYNTAX", f"invalid YAML value: {exc}",
                                                        ev).diagnostics)
            return _FAILED
        finally:
            constructor.constructed_objects.clear()
        if isinstance(typed, _IMMUTABLE) and len(self.typed) < 4096:
            self.typed[(tag, value)] = typed
        return typed


_FAILED = object()


class _ValueProblem(DiagnosticError):
    """A scalar that SafeLoader's constructor rejects."""


def _syntax_error(exc: yaml.YAMLError, file: str) -> DiagnosticError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        problem = exc.problem or exc.context or "cannot be parsed"
        return DiagnosticError([Diagnostic("E_YAML_SYNTAX", file, (), f"invalid YAML: {problem}", line, col,
                                           "fix the YAML syntax at this position")])
    return DiagnosticError([Diagnostic("E_YAML_SYNTAX", file, (), f"invalid YAML: {exc}")])


def _depth_error(file: str, ev) -> DiagnosticError:
    return _error(file, "E_YAML_DEPTH", f"the YAML nests collections deeper than {MAX_DEPTH} levels", ev,
                  "flatten the value: project files nest a few levels at most")


def _parse(text: str, file: str, loader_class) -> YamlDoc:
    builder = _Builder(file)
    loader = None
    try:
        loader = loader_class(text)       # the pure Python reader already rejects characters YAML forbids
        data = builder.run(loader)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, file) from None
    finally:
        if loader is not None:
            loader.dispose()
    return YamlDoc(file, data, builder.index)


def load_yaml(path: Path, root: Path) -> YamlDoc:
    rel = path.relative_to(root).as_posix()
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise _too_large(rel, size)
        data = path.read_bytes()
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")     # as read_text reads it
    except UnicodeDecodeError as exc:
        raise DiagnosticError([Diagnostic("E_FILE_UNREADABLE", rel, (), f"the file is not UTF-8 text (byte {exc.start} "
                                          "cannot be decoded)", hint="save the file as UTF-8")]) from None
    except OSError as exc:
        raise DiagnosticError([Diagnostic("E_FILE_UNREADABLE", rel, (), f"cannot read the file: {exc.strerror}")]) from None
    doc = parse_yaml(text, rel)
    doc.root_pos = (1, 1)
    doc.sha256 = "sha256-" + hashlib.sha256(data).hexdigest()
    return doc
