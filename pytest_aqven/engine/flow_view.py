"""The flow as one variant sees it (alternative nodes in their slots, other agents, prompts or called flows):
what the flow compiler of `aqven check` and the experiment rules read, so an experiment's variants are checked
by the same rules as its flows."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection

from ..check.context import CheckContext
from ..project import specs
from ..project.model import Flow, Node


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
