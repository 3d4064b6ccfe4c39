from pytest_aqven import EvalContext, NoParams, Verdict

PROMISE_WORDS = ("guarantee", "promise", "tomorrow")


def reply_keeps_resolution(value, context: EvalContext, params: NoParams) -> Verdict:
    """The reply promises nothing the shop has not decided."""
    promised = [w for w in PROMISE_WORDS if w in value.reply.lower()]
    return Verdict(passed=not promised, reason=f"promises: {', '.join(promised)}" if promised else None)
