"""Strict YAML: plain data plus a (line, column) for every key path, and diagnostics instead of
tracebacks. Anchors, aliases, explicit tags, several documents and duplicate keys are errors (as in
AQVEN); comments are allowed."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from ..check.diagnostics import Diagnostic, DiagnosticError

Path_ = tuple[str | int, ...]


@dataclass
class YamlDoc:
    file: str                                  # relative posix path, as diagnostics print it
    data: Any
    positions: dict[Path_, tuple[int, int]] = field(default_factory=dict)

    def pos(self, path: Path_) -> tuple[int | None, int | None]:
        """Position of the key at `path`, or of its nearest ancestor that exists."""
        path = tuple(path)
        while path not in self.positions and path:
            path = path[:-1]
        return self.positions.get(path, (None, None))

    def diag(self, code: str, path: Path_, message: str, hint: str | None = None) -> Diagnostic:
        line, col = self.pos(path)
        return Diagnostic(code, self.file, tuple(path), message, line, col, hint)


def _mark(node_or_event) -> tuple[int, int]:
    mark = node_or_event.start_mark
    return mark.line + 1, mark.column + 1


def _error(file: str, code: str, message: str, where=None, hint: str | None = None) -> DiagnosticError:
    line, col = _mark(where) if where is not None else (None, None)
    return DiagnosticError([Diagnostic(code, file, (), message, line, col, hint)])


_FAST_LOADER = getattr(yaml, "CSafeLoader", None)     # libyaml, when PyYAML was built with it


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse with libyaml when available (several times faster); a syntax error is read again by the pure
    Python parser, so that its message does not depend on how PyYAML was built."""
    if _FAST_LOADER is not None:
        try:
            return _parse(text, file, _FAST_LOADER)
        except DiagnosticError as exc:
            if exc.diagnostics[0].code != "E_YAML_SYNTAX":
                raise
    return _parse(text, file, yaml.SafeLoader)


MAX_DEPTH = 64       # far beyond any project file; deeper input would exhaust the recursion of composing it


def _events(text: str, file: str, loader) -> list:
    """The parser's events, stopping at the first collection nested deeper than MAX_DEPTH."""
    events, depth = [], 0
    for ev in yaml.parse(text, Loader=loader):
        if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise _error(file, "E_YAML_DEPTH", f"the YAML nests collections deeper than {MAX_DEPTH} levels", ev,
                             "flatten the value: project files nest a few levels at most")
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        events.append(ev)
    return events


def _parse(text: str, file: str, loader) -> YamlDoc:
    try:
        events = _events(text, file, loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        problem = exc.problem or exc.context or "cannot be parsed"
        raise DiagnosticError([Diagnostic("E_YAML_SYNTAX", file, (), f"invalid YAML: {problem}", line, col,
                                          "fix the YAML syntax at this position")]) from None
    except yaml.YAMLError as exc:
        raise DiagnosticError([Diagnostic("E_YAML_SYNTAX", file, (), f"invalid YAML: {exc}")]) from None
    documents = 0
    for ev in events:
        if isinstance(ev, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise _error(file, "E_YAML_MULTI_DOC", "the file holds more than one YAML document", ev,
                             "keep one document per file")
        if isinstance(ev, yaml.AliasEvent):
            raise _error(file, "E_YAML_ANCHOR", f"alias *{ev.anchor} is not allowed", ev,
                         "write the value out in full: project files use no anchors or aliases")
        if getattr(ev, "anchor", None):
            raise _error(file, "E_YAML_ANCHOR", f"anchor &{ev.anchor} is not allowed", ev,
                         "write the value out in full: project files use no anchors or aliases")
        tag = getattr(ev, "tag", None)
        implicit = getattr(ev, "implicit", True)
        explicit = tag is not None and not (implicit is True or (isinstance(implicit, tuple) and any(implicit)))
        if explicit and tag not in ("!",):
            raise _error(file, "E_YAML_TAG", f"tag {tag} is not allowed", ev,
                         "remove the tag: project files use plain YAML values")
    node = yaml.compose(text, Loader=loader)
    doc = YamlDoc(file, None)
    if node is None:
        return doc
    doc.data = _build(node, (), doc, SafeConstructor())
    return doc


def _build(node, path: Path_, doc: YamlDoc, constructor: SafeConstructor) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _error(doc.file, "E_YAML_KEY", "a mapping key must be a plain string", key_node)
            key = key_node.value
            if key in out:
                first = doc.positions.get(path + (key,), (None, None))[0]
                raise _error(doc.file, "E_YAML_DUPLICATE_KEY",
                             f"key {key} appears twice in this mapping (first on line {first})", key_node,
                             "keep one of the two entries")
            doc.positions[path + (key,)] = _mark(key_node)
            out[key] = _build(value_node, path + (key,), doc, constructor)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            doc.positions[path + (i,)] = _mark(item)
            items.append(_build(item, path + (i,), doc, constructor))
        return items
    try:
        return constructor.construct_object(node, deep=True)
    except (ConstructorError, ValueError) as exc:
        raise _error(doc.file, "E_YAML_SYNTAX", f"invalid YAML value: {exc}", node) from None


def load_yaml(path: Path, root: Path) -> YamlDoc:
    rel = path.relative_to(root).as_posix()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DiagnosticError([Diagnostic("E_FILE_UNREADABLE", rel, (), f"the file is not UTF-8 text (byte {exc.start} "
                                          "cannot be decoded)", hint="save the file as UTF-8")]) from None
    except OSError as exc:
        raise DiagnosticError([Diagnostic("E_FILE_UNREADABLE", rel, (), f"cannot read the file: {exc.strerror}")]) from None
    doc = parse_yaml(text, rel)
    doc.positions.setdefault((), (1, 1))
    return doc
