"""The variant rules: the factor, each variant's values, what no variant uses, each variant assembled."""
from __future__ import annotations

from pathlib import Path

from ..diagnostics import Diagnostic
from ..engine.flow_rules import FlowView, compile_flow
from ..project.model import Flow
from .factors import use_nodes
from .rule_scope import RuleFamily, listing, location

WANTED_KIND = {"agent": "llm", "prompt": "llm", "flow": "call"}


class VariantRules(RuleFamily):
    """The factor names nodes of the subject, each variant sets values of it that exist and fit."""
    steps = ("factor_rules", "variant_rules", "unused_rules")

    def factor_rules(self) -> None:
        varies, e = self.spec.varies, self.e
        if varies is None:
            for i, v in enumerate(self.spec.variants):
                if v.nodes:
                    self.diag("E_FACTOR_MISSING", ("variants", i, "nodes"),
                              f"{e}: variant {v.id} sets {', '.join(v.nodes)}, but the experiment declares no varies",
                              "declare varies with what (agent, prompt, use or flow) and the nodes it changes; each "
                              "variant sets values of that factor under nodes")
            return
        if self.view is None:
            return
        inside = self.in_subject(self.view)
        s = self.spec.subject
        wanted = WANTED_KIND.get(varies.what)
        for j, node_id in enumerate(varies.nodes):
            node = self.view.nodes.get(node_id)
            if node is None and self.view.unreadable(node_id):
                continue                 # its file exists but did not load: its own diagnostic says why
            if node is None or node_id not in inside:
                if node is None or s.from_ is None:
                    problem, fix = f"which is not a node of flow {s.flow}", f"name nodes of {s.flow} ({listing(sorted(inside))})"
                else:
                    problem = f"which lies outside the range {s.from_}..{s.to} of flow {s.flow}"
                    fix = f"name nodes inside the range ({listing(sorted(inside))}) or widen from and to"
                self.diag("E_FACTOR_NODE_UNKNOWN", ("varies", "nodes", j), f"{e}: varies.nodes names {node_id}, {problem}", fix)
            elif wanted is not None and node.kind != wanted:
                candidates = sorted(n for n in inside if self.view.nodes[n].kind == wanted)
                self.diag("E_FACTOR_KIND", ("varies", "nodes", j),
                          f"{e}: varies.what {varies.what} changes {wanted} nodes, but {node_id} is a {node.kind} node",
                          f"name {wanted} nodes of {s.flow} ({listing(candidates)}) or pick another varies.what")

    def variant_rules(self) -> None:
        spec, e = self.spec, self.e
        ids = [v.id for v in spec.variants]
        for i, v in enumerate(spec.variants):
            if v.id in ids[:i]:
                self.diag("E_ID_DUPLICATE", ("variants", i, "id"), f"{e}: variant id {v.id} is used twice",
                          "give every variant its own id")
        if spec.varies is None:
            return
        declared = spec.varies.nodes
        for i, v in enumerate(spec.variants):
            for slot, value in v.nodes.items():
                path = ("variants", i, "nodes", slot)
                if slot not in declared:
                    self.diag("E_VARIANT_OUTSIDE_FACTOR", path,
                              f"{e}: variant {v.id} sets {slot}, which is not in varies.nodes ({', '.join(declared)})",
                              f"add {slot} to varies.nodes or remove it from the variant: the variants of an experiment "
                              "change one factor on the nodes it declares")
                    continue
                self.factor_ok[(i, slot)] = self.value_rules(spec.varies.what, v.id, path, slot, value)
        self.duplicates()

    def value_rules(self, what: str, variant: str, path: tuple, slot: str, value: str) -> bool:
        """The value a variant puts in a slot of the factor `what` exists and fits; True when the variant can be
        assembled."""
        e, exp_id = self.e, self.exp.id
        if what == "agent" and value not in self.project.agents and self.ctx.unreadable("agent", value):
            return False
        if what == "agent" and value not in self.project.agents:
            self.diag("E_AGENT_UNKNOWN", path, f"{e}: variant {variant} puts agent {value} at {slot}, which does not exist in the project",
                      f"name an agent of agents/ ({listing(sorted(self.project.agents))})")
            return False
        if what == "prompt" and value not in self.exp.prompts:
            self.diag("E_PROMPT_MISSING", path,
                      f"{e}: variant {variant} puts prompt {value} at {slot}, but experiments/{exp_id}/prompts has no "
                      f"file {value}.md; its prompts: {listing(sorted(self.exp.prompts))}",
                      f"create experiments/{exp_id}/prompts/{value}.md or name an existing prompt")
            return False
        if what == "use" and value not in self.exp.alternatives and value in self.exp.unreadable["alternative"]:
            return False
        if what == "use" and value not in self.exp.alternatives:
            folder = f"experiments/{exp_id}/nodes"
            self.diag("E_ALTERNATIVE_UNKNOWN", path,
                      f"{e}: variant {variant} puts alternative {value} at {slot}, but {folder} has no such node; "
                      f"its alternatives: {listing(sorted(self.top_alternatives()))}",
                      f"create {folder}/{value}.node.yaml or name an existing alternative")
            return False
        if what == "flow":
            flow = self.find_flow(value)
            if flow is None and value in self.broken_flows:
                return False
            if flow is None:
                self.diag("E_FLOW_UNKNOWN", path,
                          f"{e}: variant {variant}: flow {value} is neither a flow of experiments/{exp_id}/flows nor a flow of the project",
                          f"name a flow of the project ({listing(sorted(self.project.flows))}) or add "
                          f"experiments/{exp_id}/flows/{value}/flow.yaml")
                return False
            node = self.view.nodes.get(slot) if self.view else None
            original = self.find_flow(node.spec.flow) if node is not None and node.kind == "call" else None
            if original is not None:
                for side in ("input", "output"):
                    own, expected = getattr(flow.spec, side), getattr(original.spec, side)
                    if own != expected:
                        self.diag("E_FACTOR_FLOW_CONTRACT", path,
                                  f"{e}: variant {variant} calls flow {value} at {slot}, whose {side} {own} differs "
                                  f"from {side} {expected} of flow {original.id}",
                                  f"give flow {value} the {side} type of flow {original.id}: every variant runs the same "
                                  "cases and checks")
                        return False
        return True

    def top_alternatives(self) -> list[str]:
        """Alternatives that are their folder's node (nodes/<alt>/<alt>.node.yaml), not children of one."""
        return [a for a, node in self.exp.alternatives.items() if node.path.parent.name == a]

    def duplicates(self) -> None:
        variants = self.spec.variants
        values = [tuple(sorted(v.nodes.items())) for v in variants]
        if len(set(values)) <= 1:
            return                   # an A/A experiment: every variant runs the same thing on purpose
        first: dict[tuple, str] = {}
        for i, v in enumerate(variants):
            if values[i] in first:
                self.diag("W_VARIANT_DUPLICATE", ("variants", i, "id"),
                          f"{self.e}: variant {v.id} sets the same values as variant {first[values[i]]}",
                          "change the values of one of them or remove it; to measure noise on purpose, leave every "
                          "variant as written")
            first.setdefault(values[i], v.id)

    def unused_rules(self) -> None:
        if self.subject is None:
            return
        what = self.spec.varies.what if self.spec.varies else None
        used = {value for v in self.spec.variants for value in v.nodes.values()}
        for alt in sorted(self.exp.alternatives):
            node = self.exp.alternatives[alt]
            if node.path.parent.name == alt and not (what == "use" and alt in used):
                self.unused(f"alternative {alt}", node.path)
        for name, path in sorted(self.exp.prompts.items()):
            if not (what == "prompt" and name in used):
                self.unused(f"prompt {name}", path)
        reached = self.called_flows(self.subject)
        if what == "flow":
            for value in used:
                flow = self.find_flow(value)
                if flow is not None:
                    reached |= self.called_flows(flow)
        for flow_id, flow in sorted(self.exp.flows.items()):
            if flow_id not in reached:
                self.unused(f"local flow {flow_id}", flow.folder)
        for alt, node in sorted(self.exp.alternatives.items()):
            if alt in self.subject.nodes:
                self.out.append(node.doc.diag("E_ALTERNATIVE_ID_TAKEN", (),
                                              f"{self.e}: alternative {alt} has the id of a node of {self.subject.id}",
                                              "rename the alternative file: an alternative runs under the id of its "
                                              "slot, and its own id must not shadow a node of the subject"))

    def called_flows(self, flow: Flow, seen: set[str] | None = None) -> set[str]:
        """The flow and every flow its call nodes reach."""
        seen = set() if seen is None else seen
        if flow.id in seen:
            return seen
        seen.add(flow.id)
        for node in flow.nodes.values():
            if node.kind == "call":
                target = self.find_flow(node.spec.flow)
                if target is not None:
                    self.called_flows(target, seen)
        return seen

    def unused(self, entity: str, path: Path) -> None:
        self.diag("W_ALTERNATIVE_UNUSED", ("variants",), f"{self.e}: {entity} is used by no variant",
                  f"name it in variants[].nodes or delete {self.project.rel(path)}")


class AssemblyRules(RuleFamily):
    """Every variant compiled like a flow."""
    steps = ("assembly_rules",)

    def assembly_rules(self) -> None:
        """Each variant compiled as a flow; a problem only the variants have is reported once, at the slot of
        the first variant that meets it, naming the other variants that meet it too."""
        if self.view is None or self.spec.varies is None:
            return
        base = compile_flow(self.ctx, self.view)
        seen = {_key(d) for d in base}
        found: dict[tuple, tuple[Diagnostic, list[tuple[int, str]]]] = {}     # problem -> (it, [(variant, slot)])
        for i, v in enumerate(self.spec.variants):
            slots: list[tuple[str, str]] = []
            known = set(seen)
            for slot, value in v.nodes.items():
                if not self.factor_ok.get((i, slot)):
                    continue
                slots.append((slot, value))
                for d in compile_flow(self.ctx, self.assemble(self.view, self.spec.varies.what, slots)):
                    if _key(d) not in known:
                        known.add(_key(d))
                        found.setdefault(_key(d), (d, []))[1].append((i, slot))
        for d, where in found.values():
            (i, slot), others = where[0], [self.spec.variants[j].id for j, _ in where[1:]]
            also = f" (and variant{'s' if len(others) > 1 else ''} {', '.join(others)})" if others else ""
            line, col = self.doc.pos(("variants", i, "nodes", slot))
            self.out.append(Diagnostic(d.code, self.doc.file, ("variants", i, "nodes", slot),
                                       f"variant {self.spec.variants[i].id}: {location(d)}: {d.message}{also}",
                                       line, col, d.hint))

    def assemble(self, subject: FlowView, what: str, slots: list[tuple[str, str]]) -> FlowView:
        """The subject as a variant runs it (the seed's four factors)."""
        view = FlowView(subject.flow, dict(subject.nodes), self.find_flow, broken_flows=self.broken_flows)
        for slot, value in slots:
            if what == "agent":
                view.agents[slot] = value
            elif what == "prompt":
                view.prompts[slot] = self.exp.prompts[value]
            elif what == "flow":
                view.calls[slot] = value
        if what == "use":     # the runner assembles the same nodes (one implementation)
            view.nodes, view.replaced = use_nodes(view.nodes, view.order,
                                                  {slot: self.exp.alternatives[value] for slot, value in slots},
                                                  self.exp.alternatives)
        return view


def _key(d: Diagnostic) -> tuple:
    return d.code, d.file, d.path, d.message

