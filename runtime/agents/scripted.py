"""The scripted agent: a deterministic agent played from a YAML script (DESIGN §4).

It hears the user only through the audio frames it is sent (an energy voice-activity detector
finds the end of each user utterance and barge-ins), calls tools, and speaks its ``say`` text
with real synthesized audio and a transcript. Used for oracle and negative runs, tests and demos.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.agents.base import (
    AgentEvent,
    AgentSessionConfig,
    AudioDelta,
    Hangup,
    Interrupted,
    ResponseDone,
    ToolCallRequest,
    TranscriptDone,
)
from runtime.core.audio import (
    FRAME_MS,
    FRAME_SAMPLES,
    SAMPLE_RATE,
    VOICE_RMS,
    Pcm,
    frame_levels,
    frames_before,
    is_silent_block,
    rms,
)
from runtime.core.memo import remember
from runtime.core.spec import read_yaml
from runtime.speechbank.bank import SpeechCache


class AfterMs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ms: int = Field(ge=0)


class ScriptTool(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ScriptTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    after: Literal["user", "none"] | AfterMs | None = None
    tools: list[ScriptTool] = Field(default_factory=list)
    say: str | None = None
    hangup: bool = False
    barge_in: Literal["yield", "ignore"] = "yield"


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    description: str = ""
    task: str | None = None
    expect: dict[str, Any] = Field(default_factory=dict)
    """What the script is for (e.g. ``{WS: true}`` or ``{fails: AC}``); read by tests."""
    turns: list[ScriptTurn] = Field(min_length=1)


class ScriptError(Exception):
    """A script file is missing or malformed; the message names the file and field."""


_LOADED: dict[tuple[str, int, int, int], Script] = {}
"""Scripts already parsed in this process, by path and the file's identity when read."""


def load_script(path: Path) -> Script:
    """The script at ``path``; parsed once per process while the file is unchanged (a
    campaign builds an agent per run, and a script is frozen)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ScriptError(f"{path}: script file not found") from None
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read the script ({exc})") from None
    key = (str(path), st.st_mtime_ns, st.st_size, st.st_ino)
    return remember(_LOADED, key, lambda: _parse_script(path), 512)


def _parse_script(path: Path) -> Script:
    try:
        raw = read_yaml(path)
    except FileNotFoundError:
        raise ScriptError(f"{path}: script file not found") from None
    except yaml.YAMLError as exc:
        raise ScriptError(f"{path}: not valid YAML: {exc}") from None
    try:
        return Script.model_validate(raw)
    except ValidationError as exc:
        lines = [
            f"{path}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        ]
        raise ScriptError("\n".join(lines)) from None


class EnergyVAD:
    """Frame-energy voice activity: speech after ``onset`` loud frames, end of utterance after
    ``hangover_ms`` of quiet. Deterministic and cheap (one RMS per 40 ms frame)."""

    def __init__(self, threshold: float = VOICE_RMS, onset: int = 2,
                 hangover_ms: int = 640) -> None:
        self.threshold = threshold
        self.onset = onset
        self.hangover = max(1, hangover_ms // FRAME_MS)
        self.in_speech = False
        self._loud = 0
        self._quiet = 0
        self.utterances_ended = 0

    def push(self, frame: Pcm) -> Literal["onset", "end"] | None:
        return self.push_level(rms(frame))

    def push_level(self, level: float) -> Literal["onset", "end"] | None:
        """:meth:`push` for a frame whose :func:`rms` is ``level``."""
        loud = level >= self.threshold
        if not self.in_speech:
            self._loud = self._loud + 1 if loud else 0
            if self._loud >= self.onset:
                self.in_speech, self._quiet = True, 0
                return "onset"
            return None
        self._quiet = 0 if loud else self._quiet + 1
        if self._quiet >= self.hangover:
            self.in_speech, self._loud = False, 0
            self.utterances_ended += 1
            return "end"
        return None

    def push_quiet_run(self, levels: list[float], start: int, stop: int) -> int:
        """:meth:`push_level` ``levels[start:stop]`` in order up to the first one that would
        return a change (an onset or an end), which is not pushed; returns its index
        (``stop`` when none would). The same counting as :meth:`push_level`, in one loop."""
        k, thr = start, self.threshold
        if not self.in_speech:
            loud_n = self._loud
            while k < stop:
                if levels[k] >= thr:
                    if loud_n + 1 >= self.onset:
                        break
                    loud_n += 1
                else:
                    loud_n = 0
                k += 1
            self._loud = loud_n
        else:
            quiet_n = self._quiet
            while k < stop:
                if levels[k] >= thr:
                    quiet_n = 0
                elif quiet_n + 1 >= self.hangover:
                    break
                else:
                    quiet_n += 1
                k += 1
            self._quiet = quiet_n
        return k


class ScriptedAgent:
    """Plays a :class:`Script` turn by turn against the media clock."""

    name = "scripted"

    def __init__(self, script: Script, speech: SpeechCache, label: str = "scripted") -> None:
        self.script = script
        self.name = label
        self._speech = speech
        self._vad = EnergyVAD()
        self._next = 0
        self._speaking_until = 0
        self._prev_end = 0
        self._ends_at_prev_start = 0
        self._current: ScriptTurn | None = None
        self._outbox: list[AgentEvent] = []
        self._hung_up = False

    async def connect(self, config: AgentSessionConfig) -> None:
        if config.sample_rate != SAMPLE_RATE:
            raise ValueError(f"scripted agent speaks at {SAMPLE_RATE} Hz, not {config.sample_rate}")

    async def send_audio(self, frame: Pcm, t_media_ms: int) -> None:
        if self._yields_to(self._vad.push(frame), t_media_ms):
            self._outbox.append(Interrupted(reason="barge_in"))
            self._speaking_until = t_media_ms
            self._prev_end = t_media_ms

    def _yields_to(self, change: str | None, t: int) -> bool:
        """A VAD onset while this turn speaks and lets itself be interrupted (a barge-in)."""
        return (change == "onset" and t < self._speaking_until and self._current is not None
                and self._current.barge_in == "yield")

    async def hear_steady(self, pcm: Pcm, t_media_ms: int) -> int:
        """Hear the whole frames of ``pcm`` from ``t_media_ms`` as :meth:`send_audio` and
        :meth:`poll` would one by one, up to the first frame after which either would have
        something to say (not heard: the orchestrator plays it frame by frame). Returns how
        many frames were heard. The virtual clock's steady stretches
        (runtime/session/orchestrator.py);
        a subclass that changes what a frame does hears none this way."""
        cls = type(self)
        if (
            self._outbox or cls.send_audio is not ScriptedAgent.send_audio
            or cls.poll is not ScriptedAgent.poll
        ):
            return 0
        vad = self._vad
        pending = None if self._hung_up or self._next >= len(self.script.turns) else (
            self.script.turns[self._next]
        )
        until = self._speaking_until
        frames = len(pcm) // FRAME_SAMPLES
        if is_silent_block(pcm) and not vad.in_speech and vad.threshold > 0:
            # Silence outside speech changes nothing the turn waits on (it only clears a
            # loud-frame count): the next turn is due at the first frame it is ready on,
            # and readiness can only come with time (a scripted delay) or not at all.
            first = frames_before(t_media_ms, until)
            if pending is None or first >= frames:
                stop = frames
            elif self._ready(pending, t_media_ms + first * FRAME_MS):
                stop = first
            elif isinstance(pending.after, AfterMs):
                stop = max(first, frames_before(t_media_ms, self._prev_end + pending.after.ms))
            else:
                stop = frames
            stop = min(stop, frames)
            if stop:
                vad._loud = 0
            return stop
        before = (vad.in_speech, vad._loud, vad._quiet, vad.utterances_ended)
        levels = frame_levels(pcm)
        # The pending turn's readiness changes only with time (from ``due`` on) or with a
        # change of the VAD's state: ask at the first due frame and at each change.
        due = until if pending is None or not isinstance(pending.after, AfterMs) else max(
            until, self._prev_end + pending.after.ms)
        asked = False
        first_due = frames if pending is None else min(frames, frames_before(t_media_ms, due))
        i = 0
        while i < frames:
            # Frames that change nothing go in one loop, up to the first due frame.
            i = vad.push_quiet_run(levels, i, first_due if not asked and i <= first_due
                                   else frames)
            if i >= frames:
                break
            t = t_media_ms + i * FRAME_MS
            change = vad.push_level(levels[i])
            stop = False
            if self._yields_to(change, t):
                stop = True
            elif pending is not None and t >= due and (change is not None or not asked):
                asked = True
                stop = self._ready(pending, t)
            if stop:
                # Frame i is played the ordinary way: hear only the ones before it.
                vad.in_speech, vad._loud, vad._quiet, vad.utterances_ended = before
                for heard in levels[:i]:
                    vad.push_level(heard)
                return i
            i += 1
        return frames

    async def send_tool_result(self, call_id: str, output: dict[str, Any]) -> None:
        del call_id, output  # a script does not branch on tool results

    async def truncated(self, heard_ms: int) -> None:
        del heard_ms

    def _ready(self, turn: ScriptTurn, t: int) -> bool:
        if t < self._speaking_until:
            return False
        after = turn.after or ("none" if self._next == 0 else "user")
        if after == "none":
            return True
        if after == "user":
            # A turn that only calls tools need not wait for the caller to fall silent again:
            # it acts on the utterance that ended (a person may already be answering the next
            # question); a turn that speaks waits for silence.
            quiet = not turn.say or not self._vad.in_speech
            return self._vad.utterances_ended > self._ends_at_prev_start and quiet
        assert isinstance(after, AfterMs)
        return t >= self._prev_end + after.ms

    async def poll(self, t_media_ms: int) -> list[AgentEvent]:
        if (
            not self._hung_up and self._next < len(self.script.turns)
            and self._ready(self.script.turns[self._next], t_media_ms)
        ):
            turn = self.script.turns[self._next]
            self._next += 1
            self._current = turn
            self._ends_at_prev_start = self._vad.utterances_ended
            for i, tool in enumerate(turn.tools):
                self._outbox.append(
                    ToolCallRequest(call_id=f"s{self._next}-{i + 1}", name=tool.name,
                                    args=dict(tool.args))
                )
            duration = 0
            if turn.say:
                audio = self._speech.speak(turn.say)
                duration = len(audio) * 1000 // SAMPLE_RATE
                self._outbox.append(TranscriptDone(text=turn.say))
                self._outbox.append(AudioDelta(pcm=audio))
            self._outbox.append(ResponseDone())
            self._speaking_until = t_media_ms + duration
            self._prev_end = self._speaking_until
            if turn.hangup:
                self._hung_up = True
                self._outbox.append(Hangup())
        out, self._outbox = self._outbox, []
        return out

    async def close(self) -> None:
        self._outbox = []
