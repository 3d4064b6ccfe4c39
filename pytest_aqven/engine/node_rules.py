"""The rules of each kind of node: llm, tool, human, narrow, code and call nodes (containers in
container_rules.py), their inputs, their code and the flows they call."""
from __future__ import annotations

import inspect
import typing
from typing import TYPE_CHECKING, Callable

from ..check.context import CheckContext, text_problem
from ..diagnostics import Diagnostic
from ..project import shapes, specs
from ..project.model import Flow, Node
from ..project.shapes import Seq, Shape, describe
from ..project.typesmodule import code_stem
from .container_rules import ContainerRules
from .flow_view import FlowView
from .inference_rules import InferenceRules
from .prompt_rules import prompt_rules
from .ref_rules import Scope

if TYPE_CHECKING:
    from ..project.yamlpos import YamlDoc

PLAIN_RETURNS: dict[type, Shape] = {str: "Text", int: "Int", float: "Float", bool: "Bool", list: Seq(None)}


class NodeRules(ContainerRules):
    """Each node once (a node named by two containers, or by itself, is checked once), by its kind."""

    def __init__(self, ctx: CheckContext, view: FlowView) -> None:
        super().__init__(ctx, view)
        self.visited: set[str] = set()

    def _node(self, node_id: str, node: Node, scope: Scope) -> None:
        if node_id in self.visited:
            return                       # a node named by two containers, or by itself: checked once
        self.visited.add(node_id)
        spec, doc, who = node.spec, node.doc, f"node {node_id}"
        if isinstance(spec, specs.ToolNode):
            self._tool(node_id, node, scope)
        elif isinstance(spec, specs.HumanNode):
            self._human(node_id, node, scope)
        elif isinstance(spec, specs.NarrowNode):
            self._type(doc, ("to",), spec.to, who)
            self._ref(doc, ("from",), spec.from_, scope, f"{who}: from")
            self._fit(doc, ("from",), spec.from_, scope, spec.to, who, "from", f"type {spec.to}")
        elif isinstance(spec, specs.LlmNode):
            self._llm(node_id, node, scope)
        elif isinstance(spec, specs.CodeNode):
            self._code(node_id, node, scope)
        elif isinstance(spec, specs.CallNode):
            self._call(node_id, node, scope)
        else:
            self._container(node_id, node, scope)
        slots = self.input_slots(node_id, node)
        if slots is not None:
            self._typed_bindings(doc, getattr(spec, "in_", []), scope, *slots, who, ("in",))

    def _llm(self, node_id: str, node: Node, scope: Scope) -> None:
        spec, doc, who = node.spec, node.doc, f"node {node_id}"
        agent = self.view.agent(node_id, node)
        if agent not in self.ctx.project.agents and not self.ctx.unreadable("agent", agent):
            self.out.append(doc.diag("E_AGENT_UNKNOWN", ("agent",), f"{who}: agent {agent} does not exist in the project",
                                     f"name an agent of agents/ ({', '.join(sorted(self.ctx.project.agents)) or 'none yet'})"))
        if node.inference is not None:
            stem = spec.inference or node.id
            fields = {f.name: f.type for f in node.inference.in_}
            self._cover(doc, spec.in_, fields, f"inference {stem}", who)
            for key in ("in_", "out"):
                for i, f in enumerate(getattr(node.inference, key)):
                    self._type(node.inference_doc, (key.rstrip("_"), i, "type"), f.type, f"inference {stem}")
            if node.inference.prompt is not None:
                self._code_ref(node.inference_doc, ("prompt",), node.inference.prompt, node.inference_py_path,
                               f"inference {stem}")
            assert node.inference_doc is not None       # the loader reads an inference from its file: both or neither
            InferenceRules(self.ctx, self.out).check(stem, node.inference, node.inference_doc)
        prompt = self.view.prompts.get(node_id, node.prompt_path)
        if prompt is not None and node.inference is not None and node.inference.prompt is None:
            self.out += prompt_rules(self.ctx, prompt, node.inference, spec.inference or node.id,
                                     node.inference_doc.file if node.inference_doc else str(prompt))
        if prompt is not None and str(prompt) not in self.ctx.inferences_seen:
            self.ctx.inferences_seen.add(str(prompt))       # one line per file, however many nodes read it
            problem = text_problem(prompt)
            if problem:
                self.out.append(Diagnostic("E_FILE_UNREADABLE", self.ctx.project.rel(prompt), (),
                                           f"prompt file {prompt.name} {problem}", None, None,
                                           "save the prompt as UTF-8 text"))
        self._bindings_refs(doc, spec.in_, scope, who)

    def _tool(self, node_id: str, node: Node, scope: Scope) -> None:
        spec, doc, who = node.spec, node.doc, f"node {node_id}"
        tool = self.ctx.project.tools.get(spec.tool)
        if tool is None and not self.ctx.unreadable("tool", spec.tool):
            self.out.append(doc.diag("E_TOOL_UNKNOWN", ("tool",), f"{who}: tool {spec.tool} does not exist in the project",
                                     f"name a tool of tools/ ({', '.join(sorted(self.ctx.project.tools)) or 'none yet'})"))
        elif tool is not None and tool.spec.run is not None:
            self._cover(doc, spec.in_, {f.name: f.type for f in tool.spec.in_}, f"tool {spec.tool}", who)
        self._bindings_refs(doc, spec.in_, scope, who)

    def _human(self, node_id: str, node: Node, scope: Scope) -> None:
        spec, doc, who = node.spec, node.doc, f"node {node_id}"
        self._type(doc, ("form",), spec.form, who)
        for i, f in enumerate(spec.in_):
            self._type(doc, ("in", i, "type"), f.type, who)
        self._bindings_refs(doc, spec.in_, scope, who)
        if spec.on_timeout.policy == "default" and spec.on_timeout.value is not None:
            problem = self._value_problem(spec.form, spec.on_timeout.value)
            if problem:
                self.out.append(doc.diag("E_HUMAN_DEFAULT_INVALID", ("on_timeout", "value"),
                                         f"{who}: on_timeout default value does not fit the form {spec.form}: {problem}",
                                         f"give a value of type {spec.form}: it is the node's answer when nobody answers"))

    def _code(self, node_id: str, node: Node, scope: Scope) -> None:
        spec, doc, who = node.spec, node.doc, f"node {node_id}"
        for i, f in enumerate(spec.in_):
            self._type(doc, ("in", i, "type"), f.type, who)
        for i, f in enumerate(spec.out):
            self._type(doc, ("out", i, "type"), f.type, who)
        self._bindings_refs(doc, spec.in_, scope, who)
        fn = self._code_ref(doc, ("run",), spec.run, node.py_path, who)
        if fn is not None:
            self._signature(doc, spec, fn, who)
            self._returned(doc, node_id, node, fn, who)

    def _returned(self, doc: YamlDoc, node_id: str, node: Node, fn: Callable, who: str) -> None:
        """The function's return annotation, where it names a model of <package>.types or a plain value,
        fits the node's out fields (the engine validates what it returns into them)."""
        spec = node.spec
        try:
            hint = typing.get_type_hints(fn).get("return")
        except Exception:          # hints naming what does not exist: the runtime never reads them
            return
        if hint is None:           # no return annotation
            return
        declared = shapes.record(f"the out fields of node {node_id}", self.registry, spec.out)
        fields = getattr(hint, "__aqven_fields__", None)
        returned: Shape
        if fields is not None:
            name, returned = hint.__name__, shapes.record(hint.__name__, self.registry, fields)
        elif isinstance(hint, type) and hint in PLAIN_RETURNS:
            name, returned = hint.__name__, PLAIN_RETURNS[hint]
        else:
            return                 # dict, a model of its own, a union: the engine validates the value
        problem = shapes.mismatch(self.registry, returned, declared)
        if problem:
            self.out.append(doc.diag("E_CODE_SIGNATURE_MISMATCH", ("run",),
                                     f"{who}: {spec.run} returns {name}, which does not fit {describe(declared)}: {problem}",
                                     f"return a record of the out fields ({', '.join(f.name for f in spec.out)}), "
                                     f"such as {code_stem(self.ctx.project, self.flow, node)}Out"))

    def _signature(self, doc: YamlDoc, spec: specs.CodeNode, fn: Callable, who: str) -> None:
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            return
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            return
        bound = [b.name for b in spec.in_]
        for i, name in enumerate(bound):
            if name not in params:
                self.out.append(doc.diag("E_CODE_SIGNATURE_MISMATCH", ("in", i, "name"),
                                         f"{who}: input {name} is not a parameter of {spec.run} ({', '.join(params) or 'none'})",
                                         "name the inputs like the parameters of the function: it is called with keyword arguments"))
        for name, p in params.items():
            required = p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            if required and name not in bound:
                self.out.append(doc.diag("E_CODE_SIGNATURE_MISMATCH", ("run",),
                                         f"{who}: {spec.run} needs parameter {name}, which the node does not bind",
                                         f"add {{name: {name}, from: \"$...\"}} under in, or give the parameter a default"))

    def _call(self, node_id: str, node: Node, scope: Scope) -> None:
        spec, doc, who = node.spec, node.doc, f"node {node_id}"
        flow_id = self.view.called(node_id, node)
        called = self.view.find_flow(flow_id)
        if called is None and flow_id in self.view.broken_flows:
            pass
        elif called is None:
            self.out.append(doc.diag("E_FLOW_UNKNOWN", ("flow",), f"{who}: flow {flow_id} does not exist",
                                     f"name a flow of the project ({', '.join(sorted(self.ctx.project.flows))})"))
        else:
            self._cover(doc, spec.in_, self.ctx.types.fields(called.spec.input),
                        f"the input {called.spec.input} of flow {flow_id}", who)
            if self._calls_back(called, {flow_id}):
                self.out.append(doc.diag("E_CALL_RECURSIVE", ("flow",),
                                         f"{who}: flow {flow_id} calls flow {self.flow.id} again, directly or through other flows",
                                         "a flow cannot call itself: move the shared nodes into a third flow that both call"))
        self._bindings_refs(doc, spec.in_, scope, who)

    def _calls_back(self, flow: Flow, seen: set[str]) -> bool:
        for node in flow.nodes.values():
            if isinstance(node.spec, specs.CallNode):
                target = node.spec.flow
                if target == self.flow.id:
                    return True
                if target not in seen:
                    seen.add(target)
                    nxt = self.view.find_flow(target)
                    if nxt is not None and self._calls_back(nxt, seen):
                        return True
        return False
