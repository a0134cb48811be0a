"""The semantic-act observer on the labelled corpus (docs/observer_corpus.md).

Prints, per split, precision / recall / F1 per act, the macro F1, approval requests bound to
the task's gated action, the fields asked and restated, and how the simulated caller's
read-back check does on the restatements labelled with ``value_ok``; and the targets beside
the held-out figures. The development split is the one the rules were tuned on; the held-out
split was written by others and is never tuned on.

    .venv/bin/python bench/bench_observer.py [--errors dev]   # list dev-split misses only
    .venv/bin/python bench/bench_observer.py --rules-only     # without the act model

The act model (runtime/session/act_model.py) is trained on the development split without its
validation writers, so its development figures on the other writers are in-sample.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scipy.stats import binomtest

from runtime.core.spec import TaskSpec, default_tasks_dir, load_tasks
from runtime.session.observer import Act, SemanticActObserver
from runtime.session.observer_eval import (
    ACTS,
    PRF,
    VALIDATION_WRITERS,
    CorpusItem,
    PredictedAct,
    Score,
    Split,
    corpus_dir,
    in_writer_group,
    load_approval_marks,
    load_file,
    load_split,
    score,
)
from runtime.user.simulator import RevealPolicy

TARGETS = {"macro_f1": 0.95, "approval_precision": 0.99, "approval_recall": 0.95}


def _fmt(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:5.3f}"


def _row(name: str, s: PRF) -> str:
    return (f"  {name:<18} P {_fmt(s.precision)}  R {_fmt(s.recall)}  F1 {_fmt(s.f1)}"
            f"   (tp {s.tp}, fp {s.fp}, fn {s.fn})")


def _interval(k: int, n: int) -> str:
    if n == 0:
        return "n/a"
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return f"{k / n:.3f} [{ci.low:.3f}, {ci.high:.3f}] ({k}/{n})"


def _approval_row(name: str, s: PRF) -> str:
    """Precision and recall of approval requests with their 95% Wilson intervals: with 25
    requests one false approval is precision 0.96, and 0.99 is not measurable at all."""
    return (f"    {name:<18} precision {_interval(s.tp, s.tp + s.fp)}, "
            f"recall {_interval(s.tp, s.tp + s.fn)}")


def _readback(items: list[tuple[TaskSpec, object]],
              observe: Callable[[TaskSpec, str], list[Act]]) -> tuple[int, int, int, int]:
    """The caller's check of labelled restatements: (right, wrong) on value_ok true items
    (a 'mismatch' on a right value is a false correction) and on value_ok false items (a
    'match' is a wrong confirmation; 'unknown' is a miss)."""
    ok_right = ok_wrong = bad_right = bad_wrong = 0
    policies: dict[str, RevealPolicy] = {}
    for task, item in items:
        if task.id not in policies:
            # The caller has said everything (every answer and correction): its current value
            # of a fact is the last version, as the corpus labels value_ok.
            policies[task.id] = RevealPolicy(task)
            policies[task.id].spoken.extend(p.id for p in task.plans)
        policy = policies[task.id]
        acts = observe(task, item.text)  # type: ignore[attr-defined]
        for label in item.acts:  # type: ignore[attr-defined]
            if label.value_ok is None or label.field is None:
                continue
            if policy.current_value(label.field) is None:
                continue  # the caller cannot judge this field (no fact of its own)
            mine = next((a for a in acts if a.field == label.field
                         and a.act in ("read_back", "confirm")), None)
            verdict = policy.check_restatement(mine) if mine is not None else "unknown"
            if label.value_ok:
                ok_right += verdict == "match"
                ok_wrong += verdict == "mismatch"
            else:
                bad_right += verdict == "mismatch"
                bad_wrong += verdict == "match"
    return ok_right, ok_wrong, bad_right, bad_wrong


def _writer_items(split: Split, writer: str) -> set[str]:
    """Items of the writer ``writer`` or of its lettered writers (``dev-10`` is dev-10a..c)."""
    return {item.id for path in sorted((corpus_dir() / split).glob("*.yaml"))
            for f in [load_file(path)]
            if in_writer_group(f.writer, writer)
            for item in f.items}


def report(split: Split, tasks: dict[str, TaskSpec], show_errors: bool,
           writer: str | None = None, rules_only: bool = False) -> Score:
    items = load_split(split, tasks)
    if writer is not None:
        ids = _writer_items(split, writer)
        items = [(t, item) for t, item in items if item.id in ids]
        show_errors = False  # never listed
    observers = {t.id: SemanticActObserver(t) for t in tasks.values()}

    def acts(task: TaskSpec, text: str) -> list[Act]:
        o = observers[task.id]
        return o.observe_rules(text) if rules_only else o.observe(text)

    def observe(task: TaskSpec, text: str) -> list[PredictedAct]:
        return [PredictedAct(act=a.act, field=a.field, action=a.action)
                for a in acts(task, text)]

    t0 = time.perf_counter()
    result = score(items, observe)
    elapsed = time.perf_counter() - t0
    label = split if writer is None else f"{split}, writer {writer} only (never read)"
    print(f"\n== {label}: {result.n_items} agent turns from "
          f"{len({t.id for t, _ in items})} tasks ({elapsed * 1000 / max(1, result.n_items):.2f}"
          " ms per turn)")
    for act in ACTS:
        print(_row(act, result.per_act[act]))
    print(f"  macro F1 over acts {result.macro_f1:.3f}")
    print(_row("approval(action)", result.approval))
    print(_row("ask(field)", result.ask_field))
    print(_row("restate(field)", result.restate_field))
    right, false_fix, caught, false_yes = _readback(items, acts)  # type: ignore[arg-type]
    print(f"  read-back check: right values confirmed {right}, wrongly corrected {false_fix}; "
          f"wrong values corrected {caught}, wrongly confirmed {false_yes}")
    if show_errors:
        hidden = set().union(*(_writer_items(split, w) for w in VALIDATION_WRITERS))
        for item_id, gold, pred in result.errors:
            if item_id not in hidden:  # the validation writers' turns are never listed
                print(f"    {item_id}: labelled {gold} | observed {pred}")
    return result


def agreement(tasks: dict[str, TaskSpec]) -> None:
    """The anchor: how far blind annotators (who labelled the held-out texts from the guide and
    the task files alone, never seeing the labels) agree with the held-out labels, scored
    exactly as the observer is. The observer's figure is read against this ceiling."""
    held = load_split("heldout", tasks)
    for folder in sorted((corpus_dir() / "agreement").glob("*/")):
        labels = {}
        for path in sorted(folder.glob("*.yaml")):
            for item in load_file(path).items:
                labels[item.id] = item
        texts = {item.text: labels[item.id] for _, item in held if item.id in labels}
        if len(texts) != len(held):
            print(f"  {folder.name}: labels {len(texts)} of {len(held)} held-out turns; skipped")
            continue

        def blind(task: TaskSpec, text: str, texts: dict[str, CorpusItem] = texts,
                  ) -> list[PredictedAct]:
            return [PredictedAct(act=a.act, field=a.field, action=a.action)
                    for a in texts[text].acts]

        s = score(held, blind)
        print(f"  blind annotator {folder.name}: macro F1 {s.macro_f1:.3f}, approval P "
              f"{_fmt(s.approval.precision)} R {_fmt(s.approval.recall)}, ask(field) F1 "
              f"{_fmt(s.ask_field.f1)}, restate(field) F1 {_fmt(s.restate_field.f1)}")


def approval_agreement(tasks: dict[str, TaskSpec]) -> None:
    """The approval set's anchor: blind annotators marked, from the guide, the texts and the
    task files alone, which turns ask leave for the gated action; scored against the writers'
    labels exactly as the observer's approval requests are."""
    items = load_split("approval", tasks)
    for path in sorted((corpus_dir() / "agreement_approval").glob("*.yaml")):
        marks = load_approval_marks(path)
        if set(marks) != {item.id for _, item in items}:
            print(f"  {path.stem}: marks {len(marks)} of {len(items)} turns; skipped")
            continue

        leave = {(t.id, item.text): marks[item.id] for t, item in items}

        def blind(task: TaskSpec, text: str, leave: dict[tuple[str, str], bool] = leave,
                  ) -> list[PredictedAct]:
            return ([PredictedAct(act="request_approval", action=task.authorization[0].action)]
                    if leave[task.id, text] else [])

        s = score(items, blind)
        print(f"  blind annotator {path.stem}: approval P {_fmt(s.approval.precision)} "
              f"R {_fmt(s.approval.recall)} (tp {s.approval.tp}, fp {s.approval.fp}, "
              f"fn {s.approval.fn})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules-only", action="store_true",
                        help="score the observer's rules without the act model")
    parser.add_argument("--errors", choices=["dev"],
                        help="list the misses of the dev split (never those of the validation "
                             "writers dev-5 and dev-10); prints "
                             "no other split, so a rule writer sees no held-out figure")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"bench_observer: load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} cores")
    tasks = {t.id: t for t in load_tasks([default_tasks_dir()])}
    only = args.rules_only
    print("observer: " + ("rules alone (--rules-only)" if only else "rules + act model "
                          "(its development figures are in-sample but for the validation "
                          "writers)"))
    report("dev", tasks, args.errors == "dev", rules_only=only)
    if args.errors:
        print("\n(--errors: the validation writers' and held-out figures are not computed)")
        return 0
    for writer in VALIDATION_WRITERS:
        report("dev", tasks, False, writer=writer, rules_only=only)
    held = report("heldout", tasks, False, rules_only=only)
    extra = (report("approval", tasks, False, rules_only=only)
             if any((corpus_dir() / "approval").glob("*.yaml")) else None)
    print("\n== held-out against the targets")
    print(f"  macro F1 {held.macro_f1:.3f} (target >= {TARGETS['macro_f1']}; the held-out split)")
    pooled = held.approval if extra is None else PRF(
        held.approval.tp + extra.approval.tp, held.approval.fp + extra.approval.fp,
        held.approval.fn + extra.approval.fn)
    print(f"  approval requests, targets precision >= {TARGETS['approval_precision']}, recall >= "
          f"{TARGETS['approval_recall']} (95% Wilson intervals):")
    print(_approval_row("held-out split", held.approval))
    if extra is not None:
        print(_approval_row("approval set", extra.approval))
        print(_approval_row("both (never read)", pooled))
    rows = [held.approval] if extra is None else [held.approval, extra.approval, pooled]
    met = held.macro_f1 >= TARGETS["macro_f1"] and all(
        (a.precision or 0) >= TARGETS["approval_precision"]
        and (a.recall or 0) >= TARGETS["approval_recall"] for a in rows)
    print(f"  targets {'met' if met else 'NOT met'}"
          + ("" if extra is None else " (approval on each set and on both)"))
    print("\n== anchor: blind annotators against the held-out labels (the labels' own ceiling)")
    agreement(tasks)
    if extra is not None:
        print("\n== anchor: blind annotators against the approval set's labels")
        approval_agreement(tasks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
