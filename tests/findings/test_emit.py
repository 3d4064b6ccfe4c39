"""The finding emitter writes the bytes PyYAML's dumper writes, on random documents of every shape."""
from __future__ import annotations

import random

import pytest
import yaml

from pytest_aqven.findings import emit, files

KEYS = ["id", "value", "a", "cost_of_pass", "flows/rate.yaml", "0123abcd", "1234567890123456", "0b1010",
        "012", "0912", "1.0", "1.0.0", "true", "True", "yes", "no", "on", "null", "Null", "y", "n", "x_y-z",
        "_x", "9e5", "2026-11-30", "12:30", "a b", "a: b", "#x", "-x", ".inf", "é", "k" * 130, "", "~"]
STRINGS = ["", "plain", "with \"quotes\" and \\ back", "line\nbreak\ttab\r", "nul\0bell\x07esc\x1b",
           "\x85\u2028\u2029\ufeff\xa0", "é ü 東京 ✓", "emoji 🎉", "\ud800 lone", "\x7f\x80\x9f", " lead", "trail ",
           "- dash", "#hash", "a: b", "'single'", "x" * 500]
FLOATS = [0.0, -0.0, 1.0, 0.5, -2.25, 1e-05, 1e16, 1.5e300, 5e-324, float("nan"), float("inf"), float("-inf"),
          0.1 + 0.2, 123456789.123]


def _scalar(rng: random.Random):
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(STRINGS) + (rng.choice(STRINGS) if rng.random() < 0.3 else "")
    if kind == 1:
        return rng.choice(FLOATS) if rng.random() < 0.5 else rng.uniform(-1e6, 1e6)
    if kind == 2:
        return rng.choice([0, 1, -7, 2**53, 10**30, rng.randrange(-10**6, 10**6)])
    if kind == 3:
        return rng.random() < 0.5
    if kind == 4:
        return None
    return rng.choice(STRINGS)


def _numbers(rng: random.Random, depth: int):
    items = []
    for _ in range(rng.randrange(0, 5)):
        if depth and rng.random() < 0.3:
            items.append(_numbers(rng, depth - 1))
        else:
            items.append(rng.choice([rng.randrange(100), rng.choice(FLOATS), rng.random() < 0.5]))
    return items


def _value(rng: random.Random, depth: int):
    roll = rng.random()
    if depth <= 0 or roll < 0.45:
        return _scalar(rng)
    if roll < 0.6:
        return _numbers(rng, 2)
    if roll < 0.8:
        return [_value(rng, depth - 1) for _ in range(rng.randrange(0, 4))]
    return _mapping(rng, depth - 1)


def _mapping(rng: random.Random, depth: int):
    keys = KEYS[:24]      # keys the emitter writes itself, plain or quoted
    return {rng.choice(keys): _value(rng, depth) for _ in range(rng.randrange(0, 5))}


def test_same_bytes_as_pyyaml():
    fast = 0
    for seed in range(400):
        rng = random.Random(seed)
        document = _mapping(rng, 4) or {"k": 1}
        if seed % 5 == 0:
            document["weird"] = {rng.choice(KEYS): 1}
        if seed % 7 == 0:
            shared = [1, 2]
            document["twice"] = [shared, {"again": shared}]      # PyYAML writes an anchor: the fallback does
        if seed % 11 == 0:
            document["tuple"] = (1, "two")
        expected = files.pyyaml_dump(document)
        assert files.dump(document) == expected, seed
        try:
            assert emit.dump(document) == expected, seed
            fast += 1
        except emit.Unsupported:
            pass
    assert fast > 200       # most documents take the fast path: the comparison means something


def test_a_finding_shaped_document_takes_the_fast_path():
    document = {"apiVersion": "aqven/v1", "cells": [{"metric": "label", "estimate": {"value": 0.5, "low": None}}],
                "variants": [{"id": "a", "changes": [], "models": ["fake:a-1"], "metrics": {}}],
                "data": {"variants": {"a": {"label": {"0123abcd": [3, 4], "99": [[0.0002, 1], [0.0002, 0]]}}}},
                "scope": {"tags": {}}}
    assert emit.dump(document) == files.pyyaml_dump(document)
    assert yaml.safe_load(emit.dump(document)) == document


def test_shapes_it_does_not_know_are_refused():
    for document in ({"a b": 1}, {"k" * 130: 1}, {"s": {1, 2}}, {"i": [1], "j": {"again": None}}):
        if "i" in document:
            document["j"]["again"] = document["i"]
        with pytest.raises(emit.Unsupported):
            emit.dump(document)
        assert files.dump(document) == files.pyyaml_dump(document)


def test_tuples_are_block_sequences_and_read_back_as_lists():
    document = {"t": (1, 2.5), "e": (), "g": ({"metric": "cost", "margin": 0.1},)}
    text, plain = emit.dump_plain(document)
    assert text == files.pyyaml_dump(document) and not plain
    assert emit.dump_plain({"t": [1, 2.5]})[1]


def test_only_a_decided_finding_skips_being_read_back(tmp_path):
    """examine() trusts a text it made only when findings/publish.record decided it: a document hashed by
    finding_text alone (what a forger can do) is parsed and decided again like any file."""
    forged = {"experiment": "e", "series": "s", "state": "confirmed", "statement": "x", "cells": [],
              "variants": [], "scope": {}, "method": {}, "data": {}}
    path = tmp_path / "experiments" / "e" / "findings" / "s.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(files.finding_text(forged))
    [(_, _, found)] = files.examine(tmp_path)
    assert found and "cannot be decided again" in found[0][1]
    path.unlink()
    path.write_text(files.finding_text(forged, decided=True))
    [(_, document, found)] = files.examine(tmp_path)
    assert found == [] and document["series"] == "s"


def test_number_lists_take_the_fast_path_only_where_repr_is_yaml():
    """Lists of numbers are written by repr when that is YAML's flow text; exponents, nan, infinities and
    booleans (inside nested lists too) by the slow path; the same list twice, or inside itself, by PyYAML."""
    document = {"data": {"a": [[0.0002, 1], [0.0002, 0]], "b": [3, 20], "c": [12.5, -0.0, 7],
                         "d": [[1e-05, True], [float("nan"), 2]], "e": [[float("inf"), [float("-inf"), False]]],
                         "f": [1e16, 5e-324, 10**30]},
                "rows": {"0123abcd": [3, 20], "99": [[0.0002, 1], [0.5, 0]], "x": [2.5]},
                "in_a_sequence": [{"a": [1], "b": [[2, 3]]}, {"a": [1e-05], "b": [4]}],
                "not_rows": [{"a": [], "b": [1]}, {"a": [1], "b": "text"}, {"a": [1], "b": [True]}]}
    assert emit.dump(document) == files.pyyaml_dump(document)
    shared = [1, 2]
    for twice in ({"x": [shared, shared]}, {"rows": {"a": shared, "b": shared}}, {"rows": {"a": [shared]}, "y": shared},
                  {"x": [[shared]], "y": {"z": shared}}, {"x": shared, "y": [shared]}):
        with pytest.raises(emit.Unsupported):
            emit.dump(twice)
        assert files.dump(twice) == files.pyyaml_dump(twice)
    looped = [1]
    looped.append(looped)
    with pytest.raises(emit.Unsupported):
        emit.dump({"x": looped})


def _both(document: dict) -> tuple[str | None, str]:
    """(libyaml's bytes, or None where files.pyyaml_dump leaves libyaml out; the pure dumper's bytes)."""
    pure = files.pyyaml_dump(document, files._Dumper)
    try:
        return files._yaml(document, files._CDumper), pure
    except (files._DifferentInC, UnicodeEncodeError):
        return None, pure


@pytest.mark.skipif(files._CDumper is None, reason="PyYAML without libyaml")
@pytest.mark.slow
def test_libyaml_writes_the_bytes_of_the_pure_dumper():
    """Findings go through libyaml's emitter where PyYAML has it, and the bytes are those of the pure one: on
    random documents of every shape, on every code point of the BMP (and every 16th beyond) in a string, and on
    the keys the C path takes (every one of up to two characters, random longer ones)."""
    through_c = 0
    for seed in range(400):
        rng = random.Random(seed)
        document = _mapping(rng, 4) or {"k": 1}
        document[rng.choice(KEYS)] = {rng.choice(KEYS): rng.choice(STRINGS)}       # the keys it leaves out too
        if seed % 7 == 0:
            shared = [1, 2]
            document["twice"] = [shared, {"again": shared}]
        if seed % 11 == 0:
            document["tuple"] = (1, "two")
        c, pure = _both(document)
        assert files.pyyaml_dump(document) == pure, seed
        if c is not None:
            assert c == pure, seed
            through_c += 1
    assert through_c > 200
    text = [chr(c) for c in [*range(0xD800), *range(0xE000, 0x10000), *range(0x10000, 0x110000, 16), 0x10FFFF]]
    document = {"one": text[:0x3000] + random.Random(2).sample(text, 3000),        # each alone, and all in runs
                "runs": ["".join(text[i:i + 64]) for i in range(0, len(text), 64)]}
    assert _both(document) == (files.pyyaml_dump(document, files._Dumper),) * 2
    printable = [chr(c) for c in range(0x20, 0x7F)]
    rng = random.Random(1)
    keys = printable + [a + b for a in printable for b in printable] + \
        ["".join(rng.choice(printable) for _ in range(rng.randrange(1, 101))) for _ in range(3000)] + \
        ["".join(rng.choice(" -:#?'\"[]{},&*!|>%@`a01") for _ in range(rng.randrange(1, 12))) for _ in range(3000)]
    for i in range(0, len(keys), 500):
        document = {k: {k: [1]} for k in keys[i:i + 500]}
        c, pure = _both(document)
        assert c == pure, keys[i:i + 500]
    for refused in ({"": 1}, {"k" * 123: 1}, {"é" * 70: 1}, {"s": "\ud800"}, {"\U0010fffe": 1}):
        assert _both(refused)[0] is None and files.pyyaml_dump(refused) == files.pyyaml_dump(refused, files._Dumper)


def test_without_libyaml_the_pure_dumper_writes_findings(monkeypatch):
    document = {"data": {"a": [1, 2.5]}, "s": "é \u2028", "t": (1,)}
    with_c = files.pyyaml_dump(document)
    monkeypatch.setattr(files, "_CDumper", None)
    assert files.pyyaml_dump(document) == with_c == files.pyyaml_dump(document, files._Dumper)
