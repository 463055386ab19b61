"""Real browser: marimo run serves 01 and 04, chromium moves a slider with the keyboard, and the
shown numbers and the plotted data change to the values geolab.explore computes.

Needs Debian's chromium (.ci/run installs it); skips with instructions where it is missing.
"""

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from geolab import explore

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import marimo_browser as mb  # noqa: E402

pytestmark = pytest.mark.browser
if not mb.CHROMIUM.exists():
    pytest.skip(f"no chromium at {mb.CHROMIUM}. {mb.ENABLE_HINT}", allow_module_level=True)
sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright

LOAD_S = 90  # first render over the websocket, on a slow shared CPU


def wait_until(check, timeout_s: float, what: str):
    """Poll ``check()`` until it returns a truthy value (returned) or time runs out."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except AssertionError as err:
            last = err
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r:.800}")


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        b = mb.launch(p)
        yield b
        b.close()


def open_notebook(browser, name: str, tmp_path):
    server = mb.serve(REPO / "notebooks" / f"{name}.py", tmp_path / f"{name}.log")
    url = server.__enter__()
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    page.goto(url, wait_until="domcontentloaded", timeout=LOAD_S * 1000)
    return server, page


def test_01_beta_slider_by_keyboard(browser, tmp_path):
    server, page = open_notebook(browser, "01_delta_operator", tmp_path)
    try:
        page.wait_for_selector("text=partial erasure along k", timeout=LOAD_S * 1000)
        wait_until(lambda: len(mb.plots(page)) == 4, LOAD_S, "four plots")
        beta = page.locator("[role=slider]").first
        assert float(beta.get_attribute("aria-valuenow")) == pytest.approx(0.5)
        before = mb.plot(page, "Determinant")["traces"][1]["y"][0]
        assert before == pytest.approx(0.5)

        beta.focus()
        for _ in range(10):  # step 0.05: β 0.5 → 1.0
            page.keyboard.press("ArrowRight")

        expected = explore.delta_view(1.0, 0.5, 1.0)
        page.wait_for_selector("text=projection onto k⊥ (erasure)", timeout=LOAD_S * 1000)
        assert float(beta.get_attribute("aria-valuenow")) == pytest.approx(1.0)

        def updated():
            det = mb.plot(page, "Determinant")["traces"][1]
            return abs(det["x"][0] - 1.0) < 1e-9 and abs(det["y"][0]) < 1e-9

        wait_until(updated, 30, "the determinant marker at β = 1, det = 0")
        spectrum = mb.plot(page, "Eigenvalues")["traces"][1]
        np.testing.assert_allclose(
            sorted(spectrum["x"]), sorted(expected.numbers["eigenvalues"]), atol=1e-9
        )
        image = mb.plot(page, "Image")["traces"][1]
        assert (
            max(abs(np.array(image["x"]) * np.cos(0.5) + np.array(image["y"]) * np.sin(0.5))) < 1e-9
        )
        table = page.locator("table", has_text="quantity").first.inner_text()
        assert "0.0000" in table and "3 of 4" in table
    finally:
        page.close()
        server.__exit__(None, None, None)


def test_04_depth_and_beta0_sliders_by_keyboard(browser, tmp_path):
    server, page = open_notebook(browser, "04_rank_collapse", tmp_path)
    try:
        page.wait_for_selector("text=rank / residual at layer 24", timeout=LOAD_S * 1000)
        depth = page.locator("[role=slider]").first
        depth.focus()
        page.keyboard.press("ArrowLeft")  # depth steps 12, 24, 48, 100, 200: 24 → 12
        page.wait_for_selector("text=rank / residual at layer 12", timeout=LOAD_S * 1000)

        rules = ["postln", "preln", "mgt"]
        expected = explore.rank_view(rules, 12)

        def curves_match(view):
            traces = mb.plot(page, "Effective rank")["traces"]
            names = [t["name"] for t in traces[:4]]
            assert names == [*rules, explore.REFERENCE], names
            for t in traces[:4]:
                np.testing.assert_allclose(t["y"], view.numbers["ranks"][t["name"]], rtol=1e-4)
            return True

        wait_until(lambda: curves_match(expected), 30, "12-layer rank curves")

        beta0 = page.locator("[role=slider]").nth(1)
        assert float(beta0.get_attribute("aria-valuenow")) == pytest.approx(0.5)
        beta0.focus()
        for _ in range(6):  # step 0.05: β₀ 0.5 → 0.2
            page.keyboard.press("ArrowLeft")
        moved = explore.rank_view(rules, 12, beta0=0.2)
        assert not np.allclose(moved.numbers["ranks"]["mgt"], expected.numbers["ranks"]["mgt"])
        wait_until(lambda: curves_match(moved), 60, "the mgt curve for β₀ = 0.2")
        final = f"{moved.numbers['final_rank']['mgt']:.3f}"
        assert final in page.locator("table", has_text="quantity").first.inner_text()
    finally:
        page.close()
        server.__exit__(None, None, None)
