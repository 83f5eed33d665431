"""``zett doctor`` says how a model would reach its provider: the base URL, the
proxy (credentials never printed) and what chose it, and the CA bundle."""

from __future__ import annotations

from typer.testing import CliRunner

from zett_agent.cli import app

runner = CliRunner()
NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
CLEAN: dict[str, str | None] = dict.fromkeys((*NAMES, *(n.lower() for n in NAMES)))


def _doctor(*args: str, **env: str | None) -> str:
    result = runner.invoke(
        app, ["doctor", *args], env={**CLEAN, "COLUMNS": "120", "SSL_CERT_DIR": None, **env}
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_doctor_names_the_proxy_without_its_credentials_and_the_ca_bundle() -> None:
    out = _doctor(
        "anthropic",
        "ollama",
        HTTPS_PROXY="http://me:hunter2@proxy.corp:3128",
        NO_PROXY="localhost",
        SSL_CERT_FILE="/etc/corp/ca.pem",
    )
    anthropic, _, ollama = out.partition("ollama")
    assert "https://api.anthropic.com" in anthropic
    assert "proxy: http://***@proxy.corp:3128 (from: environment)" in anthropic
    assert "CA: SSL_CERT_FILE=/etc/corp/ca.pem" in anthropic
    assert "proxy: none (direct)" in ollama  # NO_PROXY=localhost
    assert "hunter2" not in out and "me:" not in out


def test_doctor_without_variables_uses_certifi_and_connects_directly() -> None:
    out = _doctor("openai", SSL_CERT_FILE=None)
    assert "proxy: none (direct)" in out and "CA: certifi " in out


def test_doctor_on_an_unknown_provider_says_so() -> None:
    assert "unknown provider 'nope'" in _doctor("nope")
