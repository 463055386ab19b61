"""Jupyter offline: a built tutorial exported to HTML (scripts/make_html.py) and opened in
chromium with every non-file request aborted shows its maths rendered (MathML laid out as maths,
no raw ``$…$``), every plotly figure drawn from the inline plotly.js, and no widget repr; and
the page asked for nothing outside itself.

Needs Debian's chromium (skips with instructions where it is missing).
"""

import re
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import make_html  # noqa: E402
import make_ipynb  # noqa: E402
import marimo_browser as mb  # noqa: E402

PLOTS_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => ({
  title: (g.layout && g.layout.title && g.layout.title.text) || '',
  traces: (g._fullData || []).length,
  svg: g.querySelectorAll('.main-svg').length,
}))"""
# A fraction is laid out as maths when its numerator sits above its denominator; unrendered
# MathML is inline text on one line.
MATHS_JS = """() => ({
  n: document.querySelectorAll('math').length,
  errors: document.querySelectorAll('merror').length,
  fractions: Array.from(document.querySelectorAll('mfrac')).map(f => {
    const [num, den] = Array.from(f.children).map(c => c.getBoundingClientRect());
    return num.bottom <= den.top + 1;
  }),
  text: document.body.innerText,
})"""


@pytest.fixture(scope="module")
def tutorials(tmp_path_factory):
    """01 and 04 built and executed as ``make notebooks-ipynb`` does, then exported."""
    out = tmp_path_factory.mktemp("html")
    built = {}
    for name in ("01_delta_operator", "04_rank_collapse"):
        nb = make_ipynb.execute(make_ipynb.tutorial(name))
        page = out / f"{name}.html"
        page.write_text(make_html.export(nb), encoding="utf-8")
        built[name] = nb, page
    return built


def figures_of(nb) -> list[dict]:
    return [
        o.data[make_html.PLOTLY]
        for c in nb.cells
        for o in c.get("outputs", [])
        if make_html.PLOTLY in o.get("data", {})
    ]


def test_export_replaces_what_nbconvert_cannot_show(tutorials):
    nb, page = tutorials["01_delta_operator"]
    html = page.read_text()
    assert re.findall(r"<(?:script|link)[^>]*(?:src|href)=", html) == []  # nothing loaded
    assert "&lt;plotly figure" not in html and "Explorer(children" not in html
    assert html.count("<math ") >= 10 and "GEOLABMATH" not in html
    offline, _ = make_html.offline_notebook(nb)
    assert figures_of(offline) == [] and len(figures_of(nb)) == 4
    assert nbformat.validate(offline) is None


@pytest.mark.browser
@pytest.mark.parametrize("name", ["01_delta_operator", "04_rank_collapse"])
def test_exported_tutorial_renders_offline_in_chromium(tutorials, name):
    if not mb.CHROMIUM.exists():
        pytest.skip(f"no chromium at {mb.CHROMIUM}. {mb.ENABLE_HINT}")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    nb, page_path = tutorials[name]
    wanted = figures_of(nb)
    blocked, errors = [], []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    with sync_playwright() as p:
        browser = mb.launch(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.route("**/*", route)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_path.as_uri(), wait_until="load", timeout=120_000)
            page.wait_for_function(
                f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {len(wanted)}",
                timeout=60_000,
            )
            plots = page.evaluate(PLOTS_JS)
            maths = page.evaluate(MATHS_JS)
        finally:
            browser.close()
    assert blocked == [] and errors == []
    assert [p["title"] for p in plots] == [f["layout"]["title"]["text"] for f in wanted]
    assert [p["traces"] for p in plots] == [len(f["data"]) for f in wanted]
    assert all(p["svg"] for p in plots)
    assert maths["n"] >= 10 and maths["errors"] == 0
    assert maths["fractions"] and all(maths["fractions"])
    text = maths["text"]
    for raw in ("$", "\\(", "\\beta", "<plotly figure", "Explorer(", "HTMLMath("):
        assert raw not in text, (name, raw)
