"""Export the Jupyter tutorials to HTML pages that work offline:
``python scripts/make_html.py [IPYNB_DIR] [OUT_DIR]`` (defaults build/ipynb, build/html; run
``scripts/make_ipynb.py`` first; ``make notebooks-html`` does both).

``jupyter nbconvert --to html`` alone gives a page that needs the network and still shows little:
maths waits for MathJax from a CDN, each figure is the text ``<plotly figure: …>`` (nbconvert does
not draw plotly's JSON mime type) and the explorer's widget, whose state is not saved, prints its
Python repr. This export runs nbconvert's ``lab`` template with three changes, so the page needs
nothing but itself:

* maths is rendered to MathML here (``latex2mathml``), which browsers draw natively — in the
  markdown cells and in the explorers' HTML readouts; no MathJax, no CDN;
* every plotly figure becomes its HTML ``<div>`` with plotly.js embedded once, inline, before the
  first figure (plotly's own bundled copy), so the figures stay interactive;
* the widget outputs are dropped (without a kernel they cannot draw; the explorer's static
  snapshot right after them stands in), and the template's require.js, MathJax and mermaid
  script tags are left out.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jinja2
import nbformat
import plotly.io as pio
from latex2mathml.converter import convert
from nbconvert import HTMLExporter

REPO = Path(__file__).resolve().parents[1]
PLOTLY = "application/vnd.plotly.v1+json"
WIDGET = "application/vnd.jupyter.widget-view+json"
# $$…$$ and \[…\] display maths, $…$ and \(…\) inline maths; an escaped \$ is a dollar sign.
MATH = re.compile(
    r"(?<!\\)\$\$(.+?)\$\$|\\\[(.+?)\\\]|(?<![\\$])\$(?!\$)(.+?)(?<!\\)\$|\\\((.+?)\\\)", re.S
)
TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def mathml(match: re.Match) -> str:
    """One maths match as MathML (``display="block"`` for $$…$$ and \\[…\\])."""
    display, display2, inline, inline2 = match.groups()
    tex = next(t for t in (display, display2, inline, inline2) if t is not None)
    block = display is not None or display2 is not None
    return convert(tex.strip(), display="block" if block else "inline")


def offline_notebook(nb: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, dict[str, str]]:
    """A copy of ``nb`` ready for the offline page, and the MathML that stands in for each
    placeholder of its markdown cells.

    Markdown maths is swapped for alphanumeric placeholders (markdown leaves them alone, where
    raw MathML inside a paragraph could be read as emphasis or table cells) that ``export`` puts
    back; maths in HTML outputs is converted in place.
    """
    nb = nbformat.from_dict(nb)
    stand_in: dict[str, str] = {}
    first_figure = True

    def hold(match: re.Match) -> str:
        key = f"GEOLABMATH{len(stand_in)}X"
        stand_in[key] = mathml(match)
        return key

    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = MATH.sub(hold, cell.source)
            continue
        outputs = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET in data:
                continue
            if PLOTLY in data:
                spec = data[PLOTLY]
                html = pio.to_html(
                    {"data": spec["data"], "layout": spec.get("layout", {})},
                    config=spec.get("config"),
                    full_html=False,
                    include_plotlyjs=first_figure,
                    validate=False,
                )
                out.data = {"text/html": html}
                first_figure = False
            elif "text/html" in data:
                data["text/html"] = MATH.sub(mathml, data["text/html"])
            outputs.append(out)
        if "outputs" in cell:
            cell.outputs = outputs
    return nb, stand_in


def export(nb: nbformat.NotebookNode) -> str:
    """The offline HTML page of one notebook."""
    nb, stand_in = offline_notebook(nb)
    exporter = HTMLExporter(
        template_name="lab",
        template_file="geolab_offline.html.j2",
        extra_loaders=[jinja2.DictLoader({"geolab_offline.html.j2": TEMPLATE})],
    )
    body, _ = exporter.from_notebook_node(nb)
    for key, math in stand_in.items():  # the closing X: GEOLABMATH1X is not in GEOLABMATH12X
        body = body.replace(key, math)
    return body


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else REPO / "build" / "ipynb"
    out = Path(argv[1]) if len(argv) > 1 else REPO / "build" / "html"
    paths = sorted(src.glob("*.ipynb"))
    if not paths:
        print(f"no .ipynb in {src}; build them first: python scripts/make_ipynb.py {src}")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        page = out / f"{path.stem}.html"
        page.write_text(export(nbformat.read(path, as_version=4)), encoding="utf-8")
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
