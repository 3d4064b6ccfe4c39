"""The check rules: built-in, code and judge checks, their parameters and what they read of the subject."""
from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from ..check.typeinfo import OPAQUE
from ..diagnostics import Diagnostic
from ..engine.checks import CheckInvalid, params_model
from ..engine.evaluators import EvalContext
from ..engine.flow_view import FlowView, node_outputs
from ..engine.inference_rules import EVALUATOR_PARAMS, judge_rules
from ..engine.refs import RefError, lex
from ..project import specs
from ..project.inferences import InferenceAmbiguous, judge_levels, level_names, load_inference
from ..project.specs import SERIES_METRICS
from ..project.types import BUILTINS as BUILTIN_TYPES
from .rule_scope import RuleFamily, listing

SCORING_BUILTINS = {"cost_usd": "the subject's cost in USD", "latency_ms": "the subject's latency in ms"}


class CheckRules(RuleFamily):
    """Each check's evaluator exists, takes its with: parameters and reads the subject it is given."""
    steps = ("check_rules",)

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
                              f"name a field of {side}: {listing(fields)}")

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

    def context_fit(self, view: FlowView, i: int, c, fn: Callable[..., Any]) -> None:
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
                          f"{side} (fields {listing(fields or [])})",
                          f"type it as a model of {side}, or leave it untyped")

    def judge_check(self, i: int, c) -> None:
        e = self.e
        if c.agent not in self.project.agents and not self.ctx.unreadable("agent", c.agent):
            self.diag("E_AGENT_UNKNOWN", ("checks", i, "agent"), f"{e}: check {c.id}: agent {c.agent} does not exist in the project",
                      f"name an agent of agents/ ({listing(sorted(self.project.agents))})")
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
