"""Simulated models, so the project runs offline: replace the provider `sim` in aqven.yaml with a real
one (an `openrouter` prefix, an `openai_compatible` endpoint) to measure real models.

A model finds the words of praise and of complaint in the review and answers the sentiment they point
to, except at its stated error rate; a review with both (mixed) is harder. An answer depends only on the
attempt (variant, case, repeat), so a rerun reproduces a series, and the repeats of a case differ.
The response reports tokens, not a cost: pyproject.toml prices these models.
"""
import hashlib
import json

from pytest_aqven import ModelRequest, ModelResponse

PRAISE = ("love", "great", "perfect", "excellent", "delicious", "recommend", "smooth", "happy", "fast")
COMPLAINT = ("broke", "leak", "stale", "bitter", "slow", "refund", "disappoint", "noisy", "stopped", "burnt")
# model -> (error rate on a clear review, on a mixed review, latency in ms, share of first answers not JSON,
#           share of reasons that quote nothing)
MODELS = {
    "small-1": (0.05, 0.45, 150.0, 0.04, 0.10),
    "large-1": (0.02, 0.10, 700.0, 0.0, 0.02),
}


def draw(*parts: object) -> float:
    """A number in [0, 1) fixed by its parts."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def complete(request: ModelRequest) -> ModelResponse:
    clear_error, mixed_error, latency, not_json, forgets_quote = MODELS[request.model]
    prompt = next(m.text for m in request.messages if m.role == "user").lower()
    review = prompt[prompt.find("inputs:"): prompt.find("output fields")]
    praised, complained = any(w in review for w in PRAISE), any(w in review for w in COMPLAINT)
    truth = "mixed" if praised and complained else "negative" if complained else "positive"
    a = request.attempt
    answers = sum(m.role == "user" for m in request.messages)       # 1 for the first answer, 2 after a repair
    r = draw(request.model, a.experiment, a.variant, a.case, a.repeat, request.node, answers)
    sentiment = truth
    if r < (mixed_error if truth == "mixed" else clear_error):
        others = [s for s in ("positive", "negative", "mixed") if s != truth]
        sentiment = others[int(r * 1000) % 2]
    quoted = [w for w in (*PRAISE, *COMPLAINT) if w in review][:2]
    if draw("quote", request.model, a.case, a.repeat, a.variant) < forgets_quote:
        quoted = []
    reason = "the review says " + " and ".join(f'"{w}"' for w in quoted) if quoted else "the tone of the review"
    body = json.dumps({"reason": reason, "sentiment": sentiment})
    if answers == 1 and draw("json", request.model, a.case, a.repeat, a.variant) < not_json:
        body = f"Sentiment: {sentiment}"           # not JSON: the engine asks again with the problem
    return ModelResponse(
        text=body,
        tokens_in=sum(len(m.text.split()) for m in request.messages) * 4 // 3,
        tokens_out=len(body.split()) * 4 // 3 + 8,
        latency_ms=round(latency * (0.7 + 0.6 * draw("latency", r)), 1),
    )
