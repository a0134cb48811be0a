"""xAI Grok Voice Agent (``grok[:MODEL]``): see :mod:`.adapter` and :mod:`.events`."""

from runtime.agents.providers.grok.adapter import GrokAdapter, make_adapter

__all__ = ["GrokAdapter", "make_adapter"]
