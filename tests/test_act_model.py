"""The act model: the observer's learned second opinion on recaps and information
(runtime/session/act_model.py, docs/observer_corpus.md "The act model")."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import runtime.session.observer as observer_module
from runtime.session.act_model import (
    APPROVAL_MARGIN,
    MODELLED,
    RULE_BLIND,
    ActModel,
    ActModelError,
    _fit,
    check,
    features,
    load_model,
    training_examples,
)
from runtime.session.observer import SemanticActObserver
from runtime.session.observer_eval import (
    VALIDATION_WRITERS,
    corpus_dir,
    is_validation_writer,
    load_file,
)
from tests.conftest import bundled_tasks


def _task(task_id: str):  # type: ignore[no-untyped-def]
    return next(t for t in bundled_tasks() if t.id == task_id)


def test_shipped_weights_are_those_the_corpus_and_rules_give() -> None:
    """Change the corpus or the rules and this fails until ``python -m runtime.session.act_model
    train`` is run: the weights are never older than what they were learned from."""
    assert check(load_model(), training_examples()) == []


def test_never_trained_on_validation_writers_or_the_held_out_split() -> None:
    examples = training_examples()
    ids = {e.item_id for e in examples}
    held_out = {item.id for split in ("heldout", "approval")
                for path in (corpus_dir() / split).glob("*.yaml")
                for item in load_file(path).items}
    validation = {item.id for path in (corpus_dir() / "dev").glob("*.yaml")
                  for f in [load_file(path)] if is_validation_writer(f.writer)
                  for item in f.items}
    assert validation and held_out
    assert not ids & held_out and not ids & validation
    assert load_model().trained_on["without_writers"] == list(VALIDATION_WRITERS)
    assert is_validation_writer("dev-10b") and not is_validation_writer("dev-1")
    assert not is_validation_writer("dev-50")


def test_the_fit_is_the_regularized_optimum() -> None:
    """Checked independently: at the returned weights the gradient of the L2-regularized
    log-loss (C = 1), written out here in plain Python, is zero."""
    rows = [[0], [0, 1], [1], [1, 2], [2], [0], [], [0, 1]]
    y = [True, True, False, False, False, True, False, True]
    bias, w = _fit(rows, y, 3)
    grad = [0.0, 0.0, 0.0]
    grad_bias = 0.0
    for r, target in zip(rows, y, strict=True):
        z = bias + sum(w[c] for c in r)
        p = 1 / (1 + math.exp(-z))
        for c in r:
            grad[c] += p - target
        grad_bias += p - target
    for c in range(3):
        assert abs(grad[c] + w[c]) < 1e-4
    assert abs(grad_bias) < 1e-4
    assert w[0] > 0 > w[2]  # the feature seen with positives pulls up, the other down


def test_margins_are_the_bias_plus_the_weights_of_the_turns_features() -> None:
    text, rules = "Okay. Anything else?", [("inform", None), ("close", None)]
    names = sorted(features(text, rules))
    model = ActModel(index={n: i for i, n in enumerate(names)},
                     weights={act: tuple(0.5 for _ in names) for act in MODELLED},
                     bias={act: -1.0 for act in MODELLED}, trained_on={})
    words_only = [n for n in names if not n.startswith(("r:", "rn:"))]
    assert len(words_only) < len(names)
    assert model.margins(text, rules) == {
        act: -1.0 + 0.5 * len(words_only if act in RULE_BLIND else names) for act in MODELLED}
    assert "r:close" in names and "endq" in names and "w:?" in names and "b:anything_else" in names
    assert model.margins("", []) == {act: -1.0 + 0.5 * sum(
        1 for n in (words_only if act in RULE_BLIND else names) if n in features("", []))
        for act in MODELLED}


def test_bad_weights_files_name_the_file_and_the_fix(tmp_path: Path) -> None:
    load_model.cache_clear()
    try:
        with pytest.raises(ActModelError, match=r"missing\.json: missing: run python -m"):
            load_model(tmp_path / "missing.json")
        bad = tmp_path / "bad.json"
        bad.write_text("{", encoding="utf-8")
        with pytest.raises(ActModelError, match=r"bad\.json: not JSON"):
            load_model(bad)
        old = tmp_path / "old.json"
        old.write_text(json.dumps({"format": 0, "acts": []}), encoding="utf-8")
        with pytest.raises(
            ActModelError, match=r"old\.json: format 0 .* runtime.session.act_model train"
        ):
            load_model(old)
        short = json.loads((Path(observer_module.__file__).parent / "act_model.json").read_text())
        short["models"]["inform"]["weights"] = short["models"]["inform"]["weights"][:3]
        (tmp_path / "short.json").write_text(json.dumps(short), encoding="utf-8")
        with pytest.raises(ActModelError, match=r"models\.inform\.weights has 3 entries"):
            load_model(tmp_path / "short.json")
    finally:
        load_model.cache_clear()


def _fixed(summarize: float, inform: float, approval: float = 0.0) -> ActModel:
    """A model that says the same for every turn (its bias alone)."""
    return ActModel(index={}, weights={act: () for act in MODELLED},
                    bias={"summarize": summarize, "inform": inform,
                          "request_approval": approval}, trained_on={})


def _acts(monkeypatch: pytest.MonkeyPatch, model: ActModel, task_id: str, text: str,
          ) -> list[tuple[str, str | None]]:
    monkeypatch.setattr(observer_module, "load_act_model", lambda: model)
    observer = SemanticActObserver(_task(task_id))  # a fresh memo
    return [(a.act, a.field) for a in observer.observe(text)]


def test_what_the_model_may_change(monkeypatch: pytest.MonkeyPatch) -> None:
    no, yes = -10.0, 10.0
    recap = "So that's Morgan Reyes, employee ID E4471."
    rules = [(a.act, a.field) for a in SemanticActObserver(_task("apexv1_001")).observe_rules(
        recap)]
    assert ("summarize", None) in rules
    # a recap inferred from two restated fields may go; the restated fields stay
    assert _acts(monkeypatch, _fixed(no, no), "apexv1_001", recap) == [
        a for a in rules if a[0] != "summarize"]
    # a recap announced in so many words stays
    said = "To summarize, that's Morgan Reyes, employee ID E4471."
    assert ("summarize", None) in _acts(monkeypatch, _fixed(no, no), "apexv1_001", said)
    # a recap is never added
    assert ("summarize", None) not in _acts(monkeypatch, _fixed(yes, no), "apexv1_001",
                                            "What's your employee ID?")
    # information may be added, on the first sentence no other act came from
    added = SemanticActObserver(_task("apexv1_001"))
    monkeypatch.setattr(observer_module, "load_act_model", lambda: _fixed(no, yes))
    acts = added.observe("What's your employee ID? The window closes Friday.")
    assert [(a.act, a.field, a.text) for a in acts] == [
        ("ask", "employee_id", "What's your employee ID?"),
        ("inform", None, "The window closes Friday.")]
    # information that names a negotiated field stays (the caller weighs the proposal)
    proposal = "Policy caps a goodwill credit at one fifty. Okay."
    assert _acts(monkeypatch, _fixed(no, no), "apexv1_051", proposal) == [("inform", None)]
    # a turn never ends up without acts
    assert _acts(monkeypatch, _fixed(no, no), "apexv1_001", "Okay, thanks.") == [
        ("inform", None)]


def test_the_model_overrules_a_request_for_leave_only_when_sure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sure_no, unsure, sure_yes = -APPROVAL_MARGIN - 1, 0.0, APPROVAL_MARGIN + 1
    ask = "Shall I submit the enrollment now?"
    assert _acts(monkeypatch, _fixed(0, 0, unsure), "apexv1_001", ask) == [
        ("request_approval", None)]
    # a request the rules found goes only when the model is sure, also of its own sentence,
    # and never one naming the gated action by the task's verb and the artifact's noun
    assert _acts(monkeypatch, _fixed(0, 0, sure_no), "apexv1_001", ask) == [
        ("request_approval", None)]
    assert _acts(monkeypatch, _fixed(0, 0, sure_no), "apexv1_001",
                 "Shall I submit it now?") == [("offer", None)]
    assert _acts(monkeypatch, _fixed(0, 0, sure_no), "apexv1_001",
                 "I'll submit it now, is that okay?") == [("ask", None)]
    assert _acts(monkeypatch, _fixed(0, 0, sure_no), "apexv1_001",
                 "I'll submit it if you're happy with that.") == [("inform", None)]
    # a request the rules missed is added, bound to the task's one gated action, in place of
    # the turn's last offer (else a field-less question, else information)
    missed = "Want me to make it happen?"
    assert _acts(monkeypatch, _fixed(0, 0, unsure), "apexv1_001", missed) == [("offer", None)]
    acts = SemanticActObserver(_task("apexv1_001"))
    monkeypatch.setattr(observer_module, "load_act_model", lambda: _fixed(0, 0, sure_yes))
    added = acts.observe(missed)
    assert [(a.act, a.action, a.artifact) for a in added] == [
        ("request_approval", "commit:enr_1", "enr_1")]
    # never on a task without a gated action, nor beside a request the rules found
    assert _acts(monkeypatch, _fixed(0, 0, sure_yes), "apexv1_011", missed) == [("offer", None)]
    assert _acts(monkeypatch, _fixed(0, 0, sure_yes), "apexv1_001", ask) == [
        ("request_approval", None)]
