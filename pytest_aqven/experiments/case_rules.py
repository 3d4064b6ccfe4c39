"""The case rules: the dataset exists and fits the subject, the selected cases fit its input, output and range."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..check.context import CheckContext
from ..diagnostics import Diagnostic
from ..engine.flow_view import FlowView, node_outputs
from ..engine.ref_rules import parse_steps
from .rule_scope import CaseFinding, RuleFamily, listing, more_cases
from .split import selected

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..project import specs
    from ..project.model import Dataset


def _tag_values(cases: Sequence[specs.CaseSpec], tags: dict[str, str]) -> str:
    """The values the dataset has for each tag of the filter that no case carries with its value (a typo):
    `tag topic has: defect, refund`; or that the tags match apart but no case carries them all."""
    said = []
    for key, value in tags.items():
        have = sorted({c.tags[key] for c in cases if key in c.tags})
        if value not in have:
            said.append(f"tag {key} has: {', '.join(have)}" if have else f"no case has tag {key}")
    return "; ".join(said) or "each tag selects cases, but no case carries them all"


class CaseRules(RuleFamily):
    """The dataset and its selected cases, read against the subject."""
    steps = ("case_rules",)

    def case_rules(self) -> None:
        sel, e = self.spec.cases, self.e
        dataset = self.project.datasets.get(sel.dataset)
        if dataset is None and self.ctx.unreadable("dataset", sel.dataset):
            return
        if dataset is None:
            self.diag("E_DATASET_UNKNOWN", ("cases", "dataset"), f"{e}: dataset {sel.dataset} does not exist in the project",
                      f"name a dataset of datasets/ ({listing(sorted(self.project.datasets))})")
            return
        mismatch = self.dataset_mismatch(dataset)
        chosen = selected(dataset.spec, sel.tags)
        if not chosen:
            tags = ", ".join(f"{k}={v}" for k, v in sel.tags.items())
            self.diag("E_CASES_EMPTY", ("cases", "tags"), f"{e}: tags {tags} select no case of dataset {dataset.id}",
                      "tag the cases of the dataset or relax the tag filter under cases.tags; "
                      + _tag_values(dataset.spec.cases, sel.tags))
            return
        if self.spec.plan.cases is not None and self.spec.plan.cases > len(chosen):
            self.diag("W_PLAN_EXCEEDS_CASES", ("plan", "cases"),
                      f"{e}: plan.cases is {self.spec.plan.cases}, but dataset {dataset.id} has {len(chosen)} selected cases",
                      "add cases to the dataset or lower plan.cases: a series runs each selected case at most once per repeat")
        if self.view is not None and not mismatch:
            self.case_inputs(self.view, dataset, chosen)
            self.range_fixtures(self.view, dataset, chosen)
            self.expected_fit(self.view, dataset, chosen)
        for i, check in enumerate(self.spec.checks):
            if check.use == "expected":
                self.expected_missing(i, check, dataset, chosen)

    def dataset_mismatch(self, dataset: Dataset) -> bool:
        if self.subject is None:
            return False
        e, s, ds = self.e, self.subject, dataset
        if s.local_to is None:
            if ds.spec.flow != s.id:
                owner = f"flow {ds.spec.flow}" if ds.spec.flow else "no flow"
                self.diag("E_DATASET_MISMATCH", ("cases", "dataset"),
                          f"{e}: dataset {ds.id} belongs to {owner}, but the subject is flow {s.id}",
                          f"pick a dataset with flow: {s.id}; only a local flow of the experiment runs a dataset without flow")
                return True
            return False
        bound = self.project.flows.get(ds.spec.flow) if ds.spec.flow else None
        if bound is None:
            return False
        for side in ("input", "output"):
            own, theirs = getattr(s.spec, side), getattr(bound.spec, side)
            if own != theirs:
                self.diag("E_DATASET_MISMATCH", ("cases", "dataset"),
                          f"{e}: dataset {ds.id} belongs to flow {bound.id}, whose {side} type {theirs} differs from "
                          f"{side} type {own} of local flow {s.id}",
                          f"give local flow {s.id} the input and output types of flow {bound.id}, or pick a dataset without flow")
                return True
        return False

    def case_inputs(self, view: FlowView, dataset: Dataset, chosen: list[specs.CaseSpec]) -> None:
        """Each selected case's inputs fit the subject's input type (only the given fields for a range)."""
        type_id = view.flow.spec.input
        if self.ctx.types.problem(type_id):
            return
        try:
            model = self.project.types.named(type_id)
        except LookupError:
            return
        fields = self.ctx.types.fields(type_id)
        partial = self.spec.subject.from_ is not None
        index = {id(c): i for i, c in enumerate(dataset.spec.cases)}
        for case in chosen:
            errors = _input_errors(self.ctx, model, fields, case.inputs, partial)
            if not errors:
                continue
            loc, msg = errors[0]
            self.case_findings.append(CaseFinding(
                "E_CASE_INPUTS_INVALID", dataset.doc, index[id(case)], case.name, ("inputs",) + loc,
                f"inputs do not fit {self.subject_input(view)[1]}"
                + (" (a range subject reads the fields it is given)" if partial else "")
                + f": {'.'.join(map(str, loc)) or 'inputs'}: {msg}",
                f"fields of {type_id}: {listing(fields or [])}"))

    def expected_fit(self, view: FlowView, dataset: Dataset, chosen: list[specs.CaseSpec]) -> None:
        """An expected_output the subject can never produce (an enum value that does not exist, a number
        where text is expected) would silently bias every metric that compares with it."""
        fields, side = self.subject_output(view)
        if fields is None:
            return
        index = {id(c): i for i, c in enumerate(dataset.spec.cases)}
        for case in chosen:
            want = case.expected_output
            if not isinstance(want, dict):
                continue
            for key, value in want.items():
                path = ("cases", index[id(case)], "expected_output", key)
                if key not in fields:
                    continue            # other fields serve other subjects (a range reads a part of the output)
                try:
                    self.ctx.adapter(fields[key]).validate_python(value)
                    continue
                except ValidationError as exc:
                    err = exc.errors()[0]
                    loc = tuple(err["loc"])
                    problem = f"{'.'.join(map(str, (key,) + loc))}: {err['msg'].lower()}"
                except LookupError:        # an unknown type is reported where it is named
                    continue
                self.case_findings.append(CaseFinding(
                    "E_EXPECTED_INVALID", dataset.doc, index[id(case)], case.name, path[2:] + loc,
                    f"expected_output does not fit {side}: {problem}",
                    f"fields of {side}: {listing(fields)}; a value the subject cannot produce biases the metric"))

    def range_fixtures(self, view: FlowView, dataset: Dataset, chosen: list[specs.CaseSpec]) -> None:
        """A range reads the nodes above it from each case's node_outputs: every such node must be there."""
        s = self.spec.subject
        if s.from_ is None or s.to is None or not self.range_ok:     # a range sets both (the Subject's validator)
            return
        order = view.flow.spec.order
        above = set(order[: order.index(s.from_)])
        inside: set[str] = set()
        for top in order[order.index(s.from_): order.index(s.to) + 1]:
            view.descendants(top, inside)
        needed: dict[str, str] = {}                 # node above the range -> first reference to it
        for node_id in sorted(inside):
            node = view.nodes.get(node_id)
            for text in _refs(node.spec.model_dump(by_alias=True)) if node else ():
                parsed = parse_steps(text)
                if not isinstance(parsed, str) and parsed[0] in above and parsed[1][:1] == ("out",):
                    needed.setdefault(parsed[0], text)
        for node_id, text in sorted(needed.items(), key=lambda kv: order.index(kv[0])):
            missing = [c for c in chosen if node_id not in c.node_outputs]
            if missing:
                more = more_cases(len(missing) - 1, "selected ")
                self.diag("E_RANGE_FIXTURE_MISSING", ("subject", "from"),
                          f"{self.e}: the range {s.from_}..{s.to} reads {text}, but case {missing[0].name} of dataset "
                          f"{dataset.id} has no node_outputs.{node_id}{more}",
                          f"add node_outputs.{node_id} to the cases of dataset {dataset.id}, or start the range at "
                          f"{node_id}: the nodes above a range do not run, their outputs come from each case")
            self.fixture_types(view, dataset, chosen, node_id)

    def fixture_types(self, view: FlowView, dataset: Dataset, chosen: list[specs.CaseSpec], node_id: str) -> None:
        """The node_outputs a range reads in place of a node fit that node's output: each given field its
        type (a fixture may give only the fields the range reads)."""
        node = view.nodes.get(node_id)
        fields = node_outputs(self.ctx, view, node_id, node) if node else None
        if fields is None:
            return
        index = {id(c): i for i, c in enumerate(dataset.spec.cases)}
        for case in chosen:
            given = case.node_outputs.get(node_id)
            if given is None:
                continue
            if not isinstance(given, dict):
                found = [((), "a record of the node's out fields is expected")]
            else:
                found = [((key,) + loc, msg) for key, value in given.items() if key in fields
                         for loc, msg in [self.value_error(fields[key], value)] if msg]
            if found:
                loc, msg = found[0]
                self.case_findings.append(CaseFinding(
                    "E_RANGE_FIXTURE_INVALID", dataset.doc, index[id(case)], case.name, ("node_outputs", node_id) + loc,
                    f"node_outputs.{node_id} does not fit the output of node {node_id}, which the range reads in its "
                    f"place: {'.'.join(map(str, loc)) or node_id}: {msg}",
                    f"fields of the output of node {node_id}: {listing(fields)}"))

    def value_error(self, type_ref: str, value: Any) -> tuple[tuple, str | None]:
        """(where, why) a value does not fit a type, by the engine's validator; (loc, None) when it fits."""
        try:
            self.ctx.adapter(type_ref).validate_python(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            return tuple(err["loc"]), err["msg"].lower()
        except LookupError:          # an unknown type is reported where it is named
            pass
        return (), None

    def expected_missing(self, i: int, check: specs.ExperimentCheck, dataset: Dataset, chosen: list[specs.CaseSpec]) -> None:
        """One diagnostic per check: the first selected case that cannot be compared, and how many more."""
        fields = (check.with_ or {}).get("fields")
        fields = fields if isinstance(fields, list) and all(isinstance(f, str) for f in fields) else None
        found = []
        for case in chosen:
            want = case.expected_output
            if want is None:
                found.append((case, "there is no expected_output", "expected_output"))
            elif fields and not isinstance(want, dict):
                found.append((case, f"expected_output is not an object with the fields {', '.join(fields)}",
                              f"an expected_output object with the fields {', '.join(fields)}"))
            elif fields and [f for f in fields if f not in want]:
                absent = ", ".join(f for f in fields if f not in want)
                found.append((case, f"expected_output lacks the fields {absent}", f"the fields {absent} under expected_output"))
        if not found:
            return
        case, problem, wanted = found[0]
        more = more_cases(len(found) - 1, "selected ")
        self.diag("E_EXPECTED_MISSING", ("checks", i, "use"),
                  f"{self.e}: check {check.id} uses the built-in expected, but in case {case.name} {problem}{more}",
                  f"add {wanted} to case {case.name} of dataset {dataset.id}, or narrow cases.tags to cases that carry it")


def merge_case_findings(found: dict[str, list[CaseFinding]]) -> dict[str, list[Diagnostic]]:
    """experiment id -> its case diagnostics, each problem once for every experiment that meets it."""
    groups: dict[tuple, list[tuple[str, CaseFinding]]] = {}
    for eid, findings in found.items():
        for f in findings:
            groups.setdefault((f.code, f.doc.file, f.loc, f.problem, f.hint), []).append((eid, f))
    out: dict[str, list[Diagnostic]] = {eid: [] for eid in found}
    for entries in groups.values():
        experiments = sorted({eid for eid, _ in entries})
        cases = sorted({(f.index, f.case): f for _, f in entries}.items())
        (index, name), first = cases[0]
        who = f"experiment{'s' if len(experiments) > 1 else ''} {', '.join(experiments)}"
        diagnostic = first.doc.diag(first.code, ("cases", index) + first.loc,
                                    f"{who}: case {name}: {first.problem}{more_cases(len(cases) - 1)}", first.hint)
        for eid in experiments:
            out[eid].append(diagnostic)
    return out


def _refs(value: Any):
    """Every $reference string inside a node's data."""
    if isinstance(value, str) and value.startswith("$"):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _refs(v)


def _input_errors(ctx: CheckContext, model: type[BaseModel], fields: Any, inputs: Any, partial: bool) -> list[tuple[tuple, str]]:
    """(location, message) of what in `inputs` does not fit; a range subject checks only given fields."""
    try:
        if not partial:
            model.model_validate(inputs)
            return []
        if not isinstance(inputs, dict):
            return [((), "inputs must be a mapping of fields")]
        for key, value in inputs.items():
            if fields is not None and key not in fields:
                return [((key,), "extra inputs are not permitted")]
            if fields is not None:
                try:
                    ctx.adapter(fields[key]).validate_python(value)
                except ValidationError as exc:
                    err = exc.errors()[0]
                    return [((key,) + tuple(err["loc"]), err["msg"].lower())]
        return []
    except ValidationError as exc:
        err = exc.errors()[0]
        return [(tuple(err["loc"]), err["msg"].lower())]
    except LookupError:          # an unknown type: reported where the type is named
        return []
