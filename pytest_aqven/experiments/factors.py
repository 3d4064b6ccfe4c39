"""The use factor as the seeds define it, shared by `aqven check` and the runner.

A use alternative takes the slot's id; its own child nodes are looked up among the alternatives of the
experiment first, then in the subject; subject nodes nothing reaches any more are dropped."""
from __future__ import annotations

from ..project.model import Node
from ..project.specs import children


def use_nodes(subject: dict[str, Node], order: list[str], slots: dict[str, Node],
              alternatives: dict[str, Node]) -> tuple[dict[str, Node], set[str]]:
    """(every node of the variant by id, the ids whose node comes from the experiment's nodes/)."""
    nodes = dict(subject)
    replaced: set[str] = set()
    for slot, alternative in slots.items():
        nodes[slot] = alternative
        replaced.add(slot)
        _adopt(nodes, replaced, alternative, alternatives, set())
    reach = reachable(nodes, order)
    return {k: n for k, n in nodes.items() if k in reach}, replaced & reach


def _adopt(nodes: dict[str, Node], replaced: set[str], node: Node, alternatives: dict[str, Node],
           seen: set[str]) -> None:
    for _, child in children(node.spec):
        if child in seen:
            continue
        seen.add(child)
        if child in alternatives:
            nodes[child] = alternatives[child]
            replaced.add(child)
            _adopt(nodes, replaced, nodes[child], alternatives, seen)


def reachable(nodes: dict[str, Node], order: list[str]) -> set[str]:
    """The top-level nodes and every existing node they run inside them."""
    out: set[str] = set()
    todo = list(order)
    while todo:
        node_id = todo.pop()
        node = nodes.get(node_id)
        if node_id in out or node is None:      # names without a node are reported where they are named
            continue
        out.add(node_id)
        todo += [c for _, c in children(node.spec)]
    return out
