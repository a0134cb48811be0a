"""The import layers of the code base (issue 16), read from its import graph with ``grimp``.

The run-time of one run (``runtime``) is graded by ``grading`` and served by ``app``; the study
protocols are statistics over exported rows. So ``runtime`` never imports ``grading`` or ``app``,
``grading`` never imports ``app``, ``study_protocols`` never imports ``app``, and the modules of
``app`` import one another without a cycle. Imports made only for type checking
(``if TYPE_CHECKING:``) do not count: they never run.
"""

from __future__ import annotations

import graphlib
from functools import cache

import grimp
import pytest

PACKAGES = ("runtime", "grading", "app", "study_protocols")

FORBIDDEN = [
    ("runtime", "grading"),
    ("runtime", "app"),
    ("grading", "app"),
    ("study_protocols", "app"),
]


@cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)


def _chain_text(importer: str, imported: str) -> str:
    chain = _graph().find_shortest_chain(importer=importer, imported=imported, as_packages=True)
    return " -> ".join(chain or ())


@pytest.mark.parametrize(
    ("importer", "imported"), FORBIDDEN, ids=[f"{a}-{b}" for a, b in FORBIDDEN]
)
def test_no_import_across_a_layer(importer: str, imported: str) -> None:
    exists = _graph().chain_exists(importer=importer, imported=imported, as_packages=True)
    assert not exists, f"{importer} imports {imported}: {_chain_text(importer, imported)}"


def _app_cycle(graph: grimp.ImportGraph) -> tuple[str, ...] | None:
    modules = {m for m in graph.modules if m == "app" or m.startswith("app.")}
    deps = {m: graph.find_modules_directly_imported_by(m) & modules for m in modules}
    try:
        graphlib.TopologicalSorter(deps).prepare()
    except graphlib.CycleError as exc:
        return tuple(exc.args[1])
    return None


def test_no_import_cycle_in_app() -> None:
    cycle = _app_cycle(_graph())
    assert cycle is None, "import cycle in app: " + " -> ".join(cycle or ())


def test_the_checks_see_a_forbidden_import_and_a_cycle() -> None:
    """The checks fail when the graph has what they forbid (a graph built here, not the code's)."""
    graph = grimp.ImportGraph()
    for module in ("runtime", "runtime.a", "grading", "grading.b", "app", "app.x", "app.y"):
        graph.add_module(module)
    graph.add_import(importer="runtime.a", imported="grading.b")
    assert graph.chain_exists(importer="runtime", imported="grading", as_packages=True)
    graph.add_import(importer="app.x", imported="app.y")
    assert _app_cycle(graph) is None
    graph.add_import(importer="app.y", imported="app.x")
    assert set(_app_cycle(graph) or ()) == {"app.x", "app.y"}
