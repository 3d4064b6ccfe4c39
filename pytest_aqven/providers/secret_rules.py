"""Literal secrets in aqven.yaml and in agents: a key is written as `ref:env/NAME` and kept in the
environment or `.env`, never in a file that goes to git. The engine refuses a literal api_key at run
time (`provider_key_missing`); the check says so before anything runs, and never repeats the value."""
from __future__ import annotations

import re
from typing import Any, Iterator

from ..check.context import CheckContext
from ..diagnostics import Diagnostic
from .secrets import env_name

# keys whose value is a credential (the last word of the key: api_key, x_api_key, access_token, ...)
SECRET_KEY = re.compile(r"(?:^|[_-])(api[_-]?key|apikey|token|secret|password|passwd|authorization|credentials?|"
                        r"access[_-]?key|private[_-]?key)$", re.IGNORECASE)
# values that are keys whatever their key says: well-known key formats, a bearer token, a URL with a password
KEY_LIKE = re.compile(r"^(?:sk-[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|"
                      r"xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|(?i:bearer)\s+\S{8,})$")
URL_PASSWORD = re.compile(r"://[^/\s:@]+:[^/\s@]+@")
HINT = "write ref:env/<NAME> and set NAME in the environment or in .env beside aqven.yaml (kept out of git)"
URL_HINT = "take the password out of the URL: a provider's key goes in api_key: \"ref:env/<NAME>\""


def _strings(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, path + (i,))


def literal(path: tuple[str | int, ...], value: str) -> str | None:
    """What makes this string a literal secret, or None."""
    if not value.strip() or env_name(value) is not None:
        return None
    key = next((seg for seg in reversed(path) if isinstance(seg, str)), "")
    if SECRET_KEY.search(key):
        return f"{key} is written as a literal, not as ref:env/<NAME>"
    if KEY_LIKE.match(value.strip()):
        return "the value is an API key written as a literal"
    if URL_PASSWORD.search(value):
        return "the URL holds a password"
    return None


def secret_rules(ctx: CheckContext) -> list[Diagnostic]:
    project, out = ctx.project, []
    docs = [("project", project.doc)] + [(f"agent {agent_id}", agent.doc) for agent_id, agent in project.agents.items()]
    for who, doc in docs:
        if doc is None:
            continue
        for path, value in _strings(doc.data):
            problem = literal(path, value)
            if problem:
                out.append(doc.diag("E_SECRET_LITERAL", path, f"{who}: {problem} (the value is not repeated "
                                    "here)", URL_HINT if problem.startswith("the URL") else HINT))
    return out
