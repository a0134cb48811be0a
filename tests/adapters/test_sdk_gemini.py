"""The Gemini Live fake driven by the official google-genai client, not by our adapter.

``genai.Client(...).aio.live.connect(...)`` dials the fake exactly as it dials the Live API
(``http_options.base_url`` is the fake's origin, its certificate trusted through
``async_client_args``, as ``GeminiLiveAdapter._http_options`` does), sends the same setup our
adapter sends (no server-side turn detection, explicit ``activityStart``/``activityEnd``), and
reads the fake with the SDK's typed ``session.receive()``. Every server message the fake sent
must come out of the SDK as a ``LiveServerMessage`` equal to a strict parse of the raw frame:
``receive()`` silently drops fields it does not model, so a fake that drifts from the SDK's
types loses something here and fails.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from google.genai.live import AsyncSession

from tests.fakes.gemini_live import (
    FAKE_KEY,
    MODES,
    RESUME_REFUSED,
    RESUME_WHILE_OPEN,
    Call,
    FakeGeminiLive,
    Mode,
    Say,
    Tools,
    Turn,
    sdk_parse,
    tone,
)

MODEL = "gemini-test-live"
LOOKUP = types.FunctionDeclaration(
    name="lookup", description="Look something up.",
    parameters=types.Schema(type=types.Type.OBJECT,
                            properties={"q": types.Schema(type=types.Type.STRING)}),
)
ANSWER = "The premium is two hundred and twenty five dollars a month."


def live_config(handle: str | None = None) -> types.LiveConnectConfig:
    """What our adapter asks for: audio out, tools, transcriptions, resumption, and turn
    boundaries from the client (automatic activity detection off)."""
    return types.LiveConnectConfig(
        response_modalities=[types.Modality.AUDIO],
        system_instruction="You are a test agent.",
        tools=[types.Tool(function_declarations=[LOOKUP])],
        realtime_input_config=types.RealtimeInputConfig(
            automatic_activity_detection=types.AutomaticActivityDetection(disabled=True),
            activity_handling=types.ActivityHandling.START_OF_ACTIVITY_INTERRUPTS,
            turn_coverage=types.TurnCoverage.TURN_INCLUDES_ALL_INPUT,
        ),
        input_audio_transcription=types.AudioTranscriptionConfig(),
        output_audio_transcription=types.AudioTranscriptionConfig(),
        session_resumption=types.SessionResumptionConfig(handle=handle),
    )


def client_for(fake: FakeGeminiLive) -> genai.Client:
    return genai.Client(api_key=FAKE_KEY, http_options=types.HttpOptions(
        base_url=fake.base_url,
        async_client_args={"ssl": ssl.create_default_context(cafile=fake.ca_file)},
    ))


class Reader:
    """The SDK's ``receive()`` (which stops after each complete turn), restarted as needed;
    keeps every typed message it yielded."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.seen: list[types.LiveServerMessage] = []

    async def until(self, wanted: Callable[[types.LiveServerMessage], bool],
                    timeout: float = 5.0) -> types.LiveServerMessage:
        async def read() -> types.LiveServerMessage:
            while True:
                async for message in self.session.receive():
                    self.seen.append(message)
                    if wanted(message):
                        return message

        return await asyncio.wait_for(read(), timeout)


async def speak(session: AsyncSession, ms: int = 800, quiet_ms: int = 400) -> None:
    """One user turn as our adapter sends it: activityStart, a loud tone then silence in
    40 ms chunks of 16 kHz PCM16, activityEnd."""
    pcm = np.concatenate([tone(300.0, ms, 16_000, amplitude=8000),
                          np.zeros(16 * quiet_ms, dtype=np.int16)])
    await session.send_realtime_input(activity_start=types.ActivityStart())
    for start in range(0, len(pcm), 640):
        await session.send_realtime_input(audio=types.Blob(
            data=pcm[start:start + 640].astype("<i2").tobytes(),
            mime_type="audio/pcm;rate=16000"))
    await session.send_realtime_input(activity_end=types.ActivityEnd())


async def listen(session: AsyncSession, ms: int) -> None:
    """Silence, outside any user activity (the fake's clock is the audio it receives)."""
    for _ in range(ms // 40):
        await session.send_realtime_input(audio=types.Blob(
            data=bytes(1280), mime_type="audio/pcm;rate=16000"))


def content(message: types.LiveServerMessage) -> types.LiveServerContent:
    return message.server_content or types.LiveServerContent()


def turn_parts(message: types.LiveServerMessage) -> list[types.Part]:
    turn = content(message).model_turn
    return list(turn.parts or []) if turn is not None else []


def transcript(messages: list[types.LiveServerMessage]) -> str:
    """The model's output transcription across messages."""
    texts = [content(m).output_transcription for m in messages]
    return "".join(t.text or "" for t in texts if t is not None)


def assert_typed_without_leftovers(fake: FakeGeminiLive, seen: list[Any]) -> None:
    """What the SDK yielded is, message for message, the strict parse of what the fake sent
    after ``setupComplete`` (which ``connect`` consumed): nothing unknown, nothing dropped."""
    sent = [m for m in fake.sent if "setupComplete" not in m]
    assert len(seen) <= len(sent)
    for raw, message in zip(sent, seen, strict=False):
        assert isinstance(message, types.LiveServerMessage)
        assert message == sdk_parse(raw), raw


@pytest.mark.parametrize("mode", MODES)
async def test_the_sdk_runs_a_tool_turn_with_barge_in_against_the_fake(mode: Mode) -> None:
    """Setup, a user turn, the toolCall, the toolResponse, the spoken answer (audio and its
    transcription), then a barge-in while it plays: ``interrupted``."""
    turns = [Turn.of(Tools.of(Call("lookup", {"q": "premium"})), Say(ANSWER, ms=2400))]
    async with FakeGeminiLive(turns, speedup=0, mode=mode) as fake:
        client = client_for(fake)
        try:
            async with client.aio.live.connect(model=MODEL, config=live_config()) as session:
                assert session.setup_complete is not None
                reader = Reader(session)
                await speak(session)
                call = await reader.until(lambda m: m.tool_call is not None)
                assert call.tool_call is not None
                (fc,) = call.tool_call.function_calls or []
                assert (fc.name, fc.args) == ("lookup", {"q": "premium"}) and fc.id
                await session.send_tool_response(function_responses=[types.FunctionResponse(
                    id=fc.id, name=fc.name, response={"output": {"premium": 225}})])
                await reader.until(lambda m: bool(content(m).generation_complete))
                # The answer is "playing" (turnComplete waits for real-time playout): cut in.
                await session.send_realtime_input(activity_start=types.ActivityStart())
                await reader.until(lambda m: bool(content(m).interrupted))
                await reader.until(lambda m: bool(content(m).turn_complete))
                seen = reader.seen
        finally:
            await client.aio.aclose()
            client.close()
    after_call = seen[seen.index(call) + 1:]
    blobs = [part.inline_data for m in after_call for part in turn_parts(m)
             if part.inline_data is not None]
    assert {b.mime_type for b in blobs} == {"audio/pcm;rate=24000"}
    assert sum(len(b.data or b"") for b in blobs) == 2 * 24 * 2400  # 2.4 s of 24 kHz PCM16
    assert transcript(after_call) == ANSWER
    kinds = [k for m in seen for k, v in m if v is not None]
    assert kinds.index("tool_call") < len(kinds) - 1
    assert fake.interruptions == 1 and fake.tool_responses[0].function_responses
    assert_typed_without_leftovers(fake, seen)
    assert fake.violations == []  # and every client message the SDK wrote validated
    typed = {k for m in seen for k, v in m if v is not None}
    content_fields = {k for m in seen for k, v in content(m) if v is not None}
    assert "session_resumption_update" in typed
    if mode == "full_events":
        assert {"usage_metadata", "voice_activity"} <= typed
        assert {"input_transcription", "interim_input_transcription",
                "interaction_status"} <= content_fields
        activity = [m.voice_activity for m in seen if m.voice_activity is not None]
        assert [a.voice_activity_type for a in activity][:2] == [
            types.VoiceActivityType.ACTIVITY_START, types.VoiceActivityType.ACTIVITY_END]
    else:
        assert not {"usage_metadata", "voice_activity"} & typed


async def test_the_sdk_resumes_a_session_with_its_handle() -> None:
    """A handle from ``sessionResumptionUpdate`` opens a new connection on the same
    conversation: the fake model goes on with its next turn there. An unknown handle is
    refused, and so is a resumption while the session's earlier socket is still open."""
    turns = [Turn.of(Say("Hello.", ms=400), after="now"), Turn.of(Say("Still here."))]
    async with FakeGeminiLive(turns, speedup=0) as fake:
        client = client_for(fake)
        try:
            async with client.aio.live.connect(model=MODEL, config=live_config()) as first:
                reader = Reader(first)
                await listen(first, 600)  # "Hello." plays out
                await reader.until(lambda m: bool(content(m).turn_complete))
                update = await reader.until(lambda m: bool(
                    m.session_resumption_update and m.session_resumption_update.resumable))
                assert update.session_resumption_update is not None
                handle = update.session_resumption_update.new_handle
                assert handle
                with pytest.raises(genai_errors.APIError) as busy:
                    async with client.aio.live.connect(model=MODEL,
                                                       config=live_config(handle)):
                        pass
                assert (busy.value.code, fake.closed_with) == (RESUME_WHILE_OPEN[0],
                                                               RESUME_WHILE_OPEN)
            async with client.aio.live.connect(model=MODEL,
                                               config=live_config(handle)) as second:
                assert second.setup_complete is not None
                reader = Reader(second)
                await speak(second)
                await reader.until(lambda m: bool(content(m).generation_complete))
                said = transcript(reader.seen)
            with pytest.raises(genai_errors.APIError) as refused:
                async with client.aio.live.connect(model=MODEL,
                                                   config=live_config("not-a-handle")):
                    pass
        finally:
            await client.aio.aclose()
            client.close()
    assert said == "Still here."
    assert fake.resumed == [handle] and fake.spoken == ["Hello.", "Still here."]
    assert (refused.value.code, fake.closed_with) == (RESUME_REFUSED[0], RESUME_REFUSED)
    assert RESUME_REFUSED[1] in str(refused.value)
    assert fake.violations == []
