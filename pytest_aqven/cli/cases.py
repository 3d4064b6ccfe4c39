"""`aqven cases <experiment>`: the working cases by name and the per-tag counts of both halves (held-out
cases are never named), and a warning when a rename moved the halves of an experiment with findings."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .project import NoProject, Subcommands, project_argument, project_root

if TYPE_CHECKING:
    from ..project.model import Project


def add_cases(commands: Subcommands) -> None:
    p = commands.add_parser(
        "cases", help="which cases of an experiment are in the working half, and per-tag counts of both halves",
        description="Print the working cases of EXPERIMENT by name, in file order, and per tag how many cases each "
                    "half has. Held-out cases are counted, never named. Warns when a renamed package, dataset or "
                    "case moved the halves of an experiment that already has findings.")
    p.add_argument("experiment", metavar="EXPERIMENT", help="the experiment id")
    project_argument(p)
    p.set_defaults(handler=run_cases)


def run_cases(args: argparse.Namespace) -> int:
    from ..findings.halves import halves, reshuffles
    from ..project.loader import load_project
    try:
        root = project_root(args)
    except NoProject as exc:
        print(f"aqven cases: {exc}", file=sys.stderr)
        return 2
    project = load_project(root)
    experiment = project.experiments.get(args.experiment)
    if experiment is None:
        print(f"aqven cases: no experiment {args.experiment}; the project has: "
              f"{', '.join(sorted(project.experiments)) or 'none'}", file=sys.stderr)
        return 2
    if project.spec is None or experiment.spec is None or experiment.spec.cases.dataset not in project.datasets:
        print(f"aqven cases: experiment {args.experiment} or its dataset does not load; aqven check says why",
              file=sys.stderr)
        return 1
    h = halves(project, args.experiment)
    selected = f"selected by tags {', '.join(f'{k}={v}' for k, v in h.tags.items())}" if h.tags else "every case"
    print(f"{h.experiment}: dataset {h.dataset}, {selected}: {len(h.working)} working, {h.held_out} held out "
          f"(the split of package {project.package})")
    takes = f"a working series takes the first {h.plan_cases}" if h.plan_cases and h.plan_cases < len(h.working) \
        else "a working series takes them all"
    print(f"working cases, in file order ({takes}):")
    for name in h.working:
        print(f"  {name}")
    print(f"held-out cases: {h.held_out}, never named (whoever reads them starts tuning to them)")
    spent_line = _spent(project, args.experiment, h.held_out)
    if spent_line:
        print(spent_line)
    if h.tag_counts:
        width = max(len("tag"), *map(len, h.tag_counts))
        print(f"{'tag':<{width}}  working  held out")
        for tag, (working, held_out) in h.tag_counts.items():
            print(f"{tag:<{width}}  {working:>7}  {held_out:>8}")
    for moved in reshuffles(project, args.experiment):
        print(f"warning: {moved.text(args.experiment)}")
    return 0


def _spent(project: Project, experiment_id: str, held_out: int) -> str | None:
    """How many held-out cases findings spent and how many remain (a series stopped early spends only the cases
    it reached); None before any finding."""
    from ..experiments import split as splitting
    from ..findings.spent import spent
    from ..stats.model import experiment_salt
    experiment = project.runnable_experiment(experiment_id)
    used = spent(project, experiment)
    if not used:
        return None
    dataset = experiment.spec.cases.dataset
    names = [c.name for c in splitting.selected(project.datasets[dataset].spec, dict(experiment.spec.cases.tags))
             if splitting.split_of(project.package, dataset, c.name) == "holdout"]
    taken = len(used.among(names, experiment_salt(project.package, experiment_id)))
    return (f"held-out cases spent by findings: {taken}; unspent: {held_out - taken} (a new held-out series, "
            f"--aqven-new-series, takes only these)")
