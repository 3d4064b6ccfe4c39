from pytest_aqven import EvalContext, NoParams, Verdict


def reason_names_intent(value, context: EvalContext, params: NoParams) -> Verdict:
    """The reason must say which intent it decided, so a reader can audit the route."""
    if value.intent in value.reason:
        return Verdict(passed=True)
    return Verdict(passed=False, reason=f"the reason does not name the intent {value.intent}")
