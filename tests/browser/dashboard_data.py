"""Campaigns for the dashboard browser test (tests/browser/test_dashboard_browser.py), run with
the scripted agents in virtual time.

- ``wide``: the 24 bundled tasks × 3 repeats. Task *i* (in id order) gets the oracle on its
  first ``i % 4`` repeats and its first ``negative_*`` script on the others, so tasks pass 0, 1,
  2 or 3 of their repeats and every interval has width.
- ``wide-copy``: the same run directories again, so on the frontier two campaigns sit on the
  very same point (their labels must still not overlap).
- ``tiny``: two tasks, one repeat each (oracle, negative): Pass@3 and Reliable@3 are undefined,
  with a reason.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from runtime.core.spec import load_tasks
from runtime.suite.subsets import AUDIT, task_folders
from tests.conftest import run_script

REPEATS = 3


def build_campaigns(runs_dir: Path) -> list[str]:
    tasks = sorted(load_tasks(task_folders(None, AUDIT)), key=lambda t: t.id)  # audit subset
    wide = runs_dir / "wide"
    for i, task in enumerate(tasks):
        negatives = sorted(p.stem for p in (task.folder / "scripts").glob("negative_*.yaml"))
        for repeat in range(REPEATS):
            script = "oracle" if repeat < i % 4 else negatives[0]
            run_script(task.id, script, wide, repeat=repeat)
    (wide / "campaign.json").write_text(json.dumps({
        "agent": "scripted", "seed": 0, "repeats": REPEATS, "tasks": [t.id for t in tasks]}))
    shutil.copytree(wide, runs_dir / "wide-copy")
    tiny = runs_dir / "tiny"
    run_script("apexv1_070", "oracle", tiny)
    run_script("apexv1_001", "negative_stale_correction", tiny)
    (tiny / "campaign.json").write_text(json.dumps({"agent": "scripted", "seed": 0}))
    return ["wide", "wide-copy", "tiny"]
