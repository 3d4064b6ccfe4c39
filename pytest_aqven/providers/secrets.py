"""API keys: resolved from `ref:env/NAME` and the module root's `.env`, and scrubbed from every text we keep.

Every key value this process resolves is remembered here, so `scrub(text)` can remove it from error
messages and traces before they are stored or shown, whoever produced the text. So is every value a
series could hold without resolving it (`register_environment`, at each series start), which a function
provider or a vendor SDK reads on its own: the environment's variables named like a secret (a KEY, SECRET,
TOKEN, PASSWORD, PAT or CREDENTIAL part: `API_KEY`, `AWS_SECRET_ACCESS_KEY`, `AZURE_OPENAI_KEY`, `GITHUB_PAT`),
those whose value is shaped like one (a token of 16 or more characters mixing upper case, lower case and
digits), the password of any URL among them (`DATABASE_URL=postgresql://app:pass@host/app`), and every value of
the module root's `.env`. Each is scrubbed as written and as it reads URL-encoded or JSON-escaped; a password
in a URL is scrubbed by its shape too, whoever's it is.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit

REDACTED = "[REDACTED]"
_known: set[str] = set()
_lock = threading.Lock()
_pattern: re.Pattern[str] | None = None
_secrets: tuple[str, ...] = ()      # _known as the scrubbing threads read it
# an Authorization header, or a bearer token, whatever its value
_AUTH = re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(?:bearer\s+|basic\s+)?[^\s\"',;}]+|\bbearer\s+[^\s\"',;}]+")
# the password of a URL's user, whatever the URL: scheme://user:PASSWORD@host
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s/:@\"']*:)([^\s/@\"']+)(@)")
MIN_SECRET = 6        # shorter values would scrub ordinary words


def register(value: str | None) -> None:
    """Remember a secret value so that scrub() removes it, in the forms it takes in a URL or in JSON too."""
    global _pattern, _secrets
    if not value or len(value) < MIN_SECRET:
        return
    forms = {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}
    with _lock:
        if not forms <= _known:
            _known.update(forms)
            _pattern = re.compile("|".join(re.escape(v) for v in sorted(_known, key=len, reverse=True)))
            _secrets = tuple(_known)


# a name with a secret's part: API_KEY, AWS_SECRET_ACCESS_KEY, AZURE_OPENAI_KEY, GH_TOKEN, GITHUB_PAT, DB_PASSWD
SECRET_NAME = re.compile(r"(^|_)(KEY|PAT|PASSWD|CREDENTIALS?)(_|$)|SECRET|TOKEN|PASSWORD|APIKEY", re.IGNORECASE)
# a value shaped like a key or token: 16+ characters of a token's alphabet, mixing upper case, lower case and
# digits (a path, a hex digest or a UUID mixes at most two of them)
_TOKEN_SHAPE = re.compile(r"(?=[^a-z]*[a-z])(?=[^A-Z]*[A-Z])(?=[^0-9]*[0-9])[A-Za-z0-9_\-+/=.~]{16,512}")


def url_password(value: str) -> str | None:
    """The password of a URL's user (`postgresql://app:pass@host/app` -> `pass`), else None."""
    if "://" not in value or "@" not in value:
        return None
    try:
        password = urlsplit(value.strip()).password
    except ValueError:
        return None
    return unquote(password) if password else None


def register_environment(root: Path | None = None) -> None:
    """Remember the values of the environment's variables named or shaped like a secret, the passwords of its
    URLs, and every value of `<root>/.env`."""
    for name, value in list(os.environ.items()):
        if SECRET_NAME.search(name) or _TOKEN_SHAPE.fullmatch(value):
            register(value)
        register(url_password(value))
    if root is not None:
        for value in read_dotenv(root / ".env").values():
            register(value)
            register(url_password(value))


def scrub(text: str) -> str:
    """The text without any registered key value and without Authorization header values."""
    if not isinstance(text, str) or len(text) < MIN_SECRET:     # too short for a key or a header value
        return text
    if _clean(text):
        return text
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    if "://" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    return _AUTH.sub(lambda m: (m.group(1) or "") + REDACTED if m.group(1) else f"Bearer {REDACTED}", text)


def _clean(text: str) -> bool:
    """No registered key and nothing _AUTH could match: plain substring searches, where the regular
    expressions cost about 40 ns a character (a long prompt in a trace). _AUTH ignores case, and so matches
    the dotless and the dotted i (U+0131, U+0130) for "i", which lower() does not map: those go the long way."""
    if any(secret in text for secret in _secrets):
        return False
    lowered = text.lower()
    return "authorization" not in lowered and "bearer" not in lowered and "\u0130" not in text \
        and "\u0131" not in text and "://" not in text


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
