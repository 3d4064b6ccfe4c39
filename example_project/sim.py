"""An offline model provider for the example: simulated models with stated accuracy, cost and latency.

Each model reads the ticket text, finds the intents its keywords point to and answers the right one,
except with its stated error rate; tickets whose words point to two intents are harder. Answers are
deterministic for one attempt (variant, case, repeat), so a rerun of a series reproduces it exactly,
while repeats of one case are distinct samples.
"""
import hashlib
import json

from pytest_aqven import ModelRequest, ModelResponse

KEYWORDS = {
    "refund": ("refund", "money back", "charged", "return it"),
    "delivery": ("deliver", "shipping", "parcel", "arrive", "tracking"),
    "defect": ("broken", "flicker", "stopped working", "dead", "cracked", "won't turn on"),
    "question": ("how do", "can i", "does it", "is it possible", "which"),
}
# model -> (error rate on a clear ticket, error rate on a mixed ticket, usd per 1k tokens, latency ms,
#           share of first answers that are not JSON)
MODELS = {
    "small-1": (0.04, 0.45, 0.0004, 180.0, 0.03),
    "large-1": (0.01, 0.12, 0.0040, 650.0, 0.0),
}


def _draw(*parts: object) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def complete(request: ModelRequest) -> ModelResponse:
    clear_error, mixed_error, price, latency, not_json = MODELS[request.model]
    prompt = next(m.content for m in request.messages if m.role == "user").lower()
    text = prompt[prompt.find("inputs:"): prompt.find("output fields")]
    hits = [intent for intent, words in KEYWORDS.items() if any(w in text for w in words)]
    truth = hits[0] if hits else "question"
    a = request.attempt
    turn = 2 * sum(m.role == "user" for m in request.messages)   # 2 for the first answer, 4 after one repair
    r = _draw(request.model, a.experiment, a.variant, a.case, a.repeat, request.node, turn)
    error = mixed_error if len(hits) > 1 else clear_error
    if r < error:
        wrong = [i for i in (hits[1:] or KEYWORDS) if i != truth]
        intent = wrong[int(r * 1000) % len(wrong)]
    else:
        intent = truth
    tokens_in = sum(len(m.content.split()) for m in request.messages) * 4 // 3
    answer = {"reason": f"the ticket talks about {intent}", "intent": intent}
    body = json.dumps(answer)
    if turn == 2 and _draw("json", request.model, a.case, a.repeat, a.variant) < not_json:
        body = f"Intent: {intent}"
    tokens_out = len(body.split()) * 4 // 3 + 8
    most = request.settings.get("max_tokens")   # the agent's cap on output: the dearest this call could be
    return ModelResponse(
        text=body,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=round((tokens_in + tokens_out) / 1000 * price, 8),
        cost_bound_usd=None if most is None else (tokens_in + max(most, tokens_out)) / 1000 * price,
        latency_ms=round(latency * (0.7 + 0.6 * _draw("latency", r)), 1),
    )
