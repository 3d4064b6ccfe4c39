"""The question rules: its variants and metrics exist, its bounds and margins can be decided."""
from __future__ import annotations

from typing import cast

from ..project.specs import SERIES_METRICS, PairQuestion, ThresholdQuestion
from .check_rules import SCORING_BUILTINS
from .rule_scope import RuleFamily

RATE_METRICS = ("success_rate", "schema_valid_first_try", "infra_error_rate")
NONNEGATIVE_METRICS = ("cost_usd", "cost_of_pass", "latency_p50_ms", "latency_p95_ms")


class QuestionRules(RuleFamily):
    """The question names declared variants and metrics, and its numbers lie where its metric can decide them."""
    steps = ("question_rules",)

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
