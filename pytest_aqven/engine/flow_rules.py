"""The flow compiler of `aqven check`: every node, reference, type and code reference of a flow.

It works on a FlowView, the flow as one variant sees it (alternative nodes in their slots, other
agents, prompts or called flows), so an experiment's variants are checked by the same rules."""
from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, cast

from pydantic import ValidationError

from ..check.context import CheckContext, text_problem
from ..diagnostics import Diagnostic
from ..project import shapes, specs
from ..project.loader import Flow, Node
from ..project.shapes import Seq, Shape, describe
from ..project.typesmodule import code_stem
from ..project.yamlpos import Path_, YamlDoc
from . import policies, prompts as engine_prompts, refs
from .evaluators import BUILTINS
from .prompt_rules import inputs_read, prompt_rules

# the `with:` models of AQVEN's eleven built-in evaluators, the runtime's own, so the checker and the runner never
# disagree (the built-in container policies and their parameter models are the engine's too: policies.BUILTINS)
EVALUATOR_PARAMS = {name: model for name, (_, model) in BUILTINS.items()}


@dataclass
class FlowView:
    flow: Flow
    nodes: dict[str, Node]                        # local id -> node (an alternative sits under its slot id)
    find_flow: Callable[[str], Flow | None]       # local flows of the experiment first, then project flows
    agents: dict[str, str] = field(default_factory=dict)      # node -> agent id of the variant
    calls: dict[str, str] = field(default_factory=dict)       # call node -> flow id of the variant
    prompts: dict[str, Path] = field(default_factory=dict)    # llm node -> prompt file of the variant
    replaced: set[str] = field(default_factory=set)           # ids whose node comes from the experiment's nodes/
    broken_flows: set[str] = field(default_factory=set)       # flows whose files exist but did not load

    def unreadable(self, node_id: str) -> bool:
        return node_id in self.flow.unreadable

    @classmethod
    def of(cls, flow: Flow, find_flow: Callable[[str], Flow | None],
           broken_flows: Collection[str] = frozenset()) -> "FlowView":
        return cls(flow, dict(flow.nodes), find_flow, broken_flows=set(broken_flows))

    @property
    def order(self) -> list[str]:
        return list(self.flow.spec.order)

    def agent(self, node_id: str, node: Node) -> str:
        return self.agents.get(node_id, node.spec.agent)

    def called(self, node_id: str, node: Node) -> str:
        return self.calls.get(node_id, node.spec.flow)

    def descendants(self, node_id: str, seen: set[str] | None = None) -> set[str]:
        """The node and every existing node it runs inside it (guarding against a container naming itself)."""
        seen = set() if seen is None else seen
        node = self.nodes.get(node_id)
        if node_id in seen or node is None:       # names without a node are reported where they are named
            return seen
        seen.add(node_id)
        for _, child in specs.children(node.spec):
            self.descendants(child, seen)
        return seen

    def reachable(self) -> set[str]:
        out: set[str] = set()
        for top in self.order:
            self.descendants(top, out)
        return out


def node_outputs(ctx: CheckContext, view: FlowView, node_id: str, node: Node) -> dict[str, str] | None:
    """Output field -> type ref of a node, or None when the checker cannot know them."""
    spec = node.spec
    if isinstance(spec, specs.LlmNode):
        return {f.name: f.type for f in node.inference.out} if node.inference else None
    if isinstance(spec, specs.CallNode):
        called = view.find_flow(view.called(node_id, node))
        return ctx.types.fields(called.spec.output) if called else None
    if isinstance(spec, specs.ToolNode):
        tool = ctx.project.tools.get(spec.tool)
        return {f.name: f.type for f in tool.spec.out} if tool is not None and tool.spec.run else None
    if isinstance(spec, specs.HumanNode):
        return ctx.types.fields(spec.form)
    if isinstance(spec, specs.NarrowNode):
        return ctx.types.fields(spec.to)
    out = getattr(spec, "out", None)
    if out is None:
        return None
    return {f.name: f.type for f in out}


# --- references -----------------------------------------------------------------------------

CONTEXT_KEYS = ("date", "time_zone", "locale", "tenant_id")
CONTEXT_TYPES = {"date": "Date", "time_zone": "TimeZone", "locale": "Locale", "tenant_id": "TenantId"}
PATH_POLICIES = ("threshold", "stagnation", "best")     # built-in policies that compare the number at `path`
SPECIAL = {
    "item": "inside the body of a map", "index": "inside the body of a map",
    "case": "inside the node of a switch case", "acc": "inside the body of a loop",
    "iter": "in the out, stop and select of a loop", "loop": "in the out, stop and select of a loop",
    "ok": "in the out of a map or parallel node", "failed": "in the out of a map node",
    "branch": "in the out of a parallel node",
}
REF_FORMS = "a reference reads $input.<field>, $run.context.<key> or $<node>.out.<field>"


def parse_steps(text: str) -> tuple[str, tuple] | str:
    """(root, steps) or a problem."""
    try:
        return refs.lex(text)
    except refs.RefError as exc:
        return str(exc)


@dataclass(frozen=True)
class Scope:
    """What a reference may read at one place of a flow."""
    nodes: tuple[str, ...]                    # node ids that ran before (readable as $<id>.out)
    specials: frozenset[str] = frozenset()    # roots such as item, acc, iter
    siblings: tuple[str, ...] = ()            # names after $acc. / $iter.
    branches: tuple[str, ...] = ()            # keys after $branch.
    shapes: tuple[tuple[str, Shape], ...] = ()   # what $item, $case, $ok, $failed, $branch.<key> read

    def with_(self, *, nodes=(), specials=(), siblings=None, branches=None, shapes=None) -> "Scope":
        return Scope(self.nodes + tuple(n for n in nodes if n not in self.nodes), self.specials | set(specials),
                     self.siblings if siblings is None else tuple(siblings),
                     self.branches if branches is None else tuple(branches),
                     tuple({**dict(self.shapes), **(shapes or {})}.items()))

    def shape(self, root: str) -> Shape:
        return dict(self.shapes).get(root)


class FlowCompiler:
    def __init__(self, ctx: CheckContext, view: FlowView) -> None:
        self.ctx = ctx
        self.view = view
        self.out: list[Diagnostic] = []
        self.visited: set[str] = set()
        self._shapes: dict[str, Shape] = {}

    @property
    def flow(self) -> Flow:
        return self.view.flow

    def run(self) -> list[Diagnostic]:
        self._order_and_types()
        for k, top in enumerate(self.view.order):
            node = self.view.nodes.get(top)
            if node is not None:
                self._node(top, node, Scope(tuple(n for n in self.view.order[:k] if n in self.view.nodes)))
        self._returns()
        return self.out

    # --- flow level -------------------------------------------------------------------------
    def _order_and_types(self) -> None:
        doc, f, seen = self.flow.doc, self.flow.id, set()
        for i, node_id in enumerate(self.view.order):
            if node_id in seen:
                self.out.append(doc.diag("E_ID_DUPLICATE", ("order", i), f"flow {f}: node {node_id} is listed twice in order",
                                         "list every top-level node once: the order runs each of them once"))
            seen.add(node_id)
            node = self.view.nodes.get(node_id)
            if node is None and self.view.unreadable(node_id):
                continue
            if node is None:
                self.out.append(doc.diag("E_NODE_UNKNOWN", ("order", i),
                                         f"flow {f}: node {node_id} has no file nodes/{node_id}/{node_id}.node.yaml",
                                         f"create the node or name one of: {self._top_level_names() or 'none yet'}"))
            elif node_id not in self.view.replaced and node.path.parent.name != node_id:
                self.out.append(doc.diag("E_NODE_UNKNOWN", ("order", i),
                                         f"flow {f}: node {node_id} is not a top-level node: its file lies in "
                                         f"nodes/{node.path.parent.name}/, the folder of another node",
                                         f"move it to nodes/{node_id}/{node_id}.node.yaml, or run it inside its container"))
        for key in ("input", "output"):
            self._type(doc, (key,), getattr(self.flow.spec, key), f"flow {f}")

    def _top_level_names(self) -> str:
        return ", ".join(sorted(n for n, node in self.flow.nodes.items() if node.path.parent.name == n))

    def _returns(self) -> None:
        doc, spec = self.flow.doc, self.flow.spec
        scope = Scope(tuple(n for n in self.view.order if n in self.view.nodes))
        fields = self.ctx.types.fields(spec.output)
        names = [b.name for b in spec.returns]
        for i, b in enumerate(spec.returns):
            if fields is not None and b.name not in fields:
                self.out.append(doc.diag("E_RETURNS_INVALID", ("returns", i, "name"),
                                         f"flow {self.flow.id}: returns {b.name}, which is not a field of its output type {spec.output}",
                                         f"return the fields of {spec.output}: {', '.join(fields)}"))
            if b.from_ is not None:
                self._ref(doc, ("returns", i, "from"), b.from_, scope, f"flow {self.flow.id}: returns {b.name}")
            if fields is not None and b.name in fields:
                self._bound(doc, ("returns", i), b, scope, fields[b.name], f"flow {self.flow.id}", f"returns {b.name}",
                            f"field {b.name} of its output type {spec.output}")
        for name in self.ctx.types.required(spec.output):
            if name not in names:
                self.out.append(doc.diag("E_RETURNS_INVALID", ("returns",),
                                         f"flow {self.flow.id}: returns no value for field {name} of its output type {spec.output}",
                                         f"add {{name: {name}, from: \"$<node>.out.<field>\"}} under returns"))

    def _type(self, doc, path: tuple, ref: str | None, what: str) -> None:
        if ref is None:
            return
        problem = self.ctx.types.problem(ref)
        if problem:
            self.out.append(doc.diag("E_TYPE_UNKNOWN", path, f"{what}: {problem}",
                                     f"add types/<folder>/<snake_name>.yaml or name one of: {self.ctx.types.known_names()}"))

    # --- nodes ------------------------------------------------------------------------------
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

    def _bindings_refs(self, doc, bindings, scope: Scope, who: str, key: tuple = ("in",)) -> None:
        for i, b in enumerate(bindings):
            if b.from_ is not None:
                self._ref(doc, key + (i, "from"), b.from_, scope, f"{who}: input {b.name}")

    def _cover(self, doc, bindings, fields: dict[str, str] | None, target: str, who: str) -> None:
        """Bindings name fields of the target, and bind every required one."""
        if fields is None:
            return
        bound = [b.name for b in bindings]
        for i, name in enumerate(bound):
            if name not in fields:
                self.out.append(doc.diag("E_BINDING_UNKNOWN", ("in", i, "name"),
                                         f"{who}: input {name} is not a field of {target}",
                                         f"bind the fields of {target}: {', '.join(fields) or 'none'}"))
        for name, t in fields.items():
            if name not in bound and not t.endswith("?"):
                self.out.append(doc.diag("E_BINDING_MISSING", ("in",) if bound else ("node",),
                                         f"{who}: {target} needs input {name}, which the node does not bind",
                                         f"add {{name: {name}, from: \"$...\"}} under in"))

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
            self._inference(stem, node.inference, node.inference_doc)
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

    def _inference(self, stem: str, inf: specs.InferenceSpec, doc: YamlDoc) -> None:
        """The keys of an inference file beyond in/out: variants, allowed_sets, examples, checks,
        display and Dynamic outputs. Each is checked once per inference file."""
        who = f"inference {stem}"
        if doc.file in self.ctx.inferences_seen:
            return
        self.ctx.inferences_seen.add(doc.file)
        folder = (self.ctx.project.root / doc.file).parent
        here = folder / f"{stem}.py"
        ins = {f.name: f.type for f in inf.in_}
        outs = {f.name: f.type for f in inf.out}

        def in_field(path: tuple, ref: str, what: str) -> str | None:
            """The input field a `$in.<field>...` reference starts with, or None after a diagnostic."""
            parsed = parse_steps(ref)
            if isinstance(parsed, str) or parsed[0] != "in" or not parsed[1] or parsed[1][0] not in ins:
                self.out.append(doc.diag("E_REF_INVALID", path, f"{who}: {what} {ref} does not read an input of the inference",
                                         f"write $in.<field> with a field of in ({', '.join(ins) or 'none'})"))
                return None
            problem = self.ctx.types.walk(ins[parsed[1][0]], parsed[1][1:])
            if problem:
                self.out.append(doc.diag("E_REF_FIELD_UNKNOWN", path, f"{who}: {what} {ref}: {problem[0]}",
                                         f"name one of its fields: {', '.join(problem[1])}" if problem[1]
                                         else "fix the path of the reference"))
                return None
            return parsed[1][0]

        for slot, v in inf.variants.items():
            in_field(("variants", slot, "on"), v.selector, f"variant slot {slot}: on")
            files: list[tuple[Path_, str]] = [(("variants", slot, "cases", case), name)
                                              for case, name in v.cases.items()]
            if v.default is not None:
                files.append((("variants", slot, "default"), v.default))
            for path, name in files:
                file = folder / f"{stem}.variants" / slot / f"{name}.md"
                problem = text_problem(file)
                if problem:
                    self.out.append(doc.diag("E_VARIANT_FILE_MISSING" if problem == "does not exist" else "E_FILE_UNREADABLE",
                                             path, f"{who}: variant file {self.ctx.project.rel(file)} {problem}",
                                             f"write the variant text in {stem}.variants/{slot}/{name}.md beside the inference"))
                else:
                    self.out += prompt_rules(self.ctx, file, inf, stem, doc.file, main=False)
        for i, s in enumerate(inf.allowed_sets):
            target = self.ctx.project.types.specs.get(s.type)
            if not isinstance(target, specs.IdTypeSpec) and s.type not in self.ctx.types.unreadable:
                ids = sorted(t for t, sp in self.ctx.project.types.specs.items() if isinstance(sp, specs.IdTypeSpec))
                self.out.append(doc.diag("E_ALLOWED_SET_INVALID", ("allowed_sets", i, "type"),
                                         f"{who}: allowed_sets type {s.type} is not an id type of types/",
                                         f"name an id type ({', '.join(ids) or 'none yet'}): an allowed set restricts ids"))
            in_field(("allowed_sets", i, "from"), s.from_, "allowed_sets from")
            if s.labels_from is not None:
                in_field(("allowed_sets", i, "labels_from"), s.labels_from, "allowed_sets labels_from")
        for i, ex in enumerate(inf.examples):
            for side, given, fields in (("in", ex.in_, ins), ("out", ex.out, outs)):
                for name, value in given.items():
                    problem = None if name in fields else f"{name} is not a field of {side}"
                    if problem is None and fields[name] not in ("Dynamic", "Dynamic?"):
                        problem = self._value_problem(fields[name], value)
                    if problem:
                        self.out.append(doc.diag("E_EXAMPLE_INVALID", ("examples", i, side, name),
                                                 f"{who}: example {ex.name}: {side}.{name}: {problem}",
                                                 f"fields of {side}: {', '.join(fields) or 'none'}"))
        for i, c in enumerate(inf.checks):
            if c.use is not None and c.use not in EVALUATOR_PARAMS:
                self.out.append(doc.diag("E_POLICY_UNKNOWN", ("checks", i, "use"), f"{who}: check use: {c.use} is not a built-in evaluator",
                                         f"name a built-in evaluator ({', '.join(sorted(EVALUATOR_PARAMS))}) or run your own"))
            elif c.use is not None:
                self._check_params(doc, ("checks", i), c.with_, EVALUATOR_PARAMS[c.use], f"use: {c.use}", who)
            if c.run is not None:
                self._code_ref(doc, ("checks", i, "run"), c.run, here, who)
            if c.agent is not None and c.agent not in self.ctx.project.agents and not self.ctx.unreadable("agent", c.agent):
                self.out.append(doc.diag("E_AGENT_UNKNOWN", ("checks", i, "agent"), f"{who}: check agent {c.agent} does not exist",
                                         f"name an agent of agents/ ({', '.join(sorted(self.ctx.project.agents))})"))
            if c.inference is not None:
                self.out += judge_rules(self.ctx, doc, ("checks", i, "inference"), c.inference, f"{who}: check {i + 1}")
        for side in ("input", "output"):
            display = getattr(inf.display, side, None) if inf.display else None
            if display is None:
                continue
            if display.template is not None:
                t = display.template
                file = self.ctx.project.root / t[len("@root/"):] if t.startswith("@root/") else folder / t
                problem = text_problem(file)
                if problem:
                    self.out.append(doc.diag("E_FILE_UNREADABLE", ("display", side, "template"),
                                             f"{who}: display template {t} {problem}",
                                             "write the template beside the inference, or name it from @root/"))
            if display.run is not None:
                self._code_ref(doc, ("display", side, "run"), display.run, here, who)
            for name, ref in display.variables.items():
                parsed = parse_steps(ref)
                if isinstance(parsed, str) or parsed[0] not in ("in", "out"):
                    self.out.append(doc.diag("E_REF_INVALID", ("display", side, "variables", name),
                                             f"{who}: display variable {name}: {ref} reads neither $in nor $out", REF_FORMS))
        for i, f in enumerate(inf.out):
            if f.schema_from is not None:
                field = in_field(("out", i, "schema_from"), f.schema_from, f"out {f.name}: schema_from")
                if field is not None and ins[field].rstrip("?") != "FieldSpec[]":
                    self.out.append(doc.diag("E_SCHEMA_FROM_INVALID", ("out", i, "schema_from"),
                                             f"{who}: out {f.name}: schema_from {f.schema_from} is {ins[field]}, not FieldSpec[]",
                                             "a Dynamic field takes its shape from an input of type FieldSpec[]"))
            if f.value_type is not None:
                self._type(doc, ("out", i, "value_type"), f.value_type, who)

    def _check_params(self, doc, path: tuple, given: dict, model, label: str, who: str) -> None:
        """The `with:` of a built-in evaluator fits its parameters model (the one the engine validates with)."""
        try:
            model.model_validate(given or {})
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = tuple(err["loc"])
            key = loc[:1] if loc and loc[0] in (given or {}) else ()
            self.out.append(doc.diag("E_CHECK_PARAMS", path + ("with",) + key,
                                     f"{who}: evaluator {label}: with parameters are invalid: "
                                     f"{'.'.join(map(str, loc)) or 'with'}: {err['msg'].lower()}",
                                     f"the parameters of {label} are: {', '.join(model.model_fields) or 'none'}"))

    def _value_problem(self, type_ref: str, value: Any) -> str | None:
        try:
            self.ctx.adapter(type_ref).validate_python(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(map(str, err["loc"]))
            return (f"{where}: " if where else "") + err["msg"].lower()
        except Exception:       # an unknown type is reported where it is named
            return None
        return None

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

    def _returned(self, doc, node_id: str, node: Node, fn: Callable, who: str) -> None:
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

    def _signature(self, doc, spec: specs.CodeNode, fn: Callable, who: str) -> None:
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

    def _code_ref(self, doc, path: tuple, ref: str, here: Path, who: str) -> Callable | None:
        fn, problem = self.ctx.resolver.resolve(ref, here)
        if problem:
            self.out.append(doc.diag("E_CODE_REF_UNRESOLVED", path, f"{who}: {problem}",
                                     "write fn for a function of the .py file beside the YAML, @root.<module>:<fn> "
                                     "or <package>.<module>:<fn>, and make the module import cleanly"))
        return fn

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

    def _container(self, node_id: str, node: Node, scope: Scope) -> None:
        spec, doc, who = node.spec, node.doc, f"node {node_id}"
        kids = specs.children(spec)
        names = [c for _, c in kids]
        for path, child in kids:
            if child not in self.view.nodes and not self.view.unreadable(child):
                self.out.append(doc.diag("E_NODE_UNKNOWN", path,
                                         f"{who}: child node {child} has no file {child}.node.yaml beside {node.path.name}",
                                         f"create {child}.node.yaml in the folder of {node_id}: children live flat in "
                                         "the folder of their top-level node"))
        for i, f in enumerate(getattr(spec, "out", [])):
            self._type(doc, ("out", i, "type"), f.type, who)
        if isinstance(spec, specs.LoopNode):
            for child, bindings in spec.init.items():
                if child not in spec.body:
                    self.out.append(doc.diag("E_NODE_UNKNOWN", ("init", child),
                                             f"{who}: init names {child}, which is not in the body of the loop",
                                             f"name a node of the body ({', '.join(spec.body)})"))
                self._bindings_refs(doc, bindings, scope, who, ("init", child))
                target = self.view.nodes.get(child)
                slots = self.input_slots(child, target) if target is not None and child in spec.body else None
                if slots is not None:
                    self._typed_bindings(doc, bindings, scope, *slots, f"{who}: init {child}", ("init", child))
            after = scope.with_(specials={"iter", "loop"}, siblings=spec.body)
            for i, p in enumerate(spec.stop):
                self._policy(node, ("stop", i), p, "stop", after, who)
            self._policy(node, ("select",), spec.select, "select", after, who)
            self._out_refs(doc, spec.out, after, who)
            for j, child in enumerate(spec.body):
                inner = scope.with_(nodes=spec.body[:j], specials={"acc"}, siblings=spec.body)
                self._child(child, inner)
        elif isinstance(spec, specs.ParallelNode):
            self._policy(node, ("join",), spec.join, "join", scope, who, branches=len(spec.body))
            outs = {key: self.node_shape(child) for key, child in spec.body.items()}
            ok = Seq(shapes.common(list(outs.values()), f"the output of a branch of node {node_id}")
                     if spec.join.use is not None else None)
            after = scope.with_(specials={"ok", "branch"}, branches=list(spec.body),
                                shapes={"ok": ok, **{f"branch.{k}": v for k, v in outs.items()}})
            self._out_refs(doc, spec.out, after, who)
            for child in names:
                self._child(child, scope)
        elif isinstance(spec, specs.MapNode):
            self._ref(doc, ("over",), spec.over, scope, f"{who}: over")
            over = self.ref_shape(spec.over, scope)
            if shapes.kind(self.registry, over) not in (None, "list"):
                self.out.append(doc.diag("E_MAP_OVER_NOT_LIST", ("over",),
                                         f"{who}: over {spec.over} is {describe(over)}, not a list",
                                         "map over a list: a field typed <Type>[]"))
            self._policy(node, ("on_item_error",), spec.on_item_error, "on_item_error", scope, who)
            body = self.node_shape(spec.body) if spec.on_item_error.use is not None else None
            self._out_refs(doc, spec.out, scope.with_(specials={"ok", "failed"},
                                                      shapes={"ok": Seq(body), "failed": Seq("MapItemError")}), who)
            item = over.item if isinstance(over, Seq) else None
            self._child(spec.body, scope.with_(specials={"item", "index"}, shapes={"item": item, "index": "Int"}))
        elif isinstance(spec, specs.SwitchNode):
            self._ref(doc, ("on",), spec.on, scope, f"{who}: on")
            on = self.ref_shape(spec.on, scope)
            self._coverage(doc, spec, on, who)
            out = {f.name: f.type for f in spec.out}
            for value, case in spec.cases.items():
                inner = scope.with_(specials={"case"}, shapes={"case": on})
                bind_scope = inner.with_(nodes=[case.node] if case.node else [])
                where = ("cases", value, "bind")
                self._bindings_refs(doc, case.bind, bind_scope, f"{who}: case {value}", where)
                self._case_covers(doc, value, case, spec.out, who)
                self._typed_bindings(doc, case.bind, bind_scope, out, "the switch", f"{who}: case {value}", where,
                                     "out")
                if case.node:
                    self._child(case.node, inner)

    def _case_covers(self, doc, value: str, case: specs.SwitchCase, out: list, who: str) -> None:
        """A case's bind is the switch's output: it names out fields and binds every required one."""
        names = [f.name for f in out]
        bound = [b.name for b in case.bind]
        for i, name in enumerate(bound):
            if name not in names:
                self.out.append(doc.diag("E_BINDING_UNKNOWN", ("cases", value, "bind", i, "name"),
                                         f"{who}: case {value} binds {name}, which is not an out field of the switch",
                                         f"bind the out fields of the switch: {', '.join(names)}"))
        missing = [f.name for f in out if f.name not in bound and not f.type.endswith("?")]
        if missing:
            self.out.append(doc.diag("E_BINDING_MISSING", ("cases", value, "bind") if case.bind else ("cases", value),
                                     f"{who}: case {value} binds no value for out field {', '.join(missing)} of the "
                                     "switch",
                                     f"add {{name: {missing[0]}, from: \"$...\"}} under cases.{value}.bind: every "
                                     "case gives every out field"))

    def _coverage(self, doc, spec: specs.SwitchNode, on: Shape, who: str) -> None:
        """A switch on an enum, a union or a Bool has a case (or a default) for every value it can take,
        and no case that no value reaches."""
        keys = shapes.switch_keys(self.registry, on)
        if keys is None:
            return
        missing = [k for k in keys if k not in spec.cases]
        if missing and "default" not in spec.cases:
            self.out.append(doc.diag("E_SWITCH_NOT_EXHAUSTIVE", ("cases",),
                                     f"{who}: on {spec.on} is {describe(on)}, but no case takes {', '.join(missing)}, "
                                     "and there is no default case",
                                     f"add a case for {', '.join(missing)}, or a default case"))
        for key in spec.cases:
            if key not in keys and key != "default":
                self.out.append(doc.diag("E_SWITCH_NOT_EXHAUSTIVE", ("cases", key),
                                         f"{who}: case {key} is not a value of {describe(on)} ({', '.join(keys)}), so no "
                                         "value reaches it",
                                         f"name a case by a value of {describe(on)}, or call it default"))

    def _child(self, child: str, scope: Scope) -> None:
        node = self.view.nodes.get(child)
        if node is not None:
            self._node(child, node, scope)

    def _out_refs(self, doc, out, scope: Scope, who: str) -> None:
        for i, f in enumerate(out):
            self._ref(doc, ("out", i, "from"), f.from_, scope, f"{who}: out {f.name}")
            self._fit(doc, ("out", i, "from"), f.from_, scope, f.type, who, f"out {f.name}", f"out {f.name}")

    def _policy(self, node: Node, path: tuple, policy: specs.PolicyRef, role: str, scope: Scope, who: str,
                branches: int | None = None) -> None:
        """The policy exists, its `with:` parameters fit the model the engine validates them with, and the
        number a built-in compares is a number."""
        doc, builtins = node.doc, policies.BUILTINS[role]
        if policy.use is not None and policy.use not in builtins:
            self.out.append(doc.diag("E_POLICY_UNKNOWN", path + ("use",),
                                     f"{who}: {role} policy {policy.use} is not a built-in policy",
                                     f"use one of {', '.join(builtins)}, or run: \"<module>:<function>\""))
        fn = None
        if policy.run is not None:
            fn = self._code_ref(doc, path + ("run",), policy.run, node.py_path, f"{who}: {role} policy")
        for key, value in policy.with_.items():
            if isinstance(value, str) and value.startswith("$"):
                self._ref(doc, path + ("with", key), value, scope, f"{who}: {role} policy")
        if policy.use not in builtins and fn is None:
            return
        try:
            policies.load(role, policy, lambda _: cast(Callable, fn))   # only a run policy's, and then fn is set
        except policies.PolicyError as exc:
            model = builtins[policy.use][1] if policy.use in builtins else None
            where = exc.loc[:1] if exc.loc and exc.loc[0] in policy.with_ else ()
            if model is None:
                hint = f"write {policy.run} as (state, params): its last parameter takes the with: values"
            elif model.model_fields:
                hint = f"the parameters of {role} policy {policy.use}: {', '.join(model.model_fields)}"
            else:
                hint = f"{role} policy {policy.use} takes no parameters: remove with"
            self.out.append(doc.diag("E_POLICY_PARAMS", path + ("with",) + where, f"{who}: {exc}", hint))
            return
        except Exception:            # hints that do not resolve: the engine reads them the same way at run time
            return
        value = policy.with_.get("path")
        if policy.use in PATH_POLICIES and isinstance(value, str):
            read = self.ref_shape(value, scope)
            if shapes.numeric(self.registry, read) is False:
                self.out.append(doc.diag("E_POLICY_PARAMS", path + ("with", "path"),
                                         f"{who}: {role} policy use: {policy.use}: path {value} is {describe(read)}, "
                                         "not a number",
                                         "point path at a number the policy can compare, such as a score field"))
        minimum = policy.with_.get("min_ok")
        if policy.use == "quorum" and branches is not None and isinstance(minimum, int) and minimum > branches:
            self.out.append(doc.diag("E_POLICY_PARAMS", path + ("with", "min_ok"),
                                     f"{who}: join policy use: quorum: min_ok is {minimum}, but the node has "
                                     f"{branches} branches, so the join always fails",
                                     f"set min_ok to at most {branches}"))

    # --- types ------------------------------------------------------------------------------
    @property
    def registry(self):
        return self.ctx.types.registry

    def node_shape(self, node_id: str) -> Shape:
        """What `$<node>.out` reads: the called flow's output type, the form of a human node, the type of
        a narrow node, else the record of the node's out fields."""
        if node_id not in self._shapes:
            node = self.view.nodes.get(node_id)
            self._shapes[node_id] = self._node_shape(node_id, node) if node is not None else None
        return self._shapes[node_id]

    def _node_shape(self, node_id: str, node: Node) -> Shape:
        spec = node.spec
        if isinstance(spec, specs.CallNode):
            called = self.view.find_flow(self.view.called(node_id, node))
            return shapes.of(self.registry, called.spec.output) if called else None
        if isinstance(spec, specs.HumanNode):
            return shapes.of(self.registry, spec.form)
        if isinstance(spec, specs.NarrowNode):
            return shapes.of(self.registry, spec.to)
        outs = node_outputs(self.ctx, self.view, node_id, node)
        if outs is None:
            return None
        return shapes.record(f"the output of node {node_id}", self.registry,
                             [specs.FieldDecl(name=n, type=t) for n, t in outs.items()])

    def ref_shape(self, text: str, scope: Scope) -> Shape:
        """The shape of what a reference reads here; None where it cannot be known (or does not resolve,
        which the reference rules report)."""
        parsed = parse_steps(text)
        if isinstance(parsed, str):
            return None
        root, steps = parsed
        reg = self.registry
        if root == "input":
            return shapes.at(reg, shapes.of(reg, self.flow.spec.input), steps)
        if root == "run":
            return CONTEXT_TYPES.get(steps[1]) if len(steps) == 2 and steps[0] == "context" else None
        if root in ("acc", "iter"):
            if root not in scope.specials or len(steps) < 2 or steps[0] not in scope.siblings or steps[1] != "out":
                return None
            return shapes.at(reg, self.node_shape(steps[0]), steps[2:])
        if root == "loop":
            return {("iterations",): "Int", ("stop_reason",): "Text"}.get(steps) if root in scope.specials else None
        if root == "branch":
            known = root in scope.specials and steps and isinstance(steps[0], str)
            return shapes.at(reg, scope.shape(f"branch.{steps[0]}"), steps[1:]) if known else None
        if root in SPECIAL:
            return shapes.at(reg, scope.shape(root), steps) if root in scope.specials else None
        if root in ("in", "out") or steps[:1] != ("out",) or root not in scope.nodes:
            return None
        return shapes.at(reg, self.node_shape(root), steps[1:])

    def input_slots(self, node_id: str, node: Node) -> tuple[dict[str, str], str] | None:
        """The declared types of a node's inputs, and who declares them."""
        spec = node.spec
        if isinstance(spec, specs.LlmNode):
            stem = spec.inference or node.id
            return ({f.name: f.type for f in node.inference.in_}, f"inference {stem}") if node.inference else None
        if isinstance(spec, specs.ToolNode):
            tool = self.ctx.project.tools.get(spec.tool)
            return ({f.name: f.type for f in tool.spec.in_}, f"tool {spec.tool}") if tool and tool.spec.run else None
        if isinstance(spec, specs.CallNode):
            called = self.view.find_flow(self.view.called(node_id, node))
            if called is None:
                return None
            fields = self.ctx.types.fields(called.spec.input)
            return (fields, f"the input {called.spec.input} of flow {called.id}") if fields is not None else None
        if isinstance(spec, (specs.CodeNode, specs.HumanNode)):
            return {f.name: f.type for f in spec.in_ if f.type}, f"node {node_id}"
        return None

    def _typed_bindings(self, doc, bindings, scope: Scope, slots: dict[str, str], owner: str, who: str,
                        key: tuple, word: str = "input") -> None:
        for i, b in enumerate(bindings):
            if b.name in slots:
                self._bound(doc, key + (i,), b, scope, slots[b.name], who, f"{word} {b.name}",
                            f"{b.name} of {owner}")

    def _bound(self, doc, path: tuple, binding, scope: Scope, target: str, who: str, what: str, owner: str) -> None:
        """One binding (`from` or `value`) against the type declared for it."""
        if binding.from_ is not None:
            self._fit(doc, path + ("from",), binding.from_, scope, target, who, what, owner)
        elif binding.value is not None:
            problem = self._value_problem(target, binding.value)
            if problem:
                self.out.append(doc.diag("E_BINDING_TYPE", path + ("value",),
                                         f"{who}: {what}: the value {_short(binding.value)} does not fit {target} "
                                         f"({owner}): {problem}", f"give a value of type {target}"))

    def _fit(self, doc, path: tuple, text: str, scope: Scope, target: str, who: str, what: str, owner: str) -> None:
        """E_BINDING_TYPE when the value a reference reads can never be a value of the declared type."""
        source = self.ref_shape(text, scope)
        problem = shapes.mismatch(self.registry, source, shapes.of(self.registry, target))
        if problem:
            self.out.append(doc.diag("E_BINDING_TYPE", path,
                                     f"{who}: {what}: {text} is {describe(source)}, which does not fit {target} "
                                     f"({owner}): {problem}",
                                     f"bind a value of type {target}, or declare the type of the value it reads"))

    # --- one reference ----------------------------------------------------------------------
    def _ref(self, doc, path: tuple, text: str, scope: Scope, who: str) -> None:
        problem = self._ref_problem(text, scope)
        if problem is not None:
            code, message, hint = problem
            self.out.append(doc.diag(code, path, f"{who}: {text}: {message}", hint))

    def _ref_problem(self, text: str, scope: Scope) -> tuple[str, str, str] | None:
        parsed = parse_steps(text)
        if isinstance(parsed, str):
            return "E_REF_INVALID", parsed, REF_FORMS
        root, steps = parsed
        flow = self.flow
        if root == "input":
            return self._walk(self.ctx.types.fields(flow.spec.input), flow.spec.input and f"input {flow.spec.input}", steps)
        if root == "run":
            if len(steps) < 2 or steps[0] != "context" or steps[1] not in CONTEXT_KEYS:
                return "E_REF_INVALID", "the run context reads $run.context.<key>", f"keys: {', '.join(CONTEXT_KEYS)}"
            if steps[1] not in flow.spec.context:
                return ("E_REF_UNRESOLVED", f"flow {flow.id} does not list {steps[1]} under context",
                        f"add {steps[1]} to context: of flow {flow.id}")
            return None
        if root in ("in", "out"):
            return "E_REF_INVALID", f"${root} is read by checks of an inference, not by flow nodes", REF_FORMS
        if root in SPECIAL:
            if root not in scope.specials:
                return "E_REF_UNRESOLVED", f"${root} has no value here", f"${root} is read {SPECIAL[root]}"
            if root in ("acc", "iter"):
                if len(steps) < 2 or steps[0] not in scope.siblings or steps[1] != "out":
                    return ("E_REF_INVALID", f"${root} reads ${root}.<body node>.out",
                            f"name a node of the loop body: {', '.join(scope.siblings)}")
                sib = self.view.nodes.get(steps[0])
                return self._walk(node_outputs(self.ctx, self.view, steps[0], sib) if sib else None,
                                  f"node {steps[0]}", steps[2:])
            if root == "branch" and (not steps or steps[0] not in scope.branches):
                return "E_REF_INVALID", "$branch reads $branch.<key>", f"keys of the body: {', '.join(scope.branches)}"
            if root == "loop" and (not steps or steps[0] not in ("iterations", "stop_reason")):
                return "E_REF_INVALID", "$loop reads $loop.iterations or $loop.stop_reason", REF_FORMS
            return None
        if not steps or steps[0] != "out":
            return "E_REF_INVALID", f"a node reference reads ${root}.out", REF_FORMS
        if root not in scope.nodes and root not in self.view.nodes and self.view.unreadable(root):
            return None
        if root not in scope.nodes:
            readable = ", ".join(scope.nodes) or "no node yet"
            if root in self.view.nodes:
                why = f"node {root} has not run before this point"
            else:
                why = f"{root} is not a node of flow {flow.id}"
            return "E_REF_UNRESOLVED", why, f"read $input or a node that ran before ({readable})"
        node = self.view.nodes.get(root)
        if node is None:          # a container names a child with no file: reported at the container
            return None
        return self._walk(node_outputs(self.ctx, self.view, root, node), f"node {root}", steps[1:])

    def _walk(self, fields: dict[str, str] | None, owner: str | None, steps: tuple) -> tuple[str, str, str] | None:
        if fields is None or not steps:
            return None
        first = steps[0]
        if not isinstance(first, str):
            return "E_REF_FIELD_UNKNOWN", f"{owner} is a record: read a field first", f"fields: {', '.join(fields)}"
        if first not in fields:
            return ("E_REF_FIELD_UNKNOWN", f"{owner} has no field {first}",
                    f"name one of its fields: {', '.join(fields) or 'none'}")
        problem = self.ctx.types.walk(fields[first], steps[1:])
        if problem is None:
            return None
        message, names = problem
        return "E_REF_FIELD_UNKNOWN", message, (f"name one of its fields: {', '.join(names)}" if names
                                                else "fix the path of the reference")


def judge_rules(ctx: CheckContext, doc, path: tuple, stem: str, who: str, levels: list[Path] | None = None
                ) -> list[Diagnostic]:
    """A judge (an inference with an agent, scoring an answer): its output has a numeric score, the number
    the check reads, and its prompt passes the prompt rules (project-level diagnostics: the prompt's file
    is the judge's, whoever uses it). Nothing when the inference does not load (its own rule says why)."""
    from ..project.loader import inference_path, load_inference

    inference, inf_doc = load_inference(ctx.project, stem, [], levels)
    if inference is None or inf_doc is None:     # read from its file: both or neither
        return []
    out = []
    score = next((f for f in inference.out if f.name == "score"), None)
    registry = ctx.types.registry
    if score is None:
        problem = f"its output has no field score ({', '.join(f.name for f in inference.out)})"
    elif shapes.numeric(registry, shapes.of(registry, score.type)) is False:
        problem = f"its output field score is {score.type}, not a number"
    else:
        problem = None
    if problem:
        out.append(doc.diag("E_JUDGE_SCORE", path, f"{who}: judge {stem}: {problem}, so every attempt it scores "
                            "is an error",
                            "give the judge's inference an output field score of a number type (Int for an ordinal "
                            "scale, Float or a value type such as Score for a continuous one; a binary check passes "
                            "at 0.5 or more)"))
    found = inference_path(ctx.project, stem, levels)
    prompt = found.parent / f"{stem}.prompt.md" if found is not None else None
    if prompt is not None and prompt.is_file() and inference.prompt is None:
        ctx.shared += prompt_rules(ctx, prompt, inference, stem, inf_doc.file)   # every user of the judge sees them
        read = inputs_read(ctx.project.root, prompt, inference, stem)
        unread = [f.name for f in inference.in_ if read is not None and f.name not in read
                  and not engine_prompts.media_kind(f.type)]       # media reach the model as parts of the message
        if unread:
            them = "them" if len(unread) > 1 else "it"
            out.append(doc.diag("W_JUDGE_INPUT_UNREAD", path,
                                f"{who}: judge {stem}: its prompt {ctx.project.rel(prompt)} never reads input"
                                f"{'s' if len(unread) > 1 else ''} {', '.join(unread)}, so the judge never sees {them}",
                                f"show {them} in the prompt ({{{{ {unread[0]} }}}}) or remove {them} from the "
                                "inference: a judge that never sees the answer it grades spends its calibration for "
                                "nothing"))
    return out


PLAIN_RETURNS: dict[type, Shape] = {str: "Text", int: "Int", float: "Float", bool: "Bool", list: Seq(None)}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compile_flow(ctx: CheckContext, view: FlowView) -> list[Diagnostic]:
    return FlowCompiler(ctx, view).run()
