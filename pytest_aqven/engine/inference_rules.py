"""The rules of an inference file beyond in and out (variants, allowed_sets, examples, checks, display,
Dynamic outputs), and of a judge."""
from __future__ import annotations

from pathlib import Path

from ..check.context import CheckContext, text_problem
from ..diagnostics import Diagnostic
from ..project import shapes, specs
from ..project.yamlpos import Path_, YamlDoc
from . import prompts as engine_prompts
from .evaluators import BUILTINS
from .prompt_rules import inputs_read, prompt_rules
from .ref_rules import REF_FORMS, parse_steps
from .rule_base import RuleBase

# the `with:` models of AQVEN's eleven built-in evaluators, the runtime's own, so the checker and the runner never
# disagree (the built-in container policies and their parameter models are the engine's too: policies.BUILTINS)
EVALUATOR_PARAMS = {name: model for name, (_, model) in BUILTINS.items()}


class InferenceRules(RuleBase):
    """An inference file's keys, checked for the llm node that reads it (diagnostics into its compiler's list)."""

    def check(self, stem: str, inf: specs.InferenceSpec, doc: YamlDoc) -> None:
        """The keys of an inference file beyond in/out: variants, allowed_sets, examples, checks,
        display and Dynamic outputs. Each is checked once per inference file."""
        who = f"inference {stem}"
        if doc.file in self.ctx.inferences_seen:
            return
        self.ctx.inferences_seen.add(doc.file)
        folder = (self.ctx.project.root / doc.file).parent
        here = folder / f"{stem}.py"
        ins = {f.name: f.type for f in inf.in_}
        outs = {f.name: f.type for f in inf.out}

        def in_field(path: tuple, ref: str, what: str) -> str | None:
            """The input field a `$in.<field>...` reference starts with, or None after a diagnostic."""
            parsed = parse_steps(ref)
            if isinstance(parsed, str) or parsed[0] != "in" or not parsed[1] or parsed[1][0] not in ins:
                self.out.append(doc.diag("E_REF_INVALID", path, f"{who}: {what} {ref} does not read an input of the inference",
                                         f"write $in.<field> with a field of in ({', '.join(ins) or 'none'})"))
                return None
            problem = self.ctx.types.walk(ins[parsed[1][0]], parsed[1][1:])
            if problem:
                self.out.append(doc.diag("E_REF_FIELD_UNKNOWN", path, f"{who}: {what} {ref}: {problem[0]}",
                                         f"name one of its fields: {', '.join(problem[1])}" if problem[1]
                                         else "fix the path of the reference"))
                return None
            return parsed[1][0]

        for slot, v in inf.variants.items():
            in_field(("variants", slot, "on"), v.selector, f"variant slot {slot}: on")
            files: list[tuple[Path_, str]] = [(("variants", slot, "cases", case), name)
                                              for case, name in v.cases.items()]
            if v.default is not None:
                files.append((("variants", slot, "default"), v.default))
            for path, name in files:
                file = folder / f"{stem}.variants" / slot / f"{name}.md"
                problem = text_problem(file)
                if problem:
                    self.out.append(doc.diag("E_VARIANT_FILE_MISSING" if problem == "does not exist" else "E_FILE_UNREADABLE",
                                             path, f"{who}: variant file {self.ctx.project.rel(file)} {problem}",
                                             f"write the variant text in {stem}.variants/{slot}/{name}.md beside the inference"))
                else:
                    self.out += prompt_rules(self.ctx, file, inf, stem, doc.file, main=False)
        for i, s in enumerate(inf.allowed_sets):
            target = self.ctx.project.types.specs.get(s.type)
            if not isinstance(target, specs.IdTypeSpec) and s.type not in self.ctx.types.unreadable:
                ids = sorted(t for t, sp in self.ctx.project.types.specs.items() if isinstance(sp, specs.IdTypeSpec))
                self.out.append(doc.diag("E_ALLOWED_SET_INVALID", ("allowed_sets", i, "type"),
                                         f"{who}: allowed_sets type {s.type} is not an id type of types/",
                                         f"name an id type ({', '.join(ids) or 'none yet'}): an allowed set restricts ids"))
            in_field(("allowed_sets", i, "from"), s.from_, "allowed_sets from")
            if s.labels_from is not None:
                in_field(("allowed_sets", i, "labels_from"), s.labels_from, "allowed_sets labels_from")
        for i, ex in enumerate(inf.examples):
            for side, given, fields in (("in", ex.in_, ins), ("out", ex.out, outs)):
                for name, value in given.items():
                    problem = None if name in fields else f"{name} is not a field of {side}"
                    if problem is None and fields[name] not in ("Dynamic", "Dynamic?"):
                        problem = self._value_problem(fields[name], value)
                    if problem:
                        self.out.append(doc.diag("E_EXAMPLE_INVALID", ("examples", i, side, name),
                                                 f"{who}: example {ex.name}: {side}.{name}: {problem}",
                                                 f"fields of {side}: {', '.join(fields) or 'none'}"))
        for i, c in enumerate(inf.checks):
            if c.use is not None and c.use not in EVALUATOR_PARAMS:
                self.out.append(doc.diag("E_POLICY_UNKNOWN", ("checks", i, "use"), f"{who}: check use: {c.use} is not a built-in evaluator",
                                         f"name a built-in evaluator ({', '.join(sorted(EVALUATOR_PARAMS))}) or run your own"))
            elif c.use is not None:
                self._check_params(doc, ("checks", i), c.with_, EVALUATOR_PARAMS[c.use], f"use: {c.use}", who)
            if c.run is not None:
                self._code_ref(doc, ("checks", i, "run"), c.run, here, who)
            if c.agent is not None and c.agent not in self.ctx.project.agents and not self.ctx.unreadable("agent", c.agent):
                self.out.append(doc.diag("E_AGENT_UNKNOWN", ("checks", i, "agent"), f"{who}: check agent {c.agent} does not exist",
                                         f"name an agent of agents/ ({', '.join(sorted(self.ctx.project.agents))})"))
            if c.inference is not None:
                self.out += judge_rules(self.ctx, doc, ("checks", i, "inference"), c.inference, f"{who}: check {i + 1}")
        for side in ("input", "output"):
            display = getattr(inf.display, side, None) if inf.display else None
            if display is None:
                continue
            if display.template is not None:
                t = display.template
                file = self.ctx.project.root / t[len("@root/"):] if t.startswith("@root/") else folder / t
                problem = text_problem(file)
                if problem:
                    self.out.append(doc.diag("E_FILE_UNREADABLE", ("display", side, "template"),
                                             f"{who}: display template {t} {problem}",
                                             "write the template beside the inference, or name it from @root/"))
            if display.run is not None:
                self._code_ref(doc, ("display", side, "run"), display.run, here, who)
            for name, ref in display.variables.items():
                parsed = parse_steps(ref)
                if isinstance(parsed, str) or parsed[0] not in ("in", "out"):
                    self.out.append(doc.diag("E_REF_INVALID", ("display", side, "variables", name),
                                             f"{who}: display variable {name}: {ref} reads neither $in nor $out", REF_FORMS))
        for i, f in enumerate(inf.out):
            if f.schema_from is not None:
                field = in_field(("out", i, "schema_from"), f.schema_from, f"out {f.name}: schema_from")
                if field is not None and ins[field].rstrip("?") != "FieldSpec[]":
                    self.out.append(doc.diag("E_SCHEMA_FROM_INVALID", ("out", i, "schema_from"),
                                             f"{who}: out {f.name}: schema_from {f.schema_from} is {ins[field]}, not FieldSpec[]",
                                             "a Dynamic field takes its shape from an input of type FieldSpec[]"))
            if f.value_type is not None:
                self._type(doc, ("out", i, "value_type"), f.value_type, who)


def judge_rules(ctx: CheckContext, doc: YamlDoc, path: tuple, stem: str, who: str, levels: list[Path] | None = None
                ) -> list[Diagnostic]:
    """A judge (an inference with an agent, scoring an answer): its output has a numeric score, the number
    the check reads, and its prompt passes the prompt rules (project-level diagnostics: the prompt's file
    is the judge's, whoever uses it). Nothing when the inference does not load (its own rule says why)."""
    from ..project.inferences import inference_path, load_inference

    inference, inf_doc = load_inference(ctx.project, stem, [], levels)
    if inference is None or inf_doc is None:     # read from its file: both or neither
        return []
    out = []
    score = next((f for f in inference.out if f.name == "score"), None)
    registry = ctx.types.registry
    if score is None:
        problem = f"its output has no field score ({', '.join(f.name for f in inference.out)})"
    elif shapes.numeric(registry, shapes.of(registry, score.type)) is False:
        problem = f"its output field score is {score.type}, not a number"
    else:
        problem = None
    if problem:
        out.append(doc.diag("E_JUDGE_SCORE", path, f"{who}: judge {stem}: {problem}, so every attempt it scores "
                            "is an error",
                            "give the judge's inference an output field score of a number type (Int for an ordinal "
                            "scale, Float or a value type such as Score for a continuous one; a binary check passes "
                            "at 0.5 or more)"))
    found = inference_path(ctx.project, stem, levels)
    prompt = found.parent / f"{stem}.prompt.md" if found is not None else None
    if prompt is not None and prompt.is_file() and inference.prompt is None:
        ctx.shared += prompt_rules(ctx, prompt, inference, stem, inf_doc.file)   # every user of the judge sees them
        read = inputs_read(ctx.project.root, prompt, inference, stem)
        unread = [f.name for f in inference.in_ if read is not None and f.name not in read
                  and not engine_prompts.media_kind(f.type)]       # media reach the model as parts of the message
        if unread:
            them = "them" if len(unread) > 1 else "it"
            out.append(doc.diag("W_JUDGE_INPUT_UNREAD", path,
                                f"{who}: judge {stem}: its prompt {ctx.project.rel(prompt)} never reads input"
                                f"{'s' if len(unread) > 1 else ''} {', '.join(unread)}, so the judge never sees {them}",
                                f"show {them} in the prompt ({{{{ {unread[0]} }}}}) or remove {them} from the "
                                "inference: a judge that never sees the answer it grades spends its calibration for "
                                "nothing"))
    return out
