"""Recorded sessions: the wire fixture format (docs/adapters.md, "Recorded sessions").

A fixture holds one realtime session of a shipped task as it crossed the websocket, both
directions, in JSON Lines:

* line 1, the header (:class:`WireHeader`): format name and version, the agent spec
  (kind, model), the task, seed and clock, when and against which upstream (scheme, host,
  port and path only: never a query string or credentials) it was recorded, the provider's
  non-secret settings needed to replay it (sample rate, voice, …), the apex-voice version and
  commit, and what the recorded run's adapter produced (:class:`Expectation`: tool calls,
  transcripts, errors, how the run ended);
* then one line per frame, in the order the recording proxy saw them:
  ``{"t_ms": 12, "dir": "client"|"server", "msg": {...}}`` for a JSON frame (``"binary": true``
  when it came as a binary frame), ``"text"`` for a text frame that is not JSON, and
  ``{"t_ms", "dir", "close": {"code": 1000, "reason": "…"}}`` when that side closed the
  socket (``"code": null``: the connection dropped without a close frame).

Audio never appears: every base64 audio field (:data:`AUDIO_FIELDS`, and ``data`` next to an
``audio/…`` MIME type) is replaced by ``{"$audio": {"sha256": …, "bytes": N, "rms": R}}`` (the
chunk's PCM16 level, so energy-gated adapters replay alike), and any other long base64 string
by ``{"$blob": {…}}`` (:func:`redact`). Replay puts back a synthetic payload of the same
length (:func:`restore`): a tone at the recorded level, zeros for blobs. Credentials never
appear either: the proxy never writes handshake headers or query strings, and :func:`scrub`
replaces every secret it saw (key variables, credential headers, key-like query parameters)
wherever it occurs in a line before the file is written (:func:`write_fixture` refuses to
write one that survived).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

FORMAT = "apex-voice-wire"
VERSION = 1

AUDIO_MARK = "$audio"
BLOB_MARK = "$blob"
REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6
"""Shorter strings are not treated as secrets (scrubbing them would garble the messages)."""

AUDIO_FIELDS: dict[str, str] = {
    # OpenAI realtime (GA and beta spellings), xAI Grok, StepFun
    "input_audio_buffer.append": "audio",
    "response.output_audio.delta": "delta",
    "response.audio.delta": "delta",
    # OpenAI Live API (and the Responses stream nested in its response.event)
    "session.input_audio.append": "audio",
    "session.output_audio.delta": "delta",
}
"""Message ``type`` → the field holding base64 audio (looked for at every nesting level).
Gemini Live carries audio as ``{"mimeType": "audio/pcm;rate=…", "data": …}`` blobs, which
:func:`redact` recognises by the MIME type."""

BLOB_MIN_CHARS = 256
"""A string this long made only of base64 characters is treated as binary data."""

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")
_MIME_KEYS = ("mimeType", "mime_type")


class WireFormatError(ValueError):
    """A fixture file that is not in this format; the message names the file and line."""


# --------------------------------------------------------------------------- redaction


def digest(raw: bytes) -> dict[str, Any]:
    """``{"sha256", "bytes"}`` of a payload."""
    return {"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}


def _decode(b64: str) -> tuple[bytes, str] | None:
    """Standard or URL-safe base64 (pydantic writes the latter for ``bytes`` fields)."""
    for alphabet, pattern, decode in (
        ("base64", _BASE64, base64.b64decode),
        ("base64url", _BASE64URL, base64.urlsafe_b64decode),
    ):
        if pattern.fullmatch(b64) and len(b64) % 4 == 0:
            try:
                return decode(b64), alphabet
            except (binascii.Error, ValueError):
                return None
    return None


def pcm_rms(raw: bytes) -> int | None:
    """Root mean square of PCM16LE samples, rounded (None for an odd byte count)."""
    if len(raw) % 2:
        return None
    if not raw:
        return 0
    pcm = np.frombuffer(raw, dtype="<i2").astype(np.float64)
    return round(float(np.sqrt(np.mean(pcm * pcm))))


def _digest(b64: str, *, audio: bool = False) -> dict[str, Any]:
    decoded = _decode(b64)
    if decoded is None:
        # Not base64 at all: keep its size so replay can send an equally broken payload.
        return {"sha256": hashlib.sha256(b64.encode()).hexdigest(), "chars": len(b64),
                "invalid": True}
    raw, alphabet = decoded
    out = digest(raw)
    level = pcm_rms(raw) if audio else None
    if level is not None:
        # The level, not the voice: adapters that gate on energy (GPT-Live's silence
        # detection) decide the same on replay.
        out["rms"] = level
    if alphabet != "base64":
        out["encoding"] = alphabet
    return out


def _audio_key(node: dict[str, Any]) -> str | None:
    kind = node.get("type")
    return AUDIO_FIELDS.get(kind) if isinstance(kind, str) else None


def _is_audio_blob(node: dict[str, Any]) -> bool:
    mime = next((node[k] for k in _MIME_KEYS if isinstance(node.get(k), str)), "")
    return isinstance(node.get("data"), str) and mime.startswith("audio/")


def _looks_binary(text: str) -> bool:
    return len(text) >= BLOB_MIN_CHARS and _decode(text) is not None


def redact(message: Any) -> tuple[Any, int]:
    """``message`` with every audio payload replaced by its digest; how many were audio."""
    audio = 0

    def walk(node: Any) -> Any:
        nonlocal audio
        if isinstance(node, dict):
            key = _audio_key(node)
            blob = _is_audio_blob(node)
            out: dict[str, Any] = {}
            for k, v in node.items():
                if isinstance(v, str) and (k == key or (blob and k == "data")):
                    out[k] = {AUDIO_MARK: _digest(v, audio=True)}
                    audio += 1
                else:
                    out[k] = walk(v)
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str) and _looks_binary(node):
            return {BLOB_MARK: _digest(node)}
        return node

    return walk(message), audio


def carries_audio(message: Any) -> bool:
    """Whether a (raw or recorded) message has an audio payload: it paces audio on replay."""
    if isinstance(message, dict):
        if set(message) == {AUDIO_MARK}:
            return True
        if _audio_key(message) is not None or _is_audio_blob(message):
            return True
        return any(carries_audio(v) for v in message.values())
    if isinstance(message, list):
        return any(carries_audio(v) for v in message)
    return False


def synthetic_audio(n_bytes: int, *, rms: int | None = None, hz: float = 220.0,
                    rate: int = 24_000) -> bytes:
    """``n_bytes`` of PCM16LE standing in for the recorded voice: a tone at the recorded
    ``rms`` level (silence for 0; a moderate level when none was recorded)."""
    samples = (n_bytes + 1) // 2
    amplitude = min(32767.0, (rms if rms is not None else 1400) * 2 ** 0.5)
    t = np.arange(samples) / rate
    pcm = np.round(amplitude * np.sin(2 * np.pi * hz * t)).astype("<i2")
    raw: bytes = pcm.tobytes()
    return raw[:n_bytes]


def _payload(mark: str, info: dict[str, Any]) -> str:
    if info.get("invalid"):
        return "!" * int(info.get("chars", 1))
    n = int(info["bytes"])
    level = info.get("rms")
    raw = synthetic_audio(n, rms=level if isinstance(level, int) else None) \
        if mark == AUDIO_MARK else bytes(n)
    encode = base64.urlsafe_b64encode if info.get("encoding") == "base64url" else base64.b64encode
    return encode(raw).decode("ascii")


def restore(message: Any) -> Any:
    """The inverse of :func:`redact` for replay: each digest becomes a synthetic payload of
    the recorded length (a tone for audio, zeros for other blobs)."""
    if isinstance(message, dict):
        if len(message) == 1:
            ((mark, digest),) = message.items()
            if mark in (AUDIO_MARK, BLOB_MARK) and isinstance(digest, dict):
                return _payload(mark, digest)
        return {k: restore(v) for k, v in message.items()}
    if isinstance(message, list):
        return [restore(v) for v in message]
    return message


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its JSON-escaped form) replaced by ``[redacted]``;
    strings shorter than :data:`MIN_SECRET_CHARS` are left alone."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) < MIN_SECRET_CHARS:
            continue
        text = text.replace(secret, REDACTED)
        escaped = json.dumps(secret)[1:-1]
        if escaped != secret:
            text = text.replace(escaped, REDACTED)
    return text


# --------------------------------------------------------------------------- the file


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentInfo(_Model):
    spec: str
    kind: str
    model: str


class RecordedToolCall(_Model):
    name: str
    args: dict[str, Any]


class Expectation(_Model):
    """What the recorded run's adapter made of the session (from its event log)."""

    tool_calls: list[RecordedToolCall] = Field(default_factory=list)
    transcripts: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    """Categories of the provider errors the adapter reported (``agent.error``)."""
    protocol_unknown: list[str] = Field(default_factory=list)
    end_reason: str
    failure_class: str


class WireHeader(_Model):
    format: Literal["apex-voice-wire"] = "apex-voice-wire"
    version: int = VERSION
    agent: AgentInfo
    task_id: str
    seed: int = 0
    clock: Literal["virtual", "realtime"]
    recorded_at: str
    upstream: str
    """``scheme://host[:port]/path`` of the endpoint; never a query string or credentials."""
    settings: dict[str, str] = Field(default_factory=dict)
    """The provider's non-secret ``APEX_*`` settings in force (rate, voice, backend, …)."""
    apex_voice: dict[str, str | None] = Field(default_factory=dict)
    frames: dict[str, int] = Field(default_factory=dict)
    """Frame counts: ``client``, ``server``, ``client_audio``, ``server_audio``."""
    expect: Expectation


Direction = Literal["client", "server"]


@dataclass
class Frame:
    """One recorded frame: a JSON ``msg``, a non-JSON ``text``, the digest of opaque binary
    data (``blob``), or a close (``close``: ``{"code": int | None, "reason": str}``)."""

    t_ms: int
    dir: Direction
    msg: Any = None
    text: str | None = None
    blob: dict[str, Any] | None = None
    binary: bool = False
    close: dict[str, Any] | None = None

    @property
    def is_close(self) -> bool:
        return self.close is not None

    @property
    def audio(self) -> bool:
        return self.msg is not None and carries_audio(self.msg)

    def line(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t_ms": self.t_ms, "dir": self.dir}
        if self.close is not None:
            out["close"] = self.close
            return out
        if self.text is not None:
            out["text"] = self.text
        elif self.blob is not None:
            out["blob"] = self.blob
        else:
            out["msg"] = self.msg
        if self.binary:
            out["binary"] = True
        return out

    @classmethod
    def parse(cls, data: Any) -> Frame:
        if not isinstance(data, dict) or data.get("dir") not in ("client", "server"):
            raise ValueError('a frame needs "dir": "client" or "server"')
        t_ms = data.get("t_ms")
        if not isinstance(t_ms, int):
            raise ValueError('a frame needs an integer "t_ms"')
        close = data.get("close")
        if close is not None:
            if not isinstance(close, dict) or not isinstance(close.get("reason", ""), str):
                raise ValueError('"close" must be {"code": int|null, "reason": str}')
            return cls(t_ms, data["dir"], close=close)
        blob = data.get("blob")
        if blob is not None and not (isinstance(blob, dict) and isinstance(blob.get("bytes"), int)):
            raise ValueError('"blob" must be {"sha256": str, "bytes": int}')
        if "msg" not in data and not isinstance(data.get("text"), str) and blob is None:
            raise ValueError('a frame needs "msg" (JSON), "text", "blob" or "close"')
        return cls(t_ms, data["dir"], msg=data.get("msg"), text=data.get("text"), blob=blob,
                   binary=bool(data.get("binary", False)))

    def payload(self) -> str | bytes:
        """What to put on the wire on replay (audio re-synthesised)."""
        if self.blob is not None:
            return bytes(int(self.blob["bytes"]))
        text = self.text if self.text is not None else json.dumps(
            restore(self.msg), separators=(",", ":"), ensure_ascii=False,
        )
        return text.encode() if self.binary else text


@dataclass
class Fixture:
    path: Path
    header: WireHeader
    frames: list[Frame]


def dump_lines(header: WireHeader, frames: Iterable[Frame]) -> list[str]:
    lines = [header.model_dump_json()]
    lines += [json.dumps(f.line(), separators=(",", ":"), ensure_ascii=False) for f in frames]
    return lines


def write_fixture(path: Path, header: WireHeader, frames: list[Frame],
                  secrets: Iterable[str] = ()) -> None:
    """Write atomically, secrets scrubbed; raises if one would still be in the file."""
    secrets = [s for s in set(secrets) if len(s) >= MIN_SECRET_CHARS]
    text = "\n".join(scrub(line, secrets) for line in dump_lines(header, frames)) + "\n"
    leaked = [s for s in secrets if s in text]
    if leaked:  # scrub() makes this impossible; the check keeps it that way
        raise RuntimeError(f"refusing to write {path}: a credential survived scrubbing")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_fixture(path: Path) -> Fixture:
    """Parse a fixture; :class:`WireFormatError` names the file and line of a problem."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise WireFormatError(f"{path}: empty file")
    try:
        raw_header = json.loads(lines[0])
    except json.JSONDecodeError as exc:
        raise WireFormatError(f"{path}:1: header is not JSON ({exc})") from None
    if not isinstance(raw_header, dict) or raw_header.get("format") != FORMAT:
        raise WireFormatError(f"{path}:1: not an {FORMAT} fixture")
    if raw_header.get("version") != VERSION:
        raise WireFormatError(
            f"{path}:1: format version {raw_header.get('version')!r}; this code reads "
            f"version {VERSION}"
        )
    try:
        header = WireHeader.model_validate(raw_header)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise WireFormatError(f"{path}:1: header.{where}: {first['msg']}") from None
    frames = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            frames.append(Frame.parse(json.loads(line)))
        except (json.JSONDecodeError, ValueError) as exc:
            raise WireFormatError(f"{path}:{number}: {exc}") from None
    return Fixture(path, header, frames)
