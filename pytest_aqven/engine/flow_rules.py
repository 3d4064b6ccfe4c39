"""The flow compiler of `aqven check`: every node, reference, type and code reference of a flow.

It works on a FlowView, the flow as one variant sees it (alternative nodes in their slots, other
agents, prompts or called flows), so an experiment's variants are checked by the same rules.

The compiler is cut by concern: references and types (ref_rules.py), nodes (node_rules.py), containers
(container_rules.py), the keys of inference files (inference_rules.py); this module holds the flow level."""
from __future__ import annotations

from ..check.context import CheckContext
from ..diagnostics import Diagnostic
from .flow_view import FlowView
from .node_rules import NodeRules
from .ref_rules import Scope


class FlowCompiler(NodeRules):
    """A flow's order, types and returns; its top-level nodes in order, each in the scope of those before it."""

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


def compile_flow(ctx: CheckContext, view: FlowView) -> list[Diagnostic]:
    return FlowCompiler(ctx, view).run()
