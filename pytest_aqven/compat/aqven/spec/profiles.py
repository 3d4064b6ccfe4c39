"""`aqven.spec.profiles`: what a model can take and give (its family, input and output modalities, strict
structured output). pytest-aqven holds no catalog of model profiles: a model gets the default profile
(its family from the provider or vendor prefix, text in and out, not strict), then what its provider
declares (`capabilities` in aqven.yaml), then what its agent overrides (`capabilities` of the agent)."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from .names import MODEL_PATTERN, Modality, ModelFamily, ProviderName

_MODEL = re.compile(MODEL_PATTERN)
TEXT_ONLY = frozenset({Modality.TEXT})


class ModelSyntaxError(ValueError):
    def __init__(self, text: str) -> None:
        super().__init__(f"model string {text!r} does not match {MODEL_PATTERN}")
        self.text = text


@dataclass(frozen=True, slots=True)
class ModelRef:
    provider: ProviderName
    name: str


@dataclass(frozen=True, slots=True)
class ModelProfile:
    family: ModelFamily
    input: frozenset[Modality]
    output: frozenset[Modality]
    strict: bool
    verified: bool           # measured on the provider (none are, here)


MODEL_PROFILES: Mapping[str, ModelProfile] = {}
VENDOR_FAMILIES: Mapping[str, ModelFamily] = {
    "openai": ModelFamily.OPENAI, "anthropic": ModelFamily.ANTHROPIC, "google": ModelFamily.GOOGLE,
    "deepseek": ModelFamily.DEEPSEEK, "deepseek-ai": ModelFamily.DEEPSEEK, "qwen": ModelFamily.QWEN,
    "Qwen": ModelFamily.QWEN, "x-ai": ModelFamily.XAI, "meta-llama": ModelFamily.META,
    "moonshotai": ModelFamily.MOONSHOT, "z-ai": ModelFamily.ZHIPU, "mistralai": ModelFamily.MISTRAL,
}
PROVIDER_FAMILIES: Mapping[str, ModelFamily] = {
    "openai": ModelFamily.OPENAI, "anthropic": ModelFamily.ANTHROPIC, "google": ModelFamily.GOOGLE,
}


def parse_model(text: str) -> ModelRef:
    """`openrouter:openai/gpt-oss-20b` -> provider `openrouter`, name `openai/gpt-oss-20b`."""
    if _MODEL.fullmatch(text) is None:
        raise ModelSyntaxError(text)
    provider, _, name = text.partition(":")
    return ModelRef(ProviderName(provider), name)


def _modalities(declared: Sequence[Any] | None, base: frozenset[Modality]) -> frozenset[Modality]:
    return base if declared is None else frozenset(Modality(m) for m in declared)


def resolve_profile(model: str, override: Any = None, declared: Any = None) -> ModelProfile:
    """The profile of `model` with the provider's declared capabilities, then the agent's override."""
    base = MODEL_PROFILES.get(model)
    if base is None:
        provider, _, name = model.partition(":")
        family = PROVIDER_FAMILIES.get(provider) or VENDOR_FAMILIES.get(name.partition("/")[0], ModelFamily.OTHER)
        base = ModelProfile(family, TEXT_ONLY, TEXT_ONLY, strict=False, verified=False)
    if declared is not None:
        base = replace(base, input=_modalities(declared.input, base.input),
                       output=_modalities(declared.output, base.output))
    if override is None:
        return base
    return replace(base, family=ModelFamily(override.family) if override.family else base.family,
                   input=_modalities(override.input, base.input), output=_modalities(override.output, base.output),
                   strict=base.strict if override.strict is None else override.strict)


__all__ = ["MODEL_PROFILES", "PROVIDER_FAMILIES", "VENDOR_FAMILIES", "ModelProfile", "ModelRef", "ModelSyntaxError",
           "parse_model", "resolve_profile"]
