"""`aqven.policies.evaluators`: the built-in evaluators of checks (`use:`) with their parameter models:
the ones the engine scores checks with (engine/evaluators.py)."""
from __future__ import annotations

from ....engine.evaluators import (CitationsParams, ExpectedParams, FieldParams, IdsInAllowedSetParams,
                                        LanguageParams, MaxWordsParams, NoPiiParams, RegexParams, UniqueItemsParams,
                                        citations_in_sources, cost_usd, expected, ids_in_allowed_set, language,
                                        latency_ms, max_words, no_pii, not_empty, regex, unique_items)

EXPECTED_CHECK = "expected"
NO_EXPECTED_OUTPUT = "there is no expected_output to compare with"
CitationsInSourcesParams = CitationsParams

__all__ = ["EXPECTED_CHECK", "NO_EXPECTED_OUTPUT", "CitationsInSourcesParams", "ExpectedParams", "FieldParams",
           "IdsInAllowedSetParams", "LanguageParams", "MaxWordsParams", "NoPiiParams", "RegexParams",
           "UniqueItemsParams", "citations_in_sources", "cost_usd", "expected", "ids_in_allowed_set", "language",
           "latency_ms", "max_words", "no_pii", "not_empty", "regex", "unique_items"]
