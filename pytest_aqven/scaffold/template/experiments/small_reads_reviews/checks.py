import re

from pytest_aqven import EvalContext, NoParams, Verdict


def quotes_the_review(value, context: EvalContext, params: NoParams) -> Verdict:
    """The reason quotes words of the review, so a reader can see why it decided."""
    review = f"{context.inputs['title']} {context.inputs['text']}".lower()
    quoted = re.findall(r'"([^"]+)"', value.reason)
    if quoted and all(q.lower() in review for q in quoted):
        return Verdict(passed=True)
    return Verdict(passed=False, reason="the reason quotes no word of the review" if not quoted
                   else f"quoted words not in the review: {', '.join(quoted)}")
