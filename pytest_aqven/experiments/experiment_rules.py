"""The experiment rules of `aqven check` (the seed's table "What aqven check catches").

Every message and hint follows the templates of AQVEN's diagnostic reference; each diagnostic points
at the key of experiment.yaml (or of the dataset, or of the file) that is wrong."""
from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, cast

from pydantic import BaseModel, ValidationError

from ..check.context import CheckContext, internal_error
from ..check.typeinfo import OPAQUE
from ..diagnostics import Diagnostic
from ..engine.checks import CheckInvalid, params_model
from ..engine.evaluators import EvalContext
from ..engine.flow_rules import EVALUATOR_PARAMS, FlowView, compile_flow, judge_rules, node_outputs, parse_steps
from ..engine.refs import RefError, lex
from ..project import specs
from ..project.loader import Flow, InferenceAmbiguous, RunnableExperiment, judge_levels, level_names, load_inference
from ..project.specs import SERIES_METRICS, PairQuestion, ThresholdQuestion
from ..project.types import BUILTINS as BUILTIN_TYPES
from ..project.yamlpos import YamlDoc
from .factors import use_nodes
from .split import selected

WANTED_KIND = {"agent": "llm", "prompt": "llm", "flow": "call"}
RATE_METRICS = ("success_rate", "schema_valid_first_try", "infra_error_rate")
NONNEGATIVE_METRICS = ("cost_usd", "cost_of_pass", "latency_p50_ms", "latency_p95_ms")
SCORING_BUILTINS = {"cost_usd": "the subject's cost in USD", "latency_ms": "the subject's latency in ms"}
SKIPPED_PARTS = ("__pycache__", "findings")


def location(d: Diagnostic) -> str:
    loc = d.file
    if d.line is not None:
        loc += f":{d.line}" + (f":{d.column}" if d.column is not None else "")
    return loc


def _names(values) -> str:
    return ", ".join(values) or "none"


def _tag_values(cases, tags: dict[str, str]) -> str:
    """The values the dataset has for each tag of the filter that no case carries with its value (a typo):
    `tag topic has: defect, refund`; or that the tags match apart but no case carries them all."""
    said = []
    for key, value in tags.items():
        have = sorted({c.tags[key] for c in cases if key in c.tags})
        if value not in have:
            said.append(f"tag {key} has: {', '.join(have)}" if have else f"no case has tag {key}")
    return "; ".join(said) or "each tag selects cases, but no case carries them all"


# why a check's judge is not validated by a held-out finding of its validated_by, or None (the findings layer's
# rule, findings/judges.py why_unvalidated, handed in by api/check.py: the finding files are read above here)
Unvalidated = Callable[[RunnableExperiment, Any], "str | None"]


class ExperimentRules:
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

    def run(self) -> list[Diagnostic]:
        steps = [self.local_flows, self.orphans, self.subject_rules, self.case_rules, self.factor_rules,
                 self.variant_rules, self.unused_rules, self.check_rules, self.question_rules, self.assembly_rules]
        for step in steps:
            try:
                step()
            except Exception as exc:  # a checker bug: report it, keep the other rules running
                self.out.append(internal_error(self.doc.file, f"checking {self.e} ({step.__name__})", exc))
        return self.out

    # --- the subject's own files ------------------------------------------------------------
    def local_flows(self) -> None:
        for flow in self.exp.flows.values():
            if flow.id in self.project.flows:
                self.out.append(flow.doc.diag("E_ID_DUPLICATE", (), f"{self.e}: local flow {flow.id} has the id of a project flow",
                                              f"rename the folder experiments/{self.exp.id}/flows/{flow.id}: a local flow's "
                                              "id can't be the id of a project flow"))
            self.out += compile_flow(self.ctx, FlowView.of(flow, self.find_flow, self.broken_flows))

    def orphans(self) -> None:
        folder = self.exp.folder
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if not path.is_file() or any(p in SKIPPED_PARTS for p in rel.parts):
                continue
            parts = rel.parts
            is_flow = path.name in ("flow.yaml", "flow.yml", "flow.py")
            if is_flow and not (len(parts) == 3 and parts[0] == "flows"):
                what = "a flow"
            elif path.name.endswith(".node.yaml") and parts[0] not in ("nodes", "flows"):
                what = "a node"
            else:
                continue
            self.out.append(Diagnostic("E_ORPHAN_FILE", self.project.rel(path), (),
                                       f"{self.e}: {rel.as_posix()} is {what} outside flows/ and nodes/, so nothing runs it",
                                       None, None,
                                       f"move it to experiments/{self.exp.id}/flows/<flow_id>/ (a local flow) or "
                                       f"experiments/{self.exp.id}/nodes/<alt>/ (an alternative), or delete it if it "
                                       "is left from an older layout such as arms/"))

    def subject_rules(self) -> None:
        s = self.spec.subject
        if self.subject is None and s.flow in self.broken_flows:
            return
        if self.subject is None:
            self.diag("E_FLOW_UNKNOWN", ("subject", "flow"),
                      f"{self.e}: flow {s.flow} is neither a flow of experiments/{self.exp.id}/flows nor a flow of the project",
                      f"name a flow of the project ({_names(sorted(self.project.flows))}) or add "
                      f"experiments/{self.exp.id}/flows/{s.flow}/flow.yaml")
            return
        if s.from_ is None:
            return
        order = self.subject.spec.order
        for key, node in (("from", s.from_), ("to", s.to)):
            if node not in order:
                self.diag("E_RANGE_INVALID", ("subject", key), f"{self.e}: range node {node} is not a top-level node of {s.flow}",
                          f"set {key} to a node of the order ({', '.join(order)}); a nested node runs inside its container")
        if s.from_ in order and s.to in order and order.index(s.from_) > order.index(s.to):
            self.diag("E_RANGE_INVALID", ("subject", "from"),
                      f"{self.e}: range from {s.from_} comes after to {s.to} in the order of {s.flow}", "swap from and to")

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

    # --- cases ------------------------------------------------------------------------------
    def case_rules(self) -> None:
        sel, e = self.spec.cases, self.e
        dataset = self.project.datasets.get(sel.dataset)
        if dataset is None and self.ctx.unreadable("dataset", sel.dataset):
            return
        if dataset is None:
            self.diag("E_DATASET_UNKNOWN", ("cases", "dataset"), f"{e}: dataset {sel.dataset} does not exist in the project",
                      f"name a dataset of datasets/ ({_names(sorted(self.project.datasets))})")
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

    def dataset_mismatch(self, dataset) -> bool:
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

    def case_inputs(self, view: FlowView, dataset, chosen) -> None:
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
                f"fields of {type_id}: {_names(fields or [])}"))

    def expected_fit(self, view: FlowView, dataset, chosen) -> None:
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
                    f"fields of {side}: {_names(fields)}; a value the subject cannot produce biases the metric"))

    def range_fixtures(self, view: FlowView, dataset, chosen) -> None:
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

    def fixture_types(self, view: FlowView, dataset, chosen, node_id: str) -> None:
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
                    f"fields of the output of node {node_id}: {_names(fields)}"))

    def value_error(self, type_ref: str, value) -> tuple[tuple, str | None]:
        """(where, why) a value does not fit a type, by the engine's validator; (loc, None) when it fits."""
        try:
            self.ctx.adapter(type_ref).validate_python(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            return tuple(err["loc"]), err["msg"].lower()
        except LookupError:          # an unknown type is reported where it is named
            pass
        return (), None

    def expected_missing(self, i: int, check, dataset, chosen) -> None:
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

    # --- the factor -------------------------------------------------------------------------
    def factor_rules(self) -> None:
        varies, e = self.spec.varies, self.e
        if varies is None:
            for i, v in enumerate(self.spec.variants):
                if v.nodes:
                    self.diag("E_FACTOR_MISSING", ("variants", i, "nodes"),
                              f"{e}: variant {v.id} sets {', '.join(v.nodes)}, but the experiment declares no varies",
                              "declare varies with what (agent, prompt, use or flow) and the nodes it changes; each "
                              "variant sets values of that factor under nodes")
            return
        if self.view is None:
            return
        inside = self.in_subject(self.view)
        s = self.spec.subject
        wanted = WANTED_KIND.get(varies.what)
        for j, node_id in enumerate(varies.nodes):
            node = self.view.nodes.get(node_id)
            if node is None and self.view.unreadable(node_id):
                continue                 # its file exists but did not load: its own diagnostic says why
            if node is None or node_id not in inside:
                if node is None or s.from_ is None:
                    problem, fix = f"which is not a node of flow {s.flow}", f"name nodes of {s.flow} ({_names(sorted(inside))})"
                else:
                    problem = f"which lies outside the range {s.from_}..{s.to} of flow {s.flow}"
                    fix = f"name nodes inside the range ({_names(sorted(inside))}) or widen from and to"
                self.diag("E_FACTOR_NODE_UNKNOWN", ("varies", "nodes", j), f"{e}: varies.nodes names {node_id}, {problem}", fix)
            elif wanted is not None and node.kind != wanted:
                candidates = sorted(n for n in inside if self.view.nodes[n].kind == wanted)
                self.diag("E_FACTOR_KIND", ("varies", "nodes", j),
                          f"{e}: varies.what {varies.what} changes {wanted} nodes, but {node_id} is a {node.kind} node",
                          f"name {wanted} nodes of {s.flow} ({_names(candidates)}) or pick another varies.what")

    def variant_rules(self) -> None:
        spec, e = self.spec, self.e
        ids = [v.id for v in spec.variants]
        for i, v in enumerate(spec.variants):
            if v.id in ids[:i]:
                self.diag("E_ID_DUPLICATE", ("variants", i, "id"), f"{e}: variant id {v.id} is used twice",
                          "give every variant its own id")
        if spec.varies is None:
            return
        declared = spec.varies.nodes
        for i, v in enumerate(spec.variants):
            for slot, value in v.nodes.items():
                path = ("variants", i, "nodes", slot)
                if slot not in declared:
                    self.diag("E_VARIANT_OUTSIDE_FACTOR", path,
                              f"{e}: variant {v.id} sets {slot}, which is not in varies.nodes ({', '.join(declared)})",
                              f"add {slot} to varies.nodes or remove it from the variant: the variants of an experiment "
                              "change one factor on the nodes it declares")
                    continue
                self.factor_ok[(i, slot)] = self.value_rules(spec.varies.what, v.id, path, slot, value)
        self.duplicates()

    def value_rules(self, what: str, variant: str, path: tuple, slot: str, value: str) -> bool:
        """The value a variant puts in a slot of the factor `what` exists and fits; True when the variant can be
        assembled."""
        e, exp_id = self.e, self.exp.id
        if what == "agent" and value not in self.project.agents and self.ctx.unreadable("agent", value):
            return False
        if what == "agent" and value not in self.project.agents:
            self.diag("E_AGENT_UNKNOWN", path, f"{e}: variant {variant} puts agent {value} at {slot}, which does not exist in the project",
                      f"name an agent of agents/ ({_names(sorted(self.project.agents))})")
            return False
        if what == "prompt" and value not in self.exp.prompts:
            self.diag("E_PROMPT_MISSING", path,
                      f"{e}: variant {variant} puts prompt {value} at {slot}, but experiments/{exp_id}/prompts has no "
                      f"file {value}.md; its prompts: {_names(sorted(self.exp.prompts))}",
                      f"create experiments/{exp_id}/prompts/{value}.md or name an existing prompt")
            return False
        if what == "use" and value not in self.exp.alternatives and value in self.exp.unreadable["alternative"]:
            return False
        if what == "use" and value not in self.exp.alternatives:
            folder = f"experiments/{exp_id}/nodes"
            self.diag("E_ALTERNATIVE_UNKNOWN", path,
                      f"{e}: variant {variant} puts alternative {value} at {slot}, but {folder} has no such node; "
                      f"its alternatives: {_names(sorted(self.top_alternatives()))}",
                      f"create {folder}/{value}.node.yaml or name an existing alternative")
            return False
        if what == "flow":
            flow = self.find_flow(value)
            if flow is None and value in self.broken_flows:
                return False
            if flow is None:
                self.diag("E_FLOW_UNKNOWN", path,
                          f"{e}: variant {variant}: flow {value} is neither a flow of experiments/{exp_id}/flows nor a flow of the project",
                          f"name a flow of the project ({_names(sorted(self.project.flows))}) or add "
                          f"experiments/{exp_id}/flows/{value}/flow.yaml")
                return False
            node = self.view.nodes.get(slot) if self.view else None
            original = self.find_flow(node.spec.flow) if node is not None and node.kind == "call" else None
            if original is not None:
                for side in ("input", "output"):
                    own, expected = getattr(flow.spec, side), getattr(original.spec, side)
                    if own != expected:
                        self.diag("E_FACTOR_FLOW_CONTRACT", path,
                                  f"{e}: variant {variant} calls flow {value} at {slot}, whose {side} {own} differs "
                                  f"from {side} {expected} of flow {original.id}",
                                  f"give flow {value} the {side} type of flow {original.id}: every variant runs the same "
                                  "cases and checks")
                        return False
        return True

    def top_alternatives(self) -> list[str]:
        """Alternatives that are their folder's node (nodes/<alt>/<alt>.node.yaml), not children of one."""
        return [a for a, node in self.exp.alternatives.items() if node.path.parent.name == a]

    def duplicates(self) -> None:
        variants = self.spec.variants
        values = [tuple(sorted(v.nodes.items())) for v in variants]
        if len(set(values)) <= 1:
            return                   # an A/A experiment: every variant runs the same thing on purpose
        first: dict[tuple, str] = {}
        for i, v in enumerate(variants):
            if values[i] in first:
                self.diag("W_VARIANT_DUPLICATE", ("variants", i, "id"),
                          f"{self.e}: variant {v.id} sets the same values as variant {first[values[i]]}",
                          "change the values of one of them or remove it; to measure noise on purpose, leave every "
                          "variant as written")
            first.setdefault(values[i], v.id)

    def unused_rules(self) -> None:
        if self.subject is None:
            return
        what = self.spec.varies.what if self.spec.varies else None
        used = {value for v in self.spec.variants for value in v.nodes.values()}
        for alt in sorted(self.exp.alternatives):
            node = self.exp.alternatives[alt]
            if node.path.parent.name == alt and not (what == "use" and alt in used):
                self.unused(f"alternative {alt}", node.path)
        for name, path in sorted(self.exp.prompts.items()):
            if not (what == "prompt" and name in used):
                self.unused(f"prompt {name}", path)
        reached = self.called_flows(self.subject)
        if what == "flow":
            for value in used:
                flow = self.find_flow(value)
                if flow is not None:
                    reached |= self.called_flows(flow)
        for flow_id, flow in sorted(self.exp.flows.items()):
            if flow_id not in reached:
                self.unused(f"local flow {flow_id}", flow.folder)
        for alt, node in sorted(self.exp.alternatives.items()):
            if alt in self.subject.nodes:
                self.out.append(node.doc.diag("E_ALTERNATIVE_ID_TAKEN", (),
                                              f"{self.e}: alternative {alt} has the id of a node of {self.subject.id}",
                                              "rename the alternative file: an alternative runs under the id of its "
                                              "slot, and its own id must not shadow a node of the subject"))

    def called_flows(self, flow: Flow, seen: set[str] | None = None) -> set[str]:
        """The flow and every flow its call nodes reach."""
        seen = set() if seen is None else seen
        if flow.id in seen:
            return seen
        seen.add(flow.id)
        for node in flow.nodes.values():
            if node.kind == "call":
                target = self.find_flow(node.spec.flow)
                if target is not None:
                    self.called_flows(target, seen)
        return seen

    def unused(self, entity: str, path: Path) -> None:
        self.diag("W_ALTERNATIVE_UNUSED", ("variants",), f"{self.e}: {entity} is used by no variant",
                  f"name it in variants[].nodes or delete {self.project.rel(path)}")

    # --- checks -----------------------------------------------------------------------------
    def check_rules(self) -> None:
        e, ids = self.e, [c.id for c in self.spec.checks]
        for i, c in enumerate(self.spec.checks):
            if c.id in SERIES_METRICS:
                self.diag("E_ID_DUPLICATE", ("checks", i, "id"), f"{e}: check id {c.id} is the name of a series metric",
                          "rename the check: a metric name means the series metric")
            elif c.id in ids[:i]:
                self.diag("E_ID_DUPLICATE", ("checks", i, "id"), f"{e}: check id {c.id} is used twice",
                          "give every check its own id")
            if c.use is not None:
                self.builtin_check(i, c)
            elif c.run is not None:
                self.run_check(i, c)
            else:
                self.judge_check(i, c)

    def builtin_check(self, i: int, c) -> None:
        model = EVALUATOR_PARAMS.get(c.use)
        if model is None:
            self.diag("E_POLICY_UNKNOWN", ("checks", i, "use"), f"{self.e}: check {c.id}: use: {c.use} is not a built-in evaluator",
                      f"name a built-in evaluator ({', '.join(sorted(EVALUATOR_PARAMS))}) or run your own with run: \"<module>:<function>\"")
            return
        if self.with_params(i, c, model, f"use: {c.use}"):
            self.check_paths(i, c)
            self.builtin_intent(i, c)

    def builtin_intent(self, i: int, c) -> None:
        """Warnings where a valid declaration cannot measure what its author meant."""
        e = self.e
        if c.use in SCORING_BUILTINS and c.kind == "binary":
            self.diag("W_CHECK_NEVER_FAILS", ("checks", i, "kind"),
                      f"{e}: check {c.id}: the built-in {c.use} always passes, so as a binary check its rate is 1 "
                      f"whatever the attempts measure",
                      f"set kind: continuous to read its score ({SCORING_BUILTINS[c.use]}), or use the series metric "
                      f"{'cost_usd' if c.use == 'cost_usd' else 'latency_p50_ms'} in the question")
        elif c.use not in SCORING_BUILTINS and c.kind != "binary":
            self.diag("W_CHECK_NO_SCORE", ("checks", i, "kind"),
                      f"{e}: check {c.id}: the built-in {c.use} passes or fails and gives no score, so as a {c.kind} "
                      f"check every attempt scores an error",
                      "set kind: binary (its metric is the pass rate)")
        if c.use == "unique_items" and self.view is not None:
            path = (c.with_ or {}).get("field")
            item = self.item_type(self.view, path) if isinstance(path, str) else None
            if item is not None and self.not_record(item):
                self.diag("W_CHECK_ITEMS_NOT_RECORDS", ("checks", i, "with", "field"),
                          f"{e}: check {c.id}: unique_items compares the key {c.with_.get('key')} of each item, but the "
                          f"items of {path} are {item}, not records: every key reads null, so two items always "
                          f"count as duplicates",
                          "point field at a list of records (key names one of their fields)")

    def item_type(self, view: FlowView, path: str) -> str | None:
        """The item type of the list a $out/$in path leads to, or None when the checker cannot tell."""
        try:
            root, steps = lex(path)
        except RefError:
            return None
        fields = (self.subject_output(view) if root == "out" else self.subject_input(view))[0]
        if not steps or not isinstance(steps[0], str) or fields is None or steps[0] not in fields:
            return None
        current = fields[steps[0]]
        for step in steps[1:]:
            try:
                base, lists, _ = self.ctx.types.registry.parse_ref(current)
            except Exception:
                return None
            if step == "*" or isinstance(step, int):
                if not lists:
                    return None
                current = base + "[]" * (lists - 1)
            else:
                inner = self.ctx.types.fields(current)
                if inner is None or step not in inner:
                    return None
                current = inner[step]
        try:
            base, lists, _ = self.ctx.types.registry.parse_ref(current)
        except Exception:
            return None
        return base + "[]" * (lists - 1) if lists else None

    def not_record(self, ref: str) -> bool:
        """Known not to be a record: a list, a scalar built-in, an enum, value or id type (Json, unions and
        unknown types may hold records)."""
        try:
            base, lists, _ = self.ctx.types.registry.parse_ref(ref)
        except Exception:
            return False
        spec = self.ctx.types.registry.specs.get(base)
        return bool(lists) or (base in BUILTIN_TYPES and base not in OPAQUE) or isinstance(
            spec, (specs.EnumTypeSpec, specs.ValueTypeSpec, specs.IdTypeSpec))

    def with_params(self, i: int, c, model: type[BaseModel], label: str) -> bool:
        try:
            model.model_validate(c.with_ or {})
            return True
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = tuple(err["loc"])
            data = c.with_ or {}
            key = loc[:1] if loc and isinstance(data, dict) and loc[0] in data else ()
            where = ".".join(map(str, loc)) or "with"
            allowed = ", ".join(model.model_fields) or "none"
            self.diag("E_CHECK_PARAMS", ("checks", i, "with") + key,
                      f"{self.e}: check {c.id}: evaluator {label}: with parameters are invalid: {where}: {err['msg'].lower()}",
                      f"the parameters of {label} are: {allowed}")
            return False

    def check_paths(self, i: int, c) -> None:
        """Paths in with: start with a field of the subject's output ($out) or input ($in)."""
        if self.view is None:
            return
        for key, value in (c.with_ or {}).items():
            for text in (value if isinstance(value, list) else [value]):
                if not (isinstance(text, str) and text.startswith(("$out.", "$in."))):
                    continue
                root, _, rest = text[1:].partition(".")
                field = rest.split(".")[0].split("[")[0]
                fields, side = self.subject_output(self.view) if root == "out" else self.subject_input(self.view)
                if fields is not None and field not in fields:
                    self.diag("E_CHECK_PATH_UNKNOWN", ("checks", i, "with", key),
                              f"{self.e}: check {c.id}: path {text} starts with {field}, which is not a field of {side}",
                              f"name a field of {side}: {_names(fields)}")

    def run_check(self, i: int, c) -> None:
        fn, problem = self.ctx.resolver.resolve(c.run, self.exp.folder / "checks.py")
        if problem or fn is None:          # (None, problem) or (fn, None)
            self.diag("E_CODE_REF_UNRESOLVED", ("checks", i, "run"), f"{self.e}: check {c.id}: evaluator {problem}",
                      "write @root.<module>:<function> or <package>.<module>:<function>, and make the module import cleanly")
            return
        try:
            model = params_model(fn, c.run)
        except CheckInvalid as exc:
            self.diag("E_CODE_SIGNATURE_MISMATCH", ("checks", i, "run"), f"{self.e}: check {c.id}: {exc}",
                      "write def fn(value, context: EvalContext, params: <a pydantic model, or NoParams>) -> Verdict")
            return
        if self.with_params(i, c, model, c.run) and self.view is not None:
            self.context_fit(self.view, i, c, fn)

    def context_fit(self, view: FlowView, i: int, c, fn) -> None:
        """W_CHECK_CONTEXT_MISMATCH: the function's hints for value and context fit the subject."""
        try:
            hints = typing.get_type_hints(fn)
            names = list(inspect.signature(fn).parameters)
        except Exception:         # hints naming something that does not exist: the runtime reads them lazily
            return
        out_fields, out_side = self.subject_output(view)
        in_fields, in_side = self.subject_input(view)
        checks = [(names[0], hints.get(names[0]), out_fields, out_side)]
        ctx_hint = hints.get(names[1])
        if typing.get_origin(ctx_hint) is EvalContext:
            args = typing.get_args(ctx_hint)
            checks += [(f"{names[1]} (inputs)", args[0], in_fields, in_side),
                       (f"{names[1]} (output)", args[1], out_fields, out_side)]
        for param, hint, fields, side in checks:
            problem = _hint_problem(hint, fields)
            if problem:
                self.diag("W_CHECK_CONTEXT_MISMATCH", ("checks", i, "run"),
                          f"{self.e}: check {c.id}: parameter {param} of {c.run} expects {problem}, but it receives "
                          f"{side} (fields {_names(fields or [])})",
                          f"type it as a model of {side}, or leave it untyped")

    def judge_check(self, i: int, c) -> None:
        e = self.e
        if c.agent not in self.project.agents and not self.ctx.unreadable("agent", c.agent):
            self.diag("E_AGENT_UNKNOWN", ("checks", i, "agent"), f"{e}: check {c.id}: agent {c.agent} does not exist in the project",
                      f"name an agent of agents/ ({_names(sorted(self.project.agents))})")
        if c.validated_by is not None and c.validated_by not in self.project.experiments:
            self.diag("E_EXPERIMENT_UNKNOWN", ("checks", i, "validated_by"),
                      f"check {c.id}: validated_by names experiment {c.validated_by}, which does not exist in the project",
                      "name the experiment that measured this judge on planted defects, or remove validated_by")
        sink: list[Diagnostic] = []
        where = judge_levels(self.project, self.exp)
        try:
            inference, _ = load_inference(self.project, c.inference, sink, where, strict=True)
        except InferenceAmbiguous as exc:
            self.diag("E_JUDGE_AMBIGUOUS", ("checks", i, "inference"),
                      f"{e}: check {c.id}: judge {exc}",
                      "a judge's inference is looked up in the experiment's folder, then the subject flow's, then "
                      "the rest of the project outside experiments/, and the first level with one decides: rename "
                      "one of the files, or put "
                      "the judge's inference in this experiment's folder")
            return
        if inference is not None and c.validated_by in self.project.experiments:
            self.validation(i, c)
        if inference is None:
            if not sink:
                rel = level_names(self.project, where)
                self.diag("E_INFERENCE_UNKNOWN", ("checks", i, "inference"),
                          f"{e}: check {c.id}: inference {c.inference} has no file {c.inference}.inference.yaml in {rel}",
                          "name the inference of an llm node of the subject or of the project, or write "
                          "<id>.inference.yaml in this experiment's folder (another experiment's folder is never "
                          "searched)")
            self.out += sink
            return
        self.out += judge_rules(self.ctx, self.doc, ("checks", i, "inference"), c.inference, f"{e}: check {c.id}",
                                where)
        if self.view is None:
            return
        scope = set(self.subject_input(self.view)[0] or ()) | set(self.subject_output(self.view)[0] or ())
        for top in self.view.flow.spec.order:
            node = self.view.nodes.get(top)
            if node is not None:
                scope |= set(node_outputs(self.ctx, self.view, top, node) or ())
        s = self.spec.subject
        target = f"flow {s.flow}" if s.from_ is None else f"range {s.from_}..{s.to} of flow {s.flow}"
        for f in inference.in_:
            if f.name not in scope and f.name != "expected_output" and not f.type.endswith("?"):
                self.diag("W_JUDGE_INPUT_UNBOUND", ("checks", i, "inference"),
                          f"{e}: judge {c.inference} of check {c.id} needs input {f.name}, which no document of its "
                          f"scope carries in {target}; it is not optional, so every judge call will fail at run time "
                          "(CHECK_INPUT_MISSING, the judge not called)",
                          "the judge binds inputs by name from $in, the outputs of the top-level nodes, $out and "
                          "expected_output: rename the input or make the field optional")

    def validation(self, i: int, c) -> None:
        """W_JUDGE_UNVALIDATED: validated_by names an experiment without a standing, confirmed held-out finding
        for this very judge (agent, model, inference, prompt): verdicts resting on it stay signals."""
        why = self.unvalidated(self.exp, c)
        if why is not None:
            self.diag("W_JUDGE_UNVALIDATED", ("checks", i, "validated_by"),
                      f"{self.e}: check {c.id}: judge {c.inference} ({c.agent}) {why}; a verdict resting on it is at "
                      "most a signal",
                      f"run {c.validated_by} on held-out cases with this judge (pytest --aqven-holdout -k "
                      f"{c.validated_by}) until it is confirmed")

    # --- the question -----------------------------------------------------------------------
    def question_rules(self) -> None:
        spec, e, q = self.spec, self.e, self.spec.question
        check_ids = [c.id for c in spec.checks]
        variant_ids = list(dict.fromkeys(v.id for v in spec.variants))
        metrics: list[tuple[tuple, str]] = []
        if isinstance(q, ThresholdQuestion):
            metrics.append((("question", "metric"), q.metric))
            if q.variant is not None and q.variant not in variant_ids:
                self.diag("E_VARIANT_INVALID", ("question", "variant"),
                          f"{e}: question names variant {q.variant}, which is not declared under variants",
                          f"declare it or name one of: {', '.join(variant_ids)}")
        elif isinstance(q, PairQuestion):
            metrics.append((("question", "primary"), q.primary))
            metrics += [(("question", "guardrails", i, "metric"), g.metric) for i, g in enumerate(q.guardrails)]
            if len(spec.variants) < 2:
                self.diag("E_VARIANT_INVALID", ("question", "kind"),
                          f"{e}: question {q.kind} compares two variants, but the experiment declares {len(spec.variants)}",
                          "declare a baseline and a candidate under variants")
            else:
                for key in ("baseline", "candidate"):
                    name = getattr(q, key)
                    if name not in variant_ids:
                        self.diag("E_VARIANT_INVALID", ("question", key),
                                  f"{e}: question names variant {name}, which is not declared under variants",
                                  f"declare it or name one of: {', '.join(variant_ids)}")
        for path, metric in metrics:
            if metric not in check_ids and metric not in SERIES_METRICS:
                hint = (f"name a check id ({', '.join(check_ids)}) or a series metric ({', '.join(SERIES_METRICS)})"
                        if check_ids else f"name a series metric ({', '.join(SERIES_METRICS)}) or declare a check")
                self.diag("E_METRIC_UNKNOWN", path,
                          f"{e}: metric {metric} is neither a check id of the experiment nor a series metric", hint)
        self.question_range(q)

    def metric_range(self, metric: str) -> str | None:
        """rate (between 0 and 1), nonnegative (costs and latencies), or None when the checker cannot tell."""
        if metric in RATE_METRICS:
            return "rate"
        if metric in NONNEGATIVE_METRICS:
            return "nonnegative"
        check = next((c for c in self.spec.checks if c.id == metric), None)
        if check is not None and check.kind == "binary":
            return "rate"
        if check is not None and check.use in SCORING_BUILTINS:
            return "nonnegative"
        return None

    def question_range(self, q) -> None:
        """A question's numbers lie where its metric can decide them: a bound a rate can cross, a margin
        smaller than the whole range of a rate difference."""
        e = self.e
        if isinstance(q, ThresholdQuestion):
            # a threshold sets one of above and below (its validator)
            side, bound = ("above", q.above) if q.above is not None else ("below", cast(float, q.below))
            edge = bound + q.margin if side == "above" else bound - q.margin
            scale = self.metric_range(q.metric)
            problem = None
            if scale == "rate" and not 0 <= bound <= 1:
                problem = f"{q.metric} is a rate between 0 and 1, so {side} {bound:g} is out of its range"
            elif scale == "nonnegative" and bound < 0:
                problem = f"{q.metric} is never negative, so {side} {bound:g} is out of its range"
            elif scale == "rate" and side == "above" and edge >= 1:
                problem = (f"confirming needs the lower 95% bound of {q.metric} above {bound:g} + {q.margin:g} = "
                           f"{edge:g}, which no rate reaches (a rate is at most 1)")
            elif scale is not None and side == "below" and edge <= 0:
                problem = (f"confirming needs the upper 95% bound of {q.metric} below {bound:g} - {q.margin:g} = "
                           f"{edge:g}, which no {'rate' if scale == 'rate' else 'value'} reaches (it is never negative)")
            if problem:
                self.diag("E_QUESTION_RANGE", ("question", side), f"{e}: question threshold: {problem}",
                          "set the bound and margin inside the range of the metric: a question that cannot be "
                          "confirmed (or refuted) spends its cases on nothing")
        elif isinstance(q, PairQuestion):
            margins: list[tuple[tuple, str, float, str, bool]] = [
                (("question", "margin"), q.primary, q.margin, q.kind, False)]
            margins += [(("question", "guardrails", i, "margin"), g.metric, g.margin, "guardrail", g.relative)
                        for i, g in enumerate(q.guardrails)]
            never = {"compare": "be confirmed", "noninferior": "be refuted", "guardrail": "break"}
            for path, metric, margin, what, relative in margins:
                if not relative and margin >= 1 and self.metric_range(metric) == "rate":
                    self.diag("E_QUESTION_RANGE", path,
                              f"{e}: {'question ' + what if what != 'guardrail' else 'guardrail ' + metric}: "
                              f"margin {margin:g} on {metric}, a rate, whose differences lie between -1 and 1: "
                              f"the {'question' if what != 'guardrail' else 'guardrail'} can never {never[what]}",
                              "set a margin below 1: the difference between two rates that matters to you")

    # --- every variant compiled like a flow -------------------------------------------------
    def assembly_rules(self) -> None:
        """Each variant compiled as a flow; a problem only the variants have is reported once, at the slot of
        the first variant that meets it, naming the other variants that meet it too."""
        if self.view is None or self.spec.varies is None:
            return
        base = compile_flow(self.ctx, self.view)
        seen = {_key(d) for d in base}
        found: dict[tuple, tuple[Diagnostic, list[tuple[int, str]]]] = {}     # problem -> (it, [(variant, slot)])
        for i, v in enumerate(self.spec.variants):
            slots: list[tuple[str, str]] = []
            known = set(seen)
            for slot, value in v.nodes.items():
                if not self.factor_ok.get((i, slot)):
                    continue
                slots.append((slot, value))
                for d in compile_flow(self.ctx, self.assemble(self.view, self.spec.varies.what, slots)):
                    if _key(d) not in known:
                        known.add(_key(d))
                        found.setdefault(_key(d), (d, []))[1].append((i, slot))
        for d, where in found.values():
            (i, slot), others = where[0], [self.spec.variants[j].id for j, _ in where[1:]]
            also = f" (and variant{'s' if len(others) > 1 else ''} {', '.join(others)})" if others else ""
            line, col = self.doc.pos(("variants", i, "nodes", slot))
            self.out.append(Diagnostic(d.code, self.doc.file, ("variants", i, "nodes", slot),
                                       f"variant {self.spec.variants[i].id}: {location(d)}: {d.message}{also}",
                                       line, col, d.hint))

    def assemble(self, subject: FlowView, what: str, slots: list[tuple[str, str]]) -> FlowView:
        """The subject as a variant runs it (the seed's four factors)."""
        view = FlowView(subject.flow, dict(subject.nodes), self.find_flow, broken_flows=self.broken_flows)
        for slot, value in slots:
            if what == "agent":
                view.agents[slot] = value
            elif what == "prompt":
                view.prompts[slot] = self.exp.prompts[value]
            elif what == "flow":
                view.calls[slot] = value
        if what == "use":     # the runner assembles the same nodes (one implementation)
            view.nodes, view.replaced = use_nodes(view.nodes, view.order,
                                                  {slot: self.exp.alternatives[value] for slot, value in slots},
                                                  self.exp.alternatives)
        return view


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


def _key(d: Diagnostic) -> tuple:
    return d.code, d.file, d.path, d.message


def _input_errors(ctx: CheckContext, model, fields, inputs: Any, partial: bool) -> list[tuple[tuple, str]]:
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


def _hint_problem(hint: Any, fields: dict[str, str] | None) -> str | None:
    """How a type hint fails to describe a record with these fields, or None if it fits (or is loose)."""
    if hint is None or hint is Any or fields is None or isinstance(hint, typing.TypeVar):
        return None
    origin = typing.get_origin(hint) or hint
    if isinstance(origin, type) and issubclass(origin, BaseModel):
        missing = [n for n, f in origin.model_fields.items() if f.is_required() and n not in fields]
        return f"{origin.__name__}, whose required fields {', '.join(missing)} it lacks" if missing else None
    if not isinstance(origin, type) or issubclass(origin, dict) or origin is object \
            or origin.__name__ in ("Mapping", "MutableMapping"):
        return None
    return f"{origin.__name__}, not a record"
