"""Held-out probe sets: scripted agents written blind (by writers who had not read the caller's
or the observer's rules), each with the verdict and caller plans its writer expected before
any run. Prints, per set, how many runs meet their expectation, with a 95% Wilson interval,
and each one that does not. A set is never tuned on: once the rules are changed to fit one,
it moves to tests/probes/ as a development set (docs/grading.md, "Held-out checks").

    .venv/bin/python bench/bench_heldout_probes.py [tests/heldout/negotiation2 ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scipy.stats import binomtest

from grading.gates import grade_run_dir
from runtime.agents.scripted import load_script
from runtime.core.events import read_events
from tests.conftest import bundled_tasks, run_script
from tests.probe_expect import probe_problems

HELDOUT = Path(__file__).resolve().parent.parent / "tests" / "heldout"


def run_set(folder: Path) -> tuple[int, int, list[str]]:
    """(runs meeting their expectation, runs, one line per miss)."""
    tasks = {t.id: t for t in bundled_tasks()}
    probes = sorted(folder.glob("*.yaml"))
    met, misses = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for k, probe in enumerate(probes):
            script = load_script(probe)
            run_dir = run_script(script.task or "", probe, Path(tmp) / str(k))
            grade = grade_run_dir(run_dir, tasks)
            problems = probe_problems(script.expect, grade,
                                      read_events(run_dir / "events.jsonl").events)
            if grade.infrastructure_failure:
                problems.insert(0, f"infrastructure failure: {grade.end_reason}")
            if problems:
                misses.append(f"  {probe.stem}: {problems[0][:160]}")
            else:
                met += 1
    return met, len(probes), misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", type=Path,
                        help="folders of probes (default: every folder under tests/heldout)")
    args = parser.parse_args()
    sets = args.sets or sorted(p for p in HELDOUT.iterdir() if p.is_dir())
    print(f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for folder in sets:
        start = time.perf_counter()
        met, n, misses = run_set(folder)
        ci = binomtest(met, n).proportion_ci(confidence_level=0.95, method="wilson") if n else None
        lo, hi = (ci.low, ci.high) if ci is not None else (0.0, 0.0)
        print(f"{folder.name}: {met}/{n} runs meet the expectation written before any run "
              f"({met / max(n, 1):.1%}, 95% Wilson {lo:.1%}-{hi:.1%}); "
              f"{time.perf_counter() - start:.0f} s")
        print("\n".join(misses))


if __name__ == "__main__":
    main()
