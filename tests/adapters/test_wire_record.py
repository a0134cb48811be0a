"""Recorded sessions, the recording side: audio redaction, the fixture format, the loopback
recording proxy (credentials forwarded upstream, never written) and ``apex-voice adapters
record``. Replaying fixtures is ``test_wire_replay.py``."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import threading
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from app.cli import main
from runtime.agents.wire_format import (
    AUDIO_MARK,
    BLOB_MARK,
    REDACTED,
    Frame,
    WireFormatError,
    carries_audio,
    read_fixture,
    redact,
    restore,
    scrub,
)
from runtime.agents.wire_record import RecordingProxy, provider_wire
from tests.adapters.harness import Scenario
from tests.fakes.realtime.openai_family import OpenAIFake

PCM = bytes(range(256)) * 15  # 3840 bytes: 80 ms of 24 kHz PCM16
B64 = base64.b64encode(PCM).decode()
B64URL = base64.urlsafe_b64encode(PCM).decode()  # how pydantic writes bytes (google-genai)


# --------------------------------------------------------------------------- redaction


@pytest.mark.parametrize("message", [
    {"type": "input_audio_buffer.append", "audio": B64},
    {"type": "response.output_audio.delta", "response_id": "r", "item_id": "i", "delta": B64},
    {"type": "response.audio.delta", "delta": B64},  # StepFun / OpenAI beta spelling
    {"type": "session.input_audio.append", "audio": B64},  # OpenAI Live
    {"type": "session.output_audio.delta", "delta": B64},
    {"type": "response.event", "event": {"type": "response.audio.delta", "delta": B64}},
    {"realtimeInput": {"audio": {"data": B64, "mimeType": "audio/pcm;rate=16000"}}},
    {"serverContent": {"modelTurn": {"parts": [
        {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": B64}}]}}},
    {"serverContent": {"modelTurn": {"parts": [
        {"inlineData": {"mimeType": "audio/pcm;rate=24000", "data": B64URL}}]}}},
    {"realtime_input": {"audio": {"data": B64, "mime_type": "audio/pcm;rate=16000"}}},
], ids=["append", "ga-delta", "beta-delta", "live-append", "live-delta", "live-nested",
        "gemini-in", "gemini-out", "gemini-out-urlsafe", "gemini-in-snake"])
def test_every_audio_shape_becomes_a_digest(message: dict[str, Any]) -> None:
    redacted, n_audio = redact(message)
    text = json.dumps(redacted)
    urlsafe = B64URL in json.dumps(message)
    assert n_audio == 1
    assert B64[:40] not in text and B64URL[:40] not in text
    marks = [m for m in _walk(redacted) if isinstance(m, dict) and AUDIO_MARK in m]
    assert marks == [{AUDIO_MARK: {"sha256": hashlib.sha256(PCM).hexdigest(), "bytes": len(PCM),
                                   "rms": _rms(PCM),
                                   **({"encoding": "base64url"} if urlsafe else {})}}]
    assert carries_audio(redacted) and carries_audio(message)
    # Replay puts back a payload of the recorded length, in the same alphabet.
    restored = restore(redacted)
    back = [v for v in _walk(restored) if isinstance(v, str) and len(v) > 100]
    decode = base64.urlsafe_b64decode if urlsafe else base64.b64decode
    assert len(back) == 1 and len(decode(back[0])) == len(PCM)
    assert abs(_rms(decode(back[0])) - _rms(PCM)) <= 0.02 * _rms(PCM)  # a tone at its level


def _rms(raw: bytes) -> int:
    samples = [int.from_bytes(raw[i:i + 2], "little", signed=True)
               for i in range(0, len(raw), 2)]
    return round(math.sqrt(sum(x * x for x in samples) / len(samples)))


def test_silence_replays_as_silence_and_speech_at_its_level() -> None:
    """Energy-gated adapters (GPT-Live drops silent chunks) see the same decision on replay."""
    quiet = bytes(1920)
    loud = (b"\x10\x27\xf0\xd8" * 480)  # +-10000: RMS 10000
    message = [{"type": "session.output_audio.delta", "delta": base64.b64encode(c).decode()}
               for c in (quiet, loud)]
    redacted, n_audio = redact(message)
    assert n_audio == 2
    assert [m["delta"][AUDIO_MARK]["rms"] for m in redacted] == [0, 10000]
    back = [base64.b64decode(m["delta"]) for m in restore(redacted)]
    assert back[0] == quiet
    assert len(back[1]) == len(loud) and abs(_rms(back[1]) - 10000) < 200


def _walk(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def test_text_and_control_messages_are_kept_verbatim() -> None:
    messages = [
        {"type": "response.output_audio_transcript.delta", "delta": "abcd"},  # base64-ish text
        {"type": "response.function_call_arguments.done", "name": "update_lr_1",
         "call_id": "c1", "arguments": json.dumps({"fields": {"employee_id": "E-1042"}})},
        {"realtimeInput": {"activityStart": {}}},
        {"toolResponse": {"functionResponses": [{"id": "x", "name": "kb_search",
                                                 "response": {"output": {"ok": True}}}]}},
    ]
    for message in messages:
        assert redact(message) == (message, 0)
        assert not carries_audio(message)


def test_unlabelled_long_base64_is_hashed_as_a_blob() -> None:
    message = {"type": "some.future_event", "payload": B64, "note": "plain words " * 40}
    redacted, n_audio = redact(message)
    assert n_audio == 0 and redacted["note"] == "plain words " * 40
    assert redacted["payload"] == {BLOB_MARK: {"sha256": hashlib.sha256(
        PCM).hexdigest(), "bytes": len(PCM)}}
    assert len(base64.b64decode(restore(redacted)["payload"])) == len(PCM)


def test_scrub_replaces_plain_and_json_escaped_secrets() -> None:
    line = json.dumps({"error": 'bad key "sk-abc/def\\1" given', "k": "sk-abc/def\\1"})
    out = scrub(line, ['sk-abc/def\\1'])
    assert "sk-abc" not in out and out.count(REDACTED) == 2


# --------------------------------------------------------------------------- the file


def _write(path: Path, *lines: Any) -> Path:
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_read_fixture_names_the_file_and_line_of_a_problem(tmp_path: Path) -> None:
    with pytest.raises(WireFormatError, match="not an apex-voice-wire fixture"):
        read_fixture(_write(tmp_path / "a.jsonl", {"format": "something-else"}))
    with pytest.raises(WireFormatError, match="format version 9"):
        read_fixture(_write(tmp_path / "b.jsonl", {"format": "apex-voice-wire", "version": 9}))
    header = {
        "format": "apex-voice-wire", "version": 1, "task_id": "apexv1_070", "clock": "virtual",
        "agent": {"spec": "grok", "kind": "grok", "model": "m"}, "recorded_at": "now",
        "upstream": "wss://api.x.ai/v1/realtime",
        "expect": {"end_reason": "user_goodbye", "failure_class": "none"},
    }
    with pytest.raises(WireFormatError, match=r"c\.jsonl:3: a frame needs \"dir\""):
        read_fixture(_write(tmp_path / "c.jsonl", header,
                            {"t_ms": 0, "dir": "server", "msg": {}}, {"t_ms": 1, "msg": {}}))
    broken = dict(header)
    del broken["task_id"]
    with pytest.raises(WireFormatError, match=r"d\.jsonl:1: header\.task_id"):
        read_fixture(_write(tmp_path / "d.jsonl", broken))
    fixture = read_fixture(_write(tmp_path / "e.jsonl", header,
                                  {"t_ms": 0, "dir": "server", "close": {"code": None,
                                                                          "reason": ""}}))
    assert fixture.frames == [Frame(0, "server", close={"code": None, "reason": ""})]


# --------------------------------------------------------------------------- the proxy


class Upstream:
    """A loopback stand-in for a provider: reports the credentials it was sent (so a proxy
    that wrote frames verbatim would leak them), echoes, and closes on request."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.requests: list[tuple[str, str]] = []

    def check(self, connection: ServerConnection, request: Request) -> Response | None:
        self.requests.append((request.path, request.headers.get("Authorization", "")))
        if self.refuse:
            return connection.respond(HTTPStatus.UNAUTHORIZED,
                                      '{"error": {"code": "invalid_api_key"}}\n')
        return None

    async def session(self, ws: ServerConnection) -> None:
        assert ws.request is not None
        await ws.send(json.dumps({
            "type": "hello", "auth": ws.request.headers["Authorization"],
            "path": ws.request.path,
            "protocols": ws.request.headers.get("Sec-WebSocket-Protocol", ""),
        }))
        await ws.send(b"\x00\x01\x02\xff")  # opaque binary
        async for raw in ws:
            message = json.loads(raw)
            if message.get("type") == "bye":
                await ws.close(4000, "done")
                return
            await ws.send(json.dumps({"type": "echo", "of": message}))


async def test_proxy_forwards_credentials_and_never_records_them(tmp_path: Path) -> None:
    from runtime.agents.wire_format import WireHeader, write_fixture

    upstream = Upstream()
    async with serve(upstream.session, "127.0.0.1", 0, process_request=upstream.check,
                     subprotocols=[Subprotocol("realtime")]) as srv:
        port = next(iter(srv.sockets)).getsockname()[1]
        async with RecordingProxy(f"ws://127.0.0.1:{port}") as proxy:
            url = f"{proxy.origin}/v1/realtime?model=m&api_key=QUERY-SECRET-42"
            async with connect(url, additional_headers={
                "Authorization": "Bearer HEADER-SECRET-17"}, subprotocols=[
                Subprotocol("realtime"), Subprotocol("insecure-api-key.PROTO-SECRET-5")],
            ) as ws:
                assert ws.subprotocol == "realtime"  # the upstream's choice, relayed
                hello = json.loads(await ws.recv())
                assert await ws.recv() == b"\x00\x01\x02\xff"
                await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": B64}))
                echo = json.loads(await ws.recv())
                await ws.send(json.dumps({"type": "bye"}))
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.recv()
    # The provider got exactly the adapter's handshake, credentials included.
    assert upstream.requests == [("/v1/realtime?model=m&api_key=QUERY-SECRET-42",
                                  "Bearer HEADER-SECRET-17")]
    assert hello["auth"] == "Bearer HEADER-SECRET-17" and echo["of"]["audio"] == B64
    assert hello["protocols"] == "realtime, insecure-api-key.PROTO-SECRET-5"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4000
    # The log: both directions in order, audio digested, the close with its code.
    kinds = [(f.dir, (f.msg or {}).get("type") if f.msg else None, f.close) for f in proxy.frames]
    assert kinds == [
        ("server", "hello", None), ("server", None, None),
        ("client", "input_audio_buffer.append", None), ("server", "echo", None),
        ("client", "bye", None), ("server", None, {"code": 4000, "reason": "done"}),
    ]
    assert proxy.frames[1].blob == {"sha256": hashlib.sha256(
        b"\x00\x01\x02\xff").hexdigest(), "bytes": 4}
    assert proxy.frames[2].audio and proxy.frames[3].audio
    assert {"Bearer HEADER-SECRET-17", "HEADER-SECRET-17", "QUERY-SECRET-42",
            "insecure-api-key.PROTO-SECRET-5"} <= proxy.secrets
    # Written out, no credential survives, even the ones the provider echoed back.
    out = tmp_path / "f.jsonl"
    header = WireHeader.model_validate({
        "task_id": "t", "clock": "realtime", "recorded_at": "now",
        "agent": {"spec": "openai-realtime", "kind": "openai-realtime", "model": "m"},
        "upstream": f"ws://127.0.0.1:{port}/v1/realtime",
        "expect": {"end_reason": "user_goodbye", "failure_class": "none"},
    })
    write_fixture(out, header, proxy.frames, proxy.secrets)
    text = out.read_text()
    assert "SECRET" not in text and REDACTED in text
    assert B64[:40] not in text
    replayed = read_fixture(out)
    assert replayed.frames[1].payload() == bytes(4)
    assert replayed.frames[-1].close == {"code": 4000, "reason": "done"}


async def test_a_refused_handshake_reaches_the_client_with_its_status() -> None:
    upstream = Upstream(refuse=True)
    async with serve(upstream.session, "127.0.0.1", 0, process_request=upstream.check) as srv:
        port = next(iter(srv.sockets)).getsockname()[1]
        async with RecordingProxy(f"ws://127.0.0.1:{port}") as proxy:
            with pytest.raises(InvalidStatus) as refused:
                async with connect(f"{proxy.origin}/v1/realtime",
                                   additional_headers={"Authorization": "Bearer nope-123"}):
                    pass
    assert refused.value.response.status_code == 401
    assert b"invalid_api_key" in (refused.value.response.body or b"")
    assert proxy.refused is not None and proxy.refused[0] == 401 and proxy.frames == []


def test_provider_wire_names_the_key_variable_and_collects_secrets() -> None:
    from runtime.agents.errors import ProviderConfigError

    with pytest.raises(ProviderConfigError, match="XAI_API_KEY"):
        provider_wire("grok", {})
    with pytest.raises(ProviderConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        provider_wire("gemini-live", {})
    with pytest.raises(ProviderConfigError, match="not a networked provider"):
        provider_wire("scripted:oracle", {})
    wire = provider_wire("grok:some-model", {
        "XAI_API_KEY": "xai-secret-1", "APEX_GROK_URL": "wss://u:pw-secret@h.example/v1/rt"
        "?token=tok-secret&x=1", "APEX_GROK_SAMPLE_RATE": "16000", "APEX_GROK_VOICE": "Ara",
        "APEX_GROK_API_TOKEN": "other-secret-0123456789", "FEATURE_KEY": "enabled",
    })
    assert wire.model == "some-model" and wire.url_env == "APEX_GROK_URL"
    assert wire.upstream_display == "wss://h.example/v1/rt"
    assert wire.settings == {"APEX_GROK_SAMPLE_RATE": "16000", "APEX_GROK_VOICE": "Ara"}
    assert {"xai-secret-1", "pw-secret", "tok-secret", "other-secret-0123456789"} <= wire.secrets
    assert "enabled" not in wire.secrets  # a short value of a key-like name: not a credential


# --------------------------------------------------------------------------- the command


@pytest.fixture
def fake_in_thread() -> Iterator[OpenAIFake]:
    """An OpenAI fake whose session setup fails (a short real-time session), served from its
    own event loop so the CLI can run ``asyncio.run`` in the test's thread."""
    loop = asyncio.new_event_loop()
    fake = OpenAIFake(Scenario(handshake_error="server"))
    ready = threading.Event()

    def serve_forever() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(fake.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve_forever, daemon=True)
    thread.start()
    assert ready.wait(10)
    yield fake
    asyncio.run_coroutine_threadsafe(fake.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def test_record_help_documents_the_command() -> None:
    result = CliRunner().invoke(main, ["adapters", "record", "--help"])
    assert result.exit_code == 0
    for words in ("--agent", "--task", "--out", "sha256", "never written"):
        assert words in result.output


@pytest.mark.parametrize(("spec", "variable"), [
    ("openai-realtime", "OPENAI_API_KEY"), ("stepfun", "STEPFUN_API_KEY"),
    ("gemini-live", "GEMINI_API_KEY"),
])
def test_record_without_a_key_names_the_variable(spec: str, variable: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "STEPFUN_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "f.jsonl"
    result = CliRunner().invoke(main, ["adapters", "record", "--agent", spec,
                                       "--task", "apexv1_070", "--out", str(out)])
    assert result.exit_code == 2
    assert f"set the environment variable {variable}" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_record_refuses_agents_that_are_not_providers(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["adapters", "record", "--agent", "scripted:oracle",
                                       "--task", "apexv1_070", "--out", str(tmp_path / "f")])
    assert result.exit_code == 2 and "not a networked provider" in result.output


def test_record_reports_a_refused_key_without_writing(
    fake_in_thread: OpenAIFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APEX_OPENAI_REALTIME_URL", fake_in_thread.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-9876")
    out = tmp_path / "f.jsonl"
    result = CliRunner().invoke(main, ["adapters", "record", "--agent", "openai-realtime",
                                       "--task", "apexv1_070", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "openai-realtime refused the session (HTTP 401)" in result.output
    assert "sk-wrong-key-9876" not in result.output and not out.exists()


def test_record_writes_the_session_and_flags_a_failed_run(
    fake_in_thread: OpenAIFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real-time recording through the command, against a fake that fails the session
    setup (so it lasts a moment): the fixture is written, keyless, and the exit code says the
    run failed."""
    key = "sk-cli-recording-key-4242"
    fake_in_thread.api_key = key
    monkeypatch.setenv("APEX_OPENAI_REALTIME_URL", fake_in_thread.url + "?auth_token=qs-5151")
    monkeypatch.setenv("OPENAI_API_KEY", key)
    out = tmp_path / "rec" / "f.jsonl"
    result = CliRunner().invoke(main, ["adapters", "record", "--agent", "openai-realtime",
                                       "--task", "apexv1_070", "--out", str(out),
                                       "--run-dir", str(tmp_path / "run")])
    assert result.exit_code == 1, result.output
    assert f"wrote {out}" in result.output and "agent_error" in result.output
    text = out.read_text()
    assert key not in text and "qs-5151" not in text and "auth_token" not in text
    fixture = read_fixture(out)
    assert fixture.header.clock == "realtime" and fixture.header.task_id == "apexv1_070"
    assert fixture.header.upstream == fake_in_thread.url
    assert fixture.header.expect.errors == ["server"]
    # (In real time the adapter's session.update may cross the server's session.created.)
    assert sorted(f.msg["type"] for f in fixture.frames if f.msg) == [
        "error", "session.created", "session.update"]
    assert (tmp_path / "run" / "events.jsonl").is_file()
    # The fake did get the key and the query: the proxy relays the adapter's handshake.
    assert "?auth_token=qs-5151&model=" in fake_in_thread.requests[0][0]
