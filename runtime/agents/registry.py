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
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class AgentKind:
    """One kind of agent the benchmark can evaluate: how its spec is spelled, where its
    adapter lives, which environment variables hold its key, and which specs the demo
    offers."""

    kind: str
    group: Literal["scripted", "baseline", "provider"]
    module: str = ""
    """Provider kinds: the module exposing ``make_adapter``."""
    keys: tuple[str, ...] = ()
    """Provider kinds: the environment variables that hold the API key (any one of them)."""
    demo_specs: tuple[str, ...] = ()
    """The specs the demo's agent picker offers (scripted: one per task script)."""


AGENTS: tuple[AgentKind, ...] = (
    AgentKind("scripted", "scripted"),
    AgentKind("baseline", "baseline", demo_specs=("baseline", "baseline:llm")),
    AgentKind("openai-realtime", "provider", "runtime.agents.providers.openai_realtime",
              ("OPENAI_API_KEY",), ("openai-realtime",)),
    AgentKind("gpt-live", "provider", "runtime.agents.providers.gpt_live",
              ("OPENAI_API_KEY",), ("gpt-live",)),
    AgentKind("grok", "provider", "runtime.agents.providers.grok",
              ("XAI_API_KEY",), ("grok",)),
    AgentKind("stepfun", "provider", "runtime.agents.providers.stepfun",
              ("STEPFUN_API_KEY",), ("stepfun",)),
    AgentKind("gemini-live", "provider", "runtime.agents.providers.gemini_live",
              ("GEMINI_API_KEY", "GOOGLE_API_KEY"), ("gemini-live",)),
)
"""Every agent kind, in the order the demo lists them (docs/adapters.md)."""

PROVIDERS: tuple[AgentKind, ...] = tuple(a for a in AGENTS if a.group == "provider")

PROVIDER_MODULES: dict[str, str] = {a.kind: a.module for a in PROVIDERS}
"""Agent kind → module exposing ``make_adapter``."""

BASELINE_SPECS: tuple[str, ...] = next(a.demo_specs for a in AGENTS if a.group == "baseline")

AGENT_SPEC_HELP = (
    "scripted:PATH.yaml (a script file), scripted:NAME (tasks/<id>/scripts/NAME.yaml for each "
    "task, e.g. scripted:oracle), baseline (local cascaded agent, rule policy), baseline:llm "
    "(its policy an OpenAI-compatible chat model: APEX_BASELINE_LLM_URL/_MODEL)"
)
"""What an agent spec may be, for error messages (the provider kinds when installed)."""


def available(kind: str) -> bool:
    """Whether the provider module for ``kind`` exists in this checkout."""
    module = PROVIDER_MODULES.get(kind)
    if module is None:
        return False
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
