"""The contract between the shared adapter suite and each provider's fake server.

Every test in ``tests/adapters/test_shared_*.py`` runs once per registered harness. A harness
owns one local fake server speaking its provider's wire protocol on ``127.0.0.1`` (port 0), and
builds that provider's real adapter (through its ``make_adapter(model, env)``) pointed at it.

The fake model is driven by a protocol-neutral :class:`Scenario`: a script of turns (tool calls
with arguments, then speech with a transcript) taken one per *user turn end* as the fake's
turn detection sees it, plus error and disconnect knobs. Each harness translates it into its
protocol's events; the suite asserts on the run (event log) and on the wire (what the fake
recorded the client sending), through the small neutral views below.

Registering a harness: put a module ``tests/fakes/<provider>/harness.py`` that defines
``HARNESSES: dict[str, Callable[[], ProviderHarness]]`` (registry kind → factory). It is found
by :func:`discover` without editing this file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from runtime.agents.base import AgentAdapter
from runtime.agents.scripted import Script
from runtime.core.audio import Pcm

ErrorKind = Literal["authentication", "rate_limit", "quota", "server", "protocol"]


@dataclass
class Scenario:
    """What the fake model does and how the fake server misbehaves."""

    script: Script | None = None
    """Turns taken one per user turn end: ``tools`` (all called in one response, in order, as
    parallel calls), then ``say`` (audio + transcript) once the tool outputs are in. ``after``,
    ``hangup`` and ``barge_in`` are ignored: a fake model answers when the user stops talking."""
    speech_ms_per_char: int = 55
    """Length of the fake's speech (a tone) per transcript character."""
    tone_hz: float = 440.0
    audio_speedup: float = 4.0
    """Audio is streamed this many times faster than real time, paced by the user frames the
    fake receives (so lockstep runs stay deterministic); 0 sends each utterance in one burst."""
    done_lag_frames: int = 1
    """A response's ``done`` (end of a tool-call batch, of an utterance) follows its last
    content after this many user frames, like a real server's; 0 sends it with the content.
    (For protocols without such an event, harnesses may ignore it.)"""
    handshake_error: ErrorKind | None = None
    """Refuse the session: ``authentication`` as the provider does for a bad key, the others
    as an error answering the session setup."""
    error_on_response: dict[int, ErrorKind] = field(default_factory=dict)
    """The n-th response (1-based) fails with this category instead of being produced."""
    disconnect_on_response: int | None = None
    """Drop the TCP connection (no close frame) in the middle of the n-th response's audio."""
    unknown_event_on_response: int | None = None
    """Send an event type the protocol does not define at the start of the n-th response."""
    mode: str | None = None
    """How the fake speaks its protocol: one of its harness's :attr:`ProviderHarness.modes`
    (``minimal``: only the events the adapter acts on; ``full_events``: the provider's whole
    documented server event set, keep-alives, transcription updates, rate limits, text deltas
    interleaved; provider modes such as ``silence_stream`` or ``server_vad``). ``None``: the
    harness's current :attr:`ProviderHarness.mode`."""


def oracle_conversation(task_id: str, **knobs: Any) -> Scenario:
    """The fake model plays a shipped task's oracle script over the provider's protocol.

    A realtime model does not greet unprompted, so the oracle's opening greeting (turns before
    the first tool call that wait for nobody) is dropped: the frozen user opens after its
    silence, and each remaining turn is taken when the user stops talking.
    """
    from runtime.agents.scripted import load_script
    from runtime.core.spec import find_task

    script = load_script(find_task(task_id).folder / "scripts" / "oracle.yaml")
    turns = list(script.turns)
    while turns and not turns[0].tools and turns[0].after in (None, "none"):
        turns.pop(0)
    return Scenario(script=script.model_copy(update={"turns": turns}), **knobs)


class ProviderHarness(Protocol):
    kind: str
    """Registry kind of the adapter under test (``openai-realtime``, ``gemini-live``, …)."""
    input_rate: int
    """Rate of the user audio on the wire (what the fake decodes)."""
    output_rate: int
    """Rate of the agent audio on the wire (what the fake sends)."""
    truncates_on_wire: bool
    """Whether a barge-in sends the heard position to the provider (:meth:`truncations`)."""
    cancels_on_wire: bool
    """Whether a barge-in sends an explicit cancel (:meth:`cancels`)."""
    wire_rates: tuple[int, ...]
    """Sample rates the adapter can put on the wire (the first is its default)."""
    modes: tuple[str, ...]
    """The fake's wire modes (:attr:`Scenario.mode`); the first is ``minimal``. The shared
    suite runs every test once per mode."""
    mode: str
    """The mode :meth:`start` applies to a scenario that names none."""

    def configure(self, rate: int) -> None:
        """Run at wire sample rate ``rate`` (one of :attr:`wire_rates`); call before start."""
        ...

    async def start(self, scenario: Scenario) -> None:
        """Start the fake server (127.0.0.1, port 0) for this scenario."""
        ...

    async def stop(self) -> None: ...

    def adapter(self, *, api_key: str | None = "test-key", voice: str | None = None,
                env: dict[str, str] | None = None) -> AgentAdapter:
        """The provider's real adapter from ``make_adapter(None, env)``, pointed at the fake
        and locked in step with it for virtual-clock runs. ``api_key=None`` leaves the key
        variable unset; a key other than ``test-key`` is refused by the fake."""
        ...

    def sent(self) -> list[dict[str, Any]]:
        """Every message the client sent, parsed, in order (the raw record)."""
        ...

    def violations(self) -> list[str]:
        """Messages either side sent that do not match the provider's models (SDK types
        where the SDK ships them). The suite asserts this stays empty."""
        ...

    def user_audio(self) -> Pcm:
        """All user audio the fake received, decoded at :attr:`input_rate`."""
        ...

    def tool_outputs(self) -> list[str]:
        """Call ids of the tool results the client sent, in order."""
        ...

    def continuations(self) -> list[int]:
        """Indexes in :meth:`sent` of the messages asking the model to continue / respond."""
        ...

    def tool_output_indexes(self) -> list[int]:
        """Indexes in :meth:`sent` of the tool-result messages."""
        ...

    def truncations(self) -> list[int]:
        """Heard positions (ms) the client reported after barge-ins."""
        ...

    def cancels(self) -> int:
        """How many explicit response cancels the client sent."""
        ...


def discover() -> dict[str, Callable[[], ProviderHarness]]:
    """Every ``HARNESSES`` mapping found in ``tests/fakes/*/harness.py``."""
    import tests.fakes as fakes

    found: dict[str, Callable[[], ProviderHarness]] = {}
    for info in sorted(pkgutil.iter_modules(fakes.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        try:
            module = importlib.import_module(f"tests.fakes.{info.name}.harness")
        except ModuleNotFoundError as exc:
            if exc.name == f"tests.fakes.{info.name}.harness":
                continue
            raise
        found.update(getattr(module, "HARNESSES", {}))
    return found
