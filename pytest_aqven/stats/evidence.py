"""The sufficient data of a verdict, and a table built back from it.

A finding carries, per variant, metric and case, exactly what the intervals read: successes and
attempts of a rate, the attempt values of a mean or a quantile, cost and pass of each attempt of a
ratio. Cases are named by a salted hash of their name (`case_key`), never by their text; the verdict
is computed on those keys already, so deciding again from the data (`EvidenceTable`) gives the same
cells, bound for bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .model import Guardrail, Look, Pair, SeriesFacts, Threshold
from .samples import MetricInfo, Sample, SampleTable, Unmeasured, metric_info


def _number(x: float) -> int | float:
    """An int when the float is one (compact YAML), else the float itself (repr round-trips exactly)."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _numbers(values: np.ndarray) -> list[int | float]:
    """`_number` of every value, at numpy's speed."""
    out: list[int | float] = values.tolist()
    whole = (values == np.floor(values)) & (np.abs(values) < 2**53)
    if whole.all():
        ints: list[int | float] = values.astype(np.int64).tolist()
        return ints
    for i in np.flatnonzero(whole).tolist():
        out[i] = int(out[i])
    return out


def sample_data(sample: Sample) -> dict[str, Any]:
    """{case key: data} of one variant's sample of one metric."""
    shape = sample.info.shape
    sizes = sample.sizes.tolist()
    if shape == "rate":
        return {case: [k, n] for case, k, n in zip(sample.cases, _numbers(sample.sums()), sizes)}
    flat: list[Any] = _numbers(sample.flat)
    if shape == "ratio":
        assert sample.flat_passes is not None, "a ratio's sample holds its passes"
        flat = list(map(list, zip(flat, _numbers(sample.flat_passes))))
    out: dict[str, Any] = {}
    start = 0
    for case, n in zip(sample.cases, sizes):
        end = start + n
        out[case] = flat[start:end]
        start = end
    return out


def data_sample(info: MetricInfo, data: Mapping[str, Sequence[Any]]) -> Sample:
    """The Sample that `sample_data` was taken from (rates: successes first; nothing reads their order)."""
    cases = sorted(data)
    if info.shape == "rate":
        groups = [[1.0] * int(data[c][0]) + [0.0] * (int(data[c][1]) - int(data[c][0])) for c in cases]
        return Sample.from_groups(info, cases, groups)
    if info.shape == "ratio":
        return Sample.from_groups(info, cases, [[float(c) for c, _ in data[k]] for k in cases],
                                  [[float(p) for _, p in data[k]] for k in cases])
    return Sample.from_groups(info, cases, [[float(v) for v in data[c]] for c in cases])


def sufficient_data(table: SampleTable, facts: SeriesFacts, metrics: Mapping[str, Mapping[str, object]]
                    ) -> dict[str, Any]:
    """Tallies and per-case data of every metric of every variant of `metrics` (an ExperimentVerdict's table)."""
    finished, settled, errors = table.tallies()
    variants: dict[str, dict[str, dict[str, Any]]] = {}
    for variant in facts.variants:
        names = sorted(metrics.get(variant, {}))
        variants[variant] = {m: sample_data(table.sample(variant, metric_info(m, facts.check_kinds, facts.check_scales))) for m in names}
    data: dict[str, Any] = {"attempts": finished, "settled": settled, "infra_errors": errors, "variants": variants}
    missing = table.unmeasured()
    if missing.attempts:    # written only when some were: every other finding stays as it was
        data["unmeasured"] = {"budget_cut": missing.by_outcome.get("budget_cut", 0),
                              "cancelled": missing.by_outcome.get("cancelled", 0),
                              "variants": {v: dict(cases) for v, cases in missing.per_case.items()}}
    return data


class EvidenceTable:
    """What `decide_table` reads, from a finding's sufficient data."""

    def __init__(self, data: Mapping[str, Any], check_kinds: Mapping[str, str]) -> None:
        self.data = data
        self.check_kinds = check_kinds

    def tallies(self) -> tuple[int, int, int]:
        return int(self.data["attempts"]), int(self.data["settled"]), int(self.data["infra_errors"])

    def unmeasured(self) -> Unmeasured:
        """Nothing when the data have no `unmeasured`: every attempt was measured, or the finding was written
        before unmeasured attempts counted (it was decided on the measured ones alone)."""
        if "unmeasured" not in self.data:
            return Unmeasured()
        missing = self.data["unmeasured"]
        per_case = {v: {c: int(n) for c, n in cases.items()} for v, cases in missing["variants"].items()}
        total = sum(sum(cases.values()) for cases in per_case.values())
        cut, cancelled = int(missing["budget_cut"]), int(missing["cancelled"])
        counts = {"infra_error": total - cut - cancelled, "budget_cut": cut, "cancelled": cancelled}
        return Unmeasured(per_case, {outcome: n for outcome, n in counts.items() if n > 0})

    def sample(self, variant: str, info: MetricInfo) -> Sample:
        per_case = self.data["variants"].get(variant, {}).get(info.name, {})
        return data_sample(info, per_case)


def question_dict(question: Threshold | Pair | Look) -> dict[str, Any]:
    kind = "look" if isinstance(question, Look) else "threshold" if isinstance(question, Threshold) else question.kind
    fields = dataclasses.asdict(question)
    if "guardrails" in fields:      # a list, as YAML reads it back (the same text and hash as the tuple)
        fields["guardrails"] = list(fields["guardrails"])
    return {"kind": kind, **fields}


def question_from(d: Mapping[str, Any]) -> Threshold | Pair | Look:
    fields = {k: v for k, v in d.items() if k != "kind"}
    if d["kind"] == "look":
        return Look()
    if d["kind"] == "threshold":
        return Threshold(**fields)
    fields["guardrails"] = tuple(Guardrail(**g) for g in fields.get("guardrails", ()))
    return Pair(**{**fields, "kind": d["kind"]})

