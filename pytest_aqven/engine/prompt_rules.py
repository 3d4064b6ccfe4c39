"""Liquid prompts at check time: parsed with the engine's own environment (its `{% message %}` tag and
its fragment loader), so a prompt that passes here is one the engine renders.

For every Liquid prompt (a plain-text prompt has nothing to parse): includes resolve, the variables
are inputs of the inference or the documented globals (`output_format`, `variants.<slot>`), paths
into record inputs name their fields, `{% message %}` blocks are not nested and hold all the text,
the last one is the user's; and the output fields are shown to the model somewhere."""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ..check.context import CheckContext
from ..diagnostics import Diagnostic
from ..project import shapes, specs
from . import prompts as engine_prompts

GLOBALS = ("output_format", "variants")
_INCLUDE = re.compile(r"""{%-?\s*include\s+["']([^"']+)["']""")


class Prompt:
    """One prompt text as the engine reads it: the main prompt of an inference (its globals are the
    inputs, output_format and variants) or a variant text (the inputs only)."""

    def __init__(self, ctx: CheckContext, path: Path, inference: specs.InferenceSpec, stem: str, main: bool) -> None:
        self.ctx, self.path, self.inference, self.stem, self.main = ctx, path, inference, stem, main
        self.rel = ctx.project.rel(path)
        self.who = f"prompt of inference {stem}" if main else f"variant text of inference {stem}"
        self.out: list[Diagnostic] = []
        self.texts: dict[str, str] = {}         # template name -> its text (the prompt and what it includes)

    # --- positions ------------------------------------------------------------------------
    def file_of(self, name: str | None) -> str:
        """The project file of a template name: the prompt itself, or a fragment the loader read."""
        if not name or name == self.rel:
            return self.rel
        rel = PurePosixPath(name)
        return (rel if rel.suffix else rel.with_suffix(".md")).as_posix()

    def at(self, code: str, name: str | None, source: str | None, index: int, message: str, hint: str) -> None:
        file = self.file_of(name)
        text = source if source is not None else self.texts.get(name or self.rel, "")
        line = col = None
        if 0 <= index <= len(text):
            line = text.count("\n", 0, index) + 1
            col = index - (text.rfind("\n", 0, index) + 1) + 1
        who = self.who if file == self.rel else f"{self.who} (included by {self.rel})"
        self.out.append(Diagnostic(code, file, (), f"{who}: {message}", line, col, hint))

    # --- the rules ------------------------------------------------------------------------
    def run(self) -> list[Diagnostic]:
        from liquid.exceptions import LiquidError, TemplateNotFoundError

        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return []                            # E_FILE_UNREADABLE says why
        if not engine_prompts.is_template(text):
            return []                            # plain text: the engine appends inputs and output fields
        self.texts[self.rel] = text
        env = engine_prompts.environment(self.ctx.project.root)
        try:
            template = env.from_string(text, name=self.rel)
            analysis = template.analyze(include_partials=True)
        except LiquidError as exc:
            if getattr(exc, "outside", False):   # an include out of the project: E_PATH_OUTSIDE (check/paths.py)
                return self.out
            token, first = exc.token, _first_line(exc)
            name = None if exc.template_name is None else str(exc.template_name)   # liquid allows a Path; ours are str
            if isinstance(exc, TemplateNotFoundError):
                code, message = "E_FRAGMENT_MISSING", f"include {first}: the project has no file {self.file_of(first)}"
                hint = "write the fragment as fragments/<name>.md at the module root, and include it as \"fragments/<name>\""
            else:
                code, message = "E_PROMPT_SYNTAX", f"the template does not parse: {first}"
                hint = ("fix the Liquid syntax: {{ variable }}, {% tag %} ... {% endtag %}, "
                        "{% message system|user|assistant %} ... {% endmessage %}")
            self.at(code, name, token.source if token else None, token.start_index if token else -1,
                    message, hint)
            return self.out
        self._variables(analysis)
        self._messages(template)
        if self.main:
            self._output_fields(analysis, text)
        return self.out

    def _variables(self, analysis) -> None:
        inputs = {f.name: f.type for f in self.inference.in_}
        allowed = list(inputs) + (list(GLOBALS) if self.main else [])
        found: dict[tuple, list] = {}            # (message, hint) -> every variable it is about
        for name, variables in analysis.globals.items():
            for v in variables:
                problem = self._variable(name, list(v.segments), inputs, allowed)
                if problem:
                    found.setdefault(problem, []).append(v)
        for (message, hint), variables in found.items():
            first = variables[0]
            more = f" (and {len(variables) - 1} more uses)" if len(variables) > 1 else ""
            self.at("E_PROMPT_VARIABLE_UNDECLARED", first.span.template_name, None, first.span.index,
                    message + more, hint)

    def _variable(self, name: str, segments: list, inputs: dict[str, str], allowed: list[str]):
        if name not in allowed:
            return (f"variable {name} is not an input of the inference",
                    f"read an input ({', '.join(inputs) or 'none'})"
                    + (" or the globals output_format and variants.<slot>" if self.main else ""))
        if name == "variants":
            slot = segments[1] if len(segments) > 1 else None
            if isinstance(slot, str) and slot not in self.inference.variants:
                return (f"variants.{slot} is not a variant slot of the inference",
                        f"name a slot of variants ({', '.join(self.inference.variants) or 'none declared'})")
            return None
        if name == "output_format":
            return None
        registry = self.ctx.types.registry
        shape = shapes.of(registry, inputs[name])
        path = name
        for seg in segments[1:]:
            if not isinstance(seg, (str, int)):
                return None                      # a computed key: known only when it renders
            kind = shapes.kind(registry, shape)
            if isinstance(seg, str) and seg in shapes.LIQUID_PROPERTIES and kind in ("list", "text"):
                return None
            if isinstance(seg, int):
                shape, path = shape.item if isinstance(shape, shapes.Seq) else None, f"{path}[{seg}]"
                continue
            fields = shapes.fields(registry, shape)
            if fields is None:
                return None                      # not a record the registry describes: the engine decides
            if seg not in fields:
                return (f"variable {path}.{seg}: {shapes.describe(shape)} has no field {seg}",
                        f"name one of its fields: {', '.join(fields)}")
            shape, path = fields[seg], f"{path}.{seg}"
        return None

    def _messages(self, template) -> None:
        """What the engine's message splitting needs: no block inside a block, no text outside the blocks
        when there are blocks, and the last message the user's."""
        from liquid.context import RenderContext

        context = RenderContext(template)
        hint = "write every text inside {% message system|user|assistant %} ... {% endmessage %}"

        def nested(node, inside: bool) -> None:
            for child in node.children(context, include_partials=True):
                if _is_message(child) and inside:
                    self.at("E_PROMPT_MESSAGE_NESTED", None, child.token.source, child.token.start_index,
                            "a {% message %} block is inside another one", "close a block with {% endmessage %} "
                            "before the next one opens")
                nested(child, inside or _is_message(child))

        top = list(template.nodes)
        for node in top:
            if _is_message(node):
                nested(node, True)
        if not any(_is_message(n) for n in top):
            return
        for node in top:
            kind = type(node).__name__
            if kind == "ContentNode" and not node.blank:
                self.at("E_PROMPT_MESSAGES", None, node.token.source, node.token.start_index + _lead(node.text),
                        f"text {_snippet(node.text)} is outside the {{% message %}} blocks", hint)
            elif kind == "OutputNode":
                self.at("E_PROMPT_MESSAGES", None, node.token.source, node.token.start_index,
                        "an output {{ ... }} is outside the {% message %} blocks", hint)
        significant = [n for n in top if not (type(n).__name__ == "ContentNode" and n.blank)
                       and type(n).__name__ not in ("CommentNode", "InlineCommentNode")]
        last = significant[-1] if significant else None
        if last is not None and _is_message(last) and last.role != "user":
            self.at("E_PROMPT_MESSAGES", None, last.token.source, last.token.start_index,
                    f"the prompt ends with {'an' if last.role == 'assistant' else 'a'} {last.role} message, but the "
                    "last message of a prompt is the user's",
                    "end the prompt with {% message user %} ... {% endmessage %}")

    def _output_fields(self, analysis, text: str) -> None:
        """A Liquid prompt gets no output fields appended: without {{ output_format }}, a field the text
        never names is a field the model never sees."""
        if "output_format" in analysis.globals:
            return
        texts = [text] + list(self._included(text, set()))
        for slot, variant in self.inference.variants.items():
            folder = self.path.parent / f"{self.stem}.variants" / slot
            for name in {*variant.cases.values(), *([variant.default] if variant.default else [])}:
                try:
                    texts.append((folder / f"{name}.md").read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError):
                    pass
        every = "\n".join(texts)
        unseen = [f.name for f in self.inference.out if not re.search(rf"\b{re.escape(f.name)}\b", every)]
        if unseen:
            self.out.append(Diagnostic(
                "W_PROMPT_OUTPUT_FORMAT", self.rel, (),
                f"{self.who}: a Liquid prompt without {{{{ output_format }}}}, and the text never names the output "
                f"field{'s' if len(unseen) > 1 else ''} {', '.join(unseen)}: the model never sees "
                f"{'them' if len(unseen) > 1 else 'it'}", 1, 1,
                "write {{ output_format }} where the model should read the output fields: the engine appends "
                "them only to plain-text prompts"))

    def _included(self, text: str, seen: set[str]):
        root = self.ctx.project.root
        for name in _INCLUDE.findall(text):
            file = self.file_of(name)
            if file in seen:
                continue
            seen.add(file)
            try:
                included = (root / file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            yield included
            yield from self._included(included, seen)


def _first_line(exc: Exception) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


def _is_message(node) -> bool:
    return type(node).__name__ == "MessageNode" and hasattr(node, "role")


def _lead(text: str) -> int:
    return len(text) - len(text.lstrip())


def _snippet(text: str) -> str:
    words = " ".join(text.split())
    return repr(words if len(words) <= 30 else words[:27] + "...")


def inputs_read(root: Path, path: Path, inference: specs.InferenceSpec, stem: str) -> set[str] | None:
    """The variables a Liquid prompt reads, with what it includes, its variant texts and their selectors
    (`on: $in.<input>`); None for a plain-text prompt (the engine appends every input to it) or a prompt that
    does not read or parse (its own rules say why)."""
    from liquid.exceptions import LiquidError

    env = engine_prompts.environment(root)
    texts = [path] + [path.parent / f"{stem}.variants" / slot / f"{name}.md" for slot, variant in
                      inference.variants.items() for name in {*variant.cases.values(), *filter(None, [variant.default])}]
    read = {m.group(1) for variant in inference.variants.values()
            for m in [re.match(r"\$in\.([A-Za-z_]\w*)", variant.selector)] if m}
    for i, file in enumerate(texts):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            if i == 0:
                return None
            continue                             # a missing variant text is its own diagnostic
        if i == 0 and not engine_prompts.is_template(text):
            return None
        try:
            read |= set(env.from_string(text, name=str(file)).analyze(include_partials=True).globals)
        except LiquidError:
            return None
    return read


def prompt_rules(ctx: CheckContext, path: Path, inference: specs.InferenceSpec, stem: str, inference_file: str,
                 main: bool = True) -> list[Diagnostic]:
    """The diagnostics of one prompt text for one inference (named by its file), once per check."""
    key = ("prompt", str(path), inference_file)
    if key in ctx.inferences_seen:
        return []
    ctx.inferences_seen.add(key)
    return Prompt(ctx, path, inference, stem, main).run()
