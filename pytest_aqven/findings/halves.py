"""Which cases are in which half, and what a rename did to the halves of an experiment with findings.

The split hashes the package name, the dataset id and the case name (experiments/split.py), so renaming
the package or the dataset draws new halves, and a renamed case is a new case that may land in either.
A finding names its held-out cases by `sha256(salt, case name)` with the salt `<package>/<experiment>` it
records, so the cases it held out are found again by name, and where they are now is computed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..experiments import split as splitting
from ..project.model import Project
from ..stats.model import case_key
from .files import read_findings


@dataclass(frozen=True)
class Halves:
    experiment: str
    dataset: str
    tags: dict[str, str]                 # the experiment's tag filter
    working: list[str]                   # the working cases by name, in file order
    held_out: int                        # how many held-out cases (never their names)
    tag_counts: dict[str, tuple[int, int]]   # "<tag>=<value>" -> (working, held out)
    plan_cases: int | None


@dataclass(frozen=True)
class Reshuffle:
    """A finding whose held-out cases a rename moved: `moved` of them are working cases now, `missing` are
    in the dataset under no name any more (renamed or removed), and `seen` of today's held-out cases were
    working cases then (explored, so no longer unseen)."""
    finding: str                         # the finding file, relative to the module root
    then: tuple[str, str]                # (package, dataset) the finding's halves were drawn with
    now: tuple[str, str]
    held_out: int
    moved: int
    missing: int
    seen: int

    def text(self, experiment: str) -> str:
        parts = []
        if self.then != self.now:
            renamed = " and ".join(f"{what} {a} is now {b}" for what, a, b in
                                   zip(("package", "dataset"), self.then, self.now) if a != b)
            parts.append(f"{renamed}, which draws other halves: {self.moved} of the {self.held_out} cases it "
                         f"held out are working cases now, and {self.seen} of today's held-out cases were working "
                         "cases then")
        if self.missing:
            parts.append(f"{self.missing} of the {self.held_out} cases it held out are in the dataset under no name "
                         "any more (renamed or removed; a renamed case is a new case and may land in either half)")
        return (f"experiment {experiment}: finding {self.finding} was decided on other halves: " + "; ".join(parts)
                + ", so the held-out half is no longer unseen")


def halves(project: Project, experiment_id: str) -> Halves:
    spec = project.runnable_experiment(experiment_id).spec
    dataset_id = spec.cases.dataset
    cases = splitting.selected(project.datasets[dataset_id].spec, dict(spec.cases.tags))
    side = {c.name: splitting.split_of(project.package, dataset_id, c.name) for c in cases}
    counts: Counter = Counter()
    for case in cases:
        for tag, value in case.tags.items():
            counts[(f"{tag}={value}", side[case.name])] += 1
    tags = sorted({t for t, _ in counts})
    return Halves(experiment_id, dataset_id, dict(spec.cases.tags), [c.name for c in cases if side[c.name] == "dev"],
                  sum(s == "holdout" for s in side.values()),
                  {t: (counts[(t, "dev")], counts[(t, "holdout")]) for t in tags}, spec.plan.cases)


def reshuffles(project: Project, experiment_id: str) -> list[Reshuffle]:
    """The held-out findings of the experiment whose halves are not today's."""
    spec = project.runnable_experiment(experiment_id).spec
    dataset_id = spec.cases.dataset
    dataset = project.datasets.get(dataset_id)
    names = [c.name for c in splitting.selected(dataset.spec, dict(spec.cases.tags))] if dataset else []
    out = []
    for path, finding in read_findings(project.root, project.package):
        if finding.get("experiment") != experiment_id or finding.get("scope", {}).get("split") != "holdout":
            continue
        salt = finding["method"]["salt"]
        held = set(finding["scope"].get("case_keys") or ()) or {    # older findings: the keys of their data
            key for per_metric in finding["data"]["variants"].values() for per_case in per_metric.values() for key in per_case}
        then = (salt.rsplit("/", 1)[0], finding["scope"]["dataset"])
        found = [n for n in names if case_key(salt, n) in held]
        moved = sum(splitting.split_of(project.package, dataset_id, n) == "dev" for n in found)
        missing = len(held) - len(found)
        seen = sum(splitting.split_of(*then, n) == "dev" for n in names
                   if splitting.split_of(project.package, dataset_id, n) == "holdout")
        if moved or missing or seen:
            out.append(Reshuffle(path.relative_to(project.root).as_posix(), then, (project.package, dataset_id),
                                 len(held), moved, missing, seen))
    return out
