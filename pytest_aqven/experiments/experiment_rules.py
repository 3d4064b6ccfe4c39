"""The experiment rules of `aqven check` (the seed's table "What aqven check catches").

Every message and hint follows the templates of AQVEN's diagnostic reference; each diagnostic points
at the key of experiment.yaml (or of the dataset, or of the file) that is wrong. The rules come in
families, one module each, run in the order of FAMILIES over one shared ExperimentScope."""
from __future__ import annotations

from ..check.context import CheckContext, internal_error
from ..diagnostics import Diagnostic
from ..project.model import RunnableExperiment
from .case_rules import CaseRules, merge_case_findings
from .check_rules import CheckRules
from .question_rules import QuestionRules
from .rule_scope import ExperimentScope, RuleFamily, Unvalidated
from .subject_rules import SubjectRules
from .variant_rules import AssemblyRules, VariantRules

# the assembly reads which variant values passed the variant rules, so it runs last
FAMILIES: tuple[type[RuleFamily], ...] = (SubjectRules, CaseRules, VariantRules, CheckRules, QuestionRules,
                                          AssemblyRules)

__all__ = ["ExperimentRules", "FAMILIES", "merge_case_findings"]


class ExperimentRules:
    def __init__(self, ctx: CheckContext, exp: RunnableExperiment, unvalidated: Unvalidated) -> None:
        self.scope = ExperimentScope(ctx, exp, unvalidated)
        self.case_findings = self.scope.case_findings      # problems of dataset cases: merged across experiments

    def run(self) -> list[Diagnostic]:
        scope = self.scope
        for family in FAMILIES:
            rules = family(scope)
            for name in rules.steps:
                step = getattr(rules, name)
                try:
                    step()
                except Exception as exc:  # a checker bug: report it, keep the other rules running
                    scope.out.append(internal_error(scope.doc.file, f"checking {scope.e} ({step.__name__})", exc))
        return scope.out
