"""What the OpenAI realtime protocol and its look-alikes (xAI Grok, StepFun) share.

Wire models
    The payloads coincide across the three providers even where the event *names* differ
    (OpenAI GA and xAI say ``response.output_audio.delta``; StepFun, like OpenAI's beta,
    ``response.audio.delta``). So the models below describe payload shapes, and each
    provider's ``events.py`` holds a :class:`Catalog`: event type → model, for every server
    event that provider documents. :meth:`Catalog.parse` looks the ``type`` up; a type the
    catalog does not list raises :class:`~runtime.agents.errors.WireProtocolError` instead of
    vanishing. Events a provider documents but the adapter does not act on are listed as
    :class:`Ignored`, on purpose and by name.

Adapter
    :class:`OpenAIStyleAdapter` holds the response lifecycle these protocols share:

    * **Tool calls** come from ``response.function_call_arguments.done`` (call id, name, JSON
      arguments); the OpenAI *beta* protocol (StepFun) leaves the name out of that event, so
      it is taken from the call's ``response.output_item.added``/``.done`` item. Each result
      goes back as a ``function_call_output`` conversation item.
    * **One continuation per batch of tool calls** (D.2, Grok's parallel-call hang): a single
      ``response.create`` is sent only once *every* call of the response has its output and
      the response itself is done.
    * **``response.create`` is coalesced against the active response** (D.2, OpenAI's
      ``conversation_already_has_active_response``): a response counts as active from our
      ``response.create`` (or the server's ``response.created``) until ``response.done``; a
      create wanted meanwhile is deferred to that ``response.done``, never sent twice.
    * **Barge-in**: on the server's ``input_audio_buffer.speech_started`` while agent audio
      is audible, emit ``Interrupted``; the rest of that response's audio and transcript is
      dropped; :meth:`~._realtime.RealtimeAdapter.truncate_item` tells the provider what was
      heard (OpenAI, xAI: ``conversation.item.truncate``), clamped to the audio received for
      that item and never for an item whose audio we did not receive (the provider refuses
      both with an error). Providers without server turn detection detect the barge-in on the
      client (StepFun).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.agents.base import (
    Interrupted,
    ResponseDone,
    ToolCallRequest,
    TranscriptDelta,
    TranscriptDone,
)
from runtime.agents.errors import (
    ErrorCategory,
    ProviderError,
    UnknownWireEvent,
    WireProtocolError,
    provider_error,
)
from runtime.agents.providers._realtime import GatedRealtimeAdapter, decode_pcm16

# --------------------------------------------------------------------------- wire models


class WireEvent(BaseModel):
    """A server event. Fields a newer API version adds are kept (``extra="allow"``) but not
    required; the fields the adapter reads are typed and validated."""

    model_config = ConfigDict(extra="allow")
    type: str
    event_id: str | None = None


class Ignored(WireEvent):
    """A documented server event the adapter has no use for (listed by name, not guessed)."""


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="allow")
    message: str = ""
    type: str = ""
    code: str | None = None
    param: str | None = None
    event_id: str | None = None
    """The client event that caused the error, when the provider says."""


class ErrorEvent(WireEvent):
    error: ErrorDetail


class SessionEvent(WireEvent):
    session: dict[str, Any] = Field(default_factory=dict)


class SpeechStarted(WireEvent):
    audio_start_ms: int = 0
    item_id: str = ""


class ResponseStatusError(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str | None = None
    code: str | None = None
    message: str | None = None


class ResponseStatusDetails(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str | None = None
    reason: str | None = None
    error: ResponseStatusError | None = None


class ResponseRef(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = ""
    status: str | None = None
    status_details: ResponseStatusDetails | None = None


class ResponseLifecycle(WireEvent):
    """``response.created`` / ``response.done``."""

    response: ResponseRef


class AudioDeltaEvent(WireEvent):
    response_id: str = ""
    item_id: str
    delta: str


class AudioDoneEvent(WireEvent):
    response_id: str = ""
    item_id: str = ""


class TranscriptDeltaEvent(WireEvent):
    response_id: str = ""
    item_id: str = ""
    delta: str


class TranscriptDoneEvent(WireEvent):
    response_id: str = ""
    item_id: str = ""
    transcript: str | None = None
    """Absent in xAI's event as pipecat models it (``src/pipecat/services/xai/realtime/
    events.py``): the adapter then uses the item's deltas."""


class FunctionCallArgumentsDone(WireEvent):
    response_id: str = ""
    item_id: str = ""
    call_id: str
    name: str = ""
    """GA and xAI name the function here; the beta protocol (StepFun) does not."""
    arguments: str


class OutputItem(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = ""
    type: str = ""
    call_id: str | None = None
    name: str | None = None


class OutputItemEvent(WireEvent):
    """``response.output_item.added`` / ``.done``: read for function call names."""

    response_id: str = ""
    item: OutputItem


class Catalog:
    """Server event type → wire model, for one provider. Unknown types raise."""

    def __init__(self, provider: str, models: Mapping[str, type[WireEvent]]) -> None:
        self.provider = provider
        self.models = dict(models)

    def parse(self, raw: str | bytes) -> WireEvent:
        if isinstance(raw, bytes):
            raise WireProtocolError(f"{self.provider} sent a binary frame ({len(raw)} bytes)")
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise WireProtocolError(
                f"{self.provider} sent a frame that is not JSON: {exc}"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            raise WireProtocolError(
                f"{self.provider} sent a message without a type: {raw[:200]!r}"
            )
        model = self.models.get(data["type"])
        if model is None:
            raise UnknownWireEvent(
                data["type"],
                f"{self.provider} sent an unknown event type {data['type']!r} "
                "(not in this adapter's wire models; the protocol may have changed)",
            )
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise WireProtocolError(
                f"{self.provider} sent a malformed {data['type']!r} event: "
                + "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                            for e in exc.errors())
            ) from None


def ignored(*names: str) -> dict[str, type[WireEvent]]:
    return dict.fromkeys(names, Ignored)


def handled(audio: str = "response.output_audio") -> dict[str, type[WireEvent]]:
    """The server events every OpenAI-style protocol here acts on. ``audio`` is the prefix of
    its audio and audio-transcript events: ``response.output_audio`` (OpenAI GA, xAI) or
    ``response.audio`` (the beta names StepFun keeps). What each provider may also send and
    we ignore stays listed per provider (:func:`ignored`)."""
    return {
        "error": ErrorEvent,
        "session.created": SessionEvent,
        "session.updated": SessionEvent,
        "input_audio_buffer.speech_started": SpeechStarted,
        "response.created": ResponseLifecycle,
        "response.done": ResponseLifecycle,
        f"{audio}.delta": AudioDeltaEvent,
        f"{audio}.done": AudioDoneEvent,
        f"{audio}_transcript.delta": TranscriptDeltaEvent,
        f"{audio}_transcript.done": TranscriptDoneEvent,
        "response.function_call_arguments.done": FunctionCallArgumentsDone,
        "response.output_item.added": OutputItemEvent,
        "response.output_item.done": OutputItemEvent,
    }


# --------------------------------------------------------------------------- client messages


class ClientEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: str
    event_id: str | None = None


class InputAudioBufferAppend(ClientEvent):
    type: Literal["input_audio_buffer.append"] = "input_audio_buffer.append"
    audio: str


class InputAudioBufferCommit(ClientEvent):
    type: Literal["input_audio_buffer.commit"] = "input_audio_buffer.commit"


class FunctionCallOutputItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str


class ConversationItemCreate(ClientEvent):
    type: Literal["conversation.item.create"] = "conversation.item.create"
    item: FunctionCallOutputItem


class ResponseCreate(ClientEvent):
    type: Literal["response.create"] = "response.create"


class ResponseCancel(ClientEvent):
    type: Literal["response.cancel"] = "response.cancel"


class ConversationItemTruncate(ClientEvent):
    type: Literal["conversation.item.truncate"] = "conversation.item.truncate"
    item_id: str
    content_index: int = 0
    audio_end_ms: int


def function_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runtime's tool schemas as flat realtime function definitions
    (``{type: function, name, description, parameters}``)."""
    return [
        {
            "type": "function", "name": t["name"], "description": t.get("description", ""),
            "parameters": t.get("parameters", {"type": "object", "properties": {}}),
        }
        for t in tools
    ]


def parse_arguments(raw: str) -> dict[str, Any]:
    """A tool call's JSON arguments; garbled ones are passed on under ``_unparsed_arguments`` so
    the tool call is still logged and the Workbench answers the model with an error."""
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return {"_unparsed_arguments": raw}
    return args if isinstance(args, dict) else {"_unparsed_arguments": raw}


# --------------------------------------------------------------------------- the adapter


class OpenAIStyleAdapter(GatedRealtimeAdapter):
    """Response lifecycle, tool calls and barge-in for OpenAI-style realtime protocols.

    Subclasses set :attr:`catalog` and the event names below, and implement the session
    handshake (:meth:`start_session`) and :meth:`endpoint`.
    """

    catalog: ClassVar[Catalog]
    """Server event type → wire model; the names differ per provider, the payloads do not."""
    server_vad: ClassVar[bool] = True
    """Barge-in comes from the server's ``input_audio_buffer.speech_started``."""
    cancel_on_barge_in: ClassVar[bool] = False
    """Send ``response.cancel`` on a barge-in (when the server does not cancel by itself)."""
    truncates: ClassVar[bool] = True
    """Tell the provider what was heard (``conversation.item.truncate``) after a barge-in."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._response_id = ""
        self._muted: set[str] = set()
        """Responses interrupted by a barge-in: their remaining audio is dropped."""
        self._spoken: dict[str, list[str]] = {}
        """Transcript deltas per item, for a ``transcript.done`` that carries no text."""
        self._audio_response: dict[str, str] = {}
        """Audio item id → response id, for muting the item that was playing."""
        self._last_audio_item = ""
        self._call_names: dict[str, str] = {}
        """Function call id → name, from the calls' output items."""
        self._item_samples: dict[str, int] = {}
        """Audio item id → samples received for it (at the provider's output rate)."""

    # ------------------------------------------------------------------ wire plumbing

    def parse(self, raw: str | bytes) -> WireEvent:
        return self.catalog.parse(raw)

    def audio_message(self, audio_b64: str) -> InputAudioBufferAppend:
        return InputAudioBufferAppend(audio=audio_b64)

    def session_error(self, event: WireEvent) -> ProviderError | None:
        """A rejected session setup, as a fatal error (``None`` if ``event`` is not one)."""
        if isinstance(event, ErrorEvent):
            err = event.error
            rejected = provider_error(
                f"{self.settings.kind} rejected the session setup: {err.message}"
                + (f" (param {err.param})" if err.param else ""),
                error_type=err.type, code=err.code, during_handshake=True,
            )
            return rejected
        return None

    async def handshake(self, message: ClientEvent) -> None:
        """Send the session setup and wait for ``session.updated`` (or an error naming it)."""
        message.event_id = self.next_id("setup")
        await self.send(message)

        def answered(ev: BaseModel) -> bool:
            return (isinstance(ev, SessionEvent) and ev.type == "session.updated") or (
                isinstance(ev, ErrorEvent)
            )

        for event in await self.await_event(answered, "session.updated"):
            error = self.session_error(event) if isinstance(event, WireEvent) else None
            if error is not None:
                raise error

    # ------------------------------------------------------------------ responses

    async def request_response(self) -> None:
        """Ask for a response now, or at the end of the active one (coalesced)."""
        self.gate.want()
        await self._continue_if_due()

    def response_create(self, event_id: str) -> ResponseCreate:
        return ResponseCreate(event_id=event_id)

    def tool_output(self, event_id: str, call_id: str, output_json: str) -> ConversationItemCreate:
        return ConversationItemCreate(
            event_id=event_id, item=FunctionCallOutputItem(call_id=call_id, output=output_json),
        )

    async def truncate_item(self, item_id: str, audio_end_ms: int) -> None:
        """``conversation.item.truncate`` at what was heard, clamped to the audio received for
        the item (resampling and item boundaries can put the mirror's position a few ms past
        it, which the provider refuses); nothing for an item we received no audio for."""
        samples = self._item_samples.get(item_id)
        if samples is None or not self.truncates:
            return
        received_ms = samples * 1000 // self.settings.output_rate
        await self.send(ConversationItemTruncate(
            event_id=self.next_id("truncate"), item_id=item_id, content_index=0,
            audio_end_ms=max(0, min(audio_end_ms, received_ms)),
        ))

    async def barge_in(self) -> None:
        """The user started speaking: cut audible agent audio and mute its response."""
        if not self.playout.audible and not (self.cancel_on_barge_in and self.gate.active):
            return
        if self.playout.audible:
            response = self._audio_response.get(self._last_audio_item, self._response_id)
            if response:
                self._muted.add(response)
            self.emit(Interrupted(reason="barge_in"))
        if self.cancel_on_barge_in and self.gate.active:
            if self._response_id:
                self._muted.add(self._response_id)
            await self.send(ResponseCancel(event_id=self.next_id("cancel")))

    # ------------------------------------------------------------------ events

    async def handle(self, event: BaseModel) -> None:
        if isinstance(event, AudioDeltaEvent):
            pcm = decode_pcm16(event.delta)
            self._item_samples[event.item_id] = self._item_samples.get(event.item_id, 0) + len(pcm)
            if len(self._item_samples) > 64:
                del self._item_samples[next(iter(self._item_samples))]
            if event.response_id in self._muted:
                return
            self._audio_response[event.item_id] = event.response_id
            self._last_audio_item = event.item_id
            self.emit_audio(pcm, event.item_id)
        elif isinstance(event, AudioDoneEvent):
            if event.response_id not in self._muted:
                self.flush_audio(event.item_id)
        elif isinstance(event, TranscriptDeltaEvent):
            if event.response_id not in self._muted:
                self._spoken.setdefault(event.item_id, []).append(event.delta)
                self.emit(TranscriptDelta(text=event.delta))
        elif isinstance(event, TranscriptDoneEvent):
            deltas = self._spoken.pop(event.item_id, [])
            if event.response_id not in self._muted:
                text = event.transcript if event.transcript is not None else "".join(deltas)
                self.emit(TranscriptDone(text=text))
        elif isinstance(event, OutputItemEvent):
            item = event.item
            if item.type == "function_call" and item.call_id and item.name:
                self._call_names[item.call_id] = item.name
        elif isinstance(event, FunctionCallArgumentsDone):
            named = self._call_names.pop(event.call_id, "")
            name = event.name or named
            if not name:
                raise WireProtocolError(
                    f"{self.settings.kind} called function {event.call_id!r} without naming it "
                    "(neither response.function_call_arguments.done nor its output item did)"
                )
            self.gate.tool_call(event.call_id)
            self.emit(ToolCallRequest(
                call_id=event.call_id, name=name, args=parse_arguments(event.arguments),
            ))
        elif isinstance(event, ResponseLifecycle):
            await self._on_response(event)
        elif isinstance(event, SpeechStarted):
            if self.server_vad:
                await self.barge_in()
        elif isinstance(event, ErrorEvent):
            await self._on_error(event.error)
        # SessionEvent after the handshake, Ignored: nothing to do.

    async def _on_response(self, event: ResponseLifecycle) -> None:
        if event.type == "response.created":
            self.gate.started()
            self._response_id = event.response.id
            return
        # response.done
        self.gate.finished()
        details = event.response.status_details
        if event.response.status == "failed" and details is not None and details.error:
            err = details.error
            self.fail(provider_error(
                f"{self.settings.kind} response {event.response.id} failed: "
                f"{err.message or err.code or 'no detail'}",
                error_type=err.type, code=err.code,
            ))
        self.emit(ResponseDone())
        if event.response.id in self._muted:
            self._muted.discard(event.response.id)
        await self._continue_if_due()

    async def _on_error(self, err: ErrorDetail) -> None:
        error = provider_error(
            f"{self.settings.kind}: {err.message}" + (f" (param {err.param})" if err.param else ""),
            error_type=err.type, code=err.code,
        )
        # Our response.create refused (rate limit, …): no response.done will follow it.
        self.gate.refused(err.event_id)
        per_turn = bool(err.event_id) and not str(err.event_id).startswith("setup")
        if error.category is ErrorCategory.PROTOCOL and per_turn:
            # A refused per-turn request (create, cancel, truncate, item): logged, not fatal.
            error = ProviderError(error.category, error.message, error.code, fatal=False)
        self.fail(error)
