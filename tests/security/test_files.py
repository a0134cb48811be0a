"""Files, ids and error messages (issue #15, items 7, 11 and 12), tried the way an attacker
would: links planted in a run folder must not serve or overwrite files outside it (a
``trace.wav`` link served an outside file; a ``peaks.json`` link overwrote its target), huge
integer ids and a malformed ``trace.wav`` get a clear 4xx instead of a 500, no message shows an
absolute server path, and an upload is accepted only when it decodes as the audio it claims to
be (a WAV header followed by HTML was stored and served as audio)."""

from __future__ import annotations

import html
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from app.models_study_a import StudyAItem
from tests.security.requests_world import World, csrf_of, make_world, wav_bytes
from tests.webclient import log_in

pytestmark = pytest.mark.database  # each test runs on SQLite and on PostgreSQL (tests/pg.py)

SECRET = "root:x:0:0:the outside file\n"


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


@pytest.fixture
def researcher(world: World) -> Iterator[TestClient]:
    with TestClient(world.app, raise_server_exceptions=False) as client:
        log_in(client, next_url="/studies/a")
        yield client


def _run(world: World, rel: str, **files: bytes) -> Path:
    run_dir = world.settings.runs_dir / rel
    run_dir.mkdir(parents=True)
    (run_dir / "meta.json").write_text(json.dumps({"task_id": "apexv1_070", "agent": "x"}))
    for name, data in files.items():
        (run_dir / name.replace("_", ".")).write_bytes(data)
    return run_dir


def _text(r: Any) -> str:
    return html.unescape(r.text)


def test_links_in_a_run_folder_are_not_followed(world: World, researcher: TestClient,
                                                tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "passwd"
    secret.write_text(SECRET)
    # trace.wav is a link to a file outside the run folder.
    run = _run(world, "planted/r0")
    (run / "trace.wav").symlink_to(secret)
    r = researcher.get("/runs/planted/r0/trace.wav")
    assert SECRET not in r.text
    assert r.status_code == 404 and "trace.wav" in _text(r), r.status_code
    assert "link" in _text(r)
    # peaks.json is a link: neither read nor written through.
    victim = outside / "victim.json"
    victim.write_text(json.dumps({"duration": 1, "peaks": ["stolen"]}))
    run = _run(world, "planted/r1", trace_wav=wav_bytes())
    (run / "peaks.json").symlink_to(victim)
    os.utime(victim, (0, 0))  # older than the trace: the server recomputes and caches
    r = researcher.get("/runs/planted/r1/peaks.json")
    assert r.status_code == 200 and r.json()["duration"] == pytest.approx(0.5)
    assert json.loads(victim.read_text()) == {"duration": 1, "peaks": ["stolen"]}
    os.utime(victim, None)  # newer than the trace: it would be taken as the cache
    r = researcher.get("/runs/planted/r1/peaks.json")
    assert r.status_code == 200 and "stolen" not in r.text
    assert json.loads(victim.read_text()) == {"duration": 1, "peaks": ["stolen"]}
    # The replay page of that run still opens.
    assert researcher.get("/runs/planted/r1/replay").status_code == 200
    # A meta.json that is a link out: the run is neither listed with it nor opened.
    (outside / "meta.json").write_text(json.dumps({"task_id": "apexv1_070",
                                                   "agent": "SECRET-AGENT"}))
    run = _run(world, "planted/r2")
    (run / "meta.json").unlink()
    (run / "meta.json").symlink_to(outside / "meta.json")
    r = researcher.get("/runs/planted/r2/replay")
    assert r.status_code == 404 and "SECRET-AGENT" not in r.text
    listing = researcher.get("/runs").text
    assert "planted/r2" in listing and "SECRET-AGENT" not in listing


def test_huge_ids_and_a_malformed_trace_get_a_clear_answer(world: World,
                                                          researcher: TestClient) -> None:
    huge = "9" * 30
    token, _ = world.participants[0]
    for path in (f"/studies/a/{huge}", f"/studies/a/{world.study_a}/items/{huge}/audio",
                 f"/studies/b/{huge}", f"/studies/b/{huge}/plan.csv",
                 f"/studies/a/{huge}/ratings.csv",
                 f"/p/{token}/s/{huge}", f"/annotate/{world.annotator}/item/{huge}"):
        r = researcher.get(path)
        assert r.status_code == 404, (path, r.status_code)
    _run(world, "broken/r0", trace_wav=b"RIFF\x24\x00\x00\x00WAVEthis is not audio at all")
    for path in ("/runs/broken/r0/peaks.json", "/runs/broken/r0/trace.wav"):
        r = researcher.get(path)
        assert r.status_code == 422, (path, r.status_code)
        assert "trace.wav" in _text(r) and "cannot be read as audio" in _text(r)
        assert str(world.settings.data_dir.resolve()) not in r.text


def test_messages_name_no_absolute_server_path(world: World, researcher: TestClient) -> None:
    run = _run(world, "broken/r1")
    (run / "meta.json").write_text("{not json")
    (run / "events.jsonl").write_text("{}\n")
    root = str(world.settings.data_dir.resolve())
    r = researcher.get("/runs/broken/r1/replay")
    assert r.status_code == 404
    assert "broken/r1" in _text(r) and "meta.json" in _text(r)
    assert root not in r.text
    listing = researcher.get("/runs")  # the run's problem is listed by its own name
    assert listing.status_code == 200 and "broken/r1" in listing.text
    assert f"{root}/runs/broken" not in listing.text


def _calibration(researcher: TestClient, world: World, content: bytes,
                 filename: str = "leaky.wav", ctype: str = "audio/wav",
                 name: str = "leaky") -> Any:
    page = researcher.get(f"/studies/a/{world.study_a}").text
    context = re.findall(r'<option value="([^"]+)"', page)[0]
    return researcher.post(
        f"/studies/a/{world.study_a}/calibration",
        data={"csrf_token": csrf_of(page), "context": context, "name": name,
              "text": "What the audio says.", "note": ""},
        files={"audio": (filename, io.BytesIO(content), ctype)}, follow_redirects=False)


HTML = b"<html><body><script>fetch('/studies/b').then(r=>r.text()).then(alert)</script>"


def test_an_upload_must_decode_as_the_audio_it_claims_to_be(world: World,
                                                            researcher: TestClient) -> None:
    # A WAV header followed by HTML.
    polyglot = b"RIFF" + (4 + len(HTML)).to_bytes(4, "little") + b"WAVE" + HTML
    r = _calibration(researcher, world, polyglot)
    assert r.status_code == 400, r.status_code
    assert "cannot be decoded" in _text(r) and "leaky.wav" in _text(r)
    # A real WAV with HTML after its end.
    r = _calibration(researcher, world, wav_bytes() + HTML)
    assert r.status_code == 400, r.status_code
    assert "after the end of its audio" in _text(r)
    # An Ogg page header with nothing decodable behind it.
    r = _calibration(researcher, world, b"OggS" + HTML, filename="a.ogg", ctype="audio/ogg")
    assert r.status_code == 400 and "cannot be decoded" in _text(r)
    with Session(world.app.state.engine) as db:
        assert not [i for i in db.exec(select(StudyAItem)).all() if i.calibration]
    # Real audio is accepted and served as audio that no browser may sniff into a page.
    r = _calibration(researcher, world, wav_bytes(), name="real")
    assert r.status_code == 303, _text(r)[:1000]
    with Session(world.app.state.engine) as db:
        item = next(i for i in db.exec(select(StudyAItem)).all() if i.calibration)
    r = researcher.get(f"/studies/a/{world.study_a}/items/{item.id}/audio")
    assert r.status_code == 200 and r.content == wav_bytes()
    assert r.headers["content-type"] == "audio/wav"
    assert r.headers["x-content-type-options"] == "nosniff"
