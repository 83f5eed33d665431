"""A conformance suite for stop handling (``python -m zett_conformance``).

Cases are data (``conformance/cases/*.json``, schema ``case.schema.json``); an
adapter per runtime (``zett_conformance.adapters``) drives that runtime against a
local replay of each case; the checks and the table are in ``_run`` and ``_table``.
"""

from ._cases import PROTOCOLS, STOP_CLASSES, Case, CaseError, load_cases
from ._replay import ReplayServer
from ._run import CHECKS, Observation, run_cases, score
from ._tools import TOOL_SCHEMA, ToolBox

__all__ = [
    "CHECKS",
    "PROTOCOLS",
    "STOP_CLASSES",
    "TOOL_SCHEMA",
    "Case",
    "CaseError",
    "Observation",
    "ReplayServer",
    "ToolBox",
    "load_cases",
    "run_cases",
    "score",
]
