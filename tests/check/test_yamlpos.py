"""The one-pass YAML reader (project/yamlpos.py) against an oracle: the plain way of reading a document
with positions (collect the parser's events, check them, then yaml.compose and walk the nodes, keeping
every key path's position in a dict), which the reader replaced for speed. On valid and broken
documents both must give the same data, the same position for every key path, and the same
diagnostic."""
from __future__ import annotations

import random

import pytest
import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from pytest_aqven.diagnostics import Diagnostic, DiagnosticError
from pytest_aqven.project import yamlpos
from pytest_aqven.project.yamlpos import MAX_DEPTH, parse_yaml

from .showcase import FILES


def _syntax(exc, file):
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        return Diagnostic("E_YAML_SYNTAX", file, (), f"invalid YAML: {exc.problem or exc.context or 'cannot be parsed'}",
                          line, col, "fix the YAML syntax at this position")
    return Diagnostic("E_YAML_SYNTAX", file, (), f"invalid YAML: {exc}")


def _at(code, file, message, where, hint=None):
    return Diagnostic(code, file, (), message, where.start_mark.line + 1, where.start_mark.column + 1, hint)


def oracle(text: str, file: str, loader) -> tuple[object, dict] | Diagnostic:
    """(data, {key path: (line, column)}) or the diagnostic."""
    events, depth = [], 0
    try:
        for ev in yaml.parse(text, Loader=loader):
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    return _at("E_YAML_DEPTH", file, f"the YAML nests collections deeper than {MAX_DEPTH} levels", ev,
                               "flatten the value: project files nest a few levels at most")
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            events.append(ev)
    except yaml.YAMLError as exc:
        return _syntax(exc, file)
    documents = 0
    anchors = "write the value out in full: project files use no anchors or aliases"
    for ev in events:
        if isinstance(ev, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                return _at("E_YAML_MULTI_DOC", file, "the file holds more than one YAML document", ev,
                           "keep one document per file")
        if isinstance(ev, yaml.AliasEvent):
            return _at("E_YAML_ANCHOR", file, f"alias *{ev.anchor} is not allowed", ev, anchors)
        if getattr(ev, "anchor", None):
            return _at("E_YAML_ANCHOR", file, f"anchor &{ev.anchor} is not allowed", ev, anchors)
        tag, implicit = getattr(ev, "tag", None), getattr(ev, "implicit", True)
        if tag not in (None, "!") and not (implicit is True or (isinstance(implicit, tuple) and any(implicit))):
            return _at("E_YAML_TAG", file, f"tag {tag} is not allowed", ev,
                       "remove the tag: project files use plain YAML values")
    node = yaml.compose(text, Loader=loader)
    positions: dict = {}

    def build(node, path):
        if isinstance(node, yaml.MappingNode):
            out = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise DiagnosticError([_at("E_YAML_KEY", file, "a mapping key must be a plain string", key_node)])
                key = key_node.value
                if key in out:
                    raise DiagnosticError([_at("E_YAML_DUPLICATE_KEY", file, f"key {key} appears twice in this "
                                               f"mapping (first on line {positions[path + (key,)][0]})", key_node,
                                               "keep one of the two entries")])
                positions[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                out[key] = build(value_node, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                positions[path + (i,)] = (item.start_mark.line + 1, item.start_mark.column + 1)
                items.append(build(item, path + (i,)))
            return items
        try:
            return SafeConstructor().construct_object(node, deep=True)
        except (ConstructorError, ValueError) as exc:
            raise DiagnosticError([_at("E_YAML_SYNTAX", file, f"invalid YAML value: {exc}", node)]) from None

    try:
        return (build(node, ()) if node is not None else None), positions
    except DiagnosticError as exc:
        return exc.diagnostics[0]


def expected(text: str):
    """As the reader promises: libyaml when PyYAML has it, a syntax error read again by the Python parser
    (a value the constructor rejects is not a syntax error)."""
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        got = oracle(text, "f.yaml", fast)
        if not (isinstance(got, Diagnostic) and got.code == "E_YAML_SYNTAX") or got.message.startswith("invalid YAML value"):
            return got
    return oracle(text, "f.yaml", yaml.SafeLoader)


def _all_paths(data, prefix=()):
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _all_paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _all_paths(v, prefix + (i,))


def same_as_oracle(text: str) -> None:
    want = expected(text)
    try:
        doc = parse_yaml(text, "f.yaml")
    except DiagnosticError as exc:
        assert isinstance(want, Diagnostic), f"unexpected {exc.diagnostics[0].render()} for {text!r}"
        assert exc.diagnostics == [want], text
        return
    assert not isinstance(want, Diagnostic), f"missed {want.render()} for {text!r}"
    data, positions = want
    assert doc.data == data and type(doc.data) is type(data)
    for path in _all_paths(data):
        for probe in (path, path + ("missing",), path + (10**6,), path + (-1,)):
            line, col = positions.get(probe) or positions.get(path) or (None, None)
            assert doc.pos(probe) == (line, col), (probe, text)


HANDWRITTEN = [
    "", "# only a comment\n", "42\n", "- a\n- b\n", "a: 1\nb: [1, 2, {c: d}]\n", "a: &x 1\nb: *x\n", "a: *x\n",
    "a: !!str 1\n", "a: ! 12\nb: ! [1]\n", "a: !local {b: 1}\n", "a: 1\n---\nb: 2\n", "--- a\n...\n", "a: 1\na: 2\n",
    "a:\n  b: 1\n  c: 2\n  b: 3\n", "? [a]\n: 1\n", "{[1]: 2}\n", "? {a: 1}\n: x\n", "a: 2024-13-45\n", "a: 2024-01-05\n",
    "a: 0x1F\nb: 0o17\nc: 1_000\nd: 1:20\ne: .inf\nf: -.NaN\ng: ~\nh: yes\ni: Off\nj: ''\nk: null\nl: 1e3\n",
    "<<: {a: 1}\nb: <<\n", "a: =\n", "1: one\ntrue: t\nnull: n\n'q': 1\n", ": empty key\n", "a:\n- - - x\n",
    "a: [1, 2\n", "a: b: c\n", "a: &x 1\nb: [\n", "- 1\n- &a 2\n- b: c\n  d: e\n", "\ta: 1\n", "a: 'x\n",
    "a: |\n  block\n  text\nb: >\n  folded\n", "ü: ä\n€: 1\n", "a: 1\n\x00", "\ufeffa: 1\n", "%YAML 1.1\n---\na: 1\n",
    "a:\n" + "".join("  " * i + "- \n" for i in range(1, 80)), "a: " + "[" * 70 + "]" * 70 + "\n",
    "a: " + "[" * 70 + "\n", "x: &a 1\n" + "y: " + "[" * 70 + "\n", "a: 1\na: 2\nb: [\n", "a: !!int x\nb: *y\n",
    "a:\n  - {b: 1, b: 2}\n", "list:\n" + "".join(f"- {{n: {i}, m: [{i}, x]}}\n" for i in range(40)),
]


@pytest.mark.parametrize("text", HANDWRITTEN)
def test_handwritten_documents_read_as_the_oracle_reads_them(text):
    same_as_oracle(text)


BREAKERS = [": :", "[", "]", "{", "}", "&anchor ", "*alias", "!!str ", "! ", "---\n", "\t", "- ", "? ", "'", '"',
            "\x00", "key: value: other", "|\n  block", "\ufeff", "2024-02-30", "0x", "~", "<<: ", ",", "#", "\n  "]


def test_mutated_project_files_read_as_the_oracle_reads_them():
    rng = random.Random(20261130)
    texts = [text for rel, text in FILES.items() if rel.endswith(".yaml")]
    for _ in range(400):
        text = rng.choice(texts)
        for _ in range(rng.randint(1, 3)):
            lines = text.splitlines(keepends=True)
            if rng.random() < 0.3 and lines:
                i = rng.randrange(len(lines))
                text = "".join(lines[: i + 1] + [lines[i]] + lines[i + 1:])      # a duplicated line
            else:
                at = rng.randrange(len(text) + 1)
                text = text[:at] + rng.choice(BREAKERS) + text[at:]
        same_as_oracle(text)


def test_a_long_list_keeps_every_position():
    text = "cases:\n" + "".join(f"- name: c{i}\n  inputs: {{text: t{i}}}\n  expected_output:\n    label: x\n"
                                   for i in range(1000))
    doc = parse_yaml(text, "d.yaml")
    for i in (0, 17, 345, 999):
        assert doc.pos(("cases", i)) == (2 + 4 * i, 3)        # the item is its mapping, after "- "
        assert doc.pos(("cases", i, "inputs", "text")) == (3 + 4 * i, 12)
        assert doc.pos(("cases", i, "expected_output", "label")) == (5 + 4 * i, 5)
        assert doc.pos(("cases", i, "metadata")) == (2 + 4 * i, 3)
    assert doc.pos(("cases", 1000)) == (1, 1)
    same_as_oracle(text)


def _long(i: int) -> str:
    return f"- name: c{i}\n  inputs: {{text: 't{i}'}}\n  expected_output:\n    label: x\n"


def expected_large(text: str, limit: int):
    """`expected` for a file larger than the reader's REREAD_LIMIT: the Python parser's words only for an
    error at or before libyaml's line, when the lines up to two past it fit within the limit."""
    fast = oracle(text, "f.yaml", yaml.CSafeLoader)
    if not isinstance(fast, Diagnostic) or fast.code != "E_YAML_SYNTAX" or fast.message.startswith("invalid YAML value"):
        return fast
    full = oracle(text, "f.yaml", yaml.SafeLoader)
    if full.line is None:                            # the Python reader's check of every character
        return full
    reread = len("".join(text.splitlines(keepends=True)[: fast.line + 2]))
    immediate = full.code == "E_YAML_DEPTH" or (full.code == "E_YAML_SYNTAX" and "YAML value" not in full.message)
    return full if reread <= limit and immediate and full.line <= fast.line else fast


@pytest.mark.skipif(getattr(yaml, "CSafeLoader", None) is None, reason="the limit applies to libyaml's errors")
def test_errors_in_a_large_file_read_as_promised(monkeypatch):
    rng = random.Random(7)
    body = "".join(_long(i) for i in range(100))      # 400 lines: errors past the two lines read again
    for _ in range(40):
        at = rng.randrange(len(body))
        text = "cases:\n" + body[:at] + rng.choice(BREAKERS) + body[at:]
        limit = rng.choice([len(text) // 3, len(text) // 2, len(text) - 1])
        monkeypatch.setattr(yamlpos, "REREAD_LIMIT", limit)
        want = expected_large(text, limit)
        try:
            got = parse_yaml(text, "f.yaml")
        except DiagnosticError as exc:
            assert exc.diagnostics == [want], text
        else:
            assert got.data == want[0], text


def test_a_syntax_error_in_a_large_file_is_read_again_only_up_to_where_it_is(monkeypatch):
    """libyaml finds the error; the pure-Python parser words it from the lines up to it, not the whole file."""
    read = []
    python_loader = yaml.SafeLoader

    class Spy(python_loader):
        def __init__(self, stream):
            read.append(len(stream))
            super().__init__(stream)

    body = "".join(_long(i) for i in range(5000))
    text = "cases:\n" + _long(0) + "- name: [oops\n" + body
    monkeypatch.setattr(yamlpos, "REREAD_LIMIT", 10_000)
    monkeypatch.setattr(yaml, "SafeLoader", Spy)
    with pytest.raises(DiagnosticError) as raised:
        parse_yaml(text, "f.yaml")
    monkeypatch.setattr(yaml, "SafeLoader", python_loader)
    assert raised.value.diagnostics == [expected(text)]
    assert raised.value.diagnostics[0].line == 7
    if getattr(yaml, "CSafeLoader", None) is not None:
        assert read and max(read) < 1000 < len(text)
