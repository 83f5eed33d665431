"""``docs/split_readme.py`` (which made the docs pages of the one-page README) places
every line, sends a section it does not know to the page before it with a warning,
rewrites anchors and repository links for the page they land on, fails loudly on a
broken link, and refuses to split the front page."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parent.parent


def _splitter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("split_readme", ROOT / "docs" / "split_readme.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["split_readme"] = module
    spec.loader.exec_module(module)
    return module


split_readme = _splitter()

SOURCE = """# zett-agent

Intro.

## Start here (fresh machine)

See [approvals](#approving-tool-calls) and [the bench](bench/README.md#x).

```sh
## not a heading: inside a block
```

## Approving tool calls

Back to [the start](#start-here-fresh-machine).

### A section added later

Text of it, with `[not a link](#nowhere)` in code.

## Durable runs

Done.
"""


def test_every_line_is_placed_and_an_unknown_section_joins_the_one_before(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sections = split_readme.split(SOURCE)
    assert sum(len(s.lines) for s in sections) == len(SOURCE.splitlines())
    pages = {s.heading: s.page for s in sections}
    assert pages["A section added later"] == "tools.md"  # with "Approving tool calls"
    assert pages["Durable runs"] == "durable.md"
    assert "not a heading" not in pages
    assert "'A section added later' is not in the table" in capsys.readouterr().err


def test_links_point_where_the_text_went() -> None:
    pages = split_readme.render(split_readme.split(SOURCE))
    assert "[approvals](tools.md#approving-tool-calls)" in pages["index.md"]
    assert "[the bench](../bench/README.md#x)" in pages["index.md"]
    assert "[the start](index.md#start-here-fresh-machine)" in pages["tools.md"]
    assert "`[not a link](#nowhere)`" in pages["tools.md"]
    assert pages["durable.md"].startswith("# Sessions and durable runs\n")


def test_a_link_to_nothing_fails_the_split() -> None:
    with pytest.raises(split_readme.SplitError, match="#missing"):
        split_readme.render(split_readme.split("# t\n\n## Start here\n\n[x](#missing)\n"))
    with pytest.raises(split_readme.SplitError, match=r"no-such-file\.md"):
        split_readme.render(split_readme.split("# t\n\n## Start here\n\n[x](no-such-file.md)\n"))


def test_the_front_page_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert split_readme.main([str(ROOT / "docs" / "_front.md")]) == 1
    assert "--from-git REV" in capsys.readouterr().err


def test_the_front_page_keeps_the_readme_set_up_commands() -> None:
    front = (ROOT / "docs" / "_front.md").read_text()
    assert (ROOT / "README.md").read_text() == front
    assert len(front.splitlines()) <= 200
    assert "&& python -m pytest -n 2\n```" in front
    assert "pip install -e '.[local]' && zett run --tool-choice get_weather" in front
    with pytest.raises(split_readme.SplitError, match="set-up command"):
        split_readme.check_front("# t\n\n## Start here\n\n```sh\npip install other\n```\n", front)


def test_a_page_opens_with_its_hand_written_intro() -> None:
    source = "# t\n\n## Start here\n\nGo.\n\n## Check how it ended\n\nLike this.\n"
    page = split_readme.render(split_readme.split(source))["stops.md"]
    intro = (ROOT / "docs" / "_intro" / "stops.md").read_text()
    assert page.startswith("# Why the model stopped\n\n" + intro.rstrip("\n") + "\n\n## Check")
