"""pytest-aqven: AQVEN experiments as pytest test suites, with honest statistics."""
from .experiments.evaluators import EvalContext, NoParams, Verdict
from .providers.base import AttemptIdentity, Message, ModelRequest, ModelResponse, ProviderError

__version__ = "0.1.0"
__all__ = ["AttemptIdentity", "EvalContext", "Message", "ModelRequest", "ModelResponse", "NoParams",
           "ProviderError", "Verdict"]
