"""OpenAI realtime (``openai-realtime[:MODEL]``): see :mod:`.adapter` and :mod:`.events`."""

from runtime.agents.providers.openai_realtime.adapter import (
    OpenAIRealtimeAdapter,
    make_adapter,
)

__all__ = ["OpenAIRealtimeAdapter", "make_adapter"]
