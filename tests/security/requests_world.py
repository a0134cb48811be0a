"""Shared set-up for the request, response and file tests of issue #15 (items 1, 6, 7, 9–12):
an app with a researcher, a Study A with one annotator, a launched Study B whose participants
have consented and checked their microphone, a quiet live-call manager (no speech models), and
a real uvicorn server on 127.0.0.1 for the tests that need real sockets."""

from __future__ import annotations

import asyncio
import math
import re
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlmodel import Session

from app import study_a as svc_a
from app.live import LiveCallManager, now_utc
from app.models_study_a import Annotator
from app.models_study_b import LiveSession, Participant, StudyB
from app.settings import Settings
from study_protocols.study_b import PlannedSession, StudyBPlan
from tests.webclient import PASSWORD, researcher_app

SYSTEM = "scripted:oracle"
TASK = "apexv1_070"
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class World:
    app: Any
    settings: Settings
    study_a: int
    annotator: str
    """The annotator's token."""
    study_b: int
    participants: list[tuple[str, int]]
    """(token, live session id) of each Study B participant, consent given, mic checked."""


def make_world(tmp_path: Path, *, participants: int = 2) -> World:
    app = researcher_app(tmp_path / "data", secret_key="requests-test")
    settings = app.state.settings
    with Session(app.state.engine) as db:
        params = svc_a.StudyACreate(name="ratings", n_tasks=3, plans_per_task=2, n_annotators=1)
        study = svc_a.create_study(db, app.state.catalogue.tasks, params, created_by="ada")
        assert study.id is not None
        annotator = svc_a.study_annotators(db, study.id)[0]
        study_a, token = study.id, annotator.token
    study_b, people = launched_study_b(app, [f"P{n:02d}" for n in range(1, participants + 1)])
    app.state.live = quiet_manager(app)
    return World(app, settings, study_a, token, study_b, people)


def launched_study_b(app: Any, labels: list[str]) -> tuple[int, list[tuple[str, int]]]:
    """A launched Study B with one session per participant, each past consent and the
    microphone check (written straight to the database, as the flow would leave them)."""
    plan = StudyBPlan(0, (TASK,), (SYSTEM,), (), tuple(
        PlannedSession(label, 1, TASK, SYSTEM, False) for label in labels))
    out: list[tuple[str, int]] = []
    with Session(app.state.engine) as db:
        study = StudyB(name="live audit", created_by="ada", status="launched",
                       task_ids=[TASK], systems=[SYSTEM], plan=plan.to_json(),
                       consent_text="You agree.", completion_code="DONE1")
        db.add(study)
        db.flush()
        assert study.id is not None
        for n, label in enumerate(labels):
            person = Participant(study_id=study.id, label=label,
                                 token=f"req{study.id}x{n:03d}" + "t" * 24, consent="given",
                                 consent_at=now_utc(), mic_checked_at=now_utc(),
                                 headphones_checked_at=now_utc())
            db.add(person)
            db.flush()
            assert person.id is not None
            row = LiveSession(study_id=study.id, participant_id=person.id, position=1,
                              task_id=TASK, system=SYSTEM)
            db.add(row)
            db.flush()
            assert row.id is not None
            out.append((person.token, row.id))
        db.commit()
        return study.id, out


def quiet_manager(app: Any) -> LiveCallManager:
    """Live calls without speech models and without the janitor's hurry."""
    return LiveCallManager(app.state.settings.runs_dir, asr_factory=lambda: None,
                           reap_every_s=3600, retain_s=3600)


def annotator_row(app: Any, token: str) -> Annotator:
    with Session(app.state.engine) as db:
        found = svc_a.annotator_by_token(db, token)
        assert found is not None
        return found


def wav_bytes(seconds: float = 0.5, rate: int = 16000) -> bytes:
    """A small PCM16 mono WAV (a 440 Hz tone) written by hand."""
    n = int(seconds * rate)
    frames = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate)))
                      for i in range(n))
    header = b"RIFF" + struct.pack("<I", 36 + len(frames)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(frames))
    return header + frames


def csrf_of(html: str) -> str:
    match = CSRF_FIELD.search(html)
    assert match, html[:300]
    return match.group(1)


async def log_in(http: httpx.AsyncClient, next_url: str = "/tasks") -> str:
    """Log the client in as the researcher; the session's CSRF token."""
    token = csrf_of((await http.get("/login")).text)
    r = await http.post("/login", data={"csrf_token": token, "username": "ada",
                                        "password": PASSWORD, "next": next_url})
    assert r.status_code in (200, 303), r.text[:300]
    page = await http.get(next_url)
    assert page.status_code == 200
    fresh = re.search(r'"X-CSRF-Token": "([^"]+)"', page.text)  # login starts a new session
    assert fresh, page.text[:300]
    return fresh.group(1)


class Fed:
    """A request body of ``head``, ``filler`` bytes of ``A`` and ``tail``, handed over in
    chunks, counting how much of it the server pulled."""

    def __init__(self, filler: int, *, head: bytes = b"", tail: bytes = b"",
                 chunk: int = 1 << 20) -> None:
        self.filler = filler
        self.head = head
        self.tail = tail
        self.chunk = chunk
        self.sent = 0

    @property
    def length(self) -> int:
        return len(self.head) + self.filler + len(self.tail)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.head:
            self.sent += len(self.head)
            yield self.head
        block = b"A" * self.chunk
        left = self.filler
        while left > 0:
            part = block[: min(self.chunk, left)]
            left -= len(part)
            self.sent += len(part)
            yield part
        if self.tail:
            self.sent += len(self.tail)
            yield self.tail


def asgi_client(app: Any) -> httpx.AsyncClient:
    """An in-process client whose request bodies reach the app chunk by chunk."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                             base_url="http://testserver")


@contextmanager
def served(app: Any) -> Iterator[str]:
    """The app on a real uvicorn server at 127.0.0.1 (a random port) in a thread; stopped,
    with its lifespan, on exit."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_keep_alive=30))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@asynccontextmanager
async def open_stream(http: httpx.AsyncClient, url: str) -> AsyncIterator[httpx.Response]:
    """An event stream held open; the response, once its headers (and, for a 200, its first
    bytes) have arrived."""
    async with http.stream("GET", url) as response:
        if response.status_code == 200:
            chunks = response.aiter_raw()
            first = await asyncio.wait_for(chunks.__anext__(), 20)
            assert first.startswith(b"retry:"), first[:100]
        else:
            await response.aread()
        yield response
