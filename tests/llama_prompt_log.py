"""Stands in for ``python -m zett_agent.model._llama_server`` in the slow local
tests: the same server with zett's mends, and each prompt the model is given
(the chat template's output, as text) appended to the file ``$ZETT_TEST_PROMPT_LOG``
as one JSON line, so a test reads what the model saw, byte for byte. With
``ZETT_TEST_ESCAPING=1`` zett's unescaping is left out (the server as it ships)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from llama_cpp import Llama

from zett_agent.model import _llama_server

complete = Llama.create_completion


def logged(self: Any, prompt: Any, *args: Any, **options: Any) -> Any:
    with open(os.environ["ZETT_TEST_PROMPT_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"prompt": prompt}) + "\n")
    return complete(self, prompt, *args, **options)


Llama.create_completion = logged  # type: ignore[method-assign]
if os.environ.get("ZETT_TEST_ESCAPING") == "1":
    _llama_server.render_unescaped = lambda: None  # type: ignore[assignment]
_llama_server.main(sys.argv[1:])
