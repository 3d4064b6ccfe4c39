"""The use factor at run time: an alternative container runs its own children (needs the engine's containers)."""
from __future__ import annotations

from pytest_aqven.experiments.plan import assemble

from .. import engine_projects as ep
from ..experiments.test_factors import loop, refine_rule


def test_the_runner_runs_an_alternatives_own_children(tmp_path):
    """At run time the alternative loop runs its alternative child `rewrite` and the subject's `keep`."""
    import asyncio

    from pytest_aqven.engine.runner import Runner
    from pytest_aqven.providers import registry

    def code(fn: str):
        return ep.node("code", run=fn, in_=[{"name": "text", "from": "$input.text"}],
                       out=[{"name": "text", "type": "Text"}])

    files = {
        "flows/polish/flow.yaml": ep.flow(["refine"], {"text": "$refine.out.text"}),
        "flows/polish/nodes/refine/refine.node.yaml": loop(["revise"]),
        "flows/polish/nodes/refine/revise.node.yaml": code("f"),
        "flows/polish/nodes/refine/revise.py": "def f(text):\n    return {'text': text + ' revised'}\n",
        "flows/polish/nodes/refine/keep.node.yaml": code("f"),
        "flows/polish/nodes/refine/keep.py": "def f(text):\n    return {'text': text + ' kept'}\n",
        "experiments/refine_rule/nodes/two_pass/two_pass.node.yaml": {
            **loop(["rewrite", "keep"]), "out": [{"name": "text", "type": "Text", "from": "$iter.rewrite.out.text"}]},
        "experiments/refine_rule/nodes/two_pass/rewrite.node.yaml": code("f"),
        "experiments/refine_rule/nodes/two_pass/rewrite.py": "def f(text):\n    return {'text': text + ' rewritten'}\n",
        **refine_rule(),
    }
    project = ep.load(ep.write(tmp_path, files, package="factorrun"))
    providers = {s.id: registry.build(s, package=project.package, root=project.root) for s in project.spec.providers}
    variants = assemble(project, project.experiments["refine_rule"])
    ran = {v: asyncio.run(Runner(project, providers).run(a, {"text": "x"})) for v, a in variants.items()}
    assert ran["as_written"].output == {"text": "x revised"}
    assert ran["two_pass"].output == {"text": "x rewritten"}
    assert {n.node for n in ran["two_pass"].nodes} >= {"refine", "refine__rewrite", "refine__keep"}
