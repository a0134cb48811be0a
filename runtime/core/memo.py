"""Bounded memos for pure work done again and again in one process (issue 20: the virtual
clock reads the same sentences, scripts, recordings and knowledge bases once per run).

Both are plain dicts, emptied when full (the working set of a campaign is far smaller than
the bound), safe to share between threads under the GIL (a race only computes twice)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def remember(memo: dict[K, V], key: K, compute: Callable[[], V], limit: int) -> V:
    """``memo[key]``, computed by ``compute()`` the first time (``memo`` holds at most
    ``limit`` entries)."""
    hit = memo.get(key)
    if hit is None:
        if len(memo) >= limit:
            memo.clear()
        hit = memo[key] = compute()
    return hit


def per_object(memo: dict[int, tuple[Any, V]], obj: object, build: Callable[[], V],
               limit: int) -> V:
    """What ``build()`` gives for this very object (not an equal one), built once. The entry
    keeps ``obj`` alive, so its ``id`` is not reused while it is remembered."""
    hit = memo.get(id(obj))
    if hit is None or hit[0] is not obj:
        if len(memo) >= limit:
            memo.clear()
        hit = memo[id(obj)] = (obj, build())
    return hit[1]
