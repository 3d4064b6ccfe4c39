"""junit (--junitxml): readable testcase names, the aqven data where each junit_family allows it, and one
testcase order whatever xdist did.

pytest's default family, xunit2, allows `<properties>` under a testsuite only (its schema, junit-10.xsd): there
each verdict's figures are suite properties `aqven.<experiment>.<name>`. xunit1 (and legacy) also allow them per
testcase: there attempts and verdicts carry theirs too (`aqven_<name>`)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ..record import AttemptRecord
from ..report import attempts, look
from ..report.text import cell_text
from . import internals


def per_testcase(config: pytest.Config) -> bool:
    """Whether this run writes junit with properties on each testcase (xunit1, legacy)."""
    return bool(getattr(config.option, "xmlpath", None)) and config.getini("junit_family") in ("xunit1", "legacy")


def testcase_name(nodeid: str) -> str | None:
    """What CI reporters list: `experiment::variant::case#repeat` for an attempt, `experiment::verdict` for a
    verdict (pytest's own name would be the last part of the node id: `3`, `verdict`). None: not ours."""
    path, _, rest = nodeid.partition("::")
    parts = rest.split("::")
    if not path.endswith("experiment.yaml") or len(parts) not in (1, 3):
        return None
    experiment = Path(path).parent.name
    if len(parts) == 1:
        return f"{experiment}::{parts[0]}"
    return f"{experiment}::{parts[0]}::{parts[1]}#{parts[2]}"


def name_testcase(config: pytest.Config, report: pytest.TestReport) -> None:
    """Before junitxml opens the testcase: its name attribute (kept by junitxml over the one it derives)."""
    xml = internals.junit_xml(config)
    name = testcase_name(report.nodeid) if xml is not None and "aqven" in report.keywords else None
    if name is not None:
        xml.node_reporter(report).add_attribute("name", name)


def add_suite_properties(config: pytest.Config, entry_props: list[tuple[str, str]], experiment: str) -> None:
    """A verdict's properties under the testsuite (valid in both families): `aqven.<experiment>.<name>`."""
    xml = internals.junit_xml(config)
    if xml is not None:
        for name, value in entry_props:
            xml.add_global_property(f"aqven.{experiment}.{name.removeprefix('aqven_')}", value)


def attempt_properties(record: AttemptRecord) -> list[tuple[str, str]]:
    """The outcome always; which attempt, each check's state, value and reason, cost (judges apart), latency
    and the error only for working cases: held-out cases are never shown one by one (an infrastructure
    error's message without case data is, as on the terminal)."""
    props = [("aqven_outcome", record.outcome), ("aqven_passed", str(record.passed).lower())]
    if attempts.held_out(record):       # an infrastructure error's message without case data, if it has one
        if record.error_public:
            props.append(("aqven_error", f"{record.error_code}: {record.error_public}"))
        return props
    props += [("aqven_case", record.case), ("aqven_variant", record.variant), ("aqven_repeat", str(record.repeat))]
    for cid, c in record.checks.items():
        props.append((f"aqven_check.{cid}", c.state + (f": {c.reason}" if c.reason else "")))
        props.append((f"aqven_check.{cid}.value", _number(c.value)))
    props += [("aqven_cost_usd", f"{record.cost_usd or 0:g}"),
              ("aqven_latency_ms", f"{record.latency_ms or 0:.0f}")]
    if record.check_cost_usd:
        props.append(("aqven_judges_cost_usd", f"{record.check_cost_usd:g}"))
    if record.error_code:
        props.append(("aqven_error", f"{record.error_code}: {record.error_message or ''}"))
    return props


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def look_properties(split: str, records: list[AttemptRecord], kinds: dict[str, str]) -> list[tuple[str, str]]:
    """A look's table on its verdict testcase: one property per case and variant (`aqven_look.<case>.<variant>`,
    its outcome then each column as `name=cell`); a held-out look's only says why there is none."""
    if split == "holdout":
        return [("aqven_look", look.HELD_OUT_LOOK)]
    head, lines, body = look.grid(records, kinds, cut=False)
    return [(f"aqven_look.{row['case']}.{row['variant']}",
             "; ".join([row["outcome"]] + [f"{h}={c}" for h, c in zip(head[2:], cells[2:])]))
            for row, cells in zip(lines, body)]


def standing_properties(standing: dict) -> list[tuple[str, str]]:
    """A held-out experiment that ran nothing: the finding that stands is its verdict."""
    return [("aqven_verdict", standing["state"] or "unknown"), ("aqven_series", standing["series"] or ""),
            ("aqven_finding", standing["finding"] or ""), ("aqven_standing", "true")]


def verdict_properties(entry: dict) -> list[tuple[str, str]]:
    """The verdict's figures: state ("none" for a look, "open" while the series is unfinished), reason,
    sentence, one property per cell, attempts, infrastructure errors, spend, finding."""
    v = entry["verdict"]
    props = [("aqven_verdict", v["state"] if v else "open"), ("aqven_reason", (v or {}).get("reason") or ""),
             ("aqven_sentence", v["sentence"] if v else entry["note"] or ""),
             ("aqven_experiment", entry["experiment"]), ("aqven_split", entry["split"]),
             ("aqven_series", entry["series_id"])]
    for cell in entry["cells"]:
        name = cell["variant"] if cell["baseline"] is None else f"{cell['variant']}-vs-{cell['baseline']}"
        props.append((f"aqven_cell.{name}.{cell['metric']}", cell_text(cell)))
    a, s = entry["attempts"], entry["spend"]
    props += [("aqven_attempts", f"{a['done']}/{a['total']}"), ("aqven_infra_errors", str(a["infra_errors"])),
              ("aqven_spend_usd", f"{s['usd'] or 0:.6f}"), ("aqven_spend_lower_bound", str(s["lower_bound"]).lower()),
              ("aqven_cap_usd", "" if s["cap_usd"] is None else f"{s['cap_usd']:g}"),
              ("aqven_unpriced_calls", str(s["unpriced_calls"]))]
    if entry["next"]:
        props.append(("aqven_next", entry["next"]))
    if entry["finding_path"]:
        props.append(("aqven_finding", entry["finding_path"]))
    return props


def _key(testcase: ET.Element) -> tuple:
    classname, name = testcase.get("classname", ""), testcase.get("name", "")
    return (classname + ".\uffff" if name.endswith("verdict") else classname, name)


def _ours(testcase: ET.Element) -> bool:
    """An attempt's or a verdict's testcase: its name is the one `testcase_name` gives (`experiment::...`)."""
    classname, name = testcase.get("classname", ""), testcase.get("name", "")
    return ".experiment.yaml" in f"{classname}." and "::" in name


def sort_testcases(path: Path) -> None:
    """Our testcases in one order (by class name, each experiment's verdict after its attempts), so a run
    with and without -n N writes the same file apart from timings: xdist appends them as workers report.
    They take the places ours held; every other testcase keeps its own place."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return
    changed = False
    for suite in tree.getroot().iter("testsuite"):
        children = list(suite)
        places = [i for i, c in enumerate(children) if c.tag == "testcase" and _ours(c)]
        ordered = sorted((children[i] for i in places), key=_key)
        if ordered != [children[i] for i in places]:
            changed = True
            for i, c in zip(places, ordered):
                children[i] = c
            suite[:] = children
    if changed:
        tree.write(path, encoding="utf-8", xml_declaration=True)
