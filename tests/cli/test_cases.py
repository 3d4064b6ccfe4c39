"""`aqven cases <experiment>`: the working half by name, both halves counted per tag, held-out cases never
named; a renamed package, dataset or case that moved the halves of an experiment with findings is
W_HALVES_MOVED (it was E_FINDING_TAMPERED for a package, and silent for the others)."""
from __future__ import annotations

import pytest

from pytest_aqven.api.check import check_root
from pytest_aqven.cli import main
from pytest_aqven.experiments.split import split_of
from pytest_aqven.project.loader import load_project
from pytest_aqven.scaffold import create

EXPERIMENT = "small_reads_reviews"


def names(root, split: str, package: str = "demo", dataset: str = "reviews") -> list[str]:
    cases = load_project(root).datasets[dataset].spec.cases
    return [c.name for c in cases if split_of(package, dataset, c.name) == split]


def test_cases_lists_the_working_half_and_counts_both_halves(tmp_path, capsys):
    root = tmp_path / "demo"
    create(root, "demo")
    assert main(["cases", EXPERIMENT, "--project", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    working, held_out = names(root, "dev"), names(root, "holdout")
    assert out[0] == (f"{EXPERIMENT}: dataset reviews, every case: {len(working)} working, {len(held_out)} held out "
                      "(the split of package demo)")
    assert out[1] == "working cases, in file order (a working series takes them all):"
    assert out[2:2 + len(working)] == [f"  {n}" for n in working]
    assert out[2 + len(working)] == (f"held-out cases: {len(held_out)}, never named (whoever reads them starts "
                                     "tuning to them)")
    assert not any(n in line for n in held_out for line in out)
    table = {line.split()[0]: (int(line.split()[1]), int(line.split()[2])) for line in out[4 + len(working):]}
    assert sum(w for t, (w, _) in table.items() if t.startswith("tone=")) == len(working)
    assert sum(h for t, (_, h) in table.items() if t.startswith("product=")) == len(held_out)
    assert set(table) == {"product=beans", "product=grinder", "product=kettle", "product=mug",
                          "tone=complaint", "tone=mixed", "tone=praise"}


def test_cases_follows_the_tag_filter_and_the_plan(tmp_path, capsys):
    root = tmp_path / "demo"
    create(root, "demo")
    path = root / "experiments" / EXPERIMENT / "experiment.yaml"
    text = path.read_text().replace('  dataset: "reviews"\n', '  dataset: "reviews"\n  tags:\n    tone: "mixed"\n')
    path.write_text(text.replace("plan:\n  repeats: 3", "plan:\n  cases: 2\n  repeats: 3"))
    assert main(["cases", EXPERIMENT, "--project", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{EXPERIMENT}: dataset reviews, selected by tags tone=mixed: ")
    assert out[1] == "working cases, in file order (a working series takes the first 2):"
    assert [line.split()[0] for line in out if "=" in line.split()[0]] == [
        "product=beans", "product=grinder", "product=kettle", "product=mug", "tone=mixed"]


def test_an_unknown_experiment_names_the_ones_there_are(tmp_path, capsys):
    create(tmp_path / "demo", "demo")
    assert main(["cases", "nope", "--project", str(tmp_path / "demo")]) == 2
    assert capsys.readouterr().err == ("aqven cases: no experiment nope; the project has: large_beats_small, "
                                       "small_reads_reviews\n")
    assert main(["cases", "nope", "--project", str(tmp_path)]) == 2
    assert "no aqven.yaml in" in capsys.readouterr().err


@pytest.fixture
def decided(pytester):
    """The project `aqven new demo` writes, after one held-out run: both experiments have a finding."""
    root = pytester.path / "demo"
    create(root, "demo")
    pytester.runpytest("demo", "--aqven-holdout", "-p", "no:cacheprovider")
    assert len(list(root.glob("experiments/*/findings/*.yaml"))) == 2
    assert check_root(root) == []
    return root


def moved(root) -> list:
    found = [d for d in check_root(root) if d.severity == "error" or d.code == "W_HALVES_MOVED"]
    assert all(d.code == "W_HALVES_MOVED" for d in found), [d.render() for d in found]
    return found


def test_a_renamed_package_moves_the_halves_and_says_how_many(decided, capsys):
    (decided / "aqven.yaml").write_text((decided / "aqven.yaml").read_text().replace('"demo"', '"reviews_lab"'))
    held_then = names(decided, "holdout")
    now_working = sum(split_of("reviews_lab", "reviews", n) == "dev" for n in held_then)
    seen = sum(split_of("demo", "reviews", n) == "dev" for n in names(decided, "holdout", "reviews_lab"))
    warnings = moved(decided)
    assert len(warnings) == 2 and {w.file for w in warnings} == {f"experiments/{e}/experiment.yaml" for e in
                                                                  ("small_reads_reviews", "large_beats_small")}
    mine = next(w for w in warnings if EXPERIMENT in w.file)
    assert mine.message.startswith(f"experiment {EXPERIMENT}: finding experiments/{EXPERIMENT}/findings/")
    assert (f"was decided on other halves: package demo is now reviews_lab, which draws other halves: {now_working} "
            f"of the {len(held_then)} cases it held out are working cases now, and {seen} of today's held-out cases "
            f"were working cases then, so the held-out half is no longer unseen") in mine.message
    assert main(["cases", EXPERIMENT, "--project", str(decided)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"warning: {mine.message}"


def test_a_renamed_dataset_moves_the_halves(decided):
    (decided / "datasets/reviews.yaml").rename(decided / "datasets/opinions.yaml")
    for exp in decided.glob("experiments/*/experiment.yaml"):
        exp.write_text(exp.read_text().replace('dataset: "reviews"', 'dataset: "opinions"'))
    [mine] = [w for w in moved(decided) if EXPERIMENT in w.file]
    assert "dataset reviews is now opinions, which draws other halves: " in mine.message


def test_a_renamed_case_is_a_new_case(decided):
    held = names(decided, "holdout")
    path = decided / "datasets/reviews.yaml"
    path.write_text(path.read_text().replace(f'name: "{held[0]}"', f'name: "{held[0]}_v2"'))
    [mine, _] = sorted(moved(decided), key=lambda w: EXPERIMENT not in w.file)
    assert (f"1 of the {len(held)} cases it held out are in the dataset under no name any more (renamed or removed; a renamed case is a "
            "new case and may land in either half)") in mine.message
