"""The canonical event log (DESIGN §3): one append-only JSONL file per run.

Every event carries ``seq``, ``t_media_ms``, ``t_wall``, ``source`` and ``type`` plus a typed
payload; the union below is discriminated on ``type``. Grading, replay and study exports are
all computed from this log, so it imports nothing from the audio stack.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from runtime.core.durability import SYNCER

Source = Literal["orchestrator", "user", "agent", "workbench", "observer", "environment"]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int = 0
    t_media_ms: int = 0
    t_wall: float = 0.0
    source: Source


ClockMode = Literal["virtual", "realtime"]
"""The media clock's mode: ``realtime`` paced by the wall clock, ``virtual`` as fast as it can."""
EndReason = Literal[
    "terminal_state", "agent_hangup", "user_goodbye", "timeout", "idle_timeout",
    "infrastructure_error", "agent_error",
]
"""Why a run ended (``session.end``; ``meta.json``'s ``end_reason``)."""
FailureClass = Literal["none", "agent", "infrastructure"]
"""Whose failure ended a run: an infrastructure failure is never the agent's."""


def failure_class_of(reason: EndReason) -> FailureClass:
    """The failure class an end reason carries."""
    if reason == "infrastructure_error":
        return "infrastructure"
    if reason in ("agent_error", "timeout", "idle_timeout"):
        return "agent"
    return "none"


class SessionStart(_Event):
    type: Literal["session.start"] = "session.start"
    source: Source = "orchestrator"
    task_id: str
    task_version: str
    agent: str
    seed: int
    clock: ClockMode
    sample_rate: int
    frame_ms: int


class SessionEnd(_Event):
    type: Literal["session.end"] = "session.end"
    source: Source = "orchestrator"
    reason: EndReason
    failure_class: FailureClass = "none"
    detail: str = ""


class UserPlanEvent(_Event):
    type: Literal["user.plan"] = "user.plan"
    source: Source = "user"
    plan_id: str
    intent: str
    trigger: str
    facts: list[str] = Field(default_factory=list)
    """``fact@version`` for every fact the plan may reveal."""


class UserSpeechStart(_Event):
    type: Literal["user.speech.start"] = "user.speech.start"
    source: Source = "user"
    plan_id: str
    realization_id: str
    text: str
    duration_ms: int


class UserSpeechEnd(_Event):
    type: Literal["user.speech.end"] = "user.speech.end"
    source: Source = "user"
    plan_id: str
    realization_id: str


class AgentSpeechStart(_Event):
    type: Literal["agent.speech.start"] = "agent.speech.start"
    source: Source = "agent"
    turn: int


class AgentSpeechEnd(_Event):
    type: Literal["agent.speech.end"] = "agent.speech.end"
    source: Source = "agent"
    turn: int
    played_ms: int


class AgentTruncated(_Event):
    """Agent audio dropped on yield/barge-in: the trace keeps only what the user heard."""

    type: Literal["agent.truncated"] = "agent.truncated"
    source: Source = "agent"
    turn: int
    heard_ms: int
    dropped_ms: int
    reason: str


class AgentTranscript(_Event):
    type: Literal["agent.transcript"] = "agent.transcript"
    source: Source = "agent"
    turn: int
    text: str


class AgentAct(_Event):
    type: Literal["agent.act"] = "agent.act"
    source: Source = "observer"
    turn: int
    act: str
    field: str | None = None
    artifact: str | None = None
    action: str | None = None
    text: str


class AgentHangup(_Event):
    type: Literal["agent.hangup"] = "agent.hangup"
    source: Source = "agent"


class ToolCall(_Event):
    type: Literal["tool.call"] = "tool.call"
    source: Source = "agent"
    call_id: str
    name: str
    args: dict[str, Any]


class ToolResult(_Event):
    type: Literal["tool.result"] = "tool.result"
    source: Source = "workbench"
    call_id: str
    name: str
    ok: bool
    result: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    evidence: list[str] = Field(default_factory=list)
    """Knowledge document ids returned to the agent (required-evidence checks)."""


class ArtifactUpdate(_Event):
    """A new artifact version: the full field snapshot, so any moment can be replayed."""

    type: Literal["artifact.update"] = "artifact.update"
    source: Source = "workbench"
    artifact_id: str
    version: int
    lifecycle: str
    changed: list[str]
    fields: dict[str, Any]


class ArtifactLifecycle(_Event):
    type: Literal["artifact.lifecycle"] = "artifact.lifecycle"
    source: Source = "workbench"
    artifact_id: str
    version: int
    from_state: str
    to_state: str


class AuthGrant(_Event):
    type: Literal["auth.grant"] = "auth.grant"
    source: Source = "workbench"
    token: str
    action: str
    plan_id: str | None = None
    evidence: str = ""
    artifact_version: int | None = None
    """The version of the action's artifact the approval was given for: a material edit
    after it invalidates the token (``auth.invalidated``)."""


class AuthRevoke(_Event):
    type: Literal["auth.revoke"] = "auth.revoke"
    source: Source = "workbench"
    token: str | None
    action: str
    plan_id: str | None = None
    evidence: str = ""


class AuthHold(_Event):
    """Approval-gated tool calls were held while a live participant's authorization decision
    was still being computed, then released: ``decided`` when the decision came in,
    ``expired`` when the hold's bound (``AUTH_HOLD_MS``) passed first. An expired hold
    followed by a CommitGuard block is the pipeline's fault, never the agent's: the run is
    graded as an infrastructure failure."""

    type: Literal["auth.hold"] = "auth.hold"
    source: Source = "orchestrator"
    call_ids: list[str]
    tools: list[str]
    waited_ms: int
    outcome: Literal["decided", "expired"]


class AuthInvalidated(_Event):
    """An approval stopped being valid because its artifact was materially edited after it
    was given (the approval covered the artifact as it was): the agent must ask again."""

    type: Literal["auth.invalidated"] = "auth.invalidated"
    source: Source = "workbench"
    token: str
    action: str
    artifact_version: int
    """The artifact's version after the edit."""
    changed: list[str]
    """The fields whose values the edit changed."""


class AuthUse(_Event):
    type: Literal["auth.use"] = "auth.use"
    source: Source = "workbench"
    token: str
    action: str
    call_id: str


class AuthBlocked(_Event):
    """The CommitGuard refused a gated action without a valid token."""

    type: Literal["auth.blocked"] = "auth.blocked"
    source: Source = "workbench"
    action: str
    call_id: str
    reason: str


class DuplexFire(_Event):
    """An authored duplex event fired at ``anchor_ms``: ``offset_ms`` after the end of the
    caller's anchor plan (media time; the agent's timing never moves it)."""

    type: Literal["duplex.fire"] = "duplex.fire"
    source: Source = "orchestrator"
    event_id: str
    kind: str
    plan_id: str
    anchor_ms: int
    overlap: bool | None = None
    """Whether agent audio was playing when it fired (None in logs written before 2026-12)."""


class WorldEventFired(_Event):
    type: Literal["world.event"] = "world.event"
    source: Source = "environment"
    event_id: str
    description: str


class AgentProtocolUnknown(_Event):
    """The provider sent a message type its adapter does not model; it was ignored (outside
    strict mode). Counted in the run's and the campaign's diagnostics."""

    type: Literal["agent.protocol_unknown"] = "agent.protocol_unknown"
    source: Source = "agent"
    event_type: str
    message: str = ""


class AgentErrorEvent(_Event):
    type: Literal["agent.error"] = "agent.error"
    source: Source = "agent"
    category: str
    message: str


# ---------------------------------------------------------------- live participant (Study B)
# A live human replaces the frozen simulator: the reveal graph runs in cue mode
# (runtime/user/live_user.py), facts appear on the participant's private role card and authored
# benchmark-critical events appear as private cues; authorization comes from their speech
# (runtime/user/speech_authorization.py). None of these carries a gold value.


class CueShow(_Event):
    """A private cue appeared on the participant's role card, at the moment the frozen
    simulator would have started speaking the plan."""

    type: Literal["cue.show"] = "cue.show"
    source: Source = "user"
    cue_id: str
    kind: Literal["correct", "approve", "revoke", "world_event", "duplex", "goodbye", "inform"]
    plan_id: str
    text: str


class CueDone(_Event):
    """A cue left the card: the participant's next utterance ended (``spoken``; for an
    approve/revoke cue: an utterance whose decision was a grant/revoke), or a newer cue took
    its place (``superseded``)."""

    type: Literal["cue.done"] = "cue.done"
    source: Source = "user"
    cue_id: str
    reason: Literal["spoken", "superseded"] = "spoken"


class CardFact(_Event):
    """A fact (or a newer version of it) appeared on the participant's role card."""

    type: Literal["card.fact"] = "card.fact"
    source: Source = "user"
    fact_id: str
    version: int
    known_at_start: bool = False
    """The participant's own knowledge, on the card from the first second (a ``volunteer``
    or ``on_ask`` fact's first version): not a reveal. Released facts (a correction, a fact
    learned during the call) have False."""


class UserTranscript(_Event):
    """The ASR transcript of one live utterance (media times of its first and last voiced
    frame). ``error`` names an ASR failure; the text is then empty."""

    type: Literal["user.transcript"] = "user.transcript"
    source: Source = "user"
    text: str
    start_ms: int
    end_ms: int
    asr: str
    error: str = ""


class AuthDecisionEvent(_Event):
    """Authorization read from a live utterance's transcript with the active cue as context.
    A grant/revoke is applied by the orchestrator right after this event (the next event is
    the ``auth.grant`` / ``auth.revoke`` it caused). A researcher's correction lives in
    ``corrections.jsonl`` beside the log (grading/corrections.py), never in this file."""

    type: Literal["auth.decision"] = "auth.decision"
    source: Source = "user"
    decision: Literal["grant", "revoke", "none"]
    action: str | None = None
    confidence: float
    evidence: str
    """The transcript the decision rests on."""
    classifier: str
    cue_id: str | None = None
    rationale: str = ""
    """Which rule (phrase) decided, in words."""


class ParticipantConnection(_Event):
    type: Literal["participant.connection"] = "participant.connection"
    source: Source = "user"
    state: Literal["connected", "disconnected"]


Event = Annotated[
    SessionStart | SessionEnd | UserPlanEvent | UserSpeechStart | UserSpeechEnd
    | AgentSpeechStart | AgentSpeechEnd | AgentTruncated | AgentTranscript | AgentAct
    | AgentHangup | ToolCall | ToolResult | ArtifactUpdate | ArtifactLifecycle | AuthGrant
    | AuthRevoke | AuthHold | AuthInvalidated | AuthUse | AuthBlocked | DuplexFire | WorldEventFired
    | AgentErrorEvent | AgentProtocolUnknown | CueShow | CueDone | CardFact | UserTranscript
    | AuthDecisionEvent
    | ParticipantConnection,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class EventLog:
    """Append-only JSONL writer. Each event is flushed to the OS as it is written (a killed
    process loses nothing), and the file is fsync'ed off the media loop at most a second after
    (runtime/core/durability.py), so a power cut loses at most the last second.

    While it is open the log holds an exclusive ``flock`` on its file: crash recovery
    (runtime/core/rundir.py) leaves a run alone while its writer lives (the kernel drops the
    lock
    when the process dies, however it dies)."""

    def __init__(self, path: Path, *, wall_clock: bool = True) -> None:
        self.path = path
        self._fh = path.open("a", encoding="utf-8")
        with contextlib.suppress(OSError):  # best effort: a file system without locks
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._seq = 0
        self._wall = wall_clock
        self.events: list[Event] = []

    def emit(self, event: Event, t_media_ms: int) -> Event:
        self._seq += 1
        event.seq = self._seq
        event.t_media_ms = t_media_ms
        event.t_wall = round(time.time(), 6) if self._wall else 0.0
        self._fh.write(event.model_dump_json() + "\n")
        self._fh.flush()
        SYNCER.mark(self._fh.fileno())  # fsync'ed off the media loop (runtime/core/durability.py)
        self.events.append(event)
        return event

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            fd = self._fh.fileno()
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)  # the writer is done (the copy below shares it)
            last = os.dup(fd)
            SYNCER.forget(fd)
            self._fh.close()
            SYNCER.close_later(last)  # the last fsync and the close, off the media loop


class LogReadResult(BaseModel):
    events: list[Event]
    problems: list[str]
    """Lines that could not be read (e.g. a truncated last line after a crash)."""


T = TypeVar("T")


def read_jsonl(path: Path, parse: Callable[[Any], T], what: str) -> tuple[list[T], list[str]]:
    """Every readable line of a JSON-lines file parsed with ``parse``, and one problem line
    (``file:line: unreadable <what> (…)``) per line that is not valid JSON or not valid for
    ``parse`` (e.g. a truncated last line after a crash). Blank lines are skipped."""
    out: list[T] = []
    problems: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                out.append(parse(json.loads(line)))
            except (json.JSONDecodeError, ValidationError) as exc:
                first = str(exc).splitlines()[0]
                problems.append(f"{path}:{lineno}: unreadable {what} ({first})")
    return out, problems


def read_events(path: Path) -> LogReadResult:
    """Read an event log, keeping every readable event and naming each unreadable line."""
    events, problems = read_jsonl(path, EVENT_ADAPTER.validate_python, "event")
    return LogReadResult(events=events, problems=problems)


def iter_type(events: list[Event], cls: type[_Event]) -> Iterator[Any]:
    return (e for e in events if isinstance(e, cls))


def comparable(event: Event) -> dict[str, Any]:
    """The event without wall-clock fields, for determinism checks."""
    return event.model_dump(exclude={"t_wall"})
