"""What a probe expects (its ``expect:`` block), checked against a graded run. Shared by
tests/test_probes.py and bench/bench_heldout_probes.py; the keys are listed in
tests/test_probes.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grading.gates import GATE_NAMES, RunGrade
from runtime.core.events import (
    AgentSpeechStart,
    Event,
    SessionEnd,
    UserPlanEvent,
    UserSpeechStart,
)


def probe_problems(expect: dict[str, Any], grade: RunGrade, events: Sequence[Event]) -> list[str]:
    """Each way the run departs from ``expect``, in words; empty when it meets it."""
    out: list[str] = []
    failed = sorted(g for g in GATE_NAMES if not grade.gates[g])
    plans = [e.plan_id for e in events if isinstance(e, UserPlanEvent)]
    types = {e.type for e in events}
    if "WS" in expect and grade.WS is not expect["WS"]:
        out.append(f"WS is {grade.WS}, expected {expect['WS']}: {grade.gate_reasons}")
    if "fails" in expect and failed != sorted(expect["fails"]):
        out.append(f"failed gates {failed}, expected {sorted(expect['fails'])}: "
                   f"{grade.gate_reasons}")
    out += [f"gate {g} did not fail" for g in expect.get("fails_include", []) if g not in failed]
    reasons = "\n".join(r for rs in grade.gate_reasons.values() for r in rs)
    out += [f"no gate reason contains {t!r}: {reasons}" for t in expect.get("reasons", [])
            if t not in reasons]
    out += [f"the caller never spoke {p} (spoke {plans})" for p in expect.get("plans_include", [])
            if p not in plans]
    if "plans_include_any" in expect and not set(expect["plans_include_any"]) & set(plans):
        out.append(f"the caller spoke none of {expect['plans_include_any']} (spoke {plans})")
    out += [f"the caller spoke {p}" for p in expect.get("no_plans", []) if p in plans]
    if "plans_in_order" in expect:
        it = iter(plans)
        if not all(p in it for p in expect["plans_in_order"]):
            out.append(f"plans not in the order {expect['plans_in_order']} (spoke {plans})")
    out += [f"no {k} event" for k in expect.get("events", []) if k not in types]
    out += [f"a {k} event" for k in expect.get("no_events", []) if k in types]
    if "first_reply_not" in expect:
        second_turn = [e for e in events if isinstance(e, AgentSpeechStart)][1]
        reply = next(e for e in events if isinstance(e, UserPlanEvent) and e.seq > second_turn.seq)
        if reply.plan_id == expect["first_reply_not"]:
            out.append(f"the first reply was {reply.plan_id}")
    if "repeat_differs" in expect:
        said = [e.realization_id for e in events
                if isinstance(e, UserSpeechStart) and e.plan_id == expect["repeat_differs"]]
        if not (len(said) >= 2 and said[0] != said[1]):
            out.append(f"{expect['repeat_differs']} was not spoken twice in two wordings: {said}")
    if "end_reason_not" in expect:
        end = next(e for e in events if isinstance(e, SessionEnd))
        if end.reason == expect["end_reason_not"]:
            out.append(f"the session ended by {end.reason}")
    return out
