"""What the parts of one page share while it is rendered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass
class RenderContext:
    # plotly.js is embedded with the page's first chart; every later chart uses that copy.
    plotly_js_embedded: bool = False
    charts: int = 0


class Block(Protocol):
    def render(self, context: RenderContext) -> str: ...
