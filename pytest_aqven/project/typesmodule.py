"""`<package>.types` without a generated file: a module whose names are built on first use from the
project's types registry, named and ordered as AQVEN's generator (`aqven generate`) names them:

- every type of types/ (`CaseRequest`); a union's variants (`CaseRecordDefect`); an id type is a
  NewType (`OrderId`) with its constrained annotation as `OrderIdField`;
- `<Inference>In` / `<Inference>Out` of every inference file of the project;
- `<Tool>In` / `<Tool>Out` of every tool with `run` (an MCP tool's shapes come from its server);
- `<Flow><Node>In` / `<Flow><Node>Out` of every code node of a project flow (a nested node by its own id);
- `<Experiment><Flow><Node>In` / `...Out` of every code node of an experiment's local flow;
- `<Experiment><Node>In` / `...Out` of every code node of an experiment's nodes/ (a variant's node).

A flow.py's nodes get none (its code returns its own models). A name already taken (by a type, or an
earlier shape) stays with the first. The runner validates with the very same (cached) classes."""
from __future__ import annotations

import types as pytypes
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Callable, Iterator, NewType

from . import specs
from .inferences import project_inferences
from .types import pascal

try:
    from typing import TypeAliasType  # type: ignore[attr-defined]
except ImportError:                        # Python 3.11
    from typing_extensions import TypeAliasType

if TYPE_CHECKING:
    from .model import Flow, Project


def code_stem(project: "Project", flow: "Flow", node: Any) -> str:
    """The generated name of a code node's shapes, without In/Out: `<Experiment><Node>` for a node of an
    experiment's nodes/ (a variant's), `<Experiment><Flow><Node>` in a local flow, else `<Flow><Node>`."""
    parts: tuple[str, ...] = node.path.relative_to(project.root).parts if node.path.is_relative_to(project.root) else ()
    if len(parts) > 3 and parts[0] == "experiments" and parts[2] == "nodes":
        return f"{pascal(parts[1])}{pascal(node.id)}"
    if flow.local_to:
        return f"{pascal(flow.local_to)}{pascal(flow.id)}{pascal(node.id)}"
    return f"{pascal(flow.id)}{pascal(node.id)}"


def _in_fields(fields: list[Any]) -> list[specs.FieldDecl]:
    """The typed inputs of a code node as declarations (an input without a type is left out)."""
    return [specs.FieldDecl.model_validate({**f.model_dump(by_alias=True, exclude={"from_", "value"},
                                                           exclude_none=True), "name": f.name})
            for f in fields if getattr(f, "type", None)]


def _code_nodes(flow: "Flow") -> Iterator[tuple[str, specs.CodeNode]]:
    if flow.doc.file.endswith("flow.py"):
        return iter(())
    return ((node_id, node.spec) for node_id, node in sorted(flow.nodes.items())
            if isinstance(node.spec, specs.CodeNode))


def _alias(name: str, value: Any) -> Any:
    """A named type alias, as `type <name> = ...` of AQVEN's generated module: an annotation that names its
    type (aqven.spec.describe_annotation reads the name), validated as its value."""
    return TypeAliasType(name, value)


def _of(base: Any, constrained: Any) -> Any:
    """`constrained` (Annotated[str, <constraints>]) on `base`: `OrderIdField` is the OrderId NewType, constrained."""
    import typing
    if typing.get_origin(constrained) is Annotated:
        return Annotated[(base, *typing.get_args(constrained)[1:])]
    return base


def generated_names(project: "Project") -> dict[str, Callable[[], Any]]:
    registry = project.types
    names: dict[str, Callable[[], Any]] = {}

    def add(name: str, build: Callable[[], Any]) -> None:
        names.setdefault(name, build)

    id_types: dict[str, Any] = project.__dict__.setdefault("_id_types", {})   # one NewType per id type

    def new_type(type_id: str) -> Any:
        return id_types.setdefault(type_id, NewType(type_id, str))

    def id_field(type_id: str) -> Any:
        return _alias(f"{type_id}Field", _of(new_type(type_id), registry.named(type_id)))

    def named_alias(type_id: str) -> Any:
        return _alias(type_id, registry.named(type_id))

    def variant(type_id: str, name: str) -> Any:
        return registry.union_variants(type_id)[name]

    def shape(stem: str, inputs: list[Any], outputs: list[Any]) -> None:
        for side, fields in (("In", inputs), ("Out", outputs)):
            add(f"{stem}{side}", partial(registry.record, f"{stem}{side}", fields))

    for type_id in registry.unreadable:
        add(type_id, lambda: Any)                  # its own diagnostic says why; importers still load
        add(f"{type_id}Field", lambda: Any)
    for tool_id in project.unreadable["tool"]:
        add(f"{pascal(tool_id)}In", lambda: Any)
        add(f"{pascal(tool_id)}Out", lambda: Any)
    for type_id, spec in registry.specs.items():
        if isinstance(spec, specs.IdTypeSpec):
            add(type_id, partial(new_type, type_id))
            add(f"{type_id}Field", partial(id_field, type_id))
            continue
        if isinstance(spec, specs.RecordTypeSpec):
            add(type_id, partial(registry.named, type_id))
        else:                                      # enums, value types, unions: `type X = ...` in AQVEN's module
            add(type_id, partial(named_alias, type_id))
        if isinstance(spec, specs.UnionTypeSpec):
            for v in spec.variants:
                add(f"{type_id}{pascal(v.name)}", partial(variant, type_id, f"{type_id}{pascal(v.name)}"))
    for inference_id, inference in sorted(project_inferences(project).items()):
        shape(pascal(inference_id), inference.in_, inference.out)
    for tool_id, tool in sorted(project.tools.items()):
        if tool.spec.run is not None:
            shape(pascal(tool_id), tool.spec.in_, tool.spec.out)
    for flow_id, flow in sorted(project.flows.items()):
        for node_id, spec in _code_nodes(flow):
            shape(f"{pascal(flow_id)}{pascal(node_id)}", _in_fields(spec.in_), spec.out)
    for experiment_id, experiment in sorted(project.experiments.items()):
        for flow_id, flow in sorted(experiment.flows.items()):
            for node_id, spec in _code_nodes(flow):
                shape(f"{pascal(experiment_id)}{pascal(flow_id)}{pascal(node_id)}", _in_fields(spec.in_), spec.out)
    for experiment_id, experiment in sorted(project.experiments.items()):
        for node_id, node in sorted(experiment.alternatives.items()):
            if isinstance(node.spec, specs.CodeNode):
                shape(f"{pascal(experiment_id)}{pascal(node_id)}", _in_fields(node.spec.in_), node.spec.out)
    return names


class TypesModule(pytypes.ModuleType):
    """Names resolve on first access; the table is read again on a miss (flows load after types)."""

    def __init__(self, package: str, project: "Project") -> None:
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
                                 "<Inference>In/Out, <Tool>In/Out, and <Flow><Node>In/Out, "
                                 "<Experiment><Flow><Node>In/Out and <Experiment><Node>In/Out of code nodes")
        try:
            value = build()
        except LookupError as exc:      # a shape naming a type that does not exist: AQVEN generates no class
            raise AttributeError(f"module {self.__name__}: {name} cannot be built: {exc}") from None
        self.__dict__[name] = value
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(self._table(refresh=True)) | set(super().__dir__()))

    @property
    def __all__(self) -> list[str]:
        return sorted(self._table(refresh=True))


_ADAPTERS: dict[tuple[int, str], tuple[Any, Any]] = {}
_AS_IS = (str, int, float, bool)     # a value of exactly its hint's scalar type: validating it gives it back
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
        if hint is None or hint is Any or name not in params or (type(value) is hint and hint in _AS_IS):
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
