"""What the experiment rules of `aqven check` share: the experiment being checked, its subject flow, and the
list its diagnostics go to. Each family of rules (subject_rules.py, case_rules.py, variant_rules.py,
check_rules.py, question_rules.py) is a RuleFamily over one ExperimentScope."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Callable

from ..check.context import CheckContext
from ..diagnostics import Diagnostic
from ..engine.flow_view import FlowView, node_outputs
from ..project.model import Flow, RunnableExperiment
from ..project.yamlpos import YamlDoc


def location(d: Diagnostic) -> str:
    loc = d.file
    if d.line is not None:
        loc += f":{d.line}" + (f":{d.column}" if d.column is not None else "")
    return loc


def listing(values: Iterable[str]) -> str:
    return ", ".join(values) or "none"


@dataclass(frozen=True)
class CaseFinding:
    """A problem of one dataset case, found for one experiment. The same problem (same code, file, key
    below the case, message) in many cases and experiments is one diagnostic: at its first case, with
    the count of the others and the experiments it concerns."""
    code: str
    doc: YamlDoc
    index: int                 # the case's position in the dataset
    case: str
    loc: tuple                 # the key path below cases[index]
    problem: str
    hint: str


def more_cases(n: int, which: str = "") -> str:
    return f" (and {n} more {which}case{'s' if n > 1 else ''})" if n > 0 else ""


# why a check's judge is not validated by a held-out finding of its validated_by, or None (the findings layer's
# rule, findings/judges.py why_unvalidated, handed in by api/check.py: the finding files are read above here)
Unvalidated = Callable[[RunnableExperiment, Any], "str | None"]


class ExperimentScope:
    """One experiment under check: what every rule family reads, and `out`, where its diagnostics go."""

    def __init__(self, ctx: CheckContext, exp: RunnableExperiment, unvalidated: Unvalidated) -> None:
        self.ctx = ctx
        self.unvalidated = unvalidated
        self.project = ctx.project
        self.exp = exp
        self.spec = exp.spec
        self.doc = exp.doc
        self.e = f"experiment {exp.id}"
        self.out: list[Diagnostic] = []
        self.subject: Flow | None = self.find_flow(self.spec.subject.flow)
        self.broken_flows = ctx.project.unreadable["flow"] | exp.unreadable["flow"]
        self.view: FlowView | None = (FlowView.of(self.subject, self.find_flow, self.broken_flows)
                                      if self.subject else None)
        self.factor_ok: dict[tuple[int, str], bool] = {}     # (variant index, slot) -> value passed the factor rules
        self.case_findings: list[CaseFinding] = []           # problems of dataset cases: merged across experiments

    def find_flow(self, flow_id: str) -> Flow | None:
        """A local flow of the experiment first, then a project flow (seed rule)."""
        return self.exp.flows.get(flow_id) or self.project.flows.get(flow_id)

    def diag(self, code: str, path: tuple, message: str, hint: str | None = None) -> None:
        self.out.append(self.doc.diag(code, path, message, hint))


class RuleFamily(ExperimentScope):
    """A family of rules over one experiment. `steps` names its rules in the order they run; every family
    of one check shares its scope's state (a variant's factor_ok set by one family is read by another)."""
    steps: tuple[str, ...] = ()

    def __init__(self, scope: ExperimentScope) -> None:
        self.__dict__ = scope.__dict__       # the scope's own attributes, not a copy

    @property
    def range_ok(self) -> bool:
        s, order = self.spec.subject, self.subject.spec.order if self.subject else []
        return s.from_ is None or (s.from_ in order and s.to in order and order.index(s.from_) <= order.index(s.to))

    # the rules below that read the subject take its view (`self.view`, None when the subject flow is not found;
    # `view.flow` is the subject)
    def in_subject(self, view: FlowView) -> set[str]:
        """Node ids the subject runs: the whole flow, or the top-level nodes of the range and their children."""
        s = self.spec.subject
        if s.from_ is None or s.to is None or not self.range_ok:     # a range sets both (the Subject's validator)
            return view.reachable()
        order = view.flow.spec.order
        out: set[str] = set()
        for top in order[order.index(s.from_): order.index(s.to) + 1]:
            view.descendants(top, out)
        return out

    def subject_output(self, view: FlowView) -> tuple[dict[str, str] | None, str]:
        """The subject's output fields and how to name it in messages."""
        s = self.spec.subject
        if s.to is None:
            return self.ctx.types.fields(view.flow.spec.output), f"the output {view.flow.spec.output} of flow {s.flow}"
        node = view.nodes.get(s.to)
        fields = node_outputs(self.ctx, view, s.to, node) if node else None
        return fields, f"the output of node {s.to}"

    def subject_input(self, view: FlowView) -> tuple[dict[str, str] | None, str]:
        t = view.flow.spec.input
        return self.ctx.types.fields(t), f"the input {t} of flow {view.flow.id}"
