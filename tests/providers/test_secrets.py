"""scrub(): every registered key value and every Authorization header value is gone."""
from pytest_aqven.providers import secrets
from pytest_aqven.providers.base import ProviderError


def test_scrub_removes_registered_values_and_authorization_headers():
    secrets.register("sk-live-abcdef123456")
    secrets.register("abc")              # too short to be a key: would scrub ordinary words
    text = ("failed with key sk-live-abcdef123456 (again: xsk-live-abcdef123456x); "
            "headers {'Authorization': 'Bearer tok-unregistered-999'}, authorization=Basic dXNlcjpw abc")
    out = secrets.scrub(text)
    assert "sk-live-abcdef123456" not in out and "tok-unregistered-999" not in out and "dXNlcjpw" not in out
    assert out.count(secrets.REDACTED) == 4 and out.endswith(" abc")
    assert secrets.scrub("Bearer eyJhbGciOi.x.y") == f"Bearer {secrets.REDACTED}"
    assert secrets.scrub_data({"a": ["sk-live-abcdef123456", 3]}) == {"a": [secrets.REDACTED, 3]}


def test_provider_errors_are_scrubbed_where_they_are_created():
    secrets.register("sk-live-created-0001")
    assert "sk-live-created-0001" not in str(ProviderError("provider_error", "echo sk-live-created-0001"))


def test_dotenv_lines(tmp_path):
    (tmp_path / ".env").write_text("A=1\n# c\nexport B = \"two words\"\nbad line\nC='x=y'\n"
                                   "KEY=sk-abc123 # staging key\nD=\"a # not a comment\"\nE=${A}x\n")
    assert secrets.read_dotenv(tmp_path / ".env") == {"A": "1", "B": "two words", "C": "x=y", "KEY": "sk-abc123",
                                                      "D": "a # not a comment", "E": "1x"}
    assert secrets.read_dotenv(tmp_path / "absent.env") == {}


def test_scrub_data_reaches_every_string_of_a_record_and_keeps_every_other_value():
    secrets.register("sk-live-nested-0042")
    record = {"n": 1, "x": 0.5, "ok": True, "none": None, "short": "ab", "trace": {"nodes": [
        {"output": {"text": "key sk-live-nested-0042"}, "calls": [("Bearer tok-in-a-tuple-77", 2.0)]}]}}
    out = secrets.scrub_data(record)
    assert "sk-live-nested-0042" not in repr(out) and "tok-in-a-tuple-77" not in repr(out)
    assert out["trace"]["nodes"][0]["calls"] == [(f"Bearer {secrets.REDACTED}", 2.0)]
    assert {k: out[k] for k in ("n", "x", "ok", "none", "short")} == {"n": 1, "x": 0.5, "ok": True, "none": None,
                                                                     "short": "ab"}
    assert secrets.scrub("sk-li") == "sk-li"     # shorter than any key or header value: left as it is


def test_text_that_skips_the_regular_expressions_is_text_they_would_leave_alone(monkeypatch):
    secrets.register("sk-live-quick-7777")
    texts = ["a long prompt " * 500, "AUTHORIZATION: token-upper-123", "authorızation: token-dotless-1",
             "x-bearer-less", "BeArEr tok-mixed-case-55", "prefix sk-live-quick-7777 suffix",
             "the Kelvin sign \u212a and a long s \u017f", "İ dotted authorİzation = value-dotted-2", "plain text"]
    quick = [secrets.scrub(t) for t in texts]
    monkeypatch.setattr(secrets, "_clean", lambda text: False)      # every text the long way
    assert quick == [secrets.scrub(t) for t in texts]
    assert sum(secrets.REDACTED in t for t in quick) == 5
