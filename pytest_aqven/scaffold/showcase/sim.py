"""Simulated models, so the showcase runs offline and its verdicts follow from stated true rates.

Each model does what its node asks, with the error rates below (each drawn from a hash of the attempt:
variant, case, repeat and what the model reads, so a rerun reproduces a series and repeats differ):

- draft (draft_a, draft_b): "About your <topic>: ...", never a promise.
- revise: the draft plus a closing line naming a day count; that line is a promise ("We guarantee ...")
  in PROMISES of the revisions, gpt and mistral alike.
- critique (the loop's critic and the judge of reply_noninferior_mistral): 0.2 for a reply with a
  promise, else 0.9 to 1.0; the critic misreads CRITIC_ERROR of the replies (scores a clean one 0.2, a
  promise 0.9 to 1.0).
- pick (the judges): the answer holding "correct" (answer a when neither does); each judge picks the
  other one in MISPICKS of its calls, and in CAREFUL_MISPICKS when its prompt asks it to list the claims.
- condense: keeps the topic of the message and drops the rest ("refund: in short").
- read: the topic of the message, but "other" for LONG_MISREADS of the messages longer than 100
  characters.

Every call costs PRICES[model] and takes LATENCY_MS[model]: the response reports them (a real provider's
come from its bill and its clock), and, since every agent sets max_tokens, PRICES[model] as the most the call
could have cost (the per-attempt cost bound that lets the cost verdicts decide).
"""
import hashlib
import json

from pytest_aqven import ModelRequest, ModelResponse

PRICES = {"gpt-1": 0.001, "mistral-1": 0.0004, "big-1": 0.012, "deepseek-1": 0.0003, "qwen-1": 0.0003,
          "llama-1": 0.0003}
LATENCY_MS = {"gpt-1": 400.0, "mistral-1": 300.0, "big-1": 900.0, "deepseek-1": 200.0, "qwen-1": 200.0,
              "llama-1": 200.0}
PROMISES = 0.10
CRITIC_ERROR = 0.03
MISPICKS = {"deepseek-1": 0.45, "qwen-1": 0.25, "llama-1": 0.25}
CAREFUL_MISPICKS = 0.02
LONG_MISREADS = 0.70


def draw(*parts: object) -> float:
    """A number in [0, 1) fixed by its parts."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def inputs(request: ModelRequest) -> dict:
    """The inputs of a plain-text prompt, listed as `- name: <json>` after the prompt."""
    found = {}
    for line in next(m.text for m in request.messages if m.role == "user").splitlines():
        if line.startswith("- ") and ": " in line:
            name, _, value = line[2:].partition(": ")
            try:
                found[name.split(" ")[0]] = json.loads(value)
            except ValueError:
                pass
    return found


def answer(request: ModelRequest, x: dict) -> dict:
    a = request.attempt
    fields = set((request.output_schema or {}).get("properties", {}))
    seed = (a.variant, a.case, a.repeat, request.node, json.dumps(x, sort_keys=True))
    if request.node == "revise":
        promise, days = draw("promise", *seed) < PROMISES, 2 + int(8 * draw("days", *seed))
        return {"reply": x["draft"] + (f" We guarantee a new lamp within {days} days." if promise
                                       else f" We will write again within {days} days.")}
    if "reply" in fields:
        topic = x["message"].split(":")[0]
        return {"reply": f"About your {topic}: thank you for writing, we are looking into it."}
    if "score" in fields:
        promise = "guarantee" in x["reply"].lower()
        if draw("critic", *seed) < CRITIC_ERROR:
            promise = not promise
        score = 0.2 if promise else round(0.9 + 0.1 * draw("score", *seed), 3)
        return {"note": "a promise the shop did not make" if promise else "clear and kept", "score": score}
    if "winner" in fields:
        right = "b" if "correct" in x["answer_b"] and "correct" not in x["answer_a"] else "a"
        careful = any("list the claims" in m.text.lower() for m in request.messages)
        mispick = CAREFUL_MISPICKS if careful else MISPICKS[request.model]
        wrong = draw("pick", request.model, *seed) < mispick
        return {"winner": {"a": "b", "b": "a"}[right] if wrong else right}
    if "intent" in fields:
        topic = x["message"].split(":")[0]
        misread = len(x["message"]) > 100 and draw("read", *seed) < LONG_MISREADS
        return {"intent": "other" if misread else topic}
    if "message" in fields:
        return {"message": x["message"].split(":")[0] + ": in short"}
    raise ValueError(f"the simulator has no answer for node {request.node}")


def complete(request: ModelRequest) -> ModelResponse:
    body = json.dumps(answer(request, inputs(request)))
    # a real call's bound is its input and max_tokens of output at the model's price; a simulated call costs
    # its flat price, the most it can cost, once its agent caps the output
    bound = PRICES[request.model] if "max_tokens" in request.settings else None
    return ModelResponse(text=body, tokens_in=60, tokens_out=len(body.split()) + 5,
                         cost_usd=PRICES[request.model], latency_ms=LATENCY_MS[request.model], cost_bound_usd=bound)
