"""OpenAI Live API (``gpt-live[:MODEL]``): see :mod:`.adapter` and :mod:`.events`."""

from runtime.agents.providers.gpt_live.adapter import GptLiveAdapter, make_adapter

__all__ = ["GptLiveAdapter", "make_adapter"]
