"""Which spend cap a series runs under (seeds: research.spend_cap_usd, a machine-local override, explicit caps)."""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ..diagnostics import Diagnostic, DiagnosticError


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


def local_override(root: Path) -> tuple[Decimal | None, Diagnostic | None]:
    """(cap, problem) of the machine-local .aqven/local.yaml: its research.spend_cap_usd, or the diagnostic that
    refuses the file (strict YAML, a positive amount). pytest and `aqven check` both read it here."""
    from ..project.yamlpos import load_yaml
    local = root / LOCAL_FILE
    if not local.is_file():
        return None, None
    try:
        doc = load_yaml(local, root)
    except DiagnosticError as exc:
        return None, exc.diagnostics[0]
    research = doc.data.get("research") if isinstance(doc.data, dict) else None
    value = research.get("spend_cap_usd") if isinstance(research, dict) else None
    if value is None:
        return None, None
    try:
        return parse_usd(value, "research.spend_cap_usd"), None
    except CapError as exc:
        return None, doc.diag("E_SPEC_INVALID", ("research", "spend_cap_usd"), str(exc).partition(": ")[2],
                              hint="the machine-local cap overrides aqven.yaml's on this computer")


def local_override_rules(root: Path) -> list[Diagnostic]:
    """`aqven check`: the diagnostic pytest stops at when it reads .aqven/local.yaml (none when it is sound)."""
    problem = local_override(root)[1]
    return [problem] if problem is not None else []


def project_cap(root: Path, spec) -> tuple[Decimal, str]:
    """(cap, source): the machine-local .aqven/local.yaml wins on this computer, then aqven.yaml, then $1.00."""
    value, problem = local_override(root)
    if problem is not None:
        raise CapError(f"cannot read the local override: {problem.render()}")
    if value is not None:
        return value, "override"
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
