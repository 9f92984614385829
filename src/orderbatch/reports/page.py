"""The page shell: title, one stylesheet, the blocks in order, written as one self-contained file."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orderbatch.reports.render import Block, RenderContext

# Everything wraps inside the column, so at 1280 px neither the page nor any part of it scrolls sideways:
# headers, names and numbers wrap at spaces only, long text (paths, messages) anywhere in a word.
STYLESHEET = """
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;color:#1f2328;background:#fff;
  font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header,main{max-width:1200px;margin:0 auto;padding:0 20px}
header{padding-top:12px}
h1{font-size:1.55em;margin:.4em 0 .1em}
h2{font-size:1.2em;margin:1.8em 0 .5em;padding-bottom:.2em;border-bottom:1px solid #d0d7de}
h3{font-size:1.02em;margin:1.2em 0 .3em}
.subtitle{margin:0 0 1em;color:#59636e}
p,li{overflow-wrap:anywhere;max-width:100%}
ul.notes{margin:.3em 0 1em;padding-left:1.3em}
ul.notes li{margin:.15em 0}
p.notes{margin:.4em 0}
table{border-collapse:collapse;margin:.3em 0 1.2em;font-size:13px}
table.wide{width:100%}
caption{text-align:left;font-weight:600;font-size:1.05em;padding:.2em 0 .4em}
th,td{padding:4px 7px;border-bottom:1px solid #e1e4e8;vertical-align:top;text-align:left}
th{background:#f3f5f7;font-weight:600;line-height:1.25}
th[title]{text-decoration:underline dotted #8c959f;text-underline-offset:2px;cursor:help}
td{overflow-wrap:break-word}
td.long{overflow-wrap:anywhere}
th.num,td.num{text-align:right;font-variant-numeric:tabular-nums;overflow-wrap:normal}
tbody tr:hover{background:#f8fafc}
.mark{font-weight:600;white-space:nowrap}
.mark-met{color:#1a7f37}
.mark-missed{color:#cf222e}
.mark-unjudged{color:#6e7781}
.mark-detail{color:#59636e;font-weight:400}
.absent{color:#8c959f}
.chart{width:100%;margin:.3em 0 1em}
section{margin-bottom:1.5em}
"""


@dataclass(frozen=True)
class Notes:
    """Sentences a reader needs beside a table or chart: bullets, or plain paragraphs."""

    lines: Sequence[str]
    bullets: bool = True

    def render(self, _context: RenderContext) -> str:
        if not self.lines:
            return ""
        if self.bullets:
            items = "".join(f"<li>{html.escape(line)}</li>" for line in self.lines)
            return f"<ul class=notes>{items}</ul>"
        return "".join(f"<p class=notes>{html.escape(line)}</p>" for line in self.lines)


@dataclass
class Section:
    heading: str
    blocks: list[Block] = field(default_factory=list)
    element_id: str = ""

    def add(self, block: Block) -> Section:
        self.blocks.append(block)
        return self

    def render(self, context: RenderContext) -> str:
        identity = f' id="{html.escape(self.element_id)}"' if self.element_id else ""
        inner = "".join(block.render(context) for block in self.blocks)
        return f"<section{identity}><h2>{html.escape(self.heading)}</h2>{inner}</section>"


@dataclass
class Page:
    title: str
    subtitle: str = ""
    blocks: list[Block] = field(default_factory=list)

    def add(self, block: Block) -> Page:
        self.blocks.append(block)
        return self

    def render(self) -> str:
        context = RenderContext()
        content = "\n".join(block.render(context) for block in self.blocks)
        subtitle = f"<p class=subtitle>{html.escape(self.subtitle)}</p>" if self.subtitle else ""
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(self.title)}</title><style>{STYLESHEET}</style></head>\n"
            f"<body><header><h1>{html.escape(self.title)}</h1>{subtitle}</header>\n"
            f"<main>\n{content}\n</main></body></html>\n"
        )

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.render(), encoding="utf-8")
        return path
