"""Study B assignment plan (appendix F.3): counterbalancing, edits and the plan-b/check-b CLI.

Every property is recounted here from the sessions themselves (brute-force counts), never taken
from the module's own tables.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
from collections import Counter, defaultdict
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from app.cli_study_b import check_b_command, plan_b_command
from runtime.core.spec import load_tasks
from runtime.suite.subsets import AUDIT, task_folders
from study_protocols.study_b import (
    PlanError,
    PlannedSession,
    StudyBPlan,
    balance_table,
    check_plan,
    format_balance,
    format_plan,
    make_plan,
    select_anchor_tasks,
    swap_sessions,
    williams_rows,
)

# Five specs that runtime.session.campaign.parse_agent_spec accepts here without keys or servers.
SYSTEMS = ("scripted:oracle", "baseline", "openai-realtime", "gemini-live", "grok")
TASK_IDS = tuple(t.id for t in load_tasks(task_folders(None, AUDIT)))
"""The audit subset: Study B's default task set."""


@pytest.fixture(scope="module")
def plan() -> StudyBPlan:
    return make_plan(TASK_IDS, SYSTEMS, seed=11)


def _edit(plan: StudyBPlan, sessions: list[PlannedSession]) -> StudyBPlan:
    return dataclasses.replace(plan, sessions=tuple(sessions))


def _replace_at(plan: StudyBPlan, who: str, where: int, **changes: object) -> StudyBPlan:
    out = []
    for s in plan.sessions:
        if s.participant == who and s.position == where:
            s = dataclasses.replace(s, **changes)  # type: ignore[arg-type]
        out.append(s)
    return _edit(plan, out)


# --------------------------------------------------------------------------- the default plan


def test_bundled_audit_subset_is_24_tasks() -> None:
    assert len(TASK_IDS) == 24 and len(set(TASK_IDS)) == 24


def test_default_plan_shape(plan: StudyBPlan) -> None:
    # 24 tasks x 5 systems + 6 anchor tasks x 5 systems = 150 sessions = 30 participants x 5.
    assert len(plan.sessions) == 150
    assert plan.participants() == [f"P{i:02d}" for i in range(1, 31)]
    assert len(plan.anchor_task_ids) == 6 and set(plan.anchor_task_ids) <= set(TASK_IDS)
    assert sum(s.anchor for s in plan.sessions) == 30
    for label in plan.participants():
        assert [s.position for s in plan.for_participant(label)] == [1, 2, 3, 4, 5]
    assert check_plan(plan) == []


def test_participants_never_repeat_a_task_and_meet_every_system_once(plan: StudyBPlan) -> None:
    for label in plan.participants():
        mine = plan.for_participant(label)
        assert len({s.task_id for s in mine}) == len(mine), label
        assert Counter(s.system for s in mine) == Counter(SYSTEMS), label
        # hence each system at most once per task for this participant
        assert len({(s.task_id, s.system) for s in mine}) == len(mine)


def test_every_cell_has_exactly_one_primary_session(plan: StudyBPlan) -> None:
    primary = Counter((s.task_id, s.system) for s in plan.sessions if not s.anchor)
    assert primary == Counter(itertools.product(TASK_IDS, SYSTEMS))


def test_anchor_cells_rerun_once_by_a_different_participant(plan: StudyBPlan) -> None:
    first = {(s.task_id, s.system): s.participant for s in plan.sessions if not s.anchor}
    second: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s in plan.sessions:
        if s.anchor:
            second[(s.task_id, s.system)].append(s.participant)
    assert set(second) == set(itertools.product(plan.anchor_task_ids, SYSTEMS))
    for cell, people in second.items():
        assert len(people) == 1 and people[0] != first[cell], cell


def test_each_system_exactly_balanced_over_positions(plan: StudyBPlan) -> None:
    counts = Counter((s.system, s.position) for s in plan.sessions)
    # 30 participants, 5 systems: every system appears 30 / 5 = 6 times at each position.
    assert all(counts[(sys, p)] == 6 for sys in SYSTEMS for p in range(1, 6))
    assert balance_table(plan) == {sys: [6] * 5 for sys in SYSTEMS}
    assert "balanced: every system appears equally often" in format_balance(plan)


def test_first_order_carry_over_is_balanced(plan: StudyBPlan) -> None:
    # Odd number of systems: square + mirror (10 rows) used 3 times -> each ordered pair of
    # distinct systems is adjacent 2 x 3 = 6 times; no system follows itself.
    follows: Counter[tuple[str, str]] = Counter()
    for label in plan.participants():
        mine = plan.for_participant(label)
        follows.update((a.system, b.system) for a, b in itertools.pairwise(mine))
    assert follows == Counter({pair: 6 for pair in itertools.permutations(SYSTEMS, 2)})


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8])
def test_williams_rows_are_latin_and_carry_over_balanced(n: int) -> None:
    rows = williams_rows(n)
    assert len(rows) == (2 * n if n % 2 and n > 1 else n)
    for row in rows:
        assert sorted(row) == list(range(n))
    for square in (rows[:n], rows[n:]) if len(rows) > n else (rows,):
        for col in range(n):
            assert sorted(r[col] for r in square) == list(range(n))  # Latin columns
    pairs = Counter(p for row in rows for p in itertools.pairwise(row))
    expected = 1 if n % 2 == 0 else 2
    assert pairs == Counter({p: expected for p in itertools.permutations(range(n), 2)})


def test_balance_within_one_when_participants_not_a_multiple_of_systems() -> None:
    four = SYSTEMS[:4]
    p = make_plan(TASK_IDS, four, seed=2)  # 30 units -> 30 participants, 30 = 7*4 + 2
    assert len(p.participants()) == 30
    counts = Counter((s.system, s.position) for s in p.sessions)
    for pos in range(1, 5):
        at_pos = sorted(counts[(sys, pos)] for sys in four)
        assert at_pos == [7, 7, 8, 8], pos  # floor/ceil of 30/4, summing to 30
    assert check_plan(p) == []
    assert "balanced within one" in format_balance(p)


@pytest.mark.parametrize(("per", "n_participants"), [(10, 15), (15, 10)])
def test_sessions_per_participant_derives_participant_count(per: int,
                                                            n_participants: int) -> None:
    p = make_plan(TASK_IDS, SYSTEMS, seed=5, sessions_per_participant=per)
    assert len(p.participants()) == n_participants and len(p.sessions) == 150
    m = per // len(SYSTEMS)
    for label in p.participants():
        mine = p.for_participant(label)
        assert [s.position for s in mine] == list(range(1, per + 1))
        assert len({s.task_id for s in mine}) == per
        assert Counter(s.system for s in mine) == Counter({sys: m for sys in SYSTEMS})
        for block in range(m):  # each block of five holds every system once
            chunk = mine[block * 5:(block + 1) * 5]
            assert {s.system for s in chunk} == set(SYSTEMS)
    counts = Counter((s.system, s.position) for s in p.sessions)
    assert set(counts.values()) == {n_participants // 5}
    assert Counter((s.task_id, s.system) for s in p.sessions if not s.anchor) == Counter(
        itertools.product(TASK_IDS, SYSTEMS))
    assert check_plan(p) == []


def test_named_anchor_tasks_and_no_anchors() -> None:
    named = ("apexv1_001", "apexv1_070")
    p = make_plan(TASK_IDS, SYSTEMS[:2], anchor_task_ids=named)
    assert p.anchor_task_ids == named and check_plan(p) == []
    assert {s.task_id for s in p.sessions if s.anchor} == set(named)
    none = make_plan(TASK_IDS, SYSTEMS[:3], n_anchor=0)
    assert none.anchor_task_ids == () and len(none.sessions) == 72 and check_plan(none) == []


# --------------------------------------------------------------------------- determinism


def test_same_seed_same_plan_and_different_seed_different_plan(plan: StudyBPlan) -> None:
    again = make_plan(TASK_IDS, SYSTEMS, seed=11)
    assert again == plan
    assert make_plan(list(reversed(TASK_IDS)), SYSTEMS, seed=11).sessions == plan.sessions
    other = make_plan(TASK_IDS, SYSTEMS, seed=12)
    assert other.sessions != plan.sessions
    assert check_plan(other) == []
    assert select_anchor_tasks(TASK_IDS, seed=11) == plan.anchor_task_ids


def test_json_and_csv_round_trip(plan: StudyBPlan) -> None:
    data = json.loads(json.dumps(plan.to_json()))
    assert StudyBPlan.from_json(data) == plan
    buf = io.StringIO()
    plan.to_csv(buf)
    lines = buf.getvalue().splitlines()
    assert lines[0] == "participant,position,task_id,system,anchor" and len(lines) == 151
    back = StudyBPlan.from_csv(io.StringIO(buf.getvalue()), seed=plan.seed,
                               task_ids=plan.task_ids, systems=plan.systems,
                               anchor_task_ids=plan.anchor_task_ids)
    assert back == plan


def test_from_json_names_the_bad_field(plan: StudyBPlan) -> None:
    data = plan.to_json()
    data["sessions"][3]["position"] = "two"
    with pytest.raises(PlanError, match=r"sessions\[3\]\.position"):
        StudyBPlan.from_json(data)
    with pytest.raises(PlanError, match="lacks 'systems'"):
        StudyBPlan.from_json({k: v for k, v in plan.to_json().items() if k != "systems"})


@pytest.mark.parametrize(("text", "message"), [
    ("participant,position,task_id,anchor\n", "lacks column"),
    ("participant,position,task_id,system,anchor\nP01,x,apexv1_001,baseline,0\n",
     "line 2: position 'x'"),
    ("participant,position,task_id,system,anchor\nP01,1,apexv1_001,baseline,maybe\n",
     "line 2: anchor 'maybe'"),
    ("participant,position,task_id,system,anchor\nP01,1,,baseline,0\n", "line 2: empty task_id"),
])
def test_from_csv_names_line_and_field(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        StudyBPlan.from_csv(io.StringIO(text), seed=0, task_ids=TASK_IDS, systems=SYSTEMS,
                            anchor_task_ids=())


# --------------------------------------------------------------------------- check_plan


def _has(problems: list[str], fragment: str) -> bool:
    return any(fragment in p for p in problems)


def test_check_catches_a_task_seen_twice(plan: StudyBPlan) -> None:
    first = plan.for_participant("P01")[0]
    edited = _replace_at(plan, "P01", 2, task_id=first.task_id)
    assert _has(check_plan(edited), f"P01 sees task '{first.task_id}' 2 times (positions 1, 2)")


def test_check_catches_a_participant_meeting_a_system_twice(plan: StudyBPlan) -> None:
    first = plan.for_participant("P01")[0]
    edited = _replace_at(plan, "P01", 2, system=first.system)
    assert _has(check_plan(edited), f"P01 meets system '{first.system}' 2 time(s) in 5 sessions")


def test_check_catches_a_missing_primary_cell(plan: StudyBPlan) -> None:
    gone = next(s for s in plan.sessions if not s.anchor)
    edited = _edit(plan, [s for s in plan.sessions if s != gone])
    assert _has(check_plan(edited),
                f"cell ({gone.task_id}, {gone.system}) has 0 primary sessions")


def test_check_catches_a_duplicated_primary_cell(plan: StudyBPlan) -> None:
    a = next(s for s in plan.for_participant("P01") if not s.anchor)
    edited = _replace_at(plan, "P02", 1, task_id=a.task_id, system=a.system, anchor=False)
    assert _has(check_plan(edited), f"cell ({a.task_id}, {a.system}) has 2 primary sessions")


def test_check_catches_a_missing_anchor_rerun(plan: StudyBPlan) -> None:
    rerun = next(s for s in plan.sessions if s.anchor)
    edited = _replace_at(plan, rerun.participant, rerun.position, anchor=False)
    assert _has(check_plan(edited),
                f"anchor cell ({rerun.task_id}, {rerun.system}) has 0 second sessions")


def test_check_catches_an_anchor_rerun_by_the_same_participant(plan: StudyBPlan) -> None:
    rerun = next(s for s in plan.sessions if s.anchor)
    owner = next(s.participant for s in plan.sessions
                 if not s.anchor and (s.task_id, s.system) == (rerun.task_id, rerun.system))
    moved = dataclasses.replace(rerun, participant=owner, position=6)
    edited = _edit(plan, [moved if s == rerun else s for s in plan.sessions])
    assert _has(check_plan(edited),
                f"anchor cell ({rerun.task_id}, {rerun.system}) is run twice by {owner}")


def test_check_catches_bad_positions(plan: StudyBPlan) -> None:
    edited = _replace_at(plan, "P03", 5, position=7)
    assert _has(check_plan(edited), "P03: positions are 1, 2, 3, 4, 7")


def test_check_catches_unknown_task_system_and_stray_anchor_flag(plan: StudyBPlan) -> None:
    plain = next(s for s in plan.sessions if s.task_id not in plan.anchor_task_ids)
    edited = _replace_at(plan, "P04", 1, task_id="apexv1_999")
    edited = _replace_at(edited, "P05", 1, system="grok:beta")
    edited = _replace_at(edited, plain.participant, plain.position, anchor=True)
    problems = check_plan(edited)
    assert _has(problems, "P04 position 1: unknown task 'apexv1_999'")
    assert _has(problems, "P05 position 1: unknown system 'grok:beta'")
    assert _has(problems, f"{plain.participant} position {plain.position}: marked anchor but "
                          f"task '{plain.task_id}' is not an anchor task")


def test_check_catches_unbalanced_positions(plan: StudyBPlan) -> None:
    # Reversing one participant's order keeps every other constraint but moves one system
    # into and one out of position 1: counts 6/6/6/6/6 become 7 and 5.
    mine = plan.for_participant("P07")
    reordered = [dataclasses.replace(s, position=6 - s.position) for s in mine]
    edited = _edit(plan, [s for s in plan.sessions if s.participant != "P07"] + reordered)
    problems = check_plan(edited)
    assert _has(problems, "position 1 is unbalanced")
    assert not _has(problems, "cell (") and not _has(problems, "P07")


def test_check_catches_header_problems(plan: StudyBPlan) -> None:
    edited = dataclasses.replace(plan, systems=(*plan.systems, "baseline"),
                                 anchor_task_ids=(*plan.anchor_task_ids, "apexv1_999"))
    problems = check_plan(edited)
    assert _has(problems, "system 'baseline' is listed 2 times")
    assert _has(problems, "anchor task 'apexv1_999' is not one of the plan's tasks")


# --------------------------------------------------------------------------- swap


def _valid_swap(plan: StudyBPlan) -> tuple[PlannedSession, PlannedSession]:
    """Two sessions at the same position with the same system whose tasks do not clash."""
    tasks_of = {p: {s.task_id for s in plan.for_participant(p)} for p in plan.participants()}
    for a, b in itertools.combinations(plan.sessions, 2):
        if (a.participant != b.participant and a.position == b.position
                and a.system == b.system and a.task_id not in tasks_of[b.participant]
                and b.task_id not in tasks_of[a.participant]):
            return a, b
    raise AssertionError("no valid swap in the plan")


def test_swap_sessions_keeps_a_valid_plan(plan: StudyBPlan) -> None:
    a, b = _valid_swap(plan)
    swapped = swap_sessions(plan, (a.participant, a.position), (b.participant, b.position))
    assert check_plan(swapped) == []
    at_a = swapped.for_participant(a.participant)[a.position - 1]
    at_b = swapped.for_participant(b.participant)[b.position - 1]
    assert (at_a.task_id, at_a.anchor) == (b.task_id, b.anchor)
    assert (at_b.task_id, at_b.anchor) == (a.task_id, a.anchor)


def test_swap_sessions_refuses_a_breaking_swap(plan: StudyBPlan) -> None:
    with pytest.raises(PlanError, match="would break the plan: position 1 is unbalanced"):
        swap_sessions(plan, ("P01", 1), ("P01", 2))
    with pytest.raises(PlanError, match="no session at participant 'P99'"):
        swap_sessions(plan, ("P99", 1), ("P01", 2))
    first = plan.for_participant("P01")[0]
    clash = next(s for s in plan.sessions if s.participant != "P01" and s.position != 1
                 and s.task_id == first.task_id)
    with pytest.raises(PlanError, match=f"P01 sees task '{first.task_id}' 2 times"):
        swap_sessions(plan, ("P01", clash.position), (clash.participant, clash.position))


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"systems": ["baseline", "grok", "baseline"]}, "system 'baseline' is listed twice"),
    ({"systems": ["baseline", "bogus"]}, "system 'bogus' is not a usable agent spec"),
    ({"systems": []}, "no systems given"),
    ({"task_ids": [*TASK_IDS, "apexv1_001"]}, "task id 'apexv1_001' is listed twice"),
    ({"anchor_task_ids": ["apexv1_001", "apexv1_999"]}, "anchor task 'apexv1_999' is not"),
    ({"n_anchor": 25}, "n_anchor=25 exceeds the 24 task"),
    ({"sessions_per_participant": 7}, "sessions_per_participant=7 is not a positive multiple"),
    ({"sessions_per_participant": 0}, "sessions_per_participant=0"),
    ({"sessions_per_participant": 20}, "sessions_per_participant=20 does not fit: it does not"),
    ({"sessions_per_participant": 25}, "sessions_per_participant=25 does not fit: a particip"),
    ({"seed": -1}, "seed must be a non-negative integer"),
])
def test_bad_inputs_raise_plan_error_naming_the_value(kwargs: dict[str, object],
                                                     message: str) -> None:
    args: dict[str, object] = {"task_ids": TASK_IDS, "systems": SYSTEMS, **kwargs}
    task_ids, systems = args.pop("task_ids"), args.pop("systems")
    with pytest.raises(PlanError, match=message):
        make_plan(task_ids, systems, **args)  # type: ignore[arg-type]


def test_unknown_participant_is_an_error(plan: StudyBPlan) -> None:
    with pytest.raises(PlanError, match="no participant 'P31'"):
        plan.for_participant("P31")


def test_format_plan_lists_every_participant(plan: StudyBPlan) -> None:
    text = format_plan(plan)
    assert "30 participants" in text and "A = scripted:oracle" in text
    p01 = next(line for line in text.splitlines() if line.startswith("P01 "))
    for s in plan.for_participant("P01"):
        assert s.task_id in p01


# --------------------------------------------------------------------------- CLI


def _invoke(*args: str) -> tuple[int, str]:
    @click.group()
    def study() -> None:
        """Throwaway group standing in for `apex-voice study`."""

    study.add_command(plan_b_command)
    study.add_command(check_b_command)
    result = CliRunner().invoke(study, list(args))
    return result.exit_code, result.output


def test_cli_plan_b_prints_plan_and_balance() -> None:
    code, out = _invoke("plan-b", "--systems", ",".join(SYSTEMS), "--seed", "11")
    assert code == 0, out
    assert "150 sessions, 30 participants, seed 11" in out
    assert "balanced: every system appears equally often at every position" in out
    code, out = _invoke("plan-b", "--systems", ",".join(SYSTEMS), "--seed", "11", "--json")
    assert code == 0, out
    assert StudyBPlan.from_json(json.loads(out)) == make_plan(TASK_IDS, SYSTEMS, seed=11)


def test_cli_plan_b_errors_exit_2() -> None:
    code, out = _invoke("plan-b", "--systems", "baseline,nonsense")
    assert code == 2 and "system 'nonsense' is not a usable agent spec" in out
    code, out = _invoke("plan-b", "--systems", ",".join(SYSTEMS),
                        "--sessions-per-participant", "6")
    assert code == 2 and "sessions_per_participant=6" in out and "Use one of: 5, 10, 15" in out
    code, out = _invoke("plan-b", "--systems", "baseline", "--json", "--csv", "x.csv")
    assert code == 2 and "either --json or --csv" in out


def test_cli_check_b_accepts_the_plan_and_reports_edits(tmp_path: Path) -> None:
    csv_file = tmp_path / "plan.csv"
    systems = ",".join(SYSTEMS)
    code, out = _invoke("plan-b", "--systems", systems, "--seed", "4", "--csv", str(csv_file))
    assert code == 0 and f"wrote {csv_file}" in out
    code, out = _invoke("check-b", "--plan", str(csv_file), "--systems", systems, "--seed", "4")
    assert code == 0, out
    assert "plan OK (30 participants, 150 sessions)" in out

    rows = csv_file.read_text(encoding="utf-8").splitlines()
    p01 = [r for r in rows if r.startswith("P01,")]
    first_task = p01[0].split(",")[2]
    edited = p01[1].split(",")
    edited[2] = first_task  # P01 now sees its first task again at position 2
    rows[rows.index(p01[1])] = ",".join(edited)
    csv_file.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, out = _invoke("check-b", "--plan", str(csv_file), "--systems", systems, "--seed", "4")
    assert code == 1
    assert f"P01 sees task '{first_task}' 2 times" in out
    assert "problem(s) found" in out

    # The wrong seed picks other anchor tasks: the anchor rows no longer match.
    csv_file2 = tmp_path / "plan2.csv"
    _invoke("plan-b", "--systems", systems, "--seed", "4", "--csv", str(csv_file2))
    code, out = _invoke("check-b", "--plan", str(csv_file2), "--systems", systems,
                        "--seed", "5")
    assert code == 1 and "anchor" in out


def test_cli_check_b_bad_csv_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("participant,position,task_id,system,anchor\nP01,one,apexv1_001,grok,0\n",
                   encoding="utf-8")
    code, out = _invoke("check-b", "--plan", str(bad), "--systems", "grok", "--seed", "0")
    assert code == 2 and "line 2: position 'one'" in out
