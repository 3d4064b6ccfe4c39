"""A small valid project shaped like the seed's showcase (package lumen), written from scratch so the
tests never depend on example_project. Fixtures for one diagnostic each edit a fresh copy of it.

Line numbers matter: the seed's example output points at experiments/reply_look/experiment.yaml:10:3
(cases.tags) and experiments/reply_overpromise_risk/experiment.yaml:25:3 (question.metric)."""
from __future__ import annotations

import textwrap
from pathlib import Path

from pytest_aqven.api.check import check_root
from pytest_aqven.diagnostics import Diagnostic, render_text

from ..projects import write_files


def _record(description: str, *fields: tuple[str, str]) -> str:
    lines = ['apiVersion: "aqven/v1"', 'kind: "Type"', 'type: "record"', f'description: "{description}"', "fields:"]
    for name, type_ in fields:
        lines += [f'- name: "{name}"', f'  type: "{type_}"']
    return "\n".join(lines) + "\n"


def _agent(model: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: "aqven/v1"
        kind: "Agent"
        description: "Simulated {model}"
        model: "sim:{model}"
        output:
          mode: "prompted"
        """)


def _inference(description: str, ins: list[tuple[str, str]], outs: list[tuple[str, str]]) -> str:
    lines = ['apiVersion: "aqven/v1"', 'kind: "Inference"', f'description: "{description}"', "in:"]
    for name, type_ in ins:
        lines += [f'- name: "{name}"', f'  type: "{type_}"']
    lines.append("out:")
    for name, type_ in outs:
        lines += [f'- name: "{name}"', f'  type: "{type_}"']
    return "\n".join(lines) + "\n"


def _bindings(pairs: list[tuple[str, str]]) -> str:
    return "".join(f'- name: "{name}"\n  from: "{ref}"\n' for name, ref in pairs)


def _llm_node(description: str, agent: str, pairs: list[tuple[str, str]]) -> str:
    return (f'apiVersion: "aqven/v1"\nkind: "Node"\nnode: "llm"\ndescription: "{description}"\n'
            f'agent: "{agent}"\nin:\n' + _bindings(pairs))


CASES = [
    ("refund_late", "yes"), ("flicker_after_update", "yes"), ("parcel_missing", "no"), ("dimmer_question", "no"),
    ("double_charge", "yes"), ("app_pairing", "no"), ("strip_too_short", "no"), ("wrong_colour", "yes"),
    ("battery_dead", "no"), ("warranty_register", "no"), ("customs_stuck", "no"), ("hub_offline", "yes"),
    ("price_drop", "no"), ("gift_return", "no"),
]


def _dataset() -> str:
    lines = ['apiVersion: "aqven/v1"', 'kind: "Dataset"', 'flow: "support_case"', "cases:"]
    for name, regression in CASES:
        text = name.replace("_", " ")
        lines += [
            f'- name: "{name}"',
            "  inputs:",
            "    customer:",
            '      name: "Ada"',
            '      locale: "en-GB"',
            f'    message: "My problem: {text}"',
            "  node_outputs:",
            "    prepare:",
            f'      text: "my problem: {text}"',
            '      locale: "en-GB"',
            "    resolve:",
            f'      resolution: "help with {text}"',
            "    draft:",
            f'      reply: "We will help with {text}."',
            "  tags:",
            f'    regression: "{regression}"',
            "  expected_output:",
            f'    reply: "We will help with {text}."',
            f'    resolution: "help with {text}"',
        ]
    return "\n".join(lines) + "\n"


FILES: dict[str, str] = {
    "aqven.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Project"
        description: "Lumen support: answer the customers of a smart-lighting shop"
        package: "lumen"
        providers:
        - id: "sim"
          kind: "code"
          run: "@root.sim:complete"
          data_policy:
            allows_pii: false
            allows_sensitive: false
            retention: "zero"
        """),
    "sim.py": textwrap.dedent('''\
        """Offline models: answer every field of the output schema with a short text."""
        from pytest_aqven import ModelResponse


        def complete(request):
            fields = (request.output_schema or {}).get("properties", {})
            answer = {name: ("ok" if spec.get("type") == "string" else 0.5) for name, spec in fields.items()}
            return ModelResponse(parsed=answer, tokens_in=20, tokens_out=10, cost_usd=0.0001, latency_ms=5.0)
        '''),
    "code/support_case.py": textwrap.dedent('''\
        from pytest_aqven import EvalContext, NoParams, Verdict


        def reply_keeps_resolution(value, context: EvalContext, params: NoParams) -> Verdict:
            """The reply promises nothing beyond the resolution."""
            return Verdict(passed="refund" not in str(value) or "refund" in str(context.inputs))
        '''),
    "types/records/customer.yaml": _record("Who writes", ("name", "Text"), ("locale", "Locale")),
    "types/records/case_request.yaml": _record("A customer case", ("customer", "Customer"), ("message", "Text")),
    "types/records/case_outcome.yaml": _record("The answer to a case", ("reply", "Text"), ("resolution", "Text")),
    "types/records/draft_request.yaml": _record("What a draft needs", ("message", "Text"), ("resolution", "Text")),
    "types/records/draft.yaml": _record("A draft reply", ("reply", "Text")),
    "agents/gpt.yaml": _agent("gpt-oss"),
    "agents/mistral.yaml": _agent("mistral-nemo"),
    "agents/deepseek.yaml": _agent("deepseek-flash"),
    "flows/support_case/flow.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Answer a customer case: prepare, resolve, draft, polish"
        input: "CaseRequest"
        output: "CaseOutcome"
        order:
        - "prepare"
        - "resolve"
        - "draft"
        - "polish"
        returns:
        - name: "reply"
          from: "$polish.out.reply"
        - name: "resolution"
          from: "$resolve.out.resolution"
        """),
    "flows/support_case/nodes/prepare/prepare.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Normalize the message"
        run: "prepare"
        in:
        - name: "message"
          from: "$input.message"
        - name: "locale"
          from: "$input.customer.locale"
        out:
        - name: "text"
          type: "Text"
        - name: "locale"
          type: "Locale"
        """),
    "flows/support_case/nodes/prepare/prepare.py": textwrap.dedent("""\
        def prepare(message: str, locale: str) -> dict:
            return {"text": " ".join(message.lower().split()), "locale": locale}
        """),
    "flows/support_case/nodes/resolve/resolve.node.yaml": _llm_node(
        "Decide the resolution", "deepseek", [("text", "$prepare.out.text")]),
    "flows/support_case/nodes/resolve/resolve.inference.yaml": _inference(
        "The resolution of a case", [("text", "Text")], [("resolution", "Text")]),
    "flows/support_case/nodes/resolve/resolve.prompt.md": "Decide what the shop does for this customer.\n",
    "flows/support_case/nodes/draft/draft.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "call"
        description: "Draft a reply"
        flow: "draft_reply"
        in:
        - name: "message"
          from: "$prepare.out.text"
        - name: "resolution"
          from: "$resolve.out.resolution"
        """),
    "flows/support_case/nodes/polish/polish.node.yaml": _llm_node(
        "Polish the draft into the final reply", "gpt",
        [("draft", "$draft.out.reply"), ("resolution", "$resolve.out.resolution"), ("locale", "$prepare.out.locale")]),
    "flows/support_case/nodes/polish/polish.inference.yaml": _inference(
        "A reply that keeps to the resolution", [("draft", "Text"), ("resolution", "Text"), ("locale", "Locale")],
        [("reply", "Text")]),
    "flows/support_case/nodes/polish/polish.prompt.md": "Rewrite the draft in the customer's language.\n",
    "flows/draft_reply/flow.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Write a first reply from a resolution"
        input: "DraftRequest"
        output: "Draft"
        order:
        - "write"
        returns:
        - name: "reply"
          from: "$write.out.reply"
        """),
    "flows/draft_reply/nodes/write/write.node.yaml": _llm_node(
        "Write the draft", "gpt", [("message", "$input.message"), ("resolution", "$input.resolution")]),
    "flows/draft_reply/nodes/write/write.inference.yaml": _inference(
        "A first reply", [("message", "Text"), ("resolution", "Text")], [("reply", "Text")]),
    "flows/draft_reply/nodes/write/write.prompt.md": "Write a short reply that states the resolution.\n",
    # Containers (no experiment runs them): every kind of scope a reference can have.
    "types/values/score.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "value"
        description: "A score between 0 and 1"
        base: "Float"
        minimum: 0
        maximum: 1
        """),
    "flows/polish_loop/flow.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Revise a draft until the critique is happy"
        input: "DraftRequest"
        output: "Draft"
        order:
        - "improve"
        returns:
        - name: "reply"
          from: "$improve.out.reply"
        """),
    "flows/polish_loop/nodes/improve/improve.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "loop"
        description: "Revise, critique, repeat"
        body:
        - "revise"
        - "critique"
        init:
          revise:
          - name: "previous"
            from: "$input.message"
        max_iter: 3
        stop:
        - use: "threshold"
          with:
            path: "$iter.critique.out.score"
            gte: 0.85
        select:
          use: "best"
          with:
            path: "$iter.critique.out.score"
        out:
        - name: "reply"
          type: "Text"
          from: "$iter.revise.out.reply"
        - name: "iterations"
          type: "Int"
          from: "$loop.iterations"
        """),
    "flows/polish_loop/nodes/improve/revise.node.yaml": _llm_node(
        "Revise the previous reply", "gpt",
        [("previous", "$acc.revise.out.reply"), ("resolution", "$input.resolution")]),
    "flows/polish_loop/nodes/improve/revise.inference.yaml": _inference(
        "A better reply", [("previous", "Text?"), ("resolution", "Text")], [("reply", "Text")]),
    "flows/polish_loop/nodes/improve/revise.prompt.md": "Improve the reply.\n",
    "flows/polish_loop/nodes/improve/critique.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Score the reply"
        run: "critique"
        in:
        - name: "reply"
          from: "$revise.out.reply"
        out:
        - name: "score"
          type: "Score"
        """),
    "flows/polish_loop/nodes/improve/critique.py": "def critique(reply):\n    return {\"score\": min(1.0, len(reply) / 100)}\n",
    "flows/gather/flow.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Map, parallel and switch in one flow"
        input: "DraftRequest"
        output: "Draft"
        context:
        - "locale"
        order:
        - "words"
        - "each"
        - "both"
        - "route"
        returns:
        - name: "reply"
          from: "$route.out.reply"
        """),
    "flows/gather/nodes/words/words.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Split the message"
        run: "words"
        in:
        - name: "text"
          from: "$input.message"
        - name: "locale"
          from: "$run.context.locale"
        out:
        - name: "items"
          type: "Text[]"
        - name: "mood"
          type: "Text"
        """),
    "flows/gather/nodes/words/words.py": "def words(text, locale):\n    return {\"items\": text.split(), \"mood\": \"happy\"}\n",
    "flows/gather/nodes/each/each.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "map"
        description: "Tag every word"
        over: "$words.out.items"
        body: "tag"
        on_item_error:
          use: "skip"
        out:
        - name: "tags"
          type: "Text[]"
          from: "$ok[*].label"
        """),
    "flows/gather/nodes/each/tag.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Tag one word"
        run: "tag"
        in:
        - name: "word"
          from: "$item"
        - name: "position"
          from: "$index"
        out:
        - name: "label"
          type: "Text"
        """),
    "flows/gather/nodes/each/tag.py": "def tag(word, position):\n    return {\"label\": f\"{position}:{word}\"}\n",
    "flows/gather/nodes/both/both.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "parallel"
        description: "Two views at once"
        body:
          a: "left"
          b: "right"
        join:
          use: "quorum"
          with:
            min_ok: 1
        out:
        - name: "texts"
          type: "Text[]"
          from: "$ok[*].text"
        - name: "left"
          type: "Text?"
          from: "$branch.a.text"
        """),
    "flows/gather/nodes/both/left.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Left view"
        run: "left"
        in:
        - name: "text"
          from: "$words.out.mood"
        out:
        - name: "text"
          type: "Text"
        """),
    "flows/gather/nodes/both/right.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Right view"
        run: "@root.flows.gather.nodes.both.left:left"
        in:
        - name: "text"
          from: "$each.out.tags[0]"
        out:
        - name: "text"
          type: "Text"
        """),
    "flows/gather/nodes/both/left.py": "def left(text):\n    return {\"text\": text}\n",
    "flows/gather/nodes/route/route.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "switch"
        description: "Answer by mood"
        on: "$words.out.mood"
        cases:
          happy:
            node: "cheer"
            bind:
            - name: "reply"
              from: "$cheer.out.text"
          sad:
            bind:
            - name: "reply"
              value: "We are sorry."
        out:
        - name: "reply"
          type: "Text"
        """),
    "flows/gather/nodes/route/cheer.node.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Cheer"
        run: "cheer"
        in:
        - name: "mood"
          from: "$case"
        - name: "first"
          from: "$both.out.texts[*]"
        out:
        - name: "text"
          type: "Text"
        """),
    "flows/gather/nodes/route/cheer.py": "def cheer(mood, first):\n    return {\"text\": f\"{mood}!\"}\n",
    "datasets/support_case_cases.yaml": _dataset(),
    "experiments/reply_look/experiment.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Experiment"
        description: "Read the polish step on the cases tagged as regressions"
        subject:
          flow: "support_case"
          from: "polish"
          to: "polish"
        cases:
          dataset: "support_case_cases"
          tags:
            regression: "yes"
        variants:
        - id: "current"
        question:
          kind: "look"
        """),
    "experiments/reply_overpromise_risk/experiment.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Experiment"
        description: "The polish step keeps its promises in more than 97% of attempts"
        failure_mode: "overpromise"
        subject:
          flow: "support_case"
          from: "polish"
          to: "polish"
        cases:
          dataset: "support_case_cases"
        variants:
        - id: "gpt"
        checks:
        - id: "promises"
          kind: "binary"
          run: "@root.code.support_case:reply_keeps_resolution"
        - id: "customer_language"
          kind: "binary"
          use: "language"
          with:
            field: "$out.reply"
            locale: "$in.customer.locale"
        question:
          kind: "threshold"
          metric: "promises"
          above: 0.97
          margin: 0.01
        plan:
          cases: 12
          repeats: 20
        """),
    "experiments/reply_noninferior_mistral/experiment.yaml": textwrap.dedent("""\
        apiVersion: "aqven/v1"
        kind: "Experiment"
        description: "Mistral polishes the reply no worse than gpt, within 5 points of promises kept"
        failure_mode: "reply_quality"
        subject:
          flow: "support_case"
          from: "polish"
          to: "polish"
        varies:
          what: "agent"
          nodes:
          - "polish"
        cases:
          dataset: "support_case_cases"
        variants:
        - id: "gpt"
        - id: "mistral"
          nodes:
            polish: "mistral"
        checks:
        - id: "promises"
          kind: "binary"
          run: "@root.code.support_case:reply_keeps_resolution"
        - id: "reply"
          kind: "binary"
          use: "expected"
          with:
            fields:
            - "reply"
        question:
          kind: "noninferior"
          baseline: "gpt"
          candidate: "mistral"
          primary: "promises"
          margin: 0.05
          guardrails:
          - metric: "cost_of_pass"
            direction: "lower_is_better"
            margin: 0.2
            relative: true
        """),
}


class Showcase:
    """A copy of the showcase project in a folder, with small edits and an in-process `aqven check`."""

    def __init__(self, root: Path):
        self.root = write_files(root, FILES)

    def path(self, rel: str) -> Path:
        return self.root / rel

    def read(self, rel: str) -> str:
        return self.path(rel).read_text(encoding="utf-8")

    def write(self, rel: str, text: str) -> None:
        path = self.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def edit(self, rel: str, old: str, new: str) -> None:
        text = self.read(rel)
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {rel}"
        self.write(rel, text.replace(old, new))

    def remove(self, rel: str) -> None:
        self.path(rel).unlink()

    def diagnostics(self) -> list[Diagnostic]:
        return sorted(check_root(self.root), key=Diagnostic.sort_key)

    def text(self) -> str:
        return render_text(check_root(self.root))

    def only(self, *codes: str) -> list[str]:
        """The rendered diagnostics, after asserting that they all have one of `codes` (no false alarms)."""
        found = self.diagnostics()
        assert found, "expected diagnostics, found none"
        assert {d.code for d in found} <= set(codes), render_text(found)
        return [d.render() for d in found]

    def one(self, code: str) -> str:
        found = self.only(code)
        assert len(found) == 1, "\n".join(found)
        return found[0]
