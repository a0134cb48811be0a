"""The command line with provider agent specs: a missing key is one clear line, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main


@pytest.mark.parametrize(("spec", "key_env"), [
    ("openai-realtime", "OPENAI_API_KEY"), ("grok:grok-voice-think-fast-2.0", "XAI_API_KEY"),
    ("stepfun", "STEPFUN_API_KEY"), ("gpt-live", "OPENAI_API_KEY"),
])
def test_run_without_a_key_names_the_variable(
    spec: str, key_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(key_env, raising=False)
    result = CliRunner().invoke(main, [
        "run", "--task", "apexv1_001", "--agent", spec, "--out", str(tmp_path / "camp"),
    ])
    assert result.exit_code != 0
    assert key_env in result.output
    assert "Traceback" not in result.output
