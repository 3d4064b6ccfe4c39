"""Keys the plugin never resolved (read from the environment by a function provider or a vendor SDK, or
sitting in `.env`) are scrubbed from every stored or shown text: database, junit, html, terminal."""
from __future__ import annotations

from pytest_aqven.providers import secrets

from .. import faults

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


# Secrets under names and in forms the name patterns of old missed (a canary each), raised in a provider's error
CANARIES = {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLE", "API_KEY": "plainapikey-41d2c9",
            "AZURE_OPENAI_KEY": "azure-canary-0e6b3f", "SECRET_KEY": "django-canary-8c1d77",
            "GITHUB_PAT": "github_pat_canary_5a9f", "PLAIN_SETTING": "Zq8LmN2pRt5VxY7bKc3H",     # shaped like a token
            "SIGNING_KEY": "ab+cd/ef=gh+canary42"}                                           # +/= URL-encoded below
DATABASE_URL = "postgresql://app:pw-canary-3b7e@db.internal/app"
SHAPED_LEAK = '''
    if "fine" in text:
        from urllib.parse import quote
        env = os.environ
        raise RuntimeError("refused: " + " ".join(env[name] for name in (
            "AWS_SECRET_ACCESS_KEY", "API_KEY", "AZURE_OPENAI_KEY", "SECRET_KEY", "GITHUB_PAT", "PLAIN_SETTING"))
            + " url " + env["DATABASE_URL"] + " encoded " + quote(env["SIGNING_KEY"], safe="")
            + " json " + __import__("json").dumps({"k": env["SIGNING_KEY"] + '"'}))
'''


def test_secrets_by_other_names_and_shapes_in_every_encoding_reach_no_report(tmp_path, xdist):
    root = faults.make(tmp_path, cases=8, extra=SHAPED_LEAK)
    result = faults.run(tmp_path, *xdist, "--junitxml", "out.xml", "--html", "out.html", "--aqven-json", "out.json",
                        env={**CANARIES, "DATABASE_URL": DATABASE_URL})
    records = [r[0] for r in faults.query(root, "SELECT record FROM aqven_series_attempts")]
    assert records and all("refused: [REDACTED]" in r for r in records)
    places = {"database": "\n".join(records), "junit": (tmp_path / "out.xml").read_text(),
              "html": (tmp_path / "out.html").read_text(), "json": (tmp_path / "out.json").read_text(),
              "terminal": result.stdout + result.stderr}
    encoded = "ab%2Bcd%2Fef%3Dgh%2Bcanary42"
    for where, text in places.items():
        for value in (*CANARIES.values(), "pw-canary-3b7e", encoded):
            assert value not in text, (where, value)
    assert "url postgresql://app:[REDACTED]@db.internal/app" in result.stdout


def test_a_url_password_is_scrubbed_by_its_shape_and_ordinary_values_are_kept(monkeypatch):
    assert secrets.scrub("connect postgresql://u:hunter-22@h/db failed") == f"connect postgresql://u:{secrets.REDACTED}@h/db failed"
    assert secrets.scrub("see https://example.com:8443/path@x and /work/main") == \
        "see https://example.com:8443/path@x and /work/main"
    monkeypatch.setenv("REPO_PATH", "/work/some/checkout/folder")     # a path, a digest, a uuid: no token's shape
    monkeypatch.setenv("GIT_SHA", "3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39")
    monkeypatch.setenv("RUN_ID", "8c5f198c-4b1e-4f7a-9d2c-1e0b7a6f5d4c")
    secrets.register_environment()
    kept = "/work/some/checkout/folder 3f2a9c1e0b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 8c5f198c-4b1e-4f7a-9d2c-1e0b7a6f5d4c"
    assert secrets.scrub(kept) == kept
