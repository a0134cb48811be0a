"""A learned second opinion on three act types of the semantic-act observer.

The observer's rules (``runtime/session/observer.py``) decide every act. For the two act types where
writers' labels follow the turn's whole shape more than any one phrase (``summarize``: is this
turn a recap?; ``inform``: does it tell the caller anything besides its other acts?), a
logistic regression per act reads the turn's words and word pairs together with the rules' own
acts and decides whether the act is present. A third regression, over the words alone
(:data:`RULE_BLIND`), says whether the turn asks leave for the task's gated action
(``request_approval``). They are trained on the labelled development corpus
(docs/observer_corpus.md) without the validation writers (``VALIDATION_WRITERS``), whose turns
are never read, nor the held-out splits.

What the model may change is narrow, so that no caller decision that matters can move on a
weak word of it:

* ``summarize``: it may only take away a recap the rules found (never add one: a recap counts
  as having said what will be submitted, an approval condition); the fields restated stay;
* ``inform``: it may add one (on the first sentence no other act came from; when every
  sentence has an act, beside the last one, but never in a turn that asks leave, whose lead-in
  is part of the request: guide rule 2) or take informs away, except an inform that names a
  negotiated field (the caller weighs proposals in it);
* ``request_approval``: it may take away a request the rules found only when it is sure the
  turn asks no leave (margin under ``-APPROVAL_MARGIN``: a false approval is worse than a
  miss), and add one the rules missed only when it is as sure the turn does, on a task with
  exactly one gated action (the request is bound to it; the caller still grants only when the
  task's approval conditions hold).

The weights are a JSON file next to this module, a pure function of the corpus and the rules:
``python -m runtime.session.act_model train`` rebuilds it, ``python -m runtime.session.act_model
check`` tells
whether it is stale (a test runs the same check). Inference is a dictionary lookup per feature:
the same transcript always gives the same acts.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.session.observer_eval import (
    ACTS,
    VALIDATION_WRITERS,
    corpus_dir,
    is_validation_writer,
    load_file,
)

MODEL_PATH = Path(__file__).with_name("act_model.json")
MODELLED = ("summarize", "inform", "request_approval")
"""The act types the model gives an opinion on."""
RULE_BLIND = frozenset({"request_approval"})
"""Acts modelled from the turn's words alone, without the rules' acts as features: the rules
are tuned on the same corpus, so a model that may see them only learns to copy them."""
_RULE_FEATURES = ("r:", "rn:")
APPROVAL_MARGIN = 1.5
"""How sure the model must be (in log-odds) to overrule the rules on a request for leave;
chosen on the approval-focused writers dev-52/dev-53 while they were held out of training
(docs/observer_corpus.md)."""
FORMAT = 1
C = 1.0
"""Inverse L2 strength of the logistic regressions (chosen by leave-one-writer-set-out
cross-validation on the read writers, docs/observer_corpus.md)."""
MIN_COUNT = 3
"""A word feature is kept when at least this many training turns have it."""

RuleActs = Sequence[tuple[str, str | None]]
"""The rules' acts of a turn as (act, field) pairs."""

_TOKEN = re.compile(r"[a-z']+|[?!:,.]")
_SENTENCE_END = re.compile(r"[.?!](?:\s|$)")


class ActModelError(Exception):
    """The weights file is missing, malformed or of another format."""


def features(text: str, rule_acts: RuleActs) -> set[str]:
    """The features of one agent turn: its lower-cased words and word pairs (punctuation
    counts as a word), the rules' act types, how many fields the rules found asked, confirmed
    and read back, the number of sentences, whether it ends with a question, its length, and
    its first and last word."""
    tokens = _TOKEN.findall(text.lower())
    out = {f"w:{t}" for t in tokens}
    out |= {f"b:{a}_{b}" for a, b in itertools.pairwise(tokens)}
    types = {act for act, _field in rule_acts}
    out |= {f"r:{act}" for act in types}
    for act in ("ask", "confirm", "read_back"):
        n = sum(1 for a, f in rule_acts if a == act and f)
        out.add(f"rn:{act}:{min(n, 3)}")
    out.add(f"ns:{min(len(_SENTENCE_END.findall(text)), 4)}")
    out.add("endq" if text.rstrip().endswith("?") else "endnq")
    out.add(f"len:{min(len(tokens) // 8, 6)}")
    if tokens:
        out |= {f"first:{tokens[0]}", f"last:{tokens[-1]}"}
    return out


@dataclass(frozen=True)
class ActModel:
    index: dict[str, int]
    """Feature name -> column."""
    weights: dict[str, tuple[float, ...]]
    """Per modelled act: one weight per column."""
    bias: dict[str, float]
    trained_on: dict[str, Any]

    def margins(self, text: str, rule_acts: RuleActs) -> dict[str, float]:
        """Per modelled act, the log-odds that a labeller marks it in this turn."""
        feats = features(text, rule_acts)
        cols = [self.index[f] for f in feats if f in self.index]
        blind = [self.index[f] for f in feats
                 if f in self.index and not f.startswith(_RULE_FEATURES)]
        return {act: self.bias[act] + math.fsum(
                    self.weights[act][c] for c in (blind if act in RULE_BLIND else cols))
                for act in MODELLED}

    def decide(self, text: str, rule_acts: RuleActs) -> dict[str, bool]:
        return {act: m > 0 for act, m in self.margins(text, rule_acts).items()}

    def to_json(self) -> dict[str, Any]:
        names = sorted(self.index, key=self.index.__getitem__)
        return {
            "format": FORMAT, "acts": list(MODELLED), "C": C, "min_count": MIN_COUNT,
            "trained_on": self.trained_on, "features": names,
            "models": {act: {"bias": round(self.bias[act], 6),
                             "weights": [round(w, 6) for w in self.weights[act]]}
                       for act in MODELLED},
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> ActModel:
        try:
            if raw["format"] != FORMAT or list(raw["acts"]) != list(MODELLED):
                raise ActModelError(
                    f"{where}: format {raw.get('format')} for acts {raw.get('acts')}; this code "
                    f"reads format {FORMAT} for {list(MODELLED)}: run python -m "
                    "runtime.session.act_model train")
            names: list[str] = raw["features"]
            models = raw["models"]
            weights = {act: tuple(float(w) for w in models[act]["weights"]) for act in MODELLED}
            for act, w in weights.items():
                if len(w) != len(names):
                    raise ActModelError(f"{where}: models.{act}.weights has {len(w)} entries "
                                        f"for {len(names)} features")
            return cls(index={n: i for i, n in enumerate(names)}, weights=weights,
                       bias={act: float(models[act]["bias"]) for act in MODELLED},
                       trained_on=dict(raw["trained_on"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ActModelError(f"{where}: malformed act model ({exc!r}): run python -m "
                                "runtime.session.act_model train") from None


@functools.cache
def load_model(path: Path = MODEL_PATH) -> ActModel:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ActModelError(
            f"{path}: missing: run python -m runtime.session.act_model train"
        ) from None
    except json.JSONDecodeError as exc:
        raise ActModelError(f"{path}: not JSON ({exc}): run python -m runtime.session.act_model "
                            "train") from None
    return ActModel.from_json(raw, str(path))


# --------------------------------------------------------------------------- training

@dataclass(frozen=True)
class Example:
    item_id: str
    text: str
    rule_acts: tuple[tuple[str, str | None], ...]
    labelled: frozenset[str]
    """The act types labelled in the turn."""


def digest(examples: Sequence[Example]) -> str:
    """What the model is a function of: every training turn, its labels and the rules' acts."""
    h = hashlib.sha256()
    for e in sorted(examples, key=lambda e: e.item_id):
        h.update(json.dumps([e.item_id, e.text, sorted(e.labelled),
                             [list(a) for a in e.rule_acts]]).encode())
    return h.hexdigest()


def _fit(rows: list[list[int]], y: Sequence[bool], n_features: int,
         ) -> tuple[float, tuple[float, ...]]:
    """L2-regularized logistic regression (L-BFGS from zero weights: deterministic)."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.optimize import minimize

    data = [1.0 for r in rows for _ in r]
    indices = [c for r in rows for c in r]
    indptr = [0]
    for r in rows:
        indptr.append(indptr[-1] + len(r))
    x = sp.csr_matrix((data, indices, indptr), shape=(len(rows), n_features))
    target = np.asarray(y, dtype=float)

    def loss(w: Any) -> tuple[float, Any]:
        z = x @ w[:-1] + w[-1]
        p = 1.0 / (1.0 + np.exp(-z))
        value = float((np.logaddexp(0, -z) * target + np.logaddexp(0, z) * (1 - target)).sum()
                      + 0.5 / C * (w[:-1] @ w[:-1]))
        grad = np.append(x.T @ (p - target) + w[:-1] / C, (p - target).sum())
        return value, grad

    result = minimize(loss, np.zeros(n_features + 1), jac=True, method="L-BFGS-B",
                      options={"maxiter": 1000})
    w = result.x
    return float(w[-1]), tuple(float(v) for v in w[:-1])


def train(examples: Sequence[Example]) -> ActModel:
    feats = [features(e.text, e.rule_acts) for e in examples]
    counts = Counter(f for fs in feats for f in fs)
    names = sorted(f for f, n in counts.items()
                   if n >= MIN_COUNT or f.startswith("r:"))
    names += sorted(f"r:{a}" for a in ACTS if f"r:{a}" not in counts)
    index = {n: i for i, n in enumerate(names)}
    rows = [sorted(index[f] for f in fs if f in index) for fs in feats]
    blind = [[c for c in r if not names[c].startswith(_RULE_FEATURES)] for r in rows]
    weights: dict[str, tuple[float, ...]] = {}
    bias: dict[str, float] = {}
    for act in MODELLED:
        bias[act], weights[act] = _fit(blind if act in RULE_BLIND else rows,
                                       [act in e.labelled for e in examples], len(names))
    return ActModel(index=index, weights=weights, bias=bias, trained_on={
        "split": "dev", "without_writers": list(VALIDATION_WRITERS),
        "turns": len(examples), "digest": digest(examples)})


def training_examples() -> list[Example]:
    """The development corpus without the validation writers, with the rules' acts."""
    from runtime.core.spec import default_tasks_dir, load_tasks
    from runtime.session.observer import SemanticActObserver  # it imports this module

    tasks = {t.id: t for t in load_tasks([default_tasks_dir()])}
    out: list[Example] = []
    for path in sorted((corpus_dir() / "dev").glob("*.yaml")):
        corpus = load_file(path)
        if is_validation_writer(corpus.writer):
            continue
        observer = SemanticActObserver(tasks[corpus.task])
        for item in corpus.items:
            rules = tuple((a.act, a.field) for a in observer.observe_rules(item.text))
            out.append(Example(item.id, item.text, rules,
                               frozenset(a.act for a in item.acts)))
    return out


def check(shipped: ActModel, examples: Sequence[Example]) -> list[str]:
    """Why the shipped weights are not those the corpus and rules give now (empty: current).
    Decisions are compared on every training turn, away from the boundary (a margin under
    0.01 may round either way on another machine's arithmetic)."""
    problems: list[str] = []
    now = digest(examples)
    if shipped.trained_on.get("digest") != now:
        problems.append(f"{MODEL_PATH}: trained on corpus/rules digest "
                        f"{str(shipped.trained_on.get('digest'))[:12]}, now {now[:12]} (the "
                        "corpus or the rules changed)")
    fresh = train(examples)
    flips = 0
    for e in examples:
        a, b = shipped.margins(e.text, e.rule_acts), fresh.margins(e.text, e.rule_acts)
        flips += sum(1 for act in MODELLED
                     if (a[act] > 0) != (b[act] > 0) and min(abs(a[act]), abs(b[act])) > 0.01)
    if flips:
        problems.append(f"{MODEL_PATH}: {flips} decisions differ from a model retrained now")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m runtime.session.act_model train|check``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in (["train"], ["check"]):
        print("usage: python -m runtime.session.act_model train|check", file=sys.stderr)
        return 2
    examples = training_examples()
    if args == ["train"]:
        model = train(examples)
        # one feature or weight per line: a retrained model's diff shows what moved
        MODEL_PATH.write_text(json.dumps(model.to_json(), indent=0) + "\n", encoding="utf-8")
        print(f"{MODEL_PATH}: {len(model.index)} features, {len(examples)} turns")
        return 0
    problems = check(load_model(), examples)
    for p in problems:
        print(p + ": run python -m runtime.session.act_model train")
    print("act model current" if not problems else "act model stale")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
