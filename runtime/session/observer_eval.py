"""The labelled corpus of agent turns and how the semantic-act observer is scored on it.

The corpus (``tests/corpus/observer/<split>/<task_id>.yaml``, format and labelling rules in
``docs/observer_corpus.md``) holds agent turns written for the bundled tasks, each with the acts
a careful reader finds in it. :func:`score` compares an observer's acts with the labels:

* per act, over (turn, act) pairs: precision, recall and F1 of the act being present;
* ``macro_f1``: the mean F1 over the acts that occur in the labels or the predictions;
* ``approval``: (turn, action) pairs of ``request_approval`` bound to the task's gated action;
* ``ask_field`` / ``restate_field``: (turn, field) pairs of ``ask`` and of
  ``confirm``/``read_back`` (the caller answers and checks by field).

No observer code runs here unless :func:`score` is given one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runtime.core.spec import TaskSpec, read_yaml

Split = Literal["dev", "heldout", "approval"]
ACTS = (
    "greet", "ask", "confirm", "read_back", "summarize", "request_approval", "offer", "inform",
    "close",
)
"""The act ontology the corpus is labelled with (docs/observer_corpus.md)."""
VALIDATION_WRITERS = ("dev-5", "dev-10")
"""Development writers (by id prefix: dev-10a..c are "dev-10") whose turns are never read one
by one (only their totals are printed) nor trained on: smaller held-out checks for rule
changes (docs/observer_corpus.md)."""


def in_writer_group(writer: str, group: str) -> bool:
    """``writer`` is ``group`` or one of its lettered writers (``dev-10b`` is in ``dev-10``,
    ``dev-100`` is not)."""
    return writer == group or (writer.startswith(group) and writer[len(group):].isalpha())


def is_validation_writer(writer: str) -> bool:
    """``writer`` is one of :data:`VALIDATION_WRITERS` or one of its lettered writers."""
    return any(in_writer_group(writer, w) for w in VALIDATION_WRITERS)


class LabelledAct(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    act: Literal[
        "greet", "ask", "confirm", "read_back", "summarize", "request_approval", "offer",
        "inform", "close",
    ]
    field: str | None = None
    action: str | None = None
    value_ok: bool | None = None


class CorpusItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    text: str = Field(min_length=1)
    acts: list[LabelledAct] = Field(min_length=1)


class CorpusFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    split: Split
    writer: str
    items: list[CorpusItem] = Field(min_length=1)


_Model = TypeVar("_Model", bound=BaseModel)


class CorpusError(Exception):
    """A corpus file is malformed or names fields/actions its task does not have."""


def corpus_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "tests" / "corpus" / "observer"


def check_file(corpus: CorpusFile, task: TaskSpec, path: Path) -> list[str]:
    """Problems with one file against its task: one ``file: item: message`` line each."""
    problems: list[str] = []
    fields = {f.name for a in task.artifacts for f in a.fields}
    actions = {r.action for r in task.authorization}
    if corpus.task != task.id:
        problems.append(f"{path}: task: '{corpus.task}' but the file is checked against "
                        f"'{task.id}'")
    seen: set[str] = set()
    for item in corpus.items:
        where = f"{path}: {item.id}"
        if item.id in seen:
            problems.append(f"{where}: duplicate item id")
        seen.add(item.id)
        for a in item.acts:
            if a.field is not None and a.field not in fields:
                problems.append(f"{where}: field '{a.field}' is not a field of {task.id} "
                                f"(fields: {', '.join(sorted(fields))})")
            if a.field is not None and a.act not in ("ask", "confirm", "read_back"):
                problems.append(f"{where}: act '{a.act}' carries no field")
            if a.act == "request_approval":
                if a.action not in actions:
                    problems.append(
                        f"{where}: request_approval needs an action of {task.id} "
                        f"({', '.join(sorted(actions)) or 'it has none: label it offer'}), "
                        f"got {a.action!r}")
            elif a.action is not None:
                problems.append(f"{where}: only request_approval carries an action")
            if a.act == "read_back" and a.field is None:
                problems.append(f"{where}: read_back needs a field")
            if a.act in ("read_back", "confirm") and a.field is not None and a.value_ok is None:
                problems.append(f"{where}: {a.act} of a field needs value_ok: true or false")
            if a.value_ok is not None and (a.act not in ("read_back", "confirm")
                                           or a.field is None):
                problems.append(f"{where}: value_ok belongs to read_back/confirm of a field")
    return problems


def _read_as(path: Path, model: type[_Model]) -> _Model:
    """A YAML file validated as ``model``; raises :class:`CorpusError` naming the file and,
    for a schema problem, the key."""
    try:
        return model.model_validate(read_yaml(path))
    except ValidationError as exc:
        lines = [f"{path}: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                 for e in exc.errors()]
        raise CorpusError("\n".join(lines)) from None
    except Exception as exc:
        raise CorpusError(f"{path}: cannot read: {exc}") from None


def load_file(path: Path) -> CorpusFile:
    return _read_as(path, CorpusFile)


def load_split(split: Split, tasks: dict[str, TaskSpec], root: Path | None = None,
               ) -> list[tuple[TaskSpec, CorpusItem]]:
    """Every item of a split with its task; raises :class:`CorpusError` listing problems."""
    folder = (root or corpus_dir()) / split
    out: list[tuple[TaskSpec, CorpusItem]] = []
    problems: list[str] = []
    for path in sorted(folder.glob("*.yaml")):
        corpus = load_file(path)
        task = tasks.get(corpus.task)
        if task is None:
            problems.append(f"{path}: task: unknown task '{corpus.task}'")
            continue
        if corpus.split != split:
            problems.append(f"{path}: split: '{corpus.split}' in the {split}/ folder")
        problems += check_file(corpus, task, path)
        out.extend((task, item) for item in corpus.items)
    if problems:
        raise CorpusError("\n".join(problems))
    return out


class ApprovalMarks(BaseModel):
    """A blind annotator's marks on the approval set: for every turn, whether it asks leave
    for the task's gated action (``tests/corpus/observer/agreement_approval/<annotator>.yaml``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    annotator: str
    asks_leave: dict[str, bool]


def load_approval_marks(path: Path) -> dict[str, bool]:
    """One annotator's marks; raises :class:`CorpusError` naming the file (and the key)."""
    return _read_as(path, ApprovalMarks).asks_leave


# --------------------------------------------------------------------------- scoring

@dataclass(frozen=True)
class PRF:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        if self.tp + self.fp + self.fn == 0:
            return None
        return 2 * self.tp / (2 * self.tp + self.fp + self.fn)


def _prf(gold: set[tuple[str, ...]], pred: set[tuple[str, ...]]) -> PRF:
    return PRF(tp=len(gold & pred), fp=len(pred - gold), fn=len(gold - pred))


@dataclass(frozen=True)
class Score:
    per_act: dict[str, PRF]
    macro_f1: float
    approval: PRF
    ask_field: PRF
    restate_field: PRF
    n_items: int
    errors: list[tuple[str, list[str], list[str]]]
    """(item id, labelled, predicted) for every item whose act set differs."""


class PredictedAct(BaseModel):
    """The part of an observed act the corpus scores."""

    act: str
    field: str | None = None
    action: str | None = None


Observe = Callable[[TaskSpec, str], Sequence[PredictedAct]]


Keys = dict[str, set[tuple[str, ...]]]


def _keys(acts: Iterable[PredictedAct | LabelledAct], item_id: str) -> Keys:
    out: Keys = {
        "act": set(), "approval": set(), "ask_field": set(), "restate_field": set(),
    }
    for a in acts:
        out["act"].add((item_id, a.act))
        if a.act == "request_approval" and a.action:
            out["approval"].add((item_id, a.action))
        if a.act == "ask" and a.field:
            out["ask_field"].add((item_id, a.field))
        if a.act in ("confirm", "read_back") and a.field:
            out["restate_field"].add((item_id, a.field))
    return out


def score(items: Sequence[tuple[TaskSpec, CorpusItem]], observe: Observe) -> Score:
    gold: dict[str, set[tuple[str, ...]]] = {k: set() for k in
                                              ("act", "approval", "ask_field", "restate_field")}
    pred: dict[str, set[tuple[str, ...]]] = {k: set() for k in gold}
    errors: list[tuple[str, list[str], list[str]]] = []
    for task, item in items:
        g = _keys(item.acts, item.id)
        p = _keys(observe(task, item.text), item.id)
        for k in gold:
            gold[k] |= g[k]
            pred[k] |= p[k]
        if g["act"] != p["act"] or g["ask_field"] != p["ask_field"] or g["approval"] != p[
                "approval"] or g["restate_field"] != p["restate_field"]:
            def show(keys: dict[str, set[tuple[str, ...]]]) -> list[str]:
                return sorted(
                    [k[1] for k in keys["act"]]
                    + [f"ask:{k[1]}" for k in keys["ask_field"]]
                    + [f"restate:{k[1]}" for k in keys["restate_field"]]
                    + [f"approval:{k[1]}" for k in keys["approval"]]
                )
            errors.append((item.id, show(g), show(p)))
    per_act = {
        act: _prf({k for k in gold["act"] if k[1] == act}, {k for k in pred["act"] if k[1] == act})
        for act in ACTS
    }
    f1s = [s.f1 for s in per_act.values() if s.f1 is not None]
    return Score(
        per_act=per_act, macro_f1=sum(f1s) / len(f1s) if f1s else 0.0,
        approval=_prf(gold["approval"], pred["approval"]),
        ask_field=_prf(gold["ask_field"], pred["ask_field"]),
        restate_field=_prf(gold["restate_field"], pred["restate_field"]),
        n_items=len(items), errors=errors,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m runtime.session.observer_eval FILE…``: check corpus files against their tasks
    (labels only; the observer is not run)."""
    import sys

    from runtime.core.spec import default_tasks_dir, load_tasks

    args = list(sys.argv[1:] if argv is None else argv)
    tasks = {t.id: t for t in load_tasks([default_tasks_dir()])}
    problems: list[str] = []
    n = 0
    for name in args:
        path = Path(name)
        try:
            corpus = load_file(path)
        except CorpusError as exc:
            problems.append(str(exc))
            continue
        task = tasks.get(corpus.task)
        if task is None:
            problems.append(f"{path}: task: unknown task '{corpus.task}'")
            continue
        problems += check_file(corpus, task, path)
        n += len(corpus.items)
    for p in problems:
        print(p)
    print(f"{n} items checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
