"""Held-out cases are spent once. A held-out case that gave a finding is never run again by a rerun
(`--lf`, `--sw`, the same command again, crash recovery): an experiment whose held-out cases gave a
finding starts no new held-out series unless a person asks for one, and then only on fresh cases.

What is spent is known from the project database (the cases of every series with a recorded finding) or,
without one (a fresh clone, a database set aside), from the committed finding files: each names its cases
by salted keys (`scope.case_keys`, and the keys of its per-case data): findings/spent.py reads both. Nothing
here writes anything."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..project.model import RunnableExperiment
from ..stats.model import case_key


@dataclass
class Spent:
    """The held-out cases of one experiment that gave a finding, and those findings."""
    names: set[str] = field(default_factory=set)        # case names (from the database)
    keys: set[str] = field(default_factory=set)         # salted case keys (from finding files)
    findings: list[dict] = field(default_factory=list)  # {series, state, statement, path, finished_at, cases, keys}
    open_series: bool = False                            # a held-out series of the experiment is still open
    # the same read again, for a series that finds its cases taken by another run's finding as it opens
    reread: Callable[[], Spent] | None = field(default=None, repr=False, compare=False)

    def __bool__(self) -> bool:
        return bool(self.names or self.keys)

    def among(self, names: list[str], salt: str) -> set[str]:
        """Which of these case names are spent."""
        return {n for n in names if n in self.names or (self.keys and case_key(salt, n) in self.keys)}

    def overlapping(self, names: list[str], salt: str) -> list[str]:
        """The series of the findings that used any of these cases."""
        keys = {case_key(salt, n) for n in names}
        return sorted(f["series"] for f in self.findings if f["keys"] & keys)

    @property
    def latest(self) -> dict | None:
        return max(self.findings, key=lambda f: (f["finished_at"] or "", f["series"]), default=None)


class Standing:
    """A held-out run of an experiment whose held-out cases already gave a finding: nothing runs, the latest
    finding's verdict is reported, and the reason says which finding and how to get fresh cases."""

    def __init__(self, experiment: RunnableExperiment, used: Spent, held_out: int, *,
                 fresh_wanted: bool = False) -> None:
        self.experiment = experiment.id
        self.finding = used.latest or {}
        self.fresh_wanted = fresh_wanted
        self.dataset = experiment.spec.cases.dataset
        self.held_out = held_out                # the held-out cases the experiment selects
        self.running_in: str | None = None      # the series another run is running on these cases

    @classmethod
    def running(cls, experiment: RunnableExperiment, series_id: str) -> Standing:
        """The held-out cases are run by an open series of another run (that run decides them): open, no
        finding yet."""
        out = cls(experiment, Spent(), 0)
        out.running_in = series_id
        out.finding = {"series": series_id, "state": "open",
                       "statement": f"series {series_id} of another run is running these held-out cases"}
        return out

    @property
    def state(self) -> str | None:
        return self.finding.get("state")

    @property
    def finding_words(self) -> str:
        f = self.finding
        return f"finding {f.get('path') or f.get('series')} ({f.get('state')})"

    @property
    def why(self) -> str:
        if self.running_in is not None:
            return (f"held-out cases are spent once: the held-out cases of {self.experiment} are being run by series "
                    f"{self.running_in}, which another run started and is running; nothing ran here. That run "
                    f"decides it and writes its finding; the same command then reports it.")
        fresh = (f"For fresh cases: add cases to datasets/{self.dataset}.yaml (about twice what the series needs: "
                 f"half land on the held-out side) and run with --aqven-new-series, which takes only held-out cases "
                 f"no finding used. --aqven-respend-holdout runs the spent cases again, recorded in the new finding.")
        if self.fresh_wanted:
            return (f"held-out cases are spent once: all {self.held_out} held-out cases of {self.experiment} already "
                    f"gave a finding (the latest: {self.finding_words}), so --aqven-new-series has none to run. "
                    + fresh)
        return (f"held-out cases are spent once: the held-out cases of {self.experiment} already gave "
                f"{self.finding_words}, which stands; nothing ran. " + fresh)

    @property
    def short(self) -> str:
        """The collection report's reason (the terminal summary says the rest)."""
        if self.running_in is not None:
            return f"held-out cases taken: series {self.running_in} of another run is running them, nothing ran"
        return (f"held-out cases spent: {self.finding_words} stands, nothing ran"
                + ("; no fresh held-out case for --aqven-new-series" if self.fresh_wanted else ""))

    def entry(self, file_nodeid: str) -> dict:
        """What travels on the collection report (xdist too) to the verdict the controller reports."""
        f = self.finding
        return {"experiment": self.experiment, "file_nodeid": file_nodeid, "state": f.get("state"),
                "statement": f.get("statement"), "finding": f.get("path"), "series": f.get("series"), "why": self.why,
                "short": self.short}
