"""CSV cells that a spreadsheet shows as text, never runs as a formula.

Every CSV the project exports (Study A ratings, comments and Table 9; Study B plan, links and
Table 10; campaign runs and slices) is written through :func:`writer`.
A text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (what
Excel, LibreOffice and Google Sheets read as the start of a formula) gets a leading ``'``,
the quote a spreadsheet itself uses for "this is text" (OWASP's rule for CSV injection). A
cell that is a plain number (``-0.25``, ``+3``, ``1e-05``) is left alone, and so is every
``int`` or ``float``. :func:`unquote_cell` undoes the quote when an exported file is read back
(a plan CSV edited and imported again keeps its labels).

A cell already starting with quotes before such a character gets one more, so reading back is
exact for every string.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from typing import Any, TextIO

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
"""First characters a spreadsheet reads as the start of a formula."""
_QUOTED = re.compile(r"'*[=+\-@\t\r]")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """``value`` fit for a spreadsheet: a string that would start a formula, quoted; anything
    else (numbers, None, plain text) unchanged."""
    if not isinstance(value, str) or not _QUOTED.match(value) or _NUMBER.fullmatch(value):
        return value
    return "'" + value


def unquote_cell(value: str) -> str:
    """The text :func:`safe_cell` quoted, as it was (other cells unchanged)."""
    if value.startswith("'") and _QUOTED.match(value[1:]):
        return value[1:]
    return value


class SafeWriter:
    """``csv.writer`` whose rows go through :func:`safe_cell`. A cell holding a carriage
    return is always quoted, whatever the line terminator (the standard writer leaves it bare
    when the terminator is ``\\n``, and readers then split the row there)."""

    def __init__(self, fh: TextIO, *, lineterminator: str = "\r\n", **fmt: Any) -> None:
        self._fh = fh
        self._end = lineterminator
        self._buf = io.StringIO()
        self._csv = csv.writer(self._buf, lineterminator="\r\n", **fmt)

    def writerow(self, row: Iterable[Any]) -> None:
        self._buf.seek(0)
        self._buf.truncate()
        self._csv.writerow([safe_cell(v) for v in row])
        self._fh.write(self._buf.getvalue()[:-2] + self._end)

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(fh: TextIO, *, lineterminator: str = "\r\n", **fmt: Any) -> SafeWriter:
    """A CSV writer for exports (same arguments as ``csv.writer``)."""
    return SafeWriter(fh, lineterminator=lineterminator, **fmt)
