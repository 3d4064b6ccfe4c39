"""Which spend cap a series runs under (seeds: research.spend_cap_usd, a machine-local override, explicit caps)."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path


def dollars(value: float | Decimal | str) -> str:
    """A cap as people write it: $1.00, $0.05; one under a cent keeps its digits ($0.005), never $0.00."""
    amount = Decimal(str(value)).quantize(Decimal("0.000001"))      # a float's last digits are not the cap's
    cents = amount.quantize(Decimal("0.01"))
    return f"${cents}" if cents == amount else f"${amount.normalize():f}"


DEFAULT_CAP = Decimal("1.00")
NEAR = Decimal("0.90")              # no new attempt once spend + reserves reach 90% of the cap
LOCAL_FILE = Path(".aqven") / "local.yaml"


class CapError(ValueError):
    pass


@dataclass(frozen=True)
class SeriesCap:
    cap_usd: Decimal
    project_cap_usd: Decimal
    project_cap_source: str           # override | project | default
    explicit: str | None = None       # where an explicit cap came from: --aqven-cap | cap_usd

    @property
    def needs_approval(self) -> bool:
        return self.explicit is not None and self.cap_usd > self.project_cap_usd

    def describe(self) -> str:
        text = f"cap {dollars(self.cap_usd)}"
        if self.explicit:
            text += f" ({self.explicit})"
        if self.explicit is None or self.cap_usd != self.project_cap_usd:
            text += f", project cap {dollars(self.project_cap_usd)} ({self.project_cap_source})"
        if self.needs_approval:
            text += ": above the project cap, the series waits for approval before anything runs"
        return text


def approved_cap_holds(record: dict, cap: SeriesCap) -> bool:
    """The command that reruns a series asks for a lower explicit cap than the one a person approved for it:
    the approved cap holds (an approval is never undone by rerunning the command it resumes)."""
    return bool(record.get("approved_by")) and cap.explicit is not None \
        and cap.cap_usd < Decimal(str(record.get("cap_usd", "0")))


def approved_cap_text(record: dict, cap: SeriesCap) -> str:
    return (f"the approved cap {dollars(record['cap_usd'])} holds (approved by {record['approved_by']}): "
            f"{cap.explicit} {dollars(cap.cap_usd)} does not lower a cap a person approved")


def parse_usd(text: str, what: str) -> Decimal:
    try:
        value = Decimal(str(text).strip().lstrip("$"))
    except InvalidOperation:
        raise CapError(f"{what}: {text!r} is not an amount in USD (such as 2.50)") from None
    if not value.is_finite() or value <= 0:
        raise CapError(f"{what}: the cap must be a positive amount in USD, not {text}")
    return value


def project_cap(root: Path, spec) -> tuple[Decimal, str]:
    """(cap, source): the machine-local .aqven/local.yaml wins on this computer, then aqven.yaml, then $1.00."""
    local = root / LOCAL_FILE
    if local.is_file():
        from ..diagnostics import DiagnosticError
        from ..project.yamlpos import load_yaml
        try:
            data = load_yaml(local, root).data or {}
        except DiagnosticError as exc:
            raise CapError(f"cannot read the local override: {exc.diagnostics[0].render()}") from None
        value = (data.get("research") or {}).get("spend_cap_usd") if isinstance(data, dict) else None
        if value is not None:
            return parse_usd(value, f"{local}: research.spend_cap_usd"), "override"
    if "research" in spec.model_fields_set and "spend_cap_usd" in spec.research.model_fields_set:
        return Decimal(spec.research.spend_cap_usd), "project"
    return DEFAULT_CAP, "default"


def series_cap(root: Path, project_spec, *, option: str | None = None, experiment_cap=None) -> SeriesCap:
    cap, source = project_cap(root, project_spec)
    if option is not None:
        return SeriesCap(parse_usd(option, "--aqven-cap"), cap, source, "--aqven-cap")
    if experiment_cap is not None:
        return SeriesCap(Decimal(str(experiment_cap)), cap, source, "cap_usd")
    return SeriesCap(cap, cap, source)
