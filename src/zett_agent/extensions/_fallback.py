"""Retry a refused request on another model — only when the host asks for it.

The runtime never does this by itself (a refusal is reported, not worked
around). A host that wants Anthropic's client-side fallback adds::

    def make(name: str) -> Model:
        return Model("anthropic", name)            # the host's credentials

    agent = await create_agent(model, extensions=[RefusalFallback(make)])

On a REFUSAL the same request is sent to ``model`` if configured, else to the
refusal's ``stop.recommended_model``; with neither, or when that is the model
that just refused, nothing happens and the refusal is reported as usual. The
fallback model then answers the rest of the run. At most ``max_fallbacks``
times per run (1).

What is stored: both attempts. The refused answer stays in history with its
stop REFUSAL, ``detail["superseded"] = True`` and ``detail["recovery"] ==
{"by": "RefusalFallback", "action": "retry", "model": <fallback>, "refused_model":
<original>}`` — it is never sent to a model again, as Anthropic advises for
refused output. The fallback's answer follows it, with its own ``model``; the
run's final message is that answer (stop None when it finished). Models the
factory made are closed by :meth:`RefusalFallback.aclose`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from zett_agent._recovery import RecoveryContext, RetryRequest
from zett_agent.extensions._extension import Extension
from zett_agent.model._model import ModelClient
from zett_agent.stop import StopReason

__all__ = ["RefusalFallback"]


class RefusalFallback(Extension):
    """On a refusal, send the request again to a fallback model (opt-in).

    Args:
        models: makes a model object from a model name (it needs credentials,
            which the host has).
        model: the fallback model's name; None: the refusal's ``recommended_model``.
        max_fallbacks: fallbacks per run.
    """

    def __init__(
        self,
        models: Callable[[str], ModelClient],
        *,
        model: str | None = None,
        max_fallbacks: int = 1,
    ) -> None:
        self.models = models
        self.model = model
        self.max_fallbacks = max_fallbacks
        self._made: dict[str, ModelClient] = {}

    def recover(self, context: RecoveryContext) -> RetryRequest | None:
        if context.response is None or context.stop.reason is not StopReason.REFUSAL:
            return None
        if context.made_by(self) >= self.max_fallbacks:
            return None
        name = self.model or context.stop.recommended_model
        if not name or name == context.request.model:
            return None
        fallback = self._made.get(name)
        if fallback is None:
            fallback = self._made[name] = self.models(name)
        return RetryRequest(
            replace(context.request, model=fallback.name),
            model=fallback,
            note={"model": fallback.name, "refused_model": context.request.model},
        )

    async def aclose(self) -> None:
        """Close the models the factory made."""
        made, self._made = self._made, {}
        for model in made.values():
            await model.aclose()
