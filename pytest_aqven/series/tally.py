"""A series' attempt records folded as they arrive, then dropped: what its verdict, its finding and the
reports read, so that the controller's memory stays flat in the number of attempts.

Per variant and case it keeps what every metric's sample needs (stats/samples.py AttemptTable decides
which attempts count for which metric): bit masks of the repeats that count and that succeeded for the
rates (success, schema valid at first try, infrastructure errors, binary checks), and the values with
their repeats for the means and quantiles (cost, latency, scored checks). `TallyTable` rebuilds from them
exactly the samples AttemptTable builds from the records (the same values in the same order, so the same
verdict to the last bit: tests/series/test_tally.py compares both on random series). A series of a look keeps its
records too: the look's table shows them one by one.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from decimal import Decimal
from itertools import compress
from typing import TYPE_CHECKING, TypeGuard

from .. import codes
from ..record import AttemptRecord
from ..stats.model import case_key

if TYPE_CHECKING:
    from ..stats.samples import MetricInfo, Sample, Unmeasured

COUNTED = frozenset(codes.COUNTED)
INFRA = codes.UNCOUNTED


def _known(x: float | None) -> TypeGuard[float]:
    return x is not None and x == x         # None and NaN are unknown: left out of the metric


def _bits(mask: int) -> list[int]:
    """The repeats set in `mask`, ascending."""
    return [r for r in range(mask.bit_length()) if mask >> r & 1]


class _Values:
    """One metric's values in one case with each value's repeat (in arrival order; sorted when read)."""

    __slots__ = ("repeats", "values")

    def __init__(self) -> None:
        self.repeats = array("q")
        self.values = array("d")

    def add(self, repeat: int, value: float) -> None:
        self.repeats.append(repeat)
        self.values.append(value)

    def ordered(self) -> tuple[list[int], list[float]]:
        pairs = sorted(zip(self.repeats, self.values), key=lambda p: p[0])
        return [r for r, _ in pairs], [v for _, v in pairs]


class _Check:
    __slots__ = ("scored", "passed", "values")

    def __init__(self) -> None:
        self.scored = 0         # counted repeats where the check passed or failed
        self.passed = 0
        self.values = _Values()  # their values, when set (the mean of a score check)


class _Case:
    """One variant's attempts at one case."""

    __slots__ = ("seen", "settled", "infra", "cut", "counted", "ones", "schema", "schema_ones", "cost", "latency",
                 "checks", "known", "known_passed", "first_known", "derive")

    def __init__(self) -> None:
        self.seen = self.settled = self.infra = self.cut = self.counted = self.ones = self.schema = self.schema_ones = 0
        self.cost: _Values | None = None
        self.latency: _Values | None = None
        self.checks: dict[str, _Check] = {}
        self.known = self.known_passed = 0      # attempts with `passed` set, and those that passed (stability)
        self.first_known = 0                    # arrival number (from 1) of the first of them (stability's case
                                                # order); 0 before it
        self.derive: list | None = None         # counted attempts without `passed`: derived from the checks


class SeriesTally:
    """Everything the session end reads about one series, folded record by record (`add`)."""

    def __init__(self, series_id: str, root: str, file_nodeid: str, experiment: str, split: str,
                 keep_records: bool = False) -> None:
        self.series_id, self.root, self.file_nodeid = series_id, root, file_nodeid
        self.experiment, self.split = experiment, split
        self.records: list[AttemptRecord] | None = [] if keep_records else None
        self.done = self.reused = self.passed = self.failed_checks = self.infra = self.infra_errors = 0
        self.budget_cut = 0              # attempts the spend cap cut (an input too large for what was left of it)
        self.unpriced_calls = self.unpriced_attempts = 0
        # the largest per-attempt cost bound of the attempts whose cost counts, and whether one of them had none
        self.dearest_bound = 0.0
        self.unbounded_costs = 0
        self.inputs_changed = 0          # attempts a process refused: it read other inputs than the series recorded
        # the sums the records path computed, each in its own order of addition (arrival order)
        self.spend = 0.0                 # of (cost + check cost) per attempt: conclude
        self.cost_sum = self.check_cost_sum = 0.0   # separately: the report's spend
        self.spend_exact = Decimal(0)    # of Decimal(repr(...)): the finding's spend
        self.started_at = math.inf
        self.finished_at = -math.inf
        self.models: dict[str, set[str]] = {}
        # per variant: its attempts, and how many failed each way ((outcome, error code or None, node), counted)
        self.per_variant: dict[str, int] = {}
        self.failures: dict[str, dict[tuple[str, str | None, str | None], int]] = {}
        self.cases: dict[tuple[str, str], _Case] = {}   # (variant, case name) -> its attempts, first seen first

    @classmethod
    def of(cls, records: Iterable[AttemptRecord], keep_records: bool = False) -> SeriesTally:
        """The tally of a list of records (one per attempt; wire dicts are read as records)."""
        records = [AttemptRecord.from_wire(r) if isinstance(r, dict) else r for r in records]
        first = records[0]
        tally = cls(first.series_id, first.root or "", first.file_nodeid or "", first.experiment, first.split,
                    keep_records)
        for record in records:
            tally.add(record)
        return tally

    def cost_bound(self) -> float | None:
        """The most one attempt can cost (SeriesFacts.cost_bound): the largest bound of the attempts whose cost
        counts, each its calls' input as sent and max_tokens of output at the model's price; None when one of
        them had no bound (an agent without max_tokens, a model without a known price) or none had a cost."""
        return self.dearest_bound if self.dearest_bound > 0 and not self.unbounded_costs else None

    def attempts(self) -> set[tuple[str, str, int]]:
        """(variant, case, repeat) of every attempt folded."""
        return {(variant, case, r) for (variant, case), c in self.cases.items() for r in _bits(c.seen)}

    def add(self, record: AttemptRecord) -> bool:
        """Fold one attempt's record; False (and nothing folded) when that attempt was already."""
        variant, repeat = record.variant, record.repeat
        key = (variant, record.case)
        case = self.cases.get(key)
        if case is None:
            case = self.cases[key] = _Case()
        bit = 1 << repeat
        if case.seen & bit:
            return False
        case.seen |= bit
        if self.records is not None:
            self.records.append(record)

        outcome, passed = record.outcome, record.passed
        cost, check_cost = record.cost_usd, record.check_cost_usd
        self.done += 1
        self.reused += record.reused
        self.passed += bool(passed)
        self.failed_checks += passed is False
        self.infra += outcome in INFRA
        self.infra_errors += outcome == "infra_error"
        self.budget_cut += outcome == "budget_cut"
        self.inputs_changed += record.error_code == "inputs_changed"
        self.spend += (cost or 0.0) + (check_cost or 0.0)
        self.cost_sum += cost or 0.0
        self.check_cost_sum += check_cost or 0.0
        self.spend_exact += Decimal(repr(cost or 0.0)) + Decimal(repr(check_cost or 0.0))
        unpriced = record.unpriced_calls or 0
        self.unpriced_calls += unpriced
        self.unpriced_attempts += bool(unpriced)
        if record.started_at is not None:       # set on every finished attempt (the type allows a record without)
            self.started_at = min(self.started_at, record.started_at)
        if record.finished_at is not None:
            self.finished_at = max(self.finished_at, record.finished_at)
        self.models.setdefault(variant, set()).update(record.models.values())
        self.per_variant[variant] = self.per_variant.get(variant, 0) + 1
        if outcome != "ok" and outcome != "cancelled":
            # a model failure is one way whatever its code (every schema_invalid alike); an infra error, one per code
            way = (outcome, None if outcome in COUNTED else record.error_code, record.first_failed_node)
            ways = self.failures.setdefault(variant, {})
            ways[way] = ways.get(way, 0) + 1

        if passed is not None:
            case.known += 1
            case.known_passed += bool(passed)
            if not case.first_known:
                case.first_known = self.done
        if outcome != "cancelled":
            case.settled |= bit
            if outcome == "infra_error":
                case.infra |= bit
            elif outcome == "budget_cut":
                case.cut |= bit
        if outcome not in COUNTED:
            return True
        case.counted |= bit
        if passed is None:
            case.derive = (case.derive or []) + [(repeat, outcome == "ok",
                                                  {k: v.state for k, v in record.checks.items()})]
        elif passed:
            case.ones |= bit
        schema = record.schema_valid_first_try
        if _known(schema):
            case.schema |= bit
            if schema:
                case.schema_ones |= bit
        # stats reads an attempt's cost only when every call of it was priced (conclude.to_attempt)
        if record.cost_known and _known(cost):
            if case.cost is None:
                case.cost = _Values()
            case.cost.add(repeat, cost)
            if record.cost_bound_usd is None:
                self.unbounded_costs += 1
            else:
                self.dearest_bound = max(self.dearest_bound, record.cost_bound_usd)
        latency = record.latency_ms
        if _known(latency):
            if case.latency is None:
                case.latency = _Values()
            case.latency.add(repeat, latency)
        for name, check in record.checks.items():
            state = check.state
            if state != "passed" and state != "failed":
                continue
            c = case.checks.get(name)
            if c is None:
                c = case.checks[name] = _Check()
            c.scored |= bit
            if state == "passed":
                c.passed |= bit
            if _known(check.value):
                c.values.add(repeat, check.value)
        return True

    def uniform_failures(self) -> list[dict]:
        """The variants whose every attempt failed the same way: all schema_invalid at one node, or all one
        infrastructure code at one node. Their metric measures that failure, not the question."""
        out = []
        for variant in sorted(self.per_variant):
            ways = self.failures.get(variant, {})
            if len(ways) != 1:
                continue
            ((outcome, code, node), count), = ways.items()
            if count == self.per_variant[variant] and outcome in (codes.Outcome.SCHEMA_INVALID, codes.Outcome.INFRA_ERROR):
                out.append({"variant": variant, "outcome": outcome, "code": code, "node": node, "attempts": count})
        return out

    def case_names(self) -> set[str]:
        return {name for _, name in self.cases}

    def done_in(self, cases: set[str]) -> int:
        """The attempts recorded of these cases (a series stopped early: the prefix it is decided on)."""
        return sum(case.seen.bit_count() for (_, name), case in self.cases.items() if name in cases)

    def table(self, salt: str, check_kinds: dict[str, str], cases: set[str] | None = None) -> TallyTable:
        """`cases`: only these cases (a series stopped early: the prefix its verdict was decided on)."""
        return TallyTable(self, salt, check_kinds, cases)

    def pass_counts(self) -> dict[str, list[tuple[int, int]]]:
        """Per variant, (passed, attempts with `passed` set) of each case that has one, cases in the order
        their first such attempt came (report/data.stability's order)."""
        out: dict[str, list[tuple[int, int]]] = {}
        for (variant, _), case in sorted(((k, c) for k, c in self.cases.items() if c.known),
                                         key=lambda kc: kc[1].first_known):
            out.setdefault(variant, []).append((case.known_passed, case.known))
        return out


class TallyTable:
    """What stats.decide_table and evidence.sufficient_data read (AttemptTable's `tallies` and `sample`),
    from a tally; cases named by their salted key, as conclude names them."""

    def __init__(self, tally: SeriesTally, salt: str, check_kinds: dict[str, str], only: set[str] | None = None) -> None:

        self.tally, self.check_kinds = tally, check_kinds
        self.cases = tally.cases if only is None else {k: c for k, c in tally.cases.items() if k[1] in only}
        keys = {name: case_key(salt, name) for _, name in self.cases}
        self.variants = sorted({variant for variant, _ in self.cases})
        self._by_variant: dict[str, list[tuple[str, _Case]]] = {v: [] for v in self.variants}
        for (variant, name), case in self.cases.items():
            self._by_variant[variant].append((keys[name], case))
        for cases in self._by_variant.values():
            cases.sort(key=lambda kc: kc[0])
        self._samples: dict = {}
        # masks are shifted as int64: a repeat number above 62 (never, with at most 20 repeats) is read case by case
        self._wide = any(case.seen.bit_length() > 63 for case in self.cases.values())

    def tallies(self) -> tuple[int, int, int]:
        settled = errors = 0
        for case in self.cases.values():
            settled += case.settled.bit_count()
            errors += (case.settled & case.infra).bit_count()
        done = self.tally.done if self.cases is self.tally.cases else sum(c.seen.bit_count() for c in self.cases.values())
        return done, settled, errors

    def unmeasured(self) -> Unmeasured:
        """stats.samples.Unmeasured: the attempts that finished without a counted outcome, by case key."""
        from ..stats.samples import Unmeasured  # noqa: PLC0415

        per_case: dict[str, dict[str, int]] = {}
        infra = cut = cancelled = 0
        for variant, cases in self._by_variant.items():
            for key, case in cases:
                missing = case.seen & ~case.counted
                if missing:
                    per_case.setdefault(variant, {})[key] = missing.bit_count()
                    cut += (missing & case.cut).bit_count()
                    cancelled += (missing & ~case.settled).bit_count()
                    infra += (missing & case.settled & ~case.cut).bit_count()   # any other outcome too
        counts = {"infra_error": infra, "budget_cut": cut, "cancelled": cancelled}
        return Unmeasured(per_case, {outcome: n for outcome, n in counts.items() if n})

    def _ones(self, case: _Case) -> int:
        if not case.derive:
            return case.ones
        from ..stats.samples import SCORED_STATES  # noqa: PLC0415

        ones = case.ones
        for repeat, ok, states in case.derive:      # as AttemptTable derives an unset `passed`
            if ok and all(state == "passed" for check, state in states.items()
                          if self.check_kinds.get(check, "binary") == "binary" and state in SCORED_STATES):
                ones |= 1 << repeat
        return ones

    def sample(self, variant: str, info: MetricInfo) -> Sample:
        """The variant's sample of one metric, built once (deciding and the finding's data both read it)."""
        key = (variant, info)
        sample = self._samples.get(key)
        if sample is None:
            sample = self._samples[key] = self._sample(variant, info)
        return sample

    def _sample(self, variant: str, info: MetricInfo) -> Sample:
        """Built with numpy across the variant's cases: the repeats set in a case's masks, ascending, are
        the columns of a cases × repeats table; a value's place is (case, repeat)."""
        import numpy as np  # noqa: PLC0415

        from ..stats.samples import Sample  # noqa: PLC0415

        if self._wide:
            return self._sample_by_case(variant, info)
        name, shape = info.name, info.shape
        rows = self._by_variant.get(variant, ())
        masks = None
        if name == "infra_error_rate":
            masks = [(key, case.settled, case.infra) for key, case in rows]
        elif name == "success_rate":
            masks = [(key, case.counted, self._ones(case)) for key, case in rows]
        elif name == "schema_valid_first_try":
            masks = [(key, case.schema, case.schema_ones) for key, case in rows]
        elif name in ("cost_usd", "cost_of_pass"):
            values = [(key, case.cost, case) for key, case in rows if case.cost is not None]
        elif shape == "quantile":
            values = [(key, case.latency, case) for key, case in rows if case.latency is not None]
        else:
            checks = [(key, case, case.checks[name]) for key, case in rows if name in case.checks]
            if shape == "rate":
                masks = [(key, check.scored, check.passed) for key, _, check in checks]
            else:
                values = [(key, check.values, case) for key, case, check in checks]
        if masks is not None:
            counted = np.array([m for _, m, _ in masks], dtype=np.int64)
            ones = np.array([o for _, _, o in masks], dtype=np.int64)
            width = np.arange(int(counted.max()).bit_length() if len(masks) else 0)
            taken = (counted[:, None] >> width & 1).astype(bool)
            sizes = taken.sum(axis=1)
            keep = sizes > 0
            flat = (ones[:, None] >> width & 1)[taken].astype(float)
            return Sample(info, tuple(compress([key for key, _, _ in masks], keep.tolist())), flat,
                          sizes[keep].astype(int), None)
        values = [(key, v, case) for key, v, case in values if len(v.values)]
        sizes = np.array([len(v.values) for _, v, _ in values], dtype=int)
        flat = np.frombuffer(b"".join([v.values.tobytes() for _, v, _ in values]), dtype=float)
        repeats = np.frombuffer(b"".join([v.repeats.tobytes() for _, v, _ in values]), dtype=np.int64)
        where = np.repeat(np.arange(len(values)), sizes)
        order = np.lexsort((repeats, where))     # by case, then repeat (a case's repeats are distinct)
        passes = None
        if name == "cost_of_pass":
            ones = np.array([self._ones(case) for _, _, case in values], dtype=np.int64)
            passes = (ones[where[order]] >> repeats[order] & 1).astype(float)
        return Sample(info, tuple(key for key, _, _ in values), flat[order], sizes, passes)

    def _sample_by_case(self, variant: str, info: MetricInfo) -> Sample:
        """The same sample built case by case, in Python: for repeat numbers too large for int64 masks."""
        import numpy as np  # noqa: PLC0415

        from ..stats.samples import Sample  # noqa: PLC0415

        name, shape = info.name, info.shape
        cases, sizes, flat, passes = [], [], [], []
        for key, case in self._by_variant.get(variant, ()):
            if name == "infra_error_rate":
                values = [float(bool(case.infra >> r & 1)) for r in _bits(case.settled)]
            elif name == "success_rate":
                ones = self._ones(case)
                values = [float(ones >> r & 1) for r in _bits(case.counted)]
            elif name == "schema_valid_first_try":
                values = [float(case.schema_ones >> r & 1) for r in _bits(case.schema)]
            elif name in ("cost_usd", "cost_of_pass"):
                if case.cost is None:
                    continue
                repeats, values = case.cost.ordered()
                if name == "cost_of_pass":
                    ones = self._ones(case)
                    passes += [float(ones >> r & 1) for r in repeats]
            elif shape == "quantile":
                if case.latency is None:
                    continue
                values = case.latency.ordered()[1]
            else:
                check = case.checks.get(name)
                if check is None:
                    continue
                if shape == "rate":
                    values = [float(check.passed >> r & 1) for r in _bits(check.scored)]
                else:
                    values = check.values.ordered()[1]
            if values:
                cases.append(key)
                sizes.append(len(values))
                flat += values
        return Sample(info, tuple(cases), np.array(flat, dtype=float), np.array(sizes, dtype=int),
                      np.array(passes, dtype=float) if name == "cost_of_pass" else None)
