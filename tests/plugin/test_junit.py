"""junit of the example project, valid against pytest's own schema (data/pytest-junit-10.xsd) in both families,
with readable testcase names for CI reporters and the aqven data where each family allows it."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

etree = pytest.importorskip("lxml.etree")

EXAMPLE = Path(__file__).parents[2] / "example_project"
XSD = Path(__file__).parent / "data" / "pytest-junit-10.xsd"


def schema(family: str):
    """xunit2: pytest's schema as it is. xunit1: the same with what pytest itself writes on every xunit1
    testcase (the file and line attributes, and `<properties>` from record_property)."""
    text = XSD.read_text()
    if family == "xunit1":
        text = text.replace('<xs:attribute name="group" type="xs:string"/>\n        </xs:complexType>\n    '
                            '</xs:element>\n\n    <xs:element name="testsuite">',
                            '<xs:attribute name="group" type="xs:string"/>\n'
                            '            <xs:attribute name="file" type="xs:string"/>\n'
                            '            <xs:attribute name="line" type="xs:string"/>\n        </xs:complexType>\n    '
                            '</xs:element>\n\n    <xs:element name="testsuite">', 1)
        text = text.replace('<xs:element ref="skipped"/>\n                    <xs:element ref="errors"/>',
                            '<xs:element ref="properties"/>\n                    <xs:element ref="skipped"/>\n'
                            '                    <xs:element ref="errors"/>', 1)
        assert text.count('name="line"') == 1 and text.count('ref="properties"') == 2
    return etree.XMLSchema(etree.fromstring(text.encode()))


def validate(family: str, path: Path):
    doc = etree.parse(str(path))
    checker = schema(family)
    assert checker.validate(doc), "\n".join(str(e) for e in checker.error_log)
    return doc


def test_the_xunit1_schema_is_what_pytest_itself_writes_for_a_plain_test(pytester):
    pytester.makepyfile("def test_x(record_property):\n    record_property('k', 'v')\n")
    pytester.runpytest("--junitxml=plain.xml", "-o", "junit_family=xunit1", "-p", "no:cacheprovider")
    validate("xunit1", pytester.path / "plain.xml")
    with pytest.raises(AssertionError):             # and the xunit2 schema refuses it: the check can fail
        validate("xunit2", pytester.path / "plain.xml")


@pytest.mark.parametrize("family", ["xunit2", "xunit1"])
@pytest.mark.slow
def test_the_example_projects_junit_is_valid_with_readable_names(pytester, family, xdist):
    shutil.copytree(EXAMPLE, pytester.path / "example_project")
    result = pytester.runpytest_subprocess("example_project", "--aqven-holdout", f"--junitxml={family}.xml",
                                           "-o", f"junit_family={family}", "-p", "no:cacheprovider", *xdist,
                                           timeout=300)
    assert result.ret == pytest.ExitCode.TESTS_FAILED        # the inconclusive held-out verdict fails
    doc = validate(family, pytester.path / f"{family}.xml")
    cases = doc.findall(".//testcase")
    names = [c.get("name") for c in cases]
    assert "small_replaces_large::verdict" in names and "small_agent_accuracy::verdict" in names
    assert all(n.startswith(("small_agent_accuracy::", "small_replaces_large::")) for n in names)
    assert any(n.startswith("small_agent_accuracy::small::case-") and n.endswith("#5") for n in names)
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["small_replaces_large::verdict"]
    assert failed[0].find("failure").get("message").startswith("verdict inconclusive: ")
    suite = {p.get("name"): p.get("value") for p in doc.findall("./testsuite/properties/property")}
    assert suite["aqven.small_agent_accuracy.verdict"] == "confirmed"
    assert suite["aqven.small_replaces_large.verdict"] == "inconclusive"
    assert suite["aqven.small_replaces_large.sentence"].startswith("small vs large on intent")
    on_cases = [c for c in cases if c.find("properties") is not None]
    if family == "xunit2":
        assert not on_cases
    else:       # held out: each attempt shows its outcome only; each verdict its figures
        assert len(on_cases) == len(cases)
        verdict = next(c for c in cases if c.get("name") == "small_agent_accuracy::verdict")
        assert {p.get("name"): p.get("value") for p in verdict.iter("property")}["aqven_verdict"] == "confirmed"


@pytest.mark.slow
def test_the_users_own_testcases_keep_their_order(pytester):
    """Only our testcases are put in one order; a user's own keep the places and order pytest wrote."""
    shutil.copytree(EXAMPLE, pytester.path / "example_project", ignore=shutil.ignore_patterns(".aqven"))
    pytester.makepyfile(test_user="def test_b():\n    pass\n\n\ndef test_a():\n    pass\n")
    result = pytester.runpytest_subprocess("example_project", "test_user.py", "--junitxml=out.xml",
                                           "-o", "junit_family=xunit1", "-p", "no:cacheprovider", timeout=300)
    assert result.ret == pytest.ExitCode.OK
    doc = validate("xunit1", pytester.path / "out.xml")
    names = [c.get("name") for c in doc.findall(".//testcase")]
    assert [n for n in names if n.startswith("test_")] == ["test_b", "test_a"]
    ours = [n for n in names if "::" in n]
    assert ours.index("small_agent_accuracy::verdict") < ours.index("small_replaces_large::small::defect_buzz#1")
    assert ours[-1] == "small_replaces_large::verdict"
