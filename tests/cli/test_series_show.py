"""`aqven series show <id> --case NAME`: one case's attempts with their full traces; held-out cases only with
--reveal."""
from __future__ import annotations

import json
import sqlite3

import pytest

from pytest_aqven.cli import main
from pytest_aqven.experiments.split import split_of

from .. import projects

PACKAGE = "showproj"
TEXTS = ["bug", "junk", "wrong", "fine", "fine", "fine", "fine", "fine"]


def _project(pytester, holdout: bool) -> tuple[str, dict[str, str]]:
    """Runs a series where one case of the half raises in the flow's code, one needs a repair, one is
    labelled wrong; returns the series id and case name -> its text."""
    names = [f"r{i:02d}" for i in range(60)]   # not hex: never inside a series id
    half = [n for n in names if split_of(PACKAGE, "reviews", n) == ("holdout" if holdout else "dev")]
    texts = dict(zip(half, TEXTS))
    projects.make(pytester, list(texts.items()), repeats=2, cases=len(texts), package=PACKAGE)
    pytester.runpytest("proj", "-p", "no:cacheprovider", *(["--aqven-holdout"] if holdout else []))
    db = sqlite3.connect(pytester.path / "proj/.aqven/aqven.sqlite")
    (sid,) = db.execute("SELECT series_id FROM aqven_series").fetchone()
    db.close()
    return sid, texts


def show(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()          # what the pytest run before printed
    code = main(["series", "show", *args])
    out, err = capsys.readouterr()
    return code, out, err


def case_of(texts: dict[str, str], text: str) -> str:
    return next(name for name, t in texts.items() if t == text)


def test_case_prints_every_attempt_with_its_full_trace(pytester, capsys):
    sid, texts = _project(pytester, holdout=False)
    code, out, err = show(capsys, sid[:8], "--path", "proj", "--case", case_of(texts, "junk"))
    assert code == 0, err
    blocks = out.split("\n\n")
    assert blocks[0] == f"series {sid}: case {case_of(texts, 'junk')}, 2 attempts"
    first = blocks[1].splitlines()
    assert first[0] == f"rate_ok bot {case_of(texts, 'junk')} #1 (dev): schema_invalid, not passed"
    assert blocks[2].splitlines()[0].endswith("#2 (dev): schema_invalid, not passed")
    text = blocks[1]
    assert "  checks:\n    label  " in text
    assert "    clean (code): ok, " in text and '      input: {"text": "junk"}' in text
    assert '      output: {"text": "junk"}' in text
    assert "    judge (llm): failed, " in text
    # every model call, with its tokens, cost, latency and what followed it (a repair turn)
    assert "      call 1: fake:bot-1 ok; tokens 10 in, 3 out; $0.0001 (provider); " in text
    assert "then repair" in text and "      call 2: " in text
    assert "      error: MODEL_RETRIES_EXHAUSTED: " in text or "      error: MODEL_INVALID_JSON: " in text

    code, out, _ = show(capsys, sid, "--path", "proj", "--case", case_of(texts, "bug"))
    assert code == 0
    assert "  error (node clean): code_invalid: node clean: clean raised RuntimeError: a bug in the flow's own code" \
           " at clean.py:3" in out
    assert "    clean (code): failed, " in out and 'line 3, in clean\n        raise RuntimeError(' in out

    code, out, _ = show(capsys, sid, "--path", "proj", "--case", case_of(texts, "wrong"), "--repeat", "2")
    assert code == 0 and out.count("\n\n") == 1 and "#2 (dev): ok, not passed" in out
    assert "    label  failed  value 0  " in out

    code, out, _ = show(capsys, sid, "--path", "proj", "--case", case_of(texts, "fine"), "--variant", "bot",
                        "--format", "json")
    records = json.loads(out)
    assert [(r["variant"], r["repeat"]) for r in records] == [("bot", 1), ("bot", 2)]
    assert records[0]["trace"]["nodes"][1]["calls"][0]["tokens_in"] == 20

    code, out, _ = show(capsys, sid, "--path", "proj")
    assert code == 0 and "  --case NAME prints one case's attempts" in out and "outcomes ok " in out


@pytest.mark.parametrize("args, message", [
    (["nope"], "aqven series: no series nope in "),
    (["{sid}", "--case", "no_such_case"], "aqven series: series {sid} has no case 'no_such_case'; its 8 cases include "),
    (["{sid}", "--case", "{case}", "--variant", "gpt"], "aqven series: series {sid} has no variant 'gpt'; its variants: bot"),
    (["{sid}", "--case", "{case}", "--repeat", "3"], "aqven series: series {sid} has repeats 1 to 2, not 3"),
    (["{sid}", "--variant", "bot"], "aqven series: --variant, --repeat, --format and --reveal go with --case NAME"),
])
def test_an_unknown_series_case_variant_or_repeat_is_one_line_and_exit_2(pytester, capsys, args, message):
    sid, texts = _project(pytester, holdout=False)
    fill = {"sid": sid, "case": case_of(texts, "fine")}
    code, out, err = show(capsys, *[a.format(**fill) for a in args], "--path", "proj")
    assert code == 2 and out == ""
    assert err.startswith(message.format(**fill)) and err.count("\n") == 1 and "Traceback" not in err


def test_a_held_out_case_is_shown_only_with_reveal(pytester, capsys):
    sid, texts = _project(pytester, holdout=True)
    code, out, _ = show(capsys, sid, "--path", "proj")
    assert code == 0 and "outcomes ok " in out
    assert "held-out cases are never shown one by one" in out and "--reveal" in out
    assert not any(name in out for name in texts)

    code, out, err = show(capsys, sid, "--path", "proj", "--case", case_of(texts, "wrong"))
    assert code == 2 and out == ""
    assert err == (f"aqven series: series {sid} ran held-out cases: held-out cases are never shown one by one "
                   "(whoever reads them starts tuning to them, and the half stops being held out); --reveal shows "
                   "them to a person who asks explicitly\n")

    code, out, err = show(capsys, sid, "--path", "proj", "--case", case_of(texts, "wrong"), "--reveal")
    assert code == 0
    assert out.startswith(f"revealing held-out data of series {sid}, case {case_of(texts, 'wrong')}, as asked with --reveal")
    assert "    label  failed  value 0  " in out and '      input: {"text": "wrong"}' in out

    code, out, err = show(capsys, sid, "--path", "proj", "--case", case_of(texts, "wrong"), "--reveal",
                          "--format", "json")
    assert code == 0 and "revealing held-out data" in err
    assert {r["split"] for r in json.loads(out)} == {"holdout"}


@pytest.mark.parametrize("holdout", [False, True])
def test_an_undecided_series_names_the_attempts_it_has_no_record_of(pytester, capsys, holdout):
    """A run cut short (here: the series set back to running, three of its records taken away): `show` and
    `decide` say which attempts the database lacks; a held-out series' are counted, never named."""
    sid, texts = _project(pytester, holdout=holdout)
    db = sqlite3.connect(pytester.path / "proj/.aqven/aqven.sqlite")
    gone = db.execute("SELECT attempt_id, case_name, repeat FROM aqven_series_attempts ORDER BY case_name, repeat "
                      "LIMIT 3").fetchall()
    for table in ("aqven_series_attempts", "aqven_claims", "aqven_spend"):
        db.executemany(f"DELETE FROM {table} WHERE attempt_id = ?", [(aid,) for aid, _, _ in gone])
    db.execute("UPDATE aqven_series SET status = 'running'")
    db.commit()
    db.close()
    code, out, _ = show(capsys, sid, "--path", "proj")
    named = ", ".join(f"bot {case} #{repeat}" for _, case, repeat in gone)
    line = "not recorded: 3 attempts (bot 3; held-out cases are not named)" if holdout else f"not recorded: 3 attempts: {named}"
    assert code == 0 and "status running" in out and "attempts 13/16" in out and f"\n  {line}\n" in out
    assert not holdout or not any(name in out for name in texts)
    capsys.readouterr()
    assert main(["series", "decide", sid, "--path", "proj"]) == 1
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "verdict open: 13 of 16 attempts finished; the pytest command that started the series continues it", line]


def export(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["series", "export", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("form", ["jsonl", "csv"])
def test_a_held_out_series_is_exported_only_with_reveal(pytester, capsys, form):
    """`export` prints every case with its check reasons: for a held-out series, as `show --case`, only to a person
    who asks explicitly; a working series exports as before."""
    sid, texts = _project(pytester, holdout=True)
    code, out, err = export(capsys, sid, "--path", "proj", "--format", form)
    assert code == 2 and out == ""
    assert err == (f"aqven series: series {sid} ran held-out cases: held-out cases are never shown one by one "
                   "(whoever reads them starts tuning to them, and the half stops being held out); --reveal shows "
                   "them to a person who asks explicitly\n")
    code, out, err = export(capsys, sid, "--path", "proj", "--format", form, "--reveal")
    assert code == 0 and err.startswith(f"revealing held-out data of series {sid} (16 attempts), as asked with "
                                        "--reveal: do not tune the flow to what it shows")
    assert all(name in out for name in texts) and (form == "csv" or "fields differ from expected_output" in out)


def test_a_working_series_exports_without_reveal(pytester, capsys):
    sid, texts = _project(pytester, holdout=False)
    code, out, err = export(capsys, sid, "--path", "proj")
    assert code == 0 and err == "" and len(out.splitlines()) == 16
    assert {json.loads(line)["split"] for line in out.splitlines()} == {"dev"}


def test_nested_node_executions_are_indented_under_their_container():
    from pytest_aqven.series.attempt_text import nodes_lines

    def node(name, kind, parent=None, **extra):
        return {"node": name, "kind": kind, "status": "ok", "latency_ms": 5.0, "input": {"x": 1}, "output": {"y": 2},
                "calls": [], "checks": [], "parent": parent, **extra}

    lines = nodes_lines([
        node("drafts", "parallel"),
        node("drafts__gpt", "llm", "drafts", branch="gpt", model="m:1",
             calls=[{"model": "m:1", "outcome": "error", "tokens_in": 3, "tokens_out": 0, "cost_usd": None,
                     "latency_ms": 9.0, "error": "HTTP 503", "action": "fallback", "cause": "error",
                     "retries": [["HTTP 429", 0.5]]}],
             checks=[{"check": "tone", "on_fail": "retry", "passed": False, "reason": "too curt", "attempt": 1}]),
        node("drafts__gpt__fix", "code", "drafts__gpt", iteration=2, status="failed", output=None,
             error_code="code_invalid", error_message="fix raised ValueError: no", error_location="fix.py:4"),
        node("pick", "code"),
    ], "")
    assert lines[0] == "drafts (parallel): ok, 5 ms"
    assert lines[3] == "  drafts__gpt [branch gpt] (llm): ok, 5 ms, at least $0, m:1 did not answer"   # its call failed
    assert lines[6] == ("    call 1: m:1 error; tokens 3 in, 0 out; unpriced; 9 ms; after transport retries HTTP 429 "
                        "(waited 0.5 s); error HTTP 503; then fallback (error)")
    assert lines[7] == "    check tone (on_fail retry, answer 1): failed: too curt"
    assert lines[8] == "    drafts__gpt__fix [iteration 2] (code): failed, 5 ms"
    assert lines[10] == "      error: code_invalid: fix raised ValueError: no at fix.py:4"
    answered = nodes_lines([node("ask", "llm", model="m:2", calls=[{"model": "m:2", "outcome": "refusal"}])], "")
    assert answered[0] == "ask (llm): ok, 5 ms, at least $0, answered by m:2"
    assert lines[11] == "pick (code): ok, 5 ms"
