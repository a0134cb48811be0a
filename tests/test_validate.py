"""The construction checks of appendix B.5 (``runtime.suite.validate``).

Every test copies the valid ``mini_001`` fixture, injects one defect, and asserts that exactly
the expected problem line comes back: the file, the path inside the YAML, and what is wrong.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from runtime.core.spec import Realization, load_task, read_yaml
from runtime.suite.validate import (
    Problem,
    leaked_values,
    validate_paths,
    validate_task,
    value_surface_forms,
)

FIXTURE = Path(__file__).parent / "fixtures" / "tasks" / "mini_001"

Raw = dict[str, Any]


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    dest = tmp_path / "tasks" / "mini_001"
    shutil.copytree(FIXTURE, dest)
    return dest


def edit(folder: Path, change: Callable[[Raw], None], *, sync_bank: bool = False) -> None:
    """Apply ``change`` to the task's YAML; with ``sync_bank`` the manifest takes the new texts
    (as a bank rebuild would), so only the injected defect remains."""
    raw = read_yaml(folder / "task.yaml")
    change(raw)
    (folder / "task.yaml").write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    if sync_bank:
        texts = {r["id"]: r["text"] for p in raw["plans"] for r in p.get("realizations", [])}
        manifest_file = folder / "bank" / "manifest.json"
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
        for item in manifest["items"]:
            item["text"] = texts.get(item["realization"], item["text"])
        manifest_file.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def plan(raw: Raw, plan_id: str) -> Raw:
    found: Raw = next(p for p in raw["plans"] if p["id"] == plan_id)
    return found


def only_problem(folder: Path) -> Problem:
    problems = validate_paths([folder])
    assert len(problems) == 1, "\n".join(map(str, problems))
    return problems[0]


def assert_problem(problem: Problem, folder: Path, path: str, *words: str) -> None:
    assert problem.file == (folder / "task.yaml").resolve()
    assert problem.path == path
    for word in words:
        assert word in problem.message, f"{word!r} not in {problem.message!r}"
    assert str(problem) == f"{problem.file}: {path}: {problem.message}"
    assert "\n" not in str(problem)


# --------------------------------------------------------------------------- the valid fixture

def test_fixture_is_valid() -> None:
    assert validate_paths([FIXTURE]) == []
    assert validate_paths([FIXTURE.parent]) == []
    assert validate_task(load_task(FIXTURE)) == []


# --------------------------------------------------------------------------- 1. obtainable

def test_document_gold_not_in_document(task_dir: Path) -> None:
    edit(task_dir, lambda raw: raw["artifacts"][0]["fields"][4].update(gold=40))
    assert_problem(only_problem(task_dir), task_dir, "artifacts[0].fields[4].source.document",
                   "gold 40", "intake_1.copay", "not obtainable", "document 'copay_policy'")


def test_fact_gold_differs_from_final_version(task_dir: Path) -> None:
    # The gold is the *first* member ID: a stale value the corrected fact no longer holds.
    edit(task_dir, lambda raw: raw["artifacts"][0]["fields"][2].update(gold="E4417"))
    assert_problem(only_problem(task_dir), task_dir, "artifacts[0].fields[2].source.fact",
                   "'E4417'", "not obtainable", "final version (version 2)", "'E4471'")


def test_fact_gold_compares_canonically(task_dir: Path) -> None:
    def change(raw: Raw) -> None:
        raw["artifacts"][0]["fields"][0]["gold"] = "  dana   WHITFIELD "
        raw["artifacts"][0]["fields"][4]["gold"] = "35.0"
    edit(task_dir, change)
    assert validate_paths([task_dir]) == []


def test_instruction_gold_must_be_in_context(task_dir: Path) -> None:
    def change(raw: Raw) -> None:
        raw["artifacts"][0]["fields"].append({
            "name": "clinic", "label": "Clinic", "grader": "casefold_exact",
            "gold": "Eastside Clinic", "source": {"instruction": True},
        })
    edit(task_dir, change)
    assert_problem(only_problem(task_dir), task_dir, "artifacts[0].fields[5].source.instruction",
                   "'Eastside Clinic'", "not obtainable", "context")


def test_enum_gold_outside_options(task_dir: Path) -> None:
    edit(task_dir, lambda raw: raw["artifacts"][0]["fields"][3].update(options=["urgent",
                                                                                "follow-up"]))
    assert_problem(only_problem(task_dir), task_dir, "artifacts[0].fields[3].gold",
                   "'routine'", "not one of its options")


def test_corrected_field_needs_two_versions(task_dir: Path) -> None:
    edit(task_dir, lambda raw: raw["artifacts"][0]["fields"][1].update(corrected=True))
    assert_problem(only_problem(task_dir), task_dir, "artifacts[0].fields[1].corrected",
                   "marked corrected", "fact 'dob' has only 1 version")


# --------------------------------------------------------------------------- 2. reveal order

def test_fact_carried_before_its_reveal_condition(task_dir: Path) -> None:
    # The approval plan has no business carrying the date of birth (on_ask: dob).
    edit(task_dir, lambda raw: plan(raw, "approve_commit").update(facts=[{"fact": "dob"}]))
    assert_problem(only_problem(task_dir), task_dir, "plans[4].facts[0]",
                   "plan 'approve_commit'", "fact 'dob' version 1", "before its reveal condition",
                   "on_ask ['dob']", "approval_request")


def test_correction_version_needs_its_anchor_plan(task_dir: Path) -> None:
    # Version 2 is released after_plan answer_member_id: answering the ask directly is too early.
    edit(task_dir, lambda raw: plan(raw, "answer_member_id").update(
        facts=[{"fact": "member_id", "version": 1}, {"fact": "member_id", "version": 2}]))
    assert_problem(only_problem(task_dir), task_dir, "plans[2].facts[1]",
                   "fact 'member_id' version 2", "before its reveal condition",
                   "after_plan 'answer_member_id'")


def test_old_version_is_legitimate_through_requires(task_dir: Path) -> None:
    # Without `requires`, the duplex correction still follows its anchor plan: still valid.
    edit(task_dir, lambda raw: plan(raw, "correct_member_id").pop("requires"))
    assert validate_paths([task_dir]) == []


def test_fact_version_out_of_range(task_dir: Path) -> None:
    edit(task_dir, lambda raw: plan(raw, "approve_commit").update(
        facts=[{"fact": "name", "version": 2}]))
    assert_problem(only_problem(task_dir), task_dir, "plans[4].facts[0].version",
                   "fact 'name' has 1 version(s)", "version 2 does not exist")


# --------------------------------------------------------------------------- 3. realizations

def test_reachable_plan_needs_two_realizations(task_dir: Path) -> None:
    edit(task_dir, lambda raw: plan(raw, "answer_dob")["realizations"].pop())
    assert_problem(only_problem(task_dir), task_dir, "plans[1].realizations",
                   "reachable plan 'answer_dob' has 1 realization(s)", "2–5")


def test_duplex_plan_without_event_is_unreachable(task_dir: Path) -> None:
    edit(task_dir, lambda raw: raw.update(duplex_events=[]))
    assert_problem(only_problem(task_dir), task_dir, "plans[3]",
                   "plan 'correct_member_id' is unreachable", "no duplex event targets it")


# --------------------------------------------------------------------------- 4. leakage

def test_realization_leaks_an_uncarried_value(task_dir: Path) -> None:
    edit(task_dir, lambda raw: plan(raw, "approve_commit")["realizations"][0].update(
        text="Yes, book it for July ninth."), sync_bank=True)
    assert_problem(only_problem(task_dir), task_dir, "plans[4].realizations[0].text",
                   "realization 'approve_commit__r1' leaks", "fact 'dob' version 1",
                   "'1988-07-09'", "'july 9th'", "plan 'approve_commit' does not carry")


def test_answer_must_not_leak_the_correction(task_dir: Path) -> None:
    edit(task_dir, lambda raw: plan(raw, "answer_member_id")["realizations"][1].update(
        text="It's E four four seven one."), sync_bank=True)
    assert_problem(only_problem(task_dir), task_dir, "plans[2].realizations[1].text",
                   "fact 'member_id' version 2", "'E4471'", "'e 4 4 7 1'")


def test_leakage_matching_is_precise() -> None:
    task = load_task(FIXTURE)
    approve = task.plan("approve_commit")
    assert approve is not None

    def leaks(text: str) -> list[str]:
        return leaked_values(task, approve, Realization(id="x", text=text, audio="x.flac"))

    assert leaks("The copay is thirty-five dollars?") != []
    assert leaks("That is 1,235 reasons to wait a second.") == []
    assert leaks("Call me on the 9th.") == []
    assert leaks("It was 07/09 last year.") != []
    assert leaks("Yes, go ahead.") == []
    assert "'E4471'" in " ".join(leaks("My ID is E, 4, 4, 7, 1."))
    assert leaks("Room E44712, please.") == []
    assert value_surface_forms(2) == ["2"]
    assert "9th of july" in value_surface_forms("1988-07-09")
    assert value_surface_forms("E-4471") == ["e4471"]
    assert value_surface_forms(1200, ["twelve hundred"]) == ["1200"]


# --------------------------------------------------------------------------- 5. unique ids

def test_duplicate_document_id(task_dir: Path) -> None:
    edit(task_dir, lambda raw: raw["documents"].append(
        {"id": "copay_policy", "title": "Old policy", "text": "Superseded."}))
    assert_problem(only_problem(task_dir), task_dir, "documents[1].id",
                   "duplicate document id 'copay_policy'", "first at documents[0].id")


def test_duplicate_field_name(task_dir: Path) -> None:
    def change(raw: Raw) -> None:
        raw["artifacts"][0]["fields"].append({**raw["artifacts"][0]["fields"][0]})
    edit(task_dir, change)
    assert_problem(only_problem(task_dir), task_dir, "artifacts[0].fields[5].name",
                   "duplicate field name 'full_name' in artifact 'intake_1'")


# --------------------------------------------------------------------------- 6. references

def test_grading_predicate_names_unknown_field(task_dir: Path) -> None:
    edit(task_dir, lambda raw: raw["grading"]["terminal"][1].update(field="member_no"))
    assert_problem(only_problem(task_dir), task_dir, "grading.terminal[1].field",
                   "unknown field 'member_no' in artifact 'intake_1'", "did you mean 'member_id'")


def test_authorization_rule_needs_a_commit_tool(task_dir: Path) -> None:
    def change(raw: Raw) -> None:
        raw["authorization"][0].update(tool="set_ready", action="set_ready:intake_1")
        approve = plan(raw, "approve_commit")
        approve["when"]["action"] = approve["authorization"]["grant"] = "set_ready:intake_1"
        for pred in raw["grading"]["must_hold"][:1] + raw["grading"]["forbidden"]:
            pred["action"] = "set_ready:intake_1"
    edit(task_dir, change)
    assert_problem(only_problem(task_dir), task_dir, "authorization[0].tool",
                   "tool 'set_ready' has kind 'set_ready'", "submit or commit")


def test_grant_names_unknown_action(task_dir: Path) -> None:
    edit(task_dir, lambda raw: plan(raw, "approve_commit")["authorization"].update(
        grant="commit:intake_1"))
    assert_problem(only_problem(task_dir), task_dir, "plans[4].authorization.grant",
                   "unknown authorization action 'commit:intake_1'")


def test_action_follows_tool_artifact_convention(task_dir: Path) -> None:
    def change(raw: Raw) -> None:
        raw["authorization"][0]["action"] = "book_visit"
        approve = plan(raw, "approve_commit")
        approve["when"]["action"] = approve["authorization"]["grant"] = "book_visit"
        for pred in raw["grading"]["must_hold"][:1] + raw["grading"]["forbidden"]:
            pred["action"] = "book_visit"
    edit(task_dir, change)
    assert_problem(only_problem(task_dir), task_dir, "authorization[0].action",
                   "'book_visit'", "<tool>:<artifact>", "'commit_intake:intake_1'")


def test_required_evidence_names_unknown_document(task_dir: Path) -> None:
    edit(task_dir, lambda raw: raw["grading"].update(required_evidence=["fee_schedule"]))
    assert_problem(only_problem(task_dir), task_dir, "grading.required_evidence[0]",
                   "unknown document 'fee_schedule'")


def test_unknown_required_plan_is_also_unreachable(task_dir: Path) -> None:
    edit(task_dir, lambda raw: plan(raw, "approve_commit").update(requires=["answer_dobb"]))
    problems = [str(p) for p in validate_paths([task_dir])]
    task_file = (task_dir / "task.yaml").resolve()
    assert problems == [
        f"{task_file}: plans[4].requires[0]: unknown plan 'answer_dobb'; did you mean "
        "'answer_dob'?",
        f"{task_file}: plans[4]: plan 'approve_commit' is unreachable: it requires unreachable "
        "plan(s) ['answer_dobb']",
    ]


# --------------------------------------------------------------------------- 7. audio

def test_missing_audio_file(task_dir: Path) -> None:
    (task_dir / "bank" / "answer_dob__r2.flac").unlink()
    assert_problem(only_problem(task_dir), task_dir, "plans[1].realizations[1].audio",
                   "audio file 'bank/answer_dob__r2.flac'", "does not exist",
                   "apex-voice bank build --tasks mini_001")


# --------------------------------------------------------------------------- 8. checksums

def test_audio_changed_after_build(task_dir: Path) -> None:
    with (task_dir / "bank" / "opening__r2.flac").open("ab") as fh:
        fh.write(b"\0")
    assert_problem(only_problem(task_dir), task_dir, "plans[0].realizations[1].audio",
                   "checksum mismatch", "'bank/opening__r2.flac'",
                   "apex-voice bank build --tasks mini_001")


def test_text_edited_without_rebuilding_the_bank(task_dir: Path) -> None:
    edit(task_dir, lambda raw: plan(raw, "approve_commit")["realizations"][1].update(
        text="Sure, go ahead."))
    assert_problem(only_problem(task_dir), task_dir, "plans[4].realizations[1].text",
                   "stale bank", "'Sure, please book it.'",
                   "apex-voice bank build --tasks mini_001")


def test_new_realization_missing_from_manifest(task_dir: Path) -> None:
    edit(task_dir, lambda raw: plan(raw, "answer_dob")["realizations"].append(
        {"id": "answer_dob__r3", "text": "July ninth, nineteen eighty-eight.",
         "audio": "bank/answer_dob__r2.flac"}))
    assert_problem(only_problem(task_dir), task_dir, "plans[1].realizations[2]",
                   "realization 'answer_dob__r3' is not in bank/manifest.json",
                   "apex-voice bank build --tasks mini_001")


def test_year_less_date_must_resolve_against_the_reference_date(task_dir: Path) -> None:
    """A birth date said without its year would resolve to the reference year: flagged."""
    edit(task_dir, lambda raw: plan(raw, "answer_dob")["realizations"][0].update(
        {"text": "It's July ninth."}))
    problems = [p for p in validate_paths([task_dir]) if "resolves to" in p.message]
    assert len(problems) == 1, problems
    assert "2027-07-09" in problems[0].message and "1988-07-09" in problems[0].message
    assert problems[0].path == "plans[1].realizations[0].text"


def test_missing_manifest(task_dir: Path) -> None:
    (task_dir / "bank" / "manifest.json").unlink()
    assert_problem(only_problem(task_dir), task_dir, "plans",
                   "no bank manifest (bank/manifest.json)", "10 realizations",
                   "apex-voice bank build --tasks mini_001")


# --------------------------------------------------------------------------- the suite

def test_folder_name_must_equal_task_id(task_dir: Path) -> None:
    moved = task_dir.parent / "mini_002"
    task_dir.rename(moved)
    assert_problem(only_problem(moved), moved, "id",
                   "task id 'mini_001' does not match its folder name 'mini_002'")


def test_task_ids_unique_across_suite(task_dir: Path) -> None:
    other = task_dir.parent / "mini_002"
    shutil.copytree(task_dir, other)
    problems = validate_paths([task_dir.parent])
    assert [p.path for p in problems] == ["id", "id"]
    assert "does not match its folder name 'mini_002'" in problems[0].message
    assert_problem(problems[1], other, "id", "duplicate task id 'mini_001'",
                   str((task_dir / "task.yaml").resolve()))


def test_yaml_syntax_error(task_dir: Path) -> None:
    text = (task_dir / "task.yaml").read_text(encoding="utf-8")
    (task_dir / "task.yaml").write_text(text.replace("title: Patient intake",
                                                     "title: [Patient intake"), encoding="utf-8")
    problem = only_problem(task_dir)
    assert_problem(problem, task_dir, problem.path, "not valid YAML")
    assert problem.path.startswith("line ")


def test_schema_error(task_dir: Path) -> None:
    edit(task_dir, lambda raw: raw["artifacts"][0]["fields"][0].update(grader="fuzzy"))
    assert_problem(only_problem(task_dir), task_dir, "artifacts[0].fields[0].grader",
                   "'fuzzy'")


def test_path_without_tasks(tmp_path: Path) -> None:
    problems = validate_paths([tmp_path])
    assert [(p.file, p.path) for p in problems] == [(tmp_path, "(file)")]
    assert "no task.yaml found" in problems[0].message


def test_text_the_tts_would_misread_is_flagged() -> None:
    from runtime.suite.validate import misread_tokens

    assert misread_tokens("My ID is E4471, ticket INV-20419, call 555-0199") == [
        "E4471", "INV-20419", "555-0199"]
    assert misread_tokens("07/09/1988 or 2027-06-02 or 07.09.1988") == [
        "07/09/1988", "2027-06-02", "07.09.1988"]
    # Spoken forms, ordinals, quarters and decimals read fine.
    assert misread_tokens("E, 4, 4, 7, 1 on June 2nd, Q1, 3.5 hours, twelve hundred") == []
    task = load_task(FIXTURE / "task.yaml")
    plan = task.plans[0]
    bad = plan.realizations[0].model_copy(update={"text": "Hi, my member ID is M20447."})
    plans = [plan.model_copy(update={"realizations": [bad, *plan.realizations[1:]]}),
             *task.plans[1:]]
    problems = [str(p) for p in validate_task(task.model_copy(
        update={"plans": plans, "source_path": None}))]
    assert any("plans[0].realizations[0].text" in p and "'M20447'" in p and "misread" in p
               for p in problems), problems
