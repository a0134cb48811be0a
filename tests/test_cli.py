"""The apex-voice command line: run (resumable), grade --json, report --json, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from app.cli import main
from runtime.core.events import read_events


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_tasks_validate_and_list_bundled() -> None:
    code, out = _cli("tasks", "validate", "tasks")
    assert code == 0, out
    code, out = _cli("tasks", "list", "--json")
    ids = {row["id"] for row in json.loads(out)}
    assert {"apexv1_001", "apexv1_070", "apexv1_087"} <= ids


def test_run_grade_report_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    code, text = _cli("run", "--task", "apexv1_070", "--agent", "scripted:oracle",
                      "--repeats", "3", "--out", str(out))
    assert code == 0, text
    assert "3 run(s) done" in text
    code, text = _cli("run", "--task", "apexv1_070", "--agent", "scripted:oracle",
                      "--repeats", "3", "--out", str(out))
    assert "0 run(s) done, 3 already complete" in text
    code, text = _cli("grade", str(out / "apexv1_070" / "r1"), "--json")
    assert code == 0, text
    (g,) = json.loads(text)
    assert g["run_id"] == "apexv1_070.r1" and g["WS"] is True
    assert set(g["gates"]) == {"TS", "PV", "AC", "AV"}
    assert g["afa"] == {"correct": 10, "total": 10} and g["stale_fields"] == []
    assert {"artifact", "field", "grader", "gold", "value", "score", "stale", "judged"} <= set(
        g["fields"][0]
    )
    code, text = _cli("report", str(out), "--json")
    assert code == 0, text
    rep = json.loads(text)
    assert rep["pass_at_1"]["value"] == 1.0 and rep["pass_at_3"]["value"] == 1.0
    assert rep["reliable_at_3"]["value"] == 1.0 and rep["pass_at_1"]["ci"] == [1.0, 1.0]
    assert rep["gate_pass_rates"] == {"TS": 1.0, "PV": 1.0, "AC": 1.0, "AV": 1.0}
    assert "archetype" in rep["slices"]


def test_crashed_run_is_moved_aside_and_rerun(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    _cli("run", "--task", "apexv1_001", "--agent", "scripted:oracle", "--out", str(out))
    run = out / "apexv1_001" / "r0"
    meta = json.loads((run / "meta.json").read_text())
    meta["status"] = "running"  # as if the process had died mid-run
    (run / "meta.json").write_text(json.dumps(meta))
    code, text = _cli("run", "--task", "apexv1_001", "--agent", "scripted:oracle",
                      "--out", str(out))
    assert code == 0 and "1 incomplete moved" in text
    kept = list((out / ".incomplete").iterdir())
    assert len(kept) == 1 and (kept[0] / "events.jsonl").is_file()


def test_truncated_log_grades_with_a_notice(tmp_path: Path) -> None:
    out = tmp_path / "camp"
    _cli("run", "--task", "apexv1_001", "--agent", "scripted:oracle", "--out", str(out))
    log = out / "apexv1_001" / "r0" / "events.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:-5]) + "\n" + lines[-5][:40])  # cut mid-line
    read = read_events(log)
    assert len(read.problems) == 1 and "events.jsonl:" in read.problems[0]
    code, text = _cli("grade", str(out / "apexv1_001" / "r0"))
    assert code == 0
    assert "unreadable event" in text and "did not finish" in text


def test_bad_agent_spec_and_unknown_task(tmp_path: Path) -> None:
    code, text = _cli("run", "--task", "apexv1_001", "--agent", "telepathy", "--out",
                      str(tmp_path))
    assert code == 2 and "unknown agent spec 'telepathy'" in text
    code, text = _cli("run", "--task", "nope_999", "--agent", "scripted:oracle", "--out",
                      str(tmp_path))
    assert code == 2 and "unknown task 'nope_999'" in text
    code, text = _cli("run", "--task", "apexv1_001", "--agent", "scripted:/no/such.yaml",
                      "--out", str(tmp_path / "x"))
    assert code == 2 and "script file not found" in text


def test_bank_verify_on_the_committed_bank() -> None:
    code, out = _cli("bank", "verify")
    assert code == 0, out
    assert "bank verified for" in out
    from runtime.speechbank.bank_manifest import load_manifest
    from tests.conftest import bundled_tasks

    engines = {load_manifest(t.folder).engine.split()[0] for t in bundled_tasks()}  # type: ignore[union-attr]
    assert engines == {"kokoro"}, engines  # every shipped bank is the Kokoro bank
