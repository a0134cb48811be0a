""":class:`~tests.adapters.harness.ProviderHarness` implementations for the realtime fakes."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from runtime.agents.base import AgentAdapter
from runtime.core.audio import Pcm
from tests.adapters.harness import ProviderHarness, Scenario
from tests.fakes.realtime.base import API_KEY, FakeRealtimeServer, pcm_b64
from tests.fakes.realtime.gpt_live import GptLiveFake
from tests.fakes.realtime.openai_family import GrokFake, OpenAIFake, StepFunFake


class RealtimeHarness:
    kind: ClassVar[str]
    module: ClassVar[str]
    fake_class: ClassVar[type[FakeRealtimeServer]]
    url_env: ClassVar[str]
    key_env: ClassVar[str]
    voice_env: ClassVar[str]
    rate_env: ClassVar[str | None] = None
    wire_rates: ClassVar[tuple[int, ...]] = (24_000,)
    truncates_on_wire: ClassVar[bool] = False
    cancels_on_wire: ClassVar[bool] = False
    audio_types: ClassVar[tuple[str, ...]] = ("input_audio_buffer.append",)
    continuation_type: ClassVar[str] = "response.create"
    output_type: ClassVar[str] = "conversation.item.create"
    modes: tuple[str, ...] = ("minimal",)

    def __init__(self) -> None:
        self.input_rate = self.output_rate = 24_000
        self.fake: FakeRealtimeServer | None = None
        self.mode = "minimal"

    def configure(self, rate: int) -> None:
        assert rate in self.wire_rates, f"{self.kind} cannot run at {rate} Hz"
        self.input_rate = self.output_rate = rate

    async def start(self, scenario: Scenario) -> None:
        scenario = dataclasses.replace(scenario, mode=scenario.mode or self.mode)
        self.fake = self.fake_class(scenario, input_rate=self.input_rate,
                                    output_rate=self.output_rate)
        await self.fake.start()

    async def stop(self) -> None:
        if self.fake is not None:
            await self.fake.stop()

    def _fake(self) -> FakeRealtimeServer:
        assert self.fake is not None, "start() the harness first"
        return self.fake

    def adapter(self, *, api_key: str | None = API_KEY, voice: str | None = None,
                env: dict[str, str] | None = None) -> AgentAdapter:
        fake = self._fake()
        settings: dict[str, str] = {self.url_env: fake.url}
        if api_key is not None:
            settings[self.key_env] = api_key
        if voice is not None:
            settings[self.voice_env] = voice
        if self.rate_env is not None:
            settings[self.rate_env] = str(self.input_rate)
        settings.update(env or {})
        adapter: Any = importlib.import_module(self.module).make_adapter(None, settings)
        adapter.attach_lockstep(fake.settle)
        result: AgentAdapter = adapter
        return result

    def sent(self) -> list[dict[str, Any]]:
        return list(self._fake().received)

    def violations(self) -> list[str]:
        return list(self._fake().violations)

    def user_audio(self) -> Pcm:
        chunks = [
            pcm_b64(m["audio"]) for m in self._fake().received if m.get("type") in self.audio_types
        ]
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int16)

    def tool_output_indexes(self) -> list[int]:
        return [
            i for i, m in enumerate(self._fake().received)
            if m.get("type") == self.output_type
            and m.get("item", {}).get("type") == "function_call_output"
        ]

    def tool_outputs(self) -> list[str]:
        received = self._fake().received
        return [received[i]["item"]["call_id"] for i in self.tool_output_indexes()]

    def continuations(self) -> list[int]:
        return [
            i for i, m in enumerate(self._fake().received)
            if m.get("type") == self.continuation_type
        ]

    def truncations(self) -> list[int]:
        return [
            int(m["audio_end_ms"]) for m in self._fake().received
            if m.get("type") == "conversation.item.truncate"
        ]

    def cancels(self) -> int:
        return sum(1 for m in self._fake().received if m.get("type") == "response.cancel")


class OpenAIHarness(RealtimeHarness):
    kind = "openai-realtime"
    module = "runtime.agents.providers.openai_realtime"
    fake_class = OpenAIFake
    url_env = "APEX_OPENAI_REALTIME_URL"
    key_env = "OPENAI_API_KEY"
    voice_env = "APEX_OPENAI_REALTIME_VOICE"
    truncates_on_wire = True
    modes = ("minimal", "full_events")


class GrokHarness(RealtimeHarness):
    kind = "grok"
    module = "runtime.agents.providers.grok"
    fake_class = GrokFake
    url_env = "APEX_GROK_URL"
    key_env = "XAI_API_KEY"
    voice_env = "APEX_GROK_VOICE"
    rate_env = "APEX_GROK_SAMPLE_RATE"
    wire_rates = (24_000, 16_000, 48_000)
    truncates_on_wire = True
    cancels_on_wire = True
    modes = ("minimal", "full_events")


class StepFunHarness(RealtimeHarness):
    kind = "stepfun"
    module = "runtime.agents.providers.stepfun"
    fake_class = StepFunFake
    url_env = "APEX_STEPFUN_URL"
    key_env = "STEPFUN_API_KEY"
    voice_env = "APEX_STEPFUN_VOICE"
    cancels_on_wire = True
    modes = ("minimal", "full_events")


class GptLiveHarness(RealtimeHarness):
    kind = "gpt-live"
    module = "runtime.agents.providers.gpt_live"
    fake_class = GptLiveFake
    url_env = "APEX_GPT_LIVE_URL"
    key_env = "OPENAI_API_KEY"
    voice_env = "APEX_GPT_LIVE_VOICE"
    rate_env = "APEX_GPT_LIVE_SAMPLE_RATE"
    wire_rates = (24_000, 16_000)
    audio_types = ("session.input_audio.append",)
    output_type = "response.item.create"
    modes = ("minimal", "full_events", "silence_stream", "open_backend")


HARNESSES: dict[str, Callable[[], ProviderHarness]] = {
    "openai-realtime": OpenAIHarness,
    "grok": GrokHarness,
    "stepfun": StepFunHarness,
    "gpt-live": GptLiveHarness,
}
