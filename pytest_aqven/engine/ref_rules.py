"""The references of a flow ($input, $run.context, $<node>.out, the specials of containers), what each reads,
and whether it fits the type declared where it is bound."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..check.context import CheckContext
from ..project import shapes, specs
from ..project.model import Flow, Node
from ..project.shapes import Shape, describe
from . import refs
from .flow_view import FlowView, node_outputs
from .rule_base import RuleBase

if TYPE_CHECKING:
    from ..project.yamlpos import YamlDoc

CONTEXT_KEYS = ("date", "time_zone", "locale", "tenant_id")
CONTEXT_TYPES = {"date": "Date", "time_zone": "TimeZone", "locale": "Locale", "tenant_id": "TenantId"}
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


class ReferenceRules(RuleBase):
    """Reads the flow's view: what a reference may read at one place, and its shape."""

    def __init__(self, ctx: CheckContext, view: FlowView) -> None:
        super().__init__(ctx, [])
        self.view = view
        self._shapes: dict[str, Shape] = {}

    @property
    def flow(self) -> Flow:
        return self.view.flow

    def _bindings_refs(self, doc: YamlDoc, bindings: Sequence[specs.Binding], scope: Scope, who: str, key: tuple = ("in",)) -> None:
        for i, b in enumerate(bindings):
            if b.from_ is not None:
                self._ref(doc, key + (i, "from"), b.from_, scope, f"{who}: input {b.name}")

    def _cover(self, doc: YamlDoc, bindings: Sequence[specs.Binding], fields: dict[str, str] | None, target: str, who: str) -> None:
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

    def _typed_bindings(self, doc: YamlDoc, bindings: Sequence[specs.Binding], scope: Scope, slots: dict[str, str], owner: str, who: str,
                        key: tuple, word: str = "input") -> None:
        for i, b in enumerate(bindings):
            if b.name in slots:
                self._bound(doc, key + (i,), b, scope, slots[b.name], who, f"{word} {b.name}",
                            f"{b.name} of {owner}")

    def _bound(self, doc: YamlDoc, path: tuple, binding: specs.Binding, scope: Scope, target: str, who: str, what: str, owner: str) -> None:
        """One binding (`from` or `value`) against the type declared for it."""
        if binding.from_ is not None:
            self._fit(doc, path + ("from",), binding.from_, scope, target, who, what, owner)
        elif binding.value is not None:
            problem = self._value_problem(target, binding.value)
            if problem:
                self.out.append(doc.diag("E_BINDING_TYPE", path + ("value",),
                                         f"{who}: {what}: the value {_short(binding.value)} does not fit {target} "
                                         f"({owner}): {problem}", f"give a value of type {target}"))

    def _fit(self, doc: YamlDoc, path: tuple, text: str, scope: Scope, target: str, who: str, what: str, owner: str) -> None:
        """E_BINDING_TYPE when the value a reference reads can never be a value of the declared type."""
        source = self.ref_shape(text, scope)
        problem = shapes.mismatch(self.registry, source, shapes.of(self.registry, target))
        if problem:
            self.out.append(doc.diag("E_BINDING_TYPE", path,
                                     f"{who}: {what}: {text} is {describe(source)}, which does not fit {target} "
                                     f"({owner}): {problem}",
                                     f"bind a value of type {target}, or declare the type of the value it reads"))

    # --- one reference ----------------------------------------------------------------------
    def _ref(self, doc: YamlDoc, path: tuple, text: str, scope: Scope, who: str) -> None:
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


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
