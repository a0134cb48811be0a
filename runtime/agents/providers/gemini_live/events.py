"""Wire models for the Gemini Live API (``BidiGenerateContent``) messages this adapter reads.

The server speaks JSON with lowerCamelCase keys; every message is an object with exactly one
top-level key naming its kind (``setupComplete``, ``serverContent``, ``toolCall``, …). A message
whose kind is not listed here raises :class:`WireProtocolError` instead of vanishing: the
google-genai SDK's own ``receive()`` silently strips unknown fields, which would hide a protocol
drift behind a run that merely looks like a quiet agent.

Client messages are built and sent by the SDK (``send_realtime_input``, ``send_tool_response``),
so only the server side is modelled here. The top-level kinds are exactly the fields of
google-genai's ``types.LiveServerMessage``; kinds the adapter does not act on (usage,
voice-activity signals) are still listed, so that they are recognised and ignored on purpose.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from runtime.agents.errors import (
    ErrorCategory,
    UnknownWireEvent,
    WireProtocolError,
    category_for_http_status,
)

__all__ = [
    "Blob",
    "Content",
    "ErrorReport",
    "FunctionCall",
    "GoAway",
    "Part",
    "ServerContent",
    "ServerMessage",
    "SessionResumptionUpdate",
    "SetupComplete",
    "ToolCall",
    "ToolCallCancellation",
    "Transcription",
    "WireProtocolError",
    "close_category",
    "error_category",
    "parse_server_message",
]


class _Wire(BaseModel):
    """Payload objects: known fields typed, fields added by newer API versions ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )


class Blob(_Wire):
    mime_type: str = ""
    data: str = ""

    def pcm_bytes(self) -> bytes:
        try:
            return base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError):
            try:
                return base64.urlsafe_b64decode(self.data)
            except (binascii.Error, ValueError) as exc:
                raise WireProtocolError(f"inlineData.data is not base64: {exc}") from None

    def sample_rate(self, default: int) -> int:
        """The ``rate=`` parameter of an ``audio/pcm`` MIME type (``default`` if absent)."""
        match = re.search(r"rate=(\d+)", self.mime_type)
        return int(match.group(1)) if match else default

    @property
    def is_pcm(self) -> bool:
        return self.mime_type.split(";")[0].strip().lower() in ("audio/pcm", "audio/l16")


class Part(_Wire):
    text: str | None = None
    inline_data: Blob | None = None
    thought: bool | None = None


class Content(_Wire):
    role: str | None = None
    parts: list[Part] = Field(default_factory=list)


class Transcription(_Wire):
    text: str | None = None
    finished: bool | None = None


class ServerContent(_Wire):
    """``serverContent`` (google-genai ``LiveServerContent``); the adapter acts on the model's
    turn, its output transcription, ``interrupted`` and ``turnComplete``. The rest is read and
    ignored: grounding and URL-context metadata (tools it does not configure) arrive as extra
    fields and are dropped with them."""

    model_turn: Content | None = None
    turn_complete: bool | None = None
    interrupted: bool | None = None
    generation_complete: bool | None = None
    input_transcription: Transcription | None = None
    interim_input_transcription: Transcription | None = None
    output_transcription: Transcription | None = None
    waiting_for_input: bool | None = None
    turn_complete_reason: str | None = None
    interaction_status: str | None = None


class FunctionCall(_Wire):
    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolCall(_Wire):
    function_calls: list[FunctionCall] = Field(default_factory=list)


class ToolCallCancellation(_Wire):
    ids: list[str] = Field(default_factory=list)


class SetupComplete(_Wire):
    session_id: str | None = None


class GoAway(_Wire):
    """``goAway`` (``LiveServerGoAway``): the server will terminate this connection once
    ``timeLeft`` (a protobuf ``Duration`` in JSON, e.g. ``"50s"`` or ``"1.500s"``) has passed."""

    time_left: str | None = None

    def time_left_ms(self) -> int | None:
        """``timeLeft`` in milliseconds; None when absent or not a duration."""
        match = re.fullmatch(r"\s*(\d+(?:\.\d*)?)s\s*", self.time_left or "")
        return round(float(match.group(1)) * 1000) if match else None


class SessionResumptionUpdate(_Wire):
    """``sessionResumptionUpdate`` (``LiveServerSessionResumptionUpdate``), sent only when the
    setup asked for ``sessionResumption``. ``newHandle`` is empty when ``resumable`` is false
    (while the model generates or runs function calls)."""

    new_handle: str | None = None
    resumable: bool | None = None
    last_consumed_client_message_index: int | None = None


class ErrorReport(_Wire):
    """An error object in place of a message (``{"code", "message", "status"}``, or the same
    under ``"error"``): the SDK's receive() raises it as an ``APIError``. The Live API mostly
    reports errors by closing the socket (:func:`close_category`)."""

    code: int | None = None
    message: str = ""
    status: str | None = None


class ServerMessage(BaseModel):
    """One server message. Unknown top-level kinds are rejected (``extra="forbid"``)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )

    setup_complete: SetupComplete | None = None
    server_content: ServerContent | None = None
    tool_call: ToolCall | None = None
    tool_call_cancellation: ToolCallCancellation | None = None
    go_away: GoAway | None = None
    session_resumption_update: SessionResumptionUpdate | None = None
    error: ErrorReport | None = None
    # Recognised, deliberately not acted on:
    usage_metadata: dict[str, Any] | None = None
    voice_activity_detection_signal: dict[str, Any] | None = None
    voice_activity: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _not_empty(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data:
            raise ValueError("empty server message")
        return data


KNOWN_KINDS = tuple(to_camel(name) for name in ServerMessage.model_fields)
_ERROR_FIELDS = frozenset({"code", "message", "status", "details"})


def parse_server_message(raw: str | bytes) -> ServerMessage:
    """Parse one websocket frame from the server; anything unknown raises a protocol error."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise WireProtocolError(f"server frame is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise WireProtocolError(f"server frame is not a JSON object: {str(data)[:80]}")
    if data and set(data) <= _ERROR_FIELDS and ("code" in data or "message" in data):
        data = {"error": data}
    unknown = sorted(
        k for k in data if k not in KNOWN_KINDS and k not in ServerMessage.model_fields
    )
    if unknown:
        raise UnknownWireEvent(
            ",".join(unknown),
            f"unknown server message kind {', '.join(unknown)} (known: {', '.join(KNOWN_KINDS)})",
        )
    try:
        return ServerMessage.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "message"
        raise WireProtocolError(f"malformed server message at {where}: {first['msg']}") from None


# ------------------------------------------------------------------ errors on the wire

_AUTH = ("api key", "api_key", "unauthenticated", "permission_denied", "permission denied",
         "credential", "unauthorized")
_QUOTA = ("exceeded your current quota", "billing", "insufficient quota")
_RATE = ("resource_exhausted", "resource has been exhausted", "rate limit", "rate-limit",
         "too many requests", "concurrent")


def _hint(text: str) -> ErrorCategory | None:
    text = text.lower()
    if any(k in text for k in _AUTH):
        return ErrorCategory.AUTHENTICATION
    if any(k in text for k in _QUOTA):
        return ErrorCategory.QUOTA
    if any(k in text for k in _RATE):
        return ErrorCategory.RATE_LIMIT
    if "quota" in text:
        return ErrorCategory.QUOTA
    return None


def close_category(code: int | None, reason: str) -> ErrorCategory:
    """Categorize a websocket close (the Live API reports errors as close frames).

    The reason text decides first (the API reuses 1007/1008/1011 for several causes); the
    close code decides otherwise. ``None`` or 1006 means the connection dropped without a
    close frame.
    """
    hint = _hint(reason)
    if hint is not None:
        return hint
    if code is None or code in (1000, 1001, 1006):
        return ErrorCategory.CONNECTIVITY
    if code in (1002, 1003, 1007, 1008, 1009, 1010):
        return ErrorCategory.PROTOCOL
    return ErrorCategory.SERVER


_STATUS: dict[str, ErrorCategory] = {
    "UNAUTHENTICATED": ErrorCategory.AUTHENTICATION,
    "PERMISSION_DENIED": ErrorCategory.AUTHENTICATION,
    "RESOURCE_EXHAUSTED": ErrorCategory.RATE_LIMIT,
    "INTERNAL": ErrorCategory.SERVER,
    "UNAVAILABLE": ErrorCategory.SERVER,
    "DEADLINE_EXCEEDED": ErrorCategory.SERVER,
    "UNKNOWN": ErrorCategory.SERVER,
}


def error_category(report: ErrorReport) -> ErrorCategory:
    """Categorize an in-band error object: message text, then gRPC status, then HTTP code;
    anything unrecognised (INVALID_ARGUMENT, NOT_FOUND, …) is ``protocol``."""
    hint = _hint(report.message)
    if hint is not None:
        return hint
    if report.status and report.status.upper() in _STATUS:
        return _STATUS[report.status.upper()]
    return category_for_http_status(report.code or 0) or ErrorCategory.PROTOCOL
