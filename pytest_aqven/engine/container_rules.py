"""The rules of container nodes (loop, parallel, map, switch): their children, the scopes their children and
out fields read, their policies and a switch's coverage."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, cast

from ..project import shapes, specs
from ..project.model import Node
from ..project.shapes import Seq, Shape, describe
from . import policies
from .ref_rules import ReferenceRules, Scope

if TYPE_CHECKING:
    from ..project.yamlpos import YamlDoc

PATH_POLICIES = ("threshold", "stagnation", "best")     # built-in policies that compare the number at `path`


class ContainerRules(ReferenceRules):
    """A container's children (checked as nodes: NodeRules._node), the scopes they read, its policies."""

    def _node(self, node_id: str, node: Node, scope: Scope) -> None:
        raise NotImplementedError       # NodeRules: a child is checked like any node

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

    def _case_covers(self, doc: YamlDoc, value: str, case: specs.SwitchCase, out: list, who: str) -> None:
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

    def _coverage(self, doc: YamlDoc, spec: specs.SwitchNode, on: Shape, who: str) -> None:
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

    def _out_refs(self, doc: YamlDoc, out: Any, scope: Scope, who: str) -> None:
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
