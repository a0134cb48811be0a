"""A clock the timeout tests step instead of sleeping: on a busy machine a login or a
request can take seconds, which would move a verdict across a limit of a few seconds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import ModuleType

import pytest


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    @classmethod
    def install(cls, monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str) -> Clock:
        """A new clock in place of ``module.name`` for the rest of the test."""
        clock = cls()
        monkeypatch.setattr(module, name, clock)
        return clock
