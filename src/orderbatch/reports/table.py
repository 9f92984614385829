"""HTML tables whose cells wrap rather than push the page sideways, and met/missed marks."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from orderbatch.reports.render import RenderContext


@dataclass(frozen=True)
class Column:
    label: str
    # Numbers align right (tabular figures) so a column reads down at a glance.
    numeric: bool = True
    # Shown when the header is hovered: what the abbreviation means, its unit.
    explanation: str = ""
    # Paths, IDs and messages: may break anywhere in a long word (so the column can narrow); other
    # text breaks only between words, so a name is never split while there is room.
    long_text: bool = False


@dataclass(frozen=True)
class Mark:
    """A target's verdict: met, missed, or not judged (None), with an optional word after it."""

    met: bool | None
    detail: str = ""
    # The words shown: ("yes", "no") reads better where the mark answers a question.
    words: tuple[str, str] = ("met", "missed")

    @property
    def word(self) -> str:
        if self.met is None:
            return "not judged"
        return self.words[0] if self.met else self.words[1]

    def html(self) -> str:
        symbol = {True: "✓", False: "✗", None: "&ndash;"}[self.met]
        css = {True: "met", False: "missed", None: "unjudged"}[self.met]
        detail = f" <span class=mark-detail>{html.escape(self.detail)}</span>" if self.detail else ""
        return f'<span class="mark mark-{css}" data-met="{css}">{symbol} {self.word}</span>{detail}'


Cell = str | int | float | Mark | None


def cell_html(cell: Cell) -> str:
    if isinstance(cell, Mark):
        return cell.html()
    if cell is None:
        return '<span class="absent" title="not measured">&ndash;</span>'
    return html.escape(str(cell))


@dataclass(frozen=True)
class Table:
    columns: Sequence[Column]
    rows: Sequence[Sequence[Cell]]
    caption: str = ""
    element_id: str = ""
    # As wide as the column (a summary); otherwise as wide as its content, up to the column.
    wide: bool = False

    def render(self, _context: RenderContext) -> str:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row of {len(row)} cells in a table of {len(self.columns)} columns")
        header = "".join(
            f"<th{_align(column)}{_title(column.explanation)} scope=col>{html.escape(column.label)}</th>"
            for column in self.columns
        )
        body = "".join(
            "<tr>"
            + "".join(
                f"<td{_align(column)}>{cell_html(cell)}</td>"
                for column, cell in zip(self.columns, row, strict=True)
            )
            + "</tr>"
            for row in self.rows
        )
        identity = f' id="{html.escape(self.element_id)}"' if self.element_id else ""
        identity += " class=wide" if self.wide else ""
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return f"<table{identity}>{caption}<thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _align(column: Column) -> str:
    if column.numeric:
        return " class=num"
    return " class=long" if column.long_text else ""


def _title(explanation: str) -> str:
    return f' title="{html.escape(explanation)}"' if explanation else ""
