"""The whole public surface of zett_agent, pinned: a change to it is a visible diff.

Public are the import paths listed in ``PUBLIC_MODULES``; every other module is
private (its name or a folder above it starts with ``_``), so it can move without
breaking a host. Each public path's ``__all__`` is its API; ``public_surface.txt``
beside this file lists every name of every public path, one ``module: name`` line
each. After an intended change, rewrite the snapshot and commit the diff with it::

    python tests/test_public_surface.py --update
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

import zett_agent

SNAPSHOT = Path(__file__).with_name("public_surface.txt")

PUBLIC_MODULES = [
    "zett_agent",
    "zett_agent.a2a",  # A2A 1.0: create_a2a_app, A2AAgentTool (the serve and a2a extras)
    "zett_agent.approvals",  # the README's path of the approval names (a re-export)
    "zett_agent.cli",  # the `zett` command (`zett_agent.cli:main`)
    "zett_agent.demo_tools",  # `zett run --tools demo`, used in the README
    "zett_agent.durable",
    "zett_agent.errors",  # the exception tree
    "zett_agent.extensions",
    "zett_agent.extensions.refusal_replay",  # the seed guide's path (a re-export)
    "zett_agent.mcp",
    "zett_agent.model",
    "zett_agent.protocols",
    "zett_agent.serve",
    "zett_agent.sessions",
    "zett_agent.sessions.postgres",  # needs the 'postgres' extra (a re-export)
    "zett_agent.stop",  # the seed API reference's path (zett_agent.stop.StopInfo)
    "zett_agent.testing",
    "zett_agent.tools",
    "zett_agent.vendors",
]

RE_EXPORTS = {
    "zett_agent.approvals",
    "zett_agent.extensions.refusal_replay",
    "zett_agent.sessions.postgres",
}
"""Public only as an old path: no code of their own, every name defined elsewhere."""


def every_module() -> list[str]:
    names = ["zett_agent"]
    for info in pkgutil.walk_packages(zett_agent.__path__, "zett_agent."):
        names.append(info.name)
    return sorted(names)


def is_private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split(".")[1:])


def surface() -> list[str]:
    lines = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in sorted(module.__all__):
            lines.append(f"{module_name}: {name}")
    return lines


def test_every_module_is_private_or_a_pinned_public_path() -> None:
    modules = every_module()
    assert len(modules) > 100
    public = [m for m in modules if not is_private(m)]
    assert sorted(public) == sorted(PUBLIC_MODULES)


def test_the_public_surface_is_the_snapshot() -> None:
    assert surface() == SNAPSHOT.read_text().splitlines(), (
        "the public surface changed: if on purpose, run python tests/test_public_surface.py "
        "--update and commit the diff"
    )


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_name_imports(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert len(set(module.__all__)) == len(module.__all__)
    namespace: dict[str, object] = {}
    exec(f"from {module_name} import {', '.join(module.__all__)}", namespace)
    assert set(module.__all__) <= set(namespace)


@pytest.mark.parametrize("module_name", sorted(RE_EXPORTS))
def test_an_old_path_is_a_re_export_with_no_code(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for name in module.__all__:
        value = getattr(module, name)
        home = getattr(value, "__module__", None)
        assert home != module_name, name  # a constant has no __module__: the source says
    source = Path(module.__file__ or "").read_text()
    assert "def " not in source and "class " not in source


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    SNAPSHOT.write_text("\n".join(surface()) + "\n")
    print(f"wrote {SNAPSHOT} ({len(surface())} names)")
