"""Agent specs → adapter factories (DESIGN §4: ``scripted:PATH.yaml``, ``baseline``,
``openai-realtime[:MODEL]``, ``gemini-live[:MODEL]``, ``grok[:MODEL]``, ``stepfun[:MODEL]``,
``gpt-live[:MODEL]``).

Provider modules are imported only when their spec is used, so a missing optional SDK never
breaks the others. Each provider module exposes
``make_adapter(model: str | None, env: Mapping[str, str]) -> AgentAdapter``; it must do no I/O
(connecting happens in ``AgentAdapter.connect``).
"""

from __future__ import annotations

PROVIDER_MODULES: dict[str, str] = {}
"""Agent kind → module path exposing ``make_adapter``. Filled in as providers land."""
