"""A2A 1.0 (agent-to-agent): a zett agent as an A2A server, a remote agent as a tool.

Optional extra ``a2a`` (the server needs Starlette and uvicorn, as ``zett serve``;
``a2a-sdk`` 1.3.0, the protocol's official package, is what the tests check both
sides with). zett's own code speaks the JSON-RPC binding over httpx and Starlette.

* :func:`create_a2a_app` (:mod:`._server`): the agent card and ``SendMessage``,
  ``SendStreamingMessage``, ``GetTask``, ``CancelTask``; contexts are sessions; a
  refusal is ``rejected``, a cut or interrupted answer ``failed``, calls waiting for
  approval ``input-required``, always with the stop in the status message's
  ``metadata.zett.stop`` (:data:`SERVER_STATES`).
* :class:`A2AAgentTool` (:mod:`._client`): a remote agent as a subagent tool whose
  remote state is the subagent's stop (:data:`CLIENT_STOPS`).
"""

from ._client import A2AAgentTool, A2AError, Waiting
from ._server import create_a2a_app
from ._wire import CLIENT_STOPS, SERVER_STATES, stop_for_state, task_state

__all__ = [
    "CLIENT_STOPS",
    "SERVER_STATES",
    "A2AAgentTool",
    "A2AError",
    "Waiting",
    "create_a2a_app",
    "stop_for_state",
    "task_state",
]
