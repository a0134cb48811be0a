"""The Gemini Live adapter: google-genai's ``client.aio.live.connect`` behind ``AgentAdapter``.

Wire conditions (paper appendix D.2): function calling; user audio sent as 16 kHz PCM16, agent
audio received as 24 kHz PCM16, both resampled with soxr; the server's own turn detection is
*disabled* (``realtimeInputConfig.automaticActivityDetection.disabled``) so that every system in
a campaign hears the same turn boundaries: a client-side :class:`EnergyVAD` (the scripted
agent's) decides where user speech starts and ends and brackets it with explicit
``activityStart``/``activityEnd``. User audio streams continuously and the turn covers all of it
(``TURN_INCLUDES_ALL_INPUT``), so the VAD's onset latency never clips a first syllable. A
barge-in is the server's business (``START_OF_ACTIVITY_INTERRUPTS``): its ``interrupted`` flag
becomes :class:`Interrupted`; only when the server already considers the turn complete while
its audio is still playing here does the adapter yield on its own.

Connecting (endpoint, key header, the setup message) and sending go through the SDK. Server
frames are read from the session's websocket and parsed by :mod:`.events`, because the SDK's
``receive()`` silently strips message kinds and fields it does not know.

Session resumption: the setup asks for ``sessionResumption``, so the server sends
``sessionResumptionUpdate`` messages; the adapter keeps the latest resumable handle. The server
rotates connections and announces it with ``goAway`` (``timeLeft``); the adapter then reconnects
with ``sessionResumption.handle`` set to that handle, at the next resumable point (a fresh handle
while the model is idle) and in any case :data:`RESUME_MARGIN_MS` before the time left runs out,
or at once if the announced close comes first. The old socket is closed first, client messages
sent meanwhile are held and sent on the new connection, and the resumption is logged as a
non-fatal ``connectivity`` note ("session resumed after goAway"). A ``goAway`` before any handle,
or a refused resumption, is an infrastructure drop.

Errors follow :mod:`runtime.agents.errors`: the Live API reports them as websocket close frames,
categorized from the close code and reason. A refused or dropped connection raises
``InfrastructureError``; a rejected setup, an unknown message, or a close mid-run that names
credentials, quota or protocol is a fatal error signal; a server or rate-limit close mid-run is
logged as a signal and then ends the run as an infrastructure drop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from google.genai.live import AsyncSession
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from runtime.agents.base import (
    AgentEvent,
    AgentSessionConfig,
    AudioDelta,
    Interrupted,
    ProtocolUnknown,
    ResponseDone,
    ToolCallRequest,
    TranscriptDelta,
    TranscriptDone,
)
from runtime.agents.errors import (
    FATAL_CATEGORIES,
    ErrorCategory,
    ProviderConfigError,
    ProviderError,
    UnknownWireEvent,
    WireProtocolError,
    connection_lost,
    provider_error,
    strict_protocol,
)
from runtime.agents.providers._realtime import PlayoutMirror
from runtime.agents.providers._transport import LockstepSync
from runtime.agents.providers.gemini_live._tools import ToolSchemaError, function_declarations
from runtime.agents.providers.gemini_live.events import (
    ErrorReport,
    ServerContent,
    ServerMessage,
    close_category,
    error_category,
    parse_server_message,
)
from runtime.agents.scripted import EnergyVAD
from runtime.core.audio import SAMPLE_RATE, Pcm, StreamResampler

log = logging.getLogger(__name__)

RESUME_GAP_MS = 1000
"""After ``interrupted``, model content that arrives this long after the last dropped content
starts the next turn even if the cut turn never got its ``turnComplete``."""

RESUME_MARGIN_MS = 2000
"""After ``goAway``, the adapter resumes on a new connection no later than this long (media
time) before the announced end, even when the model is not at a resumable point."""


class _RedactCredentials(logging.Filter):
    """websockets logs every handshake header at DEBUG, the API key header included."""

    HEADERS = frozenset({"x-goog-api-key", "authorization"})

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 2 and str(args[0]).lower() in self.HEADERS:
            record.args = (args[0], "[redacted]")
        return True


_WS_LOG = logging.getLogger(f"{__name__}.websocket")
"""The websocket's logger (instead of ``websockets.client``), with credentials redacted."""
_WS_LOG.addFilter(_RedactCredentials())

KIND = "gemini-live"
DEFAULT_MODEL = "gemini-3.1-flash-live-preview"
INPUT_RATE = 16_000
"""The Live API takes 16 kHz PCM16 mono."""
OUTPUT_RATE = 24_000
"""The Live API speaks 24 kHz PCM16 mono (the rate in each chunk's MIME type wins)."""
KEY_VARIABLES = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
URL_VARIABLE = "APEX_GEMINI_LIVE_URL"


@dataclass(frozen=True)
class GeminiLiveSettings:
    """Everything the adapter needs, read once from the environment by :func:`make_adapter`."""

    model: str = DEFAULT_MODEL
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    """``APEX_GEMINI_LIVE_URL``: https:// or wss:// origin of the Live endpoint (a proxy or a
    local fake); the SDK always connects with TLS to ``<origin>/ws/google.ai.…``."""
    api_version: str | None = None
    """``APEX_GEMINI_LIVE_API_VERSION``; the SDK's default when unset."""
    ca_file: str | None = None
    """``APEX_GEMINI_LIVE_CA_FILE``: PEM bundle to trust instead of the system's (proxy, fake)."""
    voice: str | None = None
    """``APEX_GEMINI_LIVE_VOICE``: a prebuilt voice name; the session's voice wins if set."""
    handshake_timeout_s: float = 20.0
    settle_timeout_s: float = 10.0

    @classmethod
    def from_env(cls, model: str | None, env: Mapping[str, str]) -> GeminiLiveSettings:
        key = next((env[k].strip() for k in KEY_VARIABLES if env.get(k, "").strip()), None)
        url = env.get(URL_VARIABLE, "").strip() or None
        if url is not None and not url.startswith(("https://", "wss://")):
            raise ProviderConfigError(
                f"{URL_VARIABLE}={url!r}: the Live API is reached over TLS; give an https:// or "
                "wss:// origin (the SDK appends /ws/google.ai.generativelanguage.…)"
            )
        return cls(
            model=model or DEFAULT_MODEL,
            api_key=key,
            base_url=url,
            api_version=env.get("APEX_GEMINI_LIVE_API_VERSION", "").strip() or None,
            ca_file=env.get("APEX_GEMINI_LIVE_CA_FILE", "").strip() or None,
            voice=env.get("APEX_GEMINI_LIVE_VOICE", "").strip() or None,
        )


def make_adapter(model: str | None, env: Mapping[str, str]) -> GeminiLiveAdapter:
    """Registry entry point (``gemini-live[:MODEL]``); reads settings, does no I/O."""
    return GeminiLiveAdapter(GeminiLiveSettings.from_env(model, env))


@dataclass
class _ToolBatch:
    """The function calls of one ``toolCall`` message, answered in one ``toolResponse``."""

    names: dict[str, str]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    cancelled: set[str] = field(default_factory=set)

    @property
    def complete(self) -> bool:
        return all(i in self.results or i in self.cancelled for i in self.names)


@dataclass(frozen=True)
class _GoAway:
    """A ``goAway`` being honoured: by when (media ms) the connection must be replaced."""

    by_ms: int
    time_left: str


_Held = tuple[str, dict[str, Any]]
"""A client message (SDK call, its keyword arguments) held back or kept for a replay."""


def _function_response(call_id: str, name: str, output: dict[str, Any]) -> types.FunctionResponse:
    # Gemini's convention: {"output": …} for a result, {"error": …} for a failed call.
    response = {"error": output["error"]} if set(output) == {"error"} else {"output": output}
    return types.FunctionResponse(id=call_id, name=name, response=response)


def _describe(exc: BaseException) -> str:
    """A failed (re)connection in one line, for an infrastructure error."""
    if isinstance(exc, genai_errors.APIError):
        return f"close {exc.code}: {exc.details or exc.message or 'no reason given'}"
    if isinstance(exc, ConnectionClosed) and exc.rcvd is not None:
        return f"close {exc.rcvd.code}: {exc.rcvd.reason or 'no reason given'}"
    if isinstance(exc, InvalidStatus):
        return f"HTTP {exc.response.status_code} at the websocket handshake"
    if isinstance(exc, TimeoutError):
        return "no setupComplete in time"
    return f"{type(exc).__name__}: {exc}"


def _close_error(code: int | None, reason: str, *, during_setup: bool) -> ProviderError:
    category = close_category(code, reason)
    what = "setup rejected" if during_setup else "session closed"
    return ProviderError(
        category=category,
        message=f"{KIND}: {what} by the server: {reason or f'close {code}, no reason given'}",
        code=str(code) if code is not None else "",
        fatal=during_setup or category in FATAL_CATEGORIES,
    )


class GeminiLiveAdapter:
    """One Live API session per run. ``__init__`` does no I/O."""

    def __init__(self, settings: GeminiLiveSettings) -> None:
        self.settings = settings
        self.name = f"{KIND}:{settings.model}"
        self.playout = PlayoutMirror()
        self.lockstep: LockstepSync | None = None
        self.truncations: list[int] = []
        """``heard_ms`` of every truncated response (the Live API has no truncate message)."""
        self.sent = 0
        self.received = 0
        """Messages sent and received on the current connection (lockstep counts)."""
        self.resumptions = 0
        """Connections replaced after a ``goAway`` (session resumption)."""
        self._client: genai.Client | None = None
        self._client_stack: contextlib.AsyncExitStack | None = None
        self._conn_stack: contextlib.AsyncExitStack | None = None
        self._live_config: types.LiveConnectConfig | None = None
        self._session: AsyncSession | None = None
        self._reader: asyncio.Task[None] | None = None
        self._conn = 0
        """Number of the current connection; a reader of an older one stops recording."""
        self._arrivals: list[str | bytes] = []
        self._arrived = asyncio.Event()
        self._closing = False
        self._dropped: ProviderError | None = None
        """How the provider ended the connection (a categorized close, or a drop)."""
        self._drop_reported = False
        self._failed = False
        self._out: list[AgentEvent] = []
        self._vad = EnergyVAD()
        self._to_server = StreamResampler(SAMPLE_RATE, INPUT_RATE)
        self._from_server: StreamResampler | None = None
        # The model's current turn.
        self._turn = 0
        self._generating = False
        self._dropping = False
        self._dropped_at = 0
        """Media ms of the last interrupted content dropped."""
        self._now_ms = 0
        self._turn_text: list[str] = []
        # Tool calls awaiting results, oldest first.
        self._batches: list[_ToolBatch] = []
        self._call_seq = 0
        # Session resumption.
        self._resume_handle: str | None = None
        """The latest resumable handle (``sessionResumptionUpdate.newHandle``)."""
        self._fresh = False
        """No model output since the latest handle: resuming from it loses no model turn."""
        self._unheard: list[_Held] = []
        """The user's latest activity (from its activityStart) while the model has not answered
        it: what a new connection hears again first. The Developer API has no ``transparent``
        resumption telling which client messages a handle includes."""
        self._user_active = False
        """activityStart sent, activityEnd not yet."""
        self._go_away: _GoAway | None = None
        self._resume_task: asyncio.Task[None] | None = None
        self._held: list[_Held] = []
        """Client messages sent while the connection is being replaced, in order."""
        self._resend: list[_Held] = []
        """What the new connection must hear before the held messages."""

    def attach_lockstep(self, sync: LockstepSync) -> None:
        """Virtual-clock lockstep with a local fake (``runtime.agents.providers._transport``)."""
        self.lockstep = sync

    # ------------------------------------------------------------------ connect / close

    def _http_options(self) -> types.HttpOptions:
        s = self.settings
        # The SDK hands the keys of async_client_args that websockets' connect() takes to it.
        client_args: dict[str, Any] = {"logger": _WS_LOG}
        if s.ca_file:
            client_args["ssl"] = ssl.create_default_context(cafile=s.ca_file)
        return types.HttpOptions(
            base_url=s.base_url, api_version=s.api_version, async_client_args=client_args,
        )

    def live_config(self, config: AgentSessionConfig) -> types.LiveConnectConfig:
        """The session setup; raises :class:`ToolSchemaError` for inexpressible tools."""
        declarations = function_declarations(config.tools)
        voice = config.voice or self.settings.voice
        return types.LiveConnectConfig(
            response_modalities=[types.Modality.AUDIO],
            system_instruction=config.instructions,
            tools=[types.Tool(function_declarations=declarations)] if declarations else None,
            realtime_input_config=types.RealtimeInputConfig(
                # Matched conditions: no server-side turn detection; the client's VAD decides.
                automatic_activity_detection=types.AutomaticActivityDetection(disabled=True),
                activity_handling=types.ActivityHandling.START_OF_ACTIVITY_INTERRUPTS,
                turn_coverage=types.TurnCoverage.TURN_INCLUDES_ALL_INPUT,
            ),
            input_audio_transcription=types.AudioTranscriptionConfig(),
            output_audio_transcription=types.AudioTranscriptionConfig(),
            # Ask for resumption handles, to survive the server's connection resets (goAway).
            session_resumption=types.SessionResumptionConfig(),
            speech_config=types.SpeechConfig(voice_config=types.VoiceConfig(
                prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=voice),
            )) if voice else None,
        )

    async def connect(self, config: AgentSessionConfig) -> None:
        if self._session is not None or self._failed:
            raise RuntimeError(f"{KIND}: connect called twice")
        if config.sample_rate != SAMPLE_RATE:
            raise ValueError(f"{KIND}: the runtime streams {SAMPLE_RATE} Hz, not "
                             f"{config.sample_rate}")
        if not self.settings.api_key:
            raise ProviderConfigError(
                f"{KIND}: no API key; set the environment variable "
                f"{' or '.join(KEY_VARIABLES)}"
            )
        try:
            live_config = self.live_config(config)
        except ToolSchemaError as exc:
            self._fail(ProviderError(ErrorCategory.PROTOCOL, f"{KIND}: tools: {exc}", fatal=True))
            return
        try:
            client = genai.Client(
                api_key=self.settings.api_key, vertexai=False,
                http_options=self._http_options(),
            )
        except (OSError, ssl.SSLError) as exc:
            raise ProviderConfigError(
                f"APEX_GEMINI_LIVE_CA_FILE={self.settings.ca_file!r}: not a readable PEM "
                f"certificate bundle ({exc})"
            ) from None
        except ValueError as exc:
            message = f"{KIND}: the SDK refused the client options: {exc}"
            raise ProviderConfigError(message) from None
        stack = contextlib.AsyncExitStack()
        stack.callback(client.close)  # the SDK's HTTP clients, released after the socket
        stack.push_async_callback(client.aio.aclose)
        self._client, self._client_stack, self._live_config = client, stack, live_config
        try:
            conn, session = await self._open(live_config)
        except BaseException as exc:
            self._client_stack = None
            with contextlib.suppress(Exception):
                await stack.aclose()
            self._connect_failed(exc)
            return
        if not self._attach(conn, session):
            return
        log.info("%s: session %s open", self.name, session.session_id)

    async def _open(
        self, live_config: types.LiveConnectConfig,
    ) -> tuple[contextlib.AsyncExitStack, AsyncSession]:
        """One connection: the SDK's connect (handshake, setup, setupComplete), in time."""
        assert self._client is not None
        stack = contextlib.AsyncExitStack()
        try:
            session = await asyncio.wait_for(
                stack.enter_async_context(
                    self._client.aio.live.connect(model=self.settings.model, config=live_config)
                ),
                timeout=self.settings.handshake_timeout_s,
            )
        except BaseException:
            with contextlib.suppress(Exception):
                await stack.aclose()
            raise
        return stack, session

    def _attach(self, conn: contextlib.AsyncExitStack, session: AsyncSession) -> bool:
        """Make an opened connection the current one and start reading it."""
        self._conn += 1
        self._conn_stack, self._session = conn, session
        self.sent, self.received = 1, 1  # the setup message and setupComplete
        if session.setup_complete is None:
            self._fail(ProviderError(
                ErrorCategory.PROTOCOL, f"{KIND}: the server's first message was not "
                "setupComplete", fatal=True,
            ))
            return False
        # The SDK's receive() drops unknown kinds and fields: read the raw frames instead.
        self._reader = asyncio.create_task(self._read(session._ws, self._conn),
                                           name=f"{KIND}-reader")
        return True

    async def _close_connection(self) -> None:
        """Stop reading the current connection and close its socket."""
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        conn, self._conn_stack = self._conn_stack, None
        self._session = None
        if conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.aclose(), timeout=2.0)

    def _connect_failed(self, exc: BaseException) -> None:
        """Map a failed connect: a connectivity problem raises, anything else is a fatal signal."""
        error: ProviderError
        if isinstance(exc, genai_errors.APIError):
            code = exc.code if isinstance(exc.code, int) else None
            error = _close_error(code, str(exc.details or exc.message or ""), during_setup=True)
        elif isinstance(exc, ConnectionClosed):
            rcvd = exc.rcvd
            error = _close_error(rcvd.code if rcvd else None, rcvd.reason if rcvd else "",
                                 during_setup=True)
        elif isinstance(exc, InvalidStatus):
            status = exc.response.status_code
            error = provider_error(
                f"{KIND} refused the websocket handshake with HTTP {status}",
                status=status, during_handshake=True,
            )
        elif isinstance(exc, TimeoutError):
            raise connection_lost(
                f"{KIND}: no setupComplete within {self.settings.handshake_timeout_s:g} s"
            ) from None
        elif isinstance(exc, OSError | InvalidHandshake):
            raise connection_lost(
                f"{KIND}: could not connect to {self.settings.base_url or 'the Live API'}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        elif isinstance(exc, ValueError):
            error = ProviderError(ErrorCategory.PROTOCOL, f"{KIND}: the SDK refused the "
                                  f"setup: {exc}", fatal=True)
        else:
            raise exc
        if error.category is ErrorCategory.CONNECTIVITY:
            raise connection_lost(error.message)
        self._fail(error)

    async def close(self) -> None:
        self._closing = True
        self._out = []
        task, self._resume_task = self._resume_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._close_connection()
        client, self._client_stack = self._client_stack, None
        if client is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.aclose(), timeout=2.0)

    # ------------------------------------------------------------------ the wire

    async def _read(self, ws: ClientConnection, conn: int) -> None:
        try:
            async for raw in ws:
                if conn != self._conn:
                    return  # replaced: what the old connection still sends is not ours
                self._arrivals.append(raw)
                self.received += 1
                self._arrived.set()
        except ConnectionClosed as exc:
            if not self._closing and conn == self._conn:
                rcvd = exc.rcvd
                self._dropped = _close_error(
                    rcvd.code if rcvd else None, rcvd.reason if rcvd else "", during_setup=False,
                ) if rcvd else ProviderError(
                    ErrorCategory.CONNECTIVITY, f"{KIND}: connection lost without a close frame",
                )
        except OSError as exc:
            if not self._closing and conn == self._conn:
                self._dropped = ProviderError(ErrorCategory.CONNECTIVITY, f"{KIND}: {exc}")
        else:  # a clean close (1000/1001): the session is over all the same
            if not self._closing and conn == self._conn:
                self._dropped = _close_error(ws.close_code, ws.close_reason or "",
                                             during_setup=False)
        finally:
            self._arrived.set()

    async def _send(self, call: str, **kwargs: Any) -> None:
        """One SDK send; a closed socket is recorded by the reader and reported by ``poll``.
        While the connection is being replaced the message is held, and sent after."""
        if self._failed:
            return
        if self._resume_task is not None or self._held:
            self._held.append((call, kwargs))
            return
        if self._session is None or self._dropped is not None:
            return
        self._record(call, kwargs)
        try:
            if call == "tool_response":
                await self._session.send_tool_response(**kwargs)
            else:
                await self._session.send_realtime_input(**kwargs)
        except (ConnectionClosed, OSError) as exc:
            if self._dropped is None and not isinstance(exc, ConnectionClosed):
                self._dropped = ProviderError(ErrorCategory.CONNECTIVITY, f"{KIND}: {exc}")
            return
        self.sent += 1

    async def _settle(self) -> None:
        """With a lockstep fake: wait until it has answered everything sent so far."""
        if self.lockstep is None or self._dropped is not None or self._session is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.settle_timeout_s
        try:
            expected = await asyncio.wait_for(self.lockstep(self.sent),
                                              self.settings.settle_timeout_s)
            while self.received < expected and self._dropped is None:
                self._arrived.clear()
                if self.received >= expected or self._dropped is not None:
                    break
                await asyncio.wait_for(self._arrived.wait(), timeout=deadline - loop.time())
        except TimeoutError:
            self._fail(ProviderError(
                ErrorCategory.SERVER, f"{KIND}: lockstep peer did not settle within "
                f"{self.settings.settle_timeout_s:g} s (sent {self.sent}, received "
                f"{self.received})", fatal=True,
            ))

    # ------------------------------------------------------------------ session resumption

    def _record(self, call: str, kwargs: dict[str, Any]) -> None:
        """Keep the user's activity until the model answers it (:attr:`_unheard`)."""
        if call != "realtime_input":
            return
        if "activity_start" in kwargs:
            self._user_active = True
            self._unheard = [(call, kwargs)]  # the audio before it was silence: not kept
        elif "activity_end" in kwargs:
            self._user_active = False
            self._unheard.append((call, kwargs))
        elif self._user_active:
            self._unheard.append((call, kwargs))

    def _model_acted(self) -> None:
        self._fresh = False
        if not self._user_active:
            self._unheard = []  # answered

    def _on_resumption_update(self, handle: str | None, resumable: bool) -> None:
        if not (resumable and handle):
            return  # not resumable now (the model generates or runs tools): keep the last one
        self._resume_handle = handle
        self._fresh = True
        if self._go_away is not None and self._resume_task is None:
            self._begin_resume("at the next resumable point")

    def _on_go_away(self, time_left: str | None, left_ms: int | None) -> None:
        if self._go_away is not None or self._resume_task is not None:
            return
        said = time_left or "not given"
        if self._resume_handle is None:
            self._dropped = ProviderError(
                ErrorCategory.CONNECTIVITY,
                f"{KIND}: the server sent goAway (time left {said}) before any resumable "
                "sessionResumptionUpdate handle, so the session cannot continue on a new "
                "connection",
            )
            return
        self._go_away = _GoAway(by_ms=self._now_ms + (left_ms or 0), time_left=said)
        log.warning("%s: goAway, the server ends this connection in %s; resuming the session",
                    self.name, said)
        if self._fresh and not self._generating and not self._batches:
            self._begin_resume("at a resumable point")

    def _begin_resume(self, when: str) -> None:
        """Replace the connection with one resuming the session from the latest handle."""
        assert self._resume_handle is not None
        lost: list[str] = []
        self._resend = list(self._unheard)
        if not self._fresh:
            # The model acted after the handle: the resumed session never had that turn.
            if self._generating and not self._dropping:
                self._end_transcript()
                self._emit(ResponseDone())
                lost.append("the response being generated")
            # Calls whose toolResponse has not gone out (it goes out per toolCall, complete).
            pending = {i for b in self._batches for i in b.names if i not in b.cancelled}
            if pending:
                self._out = [ev for ev in self._out if not (
                    isinstance(ev, ToolCallRequest) and ev.call_id in pending)]
                lost.append(f"tool calls {', '.join(sorted(pending))}")
            self._batches = []
        self._generating = self._dropping = False
        self._from_server = None
        self._conn += 1  # the old connection's reader records nothing more
        self._arrivals = []
        self._dropped = None
        go_away, self._go_away = self._go_away, None
        left = f", {go_away.by_ms - self._now_ms} ms before its end" if go_away else ""
        self._resume_task = asyncio.create_task(
            self._resume(self._resume_handle, f"{when}{left}", lost), name=f"{KIND}-resume",
        )

    async def _resume(self, handle: str, when: str, lost: list[str]) -> None:
        # The service refuses to resume a session while an earlier socket of it is still open.
        await self._close_connection()
        assert self._live_config is not None
        config = self._live_config.model_copy(
            update={"session_resumption": types.SessionResumptionConfig(handle=handle)})
        try:
            conn, session = await self._open(config)
        except Exception as exc:
            raise connection_lost(
                f"{KIND}: could not resume the session after goAway: {_describe(exc)}"
            ) from None
        if session.setup_complete is None:
            with contextlib.suppress(Exception):
                await conn.aclose()
            raise connection_lost(f"{KIND}: resuming after goAway, the server's first message "
                                  "was not setupComplete")
        self._attach(conn, session)
        self._fresh = False  # until the new connection hands out a handle
        self.resumptions += 1
        note = (f"{KIND}: session resumed after goAway ({when}) on a new connection, "
                "from the latest resumption handle")
        if lost:
            note += f"; the resumed session does not have {' and '.join(lost)}"
        log.info("%s", note)
        self._out.append(ProviderError(ErrorCategory.CONNECTIVITY, note).signal())

    async def _resume_sync(self, *, wait: bool, report: bool) -> None:
        """Once the new connection is up, send what it must hear and what was held.
        ``wait``: until then (lockstep); ``report``: raise if the resumption failed."""
        task = self._resume_task
        if task is None:
            return
        if not task.done():
            if not wait:
                return
            await asyncio.wait({task})
        if task.cancelled() or task.exception() is not None:
            if report:
                self._resume_task = None
                if task.cancelled():
                    raise connection_lost(f"{KIND}: session resumption cancelled")
                exc = task.exception()
                assert exc is not None
                raise exc
            return
        self._resume_task = None
        pending, self._resend, held, self._held = self._resend, [], self._held, []
        for call, kwargs in pending + held:
            await self._send(call, **kwargs)

    # ------------------------------------------------------------------ server events

    def _emit(self, event: AgentEvent) -> None:
        if isinstance(event, AudioDelta):
            self.playout.audio(f"turn_{self._turn}", len(event.pcm))
        elif isinstance(event, ResponseDone):
            self.playout.done()
        elif isinstance(event, Interrupted):
            self.playout.interrupt()
        self._out.append(event)

    def _fail(self, error: ProviderError) -> None:
        self._out.append(error.signal())
        if error.fatal:
            self._failed = True

    def _handle(self, msg: ServerMessage) -> None:
        if msg.server_content is not None:
            self._on_content(msg.server_content)
        if msg.tool_call is not None:
            self._generating = True
            self._model_acted()
            batch = _ToolBatch(names={})
            for call in msg.tool_call.function_calls:
                self._call_seq += 1
                call_id = call.id or f"gemini_call_{self._call_seq}"
                batch.names[call_id] = call.name
                self._emit(ToolCallRequest(call_id=call_id, name=call.name, args=dict(call.args)))
            if batch.names:
                self._batches.append(batch)
        if msg.tool_call_cancellation is not None:
            self._on_cancel(set(msg.tool_call_cancellation.ids))
        if msg.session_resumption_update is not None:
            update = msg.session_resumption_update
            self._on_resumption_update(update.new_handle, bool(update.resumable))
        if msg.go_away is not None:
            self._on_go_away(msg.go_away.time_left, msg.go_away.time_left_ms())
        if msg.error is not None:
            self._on_error(msg.error)

    def _on_error(self, report: ErrorReport) -> None:
        """An in-band error ends the response it replaces; fatal categories end the run."""
        if self._generating and not self._dropping:
            self._end_transcript()
            self._emit(ResponseDone())
        self._generating = self._dropping = False
        self._from_server = None
        category = error_category(report)
        self._fail(ProviderError(
            category=category, message=f"{KIND}: {report.message or 'error without a message'}",
            code=str(report.code or report.status or ""),
            fatal=category in FATAL_CATEGORIES,
        ))

    def _start_turn(self) -> None:
        if not self._generating:
            self._generating = True
            self._turn += 1

    def _on_content(self, content: ServerContent) -> None:
        if content.interrupted and self._generating and not self._dropping:
            self._end_transcript()
            self._emit(Interrupted(reason="barge_in"))
            self._from_server = None
            self._dropping = True
            self._dropped_at = self._now_ms
        if (content.model_turn is not None and self._dropping
                and self._now_ms - self._dropped_at >= RESUME_GAP_MS):
            # ``interrupted`` without ``turnComplete``: content after a silent gap is the next
            # turn, not the rest of the cut one (which would have kept streaming).
            self._fail(ProviderError(
                ErrorCategory.PROTOCOL,
                f"{KIND}: interrupted turn never completed (no turnComplete); the next turn "
                f"began {self._now_ms - self._dropped_at} ms later and is played",
                fatal=False,
            ))
            self._generating = self._dropping = False
        if content.model_turn is not None:
            self._model_acted()
            if self._dropping:
                self._dropped_at = self._now_ms
            self._start_turn()
            for part in content.model_turn.parts:
                blob = part.inline_data
                if blob is None or part.thought or not blob.is_pcm or self._dropping:
                    continue
                raw = blob.pcm_bytes()
                if len(raw) % 2:
                    raise WireProtocolError(f"PCM16 audio has an odd length ({len(raw)} bytes)")
                pcm = np.frombuffer(raw, dtype="<i2").astype(np.int16)
                rate = blob.sample_rate(OUTPUT_RATE)
                if self._from_server is None or self._from_server.in_rate != rate:
                    self._from_server = StreamResampler(rate, SAMPLE_RATE)
                out = self._from_server.push(pcm)
                if len(out):
                    self._emit(AudioDelta(pcm=out))
        text = content.output_transcription.text if content.output_transcription else None
        if text:
            self._model_acted()
            self._start_turn()
            if not self._dropping:
                self._turn_text.append(text)
                self._emit(TranscriptDelta(text=text))
        if content.turn_complete:
            if not self._dropping:
                if self._from_server is not None:
                    tail = self._from_server.flush()
                    if len(tail):
                        self._emit(AudioDelta(pcm=tail))
                self._end_transcript()
                self._emit(ResponseDone())
            self._generating = self._dropping = False
            self._from_server = None

    def _end_transcript(self) -> None:
        text = " ".join("".join(self._turn_text).split())
        self._turn_text = []
        if text:
            self._emit(TranscriptDone(text=text))

    def _on_cancel(self, ids: set[str]) -> None:
        undelivered = {ev.call_id for ev in self._out if isinstance(ev, ToolCallRequest)} & ids
        self._out = [ev for ev in self._out
                     if not (isinstance(ev, ToolCallRequest) and ev.call_id in undelivered)]
        for batch in self._batches:
            batch.cancelled |= ids & set(batch.names)
        if ids - undelivered:
            log.warning("%s: the server cancelled tool calls that already ran: %s", self.name,
                        ", ".join(sorted(ids - undelivered)))

    # ------------------------------------------------------------------ AgentAdapter

    def _blob(self, pcm: Pcm) -> types.Blob:
        return types.Blob(data=pcm.astype("<i2").tobytes(),
                          mime_type=f"audio/pcm;rate={INPUT_RATE}")

    async def send_audio(self, frame: Pcm, t_media_ms: int) -> None:
        """Stream every frame at 16 kHz; bracket user speech with activityStart/activityEnd."""
        self.playout.advance(t_media_ms)
        if self._failed or (self._session is None and self._resume_task is None):
            return
        await self._resume_sync(wait=False, report=False)
        chunk = self._to_server.push(frame)
        change = self._vad.push(frame)
        if change == "onset":
            await self._send("realtime_input", activity_start=types.ActivityStart())
            if not self._generating and self.playout.audible:
                # The server considers its turn complete but the audio is still playing here.
                self._emit(Interrupted(reason="barge_in"))
        if len(chunk):
            await self._send("realtime_input", audio=self._blob(chunk))
        if change == "end":
            await self._send("realtime_input", activity_end=types.ActivityEnd())

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        batch = next((b for b in self._batches if call_id in b.names), None)
        if batch is None:
            log.warning("%s: result for unknown call %s dropped", self.name, call_id)
            return
        batch.results[call_id] = output
        # Every answer of one toolCall goes back in a single toolResponse, in call order.
        while self._batches and self._batches[0].complete:
            done = self._batches.pop(0)
            responses = [
                _function_response(i, name, done.results[i])
                for i, name in done.names.items()
                if i in done.results and i not in done.cancelled
            ]
            if responses:
                await self._send("tool_response", function_responses=responses)

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        self._now_ms = t_media_ms
        self.playout.advance(t_media_ms)
        if not self._failed:
            # With a lockstep peer, wait for a resumption under way (deterministic runs).
            await self._resume_sync(wait=self.lockstep is not None, report=True)
            await self._settle()
        else:
            await asyncio.sleep(0)
        if not self._failed:
            arrivals, self._arrivals = self._arrivals, []
            self._arrived.clear()
            resuming = self._resume_task
            for index, raw in enumerate(arrivals):
                try:
                    self._handle(parse_server_message(raw))
                except UnknownWireEvent as exc:
                    if strict_protocol():
                        self._fail(ProviderError(ErrorCategory.PROTOCOL, f"{KIND}: {exc}",
                                                 fatal=True))
                        break
                    self._emit(ProtocolUnknown(event_type=exc.event_type, message=str(exc)))
                except WireProtocolError as exc:
                    self._fail(ProviderError(ErrorCategory.PROTOCOL, f"{KIND}: {exc}",
                                             fatal=True))
                    break
                if self._resume_task is not resuming:
                    # The session resumes from the handle just handled: what the old
                    # connection sent after it is not part of the resumed session.
                    if index + 1 < len(arrivals):
                        log.info("%s: %d messages after the resumption point dropped",
                                 self.name, len(arrivals) - index - 1)
                    break
            go_away = self._go_away
            if go_away is not None and self._resume_task is None and not self._failed:
                if self._dropped is not None:
                    self._begin_resume("when the server closed the connection it announced")
                elif self._now_ms >= go_away.by_ms - RESUME_MARGIN_MS:
                    self._begin_resume("before the time left ran out")
        out, self._out = self._out, []
        dropped = self._dropped
        if dropped is not None and not self._failed and not self._arrivals and not out:
            if dropped.category is not ErrorCategory.CONNECTIVITY and not self._drop_reported:
                # Say why the server closed (logged as agent.error); fatal ones end the run.
                self._drop_reported = True
                self._fail(dropped)
                out, self._out = self._out, []
                return out
            raise connection_lost(dropped.message)
        return out

    async def truncated(self, heard_ms: int) -> None:
        # With START_OF_ACTIVITY_INTERRUPTS the server cut its generation at the barge-in
        # itself; the Live API has no message saying how much of the audio was heard.
        self.truncations.append(heard_ms)
