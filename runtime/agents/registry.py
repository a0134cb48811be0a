"""Agent specs → adapter factories (DESIGN §4: ``scripted:PATH.yaml``, ``baseline``,
``openai-realtime[:MODEL]``, ``gemini-live[:MODEL]``, ``grok[:MODEL]``, ``stepfun[:MODEL]``,
``gpt-live[:MODEL]``).

Provider modules are imported only when their spec is used, so a missing optional SDK never
breaks the others. Each provider module exposes
``make_adapter(model: str | None, env: Mapping[str, str]) -> AgentAdapter``; it must do no I/O
(connecting happens in ``AgentAdapter.connect``).
"""

from __future__ import annotations

import importlib.util

PROVIDER_MODULES: dict[str, str] = {
    "openai-realtime": "runtime.agents.providers.openai_realtime",
    "grok": "runtime.agents.providers.grok",
    "stepfun": "runtime.agents.providers.stepfun",
    "gpt-live": "runtime.agents.providers.gpt_live",
    "gemini-live": "runtime.agents.providers.gemini_live",
}
"""Agent kind → module exposing ``make_adapter``."""


def available(kind: str) -> bool:
    """Whether the provider module for ``kind`` exists in this checkout."""
    module = PROVIDER_MODULES.get(kind)
    if module is None:
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
