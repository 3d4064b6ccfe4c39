"""`<package>.types` without a generated file: a module whose names are built on first use from the
project's types registry, named as AQVEN's generator names them:

- every type of types/ (`CaseRequest`); a union's variants (`CaseRecordDefect`); an id type is a
  NewType (`OrderId`) with its constrained annotation as `OrderIdField`;
- `<Flow><Node>Out` / `<Flow><Node>In` of every code node (local flows of experiments too);
- `<Inference>Out` / `<Inference>In` of every inference, `<Tool>Out` / `<Tool>In` of every tool.

The runner validates with the very same (cached) classes, so user code and engine agree."""
from __future__ import annotations

import types as pytypes
from typing import TYPE_CHECKING, Any, Callable, NewType

from . import specs
from .types import pascal

if TYPE_CHECKING:
    from .loader import Project


def node_model_name(flow_id: str, node_id: str, side: str) -> str:
    return f"{pascal(flow_id)}{pascal(node_id)}{side}"


def _in_fields(fields: list[Any]) -> list[specs.FieldDecl]:
    """The typed inputs of a code node as declarations (an input without a type is left out)."""
    return [specs.FieldDecl.model_validate({**f.model_dump(by_alias=True, exclude={"from_", "value"},
                                                           exclude_none=True), "name": f.name})
            for f in fields if getattr(f, "type", None)]


def generated_names(project: "Project") -> dict[str, Callable[[], Any]]:
    registry = project.types
    names: dict[str, Callable[[], Any]] = {}

    def add(name: str, build: Callable[[], Any]) -> None:
        names.setdefault(name, build)

    for type_id in registry.unreadable:
        add(type_id, lambda: Any)                  # its own diagnostic says why; importers still load
        add(f"{type_id}Field", lambda: Any)
    for type_id, spec in registry.specs.items():
        if isinstance(spec, specs.IdTypeSpec):
            add(type_id, lambda t=type_id: NewType(t, str))
            add(f"{type_id}Field", lambda t=type_id: registry.named(t))
            continue
        add(type_id, lambda t=type_id: registry.named(t))
        if isinstance(spec, specs.UnionTypeSpec):
            for v in spec.variants:
                add(f"{type_id}{pascal(v.name)}", lambda t=type_id, n=f"{type_id}{pascal(v.name)}":
                    registry.union_variants(t)[n])
    flows = list(project.flows.values()) + [f for e in project.experiments.values() for f in e.flows.values()]
    for flow in flows:
        for node_id, node in flow.nodes.items():
            spec = node.spec
            if isinstance(spec, specs.CodeNode):
                add(node_model_name(flow.id, node_id, "Out"),
                    lambda n=node_model_name(flow.id, node_id, "Out"), s=spec: registry.record(n, s.out))
                inputs = _in_fields(spec.in_)
                add(node_model_name(flow.id, node_id, "In"),
                    lambda n=node_model_name(flow.id, node_id, "In"), f=inputs: registry.record(n, f))
            if node.inference is not None:
                stem = pascal(spec.inference or node.id)
                add(f"{stem}Out", lambda n=f"{stem}Out", i=node.inference: registry.record(n, i.out))
                add(f"{stem}In", lambda n=f"{stem}In", i=node.inference: registry.record(n, i.in_))
    for tool_id, tool in project.tools.items():
        add(f"{pascal(tool_id)}Out", lambda n=f"{pascal(tool_id)}Out", s=tool.spec: registry.record(n, s.out))
        add(f"{pascal(tool_id)}In", lambda n=f"{pascal(tool_id)}In", s=tool.spec: registry.record(n, s.in_))
    return names


class TypesModule(pytypes.ModuleType):
    """Names resolve on first access; the table is read again on a miss (flows load after types)."""

    def __init__(self, package: str, project: "Project"):
        super().__init__(f"{package}.types", f"The types of project {package}, built by pytest-aqven.")
        self.__dict__["_project"] = project
        self.__dict__["_names"] = {}

    def _table(self, refresh: bool = False) -> dict[str, Callable[[], Any]]:
        if refresh or not self.__dict__["_names"]:
            self.__dict__["_names"] = generated_names(self.__dict__["_project"])
        return self.__dict__["_names"]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        build = self._table().get(name) or self._table(refresh=True).get(name)
        if build is None:
            raise AttributeError(f"module {self.__name__} has no type {name}: it names the types of types/, "
                                 "<Flow><Node>Out/In of code nodes, <Inference>Out/In and <Tool>Out/In")
        value = build()
        self.__dict__[name] = value
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(self._table(refresh=True)) | set(super().__dir__()))

    @property
    def __all__(self) -> list[str]:
        return sorted(self._table(refresh=True))


_ADAPTERS: dict[tuple[int, str], tuple[Any, Any]] = {}
_HINTS: dict[int, tuple[Any, dict, Any]] = {}


def typed_arguments(fn: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """User code runs unchanged: a parameter annotated with a model (`request: CaseRequest`), a date or a
    union gets that type, not the JSON value of the binding. A value that does not fit is passed as it is."""
    import inspect
    import typing

    from pydantic import TypeAdapter, ValidationError
    known = _HINTS.get(id(fn))
    if known is not None and known[0] is fn:
        _, hints, params = known
    else:
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
            params = inspect.signature(fn).parameters
        except Exception:          # hints naming what does not exist (yet): leave the arguments alone
            return kwargs
        _HINTS[id(fn)] = (fn, hints, params)     # read once per function, not on every call
    out = dict(kwargs)
    for name, value in kwargs.items():
        hint = hints.get(name)
        if hint is None or hint is Any or name not in params:
            continue
        key = (id(fn), name)
        cached = _ADAPTERS.get(key)
        if cached is None or cached[0] is not fn:
            try:
                cached = _ADAPTERS[key] = (fn, TypeAdapter(hint))
            except Exception:
                cached = _ADAPTERS[key] = (fn, None)
        if cached[1] is None:
            continue
        try:
            out[name] = cached[1].validate_python(value)
        except ValidationError:
            pass
    return out
