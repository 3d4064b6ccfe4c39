"""`aqven.runtime.project`: run a project's flows from Python on pytest-aqven's engine.

`Project.load(root)` checks the project (`aqven check`; an experiment's own diagnostics do not stop its
flows), `flow(id)` or `flow_typed(id, In, Out)` gives a handle, `run(input, options)` runs the flow and
returns a RunResult with the output as the flow's output model. The engine never suspends: a human node
takes its answer from `RunOptions.human_answers`, else its on_timeout."""
from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from importlib.resources import files
from pathlib import Path
from typing import Any, AsyncIterator, Generic, Literal, TypeVar

from pydantic import BaseModel

from .address import ExecutionAddress, RunId, node_address
from .events import NodeFinished, NodeStarted, RunEvent, RunFinished, RunStartedEvent
from .executions import RunError
from .human import HumanWait, HumanWaitDetail, ResumeRequest, ResumeResult
from .options import RunOptions, RunResult
from .values import InlineValue
from .vocabulary import FinishedExecutionStatus, RunStatus

I = TypeVar("I", bound=BaseModel)
O = TypeVar("O", bound=BaseModel)
FlowSide = Literal["input", "output"]
_UNSUPPORTED = ("cassettes", "tool_http", "mcp_stubs", "blobs", "faults", "models", "outputs")


class ProjectInvalid(Exception):
    def __init__(self, report: "CheckReport") -> None:
        from ....diagnostics import render_text
        super().__init__(render_text(report.diagnostics))
        self.report = report


class PackageNotOnDisk(Exception):
    def __init__(self, package: str) -> None:
        super().__init__(f"package {package} is not a directory on disk")
        self.package = package


class FlowNotFound(LookupError):
    def __init__(self, flow_id: str) -> None:
        super().__init__(f"flow {flow_id} is not in the project")
        self.flow_id = flow_id


class FlowSignatureMismatch(TypeError):
    def __init__(self, flow_id: str, sides: tuple[FlowSide, ...]) -> None:
        super().__init__(f"models of flow {flow_id} do not match the schema: {', '.join(sides)}")
        self.flow_id = flow_id
        self.sides = sides


@dataclass(frozen=True)
class CheckReport:
    diagnostics: list[Any]
    project: Any

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


def _result_model(output_model: type[O]) -> type[RunResult[O]]:
    """`RunResult[output_model]`: pydantic parametrizes the generic model by a class known only at run time."""
    model = RunResult.__class_getitem__(output_model)
    assert isinstance(model, type) and issubclass(model, RunResult)     # a class: never a recursive reference
    return model


def _error(error: Any) -> RunError | None:
    if error is None:
        return None
    return RunError(code=error.code, message=error.message, address=node_address(error.node) if error.node else None)


_NODE_STATUS: dict[str, FinishedExecutionStatus] = {"ok": "ok", "failed": "failed"}    # the rest: cancelled


def _events(run_id: RunId, flow: Any, inputs: Any, result: Any) -> list[Any]:
    """The run's events from its trace: started, each node started and finished, finished."""
    now = dt.datetime.now(dt.timezone.utc)
    seq = iter(range(1, 1 << 30))
    out: list[Any] = [RunStartedEvent(seq=next(seq), at=now, run_id=run_id, flow_id=flow.id, content_hash="",
                                      mode="live", order=tuple(flow.spec.order), input_ref=InlineValue(value=inputs))]
    for n in result.nodes:
        address = ExecutionAddress(node_id=n.node, branch_key=n.branch, iteration=n.iteration, item_index=n.item)
        out.append(NodeStarted(seq=next(seq), at=now, run_id=run_id, address=address, kind=n.kind, attempt=1,
                               queued_ms=0))
        status = _NODE_STATUS.get(n.status, "cancelled")
        out.append(NodeFinished(
            seq=next(seq), at=now, run_id=run_id, address=address, status=status, attempt=1,
            output_ref=InlineValue(value=n.output), cost_usd=Decimal(str(n.cost_usd)),
            tokens_in=sum(c.tokens_in for c in n.calls), tokens_out=sum(c.tokens_out for c in n.calls),
            latency_ms=int(n.latency_ms), model=n.model, cache_hit=False, degraded=False,
            checks_failed=sum(1 for c in n.checks if not c.passed),
            error=RunError(code=n.error_code, message=n.error_message or "", address=address) if n.error_code
            else None))
    tokens_in, tokens_out = result.tokens
    out.append(RunFinished(seq=next(seq), at=now, run_id=run_id, status="failed" if result.error else "completed",
                           output_ref=InlineValue(value=result.output), error=_error(result.error),
                           cost_usd=Decimal(str(result.cost_usd)), tokens_in=tokens_in, tokens_out=tokens_out))
    return out


@dataclass
class Run(Generic[O]):
    """A started run: its result when it finishes, its events, cancel."""
    run_id: RunId
    output_model: type[O]
    task: "asyncio.Task[Any]"
    flow: Any
    inputs: Any
    cancelled: bool = field(default=False)

    async def status(self) -> RunStatus:
        if self.cancelled:
            return "cancelled"
        if not self.task.done():
            return "running"
        return "failed" if self.task.result().error else "completed"

    async def waits(self) -> tuple[HumanWait, ...]:
        return ()                      # the engine never suspends (human nodes answer from human_answers)

    async def wait_detail(self, address: ExecutionAddress) -> HumanWaitDetail:
        raise LookupError(f"run {self.run_id} has no wait at {address.node_id}: pytest-aqven's engine never suspends")

    async def resume(self, request: ResumeRequest) -> ResumeResult:
        raise LookupError(f"run {self.run_id} has no wait to resume: give human answers in RunOptions.human_answers")

    async def events(self, after_seq: int = 0) -> AsyncIterator[RunEvent]:
        result = await asyncio.shield(self.task)
        for event in _events(self.run_id, self.flow, self.inputs, result):
            if event.seq > after_seq:
                yield event

    async def result(self) -> RunResult[O]:
        try:
            result = await asyncio.shield(self.task)
        except asyncio.CancelledError:
            return _result_model(self.output_model)(run_id=self.run_id, status="cancelled", output=None, error=None,
                                                    cost_usd=Decimal(0), tokens_in=0, tokens_out=0)
        tokens_in, tokens_out = result.tokens
        output = None if result.error or result.output is None else self.output_model.model_validate(result.output)
        return _result_model(self.output_model)(
            run_id=self.run_id, status="failed" if result.error else "completed", output=output,
            error=_error(result.error), cost_usd=Decimal(str(result.cost_usd)), tokens_in=tokens_in,
            tokens_out=tokens_out)

    async def cancel(self, reason: str) -> RunStatus:
        if not self.task.done():
            self.cancelled = True
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        return await self.status()

    async def fork(self, from_address: ExecutionAddress) -> "Run[O]":
        raise LookupError("pytest-aqven's engine keeps no run to fork from: start the flow again")


@dataclass(frozen=True)
class FlowHandle(Generic[I, O]):
    flow_id: str
    input_model: type[I]
    output_model: type[O]
    project: "Project"

    async def run(self, input: I, options: RunOptions | None = None) -> RunResult[O]:
        return await (await self.start(input, options)).result()

    async def start(self, input: I, options: RunOptions | None = None) -> Run[O]:
        from ....engine.runner import Assembly, Runner
        from ....providers import registry
        from ....providers.base import AttemptIdentity
        options = options or RunOptions()
        unsupported = [name for name in _UNSUPPORTED if getattr(options, name)]
        if options.mode != "live" or unsupported:
            raise ValueError(f"RunOptions {', '.join(unsupported) or 'mode ' + options.mode} is not supported by "
                             "pytest-aqven's engine (docs/compat.md)")
        loaded = self.project.loaded_project()
        flow = self.project.loaded_flow(self.flow_id)
        providers = {s.id: registry.build(s, package=loaded.package, root=loaded.root) for s in loaded.spec.providers}
        run_id = RunId(uuid.uuid4().hex)
        runner = Runner(loaded, providers, AttemptIdentity(case=run_id))
        if options.limits is not None and options.limits.seconds:
            runner.default_timeout = float(options.limits.seconds)
        inputs = input.model_dump(mode="json", by_alias=True) if isinstance(input, BaseModel) else input
        context = options.context.model_dump(mode="json", exclude_none=True) if options.context else {}
        answers = {a.address.node_id: a.payload for a in options.human_answers}
        task = asyncio.ensure_future(runner.run(Assembly(flow), inputs, context, None, answers))
        return Run(run_id, self.output_model, task, flow, inputs)


@dataclass(frozen=True)
class Project:
    root: Path
    report: CheckReport

    @classmethod
    def from_report(cls, report: CheckReport) -> "Project":
        if report.project is None or not report.ok:
            raise ProjectInvalid(report)
        return cls(root=report.project.root, report=report)

    @classmethod
    def load(cls, root: Path) -> "Project":
        from ....api.check import check_project
        from ....project.loader import load_project
        project = load_project(Path(root))
        diagnostics, _per_experiment = check_project(project)   # an experiment's errors do not stop its flows
        return cls.from_report(CheckReport(list(diagnostics), project))

    @classmethod
    def from_package(cls, package: str) -> "Project":
        location = files(package)
        if not isinstance(location, Path):
            raise PackageNotOnDisk(package)
        return cls.load(location)

    def loaded_project(self) -> Any:
        if self.report.project is None:
            raise ProjectInvalid(self.report)
        return self.report.project

    def loaded_flow(self, flow_id: str) -> Any:
        flow = self.loaded_project().flows.get(flow_id)
        if flow is None:
            raise FlowNotFound(flow_id)
        return flow

    def _model(self, type_ref: str) -> type[BaseModel]:
        found = self.loaded_project().types.resolve(type_ref)
        return found if isinstance(found, type) and issubclass(found, BaseModel) else BaseModel

    def flow(self, flow_id: str) -> FlowHandle[BaseModel, BaseModel]:
        spec = self.loaded_flow(flow_id).spec
        return FlowHandle(flow_id, self._model(spec.input), self._model(spec.output), self)

    def flow_typed(self, flow_id: str, input_model: type[I], output_model: type[O]) -> FlowHandle[I, O]:
        """A handle whose input and output are the given models; they must validate as the flow's types do."""
        from ..spec.modelgen import normalized_schema
        spec = self.loaded_flow(flow_id).spec
        sides: tuple[tuple[FlowSide, type[BaseModel], str], ...] = (("input", input_model, spec.input),
                                                                    ("output", output_model, spec.output))
        mismatched = tuple(side for side, model, ref in sides
                           if normalized_schema(model) != normalized_schema(self.loaded_project().types.resolve(ref)))
        if mismatched:
            raise FlowSignatureMismatch(flow_id, mismatched)
        return FlowHandle(flow_id, input_model, output_model, self)


__all__ = ["FlowHandle", "FlowNotFound", "FlowSignatureMismatch", "PackageNotOnDisk", "Project", "ProjectInvalid",
           "Run"]
