"""The use factor as the seeds say, one implementation for `aqven check` and the runner."""
from __future__ import annotations

from pytest_aqven.experiments.factors import use_nodes
from pytest_aqven.experiments.plan import assemble

from .. import engine_projects as ep


def code(out="text"):
    return ep.node("code", run="f", in_=[{"name": "text", "from": "$input.text"}], out=[{"name": out, "type": "Text"}])


def loop(body):
    return ep.node("loop", body=body, max_iter=2, out=[{"name": "text", "type": "Text", "from": f"$iter.{body[0]}.out.text"}])


def refine_rule() -> dict:
    """The dataset over flow polish and the experiment whose variant two_pass puts the alternative two_pass in the
    slot refine (`use`): the project files both factor tests share."""
    return {
        "datasets/texts.yaml": {"apiVersion": "aqven/v1", "kind": "Dataset", "flow": "polish",
                                "cases": [{"name": "a", "inputs": {"text": "x"}}]},
        "experiments/refine_rule/experiment.yaml": {
            "apiVersion": "aqven/v1", "kind": "Experiment", "description": "Two passes refine better",
            "subject": {"flow": "polish"}, "cases": {"dataset": "texts"},
            "varies": {"what": "use", "nodes": ["refine"]},
            "variants": [{"id": "as_written"}, {"id": "two_pass", "nodes": {"refine": "two_pass"}}],
            "question": {"kind": "look"}},
    }


def test_an_alternatives_children_come_from_the_alternatives_first_and_unreached_nodes_are_dropped(tmp_path):
    files = {
        "flows/polish/flow.yaml": ep.flow(["prepare", "refine"], {"text": "$refine.out.text"}),
        "flows/polish/nodes/prepare/prepare.node.yaml": code(),
        "flows/polish/nodes/refine/refine.node.yaml": loop(["revise"]),
        "flows/polish/nodes/refine/revise.node.yaml": code(),
        "flows/polish/nodes/refine/keep.node.yaml": code(),
        # the alternative loop runs its own child `rewrite` (an alternative) and the subject's `keep`
        "experiments/refine_rule/nodes/two_pass/two_pass.node.yaml": loop(["rewrite", "keep"]),
        "experiments/refine_rule/nodes/two_pass/rewrite.node.yaml": code(),
        **refine_rule(),
    }
    f = "def f(text):\n    return {'text': text}\n"
    for path in ("flows/polish/nodes/prepare/prepare.py", "flows/polish/nodes/refine/revise.py",
                 "flows/polish/nodes/refine/keep.py", "experiments/refine_rule/nodes/two_pass/rewrite.py"):
        files[path] = f
    project = ep.load(ep.write(tmp_path, files, package="factorproj"))
    experiment = project.experiments["refine_rule"]
    flow = project.flows["polish"]
    nodes, replaced = use_nodes(flow.nodes, flow.spec.order, {"refine": experiment.alternatives["two_pass"]},
                                experiment.alternatives)
    assert set(nodes) == {"prepare", "refine", "rewrite", "keep"}         # revise: nothing reaches it any more
    assert replaced == {"refine", "rewrite"}
    assert nodes["rewrite"] is experiment.alternatives["rewrite"] and nodes["keep"] is flow.nodes["keep"]
    runtime = assemble(project, experiment)
    assert runtime["as_written"].nodes == {}
    assert runtime["two_pass"].nodes == {k: nodes[k] for k in replaced}   # what the runner runs in the slots

