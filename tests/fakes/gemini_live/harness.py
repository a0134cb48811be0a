"""The Gemini Live fake as a :class:`~tests.adapters.harness.ProviderHarness` for the shared suite.

The neutral :class:`~tests.adapters.harness.Scenario` becomes fake-model turns: each scripted
turn answers one user turn end (``activityEnd``), calls all its tools in one parallel
``toolCall``, then speaks once the ``toolResponse`` is in. Responses are counted the way the
suite counts them: a turn with tools is two responses (the tool calls, then the speech that
continues after the results), a turn without tools is one.

Errors: a refused setup is what the Live API sends, a close frame with its code and reason. A
failing response (``error_on_response``) is an error object in place of the response
(``{"code", "message", "status"}``, which the SDK raises as an ``APIError``) so that a
non-fatal one leaves the session open as the suite expects; the service's usual way, closing
the socket mid-session, is covered by ``tests/adapters/test_gemini_live.py``. A disconnect
aborts TCP halfway through the n-th response's audio.

Gemini specifics the suite reads from the flags: a barge-in is not reported on the wire
(``truncates_on_wire = False``: with ``START_OF_ACTIVITY_INTERRUPTS`` the server cuts its own
generation at ``activityStart``) and there is no cancel message (``cancels_on_wire = False``).
The model continues after tool results without being asked, so every ``toolResponse`` is also
the continuation.

Modes: ``minimal`` (what the adapter acts on, plus the resumption updates its setup asks for)
and ``full_events`` (the Live API's other server messages interleaved: ``usageMetadata``,
``voiceActivity``, input transcriptions, ``interactionStatus``, non-resumable resumption
updates; see ``server.py``). ``goAway`` has its own tests in ``test_gemini_live.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.agents.base import AgentAdapter
from runtime.agents.providers.gemini_live import GeminiLiveAdapter, make_adapter
from runtime.core.audio import Pcm
from tests.adapters.harness import ErrorKind, Scenario
from tests.fakes.gemini_live.server import (
    BAD_KEY,
    INVALID_ARGUMENT,
    MODES,
    QUOTA_EXCEEDED,
    RATE_LIMITED,
    SERVER_ERROR,
    Call,
    Drop,
    Fail,
    FakeGeminiLive,
    Say,
    Send,
    Step,
    Tools,
    Turn,
)

TEST_KEY = "test-key"

CLOSES: dict[ErrorKind, tuple[int, str]] = {
    "authentication": BAD_KEY,
    "rate_limit": RATE_LIMITED,
    "quota": QUOTA_EXCEEDED,
    "server": SERVER_ERROR,
    "protocol": INVALID_ARGUMENT,
}
"""Each error category as the Live API's close frame (code, reason)."""

FAILURES: dict[ErrorKind, Fail] = {
    "authentication": Fail(401, "API key expired. Please renew the API key.", "UNAUTHENTICATED"),
    "rate_limit": Fail(429, RATE_LIMITED[1], "RESOURCE_EXHAUSTED"),
    "quota": Fail(429, QUOTA_EXCEEDED[1], "RESOURCE_EXHAUSTED"),
    "server": Fail(500, SERVER_ERROR[1], "INTERNAL"),
    "protocol": Fail(400, INVALID_ARGUMENT[1], "INVALID_ARGUMENT"),
}
"""Each error category as an in-band error object (HTTP code, message, gRPC status)."""

UNKNOWN_EVENT = {"telepathy": {"note": "a message kind the Live API does not define"}}


def scenario_turns(scenario: Scenario) -> list[Turn]:
    """The scenario's script as fake-model turns (one per user turn end)."""
    turns: list[Turn] = []
    n = 0  # responses so far

    def response(steps: list[Step]) -> bool:
        """Open response ``n``; False when it fails instead of being produced."""
        if n in scenario.error_on_response:
            steps.append(FAILURES[scenario.error_on_response[n]])
            return False
        if scenario.unknown_event_on_response == n:
            steps.append(Send(UNKNOWN_EVENT))
        return True

    for st in scenario.script.turns if scenario.script is not None else []:
        steps: list[Step] = []
        if st.tools:
            n += 1
            if not response(steps):
                turns.append(Turn.of(*steps))
                continue
            if scenario.disconnect_on_response == n:
                turns.append(Turn.of(*steps, Drop()))
                continue
            steps.append(Tools.of(*(Call(t.name, dict(t.args)) for t in st.tools)))
        text = st.say or ""
        if text:
            n += 1
            if response(steps):
                ms = max(40, scenario.speech_ms_per_char * len(text))
                if scenario.disconnect_on_response == n:
                    steps += [Say(text[: len(text) // 2], ms=ms // 2, tone_hz=scenario.tone_hz),
                              Drop()]
                else:
                    steps.append(Say(text, ms=ms, tone_hz=scenario.tone_hz))
        turns.append(Turn.of(*steps))
    return turns


class GeminiLiveHarness:
    kind = "gemini-live"
    input_rate = 16_000
    output_rate = 24_000
    wire_rates = (16_000,)
    """The adapter always sends 16 kHz (the Live API's native input rate)."""
    truncates_on_wire = False
    cancels_on_wire = False
    modes: tuple[str, ...] = MODES

    def __init__(self) -> None:
        self.fake: FakeGeminiLive | None = None
        self.mode = "minimal"

    def configure(self, rate: int) -> None:
        assert rate in self.wire_rates, f"{self.kind} sends {self.wire_rates[0]} Hz only"

    async def start(self, scenario: Scenario) -> None:
        reject = CLOSES[scenario.handshake_error] if scenario.handshake_error else None
        mode = scenario.mode or self.mode
        if mode not in MODES:
            raise ValueError(f"{self.kind} fake modes are {MODES}, not {mode!r}")
        self.fake = FakeGeminiLive(
            scenario_turns(scenario), api_key=TEST_KEY, reject=reject,
            speedup=scenario.audio_speedup, mode=mode,
        )
        await self.fake.__aenter__()

    async def stop(self) -> None:
        if self.fake is not None:
            await self.fake.__aexit__(None, None, None)

    def _fake(self) -> FakeGeminiLive:
        assert self.fake is not None, "start() the harness first"
        return self.fake

    def adapter(self, *, api_key: str | None = TEST_KEY, voice: str | None = None,
                env: dict[str, str] | None = None) -> AgentAdapter:
        fake = self._fake()
        full = fake.env()
        full.pop("GEMINI_API_KEY")
        if api_key is not None:
            full["GEMINI_API_KEY"] = api_key
        if voice is not None:
            full["APEX_GEMINI_LIVE_VOICE"] = voice
        full.update(env or {})
        adapter: GeminiLiveAdapter = make_adapter(None, full)
        adapter.attach_lockstep(fake.sync)
        return adapter

    def sent(self) -> list[dict[str, Any]]:
        return list(self._fake().messages)

    def violations(self) -> list[str]:
        return list(self._fake().violations)

    def user_audio(self) -> Pcm:
        audio: Pcm = self._fake().input_audio(self.input_rate).astype(np.int16)
        return audio

    def tool_outputs(self) -> list[str]:
        return [
            fr.id or "" for tr in self._fake().tool_responses
            for fr in tr.function_responses or []
        ]

    def tool_output_indexes(self) -> list[int]:
        return [i for i, m in enumerate(self.sent()) if set(m) & {"tool_response", "toolResponse"}]

    def continuations(self) -> list[int]:
        # The Live API has no "respond now" message: a toolResponse makes the model continue.
        return self.tool_output_indexes()

    def truncations(self) -> list[int]:
        return []

    def cancels(self) -> int:
        return 0


HARNESSES = {"gemini-live": GeminiLiveHarness}
