"""Interactive charts (plotly): figures compared across runs, and time series stacked on one time axis.

Every value shows on hover. The figure is drawn at the width of its column, so it never widens the page.
plotly is imported when a chart is built, not when a report module is.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orderbatch.reports.render import RenderContext

# A palette that stays apart for readers with the common colour-vision deficiencies (Okabe-Ito).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
REFERENCE_COLOUR = "#C0392B"
PLOT_CONFIG = {"responsive": True, "displaylogo": False, "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
FONT = {"family": 'system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif', "size": 12}


@dataclass(frozen=True)
class Chart:
    """A finished plotly figure, placed in the page at the column's width."""

    figure: Any
    element_id: str
    height_px: int

    def render(self, context: RenderContext) -> str:
        import plotly.io

        context.charts += 1
        body = plotly.io.to_html(
            self.figure,
            full_html=False,
            include_plotlyjs=not context.plotly_js_embedded,
            config=PLOT_CONFIG,
            default_width="100%",
            default_height=f"{self.height_px}px",
            div_id=self.element_id,
        )
        context.plotly_js_embedded = True
        return f'<div class="chart" data-chart="{html.escape(self.element_id)}">{body}</div>'


# ------------------------------------------------------------------------------------ across runs


@dataclass(frozen=True)
class Bars:
    """One bar per category; None where the figure was not measured (no bar, said on hover)."""

    name: str
    values: Sequence[float | None]
    # How a value reads on hover, e.g. "{:.1f} s".
    value_format: str = "{:,.2f}"
    # Extra words per category shown on hover (e.g. the ratio to the bound).
    notes: Sequence[str] | None = None


@dataclass(frozen=True)
class BarsPanel:
    title: str
    bars: Sequence[Bars]
    axis_title: str = ""
    # Counts: ticks at whole numbers only.
    whole_numbers: bool = False


def comparison_chart(
    categories: Sequence[str], panels: Sequence[BarsPanel], *, title: str, element_id: str
) -> Chart:
    """Panels side by side, one horizontal bar group per category, categories read top to bottom."""
    from plotly import graph_objects
    from plotly.subplots import make_subplots

    figure = make_subplots(
        rows=1,
        cols=len(panels),
        shared_yaxes=True,
        horizontal_spacing=0.05,
        # One panel is named by the chart's title.
        subplot_titles=[panel.title for panel in panels] if len(panels) > 1 else None,
    )
    colour = iter(PALETTE * 4)
    for column, panel in enumerate(panels, start=1):
        for bars in panel.bars:
            if len(bars.values) != len(categories):
                raise ValueError(f"{bars.name}: {len(bars.values)} values for {len(categories)} categories")
            notes = bars.notes or [""] * len(categories)
            hover = [
                f"{category}<br>{bars.name}: "
                + (bars.value_format.format(value) if value is not None else "not measured")
                + (f"<br>{note}" if note else "")
                for category, value, note in zip(categories, bars.values, notes, strict=True)
            ]
            figure.add_trace(
                graph_objects.Bar(
                    name=bars.name,
                    orientation="h",
                    x=[0 if value is None else value for value in bars.values],
                    y=list(categories),
                    hovertext=hover,
                    hoverinfo="text",
                    marker_color=next(colour),
                    showlegend=len(panel.bars) > 1,
                ),
                row=1,
                col=column,
            )
        figure.update_xaxes(title_text=panel.axis_title, rangemode="tozero", row=1, col=column)
        if panel.whole_numbers:
            largest = max((value or 0 for bars in panel.bars for value in bars.values), default=0)
            figure.update_xaxes(tickformat=",d", dtick=max(1, math.ceil(largest / 8)), row=1, col=column)
    figure.update_yaxes(autorange="reversed", automargin=True)
    bars_per_category = max(len(panel.bars) for panel in panels)
    height = 190 + len(categories) * (16 * bars_per_category + 14)
    _lay_out(figure, title, height)
    figure.update_layout(barmode="group", hovermode="closest")
    return Chart(figure, element_id, height)


# ------------------------------------------------------------------------------------ over time


@dataclass(frozen=True)
class Line:
    name: str
    x: Sequence[float]
    y: Sequence[float]
    # A counter that holds its value until the next sample (concurrency, orders done) is drawn as steps.
    step: bool = False
    bars: bool = False
    # A bar's width in x units (1 for counts per second: the bars then tile the time axis).
    bar_width: float | None = None
    colour: str | None = None
    # d3's number format, as plotly's hover takes it.
    number_format: str = ",.0f"


@dataclass(frozen=True)
class Reference:
    """A fixed value drawn across the panel (a quota: horizontal) or down it (a bound: vertical)."""

    value: float
    label: str
    vertical: bool = False


@dataclass(frozen=True)
class Span:
    start: float
    end: float
    label: str


@dataclass(frozen=True)
class TimePanel:
    axis_title: str
    lines: Sequence[Line]
    references: Sequence[Reference] = ()
    spans: Sequence[Span] = ()


def timeline_chart(
    panels: Sequence[TimePanel], *, title: str, x_title: str, element_id: str, panel_height_px: int = 210
) -> Chart:
    """Panels stacked on one shared time axis; hovering a time shows every line's value there."""
    from plotly import graph_objects
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.06)
    end = max((max(line.x, default=0.0) for panel in panels for line in panel.lines), default=0.0)
    colour = iter(PALETTE * 4)
    for row, panel in enumerate(panels, start=1):
        for line in panel.lines:
            hover = f"{line.name}: %{{y:{line.number_format}}}<extra></extra>"
            trace_colour = line.colour or next(colour)
            if line.bars:
                trace: Any = graph_objects.Bar(
                    name=line.name,
                    x=list(line.x),
                    y=list(line.y),
                    marker_color=trace_colour,
                    width=line.bar_width,
                )
            else:
                trace = graph_objects.Scatter(
                    name=line.name,
                    x=list(line.x),
                    y=list(line.y),
                    mode="lines",
                    line={"shape": "hv" if line.step else "linear", "color": trace_colour, "width": 2},
                )
            trace.update(hovertemplate=hover, legendgroup=f"row{row}")
            figure.add_trace(trace, row=row, col=1)
        for reference in panel.references:
            _add_reference(figure, reference, row, end)
        for span in panel.spans:
            figure.add_vrect(
                x0=span.start,
                x1=span.end,
                fillcolor=PALETTE[1],
                opacity=0.14,
                line_width=0,
                annotation_text=span.label,
                annotation_position="top left",
                annotation_font_size=11,
                row=row,
                col=1,
            )
        figure.update_yaxes(title_text=panel.axis_title, rangemode="tozero", row=row, col=1)
    figure.update_xaxes(title_text=x_title, row=len(panels), col=1)
    figure.update_xaxes(showspikes=True, spikemode="across", spikethickness=1, spikedash="dot")
    height = 150 + panel_height_px * len(panels)
    _lay_out(figure, title, height)
    figure.update_layout(hovermode="x unified")
    return Chart(figure, element_id, height)


def _add_reference(figure: Any, reference: Reference, row: int, end: float) -> None:
    from plotly import graph_objects

    if reference.vertical:
        figure.add_vline(
            x=reference.value,
            line_dash="dash",
            line_color=REFERENCE_COLOUR,
            annotation_text=f"{reference.label} {reference.value:,.1f}",
            annotation_position="bottom right",
            annotation_font_size=11,
            row=row,
            col=1,
        )
        return
    # Drawn as a trace, not a shape, so it is in the legend and its value shows on hover.
    figure.add_trace(
        graph_objects.Scatter(
            name=reference.label,
            x=[0.0, max(end, 1.0)],
            y=[reference.value, reference.value],
            mode="lines",
            line={"dash": "dash", "color": REFERENCE_COLOUR, "width": 1.5},
            hovertemplate=f"{reference.label}: {reference.value:,}<extra></extra>",
            legendgroup=f"row{row}",
        ),
        row=row,
        col=1,
    )


MARGIN = {"l": 60, "r": 20, "t": 70, "b": 100}
# The legend sits this far below the plot area: under the tick labels and the axis title.
LEGEND_DROP_PX = 58


def _lay_out(figure: Any, title: str, height: int) -> None:
    plot_height = height - MARGIN["t"] - MARGIN["b"]
    figure.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        template="plotly_white",
        font=FONT,
        height=height,
        autosize=True,
        margin=MARGIN,
        hoverlabel={"namelength": -1},
        legend={"orientation": "h", "x": 0, "y": -LEGEND_DROP_PX / plot_height, "yanchor": "top"},
    )
