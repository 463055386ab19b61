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
from make_ipynb import parse, run, write_all
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


USAGE = "usage: python scripts/make_html.py [IPYNB_DIR] [OUT_DIR]"


def main(argv: list[str]) -> int:
    """Check the folders, read and export every tutorial, then write the pages: a bad folder or
    a damaged .ipynb costs one line before any page is written."""
    from geolab.outputs import check_dir, check_file

    _, args = parse(argv, (), 2, USAGE)
    src = Path(args[0]) if args else REPO / "build" / "ipynb"
    out = check_dir(Path(args[1]) if len(args) > 1 else REPO / "build" / "html", "OUT_DIR")
    paths = sorted(src.glob("*.ipynb")) if src.is_dir() else []
    if not paths:
        raise ValueError(
            f"IPYNB_DIR={str(src)!r} holds no .ipynb; build them first: "
            f"python scripts/make_ipynb.py {src}"
        )
    pages = {}
    for path in paths:
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception as err:  # noqa: BLE001 (nbformat raises half a dozen kinds)
            raise ValueError(
                f"{path} is damaged or not a notebook ({type(err).__name__}); rebuild it with "
                "python scripts/make_ipynb.py"
            ) from None
        pages[check_file(out / f"{path.stem}.html", "OUT_DIR")] = export(nb)
    out.mkdir(parents=True, exist_ok=True)
    write_all(pages)
    return 0


if __name__ == "__main__":
    raise SystemExit(run("make_html", main, sys.argv[1:]))
