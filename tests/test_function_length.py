"""No function in ``runtime/``, ``grading/`` or ``app/`` is longer than 80 lines (issue 16):
a longer one is cut into named steps, as the orchestrator's tick and the observer's
classifier were. Lines are counted from ``def`` to the end of the body."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 80


def long_functions(source: str, name: str) -> list[str]:
    """``name:line function (n lines)`` for every function of ``source`` over the limit."""
    out = []
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > LIMIT:
                out.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_no_function_is_longer_than_80_lines() -> None:
    found = [hit for package in ("runtime", "grading", "app")
             for path in sorted((ROOT / package).rglob("*.py"))
             for hit in long_functions(path.read_text(encoding="utf-8"),
                                       str(path.relative_to(ROOT)))]
    assert found == [], "cut these into named steps:\n" + "\n".join(found)


def test_the_count_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    assert long_functions(f"def f():\n{body}\n", "m.py") == ["m.py:1 f (81 lines)"]
    short = "\n".join(f"    x{i} = {i}" for i in range(LIMIT - 1))
    assert long_functions(f"async def g():\n{short}\n", "m.py") == []
