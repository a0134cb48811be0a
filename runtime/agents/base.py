"""The one seam between the runtime and any evaluated voice agent (appendix D.1).

Adapters translate a provider's stream into these normalized events. The media clock is the
only clock an adapter sees: every call carries ``t_media_ms``. ``__init__`` does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from runtime.core.audio import Pcm


@dataclass(frozen=True)
class AgentSessionConfig:
    task_id: str
    instructions: str
    tools: list[dict[str, Any]]
    sample_rate: int
    voice: str | None = None
    clock: Literal["virtual", "realtime"] = "virtual"
    """The media clock's mode: a local agent may compute inline in ``virtual`` mode (media time
    waits for it) but must not block the event loop in ``realtime`` mode."""


@dataclass(frozen=True)
class AudioDelta:
    pcm: Pcm


@dataclass(frozen=True)
class TranscriptDelta:
    text: str


@dataclass(frozen=True)
class TranscriptDone:
    text: str


@dataclass(frozen=True)
class ToolCallRequest:
    call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResponseDone:
    pass


@dataclass(frozen=True)
class Interrupted:
    """The agent yields the floor: unplayed audio of the current response is dropped."""

    reason: str = "barge_in"


@dataclass(frozen=True)
class Hangup:
    pass


@dataclass(frozen=True)
class ProtocolUnknown:
    """The provider sent a message type the adapter does not model; it was ignored (logged as
    ``agent.protocol_unknown``, counted in the run's diagnostics)."""

    event_type: str
    message: str = ""


@dataclass(frozen=True)
class AgentErrorSignal:
    category: str
    message: str
    fatal: bool = False


AgentEvent = (
    AudioDelta | TranscriptDelta | TranscriptDone | ToolCallRequest | ResponseDone
    | Interrupted | Hangup | AgentErrorSignal | ProtocolUnknown
)


class InfrastructureError(Exception):
    """The connection to the agent failed (network, provider outage). The run ends as an
    infrastructure drop, never as an agent failure."""


class AgentAdapter(Protocol):
    name: str

    async def connect(self, config: AgentSessionConfig) -> None: ...

    async def send_audio(self, frame: Pcm, t_media_ms: int) -> None:
        """One 40 ms user frame at the runtime's sample rate."""
        ...

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None: ...

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        """Everything the agent produced up to ``t_media_ms`` (never blocks for long)."""
        ...

    async def truncated(self, heard_ms: int) -> None:
        """The user heard only ``heard_ms`` of the current response."""
        ...

    async def close(self) -> None: ...


class SteadyListener(Protocol):
    """Optional, for in-process agents on the virtual clock: hear a stretch of frames at once.

    ``hear_steady(pcm, t)`` must do exactly what ``send_audio(frame_i, t_i)`` followed by
    ``poll(t_i)`` would do for each whole frame of ``pcm`` in order, and stop *before* the
    first frame after which ``poll`` would return anything (that frame is not heard: the
    orchestrator plays it the ordinary way). It returns the number of frames heard. An
    adapter without it (every wire adapter) is played frame by frame."""

    async def hear_steady(self, pcm: Pcm, t_media_ms: int) -> int: ...
