"""What a reader at 1280 px would trip on, measured in headless Chromium (driven by playwright)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 800}

# A box scrolls sideways when the reader can scroll it (overflow-x auto or scroll) and its content is wider
# than it; content is cut off when a clipping box (hidden or clip) is narrower than its content; and
# content that reaches past the viewport's right edge makes the page itself scroll. Plotly's own off-screen
# measuring element (js-plotly-tester) sits far to the left, by design, and is never shown.
SIDEWAYS_PROBLEMS = """
() => {
  const root = document.scrollingElement;
  const viewport = document.documentElement.clientWidth;
  const problems = [];
  if (root.scrollWidth > root.clientWidth) {
    problems.push(`the page scrolls: ${root.scrollWidth} > ${root.clientWidth}`);
  }
  const describe = (element) => {
    const id = element.id ? '#' + element.id : '';
    const classes = typeof element.className === 'string' && element.className
      ? '.' + element.className.trim().split(/\\s+/).join('.') : '';
    return element.tagName.toLowerCase() + id + classes;
  };
  for (const element of document.querySelectorAll('body *')) {
    if (element.closest('#js-plotly-tester')) continue;
    const style = getComputedStyle(element);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    const overflow = style.overflowX;
    const wider = element.scrollWidth > element.clientWidth + 1;
    if ((overflow === 'auto' || overflow === 'scroll') && wider) {
      problems.push(`${describe(element)} scrolls sideways: ${element.scrollWidth} > ${element.clientWidth}`);
    } else if ((overflow === 'hidden' || overflow === 'clip') && wider && element.clientWidth > 0) {
      problems.push(`${describe(element)} cuts its content: ${element.scrollWidth} > ${element.clientWidth}`);
    }
    const box = element.getBoundingClientRect();
    if (box.width > 0 && box.right > viewport + 1) {
      problems.push(`${describe(element)} reaches past the viewport: right ${box.right} > ${viewport}`);
    }
  }
  return problems;
}
"""

# The traces of a plotly chart as the browser holds them: names and the categories (or x values) each has.
CHART_TRACES = """
(id) => {
  const chart = document.getElementById(id);
  if (!chart || !chart.data) return null;
  return chart.data.map(trace => ({name: trace.name, type: trace.type, x: trace.x, y: trace.y}));
}
"""

SUMMARY = """
() => {
  const main = document.querySelector('main');
  const first = main.firstElementChild;
  const rows = [...document.querySelectorAll('#summary tbody tr')].map(row => ({
    cells: [...row.cells].map(cell => cell.innerText.trim()),
    marks: [...row.querySelectorAll('.mark')].map(mark => mark.dataset.met),
  }));
  return {first: first ? first.tagName.toLowerCase() + '#' + first.id : null, rows};
}
"""


EVERY_CHART_DRAWN = """
() => [...document.querySelectorAll('.chart div.plotly-graph-div')]
  .every(chart => chart.querySelector('.main-svg'))
"""
# A hover label's lines (plotly draws each <br>-separated line as a tspan of class "line").
HOVER_LINES = """
texts => texts.map(text => {
  const lines = [...text.querySelectorAll('tspan.line')].map(line => line.textContent);
  return lines.length ? lines.join('\\n') : text.textContent;
}).join('\\n')
"""


def open_report(browser: Any, path: Path) -> Any:
    """The page at 1280x800, every chart drawn, with any request that leaves the file noted."""
    page = browser.new_page(viewport=VIEWPORT)
    page.outside_requests = []
    page.on(
        "request",
        lambda request: (
            None
            if request.url.startswith(("file:", "data:", "blob:", "about:"))
            else page.outside_requests.append(request.url)
        ),
    )
    page.goto(path.resolve().as_uri(), wait_until="load")
    page.wait_for_function(EVERY_CHART_DRAWN, timeout=30_000)
    return page


def sideways_problems(page: Any) -> list[str]:
    return list(page.evaluate(SIDEWAYS_PROBLEMS))


def chart_traces(page: Any, element_id: str) -> list[dict[str, Any]]:
    traces = page.evaluate(CHART_TRACES, element_id)
    assert traces is not None, f"no plotly chart #{element_id} on the page"
    return list(traces)


def summary(page: Any) -> dict[str, Any]:
    return dict(page.evaluate(SUMMARY))


def hover_text(page: Any, selector: str) -> str:
    """What plotly shows when the pointer rests on the first element matching ``selector``."""
    page.hover(selector, force=True)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=5_000)
    return str(page.eval_on_selector_all(".hoverlayer .hovertext text", HOVER_LINES))
