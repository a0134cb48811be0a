"""A live participant as the user source of the media-clock orchestrator (Study B, app. F.1/F.3).

The participant's microphone takes the user channel; the task's reveal graph runs in *cue
mode*: the same :class:`~runtime.user.simulator.RevealPolicy` the frozen simulator uses decides,
at the same media-clock moments, which plan the user would voice next, but instead of playing
a frozen realization the participant is shown

* a private **role card** (:class:`RoleCard`) that holds, from the first second, the
  participant's goal, persona and every fact they know before the call (``volunteer`` and
  ``on_ask`` facts, the latter to be given when asked); facts the reveal graph holds back (a
  correction, something learned during the call) appear when released (``after_plan``: once
  the participant finished that plan; ``on_event``: once the world event fired; or when a plan
  that carries them comes due), and
* a private **cue** (:class:`Cue`) when the plan is benchmark-critical: an approval, a
  revocation, a correction, a goodbye, an ``inform`` plan, a world-event plan or a duplex
  event (barge-in, overlap, backchannel, …) fired at its media-time anchor.

Other plans (plain answers, clarifications) only reveal their facts: the participant answers
in their own words. Speech is segmented with a voice-activity detector; an utterance is
attributed to the plan that was due when it started (``user.plan`` with trigger
``live:<trigger>``) or to the plan id ``live``. At its end it is transcribed off the media
clock's thread (``user.transcript``) and classified for authorization with the active cue as
context (``auth.decision``, runtime/user/speech_authorization.py); a grant or revocation travels on
the :class:`~runtime.user.simulator.UserFrame` and the orchestrator applies it to the ledger.

The card never holds a gold value the user does not know (:func:`user_known_values`): no
document- or instruction-derived field value, grader name, required action, terminal predicate
or reference trajectory; in goals, constraints and the persona a value not released yet reads
as the version on the card (or "…"), and constraints that script an authored event ("then
corrects it while the agent is talking") are never shown: the cue says when. An agent turn
that ends while the participant speaks is answered when they finish, and the utterance that
overlapped it is attributed to the reply. See docs/live_user.md.
"""

from __future__ import annotations

import copy
import functools
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel

from runtime.agents.scripted import EnergyVAD
from runtime.core.audio import FRAME_MS, FRAME_SAMPLES, SAMPLE_RATE, VOICE_RMS, Pcm, rms, silence
from runtime.core.events import (
    AuthDecisionEvent,
    CardFact,
    CueDone,
    CueShow,
    Event,
    ParticipantConnection,
    UserPlanEvent,
    UserSpeechEnd,
    UserSpeechStart,
    UserTranscript,
)
from runtime.core.spec import (
    Fact,
    Lifecycle,
    RevealAfterPlan,
    RevealOnAsk,
    RevealOnEvent,
    RevealRule,
    RevealVolunteer,
    TaskSpec,
    UserPlan,
)
from runtime.session.observer import Act
from runtime.speech.asr import ASR, recognizer_for_lane
from runtime.speech.asr_queue import AUTHORIZATION, ROUTINE, TranscriptionQueue, shared_queue
from runtime.user.simulator import (
    Chosen,
    DuplexSchedule,
    RevealPolicy,
    SpeechAuthorization,
    UserFrame,
    opening_after_silence,
)
from runtime.user.speech_authorization import AuthDecision, RuleAuthorizer, SpeechAuthorizer

TAIL_FRAMES = 4
"""Quiet frames (160 ms) kept after the last voiced frame of an utterance; after this many the
utterance is transcribed speculatively while the VAD waits out its end-of-utterance quiet, so
the decision on "yes, please submit it" is ready about when the VAD ends the utterance."""

STALL_FRAMES = 5
"""Consecutive underruns (200 ms) after which a missing microphone counts as quiet: the device
stalled or is gone. Fewer are audio that is late, not a pause (see ``next_frame``)."""

CueKind = Literal["correct", "approve", "revoke", "world_event", "duplex", "goodbye", "inform"]

GUIDANCE = (
    "Speak naturally and in your own words: do not read this card aloud word for word. "
    "Mention only what is on your card. When a private cue appears, act on it right away: it "
    "tells you when to correct something, give or take back an approval, cut in, or say "
    "goodbye. If a value on your card changes, wait for a cue before bringing it up. If the "
    "assistant has said nothing after a few seconds, start by saying why you are calling."
)


class RoleCardFact(BaseModel):
    fact_id: str
    description: str
    """A short label (the graded field's label), never the author's stage notes."""
    value: Any
    version: int
    """1 for the first value; a higher version is a correction that replaced the earlier one."""
    since_ms: int
    known_at_start: bool = False
    """On the card from the first second (what the participant knows before the call);
    False: released during the call (the page highlights it)."""
    when_asked: bool = False
    """Give it when the assistant asks for it (an ``on_ask`` fact), not up front."""


class Cue(BaseModel):
    cue_id: str
    kind: CueKind
    plan_id: str
    text: str
    """What the participant is asked to do, in plain words (fact values they now know, never a
    gold-only value)."""
    shown_ms: int
    done_ms: int | None = None


class RoleCard(BaseModel):
    persona_name: str
    persona_role: str
    speaking_style: str
    goals: list[str]
    constraints: list[str]
    objective_for_user: str
    """Who the participant is and what they want, from the UserState (``task.objective``
    describes the agent's job and would give the reveal graph away: never shown)."""
    facts: list[RoleCardFact]
    cues: list[Cue]
    active_cue: Cue | None
    elapsed_ms: int
    guidance: str


@dataclass(frozen=True)
class PendingPlan:
    """The plan the policy expects the participant to voice now (for researchers' views and
    test drivers; it is not part of the participant's card)."""

    plan_id: str
    trigger: str
    shown_ms: int


# --------------------------------------------------------------------------- card helpers

_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _scalars(value: Any) -> Iterable[Any]:
    if isinstance(value, list | tuple):
        for v in value:
            yield from _scalars(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif value is not None:
        yield value


def surface_forms(value: Any, spoken: Iterable[str] = ()) -> set[str]:
    """Ways a value can appear in text: itself, each list element, ``June 11`` / ``June
    11th`` / ``11 June`` for an ISO date, ``1,870`` for a number, and the fact's spoken
    forms."""
    out: set[str] = set(spoken)
    for v in _scalars(value):
        text = str(v).strip()
        out.add(text)
        m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text)
        if m:
            month, day = _MONTHS[int(m.group(2)) - 1], int(m.group(3))
            out |= {f"{month} {day}", f"{month} {_ordinal(day)}", f"{day} {month}"}
        if isinstance(v, int | float) and not isinstance(v, bool) and abs(v) >= 1000:
            out.add(f"{v:,}")
    return {s for s in out if s}


def styled_forms(value: Any, spoken: Sequence[str] = ()) -> dict[str, str]:
    """:func:`surface_forms` keyed by their style (``text``, ``md`` "June 11", ``mdo``
    "June 11th", ``dm`` "11 June", ``comma`` "1,870", ``spoken0`` …, ``item0.md`` … for a
    list), so a form of one value can be swapped for the same form of another."""
    out: dict[str, str] = {f"spoken{i}": s for i, s in enumerate(spoken) if s}
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            out.update({f"item{i}.{k}": f for k, f in styled_forms(v).items()})
        return out
    if value is None:
        return out
    text = str(value).strip()
    out["text"] = text
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text)
    if m:
        month, day = _MONTHS[int(m.group(2)) - 1], int(m.group(3))
        out |= {"md": f"{month} {day}", "mdo": f"{month} {_ordinal(day)}",
                "dm": f"{day} {month}"}
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) >= 1000:
        out["comma"] = f"{value:,}"
    return {k: f for k, f in out.items() if f}


def field_gold_strings(task: TaskSpec) -> set[str]:
    """Every graded field's gold value as text (list and interval elements one by one)."""
    return {
        str(v).strip() for _a, spec in task.graded_fields() for v in _scalars(spec.gold)
        if str(v).strip()
    }


def mentions(text: str, form: str) -> bool:
    """``form`` occurs in ``text`` as a whole word or phrase (case-insensitive)."""
    return re.search(rf"(?<!\w){re.escape(form)}(?!\w)", text, re.IGNORECASE) is not None


def fact_label(task: TaskSpec, fact: Fact) -> str:
    """The label of the graded field the fact feeds; otherwise the fact's description up to
    its first comma, semicolon or parenthesis (descriptions carry stage notes after them)."""
    for _art, spec in task.graded_fields():
        if spec.source.fact == fact.id:
            return spec.label
    return re.split(r"[;,(]", fact.description, maxsplit=1)[0].strip() or fact.id


def _display(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(_display(v) for v in value)
    return str(value)


def reveal_rule(fact: Fact, version: int) -> RevealRule:
    return fact.versions[version - 1].reveal or fact.reveal


def user_known_values(task: TaskSpec, card: RoleCard) -> set[str]:
    """What the participant legitimately knows given this card: every form of each shown
    fact's value and of its earlier versions (a correction's old value was theirs too), and
    their own name."""
    known = surface_forms(card.persona_name)
    for shown in card.facts:
        fact = task.user.fact(shown.fact_id)
        if fact is None:
            continue
        for v in fact.versions[:shown.version]:
            known |= surface_forms(v.value, v.spoken)
    return known


_STAGE = re.compile(
    r"\b(?:at first|first (?:says|gives|asks|names|mentions|describes|thinks|reads|picks|"
    r"quotes|misreads|misspeaks)|then (?:corrects|clarifies|withdraws|remembers|cancels|"
    r"interrupts|realizes|adds|cuts)|corrects?|corrected|cuts? in|barges? in|interrupts?|"
    r"withdraws?|realizes?|remembers|misreads?|misstates?|mixes|misspeaks?|backchannels?|"
    r"same breath|over the (?:agent|assistant)|while the (?:agent|assistant)|mid-call|"
    r"mid-sentence|forgets|changes? (?:her|his|their) mind|until|clarif(?:y|ies))\b",
    re.IGNORECASE,
)
"""Stage notes: a goal or constraint that scripts an authored event is the cue's job."""


def _strip_stage_parentheses(line: str) -> str:
    return re.sub(
        r"\s*\(([^)]*)\)", lambda m: "" if _STAGE.search(m.group(1)) else m.group(0), line
    ).strip()


# --------------------------------------------------------------------------- cue wording

_DUPLEX_OPENERS = {
    "barge_in": "Cut in now, while the assistant is still talking.",
    "overlap": "Start talking now, over the assistant.",
    "backchannel": (
        "While the assistant keeps talking, make a short listening sound such as \"mm-hm\"; "
        "do not take the turn."
    ),
    "correction": "Cut in now, while the assistant is still talking, to correct yourself.",
    "cancellation": "Cut in now, while the assistant is still talking, to take something back.",
    "clarification": "Cut in now, while the assistant is still talking, to clarify.",
}


def cue_kind(plan: UserPlan, trigger: str) -> CueKind | None:
    """The cue a plan gets in cue mode, or None for a plain answer (facts only)."""
    auth = plan.authorization
    if auth is not None and auth.grant:
        return "approve"
    if (auth is not None and auth.revoke) or plan.intent == "revoke":
        return "revoke"
    if plan.intent == "approve":
        return "approve"
    if trigger.startswith("duplex:") or plan.intent == "barge_in":
        return "duplex"
    if trigger.startswith("world_event:"):
        return "world_event"
    if plan.intent == "correct":
        return "correct"
    if plan.intent == "goodbye":
        return "goodbye"
    if plan.intent == "inform":
        return "inform"
    return None


def _action_words(task: TaskSpec, action: str) -> tuple[str, str]:
    rule = next((r for r in task.authorization if r.action == action), None)
    if rule is None:
        return "go ahead with", "request"
    art = task.artifact(rule.artifact)
    return rule.verbs[0], art.title if art is not None else rule.artifact


def _fact_sentences(task: TaskSpec, plan: UserPlan, said: dict[str, int]) -> list[str]:
    by_fact: dict[str, list[int]] = {}
    for ref in plan.facts:
        by_fact.setdefault(ref.fact, []).append(ref.version)
    out: list[str] = []
    for fact_id, versions in by_fact.items():
        fact = task.user.fact(fact_id)
        if fact is None:
            continue
        label = fact_label(task, fact)
        vs = sorted(set(versions))
        values = [_display(fact.versions[v - 1].value) for v in vs]
        if len(vs) > 1 and said.get(fact_id, 0) < vs[0]:
            # Misspoken and corrected in the same breath.
            out.append(f"Give your {label} as {values[0]} first, then correct yourself to "
                       f"{values[-1]}.")
        elif vs[-1] > 1:
            before = _display(fact.versions[vs[-1] - 2].value)
            out.append(f"Correct your {label}: {values[-1]} (instead of {before}).")
        else:
            out.append(f"Your {label}: {values[0]}.")
    return out


def cue_text(task: TaskSpec, plan: UserPlan, trigger: str, kind: CueKind,
             world_line: str | None = None, said: dict[str, int] | None = None) -> str:
    """Plain-words instruction for a cue, from the plan's intent, trigger and facts.
    ``said``: the highest version of each fact carried by a plan the participant already
    voiced (a plan carrying an earlier and a later version of a fact not yet said is a
    same-breath correction; otherwise it corrects what they said)."""
    parts: list[str] = []
    if trigger.startswith("duplex:"):
        event = next((e for e in task.duplex_events if e.id == trigger[len("duplex:"):]), None)
        parts.append(_DUPLEX_OPENERS.get(event.kind if event else "barge_in",
                                         _DUPLEX_OPENERS["barge_in"]))
    elif trigger.startswith("world_event:"):
        parts.append(f"News just reached you: {world_line}" if world_line
                     else "News just reached you; it is on your card.")
        parts.append("Tell the assistant about it.")
    auth = plan.authorization
    if auth is not None and auth.grant:
        verb, title = _action_words(task, auth.grant)
        parts.append(f"The assistant asked for your go-ahead to {verb} the {title}. "
                     "If you agree, give it now.")
    elif auth is not None and auth.revoke:
        verb, title = _action_words(task, auth.revoke)
        parts.append(f"Take back your approval: tell the assistant not to {verb} the "
                     f"{title}.")
    elif kind == "approve":
        parts.append("The assistant asked for your go-ahead. If you agree, give it now.")
    elif kind == "revoke":
        parts.append("Take back your earlier approval now.")
    if plan.intent == "goodbye":
        parts.append("Thank the assistant and say goodbye.")
    parts += _fact_sentences(task, plan, said or {})
    if plan.intent not in ("goodbye", "backchannel"):
        parts.append("Say it in your own words.")
    return " ".join(parts)


# --------------------------------------------------------------------------- the participant

class FrameVAD(Protocol):
    """Frame-by-frame segmentation (``EnergyVAD``, ``SileroVAD``)."""

    in_speech: bool

    def push(self, frame: Pcm) -> Literal["onset", "end"] | None: ...


@dataclass
class _Pending:
    plan: UserPlan
    trigger: str
    shown_ms: int


@dataclass
class _Utterance:
    plan: UserPlan | None
    plan_id: str
    realization_id: str
    onset_ms: int
    start_ms: int
    frames: list[Pcm] = field(default_factory=list)
    last_loud: int = 0
    """Index in ``frames`` of the last frame with voice energy."""
    speculative: Future[tuple[str, str, str]] | None = None
    """ASR of ``frames[:cut()]`` started once the voice paused (dropped if it resumes)."""

    def cut(self) -> int:
        """Frames the transcript covers: up to :data:`TAIL_FRAMES` after the last voiced
        frame (the VAD's long end-of-utterance quiet is not sent to the recognizer)."""
        return min(len(self.frames), self.last_loud + 1 + TAIL_FRAMES)


@dataclass
class _Job:
    utt: _Utterance
    end_ms: int
    cue: Cue | None
    audio: Pcm
    priority: int = ROUTINE


@dataclass
class _Result:
    job: _Job
    text: str
    error: str
    decision: AuthDecision
    asr: str


class LiveParticipant:
    """A live human on the user channel, the reveal graph in cue mode.

    ``push_audio`` (any thread) feeds microphone PCM16 mono at 24 kHz into a bounded buffer;
    the orchestrator's ``next_frame`` takes one 40 ms frame from it (silence, counted as an
    underrun, when less than a frame is buffered) and never blocks: transcription and
    classification run on a worker thread and their result is applied on a later frame.
    ``transcribe_inline=True`` runs them inside the frame on which the utterance ends instead
    (ASR latency zero in media time): for virtual-clock runs of recorded audio and tests, never
    for a live session. ``cue_patience_ms``: how long a due plan waits for the participant
    before it stops counting as "about to speak" (so a silent participant cannot hold the run
    open) and an utterance is no longer attributed to it.
    """

    def __init__(
        self, task: TaskSpec, *, seed: int = 0, asr: ASR | None = None,
        classifier: SpeechAuthorizer | None = None, max_buffer_ms: int = 500,
        vad: FrameVAD | None = None, transcribe_inline: bool = False,
        cue_patience_ms: int = 15_000, preroll_ms: int = 240,
        transcription_queue: TranscriptionQueue | None = None,
    ) -> None:
        if max_buffer_ms < FRAME_MS:
            raise ValueError(f"max_buffer_ms={max_buffer_ms}: must hold at least one "
                             f"{FRAME_MS} ms frame")
        self.task = task
        self.seed = seed
        self.policy = RevealPolicy(task)
        self._asr = asr
        self._classifier: SpeechAuthorizer = classifier or RuleAuthorizer()
        self._vad: FrameVAD = vad or EnergyVAD()
        self._inline = transcribe_inline
        self._asr_queue = transcription_queue
        threshold = float(getattr(self._vad, "threshold", VOICE_RMS))
        self._voice_rms = threshold if threshold > 1.0 else VOICE_RMS
        self._patience = cue_patience_ms
        self._max_samples = max_buffer_ms * SAMPLE_RATE // 1000
        # Microphone buffer (its own lock: pushes must never wait for a frame's work).
        self._buf_lock = threading.Lock()
        self._buf: Pcm = np.zeros(0, dtype=np.int16)
        self._frame_waiter: Callable[[], None] | None = None
        """Set by a realtime media clock that waits for the next whole frame (FramePacer)."""
        self._missing = 0
        """Consecutive frames taken on an underrun (silence standing in for late audio)."""
        self._counts = {"frames_in": 0, "frames_out": 0, "underruns": 0,
                        "samples_in": 0, "dropped_samples": 0}
        # Conversation state.
        self._lock = threading.RLock()
        self._now = 0
        self._queue: list[tuple[int, UserPlan, str]] = []
        self._pending: _Pending | None = None
        self._duplex = DuplexSchedule(task)
        self.agent_audible = False
        self._opened = False
        self.agent_has_spoken = False
        self._card: dict[str, tuple[int, int]] = {}
        self._known_at_start: set[str] = set()
        self._said: dict[str, int] = {}
        """Highest version of each fact carried by a plan the participant voiced."""
        self._cues: list[Cue] = []
        self._deferred: list[Act] = []
        """Acts of agent turns that ended while the participant was speaking or a plan was
        still due: answered once they finish (as the frozen simulator does)."""
        self._overlapped: _Utterance | None = None
        """The utterance during which a deferred turn ended (it overlapped that turn)."""
        self._outbox: list[Event] = []
        self._utt: _Utterance | None = None
        self._preroll: deque[Pcm] = deque(maxlen=max(1, preroll_ms // FRAME_MS))
        self._utt_count = 0
        self._jobs: deque[tuple[_Job, Future[_Result]]] = deque()
        self._closed = False
        for fact in task.user.facts:
            # What the participant knows before the call: the first value of every fact
            # they would give when asked or volunteer. Later versions (corrections) and facts
            # learned during the call are released by the reveal graph.
            if isinstance(reveal_rule(fact, 1), RevealVolunteer | RevealOnAsk):
                self._reveal(fact.id, 1, 0, self._outbox, known_at_start=True)

    # ------------------------------------------------------------------ microphone side

    def push_audio(self, pcm: np.ndarray) -> None:
        """Append microphone audio (PCM16 mono at 24 kHz, any length). Thread-safe; beyond
        ``max_buffer_ms`` the oldest samples are dropped and counted."""
        data = np.asarray(pcm)
        if data.dtype != np.int16 or data.ndim != 1:
            raise ValueError(
                f"push_audio needs mono int16 PCM at {SAMPLE_RATE} Hz (a 1-D int16 array), "
                f"got dtype {data.dtype} with shape {data.shape}"
            )
        with self._buf_lock:
            self._counts["frames_in"] += 1
            self._counts["samples_in"] += len(data)
            buf = np.concatenate([self._buf, data])
            over = len(buf) - self._max_samples
            if over > 0:
                self._counts["dropped_samples"] += over
                buf = buf[over:]
            self._buf = buf
            wake = self._frame_waiter if len(buf) >= FRAME_SAMPLES else None
        if wake is not None:
            wake()

    # The media clock's FramePacer interface: in realtime mode the microphone paces the clock.

    def frame_ready(self) -> bool:
        with self._buf_lock:
            return len(self._buf) >= FRAME_SAMPLES

    def set_frame_waiter(self, wake: Callable[[], None] | None) -> None:
        with self._buf_lock:
            self._frame_waiter = wake

    def _take_frame(self) -> tuple[Pcm, bool]:
        """The next 40 ms of microphone audio, and whether it is an underrun (silence)."""
        with self._buf_lock:
            self._counts["frames_out"] += 1
            if len(self._buf) < FRAME_SAMPLES:
                self._counts["underruns"] += 1
                return silence(), True
            frame, self._buf = self._buf[:FRAME_SAMPLES].copy(), self._buf[FRAME_SAMPLES:]
            return frame, False

    @property
    def stats(self) -> dict[str, int]:
        """``frames_in`` (push_audio calls), ``frames_out`` (frames taken), ``underruns``
        (frames that found less than 40 ms buffered: silence), ``dropped_frames`` (40 ms
        frames' worth of samples dropped on overflow, rounded up), ``samples_in``,
        ``dropped_samples``, ``buffered_samples``."""
        with self._buf_lock:
            out = dict(self._counts)
            out["dropped_frames"] = -(-out["dropped_samples"] // FRAME_SAMPLES)
            out["buffered_samples"] = len(self._buf)
        return out

    def mark_connected(self) -> None:
        with self._lock:
            self._outbox.append(ParticipantConnection(state="connected"))

    def mark_disconnected(self) -> None:
        with self._lock:
            self._outbox.append(ParticipantConnection(state="disconnected"))

    def close(self) -> None:
        """Drop transcriptions not yet started (results not yet applied are dropped)."""
        with self._lock:
            self._closed = True
            for _job, fut in self._jobs:
                fut.cancel()
            if self._utt is not None and self._utt.speculative is not None:
                self._utt.speculative.cancel()

    # ------------------------------------------------------------------ the user-source interface

    @property
    def speaking(self) -> bool:
        with self._lock:
            return self._utt is not None

    @property
    def busy(self) -> bool:
        with self._lock:
            return (
                self._utt is not None or bool(self._queue) or bool(self._jobs)
                or self._live_pending(self._now) is not None
            )

    @property
    def authorization_pending(self) -> bool:
        """An utterance that may grant or revoke is still being spoken or decided: under an
        approve/revoke cue, or over the end of an approval request."""
        with self._lock:
            if self._utt is not None and self._priority(self._utt) == AUTHORIZATION:
                return True
            return any(job.priority == AUTHORIZATION for job, _f in self._jobs)

    @property
    def pending(self) -> PendingPlan | None:
        with self._lock:
            p = self._live_pending(self._now)
            return PendingPlan(p.plan.id, p.trigger, p.shown_ms) if p is not None else None

    @property
    def upcoming(self) -> PendingPlan | None:
        """The plan due now, else the next one queued (``shown_ms``: when it comes due):
        what a quick participant answers with (an utterance that starts before a queued plan
        is due is attributed to it)."""
        with self._lock:
            p = self._live_pending(self._now)
            if p is not None:
                return PendingPlan(p.plan.id, p.trigger, p.shown_ms)
            if self._queue:
                at, plan, trigger = self._queue[0]
                return PendingPlan(plan.id, trigger, at)
            return None

    def anticipate(self, acts: list[Act]) -> UserPlan | None:
        """The first plan the reply to a turn with these acts would be, asked on a copy of the
        policy (nothing changes here): what a participant who understood the question would
        start saying before the turn ends. For robot participants; None before the opening."""
        with self._lock:
            if not self._opened:
                return None
            real = self.policy
            # The observer is stateless and may be large: shared, never copied.
            policy = copy.deepcopy(real, memo={id(real._observer): real._observer})
        chosen = policy.respond(acts)
        return chosen[0].plan if chosen else None

    def on_agent_speech_start(self, t_ms: int) -> None:
        del t_ms
        with self._lock:
            self.agent_has_spoken = True

    def on_agent_turn_end(self, acts: list[Act], t_ms: int) -> None:
        with self._lock:
            for act in acts:
                if act.act == "ask" and act.field:
                    self._reveal_where(
                        lambda r, f=act.field: isinstance(r, RevealOnAsk) and f in r.fields,
                        t_ms,
                    )
            pending = self._live_pending(t_ms)
            cue_waiting = pending is not None and cue_kind(pending.plan, pending.trigger)
            if self._utt is not None or self._queue or cue_waiting:
                # Like the simulator's "busy": answered once the participant has finished.
                self._deferred.extend(acts)
                if self._utt is not None:
                    self._overlapped = self._utt
                return
            for c in self._respond(acts):
                self._schedule(c.plan, t_ms + self.task.limits.response_gap_ms, c.trigger)

    def _respond(self, acts: list[Act]) -> list[Chosen]:
        """The plans answering a finished agent turn (the opening before anything else)."""
        if not self._opened:
            plan = self.policy.opening()
            return [Chosen(plan, "opening")] if plan is not None else []
        chosen = self.policy.respond(acts)
        if chosen:
            self._pending = None  # an unanswered plain question is overtaken
        return chosen

    def on_lifecycle(self, artifact_id: str, state: Lifecycle,
                     changed: Sequence[str] = ()) -> None:
        with self._lock:
            self.policy.on_artifact(artifact_id, state, changed)

    def on_world_event(self, event_id: str) -> None:
        with self._lock:
            self.policy.world_events.add(event_id)
            self._reveal_where(
                lambda r: isinstance(r, RevealOnEvent) and r.event == event_id, self._now
            )

    def next_frame(self, t_ms: int) -> UserFrame:
        """The participant's 40 ms frame at ``t_ms`` with the events it caused. Never blocks
        on ASR unless ``transcribe_inline``.

        An underrun (the microphone's audio for this frame has not arrived: network or
        scheduling jitter) is silence on the media clock and in the trace, but it is missing
        audio, not a pause (``UserFrame.late``: the agent is not sent it either): the VAD
        and the utterance skip it, so holes neither lengthen a pause into an end of
        utterance (splitting "Hold on, don't send it! I need to end on the 11th." in two)
        nor reach the recognizer. From :data:`STALL_FRAMES` consecutive underruns on, the
        silence counts (a stalled or departed microphone ends the utterance)."""
        pcm, missing = self._take_frame()
        self._missing = self._missing + 1 if missing else 0
        heard = self._missing == 0 or self._missing >= STALL_FRAMES
        with self._lock:
            self._now = t_ms
            events, self._outbox = self._outbox, []
            tail: list[Event] = []
            auth = self._collect_results(t_ms, tail)
            ends = False
            if not self._opened and not self.agent_has_spoken:
                opening = opening_after_silence(self.policy, t_ms)
                if opening is not None:
                    self._schedule(opening, t_ms, "opening:silence")
            for plan, trigger in self._duplex.fire(t_ms, self.agent_audible, events):
                # Anchored to media time: it pre-empts whatever was due.
                self._make_pending(plan, trigger, t_ms, events)
            if (
                self._live_pending(t_ms) is None and self._utt is None and self._queue
                and self._queue[0][0] <= t_ms
            ):
                _, plan, trigger = self._queue.pop(0)
                self._make_pending(plan, trigger, t_ms, events)
            if self._utt is not None and heard:
                self._utt.frames.append(pcm)
                self._track_voice(self._utt, pcm)
            change = self._vad.push(pcm) if heard else None
            if change == "onset" and self._utt is None:
                self._start_utterance(t_ms, pcm, events)
            elif change == "end" and self._utt is not None:
                ends, speech_auth = self._end_utterance(t_ms, events, tail)
                auth = auth or speech_auth
                if auth is None:
                    # Already decided when the speculative transcription finished during
                    # the VAD's end-of-utterance quiet: applied on this very frame.
                    auth = self._collect_results(t_ms, tail)
            if self._utt is None and heard:
                self._preroll.append(pcm)
            events.extend(tail)
            return UserFrame(pcm=pcm, events=events, authorization=auth, ends_session=ends,
                             late=not heard)

    # ------------------------------------------------------------------ the card

    def role_card(self) -> RoleCard:
        """A snapshot of what the participant may see now (thread-safe)."""
        with self._lock:
            task = self.task
            facts: list[RoleCardFact] = []
            for fact in task.user.facts:
                shown = self._card.get(fact.id)
                if shown is None:
                    continue
                version, since = shown
                facts.append(RoleCardFact(
                    fact_id=fact.id, description=fact_label(task, fact),
                    value=fact.versions[version - 1].value, version=version, since_ms=since,
                    known_at_start=fact.id in self._known_at_start and version == 1,
                    when_asked=isinstance(reveal_rule(fact, version), RevealOnAsk),
                ))
            cues = [c.model_copy() for c in self._cues]
            active = next((c for c in reversed(cues) if c.done_ms is None), None)
            persona = task.user.persona
            goals = [self._mask(g) for g in (_strip_stage_parentheses(g) for g in task.user.goals)
                     if g and not _STAGE.search(g)]
            constraints = [self._mask(c) for c in task.user.constraints
                           if c and not _STAGE.search(c)]
            role = self._mask(persona.role)
            return RoleCard(
                persona_name=persona.name, persona_role=role,
                speaking_style=self._mask(persona.speaking_style), goals=goals,
                constraints=constraints,
                objective_for_user=(
                    f"You are {persona.name}, {role}. You are on a call with an "
                    "assistant who can get this done for you. Your card shows what you know; "
                    "anything new that comes up during the call is added and highlighted."
                ),
                facts=facts, cues=cues, active_cue=active, elapsed_ms=self._now,
                guidance=GUIDANCE,
            )

    def _known_forms(self) -> tuple[set[str], set[str]]:
        """(forms of values on the card or superseded by them, forms of values not yet)."""
        known: set[str] = set()
        unknown: set[str] = set()
        for fact in self.task.user.facts:
            shown = self._card.get(fact.id, (0, 0))[0]
            for k, v in enumerate(fact.versions, start=1):
                (known if k <= shown else unknown).update(surface_forms(v.value, v.spoken))
        known |= surface_forms(self.task.user.persona.name)
        return known, unknown - known

    def _hidden_forms(self) -> list[str]:
        """Value forms the participant may not see yet: values of facts (versions) not on
        the card, and gold values that are not a known fact value."""
        known, unknown = self._known_forms()
        folded = {k.casefold() for k in known}
        hidden = unknown | {g for g in field_gold_strings(self.task)
                            if g.casefold() not in folded}
        # A lone character ("2") is not a usable pattern: it would hide every line.
        return sorted((h for h in hidden if len(h) >= 2), key=len, reverse=True)

    def _mask(self, line: str) -> str:
        """A goal, constraint or persona line as the participant may read it now: a value of
        a fact version not on the card yet is shown as the version on the card, in the same
        form ("June 11" → "June 13" until the corrected end date is released), or as "…"
        when no version is; a gold value the participant does not know is "…"."""
        swaps: dict[str, str] = {}
        for fact in self.task.user.facts:
            shown = self._card.get(fact.id, (0, 0))[0]
            known = set().union(*(surface_forms(v.value, v.spoken)
                                  for v in fact.versions[:shown])) if shown else set()
            current = styled_forms(fact.versions[shown - 1].value,
                                   fact.versions[shown - 1].spoken) if shown else {}
            for v in fact.versions[shown:]:
                for style, form in styled_forms(v.value, v.spoken).items():
                    if form not in known and len(form) >= 2:
                        swaps.setdefault(form, current.get(style, "…"))
        folded = {k.casefold() for k in self._known_forms()[0]}
        for gold in field_gold_strings(self.task):
            if gold.casefold() not in folded and len(gold) >= 2:
                swaps.setdefault(gold, "…")
        for form in sorted(swaps, key=len, reverse=True):
            line = re.sub(rf"(?<!\w){re.escape(form)}(?!\w)", swaps[form], line,
                          flags=re.IGNORECASE)
        return line

    def _line_visible(self, line: str) -> bool:
        """A goal, constraint or world-event line is shown only once every fact value it
        mentions is on the card, when it names no gold value the user does not know, and when
        it is not a stage note scripting an authored event."""
        if not line or _STAGE.search(line):
            return False
        return not any(mentions(line, form) for form in self._hidden_forms())

    # ------------------------------------------------------------------ internals

    def _schedule(self, plan: UserPlan, at_ms: int, trigger: str) -> None:
        self._queue.append((at_ms, plan, trigger))
        self._opened = True

    def _live_pending(self, t_ms: int) -> _Pending | None:
        p = self._pending
        if p is not None and t_ms - p.shown_ms >= self._patience:
            self._pending = None
            return None
        return p

    def _reveal(self, fact_id: str, version: int, t_ms: int, events: list[Event],
                known_at_start: bool = False) -> None:
        current = self._card.get(fact_id)
        if current is not None and current[0] >= version:
            return
        self._card[fact_id] = (version, t_ms)
        if known_at_start:
            self._known_at_start.add(fact_id)
        events.append(CardFact(fact_id=fact_id, version=version, known_at_start=known_at_start))

    def _reveal_where(self, pred: Any, t_ms: int) -> None:
        for fact in self.task.user.facts:
            for k in range(1, len(fact.versions) + 1):
                if pred(reveal_rule(fact, k)):
                    self._reveal(fact.id, k, t_ms, self._outbox)

    def _make_pending(self, plan: UserPlan, trigger: str, t_ms: int,
                      events: list[Event]) -> None:
        self._pending = _Pending(plan=plan, trigger=trigger, shown_ms=t_ms)
        for ref in plan.facts:
            self._reveal(ref.fact, ref.version, t_ms, events)
        kind = cue_kind(plan, trigger)
        if kind is None:
            return
        self._show_cue(plan, trigger, kind, t_ms, events)

    def _show_cue(self, plan: UserPlan, trigger: str, kind: CueKind, t_ms: int,
                  events: list[Event]) -> Cue:
        world_line = None
        if trigger.startswith("world_event:"):
            world = next((w for w in self.task.world_events
                          if w.id == trigger[len("world_event:"):]), None)
            if world is not None and self._line_visible(world.description):
                world_line = world.description
        for old in self._cues:
            if old.done_ms is None:
                old.done_ms = t_ms
                events.append(CueDone(cue_id=old.cue_id, reason="superseded"))
        cue = Cue(cue_id=f"cue-{len(self._cues) + 1}", kind=kind, plan_id=plan.id,
                  text=cue_text(self.task, plan, trigger, kind, world_line, self._said),
                  shown_ms=t_ms)
        self._cues.append(cue)
        events.append(CueShow(cue_id=cue.cue_id, kind=cue.kind, plan_id=cue.plan_id,
                              text=cue.text))
        return cue

    def _start_utterance(self, t_ms: int, pcm: Pcm, events: list[Event]) -> None:
        if self._live_pending(t_ms) is None and self._queue:
            # They answered before the simulator's response gap was over.
            _, due, due_trigger = self._queue.pop(0)
            self._make_pending(due, due_trigger, t_ms, events)
        pending, self._pending = self._live_pending(t_ms), None
        self._utt_count += 1
        rid = f"live-{self._utt_count}"
        onset_frames = getattr(self._vad, "onset", 1)
        start_ms = max(0, t_ms - (int(onset_frames) - 1) * FRAME_MS)
        plan: UserPlan | None = None
        if pending is not None:
            plan = pending.plan
            plan_id = plan.id
            self._voice(plan, f"live:{pending.trigger}", events)
        else:
            plan_id = "live"
            events.append(UserPlanEvent(plan_id="live", intent="live", trigger="live:unprompted"))
        events.append(UserSpeechStart(plan_id=plan_id, realization_id=rid, text="",
                                      duration_ms=0))
        frames = [*self._preroll, pcm]
        self._utt = _Utterance(plan=plan, plan_id=plan_id, realization_id=rid, onset_ms=t_ms,
                               start_ms=start_ms, frames=frames, last_loud=len(frames) - 1)
        self._preroll.clear()

    def _end_utterance(
        self, t_ms: int, events: list[Event], tail: list[Event]
    ) -> tuple[bool, SpeechAuthorization | None]:
        utt, self._utt = self._utt, None
        assert utt is not None
        hangover = int(getattr(self._vad, "hangover", 1))
        end_ms = max(utt.start_ms, t_ms + FRAME_MS - hangover * FRAME_MS)
        overlap_cue = self._answer_deferred(utt, t_ms, end_ms, events)
        events.append(UserSpeechEnd(plan_id=utt.plan_id, realization_id=utt.realization_id))
        ends = False
        if utt.plan is not None:
            # From the end of the participant's voice (the frozen simulator anchors on the end
            # of its realization, which may carry a few hundred ms of trailing quiet).
            self._duplex.arm_after(utt.plan.id, end_ms)
            self._reveal_where(
                lambda r, p=utt.plan.id: isinstance(r, RevealAfterPlan) and r.plan == p, t_ms
            )
            events.extend(self._outbox)
            self._outbox = []
            ends = utt.plan.ends_session
        # The active cue (shown before this utterance began) is the context of its decision;
        # an approval asked while they were already answering is the context of that answer.
        cue = overlap_cue or next((c for c in reversed(self._cues)
                                   if c.done_ms is None and c.shown_ms <= utt.onset_ms), None)
        for c in self._cues:
            if (c.done_ms is None and c.shown_ms <= utt.onset_ms
                    and not _cue_authorizes(self.task, c)):
                c.done_ms = t_ms
                events.append(CueDone(cue_id=c.cue_id, reason="spoken"))
        job = _Job(utt=utt, end_ms=end_ms, cue=cue.model_copy() if cue else None,
                   audio=self._audio(utt), priority=self._priority(utt, cue))
        if self._inline:
            return ends, self._apply(self._process(job), t_ms, tail)
        if self._closed:
            return ends, None
        spec = utt.speculative
        if spec is not None and not spec.cancelled():
            # The voice paused long enough ago that its transcription is under way (or done):
            # only the (cheap) classification is left.
            fut: Future[_Result] = Future()

            def finish(done: Future[tuple[str, str, str]], job: _Job = job) -> None:
                if not fut.set_running_or_notify_cancel():
                    return  # close() cancelled it: the session is over
                try:
                    text, error, name = done.result()
                except BaseException as exc:  # cancelled by close(), or a worker fault
                    text, error, name = "", f"{type(exc).__name__}: {exc}", self._asr_name()
                fut.set_result(self._classify(job, text, error, name))

            spec.add_done_callback(finish)
        else:
            fut = self._transcriber().submit(functools.partial(self._process, job),
                                             job.priority)
        self._jobs.append((job, fut))
        return ends, None

    def _audio(self, utt: _Utterance) -> Pcm:
        frames = utt.frames[:utt.cut()]
        return np.concatenate(frames) if frames else silence()

    def _priority(self, utt: _Utterance, cue: Cue | None = None) -> int:
        """AUTHORIZATION when the utterance's words can grant or revoke: its cue (or the cue
        active when it began) authorizes, or it overlaps the end of an approval request."""
        if cue is None:
            cue = next((c for c in reversed(self._cues)
                        if c.done_ms is None and c.shown_ms <= utt.onset_ms), None)
        if _cue_authorizes(self.task, cue):
            return AUTHORIZATION
        if self._overlapped is utt and any(a.act == "request_approval" for a in self._deferred):
            return AUTHORIZATION
        return ROUTINE

    def _transcriber(self) -> TranscriptionQueue:
        return self._asr_queue or shared_queue()

    def _track_voice(self, utt: _Utterance, pcm: Pcm) -> None:
        """Follow the voice inside an utterance: once it has paused for :data:`TAIL_FRAMES`,
        start transcribing what was said (at the utterance's priority); any new voice drops
        that speculative transcription."""
        if rms(pcm) >= self._voice_rms:
            utt.last_loud = len(utt.frames) - 1
            if utt.speculative is not None:
                utt.speculative.cancel()  # a no-op if it already started; its result is unused
                utt.speculative = None
            return
        if (self._inline or self._closed or utt.speculative is not None
                or len(utt.frames) - 1 - utt.last_loud != TAIL_FRAMES):
            return
        utt.speculative = self._transcriber().submit(
            functools.partial(self._transcribe, self._audio(utt)), self._priority(utt))

    def _asr_name(self) -> str:
        return getattr(self._asr, "name", "") or "faster-whisper-tiny.en"

    def _voice(self, plan: UserPlan, trigger: str, events: list[Event]) -> None:
        """The participant's utterance voices ``plan``: kept as the simulator keeps what it
        spoke, and logged (``user.plan``)."""
        self.policy.spoken.append(plan.id)
        for ref in plan.facts:
            self._said[ref.fact] = max(self._said.get(ref.fact, 0), ref.version)
        events.append(UserPlanEvent(
            plan_id=plan.id, intent=plan.intent, trigger=trigger,
            facts=[f"{f.fact}@{f.version}" for f in plan.facts],
        ))

    def _answer_deferred(self, utt: _Utterance, t_ms: int, end_ms: int,
                         events: list[Event]) -> Cue | None:
        """Answer the agent turns that ended while this utterance was going on (or while a
        plan was due), as the simulator does once it finishes speaking. When a turn ended
        during an utterance attributed to no plan, the participant was answering it as it
        ended (normal human timing): the first plan of the reply is attributed to this
        utterance (``user.plan`` with trigger ``live:overlap:…``), its facts revealed, and an
        approval or revocation becomes the utterance's cue, so "yes, please submit it" said
        over the end of "Shall I submit it?" is decided with that request as context. The
        returned cue (if any) is that context."""
        overlapped, self._overlapped = self._overlapped is utt, None
        if not self._deferred or self._queue:
            return None
        deferred, self._deferred = self._deferred, []
        chosen = self._respond(deferred)
        cue: Cue | None = None
        if chosen and overlapped and utt.plan is None:
            first = chosen.pop(0)
            plan = first.plan
            utt.plan, utt.plan_id = plan, plan.id
            for ref in plan.facts:
                self._reveal(ref.fact, ref.version, t_ms, events)
            self._voice(plan, f"live:overlap:{first.trigger}", events)
            kind = cue_kind(plan, first.trigger)
            if kind in ("approve", "revoke"):
                cue = self._show_cue(plan, first.trigger, kind, t_ms, events)
        for c in chosen:
            self._schedule(c.plan, end_ms + self.task.limits.response_gap_ms, c.trigger)
        return cue

    def _transcribe(self, audio: Pcm, lane: int = 0) -> tuple[str, str, str]:
        """(text, error, recognizer name) for one utterance's audio, on the queue's ``lane``
        (its recognizer unless the participant was given one)."""
        text, error, asr_name = "", "", self._asr_name()
        try:
            asr = recognizer_for_lane(self._asr, lane)
            asr_name = asr.name
            text = asr.transcribe(audio, SAMPLE_RATE)
        except Exception as exc:  # an ASR fault must not end the session: it is logged
            error = f"{type(exc).__name__}: {exc}"
        return text, error, asr_name

    def _process(self, job: _Job, lane: int = 0) -> _Result:
        """Transcribe and classify one utterance (on a queue lane's thread)."""
        return self._classify(job, *self._transcribe(job.audio, lane))

    def _classify(self, job: _Job, text: str, error: str, asr_name: str) -> _Result:
        """Decide grant / revoke / none from the transcript with the job's cue as context."""
        try:
            decision = self._classifier.classify(text, job.cue, self.task)
        except Exception as exc:  # likewise for a classifier fault
            decision = AuthDecision(
                decision="none", action=None, confidence=0.0, evidence=text,
                classifier=type(self._classifier).__name__,
                rationale=f"classifier error: {type(exc).__name__}: {exc}",
            )
        if error and decision.decision != "none":
            decision = decision.model_copy(update={"decision": "none"})
        return _Result(job=job, text=text, error=error, decision=decision, asr=asr_name)

    def _collect_results(self, t_ms: int, tail: list[Event]) -> SpeechAuthorization | None:
        """Apply finished transcriptions in utterance order; at most one authorization per
        frame (its ``auth.decision`` must be the frame's last event)."""
        while self._jobs and self._jobs[0][1].done():
            _job, fut = self._jobs.popleft()
            if fut.cancelled():  # close() was called: the session is over
                continue
            auth = self._apply(fut.result(), t_ms, tail)
            if auth is not None:
                return auth
        return None

    def _apply(self, res: _Result, t_ms: int, tail: list[Event]) -> SpeechAuthorization | None:
        job, d = res.job, res.decision
        tail.append(UserTranscript(text=res.text, start_ms=job.utt.start_ms, end_ms=job.end_ms,
                                   asr=res.asr, error=res.error))
        cue = job.cue
        if d.decision != "none" and cue is not None:
            live = next((c for c in self._cues if c.cue_id == cue.cue_id), None)
            if live is not None and live.done_ms is None:
                live.done_ms = t_ms
                tail.append(CueDone(cue_id=live.cue_id, reason="spoken"))
        tail.append(AuthDecisionEvent(
            decision=d.decision, action=d.action, confidence=d.confidence,
            evidence=d.evidence, classifier=d.classifier,
            cue_id=cue.cue_id if cue is not None else None, rationale=d.rationale,
        ))
        if d.decision == "none" or not d.action:
            return None
        return SpeechAuthorization(decision=d.decision, action=d.action,
                                   plan_id=cue.plan_id if cue is not None else None,
                                   evidence=res.text)


def _cue_authorizes(task: TaskSpec, cue: Cue | None) -> bool:
    if cue is None:
        return False
    plan = task.plan(cue.plan_id)
    auth = plan.authorization if plan is not None else None
    return auth is not None and bool(auth.grant or auth.revoke)
