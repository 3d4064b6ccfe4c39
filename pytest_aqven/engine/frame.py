"""What a node kind runs with: the flow's Assembly, the Frame a node runs in, and NodeRunner, the face of the
Runner the node kinds call. The kinds (containers, llm, tools) run their children through it, so they never
import the runner that dispatches to them."""
from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from ..project.model import Flow, Node, Project
from ..providers.base import AttemptIdentity, Provider, ProviderError
from .sources import Sources
from .trace import Address


@dataclass
class Assembly:
    """A subject with one variant's values in its slots (the four factors of the seeds)."""
    flow: Flow
    agents: dict[str, str] = field(default_factory=dict)       # node -> agent id
    prompts: dict[str, Path] = field(default_factory=dict)     # node -> prompt text file
    nodes: dict[str, Node] = field(default_factory=dict)       # node -> alternative node (runs under the slot id)
    flows: dict[str, str] = field(default_factory=dict)        # call node -> the flow it calls instead
    start: str | None = None
    end: str | None = None

    def node(self, node_id: str) -> Node:
        return self.nodes.get(node_id) or self.flow.nodes[node_id]

    @property
    def order(self) -> list[str]:
        order = list(self.flow.spec.order)
        if self.start is None or self.end is None:     # a range sets both (the Subject's validator)
            return order
        return order[order.index(self.start): order.index(self.end) + 1]


@dataclass
class Frame:
    """Where a node runs: its flow (with the variant's slots), the values its references see, its address."""
    assembly: Assembly
    values: ChainMap                 # innermost container first, then top-level outputs, input, run.context
    address: Address
    depth: int = 0                   # call depth
    calls: tuple[str, ...] = ()      # flows being called (cycle guard)
    init: dict[str, dict[str, Any]] = field(default_factory=dict)   # loop init: child id -> input values

    def enter(self, node_id: str, **address: Any) -> "Frame":
        """The frame of a container's children: their outputs stay in the container's own scope."""
        return Frame(self.assembly, self.values.new_child(), self.address.at(node_id, **address), self.depth,
                     self.calls)

    def nested(self, node_id: str, flow: Flow, inputs: Any) -> "Frame":
        """The frame of a flow run under a node (a call, a subagent, a judge check of an inference): a scope of
        its own that sees only its input and the run's context, one call deeper."""
        top = {"input": inputs, "run.context": self.values.get("run.context", {})}
        return Frame(Assembly(flow), ChainMap(top), self.address.at(node_id), self.depth + 1,
                     (*self.calls, self.assembly.flow.id))


class NodeRunner(Protocol):
    """The Runner as the node kinds see it (engine/runner.py implements it)."""
    project: Project
    sources: Sources
    providers: Mapping[str, Provider | ProviderError]
    identity: AttemptIdentity
    answers: dict[str, Any]
    cache: dict[tuple, Any]        # models, code and compiled checks of the project, shared by its runs

    async def run_node(self, frame: Frame, node_id: str) -> Any: ...
    def bind(self, bindings: Any, frame: Frame, node_id: str) -> dict[str, Any]: ...
    def record(self, name: str, fields: Any) -> type[BaseModel]: ...
    def find_flow(self, flow_id: str, caller: Flow) -> Flow | None: ...
    def case_key(self, value: Any, cases: dict) -> str | None: ...
    def validate(self, model: Any, value: Any, code: str, what: str) -> Any: ...
    def returns(self, flow: Flow, values: Any) -> Any: ...
    def fit(self, model: Any, value: Any, code: str, who: str, what: str, fields: Any = None, *, fn: Any = None,
            doc: Any = None, at: tuple = (), entries: list[str] | None = None,
            expected: str | None = None) -> Any: ...
    def timeout(self, node: Node) -> float: ...
    async def call_user(self, fn: Callable[..., Any], kwargs: dict, node: Node, what: str,
                        code: str = "code_invalid", args: tuple = ()) -> Any: ...
    async def mcp(self, server_id: str, node: Node, node_id: str) -> Any: ...
    def http(self) -> Any: ...
    def blobs(self) -> Any: ...
    def resolve_code(self, ref: str, node: Node, what: str, here: Path | None = None) -> Any: ...
