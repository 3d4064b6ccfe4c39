"""The runnable-project types: what plans, runs and decides gets specs that are set, check gets the rest."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_aqven.project.loader import load_project
from pytest_aqven.project.model import NotRunnable, RunnableExperiment, RunnableProject, runnable

EXAMPLE = Path(__file__).parents[2] / "example_project"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "example_project"))


def test_a_project_that_loads_is_runnable_with_every_experiment(root: Path) -> None:
    project = load_project(root)
    assert isinstance(project, RunnableProject) and runnable(project) is project
    assert project.experiments and all(isinstance(e, RunnableExperiment) for e in project.experiments.values())
    for experiment_id, experiment in project.experiments.items():
        assert project.runnable_experiment(experiment_id) is experiment
        assert experiment.spec is not None and experiment.doc is not None


def test_an_experiment_whose_file_does_not_load_is_not_runnable_the_others_are(root: Path) -> None:
    broken, fine, *_ = sorted(p.name for p in (root / "experiments").iterdir())
    (root / "experiments" / broken / "experiment.yaml").write_text("kind: [\n", encoding="utf-8")
    project = load_project(root)
    experiment = project.experiments[broken]
    assert not isinstance(experiment, RunnableExperiment) and experiment.spec is None
    assert experiment.diagnostics                      # check still sees it, and says why
    with pytest.raises(NotRunnable, match=f"experiment {broken}: experiment.yaml does not load"):
        project.runnable_experiment(broken)
    assert isinstance(project.runnable_experiment(fine), RunnableExperiment)
    with pytest.raises(KeyError):
        project.runnable_experiment("no_such_experiment")


def test_a_project_whose_aqven_yaml_does_not_load_is_not_runnable(root: Path) -> None:
    (root / "aqven.yaml").write_text("providers: [\n", encoding="utf-8")
    project = load_project(root)
    assert not isinstance(project, RunnableProject) and project.spec is None and project.diagnostics
    with pytest.raises(NotRunnable, match="aqven.yaml does not load"):
        runnable(project)
