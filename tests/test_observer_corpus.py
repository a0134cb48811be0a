"""The labelled corpus the semantic-act observer is measured on (docs/observer_corpus.md):
every file reads and names only fields and actions its task has; the splits are the sizes the
evaluation claims; and the observer does not regress on the development split (the split its
rules were written against; the held-out split is only ever reported, by bench/bench_observer.py).
"""

from __future__ import annotations

import pytest

from runtime.core.spec import TaskSpec
from runtime.session.observer import SemanticActObserver
from runtime.session.observer_eval import (
    CorpusError,
    PredictedAct,
    check_file,
    corpus_dir,
    load_approval_marks,
    load_file,
    load_split,
    score,
)
from runtime.suite.subsets import AUDIT, subset_ids
from tests.conftest import bundled_tasks


@pytest.fixture(scope="module")
def tasks() -> dict[str, TaskSpec]:
    return {t.id: t for t in bundled_tasks()}


def test_both_splits_cover_every_audit_task(tasks: dict[str, TaskSpec]) -> None:
    dev = load_split("dev", tasks)
    held = load_split("heldout", tasks)
    assert len(dev) + len(held) >= 600
    # The corpus was written for the audit subset (docs/observer_corpus.md); the tasks added
    # since have none yet.
    assert {t.id for t, _ in dev} == set(subset_ids(AUDIT)) == {t.id for t, _ in held}
    writers = {load_file(p).writer for p in (corpus_dir() / "heldout").glob("*.yaml")}
    assert not writers & {load_file(p).writer for p in (corpus_dir() / "dev").glob("*.yaml")}


def test_labels_name_real_fields_and_actions(tasks: dict[str, TaskSpec], tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "task: apexv1_001\nsplit: dev\nwriter: t\nitems:\n"
        "  - {id: x1, text: 'Shall I?', acts: [{act: request_approval, action: 'submit:nope'}]}\n"
        "  - {id: x2, text: 'Your ID?', acts: [{act: ask, field: shoe_size}]}\n"
        "  - {id: x3, text: 'So E4471.', acts: [{act: read_back, field: employee_id}]}\n",
        encoding="utf-8")
    problems = check_file(load_file(bad), tasks["apexv1_001"], bad)
    assert len(problems) == 3
    assert "submit:nope" in problems[0] and "shoe_size" in problems[1]
    assert "value_ok" in problems[2]
    with pytest.raises(CorpusError, match="acts"):
        bad.write_text("task: apexv1_001\nsplit: dev\nwriter: t\nitems:\n  - {id: x, text: hi}\n",
                       encoding="utf-8")
        load_file(bad)


def test_observer_holds_its_development_split_figures(tasks: dict[str, TaskSpec]) -> None:
    """A regression floor on the development split, a little under what bench_observer printed
    for the observer of the ninth session (2026-12-03; 7,296 turns, dev-12..16 included, which
    were counted before they were read and ask harder than the earlier writers): macro F1 0.952
    (in-sample for the act model, which is trained on all but the validation writers; the floor
    is the rules' of the eighth session, 0.938), approval P 1.000, R 0.989, ask(field) F1 0.880
    (0.896 on the 4,896 turns before dev-12), restate(field) F1 0.893 (0.898 before)."""
    observers = {t: SemanticActObserver(task) for t, task in tasks.items()}

    def observe(task: TaskSpec, text: str) -> list[PredictedAct]:
        return [PredictedAct(act=a.act, field=a.field, action=a.action)
                for a in observers[task.id].observe(text)]

    result = score(load_split("dev", tasks), observe)
    assert result.macro_f1 >= 0.93
    assert (result.approval.precision or 0) >= 0.99
    assert (result.approval.recall or 0) >= 0.98
    assert (result.ask_field.f1 or 0) >= 0.87
    assert (result.restate_field.f1 or 0) >= 0.88


def test_blind_annotations_cover_the_held_out_split(tasks: dict[str, TaskSpec]) -> None:
    """bench_observer's anchor: each blind annotator labelled every held-out turn, with the
    same text, naming only the task's own fields and actions."""
    held = {item.id: item.text for _, item in load_split("heldout", tasks)}
    folders = sorted(p for p in (corpus_dir() / "agreement").iterdir() if p.is_dir())
    assert len(folders) >= 2
    for folder in folders:
        seen: dict[str, str] = {}
        for path in sorted(folder.glob("*.yaml")):
            corpus = load_file(path)
            assert check_file(corpus, tasks[corpus.task], path) == []
            seen |= {item.id: item.text for item in corpus.items}
        assert seen == held, folder.name


def test_the_approval_set_covers_every_gated_audit_task_and_its_blind_marks_cover_it(
        tasks: dict[str, TaskSpec]) -> None:
    """The approval set (held out like the held-out split, docs/observer_corpus.md) has turns
    for every audit task with a gated action, from writers who wrote no other split; each blind
    annotator marked every one of its turns, and only those."""
    items = load_split("approval", tasks)
    gated = {t for t in subset_ids(AUDIT) if tasks[t].authorization}
    assert {t.id for t, _ in items} == gated
    asks = sum(any(a.act == "request_approval" for a in item.acts) for _, item in items)
    assert asks >= 100 and len(items) - asks >= 100
    writers = {load_file(p).writer for p in (corpus_dir() / "approval").glob("*.yaml")}
    others = {load_file(p).writer for split in ("dev", "heldout")
              for p in (corpus_dir() / split).glob("*.yaml")}
    assert writers and not writers & others
    marks = sorted((corpus_dir() / "agreement_approval").glob("*.yaml"))
    assert len(marks) >= 2
    for path in marks:
        assert set(load_approval_marks(path)) == {item.id for _, item in items}, path.name


def test_approval_marks_name_the_file_and_field_when_malformed(tmp_path) -> None:
    bad = tmp_path / "blind-x.yaml"
    bad.write_text("annotator: x\nasks_leave: {a-1: maybe}\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"blind-x.yaml: asks_leave.a-1"):
        load_approval_marks(bad)
    bad.write_text("annotator: x\nasks_leave: {a-1: [true,\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"blind-x.yaml: cannot read"):
        load_approval_marks(bad)
    with pytest.raises(CorpusError, match=r"missing.yaml: cannot read"):
        load_approval_marks(tmp_path / "missing.yaml")
