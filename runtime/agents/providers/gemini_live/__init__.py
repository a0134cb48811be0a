"""Gemini Live (google-genai Live API) as an evaluated voice agent: ``gemini-live[:MODEL]``.

Environment: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (required at connect),
``APEX_GEMINI_LIVE_URL`` (endpoint origin), ``APEX_GEMINI_LIVE_API_VERSION``,
``APEX_GEMINI_LIVE_CA_FILE`` (PEM to trust, for a proxy or the test fake),
``APEX_GEMINI_LIVE_VOICE``.
"""

from runtime.agents.providers.gemini_live._adapter import (
    DEFAULT_MODEL,
    INPUT_RATE,
    KEY_VARIABLES,
    OUTPUT_RATE,
    GeminiLiveAdapter,
    GeminiLiveSettings,
    make_adapter,
)

__all__ = [
    "DEFAULT_MODEL",
    "INPUT_RATE",
    "KEY_VARIABLES",
    "OUTPUT_RATE",
    "GeminiLiveAdapter",
    "GeminiLiveSettings",
    "make_adapter",
]
