"""Shared test set-up: every ``async def`` test runs under anyio (asyncio backend,
``anyio_mode = "auto"`` in pyproject.toml);
``RECORDINGS`` is the folder of recorded provider traffic copied from
``../shared/corpus`` (each file's source is in ``tests/recordings/SOURCES.md``)."""

from __future__ import annotations

from pathlib import Path

import pytest

RECORDINGS = Path(__file__).parent / "recordings"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see real keys or base URLs from the developer's environment."""
    import os

    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_BASE_URL")) or name in {"OLLAMA_HOST"}:
            monkeypatch.delenv(name, raising=False)
