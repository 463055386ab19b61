"""Regenerate the README screenshots: ``.venv/bin/python scripts/screenshots.py [OUT_DIR]``.

Serves notebooks 01 and 04 with ``marimo run`` on 127.0.0.1, opens them in Debian's headless
chromium (the same Playwright setup as tests/test_browser.py), answers each predict-first
question (until answered it hides the plots below it), sets the sliders a learner would
(01: β = 1, the erasure; 04: 100 layers) and writes docs/01_delta_operator.png and
docs/04_rank_collapse.png (default OUT_DIR: docs).
"""

import sys
import tempfile
import time
from pathlib import Path

import marimo_browser as mb
from playwright.sync_api import sync_playwright

WAIT_MS = 180_000


def settle(page, text: str) -> None:
    """Wait for ``text`` and for plotly to finish drawing."""
    page.wait_for_selector(f"text={text}", timeout=WAIT_MS)
    page.wait_for_load_state("networkidle", timeout=WAIT_MS)
    time.sleep(2)


def shoot(browser, name: str, setup, last: str, out: Path, log_dir: Path) -> Path:
    """Screenshot from the first slider to the bottom of the plot whose title starts with
    ``last``."""
    with mb.serve(mb.REPO / "notebooks" / f"{name}.py", log_dir / f"{name}.log") as url:
        # marimo scrolls inside its own container, so a tall viewport holds the whole notebook.
        page = browser.new_page(viewport={"width": 1280, "height": 3200}, device_scale_factor=1)
        page.goto(url, wait_until="domcontentloaded", timeout=WAIT_MS)
        setup(page)
        # What the learner works with: from the first slider to the bottom of the plot `last`.
        top = page.locator("[role=slider]").first.bounding_box()["y"] - 60
        titles = [p["title"] for p in mb.plots(page)]
        index = max(i for i, t in enumerate(titles) if t.startswith(last))
        box = page.locator("marimo-plotly").nth(index).bounding_box()
        bottom = box["y"] + box["height"]
        path = out / f"{name}.png"
        page.screenshot(
            path=str(path), clip={"x": 0, "y": top, "width": 1280, "height": bottom - top + 20}
        )
        page.close()
    return path


def answer(page, choice: str) -> None:
    """Pick ``choice`` in the notebook's predict-first question and wait for its reveal."""
    settle(page, "Pick an answer")
    page.get_by_text(choice, exact=False).first.click()
    settle(page, "Right.")


def setup_01(page) -> None:
    answer(page, "−1")
    settle(page, "partial erasure along k")
    beta = page.locator("[role=slider]").first
    beta.focus()
    for _ in range(10):  # β 0.5 → 1.0
        page.keyboard.press("ArrowRight")
    settle(page, "projection onto k⊥ (erasure)")


def setup_04(page) -> None:
    answer(page, "1/32")
    settle(page, "rank / residual at layer 24")
    depth = page.locator("marimo-slider").first.locator("input[inputmode]")  # its number field
    depth.fill("100")
    depth.press("Enter")
    settle(page, "rank / residual at layer 100")


def main(argv: list[str]) -> int:
    if not mb.CHROMIUM.exists():
        print(f"no chromium at {mb.CHROMIUM}. {mb.ENABLE_HINT}", file=sys.stderr)
        return 1
    out = Path(argv[0]) if argv else mb.REPO / "docs"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as logs, sync_playwright() as p:
        browser = mb.launch(p)
        shots = (
            ("01_delta_operator", setup_01, "Erase and write"),
            ("04_rank_collapse", setup_04, "Effective rank"),
        )
        for name, setup, last in shots:
            print(f"wrote {shoot(browser, name, setup, last, out, Path(logs))}")
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
