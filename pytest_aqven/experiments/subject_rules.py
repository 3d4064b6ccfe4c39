"""The subject's rules: the experiment's own flows, files outside flows/ and nodes/, the subject's range."""
from __future__ import annotations

from ..diagnostics import Diagnostic
from ..engine.flow_rules import FlowView, compile_flow
from .rule_scope import RuleFamily, listing

SKIPPED_PARTS = ("__pycache__", "findings")


class SubjectRules(RuleFamily):
    """The subject flow exists, its range is a range of its order, the experiment's files are where they run."""
    steps = ("local_flows", "orphans", "subject_rules")

    def local_flows(self) -> None:
        for flow in self.exp.flows.values():
            if flow.id in self.project.flows:
                self.out.append(flow.doc.diag("E_ID_DUPLICATE", (), f"{self.e}: local flow {flow.id} has the id of a project flow",
                                              f"rename the folder experiments/{self.exp.id}/flows/{flow.id}: a local flow's "
                                              "id can't be the id of a project flow"))
            self.out += compile_flow(self.ctx, FlowView.of(flow, self.find_flow, self.broken_flows))

    def orphans(self) -> None:
        folder = self.exp.folder
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if not path.is_file() or any(p in SKIPPED_PARTS for p in rel.parts):
                continue
            parts = rel.parts
            is_flow = path.name in ("flow.yaml", "flow.yml", "flow.py")
            if is_flow and not (len(parts) == 3 and parts[0] == "flows"):
                what = "a flow"
            elif path.name.endswith(".node.yaml") and parts[0] not in ("nodes", "flows"):
                what = "a node"
            else:
                continue
            self.out.append(Diagnostic("E_ORPHAN_FILE", self.project.rel(path), (),
                                       f"{self.e}: {rel.as_posix()} is {what} outside flows/ and nodes/, so nothing runs it",
                                       None, None,
                                       f"move it to experiments/{self.exp.id}/flows/<flow_id>/ (a local flow) or "
                                       f"experiments/{self.exp.id}/nodes/<alt>/ (an alternative), or delete it if it "
                                       "is left from an older layout such as arms/"))

    def subject_rules(self) -> None:
        s = self.spec.subject
        if self.subject is None and s.flow in self.broken_flows:
            return
        if self.subject is None:
            self.diag("E_FLOW_UNKNOWN", ("subject", "flow"),
                      f"{self.e}: flow {s.flow} is neither a flow of experiments/{self.exp.id}/flows nor a flow of the project",
                      f"name a flow of the project ({listing(sorted(self.project.flows))}) or add "
                      f"experiments/{self.exp.id}/flows/{s.flow}/flow.yaml")
            return
        if s.from_ is None:
            return
        order = self.subject.spec.order
        for key, node in (("from", s.from_), ("to", s.to)):
            if node not in order:
                self.diag("E_RANGE_INVALID", ("subject", key), f"{self.e}: range node {node} is not a top-level node of {s.flow}",
                          f"set {key} to a node of the order ({', '.join(order)}); a nested node runs inside its container")
        if s.from_ in order and s.to in order and order.index(s.from_) > order.index(s.to):
            self.diag("E_RANGE_INVALID", ("subject", "from"),
                      f"{self.e}: range from {s.from_} comes after to {s.to} in the order of {s.flow}", "swap from and to")
