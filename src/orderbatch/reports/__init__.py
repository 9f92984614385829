"""Self-contained HTML reports that read at 1280 px: a page shell, tables with met/missed marks, charts.

Each report (bench, soak, plan, compat) builds its own data and hands it to these parts:

    page = Page("orderbatch bench", subtitle="Generated ...")
    page.add(Table(columns, rows, caption="Summary"))
    page.add(comparison_chart(categories, panels, title="Every scenario"))
    page.write(path)

Charts are plotly figures; the page embeds plotly.js once, inline, so it opens with no network. This
package imports nothing else from orderbatch, so every report may use it.
"""

from orderbatch.reports.charts import (
    Bars,
    BarsPanel,
    Chart,
    Line,
    Reference,
    Span,
    TimePanel,
    comparison_chart,
    timeline_chart,
)
from orderbatch.reports.page import Notes, Page, Section
from orderbatch.reports.table import Cell, Column, Mark, Table

__all__ = [
    "Bars",
    "BarsPanel",
    "Cell",
    "Chart",
    "Column",
    "Line",
    "Mark",
    "Notes",
    "Page",
    "Reference",
    "Section",
    "Span",
    "Table",
    "TimePanel",
    "comparison_chart",
    "timeline_chart",
]
