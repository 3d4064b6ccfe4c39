"""API keys: resolved from `ref:env/NAME` and the module root's `.env`, and scrubbed from every text we keep.

Every key value this process resolves is remembered here, so `scrub(text)` can remove it from error
messages and traces before they are stored or shown, whoever produced the text. So is every value a
series could hold without resolving it (`register_environment`, at each series start): the environment's
secret-looking variables (`*_API_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`), which a function provider or
a vendor SDK reads on its own, and every value of the module root's `.env`.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
from typing import Any

REDACTED = "[REDACTED]"
_known: set[str] = set()
_lock = threading.Lock()
_pattern: re.Pattern[str] | None = None
_secrets: tuple[str, ...] = ()      # _known as the scrubbing threads read it
# an Authorization header, or a bearer token, whatever its value
_AUTH = re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(?:bearer\s+|basic\s+)?[^\s\"',;}]+|\bbearer\s+[^\s\"',;}]+")
MIN_SECRET = 6        # shorter values would scrub ordinary words


def register(value: str | None) -> None:
    """Remember a secret value so that scrub() removes it."""
    global _pattern, _secrets
    if not value or len(value) < MIN_SECRET:
        return
    with _lock:
        if value not in _known:
            _known.add(value)
            _pattern = re.compile("|".join(re.escape(v) for v in sorted(_known, key=len, reverse=True)))
            _secrets = tuple(_known)


SECRET_NAME = re.compile(r"(_API_KEY|_TOKEN|_SECRET)$|PASSWORD", re.IGNORECASE)


def register_environment(root: Path | None = None) -> None:
    """Remember the values of the environment's secret-looking variables and of `<root>/.env`."""
    for name, value in list(os.environ.items()):
        if SECRET_NAME.search(name):
            register(value)
    if root is not None:
        for value in read_dotenv(root / ".env").values():
            register(value)


def scrub(text: str) -> str:
    """The text without any registered key value and without Authorization header values."""
    if not isinstance(text, str) or len(text) < MIN_SECRET:     # too short for a key or a header value
        return text
    if _clean(text):
        return text
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    return _AUTH.sub(lambda m: (m.group(1) or "") + REDACTED if m.group(1) else f"Bearer {REDACTED}", text)


def _clean(text: str) -> bool:
    """No registered key and nothing _AUTH could match: plain substring searches, where the regular
    expressions cost about 40 ns a character (a long prompt in a trace). _AUTH ignores case, and so matches
    the dotless and the dotted i (U+0131, U+0130) for "i", which lower() does not map: those go the long way."""
    if any(secret in text for secret in _secrets):
        return False
    lowered = text.lower()
    return "authorization" not in lowered and "bearer" not in lowered and "\u0130" not in text \
        and "\u0131" not in text


_PLAIN = frozenset({int, float, bool, type(None)})     # hold no text: kept without a call per value


def scrub_data(value: Any, limit: int | None = None) -> Any:
    """scrub() applied to every string of a JSON-like value; with `limit`, each string is then cut to at most
    that many characters (clip)."""
    if isinstance(value, str):
        return clip(scrub(value), limit)
    if isinstance(value, dict):
        return {k: v if v.__class__ in _PLAIN else scrub_data(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)([v if v.__class__ in _PLAIN else scrub_data(v, limit) for v in value])
    return value


def clip(text: str, limit: int | None) -> str:
    """The text, or its first `limit` characters and a marker with its length and the sha256 of the whole."""
    if limit is None or len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{text[:limit]}...[truncated: {len(text):,} characters in all, sha256 {digest}]"


def read_dotenv(path: Path) -> dict[str, str]:
    """The variables of a .env file, as python-dotenv reads them (comments, quotes, `export `, `${VAR}`)."""
    from dotenv import dotenv_values  # noqa: PLC0415 - only a run that reads a key needs it

    if not path.is_file():
        return {}
    try:
        values = dotenv_values(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return {key: value for key, value in values.items() if value is not None}


def env_name(ref: str) -> str | None:
    """NAME of `ref:env/NAME`, else None."""
    return ref[len("ref:env/"):] if ref.startswith("ref:env/") else None


def lookup(name: str, root: Path) -> str | None:
    """The variable from the process environment, else from the module root's .env; registered for scrubbing."""
    value = os.environ.get(name) or read_dotenv(root / ".env").get(name) or None
    register(value)
    return value
