"""Keys the plugin never resolved (read from the environment by a function provider or a vendor SDK, or
sitting in `.env`) are scrubbed from every stored or shown text: database, junit, html, terminal."""
from __future__ import annotations

from pytest_aqven.providers import secrets

from . import faults

ENV_KEY = "sk-proj-fault-7c4b1e9d2a6f3081"
DOTENV_KEY = "dotenv-value-51f0a2c9e4"
LEAKY = faults.ENV_KEY_LEAK


def test_the_secret_looking_variables_and_dotenv_values_are_remembered(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text(f"ANYTHING={DOTENV_KEY}\n")
    monkeypatch.setenv("MY_API_KEY", "sk-env-api-key-0001")
    monkeypatch.setenv("GH_TOKEN", "ghp_env_token_0002")
    monkeypatch.setenv("DATABASE_PASSWORD_X", "hunter2-but-longer")
    monkeypatch.setenv("PLAIN_SETTING", "not-a-secret-at-all")
    secrets.register_environment(tmp_path)
    text = secrets.scrub(f"a sk-env-api-key-0001 b ghp_env_token_0002 c hunter2-but-longer d {DOTENV_KEY} "
                         "e not-a-secret-at-all")
    assert text == (f"a {secrets.REDACTED} b {secrets.REDACTED} c {secrets.REDACTED} d {secrets.REDACTED} "
                    "e not-a-secret-at-all")


def test_a_key_from_the_environment_in_a_providers_exception_reaches_no_report(tmp_path, xdist):
    root = faults.make(tmp_path, cases=8, extra=LEAKY)
    (root / ".env").write_text(f"UNUSED_BY_THE_PROJECT={DOTENV_KEY}\n")
    result = faults.run(tmp_path, *xdist, "--junitxml", "out.xml", "--html", "out.html",
                        env={"OPENAI_API_KEY": ENV_KEY, "SERVICE_TOKEN": "tok-service-9a8b7c6d",
                             "DB_PASSWORD_MAIN": "pw-main-5e4d3c2b"})
    records = [r[0] for r in faults.query(root, "SELECT record FROM aqven_series_attempts")]
    assert records and all("the vendor SDK refused key [REDACTED]" in r for r in records)
    places = {"database": "\n".join(records), "junit": (tmp_path / "out.xml").read_text(),
              "html": (tmp_path / "out.html").read_text(), "terminal": result.stdout + result.stderr}
    for where, text in places.items():
        for key in (ENV_KEY, "tok-service-9a8b7c6d", "pw-main-5e4d3c2b", DOTENV_KEY):
            assert key not in text, where
    assert "the vendor SDK refused key [REDACTED]" in result.stdout
