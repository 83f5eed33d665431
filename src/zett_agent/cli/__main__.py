"""``python -m zett_agent.cli``: the same as the ``zett`` command."""

from zett_agent.cli._main import main

main()
